/* test_slurm_job.c - the Slurm plugin's logic (slurm/job.c) without Slurm: option checks,
 * the shard default, gres.conf reading (and a gres.conf that cannot be read), the job's
 * record, and a job's slice made, shared by two steps (a later one told which of its
 * options the slice does not hold), left, removed and swept, with dead steps pruned, on
 * the simulated GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job.h"
#include "slice.h"

static void test_check_option(void **state)
{
    char err[512];
    assert_int_equal(carve_job_check_option("gpu-memory", "8G", err, sizeof(err)), 0);
    assert_int_equal(carve_job_check_option("gpu-memory", "0=8G,1=512MiB", err, sizeof(err)), 0);
    assert_int_equal(carve_job_check_option("gpu-compute", "25%", err, sizeof(err)), 0);
    assert_int_equal(carve_job_check_option("gpu-compute", "12.5%+", err, sizeof(err)), 0);
    assert_int_equal(carve_job_check_option("gpu-memory", "lots", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--gpu-memory=lots: "));
    assert_int_equal(carve_job_check_option("gpu-compute", "150%", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--gpu-compute=150%: "));
    assert_int_equal(carve_job_check_option("gpu-memory", "", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(carve_job_check_option("gpu-memory", NULL, err, sizeof(err)), -EINVAL);
}

static void test_shard_share(void **state)
{
    struct carve_compute c;
    assert_false(carve_job_shard_share(0, 4, &c));
    assert_false(carve_job_shard_share(2, 0, &c));
    assert_true(carve_job_shard_share(1, 4, &c));
    assert_int_equal(c.share_bp, 2500);
    assert_int_equal(c.mode, CARVE_COMPUTE_GUARANTEE);
    assert_true(carve_job_shard_share(1, 3, &c));
    assert_int_equal(c.share_bp, 3333);
    assert_true(carve_job_shard_share(9, 4, &c)); /* never past the whole GPU */
    assert_int_equal(c.share_bp, 10000);
    assert_true(carve_job_shard_share(1, 100000, &c)); /* never zero */
    assert_int_equal(c.share_bp, 1);
}

/* gres.conf's shards and GPUs for a node, as "SHARDS/GPUS". */
static const char *gres(const char *text, const char *node)
{
    static char out[64];
    struct carve_job_gres g;
    carve_job_gres_read(text, node, &g);
    snprintf(out, sizeof(out), "%u/%u", g.shards, g.gpus);
    return out;
}

static void test_gres_read(void **state)
{
    const char *text = "AutoDetect=off\n"
                       "Name=gpu File=/dev/nvidia[0-1]\n"
                       "# Name=shard Count=99\n"
                       "Name=shard Count=8 File=/dev/nvidia[0-1]   # 4 each\n"
                       "NodeName=other Name=shard Count=100\n"
                       "NodeName=other Name=gpu Count=8\n"
                       "NodeName=node1 Name=shard Count=8\n";
    assert_string_equal(gres(text, "node1"), "16/2");
    assert_string_equal(gres(text, "node2"), "8/2");
    assert_string_equal(gres("Name=gpu Count=1\n", "n"), "0/1");
    assert_string_equal(gres("name=SHARD count=6\n", "n"), "6/0");
    assert_string_equal(gres("Name=shard Count=-1\nName=shard Count=x\nName=gpu Count=-2\n", "n"), "0/0");
    assert_string_equal(gres(NULL, "n"), "0/0");
    /* a GPU line's devices are its files, else its Count= */
    assert_string_equal(gres("Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
                             "Name=gpu Type=t4 File=/dev/nvidia[4-5],/dev/nvidia7\n"
                             "Name=gpu Count=2 File=/dev/nvidia[8-\n", "n"), "0/9");
    assert_string_equal(gres("Name=shard Count=2000000\nName=gpu Count=2000000\n", "n"), "0/0");
    /* NodeName= is a hostlist, as a cluster's one gres.conf writes it for all its nodes */
    const char *shared = "NodeName=vm,gpu[01-16,20] Name=gpu File=/dev/nvidia[0-1]\n"
                         "NodeName=vm,gpu[01-16,20] Name=shard Count=4 File=/dev/nvidia0\n"
                         "NodeName=gpu[01-16,20],vm Name=shard Count=4 File=/dev/nvidia1\n"
                         "NodeName=big[1-2] Name=gpu File=/dev/nvidia[0-7]\n"
                         "NodeName=big[1-2] Name=shard Count=16\n";
    assert_string_equal(gres(shared, "vm"), "8/2");
    assert_string_equal(gres(shared, "gpu07"), "8/2");
    assert_string_equal(gres(shared, "gpu20"), "8/2");
    assert_string_equal(gres(shared, "gpu7"), "0/0"); /* [01-16] is zero-padded */
    assert_string_equal(gres(shared, "big2"), "16/8");
    assert_string_equal(gres(shared, "gpu17"), "0/0");
    assert_string_equal(gres("NodeName=ALL Name=shard Count=4\n", "x"), "4/0");
    assert_string_equal(gres("NodeName=n[1-2 Name=shard Count=4\n", "n1"), "0/0");
}

/* NVML's GPUs (index, UUID "GPU-...-0000000000IJ") as "index:slurm" of those picked; counted:
 * the GPUs NVML counts, those it does not answer for among them. */
static const char *pick_counted(const char *list, int listed, int counted,
                                const unsigned *indices)
{
    static char out[600];
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    int slurm[CARVE_SLICE_MAX_DEVICES];
    char err[512];
    for (int i = 0; i < listed; i++)
        gpus[i].index = indices[i];
    int n = carve_job_pick_gpus(list, gpus, listed, counted, slurm, err, sizeof(err));
    if (n < 0) {
        snprintf(out, sizeof(out), "error: %s", err);
        return out;
    }
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%u:%d", i ? " " : "",
                               gpus[i].index, slurm[i]);
    return out;
}

