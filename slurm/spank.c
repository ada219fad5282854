/* spank.c - carve's SPANK plugin for Slurm: `srun/sbatch/salloc --gpu-memory=8G
 * --gpu-compute=25%` run the job's tasks in a carve slice on each node.
 *
 * Where each part runs (spank.h's call graph):
 *   srun, sbatch, salloc   the option callbacks check the values with the rules of
 *                          `carve run`, so a bad value stops the job before it is queued;
 *   slurmstepd, each task  task_init_privileged (root, before the task becomes the user)
 *                          puts the step in the job's slice, making it with the job's first
 *                          task on the node, and sets CARVE_SLICE and LD_PRELOAD for exec;
 *   slurmstepd, step end   exit takes the step off the job's record; the last one out
 *                          removes the slice; and a child process of the job's user, which
 *                          runs no program, removes what `carve run --mode mps` left of the
 *                          step when it was killed (its MPS run directories, a daemon that
 *                          outlived it, stopped by signals);
 *   slurmd                 job_epilog removes the job's slice when the job ends here (its
 *                          tasks killed or not); init at slurmd's start sweeps away slices
 *                          whose steps are all gone (a slurmstepd killed, a crash).
 * The slice logic is in job.c, which knows nothing of Slurm. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h> /* SLURM_BATCH_SCRIPT */
#include <slurm/spank.h>

#include "cli.h"
#include "job.h"
#include "mps_daemon.h"
#include "proc.h"

#pragma GCC visibility push(default)
SPANK_PLUGIN(carve, 1);
#pragma GCC visibility pop

enum { OPT_MEMORY = 1, OPT_COMPUTE = 2 };

static char opt_memory[CARVE_JOB_OPT_MAX];
static char opt_compute[CARVE_JOB_OPT_MAX];

/* Called where the option is given (srun, sbatch, salloc: remote 0) and again in
 * slurmstepd (remote 1); a negative return stops srun/sbatch/salloc with the message. */
static int option_cb(int val, const char *value, int remote)
{
    const char *name = val == OPT_MEMORY ? "gpu-memory" : "gpu-compute";
    char err[512];
    if (carve_job_check_option(name, value, err, sizeof(err)) < 0) {
        slurm_error("carve: %s", err);
        return -1;
    }
    if (strlen(value) >= CARVE_JOB_OPT_MAX) {
        slurm_error("carve: --%s=%.40s...: longer than %d characters", name, value,
                    CARVE_JOB_OPT_MAX - 1);
        return -1;
    }
    snprintf(val == OPT_MEMORY ? opt_memory : opt_compute, CARVE_JOB_OPT_MAX, "%s", value);
    return 0;
}

static struct spank_option options[] = {
    {"gpu-memory", "SIZE",
     "carve: cap the job's GPU memory on each node at SIZE per GPU (8G, 512MiB, 1.5GiB) "
     "or IDX=SIZE[,IDX=SIZE...]; allocations past it fail with out-of-memory",
     1, OPT_MEMORY, option_cb},
    {"gpu-compute", "SHARE",
     "carve: the job's share of each GPU's time: 25% at most, 25%+ at least (idle time on "
     "top); with --gres=shard:N the default is the job's fraction of the GPU's shards",
     1, OPT_COMPUTE, option_cb},
    SPANK_OPTIONS_TABLE_END,
};

/* plugstack.conf's arguments: libdir=DIR state_dir=DIR gres_conf=FILE shards_per_gpu=N
 * simulate. 0, or -1 after naming the bad one. */
