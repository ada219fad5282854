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
 *                          removes the slice;
 *   slurmd                 job_epilog removes the job's slice when the job ends here (its
 *                          tasks killed or not); init at slurmd's start sweeps away slices
 *                          whose steps are all gone (a slurmstepd killed, a crash).
 * The slice logic is in job.c, which knows nothing of Slurm. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h> /* SLURM_BATCH_SCRIPT */
#include <slurm/spank.h>

#include "job.h"

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