static const char *pick(const char *list, int listed, const unsigned *indices)
{
    return pick_counted(list, listed, listed, indices);
}

/* Slurm's numbers for a job's GPUs against NVML's in the task: the node's GPUs (numbers
 * as they are), or under a devices cgroup the job's alone, numbered from 0 (in order). */
static void test_pick_gpus(void **state)
{
    const unsigned node4[] = {0, 1, 2, 3}, one[] = {0}, two[] = {0, 1};
    assert_string_equal(pick("1,3", 4, node4), "1:1 3:3");     /* the node's four */
    assert_string_equal(pick("3,1,3", 4, node4), "1:1 3:3");   /* sorted, each once */
    assert_string_equal(pick("1", 1, one), "0:1");             /* GPU 1, seen alone as 0 */
    assert_string_equal(pick("3", 1, one), "0:3");
    assert_string_equal(pick("1,3", 2, two), "0:1 1:3");       /* in the node's order */
    assert_string_equal(pick("0,1", 2, two), "0:0 1:1");
    assert_string_equal(pick("", 2, two), "0:0 1:1");          /* no list: every GPU */
    assert_string_equal(pick(NULL, 4, node4), "0:0 1:1 2:2 3:3");
    assert_string_equal(pick("GPU-1234", 2, two), "0:0 1:1"); /* not numbers: every GPU */
    const char *e = pick("1,3", 3, node4); /* neither the job's alone nor a GPU 3 */
    assert_non_null(strstr(e, "error: Slurm gave the job GPUs 1,3 on this node (SLURM_STEP_GPUS "
                              "or SLURM_JOB_GPUS), but NVML lists 3 GPUs here: neither the "
                              "job's alone (as under ConstrainDevices=yes) nor the node's with "
                              "a GPU 3"));
    assert_non_null(strstr(pick("2", 2, two), "error: Slurm gave the job GPU 2 on"));
    /* the node's three GPUs, GPU 2 lost (NVML counts it, lists 0 and 1): the job's 1,2 are
       not the two listed (taken for the job's alone until 2026-11-29: GPU 0 capped for 1) */
    const unsigned lost2[] = {0, 1};
    assert_string_equal(pick_counted("0,1", 2, 3, lost2), "0:0 1:1");
    assert_non_null(strstr(pick_counted("1,2", 2, 3, lost2),
                           "error: Slurm gave the job GPUs 1,2 on this node"));
    assert_non_null(strstr(pick("0,1,2", 2, two), "error: "));
    char many[256] = "0";
    for (int i = 1; i <= CARVE_SLICE_MAX_DEVICES; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d", i);
    assert_non_null(strstr(pick(many, 4, node4), "at most 16 GPUs"));
    assert_non_null(strstr(pick("99999999", 1, one), "numbered below a million"));
}

static void test_record(void **state)
{
    struct carve_job_record rec, back;
    char text[4096];
    assert_int_equal(carve_job_record_parse("", &rec), 0);
    assert_int_equal(rec.nsteps, 0);
    const char *good = "carve-slurm 1\nshm /carve.slurm.7.0badf00d\ncarved -\n"
                       "board GPU-00000000-0000-0000-0000-000000000001 3\n"
                       "step 100 12345\nstep 200 0\n";
    assert_int_equal(carve_job_record_parse(good, &rec), 0);
    assert_string_equal(rec.shm, "/carve.slurm.7.0badf00d");
    assert_string_equal(rec.carved, "");
    assert_int_equal(rec.nboards, 1);
    assert_int_equal(rec.boards[0].entry, 3);
    assert_int_equal(rec.nsteps, 2);
    assert_int_equal(rec.steps[0].pid, 100);
    assert_int_equal(rec.steps[0].start, 12345);
    int n = carve_job_record_format(&rec, text, sizeof(text));
    assert_true(n > 0);
    assert_string_equal(text, good);
    assert_int_equal(carve_job_record_parse(text, &back), 0);
    assert_memory_equal(&rec, &back, sizeof(rec));
    assert_int_equal(carve_job_record_format(&rec, text, 20), -ENOSPC);
    const char *bad[] = {
        "carve-slurm 2\n", "shm relative\n", "shm /a/b\n", "carved bad/name\n",
        "board nonsense 1\n", "board GPU-00000000-0000-0000-0000-000000000001 64\n",
        "step 0 1\n", "step x\n", "mystery 1\n", "step 99999999999 1\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(carve_job_record_parse(bad[i], &rec), -EINVAL);
}

/* A private world: the simulated GPU's state and the plugin's records in a temp dir, and
 * carved's socket pointed nowhere so that the standalone path is taken. */
struct world {
    char dir[64];
    struct carve_job_conf conf;
};

static int world_setup(void **state)
{
    static struct world w;
    snprintf(w.dir, sizeof(w.dir), "/tmp/carve-slurm-test.XXXXXX");
    assert_non_null(mkdtemp(w.dir));
    char path[PATH_MAX], exe[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sim-state", w.dir);
    setenv("CARVE_SIM_STATE", path, 1);
    setenv("CARVE_SIM_MEMORY", "16GiB", 1);
    snprintf(path, sizeof(path), "%s/no-carved.sock", w.dir);
    setenv("CARVE_SOCKET", path, 1);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    memset(&w.conf, 0, sizeof(w.conf));
    snprintf(w.conf.libdir, sizeof(w.conf.libdir), "%s/../../lib/carve", dirname(exe));
    snprintf(w.conf.state_dir, sizeof(w.conf.state_dir), "%s/state", w.dir);
    w.conf.simulate = true;
    w.conf.shards_per_gpu = 4;
    *state = &w;
    return 0;
}

static int world_teardown(void **state)
{
    struct world *w = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", w->dir);
    return system(cmd) == 0 ? 0 : -1;
}

static bool shm_exists(const char *shm)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/dev/shm%s", shm);
    return access(path, F_OK) == 0;
}

static bool record_exists(const struct world *w, uint32_t job)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/job-%u", w->conf.state_dir, job);
    return access(path, F_OK) == 0;
}

/* A child that sleeps: a stand-in slurmstepd. */
static pid_t fake_step(void)
{
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed assertion must not leave it behind */
        pause();
        _exit(0);
    }
    return p;
}