static int read_conf(int ac, char **av, struct carve_job_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    snprintf(conf->state_dir, sizeof(conf->state_dir), "%s", CARVE_JOB_STATE_DIR);
    Dl_info info;
    char self[PATH_MAX];
    if (dladdr((void *)option_cb, &info) && info.dli_fname) {
        snprintf(self, sizeof(self), "%s", info.dli_fname);
        snprintf(conf->libdir, sizeof(conf->libdir), "%s", dirname(self));
    }
    const char *slurm_conf = getenv("SLURM_CONF");
    snprintf(self, sizeof(self), "%s", slurm_conf && *slurm_conf ? slurm_conf : "/etc/slurm/slurm.conf");
    snprintf(conf->gres_conf, sizeof(conf->gres_conf), "%s/gres.conf", dirname(self));
    for (int i = 0; i < ac; i++) {
        const char *a = av[i], *eq = strchr(a, '=');
        char *end = NULL;
        unsigned long n;
        size_t k = eq ? (size_t)(eq - a) : strlen(a);
        const char *v = eq ? eq + 1 : "";
        if (k == 8 && strncmp(a, "simulate", k) == 0 && !eq) {
            conf->simulate = true;
        } else if (eq && k == 6 && strncmp(a, "libdir", k) == 0 && *v) {
            snprintf(conf->libdir, sizeof(conf->libdir), "%s", v);
        } else if (eq && k == 9 && strncmp(a, "state_dir", k) == 0 && *v == '/') {
            snprintf(conf->state_dir, sizeof(conf->state_dir), "%s", v);
        } else if (eq && k == 9 && strncmp(a, "gres_conf", k) == 0 && *v) {
            snprintf(conf->gres_conf, sizeof(conf->gres_conf), "%s", v);
        } else if (eq && k == 14 && strncmp(a, "shards_per_gpu", k) == 0 &&
                   (n = strtoul(v, &end, 10)) > 0 && n <= 1000000 && !*end && *v != '-') {
            conf->shards_per_gpu = (unsigned)n;
        } else {
            slurm_error("carve: plugstack.conf argument `%s' is not one of libdir=DIR, "
                        "state_dir=/DIR, gres_conf=FILE, shards_per_gpu=N (1-1000000), simulate", a);
            return -1;
        }
    }
    return 0;
}

static void sweep(const struct carve_job_conf *conf)
{
    struct carve_job_status st[64];
    char err[512];
    int n = carve_job_sweep(conf, false, st, 64, err, sizeof(err));
    if (n < 0)
        slurm_error("carve: sweep of %s: %s", conf->state_dir, err);
    for (int i = 0; i < n && i < 64; i++)
        if (st[i].error[0])
            slurm_error("carve: sweep of %s: job %u: %s", conf->state_dir, st[i].job_id,
                        st[i].error);
        else if (st[i].removed)
            slurm_info("carve: removed the slice of job %u (its steps are gone)", st[i].job_id);
}

/* ---------- a step's MPS run directories ----------
 *
 * `carve run --mode mps` gives each job step a run directory per GPU (BASE/mps-UUID-jJOB.STEP,
 * common/mps.h) that the step's last carve run removes. A step that Slurm kills (scancel, a
 * time limit, an OOM kill: SIGKILL to the whole step) runs no carve run to its end, and the
 * directory would stay on the node for good. At the step's end a child process does what the
 * last carve run would have (carve_mps_end_step): as the job's user, never as root, since
 * BASE is the user's to write (a link or a swapped directory there must not make root
 * remove anything), and with the job's environment, so that it finds the directories where
 * the step's carve runs made them (CARVE_MPS_DIR, the fallback of the user's uid). It runs
 * no program: one the job names (CARVE_MPS_CONTROL, PATH) would run from slurmstepd after
 * the step, with its OOM score, limits and cgroup; a daemon that outlived the step is
 * stopped by signals, and a directory whose daemon cannot be judged without
 * nvidia-cuda-mps-control is left (common/mps_daemon.h). The user may stop or kill the child
 * (it is theirs): the step's end waits for it MPS_END_TIMEOUT_MS at most, then kills it. Its
 * messages come back on a pipe: slurmstepd's log is not written from a forked child. */

