/* test_mps.c - MPS clients (common/mps.c): choosing the GPU from CUDA_VISIBLE_DEVICES, the
 * client variables made from --compute and --memory, the run directory's base (an
 * $XDG_RUNTIME_DIR that is missing or not the user's falls back), name and place (a daemon
 * per Slurm job step), the client list's text, and the list under its lock: dead and
 * reused pids dropped, and many processes joining and leaving at once leave exactly the
 * survivors; a job step's end (mps_daemon.c) takes the step's directories whose clients are
 * gone, stopping a daemon that outlived the step by signals, runs no program, leaves what it
 * cannot judge without one, and follows no link; carve run's judgment of its daemon asks
 * the control program where a pid file does not settle it, and says why that failed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mps.h"
#include "mps_daemon.h"
#include "no_close_range.h"
#include "proc.h"
#include "slice.h"
#include "unreaped.h"

static const struct carve_gpu_info gpus[] = {
    {.index = 0, .uuid = "GPU-5a1e0c4a-1000-4e3d-9a7b-c0ffeea00000",
     .name = "sim", .total = 80ULL << 30},
    {.index = 1, .uuid = "GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001",
     .name = "sim", .total = 80ULL << 30},
    {.index = 2, .uuid = "GPU-77770000-0000-0000-0000-000000000002",
     .name = "sim", .total = 80ULL << 30},
};

static void expect_pick(const char *visible, int ngpu, int want)
{
    char err[512] = "";
    int got = carve_mps_pick_gpu(visible, gpus, ngpu, err, sizeof(err));
    if (got != want)
        fail_msg("CUDA_VISIBLE_DEVICES=%s on %d GPUs: %d, want %d (%s)", visible ? visible : "(unset)",
                 ngpu, got, want, err);
}

static void expect_pick_refused(const char *visible, int ngpu, const char *fragment)
{
    char err[512] = "";
    int got = carve_mps_pick_gpu(visible, gpus, ngpu, err, sizeof(err));
    if (got != -EINVAL || !strstr(err, fragment))
        fail_msg("CUDA_VISIBLE_DEVICES=%s on %d GPUs: %d `%s', want -EINVAL saying `%s'",
                 visible ? visible : "(unset)", ngpu, got, err, fragment);
}

static void test_pick_gpu(void **state)
{
    expect_pick(NULL, 1, 0);
    expect_pick("0", 3, 0);
    expect_pick("2", 3, 2);
    expect_pick("GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001", 3, 1);
    expect_pick("GPU-7777", 3, 2); /* a unique prefix, as CUDA takes it */
    expect_pick_refused(NULL, 3, "this machine has 3 (0-2)");
    expect_pick_refused("", 1, "is empty");
    expect_pick_refused("0,1", 3, "names more than one GPU");
    expect_pick_refused("3", 3, "this machine has 3 GPUs (0-2)");
    expect_pick_refused("1", 1, "this machine has 1 GPU (0)");
    expect_pick_refused("1x", 3, "this machine has 3 GPUs");
    expect_pick_refused("99999999999999999999", 3, "this machine has 3 GPUs");
    expect_pick_refused("GPU-5a1e", 3, "matches 2 GPUs");
    expect_pick_refused("GPU-dead", 3, "names no GPU");
    expect_pick_refused("GPU-", 3, "neither a GPU index");
    expect_pick_refused("MIG-5a1e0c4a", 3, "is a MIG device");
    expect_pick_refused(" 0", 3, "neither a GPU index");
    expect_pick_refused("-1", 3, "neither a GPU index");
}

/* GPU 1 lost: NVML lists GPUs 0 and 2, and the index is the GPU's, not its place in the list
 * (CUDA_VISIBLE_DEVICES=2 ran on the list's third GPU, none here, until 2026-11-29) */
static void test_pick_gpu_gap(void **state)
{
    const struct carve_gpu_info gap[] = {gpus[0], gpus[2]};
    char err[512] = "";
    assert_int_equal(carve_mps_pick_gpu("2", gap, 2, err, sizeof(err)), 1);
    assert_int_equal(carve_mps_pick_gpu("0", gap, 2, err, sizeof(err)), 0);
    assert_int_equal(carve_mps_pick_gpu("1", gap, 2, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "CUDA_VISIBLE_DEVICES=1: NVML does not answer for GPU 1"));
    assert_int_equal(carve_mps_pick_gpu("3", gap, 2, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "NVML answers for 2 GPUs of this machine, GPU 2 the last"));
    assert_int_equal(carve_mps_pick_gpu("GPU-7777", gap, 2, err, sizeof(err)), 1);
}