static void end_step(pid_t p)
{
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

static void test_two_steps_share_one_slice(void **state)
{
    struct world *w = *state;
    char shm1[128], shm2[128], err[1024];
    pid_t s1 = fake_step(), s2 = fake_step();
    struct carve_job_request req = {.job_id = 41, .uid = getuid(), .gid = getgid(),
                                    .step_pid = s1, .memory = "2G", .job_shards = 1};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm1, sizeof(shm1), err, sizeof(err)), 1);
    assert_string_equal(err, ""); /* the step that made it has nothing to be told */
    assert_true(shm_exists(shm1));
    struct carve_slice *s;
    assert_int_equal(carve_slice_open(shm1, &s, err, sizeof(err)), 0);
    assert_int_equal(carve_slice_cap(s, 0), 2ull << 30);
    struct carve_compute c = carve_slice_compute(s, 0);
    assert_int_equal(c.share_bp, 2500); /* one shard of four */
    assert_int_equal(c.mode, CARVE_COMPUTE_GUARANTEE);
    assert_string_equal(carve_slice_name(s), "slurm-41");
    carve_slice_close(s);

    req.step_pid = s2;
    req.memory = "9G"; /* a later step joins what the first made, and is told so */
    req.compute = "30%";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm2, sizeof(shm2), err, sizeof(err)), 1);
    assert_string_equal(shm1, shm2);
    assert_non_null(strstr(err, "this step's --gpu-memory=9G and --gpu-compute=30% are not "
                                "applied: the job's slice slurm-41 on this node was made by an "
                                "earlier step of the job and holds GPU 0: memory cap 2 GiB, "
                                "compute 25%+;"));
    /* the step's next task: told once a step */
    assert_int_equal(carve_job_enter(&w->conf, &req, shm2, sizeof(shm2), err, sizeof(err)), 1);
    assert_string_equal(err, "");
    pid_t s3 = fake_step();
    req.step_pid = s3; /* the values the slice holds, written otherwise: nothing ignored */
    req.memory = "2048MiB";
    req.compute = NULL;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm2, sizeof(shm2), err, sizeof(err)), 1);
    assert_string_equal(err, "");
    assert_int_equal(carve_job_leave(&w->conf, 41, s3, err, sizeof(err)), 0);
    end_step(s3);
    s3 = fake_step();
    req.step_pid = s3;
    req.memory = NULL;
    req.compute = "25%+"; /* the shards' share, asked for: nothing ignored */
    assert_int_equal(carve_job_enter(&w->conf, &req, shm2, sizeof(shm2), err, sizeof(err)), 1);
    assert_string_equal(err, "");
    req.compute = "25%"; /* a cap where the slice holds a guarantee */
    req.memory = "0=2G,3=1G"; /* and a GPU the slice does not have */
    end_step(s3);
    s3 = fake_step();
    req.step_pid = s3;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm2, sizeof(shm2), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "this step's --gpu-memory=0=2G,3=1G and --gpu-compute=25% are"));
    assert_int_equal(carve_job_leave(&w->conf, 41, s3, err, sizeof(err)), 0);
    end_step(s3);

    /* a slurmstepd leaves in its exit hook, just before it ends */
    assert_int_equal(carve_job_leave(&w->conf, 41, s1, err, sizeof(err)), 0);
    end_step(s1);
    assert_true(shm_exists(shm1)); /* s2 still runs in it */
    assert_true(record_exists(w, 41));
    assert_int_equal(carve_job_leave(&w->conf, 41, s2, err, sizeof(err)), 0);
    end_step(s2);
    assert_false(shm_exists(shm1));
    assert_false(record_exists(w, 41));
}

static void read_record(const struct world *w, uint32_t job, struct carve_job_record *rec)
{
    char path[PATH_MAX], text[16384];
    snprintf(path, sizeof(path), "%s/job-%u", w->conf.state_dir, job);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_int_equal(carve_job_record_parse(text, rec), 0);
}

/* Steps killed without their exit hook leave the record when the next step comes in (the
 * first too, where the slice is on no board: it holds no entry there, test_board_outlives_
 * first_step has one that does), and the last live step out removes the slice. */