#define MPS_END_TIMEOUT_MS 10000 /* how long a step's end waits for the child */
#define MPS_REAP_MS 1000         /* for a killed child to be reaped */

/* What the child needs, read from Slurm before the fork. */
struct mps_step {
    uid_t uid;
    gid_t gid;
    gid_t *gids; /* supplementary; NULL: the primary alone */
    int ngids;
    char job[16], step[16]; /* step "": the batch script */
    char **env;
};

/* One message for the parent: "E text" or "I text", one line. */
static void say(int fd, bool error, const char *text)
{
    char line[4200];
    int n = snprintf(line, sizeof(line), "%c %s", error ? 'E' : 'I', text);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line) - 1)
        n = (int)sizeof(line) - 2;
    for (int i = 2; i < n; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[n++] = '\n';
    for (ssize_t off = 0, w; off < n; off += w)
        if ((w = write(fd, line + off, (size_t)(n - off))) <= 0)
            return;
}

static void note_line(void *arg, bool error, const char *text)
{
    say(*(int *)arg, error, text);
}

/* Becomes the job's user for good: its groups, its gid, its uid. */
static int become_user(const struct mps_step *m)
{
    if (geteuid() == 0) {
        if (setgroups(m->gids ? (size_t)m->ngids : 1, m->gids ? m->gids : &m->gid) < 0 ||
            setgid(m->gid) < 0 || setuid(m->uid) < 0)
            return -errno;
    }
    if (getuid() != m->uid || geteuid() != m->uid || getgid() != m->gid ||
        getegid() != m->gid || (m->uid != 0 && setuid(0) == 0))
        return -EPERM;
    return 0;
}

/* Gives up what slurmstepd holds and the job's user should not: its OOM score adjustment
 * (-1000 on a node: never killed for memory) and core dumps (a copy of its memory). Before
 * the uid changes, while this may still write its own oom_score_adj. */
static void drop_stepd_settings(void)
{
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, "0", 1);
        (void)w; /* a kernel without it: nothing to give up */
        close(fd);
    }
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
}

/* The job's environment in place of slurmstepd's, with the step's ids as Slurm gives them
 * to its tasks; the working directory the job's PWD (a relative CARVE_MPS_DIR is taken from
 * it, as carve run took it from its own), else /. */
static void job_environment(const struct mps_step *m)
{
    clearenv();
    for (char **e = m->env; e && *e; e++)
        if (strchr(*e, '='))
            putenv(*e);
    setenv("SLURM_JOB_ID", m->job, 1);
    if (m->step[0])
        setenv("SLURM_STEP_ID", m->step, 1);
    else
        unsetenv("SLURM_STEP_ID");
    const char *pwd = getenv("PWD");
    if (!(pwd && pwd[0] == '/' && chdir(pwd) == 0) && chdir("/") < 0)
        _exit(1);
}