static void test_thread_percentage(void **state)
{
    char buf[16], err[512];
    struct carve_compute c = {3000, CARVE_COMPUTE_CAP, CARVE_PRIO_NORMAL};
    assert_int_equal(carve_mps_thread_percentage(&c, buf, sizeof(buf), err, sizeof(err)), 0);
    assert_string_equal(buf, "30");
    c.share_bp = 10000;
    assert_int_equal(carve_mps_thread_percentage(&c, buf, sizeof(buf), err, sizeof(err)), 0);
    assert_string_equal(buf, "100");
    c.share_bp = 100;
    assert_int_equal(carve_mps_thread_percentage(&c, buf, sizeof(buf), err, sizeof(err)), 0);
    assert_string_equal(buf, "1");
    c.share_bp = 1250;
    assert_int_equal(carve_mps_thread_percentage(&c, buf, sizeof(buf), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--compute 12.5% is not a whole percentage"));
    c.share_bp = 3000;
    c.mode = CARVE_COMPUTE_GUARANTEE;
    assert_int_equal(carve_mps_thread_percentage(&c, buf, sizeof(buf), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--compute 30%+ asks for a guarantee"));
    assert_non_null(strstr(err, "give a limit (`30%')"));
}

static void test_mem_limit(void **state)
{
    char buf[32];
    carve_mps_mem_limit(8ULL << 30, buf, sizeof(buf));
    assert_string_equal(buf, "0=8192M");
    carve_mps_mem_limit((3ULL << 29), buf, sizeof(buf)); /* 1.5 GiB */
    assert_string_equal(buf, "0=1536M");
    carve_mps_mem_limit((1ULL << 20) + 5, buf, sizeof(buf)); /* rounded down */
    assert_string_equal(buf, "0=1M");
    carve_mps_mem_limit(4096, buf, sizeof(buf)); /* never 0M */
    assert_string_equal(buf, "0=1M");
}

static void test_clients_text(void **state)
{
    struct carve_mps_client in[3] = {
        {.pid = 10, .start = 111},
        {.pid = 20, .start = 0, .nproc = 1, .proc = {{21, 7}}},
        {.pid = INT_MAX, .start = UINT64_MAX, .nproc = CARVE_MPS_CLIENT_PROCS},
    };
    for (int k = 0; k < CARVE_MPS_CLIENT_PROCS; k++)
        in[2].proc[k] = (struct carve_mps_proc){INT_MAX - k, UINT64_MAX - (uint64_t)k};
    struct carve_mps_client out[4];
    char text[1024], err[256];
    int len = carve_mps_clients_format(in, 3, text, sizeof(text));
    assert_true(len > 0);
    assert_int_equal(carve_mps_clients_parse(text, out, 4, err, sizeof(err)), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].pid, in[i].pid);
        assert_true(out[i].start == in[i].start);
        assert_int_equal(out[i].nproc, in[i].nproc);
        for (int k = 0; k < in[i].nproc; k++) {
            assert_int_equal(out[i].proc[k].pid, in[i].proc[k].pid);
            assert_true(out[i].proc[k].start == in[i].proc[k].start);
        }
    }
    /* a line of an older carve (carve run's pair only) still reads */
    assert_int_equal(carve_mps_clients_parse("7 8\n9 10 11 12\n", out, 4, err, sizeof(err)), 2);
    assert_int_equal(out[0].nproc, 0);
    assert_int_equal(out[1].nproc, 1);
    assert_int_equal(out[1].proc[0].pid, 11);
    assert_int_equal(carve_mps_clients_format(in, 3, text, 40), -ENOSPC);
    assert_int_equal(carve_mps_clients_parse("", out, 4, err, sizeof(err)), 0);
    assert_int_equal(carve_mps_clients_parse("# only\n\n5 6", out, 4, err, sizeof(err)), 1);
    assert_int_equal(carve_mps_clients_parse("1 2\n3 4\n5 6\n", out, 2, err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "line 3: more than 2 clients"));
    static const char *const bad[] = {"x 1", "1", "1 ", "0 5", "-3 5", "1 2 3", "1  2",
                                      "1 -2", "99999999999 1", "1 99999999999999999999999",
                                      "1 2 3 4 ", "1 2  3 4", "1 2 0 4", "1 2 3 x",
                                      "1 2 1 2 1 2 1 2 1 2 1 2 1 2 1 2 1 2 1 2" /* 9 procs */};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "# header\n%s\n", bad[i]);
        err[0] = '\0';
        if (carve_mps_clients_parse(text, out, 4, err, sizeof(err)) != -EINVAL ||
            !strstr(err, "line 2:"))
            fail_msg("`%s' accepted or not named by line: %s", bad[i], err);
    }
}

/* A pid that is surely gone: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static void test_alive_and_prune(void **state)
{
    pid_t me = getpid();
    struct carve_mps_client c[4] = {
        {.pid = me, .start = carve_proc_start_time(me)},     /* alive */
        {.pid = dead_pid(), .start = 1},                     /* gone */
        {.pid = me, .start = carve_proc_start_time(me) + 1}, /* the pid, reused since */
        {.pid = me, .start = 0}, /* start time unknown: the live pid counts */
    };
    assert_true(carve_mps_client_alive(&c[0]));
    assert_false(carve_mps_client_alive(&c[1]));
    assert_false(carve_mps_client_alive(&c[2]));
    assert_true(carve_mps_client_alive(&c[3]));
    assert_int_equal(carve_mps_clients_prune(c, 4), 2);
    assert_int_equal(c[0].pid, me);
    assert_int_equal(c[1].start, 0);
}

/* A carve run killed with SIGKILL leaves its command running: the entry counts while a
 * recorded process of the command runs, the same process (a reused pid does not). */
static void test_command_procs(void **state)
{
    pid_t me = getpid();
    uint64_t now = carve_proc_start_time(me);
    struct carve_mps_client c[3] = {
        {.pid = dead_pid(), .start = 1, .nproc = 2, .proc = {{dead_pid(), 2}, {me, now}}},
        {.pid = dead_pid(), .start = 1, .nproc = 1, .proc = {{me, now + 1}}}, /* reused */
        {.pid = dead_pid(), .start = 1},                                       /* none */
    };
    assert_true(carve_proc_alive_since(me, now));
    assert_false(carve_proc_alive_since(me, now + 1));
    assert_true(carve_mps_client_alive(&c[0]));
    assert_false(carve_mps_client_alive(&c[1]));
    assert_false(carve_mps_client_alive(&c[2]));
    /* the kept entry loses its gone process */
    assert_int_equal(carve_mps_clients_prune(c, 3), 1);
    assert_int_equal(c[0].nproc, 1);
    assert_int_equal(c[0].proc[0].pid, me);
    /* add: once each; when full, a gone one's place is reused, else -ENOSPC */
    struct carve_mps_client e = {.pid = me, .start = now};
    assert_int_equal(carve_mps_client_add_proc(&e, me, now), 0);
    assert_int_equal(carve_mps_client_add_proc(&e, me, now), 0);
    assert_int_equal(e.nproc, 1);
    e.nproc = CARVE_MPS_CLIENT_PROCS; /* full: all live but one */
    for (int k = 0; k < CARVE_MPS_CLIENT_PROCS; k++)
        e.proc[k] = (struct carve_mps_proc){me, now};
    e.proc[3] = (struct carve_mps_proc){dead_pid(), 9};
    assert_int_equal(carve_mps_client_add_proc(&e, 1, 0), 0); /* pid 1 runs: takes its place */
    assert_int_equal(e.proc[3].pid, 1);
    assert_int_equal(e.nproc, CARVE_MPS_CLIENT_PROCS);
    assert_int_equal(carve_mps_client_add_proc(&e, getppid(), 0), -ENOSPC);
}

/* An exited process its parent has not reaped (a zombie) is gone: kill(pid, 0) still finds
 * it, and under a PID 1 that reaps late or never (a container's) it stays found. */
static void test_zombie_is_gone(void **state)
{
    pid_t p = unreaped_child();
    assert_true(p > 0);
    assert_int_equal(kill(p, 0), 0); /* still there for kill */
    struct carve_mps_client c = {.pid = p, .start = carve_proc_start_time(p)};
    int running = carve_proc_running(p), alive = carve_mps_client_alive(&c);
    waitpid(p, NULL, 0);
    assert_int_equal(running, 0);
    assert_int_equal(alive, 0);
    assert_int_equal(carve_proc_running(getpid()), 1);
}