static void test_dead_steps_pruned(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    pid_t s1 = fake_step(), s2 = fake_step(), s3 = fake_step();
    struct carve_job_request req = {.job_id = 46, .uid = getuid(), .gid = getgid(),
                                    .step_pid = s1, .memory = "1G"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    req.step_pid = s2;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    end_step(s1);
    end_step(s2);
    req.step_pid = s3;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    struct carve_job_record rec;
    read_record(w, 46, &rec);
    assert_int_equal(rec.nboards, 0);
    assert_int_equal(rec.nsteps, 1);
    assert_int_equal(rec.steps[0].pid, s3);
    assert_int_equal(carve_job_leave(&w->conf, 46, s3, err, sizeof(err)), 0);
    end_step(s3);
    assert_false(shm_exists(shm));
    assert_false(record_exists(w, 46));
}

/* A step whose pid a dead step of the job had (its line in the record, with that step's
 * start time): another step, listed as itself. By pid alone it went unlisted, and the slice
 * was removed under it when the listed steps left. A dead first step of a slice on no board
 * is dropped too. */
static void test_reused_pid_listed(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024], path[PATH_MAX];
    pid_t s1 = fake_step(), s2 = fake_step();
    struct carve_job_request req = {.job_id = 72, .uid = getuid(), .gid = getgid(),
                                    .step_pid = s1, .memory = "1G"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    /* a dead step of the job had s2's pid: its line first (the first was kept whatever its
       state, boards or none), by another start */
    struct carve_job_record rec;
    read_record(w, 72, &rec);
    assert_int_equal(rec.nsteps, 1);
    rec.steps[1] = rec.steps[0];
    rec.steps[0].pid = s2;
    rec.steps[0].start = carve_proc_start_time(s2) + 7;
    rec.nsteps = 2;
    char text[16384];
    int n = carve_job_record_format(&rec, text, sizeof(text));
    assert_true(n > 0);
    snprintf(path, sizeof(path), "%s/job-72", w->conf.state_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    req.step_pid = s2;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_leave(&w->conf, 72, s1, err, sizeof(err)), 0);
    end_step(s1);
    assert_true(shm_exists(shm)); /* s2 runs in it */
    assert_int_equal(carve_job_leave(&w->conf, 72, s2, err, sizeof(err)), 0);
    end_step(s2);
    assert_false(shm_exists(shm));
    assert_false(record_exists(w, 72));
}

/* A job with more steps alive on the node than the record can list: a step past them is
 * refused, saying why, rather than run in a slice that the listed steps' ends remove
 * while it still runs; a killed step's line is free for the next, the holder of the
 * slice's board entry too. */
static void test_many_steps(void **state)
{
    struct world *w = *state;
    enum { STEPS = CARVE_JOB_MAX_STEPS + 2 };
    static pid_t steps[STEPS];
    static bool in[STEPS];
    char shm[128], err[1024];
    struct carve_job_request req = {.job_id = 48, .uid = getuid(), .gid = getgid(),
                                    .memory = "1G"};
    int last_in = -1;
    for (int i = 0; i < STEPS; i++) {
        steps[i] = fake_step();
        req.step_pid = steps[i];
        int r = carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err));
        in[i] = r == 1;
        if (in[i])
            last_in = i;
        else {
            assert_int_equal(r, -EMFILE);
            assert_non_null(strstr(err, "steps of job 48 run on this node"));
            end_step(steps[i]); /* its tasks fail: nothing of it stays */
        }
    }
    /* every step in the slice but the last to come in ends; that one still runs in it */
    for (int i = 0; i < STEPS; i++)
        if (in[i] && i != last_in) {
            assert_int_equal(carve_job_leave(&w->conf, 48, steps[i], err, sizeof(err)), 0);
            end_step(steps[i]);
        }
    assert_true(shm_exists(shm));
    assert_int_equal(last_in, CARVE_JOB_MAX_STEPS - 1);
    assert_int_equal(carve_job_leave(&w->conf, 48, steps[last_in], err, sizeof(err)), 0);
    end_step(steps[last_in]);
    assert_false(shm_exists(shm));
    assert_false(record_exists(w, 48));

    /* a job whose slice is on a board, as many steps as the record lists: the first (the
       holder of its board entry) killed, a new step takes its line (the dead holder was
       kept, and the new step refused) */
    char uuid[64];
    snprintf(uuid, sizeof(uuid), "GPU-5a1e0c4a-3000-4e3d-9a7b-%012x", (unsigned)getpid());
    setenv("CARVE_SIM_UUIDS", uuid, 1);
    req = (struct carve_job_request){.job_id = 73, .uid = getuid(), .gid = getgid(),
                                     .gpus = "0", .compute = "10%+"};
    for (int i = 0; i < CARVE_JOB_MAX_STEPS; i++) {
        steps[i] = fake_step();
        req.step_pid = steps[i];
        assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    }
    end_step(steps[0]);
    steps[0] = fake_step();
    req.step_pid = steps[0];
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    struct carve_job_record rec;
    read_record(w, 73, &rec);
    assert_int_equal(rec.nsteps, CARVE_JOB_MAX_STEPS);
    assert_int_equal(rec.nboards, 1);
    assert_int_equal(rec.steps[0].pid, steps[1]); /* the holder now */
    for (int i = 0; i < CARVE_JOB_MAX_STEPS; i++) {
        assert_int_equal(carve_job_leave(&w->conf, 73, steps[i], err, sizeof(err)), 0);
        end_step(steps[i]);
    }
    assert_false(shm_exists(shm));
    assert_false(record_exists(w, 73));
    unsetenv("CARVE_SIM_UUIDS");
}

/* Through carved on a node of two GPUs whose gres.conf has 8 shards (4 a GPU): a job's 2
 * shards give half a GPU, as they do standalone, and a guarantee of half is within them;
 * each job's slice is on its GPUs only (four such jobs fit the node), and a cap by Slurm's
 * GPU number lands on that GPU. */