/* The child: never returns, and runs no program. fd: the pipe to the parent. */
__attribute__((noreturn)) static void mps_step_child(const struct mps_step *m, int fd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* slurmstepd blocks some; its handlers are its */
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    int keep = fcntl(fd, F_DUPFD, 3); /* the pipe above stdio, then at 3, not inherited */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (keep < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
        dup2(keep, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
        _exit(1);
    /* none of slurmstepd's files (its sockets, the job's); with no exec they could reach no
       program anyway, and the user may not look into this process (below) */
    carve_close_from(4);
    fd = 3;
    /* a copy of slurmstepd's memory: the job's user may not read it (ptrace, /proc/PID/mem) */
    prctl(PR_SET_DUMPABLE, 0);
    drop_stepd_settings();
    char err[1024], text[1200];
    int r = become_user(m);
    if (r < 0) {
        snprintf(text, sizeof(text), "cannot become the job's user (uid %u, gid %u) to remove "
                 "the step's MPS run directories: %s", (unsigned)m->uid, (unsigned)m->gid,
                 strerror(-r));
        say(fd, true, text);
        _exit(1);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* set after the uid changed, which clears it */
    job_environment(m);
    r = carve_mps_end_step(m->job, m->step[0] ? m->step : NULL, note_line, &fd, err,
                           sizeof(err));
    if (r < 0) {
        snprintf(text, sizeof(text), "the step's MPS run directories were not looked for: %s",
                 err);
        say(fd, true, text);
    }
    _exit(0);
}

/* Milliseconds since t0. */
static long spent_ms(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Logs the child's lines until it closes the pipe (0), the time since t0 is up (-ETIMEDOUT)
 * or the pipe cannot be read (a negative errno). */
static int relay(int fd, const struct mps_step *m, const struct timespec *t0)
{
    char buf[8192];
    size_t have = 0;
    for (;;) {
        long spent = spent_ms(t0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = spent < MPS_END_TIMEOUT_MS ? poll(&p, 1, (int)(MPS_END_TIMEOUT_MS - spent)) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0)
            return -ETIMEDOUT;
        if (ready < 0)
            return -errno;
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            if (line[0] == 'E' && line[1] == ' ')
                slurm_error("carve: job %s step %s: %s", m->job, m->step[0] ? m->step : "batch",
                            line + 2);
            else if (line[0] == 'I' && line[1] == ' ')
                slurm_info("carve: job %s step %s: %s", m->job, m->step[0] ? m->step : "batch",
                           line + 2);
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have + 1);
        if (have == sizeof(buf) - 1)
            have = 0; /* a line longer than the buffer: dropped */
    }
}

/* Reaps the child within limit_ms since t0; 0, or -1 when it has not ended by then. Another
 * waiter of slurmstepd's may have reaped it (ECHILD): then it is gone too. */
static int reap(pid_t child, const struct timespec *t0, long limit_ms)
{
    for (;;) {
        pid_t r = waitpid(child, NULL, WNOHANG);
        if (r == child || (r < 0 && errno == ECHILD))
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (spent_ms(t0) >= limit_ms)
            return -1;
        poll(NULL, 0, 10);
    }
}

/* Waits for the child, MPS_END_TIMEOUT_MS since t0 at most, logging what it says; past that,
 * or when its pipe fails, it is killed (it may have been stopped: the user can signal it). */
static void await_child(int fd, pid_t child, const struct mps_step *m, const struct timespec *t0)
{
    const char *which = m->step[0] ? m->step : "batch";
    int r = relay(fd, m, t0);
    if (r == 0 && reap(child, t0, MPS_END_TIMEOUT_MS) == 0)
        return;
    /* unreaped, its pid is no one else's: it is killed, not a process that took the pid */
    pid_t w = waitpid(child, NULL, WNOHANG);
    if (w == child || (w < 0 && errno == ECHILD))
        return;
    kill(child, SIGKILL);
    if (r == 0 || r == -ETIMEDOUT)
        slurm_error("carve: job %s step %s: the removal of the step's MPS run directories "
                    "took longer than %d s; stopped it", m->job, which,
                    MPS_END_TIMEOUT_MS / 1000);
    else
        slurm_error("carve: job %s step %s: the removal of the step's MPS run directories "
                    "could not be followed (%s); stopped it", m->job, which, strerror(-r));
    if (reap(child, t0, spent_ms(t0) + MPS_REAP_MS) < 0)
        slurm_error("carve: job %s step %s: the stopped removal (pid %d) has not ended; not "
                    "waiting for it", m->job, which, (int)child);
}

/* Removes the step's MPS run directories that its carve runs left (a killed step), in a
 * child process of the job's user; never fails the step. */
static void end_mps_step(spank_t sp, uint32_t job)
{
    struct mps_step m = {0};
    uint32_t step;
    if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &m.uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &m.gid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_ENV, &m.env) != ESPANK_SUCCESS) {
        slurm_error("carve: job %u: cannot read the step's id, user or environment; its MPS "
                    "run directories, if any, are left", job);
        return;
    }
    if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &m.gids, &m.ngids) != ESPANK_SUCCESS ||
        m.ngids <= 0)
        m.gids = NULL;
    snprintf(m.job, sizeof(m.job), "%u", job);
    /* the batch script has no SLURM_STEP_ID: its directories are mps-UUID-jJOB */
    if (step != SLURM_BATCH_SCRIPT)
        snprintf(m.step, sizeof(m.step), "%u", step);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        slurm_error("carve: job %u: cannot remove the step's MPS run directories: pipe: %s",
                    job, strerror(errno));
        return;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        mps_step_child(&m, fds[1]);
    }
    int e = errno;
    close(fds[1]);
    if (child < 0)
        slurm_error("carve: job %u: cannot remove the step's MPS run directories: fork: %s",
                    job, strerror(e));
    else
        await_child(fds[0], child, &m, &t0);
    close(fds[0]);
}