static char tmpdir[64];
enum { STAYERS = 8, LEAVERS = 40 };
static pid_t stay[STAYERS]; /* members that stay: killed by remove_tmp however a test ends */
enum { MAX_DAEMONS = 8 };
static pid_t daemons[MAX_DAEMONS]; /* stand-in daemons, likewise (and their servers' groups) */

static int make_tmp(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/carve-test-mps.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
    for (int i = 0; i < STAYERS; i++)
        if (stay[i] > 0) {
            kill(stay[i], SIGKILL);
            waitpid(stay[i], NULL, 0);
            stay[i] = 0;
        }
    for (int i = 0; i < MAX_DAEMONS; i++)
        if (daemons[i] > 0) {
            kill(-daemons[i], SIGKILL); /* the group: its server and sleeps too */
            kill(daemons[i], SIGKILL);
            waitpid(daemons[i], NULL, WNOHANG);
            daemons[i] = 0;
        }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void expect_dir_name(const char *job, const char *step, const char *want)
{
    char name[256] = "", err[512] = "";
    int r = carve_mps_dir_name(gpus[0].uuid, job, step, name, sizeof(name), err, sizeof(err));
    if (r != 0 || strcmp(name, want) != 0)
        fail_msg("job %s step %s: %d `%s' (%s), want `%s'", job ? job : "(unset)",
                 step ? step : "(unset)", r, name, err, want);
}

static void expect_dir_name_refused(const char *job, const char *step, const char *fragment)
{
    char name[256] = "", err[512] = "";
    int r = carve_mps_dir_name(gpus[0].uuid, job, step, name, sizeof(name), err, sizeof(err));
    if (r != -EINVAL || !strstr(err, fragment))
        fail_msg("job %s step %s: %d `%s', want -EINVAL saying `%s'", job ? job : "(unset)",
                 step ? step : "(unset)", r, err, fragment);
}

/* under Slurm each job step has a daemon of its own: a step's end kills every process it
 * started, the daemon too, and another step that shared it lost it */
static void test_dir_name(void **state)
{
    const char *u = "GPU-5a1e0c4a-1000-4e3d-9a7b-c0ffeea00000";
    char want[256], name[256], err[512];
    snprintf(want, sizeof(want), "mps-%s", u);
    expect_dir_name(NULL, NULL, want);
    expect_dir_name("", "3", want); /* an empty SLURM_JOB_ID is no job */
    snprintf(want, sizeof(want), "mps-%s-j4242.0", u);
    expect_dir_name("4242", "0", want);
    snprintf(want, sizeof(want), "mps-%s-j4242.1", u);
    expect_dir_name("4242", "1", want);
    snprintf(want, sizeof(want), "mps-%s-j4242", u); /* the batch script: no step id */
    expect_dir_name("4242", NULL, want);
    expect_dir_name("4242", "", want);
    snprintf(want, sizeof(want), "mps-%s-j4294967294.4294967290", u);
    expect_dir_name("4294967294", "4294967290", want);
    expect_dir_name_refused("12x", "0", "SLURM_JOB_ID=`12x' is not a Slurm id (a number)");
    expect_dir_name_refused("-1", NULL, "SLURM_JOB_ID=`-1'");
    expect_dir_name_refused("12345678901", NULL, "SLURM_JOB_ID=`12345678901'");
    expect_dir_name_refused("12", "../0", "SLURM_STEP_ID=`../0' is not a Slurm id");
    expect_dir_name_refused("12", " 0", "SLURM_STEP_ID=` 0'");
    assert_int_equal(carve_mps_dir_name("GPU-../x", NULL, NULL, name, sizeof(name), err,
                                        sizeof(err)), -EINVAL);
    assert_int_equal(carve_mps_dir_name(u, "4242", "0", name, 20, err, sizeof(err)),
                     -ENAMETOOLONG);
}

static void expect_base(const char *xdg, const char *want)
{
    char base[PATH_MAX];
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    carve_mps_run_base(base, sizeof(base));
    if (strcmp(base, want) != 0)
        fail_msg("XDG_RUNTIME_DIR=%s: base `%s', want `%s'", xdg, base, want);
}

/* $XDG_RUNTIME_DIR only when it is there and the user's alone: srun and sbatch pass on the
 * login node's value, which on a compute node may name no directory (`cannot make
 * /run/user/4242/carve') or another user's; and not in a Slurm job (logind removes it at
 * the user's last logout on the node, the pipes of a step's daemon with it) */
static void test_run_base(void **state)
{
    char xdg[128], want[160], fallback[64], link[160];
    unsetenv("CARVE_MPS_DIR");
    unsetenv("SLURM_JOB_ID");
    if (geteuid() == 0)
        snprintf(fallback, sizeof(fallback), "/run/carve");
    else
        snprintf(fallback, sizeof(fallback), "/tmp/carve-%u", (unsigned)geteuid());
    snprintf(xdg, sizeof(xdg), "%s/xdg", tmpdir);
    assert_int_equal(mkdir(xdg, 0700), 0);
    snprintf(want, sizeof(want), "%s/carve", xdg);
    expect_base(xdg, want); /* the user's, mode 0700: used */
    chmod(xdg, 0755);
    expect_base(xdg, want); /* others may read it, not write */
    chmod(xdg, 0770);
    expect_base(xdg, fallback); /* the group may write it */
    chmod(xdg, 0703);
    expect_base(xdg, fallback);
    chmod(xdg, 0700);
    expect_base("/run/user/4242", fallback); /* the login node's, missing here */
    snprintf(link, sizeof(link), "%s/missing", tmpdir);
    expect_base(link, fallback);
    expect_base("", fallback);
    expect_base("xdg", fallback); /* relative: the spec wants an absolute path */
    snprintf(link, sizeof(link), "%s/link", tmpdir);
    assert_int_equal(symlink(xdg, link), 0);
    expect_base(link, fallback); /* a link, even to a good directory */
    snprintf(link, sizeof(link), "%s/file", tmpdir);
    FILE *f = fopen(link, "w");
    assert_non_null(f);
    fclose(f);
    expect_base(link, fallback);
    if (geteuid() == 0) {
        /* root with a user's environment (sudo -E): not root's */
        assert_int_equal(chown(xdg, 65534, 65534), 0);
        expect_base(xdg, fallback);
        assert_int_equal(chown(xdg, 0, 0), 0);
    }
    /* in a Slurm job the fallback, whatever XDG_RUNTIME_DIR is */
    setenv("SLURM_JOB_ID", "4242", 1);
    expect_base(xdg, fallback);
    setenv("SLURM_JOB_ID", "", 1); /* empty: no job */
    expect_base(xdg, want);
    unsetenv("SLURM_JOB_ID");
    /* CARVE_MPS_DIR comes first */
    setenv("CARVE_MPS_DIR", "/some/where", 1);
    expect_base("/run/user/4242", "/some/where");
    unsetenv("CARVE_MPS_DIR");
    unsetenv("XDG_RUNTIME_DIR");
}

static void test_run_dir(void **state)
{
    char base[128], dir[256], want[256], err[512];
    const char *uuid = gpus[0].uuid;
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    snprintf(base, sizeof(base), "%s/base", tmpdir);
    setenv("CARVE_MPS_DIR", base, 1);
    /* a base of ours alone: the GPU's directory right in it */
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(want, sizeof(want), "%s/mps-%s", base, uuid);
    assert_string_equal(dir, want);
    assert_int_equal(carve_mps_run_dir("GPU-../x", dir, sizeof(dir), err, sizeof(err)), -EINVAL);
    /* in a Slurm job step: the step's own directory beside it */
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "1", 1);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s/mps-%s-j4242.1", base, uuid);
    assert_string_equal(dir, want);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    setenv("SLURM_STEP_ID", "x", 1);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -EINVAL);
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    chmod(base, 0777);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -EPERM);
    assert_non_null(strstr(err, "may be written by others (mode 777, no sticky bit)"));
    assert_non_null(strstr(err, "chmod +t it"));
    /* shared, sticky as /tmp: each user's directories under base/UID, whoever came first */
    chmod(base, 01777);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s/%u/mps-%s", base, (unsigned)geteuid(), uuid);
    assert_string_equal(dir, want);
    snprintf(want, sizeof(want), "%s/%u", base, (unsigned)geteuid());
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    chmod(dir, 0770);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -EPERM);
    assert_non_null(strstr(err, "may be written by others (mode 770)"));
    chmod(dir, 0700);
    chmod(want, 0775); /* the user directory too: others could swap the GPU's */
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -EPERM);
    assert_non_null(strstr(err, "may be written by others (mode 775)"));
    chmod(want, 0700);
    if (geteuid() == 0) {
        /* someone else made our directory in the shared base first: refused, naming them */
        assert_int_equal(chown(want, 65534, 65534), 0);
        assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -EPERM);
        assert_non_null(strstr(err, "uid 65534"));
        assert_non_null(strstr(err, "not to you"));
    }
    /* a file where the base should be */
    snprintf(base, sizeof(base), "%s/file", tmpdir);
    FILE *f = fopen(base, "w");
    assert_non_null(f);
    fclose(f);
    setenv("CARVE_MPS_DIR", base, 1);
    assert_int_equal(carve_mps_run_dir(uuid, dir, sizeof(dir), err, sizeof(err)), -ENOTDIR);
    assert_non_null(strstr(err, "is not a directory"));
    unsetenv("CARVE_MPS_DIR");
}