static void test_carved_shard_share(void **state)
{
    struct world *w = *state;
    char path[PATH_MAX], exe[PATH_MAX], sock[PATH_MAX], shm[128], err[1024];
    /* GPUs of this test's own: a guarantee joins the board of its GPU's UUID in /dev/shm */
    snprintf(path, sizeof(path), "%s/carved-sim", w->dir);
    setenv("CARVE_SIM_STATE", path, 1);
    setenv("CARVE_SIM_DEVICES", "2", 1);
    char uuids[128];
    snprintf(uuids, sizeof(uuids), "GPU-5a1e0c4a-1000-4e3d-9a7b-%012x,GPU-5a1e0c4a-1000-4e3d-9a7b-%012x",
             (unsigned)getpid() * 2u, (unsigned)getpid() * 2u + 1u);
    setenv("CARVE_SIM_UUIDS", uuids, 1);
    snprintf(sock, sizeof(sock), "%s/carved.sock", w->dir);
    setenv("CARVE_SOCKET", sock, 1);
    char gres[256];
    snprintf(gres, sizeof(gres), "%s/gres.conf", w->dir);
    FILE *f = fopen(gres, "w");
    assert_non_null(f);
    fputs("Name=gpu File=/dev/nvidia[0-1]\nName=shard Count=8 File=/dev/nvidia[0-1]\n", f);
    fclose(f);
    struct carve_job_conf conf = w->conf;
    conf.shards_per_gpu = 0;
    memcpy(conf.gres_conf, gres, sizeof(gres));

    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    char carved[PATH_MAX + 32], state_dir[PATH_MAX];
    snprintf(carved, sizeof(carved), "%s/../../bin/carved", dirname(exe));
    snprintf(state_dir, sizeof(state_dir), "%s/carved-state", w->dir);
    pid_t daemon = fork();
    if (daemon == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        freopen("/dev/null", "w", stderr);
        execl(carved, carved, "--simulate", "--socket", sock, "--state-dir", state_dir,
              "--listen", "off", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && access(sock, F_OK) < 0; i++)
        usleep(50000);
    assert_int_equal(access(sock, F_OK), 0);

    pid_t step = fake_step();
    struct carve_job_request req = {.job_id = 49, .uid = getuid(), .gid = getgid(),
                                    .step_pid = step, .job_shards = 2, .gpus = "0"};
    int r = carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err));
    struct carve_compute c = {0};
    struct carve_slice *s;
    if (r == 1 && carve_slice_open(shm, &s, err, sizeof(err)) == 0) {
        c = carve_slice_compute(s, 0);
        carve_slice_close(s);
    }
    carve_job_leave(&conf, 49, step, err, sizeof(err));
    end_step(step);
    req.compute = "50%+"; /* the 2 shards' half: not more than they give */
    req.step_pid = step = fake_step();
    int r2 = carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err));
    char err2[1024];
    snprintf(err2, sizeof(err2), "%s", r2 < 0 ? err : "");
    carve_job_leave(&conf, 49, step, err, sizeof(err));
    end_step(step);

    /* four jobs of 2 shards, two on each GPU as Slurm places them: each slice is on its
       job's GPU alone, so its guarantee holds room there only and all four are made; a
       fifth on GPU 0 is refused (100% there already) */
    const char *on[] = {"0", "0", "1", "1", "0"};
    int made[5], ndev[5], index[5];
    char err5[1024] = "";
    req.compute = NULL;
    req.step_pid = getpid();
    for (int j = 0; j < 5; j++) {
        req.job_id = 60 + (uint32_t)j;
        req.gpus = on[j];
        made[j] = carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err));
        ndev[j] = index[j] = -1;
        if (made[j] == 1 && carve_slice_open(shm, &s, err, sizeof(err)) == 0) {
            ndev[j] = carve_slice_ndev(s);
            index[j] = carve_slice_dev_index(s, 0);
            carve_slice_close(s);
        }
        if (j == 4)
            snprintf(err5, sizeof(err5), "%s", err);
    }
    /* a cap by Slurm's number through carved: on the job's GPU 1, carved's GPU 1 */
    req.job_id = 65;
    req.job_shards = 0;
    req.gpus = "1";
    req.memory = "1=1G";
    int made6 = carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err));
    uint64_t cap6 = 0;
    int ndev6 = -1, index6 = -1;
    if (made6 == 1 && carve_slice_open(shm, &s, err, sizeof(err)) == 0) {
        ndev6 = carve_slice_ndev(s);
        index6 = carve_slice_dev_index(s, 0);
        cap6 = carve_slice_cap(s, 0);
        carve_slice_close(s);
    }
    for (uint32_t j = 60; j <= 65; j++)
        carve_job_remove(&conf, j, err, sizeof(err));
    kill(daemon, SIGTERM);
    waitpid(daemon, NULL, 0);
    snprintf(path, sizeof(path), "%s/sim-state", w->dir);
    setenv("CARVE_SIM_STATE", path, 1);
    unsetenv("CARVE_SIM_DEVICES");
    unsetenv("CARVE_SIM_UUIDS");
    snprintf(path, sizeof(path), "%s/no-carved.sock", w->dir);
    setenv("CARVE_SOCKET", path, 1);

    assert_int_equal(r, 1);
    assert_int_equal(c.share_bp, 5000); /* 2 of the GPU's 4 shards, not of the node's 8 */
    assert_int_equal(c.mode, CARVE_COMPUTE_GUARANTEE);
    assert_string_equal(err2, "");
    assert_int_equal(r2, 1);
    for (int j = 0; j < 4; j++) {
        assert_int_equal(made[j], 1);
        assert_int_equal(ndev[j], 1);
        assert_int_equal(index[j], on[j][0] - '0');
    }
    assert_int_equal(made[4], -EINVAL);
    assert_non_null(strstr(err5, "carved: GPU 0: --compute 50%+: the slices on this GPU already "
                                 "hold guarantees of 100.00%"));
    assert_int_equal(made6, 1);
    assert_int_equal(ndev6, 1);
    assert_int_equal(index6, 1);
    assert_int_equal(cap6, 1ull << 30);
}