#pragma GCC visibility push(default)

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    struct carve_job_conf conf;
    if (read_conf(ac, av, &conf) < 0)
        return -1;
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_SLURMD) {
        sweep(&conf); /* slurmd (re)starts: what killed steps left behind */
        return 0;
    }
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
        return 0;
    for (struct spank_option *o = options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            slurm_error("carve: cannot register --%s", o->name);
            return -1;
        }
    return 0;
}

/* The job's variable name, or "" when unset. */
static void job_env(spank_t sp, const char *name, char *buf, int len)
{
    if (spank_getenv(sp, name, buf, len) != ESPANK_SUCCESS)
        buf[0] = '\0';
}

/* The job's variable name, whatever its length (spank_getenv truncates to the buffer):
 * "" when unset, NULL (after saying why) past 1 MiB or out of memory. The caller frees it. */
static char *job_env_dup(spank_t sp, const char *name)
{
    for (int len = 4096; len <= (1 << 20); len *= 4) {
        char *buf = malloc((size_t)len);
        if (!buf)
            break;
        spank_err_t e = spank_getenv(sp, name, buf, len);
        if (e == ESPANK_SUCCESS)
            return buf;
        free(buf);
        if (e != ESPANK_NOSPACE)
            return strdup("");
    }
    slurm_error("carve: cannot read the job's %s (longer than 1 MiB, or out of memory)", name);
    return NULL;
}

/* Prepends value to the ':'-list in the job's variable name, keeping all of what it had
 * (an LD_LIBRARY_PATH of site modules runs past 4 KiB). */
static int prepend_env(spank_t sp, const char *name, const char *value)
{
    char *old = job_env_dup(sp, name), *joined = NULL;
    if (!old || asprintf(&joined, "%s%s%s", value, old[0] ? ":" : "", old) < 0) {
        free(old);
        return -1;
    }
    int r = spank_setenv(sp, name, joined, 1) == ESPANK_SUCCESS ? 0 : -1;
    free(old);
    free(joined);
    return r;
}