static void test_load_store(void **state)
{
    char err[512] = "";
    struct carve_mps_client c[CARVE_MPS_MAX_CLIENTS];
    assert_int_equal(carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err)), 0);
    c[0] = (struct carve_mps_client){.pid = getpid(),
                                      .start = carve_proc_start_time(getpid())};
    c[1] = (struct carve_mps_client){.pid = dead_pid(), .start = 5};
    assert_int_equal(carve_mps_clients_store(tmpdir, c, 2, err, sizeof(err)), 0);
    memset(c, 0, sizeof(c));
    assert_int_equal(carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err)), 1);
    assert_int_equal(c[0].pid, getpid());
    /* a list that does not parse reads as empty, with a warning */
    char path[128];
    snprintf(path, sizeof(path), "%s/clients", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("garbage\n", f);
    fclose(f);
    err[0] = '\0';
    assert_int_equal(carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "line 1:"));
}

/* Joins (appends itself under the lock), holds, and, when told, leaves. */
static void member(bool leave)
{
    char err[512];
    struct carve_mps_client c[CARVE_MPS_MAX_CLIENTS];
    int fd = carve_mps_lock(tmpdir, err, sizeof(err));
    if (fd < 0)
        _exit(2);
    int n = carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err));
    c[n] = (struct carve_mps_client){.pid = getpid(),
                                      .start = carve_proc_start_time(getpid())};
    if (carve_mps_clients_store(tmpdir, c, n + 1, err, sizeof(err)) < 0)
        _exit(3);
    carve_mps_unlock(fd);
    if (!leave) {
        alarm(60); /* stays until the test kills it, and never outlives a stuck test */
        pause();
        _exit(0);
    }
    if ((fd = carve_mps_lock(tmpdir, err, sizeof(err))) < 0)
        _exit(2);
    n = carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err));
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (c[i].pid != getpid())
            c[kept++] = c[i];
    if (carve_mps_clients_store(tmpdir, c, kept, err, sizeof(err)) < 0)
        _exit(3);
    carve_mps_unlock(fd);
    _exit(0);
}