/* The shard share when the GPU's shard count comes from gres.conf: a file past 16 KiB is
 * read whole (its shard line last), and one that cannot be read, or that has no shard line
 * for the node, refuses the job's step naming the file, why, and what the job would have
 * lost, rather than running it with no share; a cap needs no count and is given. */
static void test_gres_conf_unreadable(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    struct carve_job_conf conf = w->conf;
    conf.shards_per_gpu = 0;
    snprintf(conf.gres_conf, sizeof(conf.gres_conf), "%s/gres.conf", w->dir);
    FILE *f = fopen(conf.gres_conf, "w");
    assert_non_null(f);
    for (int i = 0; i < 400; i++) /* 20 KiB of other nodes' lines before this one's */
        fprintf(f, "NodeName=other%03d Name=gpu File=/dev/nvidia0 # a comment of some length\n", i);
    fputs("Name=shard Count=4 File=/dev/nvidia0\n", f);
    fclose(f);
    struct carve_job_request req = {.job_id = 52, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid(), .job_shards = 1};
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    struct carve_slice *s;
    assert_int_equal(carve_slice_open(shm, &s, err, sizeof(err)), 0);
    assert_int_equal(carve_slice_compute(s, 0).share_bp, 2500); /* 1 of 4 shards */
    carve_slice_close(s);
    assert_int_equal(carve_job_remove(&conf, 52, err, sizeof(err)), 0);

    snprintf(conf.gres_conf, sizeof(conf.gres_conf), "%s/missing/gres.conf", w->dir);
    req.job_id = 53;
    err[0] = '\0';
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), -EIO);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "cannot read %s/missing/gres.conf (plugstack.conf's "
             "gres_conf=) for the shard count of a GPU: No such file or directory", w->dir);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "the job's 1 shard gives no compute share, so its tasks are not started"));
    assert_non_null(strstr(err, "shards_per_gpu=N"));
    assert_false(record_exists(w, 53));
    req.compute = "20%+"; /* a guarantee is checked against the shards: refused alike */
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), -EIO);
    req.compute = "20%"; /* a cap holds no room: no count needed */
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&conf, 53, err, sizeof(err)), 0);

    snprintf(conf.gres_conf, sizeof(conf.gres_conf), "%s/gres-noshard.conf", w->dir);
    f = fopen(conf.gres_conf, "w");
    assert_non_null(f);
    fputs("NodeName=node[1-4] Name=shard Count=4\n", f); /* other nodes' line */
    fclose(f);
    req.compute = NULL;
    req.node = "login1";
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "gres-noshard.conf (plugstack.conf's gres_conf=) has no "
                                "Name=shard line with a Count= of at least one shard a GPU for "
                                "this node (login1, 1 GPU)"));
    assert_false(record_exists(w, 53));
    req.node = "node3"; /* the node's Slurm name (slurmd -N, SLURMD_NODENAME), in the list */
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_slice_open(shm, &s, err, sizeof(err)), 0);
    assert_int_equal(carve_slice_compute(s, 0).share_bp, 2500);
    carve_slice_close(s);
    assert_int_equal(carve_job_remove(&conf, 53, err, sizeof(err)), 0);
}

/* A job given GPU 1 of a node of two, its tasks' NVML seeing that GPU alone as GPU 0 (a
 * devices cgroup, as under ConstrainDevices=yes: the simulated node has one GPU): the slice
 * is on it, --gpu-memory=1=... names it by Slurm's number, and the shards per GPU are the
 * node's 8 over gres.conf's 2 GPUs, not over the 1 NVML lists. */
static void test_constrained_view(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    struct carve_job_conf conf = w->conf;
    conf.shards_per_gpu = 0;
    snprintf(conf.gres_conf, sizeof(conf.gres_conf), "%s/gres-two.conf", w->dir);
    FILE *f = fopen(conf.gres_conf, "w");
    assert_non_null(f);
    fputs("NodeName=n[1-4] Name=gpu File=/dev/nvidia[0-1]\n"
          "NodeName=n[1-4] Name=shard Count=8 File=/dev/nvidia[0-1]\n", f);
    fclose(f);
    struct carve_job_request req = {.job_id = 54, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid(), .job_shards = 2, .gpus = "1",
                                    .node = "n2", .memory = "1=2G"};
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    struct carve_slice *s;
    assert_int_equal(carve_slice_open(shm, &s, err, sizeof(err)), 0);
    assert_int_equal(carve_slice_ndev(s), 1);
    assert_int_equal(carve_slice_dev_index(s, 0), 0);
    assert_int_equal(carve_slice_cap(s, 0), 2ull << 30);
    assert_int_equal(carve_slice_compute(s, 0).share_bp, 5000); /* 2 of 4 shards */
    carve_slice_close(s);
    /* a later step naming the same GPU's cap: nothing to tell; another cap: told */
    pid_t step = fake_step();
    req.step_pid = step;
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_string_equal(err, "");
    assert_int_equal(carve_job_leave(&conf, 54, step, err, sizeof(err)), 0);
    end_step(step);
    req.step_pid = step = fake_step();
    req.memory = "1=3G";
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "this step's --gpu-memory=1=3G is not applied"));
    assert_int_equal(carve_job_leave(&conf, 54, step, err, sizeof(err)), 0);
    end_step(step);
    assert_int_equal(carve_job_remove(&conf, 54, err, sizeof(err)), 0);

    req.job_id = 55; /* a GPU the job was not given, by Slurm's number */
    req.memory = "0=2G";
    assert_int_equal(carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--gpu-memory=0=2G names GPU 0, which is not one of the job's "
                                "on this node (Slurm's numbers for them: 1)"));
    assert_false(record_exists(w, 55));
}