/* The task's environment for the slice: what `carve run` sets (cli/run.c). */
static int task_env(spank_t sp, const struct carve_job_conf *conf, const char *shm)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/libcarve.so", conf->libdir);
    if (access(path, R_OK) < 0) {
        slurm_error("carve: libcarve.so is not at %s; set libdir= in plugstack.conf", path);
        return -1;
    }
    int r = spank_setenv(sp, "CARVE_SLICE", shm, 1) == ESPANK_SUCCESS ? 0 : -1;
    /* a slice of carved's (its objects /carve.d.NAME.*) is joined through the carved the
       plugin asked: libcarve looks at the node's socket unless CARVE_SOCKET names another,
       and a carved on another socket (CARVE_SOCKET in slurmd's environment) was not the
       tasks' unless the job's user exported it too (a review's finding, 2026-11-29) */
    if (strncmp(shm, "/carve.d.", 9) == 0)
        r |= spank_setenv(sp, "CARVE_SOCKET", carve_socket_path(), 1) == ESPANK_SUCCESS ? 0 : -1;
    r |= prepend_env(sp, "LD_PRELOAD", path);
    if (conf->simulate) {
        snprintf(path, sizeof(path), "%s/sim", conf->libdir);
        r |= prepend_env(sp, "LD_LIBRARY_PATH", path);
        snprintf(path, sizeof(path), "%s/sim/bin", conf->libdir);
        r |= prepend_env(sp, "PATH", path);
    }
    return r;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    struct carve_job_conf conf;
    if (spank_context() != S_CTX_REMOTE || read_conf(ac, av, &conf) < 0)
        return spank_context() == S_CTX_REMOTE ? -1 : 0;
    struct carve_job_request req = {.step_pid = getppid()}; /* this task's slurmstepd */
    char shards[32], gpus[256], shm[128], err[1024];
    if (spank_get_item(sp, S_JOB_ID, &req.job_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &req.uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &req.gid) != ESPANK_SUCCESS) {
        slurm_error("carve: cannot read the job's id, uid and gid");
        return -1;
    }
    job_env(sp, "SLURM_SHARDS_ON_NODE", shards, sizeof(shards));
    req.job_shards = (unsigned)strtoul(shards, NULL, 10);
    /* Slurm sets SLURM_STEP_GPUS in an srun step, SLURM_JOB_GPUS in the batch step; an srun
       step's SLURM_JOB_GPUS is whatever srun's caller exported, so only the batch step's is
       the job's (a job launched by srun alone could otherwise name GPUs it was not given) */
    uint32_t step_id = 0;
    job_env(sp, "SLURM_STEP_GPUS", gpus, sizeof(gpus));
    if (!gpus[0] && spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
        step_id == SLURM_BATCH_SCRIPT)
        job_env(sp, "SLURM_JOB_GPUS", gpus, sizeof(gpus));
    req.gpus = gpus;
    /* the node's Slurm name (slurmd -N), for gres.conf's NodeName=: slurmstepd sets it in
       its own environment from slurmd's; the job's SLURMD_NODENAME is not set yet here, and
       one the user exports would be read in its place (tests/e2e/slurm.sh) */
    const char *node = getenv("SLURMD_NODENAME");
    req.node = node;
    req.memory = opt_memory[0] ? opt_memory : NULL;
    req.compute = opt_compute[0] ? opt_compute : NULL;
    int r = carve_job_enter(&conf, &req, shm, sizeof(shm), err, sizeof(err));
    if (r < 0) {
        /* in a task, slurmstepd's errors reach the user's stderr: the job says why */
        slurm_error("carve: job %u: %s", req.job_id, err);
        return -1;
    }
    if (r == 0)
        return 0;
    if (err[0])
        slurm_spank_log("carve: job %u: %s", req.job_id, err); /* error level, unprefixed: the job's stderr and the log */
    slurm_verbose("carve: job %u step pid %d in slice %s", req.job_id, (int)req.step_pid, shm);
    return task_env(sp, &conf, shm);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    struct carve_job_conf conf;
    uint32_t job;
    char err[1024];
    if (spank_context() != S_CTX_REMOTE || read_conf(ac, av, &conf) < 0 ||
        spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
        return 0;
    if (carve_job_leave(&conf, job, getpid(), err, sizeof(err)) < 0)
        slurm_error("carve: job %u: %s", job, err);
    end_mps_step(sp, job);
    return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    struct carve_job_conf conf;
    uint32_t job;
    char err[1024];
    if (read_conf(ac, av, &conf) < 0 || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
        return 0;
    if (carve_job_remove(&conf, job, err, sizeof(err)) < 0)
        slurm_error("carve: job %u: %s", job, err);
    sweep(&conf);
    return 0;
}

#pragma GCC visibility pop