static void test_concurrent_members(void **state)
{
    pid_t go[LEAVERS];
    char err[512] = "";
    /* all at once: the stayers join while the leavers join and leave */
    for (int i = 0; i < STAYERS + LEAVERS; i++) {
        pid_t p = fork();
        assert_true(p >= 0);
        if (p == 0)
            member(i >= STAYERS);
        if (i < STAYERS)
            stay[i] = p;
        else
            go[i - STAYERS] = p;
    }
    for (int i = 0; i < LEAVERS; i++) {
        int status;
        assert_int_equal(waitpid(go[i], &status, 0), go[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* every stayer has joined once its entry shows: wait for all of them */
    struct carve_mps_client c[CARVE_MPS_MAX_CLIENTS];
    int n = 0;
    for (int tries = 0; tries < 500 && n != STAYERS; tries++) {
        int fd = carve_mps_lock(tmpdir, err, sizeof(err));
        n = carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err));
        carve_mps_unlock(fd);
        if (n != STAYERS)
            usleep(10000);
    }
    assert_int_equal(n, STAYERS);
    for (int i = 0; i < STAYERS; i++) {
        bool found = false;
        for (int j = 0; j < n; j++)
            found |= c[j].pid == stay[i];
        if (!found)
            fail_msg("stayer %d (pid %d) is missing from the list", i, (int)stay[i]);
    }
    /* the stayers die without leaving: the next load drops them all */
    for (int i = 0; i < STAYERS; i++) {
        kill(stay[i], SIGKILL);
        waitpid(stay[i], NULL, 0);
        stay[i] = 0;
    }
    int fd = carve_mps_lock(tmpdir, err, sizeof(err));
    assert_int_equal(carve_mps_clients_load(tmpdir, c, CARVE_MPS_MAX_CLIENTS, err, sizeof(err)), 0);
    carve_mps_unlock(fd);
}

/* The directory names of a job step, and of the batch script, that its end looks for. */
static void test_dir_of_step(void **state)
{
    const char *u = gpus[0].uuid;
    char name[256], uuid[96], err[512];
    assert_int_equal(carve_mps_dir_name(u, "4242", "1", name, sizeof(name), err, sizeof(err)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "1", uuid, sizeof(uuid)), 1);
    assert_string_equal(uuid, u);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "11", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", NULL, uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "1", uuid, 8), 0); /* no room */
    /* the batch script's, with no step id */
    assert_int_equal(carve_mps_dir_name(u, "4242", NULL, name, sizeof(name), err, sizeof(err)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", NULL, uuid, sizeof(uuid)), 1);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "", uuid, sizeof(uuid)), 1);
    assert_string_equal(uuid, u);
    assert_int_equal(carve_mps_dir_of_step(name, "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step(name, "242", NULL, uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-1-j14242", "4242", NULL, uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-1-j1.4242", "4242", NULL, uuid, sizeof(uuid)), 0);
    /* not a UUID carve puts in a path, none at all, not carve's prefix, ids not numbers */
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-x.y-j4242.1", "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-../x-j4242.1", "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps--j4242.1", "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-j4242.1", "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("xps-GPU-1-j4242.1", "4242", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-1-j4242.1", "42x", "1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-1-j4242../1", "4242", "../1", uuid, sizeof(uuid)), 0);
    assert_int_equal(carve_mps_dir_of_step("mps-GPU-1-j4242.1", NULL, "1", uuid, sizeof(uuid)), 0);
}

static char notes[4096];
static int note_errors;

static void collect(void *arg, bool error, const char *text)
{
    size_t used = strlen(notes);
    snprintf(notes + used, sizeof(notes) - used, "%s%s\n", error ? "E " : "I ", text);
    note_errors += error;
}

/* A run directory of the job step (7, 3) in CARVE_MPS_DIR for the GPU uuid, with a client
 * list of the one client pid (0: none) and files in pipe/ and log/: the control pipe and a
 * pid file of a daemon that is gone, as a daemon killed with its step leaves them; its path
 * in dir. */
static void step_dir(const char *uuid, const char *job, const char *step, pid_t client,
                     char *dir, size_t len)
{
    char err[512], path[512];
    setenv("SLURM_JOB_ID", job, 1);
    if (step)
        setenv("SLURM_STEP_ID", step, 1);
    else
        unsetenv("SLURM_STEP_ID");
    if (carve_mps_run_dir(uuid, dir, len, err, sizeof(err)) < 0)
        fail_msg("run dir of %s: %s", uuid, err);
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    struct carve_mps_client c = {.pid = client, .start = carve_proc_start_time(client)};
    assert_int_equal(carve_mps_clients_store(dir, &c, client ? 1 : 0, err, sizeof(err)), 0);
    const char *pid_file = "pipe/" CARVE_MPS_PID_FILE;
    const char *files[] = {"pipe", "log", "pipe/control", "log/control.log", "lock", pid_file};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        if (i < 2) {
            assert_int_equal(mkdir(path, 0700), 0);
            continue;
        }
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        if (i == 5)
            fprintf(f, "%d\n", (int)dead_pid());
        fclose(f);
    }
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The stand-in control program's file names in tmpdir: bin/nvidia-cuda-mps-control (on
 * PATH), the log of its runs other than as a daemon, and a copy of sleep(1) named as the MPS
 * server. */
static char control[160], ran_log[160], server[160];

/* Writes the stand-in nvidia-cuda-mps-control at path. `path daemon [SERVER [ignore]]' is a
 * daemon (named nvidia-cuda-mps..., as the kernel names a script by its file) that starts
 * SERVER (its MPS server) as its child, notes SIGTERM in PATH.said and ends on it (with
 * `ignore', stays: SIGKILL ends it). Any other run notes `ran ARGS' in ran_log and answers
 * get_server_list (0) and quit; `fds' says whether descriptor 57 came open. */
static void write_control(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n"
               "if [ \"$1\" = daemon ]; then\n"
               "    [ -n \"$2\" ] && \"$2\" 30 &\n"
               "    if [ \"$3\" = ignore ]; then trap 'echo term >>\"$0.said\"' TERM\n"
               "    else trap 'echo term >>\"$0.said\"; exit 0' TERM; fi\n"
               "    while :; do sleep 0.05; done\n"
               "fi\n"
               "echo \"ran $*\" >>'%s'\n"
               "if [ \"$1\" = fds ]; then\n"
               "    if [ -e /proc/$$/fd/57 ]; then echo open; else echo closed; fi >\"$0.fds\"\n"
               "    exit 0\n"
               "fi\n"
               "read -r cmd\n"
               "case $cmd in\n"
               "get_server_list) exit 0 ;;\n"
               "quit) kill \"$(cat \"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\")\"; exit 0 ;;\n"
               "esac\n"
               "exit 1\n", ran_log);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

/* The stand-in control program on PATH (tmpdir/bin) and the MPS server's copy beside it;
 * CARVE_MPS_CONTROL names a planted program that would note its runs too. */
static void control_setup(void)
{
    char bin[128], cmd[400], planted[160], path[4096];
    snprintf(bin, sizeof(bin), "%s/bin", tmpdir);
    assert_int_equal(mkdir(bin, 0755), 0);
    snprintf(control, sizeof(control), "%s/%s", bin, CARVE_MPS_CONTROL_NAME);
    snprintf(ran_log, sizeof(ran_log), "%s/ran.log", tmpdir);
    snprintf(server, sizeof(server), "%s/%s", bin, CARVE_MPS_SERVER_NAME);
    write_control(control);
    snprintf(planted, sizeof(planted), "%s/planted", tmpdir);
    write_control(planted);
    snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s' && chmod 755 '%s'", server, server);
    assert_int_equal(system(cmd), 0);
    const char *old = getenv("PATH");
    snprintf(path, sizeof(path), "%s:%s", bin, old ? old : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    setenv("CARVE_MPS_CONTROL", planted, 1);
}

static void control_teardown(void)
{
    const char *path = getenv("PATH");
    const char *colon = path ? strchr(path, ':') : NULL;
    if (colon) {
        char rest[4096];
        snprintf(rest, sizeof(rest), "%s", colon + 1);
        setenv("PATH", rest, 1);
    }
    unsetenv("CARVE_MPS_CONTROL");
}

/* A stand-in daemon, a child of this test, once it runs under its name; its pid. mode:
 * "" or "ignore" (SIGTERM). */
static pid_t start_daemon(bool with_server, const char *mode)
{
    pid_t daemon = fork();
    assert_true(daemon >= 0);
    if (daemon == 0) {
        /* a group of its own (killed whole by remove_tmp), none of the test's output pipes */
        int null = open("/dev/null", O_RDWR);
        if (setpgid(0, 0) < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
            dup2(null, 2) < 0)
            _exit(126);
        execl(control, control, "daemon", with_server ? server : "", mode, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < MAX_DAEMONS; i++)
        if (daemons[i] <= 0) {
            daemons[i] = daemon;
            break;
        }
    struct carve_proc_stat ps = {0};
    for (int i = 0; i < 500 && !(carve_proc_stat(daemon, &ps) == 0 &&
                                 strcmp(ps.comm, "nvidia-cuda-mps") == 0); i++)
        usleep(10000);
    assert_string_equal(ps.comm, "nvidia-cuda-mps");
    return daemon;
}

/* The stand-in MPS server that daemon started, once it runs; its pid. */
static pid_t server_of(pid_t daemon)
{
    for (int i = 0; i < 500; i++) {
        pid_t kids[8];
        char link[64], exe[4096];
        int n = 0;
        /* a child of daemon: /proc/DAEMON/task/DAEMON/children */
        snprintf(link, sizeof(link), "/proc/%d/task/%d/children", (int)daemon, (int)daemon);
        FILE *f = fopen(link, "re");
        if (f) {
            int k;
            while (n < 8 && fscanf(f, "%d", &k) == 1)
                kids[n++] = k;
            fclose(f);
        }
        for (int j = 0; j < n; j++) {
            snprintf(link, sizeof(link), "/proc/%d/exe", (int)kids[j]);
            ssize_t l = readlink(link, exe, sizeof(exe) - 1);
            if (l > 0 && (size_t)l == strlen(server) && memcmp(exe, server, (size_t)l) == 0)
                return kids[j];
        }
        usleep(10000);
    }
    fail_msg("the stand-in daemon %d started no server", (int)daemon);
    return 0;
}

/* Writes dir's pipe/ pid file naming pid, written age seconds ago. */
static void write_pid_file(const char *dir, long pid, int age)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/pipe/%s", dir, CARVE_MPS_PID_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%ld\n", pid);
    fclose(f);
    if (age) {
        struct timespec t[2];
        clock_gettime(CLOCK_REALTIME, &t[0]);
        t[0].tv_sec -= age;
        t[1] = t[0];
        assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
    }
}

static bool ran_any(void)
{
    return exists(ran_log);
}

static bool said_term(void)
{
    char path[200];
    snprintf(path, sizeof(path), "%s.said", control);
    return exists(path);
}

/* A job step's end (carve_mps_end_step): its directories whose clients are gone go, with a
 * daemon that outlived the step stopped by SIGTERM, its MPS server too, and no program run:
 * neither the control program on PATH nor the job's CARVE_MPS_CONTROL; one with a client
 * that still runs stays, as do other steps', the batch script's, other jobs', and links:
 * nothing a link names is touched. */
static void test_end_step(void **state)
{
    char base[128], a[512], b[512], c[512], d[512], o[512], h[512], victim[256], path[700],
        err[512];
    snprintf(base, sizeof(base), "%s/base", tmpdir);
    setenv("CARVE_MPS_DIR", base, 1);
    control_setup();
    /* nothing made yet: nothing found, nothing made */
    assert_int_equal(carve_mps_end_step("7", "3", collect, NULL, err, sizeof(err)), 0);
    assert_false(exists(base));
    step_dir(gpus[0].uuid, "7", "3", dead_pid(), a, sizeof(a)); /* its client is gone */
    step_dir(gpus[1].uuid, "7", "3", getpid(), b, sizeof(b));   /* its client runs */
    step_dir(gpus[0].uuid, "7", "30", 0, c, sizeof(c));         /* another step */
    step_dir(gpus[0].uuid, "7", NULL, 0, d, sizeof(d));         /* the batch script */
    step_dir(gpus[0].uuid, "17", "3", 0, o, sizeof(o));         /* another job */
    /* a daemon that outlived the step, with its MPS server */
    step_dir(gpus[2].uuid, "7", "3", 0, h, sizeof(h));
    pid_t daemon = start_daemon(true, "");
    pid_t srv = server_of(daemon);
    write_pid_file(h, daemon, 0);
    /* a root-like victim: a link of the step's name to it, and a directory of links into it */
    snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
    assert_int_equal(mkdir(victim, 0700), 0);
    snprintf(path, sizeof(path), "%s/pipe", victim);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/pipe/keep", victim);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof(path), "%s/clients", victim);
    fclose(fopen(path, "w"));
    char mine[256], link[512], links[512];
    snprintf(mine, sizeof(mine), "%.*s", (int)(strrchr(a, '/') - a), a);
    snprintf(link, sizeof(link), "%s/mps-GPU-ffffffff-j7.3", mine);
    assert_int_equal(symlink(victim, link), 0);
    snprintf(links, sizeof(links), "%s/mps-GPU-eeeeeeee-j7.3", mine);
    assert_int_equal(mkdir(links, 0700), 0);
    snprintf(path, sizeof(path), "%s/pipe", links);
    char target[320];
    snprintf(target, sizeof(target), "%s/pipe", victim);
    assert_int_equal(symlink(target, path), 0);
    snprintf(path, sizeof(path), "%s/clients", links);
    assert_int_equal(symlink(target, path), 0);

    notes[0] = '\0';
    note_errors = 0;
    int found = carve_mps_end_step("7", "3", collect, NULL, err, sizeof(err));
    int status = -1;
    pid_t reaped = waitpid(daemon, &status, WNOHANG);
    bool server_ran = carve_proc_running(srv);
    printf("%s", notes);
    assert_int_equal(found, 5); /* a, b, h, the link and the directory of links */
    assert_false(exists(a));
    assert_true(exists(b)); /* its client (this test) runs */
    assert_true(exists(c));
    assert_true(exists(d));
    assert_true(exists(o));
    assert_false(exists(h));
    assert_int_equal(reaped, daemon); /* SIGTERM, on which it ended */
    assert_true(WIFEXITED(status));
    assert_true(said_term());
    assert_false(server_ran);
    assert_false(ran_any()); /* no program was run: neither PATH's nor CARVE_MPS_CONTROL */
    assert_non_null(strstr(notes, "after stopping its MPS control daemon (pid "));
    assert_non_null(strstr(notes, ") by signal, which outlived the step"));
    assert_true(exists(link)); /* not carve's: left, and named */
    assert_non_null(strstr(notes, "is not a directory (a symbolic link), so not carve's"));
    assert_int_equal(note_errors, 1);
    assert_false(exists(links)); /* its links went, not what they named */
    snprintf(path, sizeof(path), "%s/pipe/keep", victim);
    assert_true(exists(path));
    snprintf(path, sizeof(path), "%s/clients", victim);
    assert_true(exists(path));
    assert_non_null(strstr(notes, ": left: 1 of its carve run --mode mps clients still run"));
    /* the batch script's end: its own directory, none of the steps' */
    assert_int_equal(carve_mps_end_step("7", NULL, collect, NULL, err, sizeof(err)), 1);
    assert_false(exists(d));
    assert_true(exists(c));
    assert_true(exists(b));
    assert_false(ran_any());
    control_teardown();
    unsetenv("CARVE_MPS_DIR");
}

/* A daemon of this test in a PID namespace of its own (pid 2 there), as a container's that
 * shares BASE: its pid here, and in *outer the process to reap; 0 when no PID namespace can
 * be made here. */
static pid_t start_nested_daemon(pid_t *outer)
{
    *outer = fork();
    assert_true(*outer >= 0);
    if (*outer == 0) {
        if (setpgid(0, 0) < 0) /* a group of its own, killed whole by remove_tmp */
            _exit(126);
        if (unshare(CLONE_NEWPID) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0)
            _exit(77);
        pid_t init = fork();
        if (init == 0) { /* pid 1 there; the daemon is 2 */
            pid_t dm = fork();
            if (dm == 0) {
                int null = open("/dev/null", O_RDWR);
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                    _exit(126);
                execl(control, control, "daemon", "", "", (char *)NULL);
                _exit(127);
            }
            while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                ;
            _exit(0);
        }
        waitpid(init, NULL, 0);
        _exit(0);
    }
    for (int i = 0; i < MAX_DAEMONS; i++)
        if (daemons[i] <= 0) {
            daemons[i] = *outer;
            break;
        }
    for (int i = 0; i < 500; i++) {
        int status;
        if (waitpid(*outer, &status, WNOHANG) == *outer) {
            *outer = 0;
            return 0;
        }
        DIR *proc = opendir("/proc");
        struct dirent *e;
        pid_t found = 0;
        while (proc && !found && (e = readdir(proc))) {
            pid_t p = (pid_t)atoi(e->d_name), inner, init;
            struct carve_proc_stat st, up;
            if (p > 0 && carve_proc_stat(p, &st) == 0 && strcmp(st.comm, "nvidia-cuda-mps") == 0 &&
                carve_proc_ns_pid(p, &inner) > 1 && inner == 2 && (init = st.ppid) > 0 &&
                carve_proc_stat(init, &up) == 0 && up.ppid == *outer)
                found = p;
        }
        if (proc)
            closedir(proc);
        if (found)
            return found;
        usleep(10000);
    }
    fail_msg("the daemon in a PID namespace of its own did not start");
    return 0;
}

/* What a step's end judges without running anything: a daemon that SIGTERM does not end is
 * killed; a pid file whose pid is gone means the daemon ended (it died with the step:
 * proctrack/cgroup); a pid file whose pid now names a later process of ours so named (a pid
 * given again) stops nothing; that, a control pipe without a pid file (an older driver) and
 * a daemon in another PID namespace whose pid there is the file's cannot be judged: left,
 * and named. Nothing is run. */
static void test_end_step_judged(void **state)
{
    char base[128], k[512], r[512], x[512], n[512], ns[512], err[512], path[700];
    snprintf(base, sizeof(base), "%s/base", tmpdir);
    setenv("CARVE_MPS_DIR", base, 1);
    control_setup();
    step_dir(gpus[0].uuid, "8", "1", 0, k, sizeof(k));
    pid_t stubborn = start_daemon(false, "ignore");
    write_pid_file(k, stubborn, 0);
    step_dir(gpus[1].uuid, "8", "1", 0, r, sizeof(r));
    pid_t later = start_daemon(false, ""); /* started after r's pid file was written */
    write_pid_file(r, later, 60);
    step_dir(gpus[2].uuid, "8", "1", 0, x, sizeof(x));
    write_pid_file(x, dead_pid(), 0);
    step_dir("GPU-00000000-0000-0000-0000-00000000000e", "8", "1", 0, n, sizeof(n));
    snprintf(path, sizeof(path), "%s/pipe/%s", n, CARVE_MPS_PID_FILE);
    assert_int_equal(unlink(path), 0); /* an older driver's: no pid file */
    pid_t outer, nested = 0;
    step_dir("GPU-00000000-0000-0000-0000-00000000000f", "8", "1", 0, ns, sizeof(ns));
    nested = start_nested_daemon(&outer);
    if (nested)
        write_pid_file(ns, 2, 0);
    else
        printf("# no PID namespace can be made here: the nested daemon is not tried\n");

    notes[0] = '\0';
    note_errors = 0;
    int found = carve_mps_end_step("8", "1", collect, NULL, err, sizeof(err));
    int status = -1;
    pid_t reaped = waitpid(stubborn, &status, WNOHANG);
    bool later_runs = carve_proc_running(later), nested_runs = nested && carve_proc_running(nested);
    kill(later, SIGKILL);
    waitpid(later, NULL, 0);
    if (nested) {
        kill(nested, SIGKILL);
        waitpid(outer, NULL, 0);
    }
    printf("%s", notes);
    assert_int_equal(found, 5);
    assert_false(exists(k));
    assert_int_equal(reaped, stubborn);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(said_term()); /* it had SIGTERM first */
    assert_non_null(strstr(notes, "it did not end within 1 s of SIGTERM: SIGKILL"));
    assert_true(exists(r));  /* its pid was given again, or the clock moved: left */
    assert_true(later_runs); /* and the process that has the pid now was left alone */
    assert_non_null(strstr(notes, "that started after the file was written: whether it is the "
                                  "MPS control daemon cannot be told"));
    assert_false(exists(x));
    assert_true(exists(n));
    assert_non_null(strstr(notes, "has a control pipe and no nvidia-cuda-mps-control.pid: "
                                  "whether its MPS control daemon runs cannot be told without "
                                  "running nvidia-cuda-mps-control, which is not run here"));
    if (nested) {
        assert_true(exists(ns));
        assert_true(nested_runs);
        assert_non_null(strstr(notes, "its MPS control daemon may run in another PID namespace"));
        assert_int_equal(note_errors, 3);
    } else {
        assert_false(exists(ns));
        assert_int_equal(note_errors, 2);
    }
    assert_false(ran_any());
    control_teardown();
    unsetenv("CARVE_MPS_DIR");
}

/* carve run's judgment (may_exec): a pid file whose pid does not run here is not final, the
 * daemon is asked through its pipe (it may be another PID namespace's); a reused pid is not
 * the daemon; the control program's failure comes back in err; a daemon that may not run it
 * (a step's end) runs nothing. */
static void test_alive_may_exec(void **state)
{
    char dir[512], err[512], path[700];
    struct carve_mps_daemon *d = malloc(sizeof(*d));
    assert_non_null(d);
    setenv("CARVE_MPS_DIR", tmpdir, 1);
    control_setup();
    step_dir(gpus[0].uuid, "9", "1", 0, dir, sizeof(dir)); /* pipe/control, log/ */
    write_pid_file(dir, dead_pid(), 0);
    carve_mps_daemon_init(d, dir, gpus[0].uuid, control, true);
    assert_int_equal(carve_mps_daemon_alive(d, err, sizeof(err)), 1); /* get_server_list: 0 */
    assert_string_equal(err, "");
    assert_true(ran_any());
    unlink(ran_log);
    assert_int_equal(carve_mps_daemon_pid(d), 0);
    /* the same without may_exec: the dead pid is final, and nothing is asked */
    carve_mps_daemon_init(d, dir, gpus[0].uuid, NULL, false);
    assert_int_equal(carve_mps_daemon_alive(d, err, sizeof(err)), 0);
    assert_int_equal(carve_mps_control_run(d, NULL, "get_server_list\n", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "none is run at a Slurm step's end"));
    assert_false(ran_any());
    /* a live process of ours named as the daemon, started after the pid file: reused */
    pid_t later = start_daemon(false, "");
    write_pid_file(dir, later, 60);
    snprintf(path, sizeof(path), "%s/pipe/control", dir);
    unlink(path);
    carve_mps_daemon_init(d, dir, gpus[0].uuid, control, true);
    int reused = carve_mps_daemon_alive(d, err, sizeof(err));
    pid_t reused_pid = carve_mps_daemon_pid(d);
    write_pid_file(dir, later, 0); /* written after it started: it */
    int fresh = carve_mps_daemon_alive(d, err, sizeof(err));
    pid_t fresh_pid = carve_mps_daemon_pid(d);
    kill(later, SIGKILL);
    waitpid(later, NULL, 0);
    assert_int_equal(reused, 0);
    assert_int_equal(reused_pid, 0);
    assert_int_equal(fresh, 1);
    assert_int_equal(fresh_pid, later);
    /* a control program that cannot be run says nothing of the daemon: cannot be told, and
       why (here its log directory is gone); it was taken for no daemon until 2026-11-29 */
    write_pid_file(dir, dead_pid(), 0);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof(path), "rm -rf '%s/log'", dir);
    assert_int_equal(system(path), 0);
    assert_int_equal(carve_mps_daemon_alive(d, err, sizeof(err)), -EAGAIN);
    assert_non_null(strstr(err, "runs cannot be told"));
    assert_non_null(strstr(err, "cannot run"));
    assert_non_null(strstr(err, control));
    free(d);
    control_teardown();
    unsetenv("CARVE_MPS_DIR");
}

/* The control program carve run starts gets none of carve run's other files, also where
 * close_range fails with ENOSYS (a kernel before 5.9): a descriptor left open would live on
 * in the daemon it starts. */
static void test_control_files(void **state)
{
    char dir[512], err[512], fds[200];
    setenv("CARVE_MPS_DIR", tmpdir, 1);
    control_setup();
    step_dir(gpus[0].uuid, "9", "2", 0, dir, sizeof(dir));
    snprintf(fds, sizeof(fds), "%s.fds", control);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        struct carve_mps_daemon d;
        if (deny_close_range() < 0)
            _exit(77);
        int fd = open("/dev/null", O_RDONLY); /* not close-on-exec */
        if (fd < 0 || dup2(fd, 57) != 57)
            _exit(2);
        carve_mps_daemon_init(&d, dir, gpus[0].uuid, control, true);
        _exit(carve_mps_control_run(&d, "fds", NULL, err, sizeof(err)) == 0 ? 0 : 3);
    }
    int status;
    assert_int_equal(waitpid(p, &status, 0), p);
    control_teardown();
    unsetenv("CARVE_MPS_DIR");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("# seccomp is not available: close_range's ENOSYS is not tried\n");
        return;
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    FILE *f = fopen(fds, "r");
    assert_non_null(f);
    char said[16] = "";
    assert_non_null(fgets(said, sizeof(said), f));
    fclose(f);
    assert_string_equal(said, "closed\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_gpu),
        cmocka_unit_test(test_pick_gpu_gap),
        cmocka_unit_test(test_thread_percentage),
        cmocka_unit_test(test_mem_limit),
        cmocka_unit_test(test_clients_text),
        cmocka_unit_test(test_command_procs),
        cmocka_unit_test(test_alive_and_prune),
        cmocka_unit_test(test_zombie_is_gone),
        cmocka_unit_test(test_dir_name),
        cmocka_unit_test_setup_teardown(test_run_base, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_run_dir, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_load_store, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_concurrent_members, make_tmp, remove_tmp),
        cmocka_unit_test(test_dir_of_step),
        cmocka_unit_test_setup_teardown(test_end_step, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_end_step_judged, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_alive_may_exec, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_control_files, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