/* On a node of two GPUs, the job's first step is on GPU 0 (an salloc's first srun step) and a
 * later one on GPU 1: the slice the first made is on GPU 0 alone, and the later step is told
 * that nothing caps it on GPU 1 (it ran there uncapped without a word until 2026-11-29). */
static void test_step_gpu_outside_slice(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    setenv("CARVE_SIM_DEVICES", "2", 1);
    struct carve_job_request req = {.job_id = 56, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid(), .gpus = "0", .memory = "1G"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_string_equal(err, "");
    pid_t step = fake_step();
    req.step_pid = step;
    req.gpus = "0";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_string_equal(err, ""); /* the same GPU: nothing to tell */
    assert_int_equal(carve_job_leave(&w->conf, 56, step, err, sizeof(err)), 0);
    end_step(step);
    req.step_pid = step = fake_step();
    req.gpus = "1";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "this step's GPU 1 (Slurm's number) is not in the job's slice "
                                "slurm-56"));
    assert_non_null(strstr(err, "nothing caps this step's memory or compute there"));
    assert_int_equal(carve_job_leave(&w->conf, 56, step, err, sizeof(err)), 0);
    end_step(step);
    assert_int_equal(carve_job_remove(&w->conf, 56, err, sizeof(err)), 0);
    unsetenv("CARVE_SIM_DEVICES");
}

static void test_nothing_asked(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    struct carve_job_request req = {.job_id = 42, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid()};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 0);
    assert_false(record_exists(w, 42));
}

static void test_refused_values(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    struct carve_job_request req = {.job_id = 43, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid(), .memory = "100G"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--gpu-memory 100G"));
    assert_false(record_exists(w, 43));
    req.memory = "1G";
    req.gpus = "1,3"; /* the simulated node has GPU 0 only */
    assert_true(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "Slurm gave the job GPUs 1,3 on this node"));
    assert_false(record_exists(w, 43));
    req.gpus = "0";
    req.compute = "60%+";
    req.job_id = 44;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    req.job_id = 45; /* guarantees on one GPU add up to 100% at most */
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), -EDQUOT);
    assert_non_null(strstr(err, "GPU 0"));
    assert_false(record_exists(w, 45));
    assert_int_equal(carve_job_remove(&w->conf, 44, err, sizeof(err)), 0);
    assert_false(record_exists(w, 44));
    req.job_id = 45; /* the board's room came back */
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 45, err, sizeof(err)), 0);
    assert_false(shm_exists(shm));
}

/* A guarantee holds room that other jobs' guarantees are refused: only within what Slurm
 * gave the job. A cap holds none and is given to any job. */
static void test_guarantee_within_allocation(void **state)
{
    struct world *w = *state;
    char shm[128], err[1024];
    struct carve_job_request req = {.job_id = 47, .uid = getuid(), .gid = getgid(),
                                    .step_pid = getpid(), .compute = "100%+"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no GPU and no shard on this node"));
    assert_non_null(strstr(err, "(--gpu-compute=100%)"));
    assert_false(record_exists(w, 47));
    req.compute = "100%";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 47, err, sizeof(err)), 0);

    req.job_id = 48; /* 1 of the GPU's 4 shards: 25%+ at most */
    req.job_shards = 1;
    req.compute = "30%+";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "1 of 4 shards of a GPU give (25%+)"));
    assert_false(record_exists(w, 48));
    req.compute = "25%+";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 48, err, sizeof(err)), 0);

    req.job_id = 49; /* Slurm's GPUs, no shards: the whole GPU is the job's to guarantee */
    req.job_shards = 0;
    req.gpus = "0";
    req.compute = "100%+";
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 49, err, sizeof(err)), 0);
    assert_false(shm_exists(shm));
}

/* The step that joined the boards ends before the job's other step: its guarantee's room
 * stays the job's (the step still running takes the entries over), and comes back when the
 * last step leaves. It went with the first step: the board counted its entry dead, and
 * another job's guarantee took the room. The same where that step was killed (no exit
 * hook): the next step in hands the entries on. */
static void test_board_outlives_first_step(void **state)
{
    struct world *w = *state;
    char shm[128], other[128], err[1024], uuid[64];
    /* a GPU of this test's own: its board is this test's alone */
    snprintf(uuid, sizeof(uuid), "GPU-5a1e0c4a-2000-4e3d-9a7b-%012x", (unsigned)getpid());
    setenv("CARVE_SIM_UUIDS", uuid, 1);
    pid_t s1 = fake_step(), s2 = fake_step();
    struct carve_job_request req = {.job_id = 70, .uid = getuid(), .gid = getgid(),
                                    .step_pid = s1, .gpus = "0", .compute = "60%+"};
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    req.step_pid = s2;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    assert_int_equal(carve_job_leave(&w->conf, 70, s1, err, sizeof(err)), 0);
    end_step(s1);
    struct carve_job_record rec;
    read_record(w, 70, &rec);
    assert_int_equal(rec.nsteps, 1);
    assert_int_equal(rec.steps[0].pid, s2); /* the boards' joiner now */
    assert_int_equal(rec.nboards, 1);
    struct carve_job_request next = req;
    next.job_id = 71;
    next.step_pid = getpid();
    assert_int_equal(carve_job_enter(&w->conf, &next, other, sizeof(other), err, sizeof(err)),
                     -EDQUOT);
    assert_non_null(strstr(err, "already hold guarantees of 60.00%"));
    assert_false(record_exists(w, 71));
    assert_int_equal(carve_job_leave(&w->conf, 70, s2, err, sizeof(err)), 0);
    end_step(s2);
    assert_false(shm_exists(shm));
    assert_int_equal(carve_job_enter(&w->conf, &next, other, sizeof(other), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 71, err, sizeof(err)), 0);
    assert_false(shm_exists(other));

    /* the holder killed (no exit hook): the next step to come in or leave hands its entry
       on, from the dead step, to one that runs */
    s1 = fake_step(), s2 = fake_step();
    pid_t s3 = fake_step();
    req.step_pid = s1;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    req.step_pid = s2;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    end_step(s1);
    req.step_pid = s3;
    assert_int_equal(carve_job_enter(&w->conf, &req, shm, sizeof(shm), err, sizeof(err)), 1);
    read_record(w, 70, &rec);
    assert_int_equal(rec.nsteps, 2);
    assert_int_equal(rec.steps[0].pid, s2);
    assert_int_equal(rec.nboards, 1);
    assert_int_equal(carve_job_enter(&w->conf, &next, other, sizeof(other), err, sizeof(err)),
                     -EDQUOT);
    end_step(s2); /* killed too: s3's leave hands on to no one, and ends the slice */
    assert_int_equal(carve_job_leave(&w->conf, 70, s3, err, sizeof(err)), 0);
    end_step(s3);
    assert_false(shm_exists(shm));
    assert_int_equal(carve_job_enter(&w->conf, &next, other, sizeof(other), err, sizeof(err)), 1);
    assert_int_equal(carve_job_remove(&w->conf, 71, err, sizeof(err)), 0);
    unsetenv("CARVE_SIM_UUIDS");
}

static void test_sweep(void **state)
{
    struct world *w = *state;
    char live_shm[128], dead_shm[128], err[1024];
    pid_t live = fake_step(), dead = fake_step();
    struct carve_job_request req = {.job_id = 50, .uid = getuid(), .gid = getgid(),
                                    .step_pid = live, .memory = "1G"};
    assert_int_equal(carve_job_enter(&w->conf, &req, live_shm, sizeof(live_shm), err, sizeof(err)), 1);
    req.job_id = 51;
    req.step_pid = dead;
    assert_int_equal(carve_job_enter(&w->conf, &req, dead_shm, sizeof(dead_shm), err, sizeof(err)), 1);
    end_step(dead); /* killed: no exit hook ran */
    struct carve_job_status st[8];
    int n = carve_job_sweep(&w->conf, true, st, 8, err, sizeof(err));
    assert_int_equal(n, 2);
    assert_true(shm_exists(dead_shm)); /* a dry run removes nothing */
    n = carve_job_sweep(&w->conf, false, st, 8, err, sizeof(err));
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_int_equal(st[i].removed, st[i].job_id == 51);
        assert_int_equal(st[i].live_steps, st[i].job_id == 50);
    }
    assert_false(shm_exists(dead_shm));
    assert_false(record_exists(w, 51));
    assert_true(shm_exists(live_shm));
    end_step(live);
    assert_int_equal(carve_job_sweep(&w->conf, false, st, 8, err, sizeof(err)), 1);
    assert_false(shm_exists(live_shm));
    assert_int_equal(carve_job_sweep(&w->conf, false, st, 8, err, sizeof(err)), 0);
}

/* A record the sweep cannot read (a write cut short) is listed with why, and neither it
 * nor its slice is removed: skipping it would tell an admin the node has no slice. */
static void test_sweep_damaged(void **state)
{
    struct world *w = *state;
    char path[PATH_MAX], err[1024];
    snprintf(path, sizeof(path), "%s/job-60", w->conf.state_dir);
    mkdir(w->conf.state_dir, 0755);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("carve-slurm 1\nshm /carve.slurm.60.00000001\ncarved -\nstep 12", f); /* cut short */
    fclose(f);
    struct carve_job_status st[8];
    for (int dry = 1; dry >= 0; dry--) {
        assert_int_equal(carve_job_sweep(&w->conf, dry, st, 8, err, sizeof(err)), 1);
        assert_int_equal(st[0].job_id, 60);
        assert_false(st[0].removed);
        assert_non_null(strstr(st[0].error, "job-60 is damaged"));
        assert_non_null(strstr(st[0].error, "/dev/shm/carve.slurm.60.*"));
        assert_null(strchr(st[0].error, '\n')); /* one line a record in the listing */
        assert_true(record_exists(w, 60));
    }
    unlink(path);
    assert_int_equal(carve_job_sweep(&w->conf, false, st, 8, err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_option),
        cmocka_unit_test(test_shard_share),
        cmocka_unit_test(test_gres_read),
        cmocka_unit_test(test_pick_gpus),
        cmocka_unit_test(test_record),
        cmocka_unit_test(test_two_steps_share_one_slice),
        cmocka_unit_test(test_dead_steps_pruned),
        cmocka_unit_test(test_reused_pid_listed),
        cmocka_unit_test(test_many_steps),
        cmocka_unit_test(test_carved_shard_share),
        cmocka_unit_test(test_gres_conf_unreadable),
        cmocka_unit_test(test_constrained_view),
        cmocka_unit_test(test_step_gpu_outside_slice),
        cmocka_unit_test(test_nothing_asked),
        cmocka_unit_test(test_refused_values),
        cmocka_unit_test(test_guarantee_within_allocation),
        cmocka_unit_test(test_board_outlives_first_step),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_sweep_damaged),
    };
    return cmocka_run_group_tests(tests, world_setup, world_teardown);
}
