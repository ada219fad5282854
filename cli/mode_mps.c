/* mode_mps.c - `carve run --mode mps`: runs the command as an MPS client on one GPU. The
 * first carve run on a GPU starts an MPS control daemon with its own pipe and log
 * directories (in the GPU's run directory, common/mps.h), later ones reuse it, and the last
 * to end stops it; the count is the run directory's client list, changed only under its
 * lock, of carve run processes and their commands' (a killed one is noticed by its pid, and
 * its command, orphaned, still counts while it runs). The command gets its
 * active-thread percentage from --compute, its pinned-memory limit from --memory and its
 * MPS client priority from --priority; the slice around it is the usual one, so libcarve's
 * accounting, view and cap still apply. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "cli.h"
#include "gpus.h"
#include "modes.h"
#include "mps.h"
#include "mps_daemon.h"
#include "proc.h"
#include "slice.h"

#define PIPE_DIR_MAX 90 /* MPS puts unix sockets there: sun_path holds 107 bytes */

struct mps_state {
    struct carve_mps_daemon d; /* the GPU's daemon and run directory */
    int quiet;
};

/* Makes path (of len bytes) absolute, from the working directory: the daemon runs in /, so
 * a relative CARVE_MPS_DIR, CARVE_MPS_CONTROL or PATH entry would name another file there.
 * 0, or -1 with the reason printed. */
static int absolute(char *path, size_t len)
{
    char cwd[PATH_MAX], abs[PATH_MAX];
    if (path[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof(cwd))) {
        fprintf(stderr, "carve run: %s is relative and the working directory is unknown: %s\n",
                path, strerror(errno));
        return -1;
    }
    if (snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= (int)sizeof(abs) ||
        strlen(abs) >= len) {
        fprintf(stderr, "carve run: %s/%s is too long a path\n", cwd, path);
        return -1;
    }
    memcpy(path, abs, strlen(abs) + 1);
    return 0;
}

/* carve_mps_control_find's, made absolute; or why not, on stderr. */
static int find_control(const struct run_opts *o, const char *libdir, struct mps_state *st)
{
    char *control = st->d.control;
    const char *missing = carve_mps_control_find(o->simulate, libdir, control,
                                                 sizeof(st->d.control));
    st->d.may_exec = true; /* carve run starts, asks and stops the daemon with it */
    if (!missing)
        return absolute(control, sizeof(st->d.control));
    if (strcmp(missing, "CARVE_MPS_CONTROL") == 0)
        fprintf(stderr, "carve run: CARVE_MPS_CONTROL=%s cannot be run: %s\n", control,
                strerror(errno));
    else if (strcmp(missing, "simulated") == 0)
        fprintf(stderr, "carve run: the simulated GPU has no %s at %s: build carve with make\n",
                CARVE_MPS_CONTROL_NAME, control);
    else
        fprintf(stderr, "carve run: --mode mps needs %s (it comes with the NVIDIA driver's "
                        "utilities) and PATH has none; install it or set CARVE_MPS_CONTROL to it\n",
                CARVE_MPS_CONTROL_NAME);
    return -1;
}

/* Adds this carve run to the GPU's clients, starting the daemon when none runs. */
static int mps_join(const struct mps_state *st)
{
    char err[2048];
    struct carve_mps_client clients[CARVE_MPS_MAX_CLIENTS];
    int lock = carve_mps_lock(st->d.dir, err, sizeof(err));
    if (lock < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return -1;
    }
    int ret = -1;
    err[0] = '\0';
    int n = carve_mps_clients_load(st->d.dir, clients, CARVE_MPS_MAX_CLIENTS, err, sizeof(err));
    if (err[0])
        fprintf(stderr, "carve run: warning: %s\n", err);
    if (n < 0 || n == CARVE_MPS_MAX_CLIENTS) {
        fprintf(stderr, "carve run: %s: %s\n", st->d.dir,
                n < 0 ? err : "too many MPS clients on this GPU already");
        goto out;
    }
    /* the directory may be new: the last client of a job step removes it (mps_finish) */
    if ((mkdir(st->d.pipe, 0700) < 0 && errno != EEXIST) ||
        (mkdir(st->d.log, 0700) < 0 && errno != EEXIST)) {
        fprintf(stderr, "carve run: cannot make %s/{pipe,log}: %s\n", st->d.dir,
                strerror(errno));
        goto out;
    }
    char asked[512];
    int alive = carve_mps_daemon_alive(&st->d, asked, sizeof(asked));
    if (alive < 0) { /* a daemon that may run: none is started over it, nor is it joined */
        fprintf(stderr, "carve run: %s: another is not started over it; see %s/control.log, "
                        "and stop it (echo quit | nvidia-cuda-mps-control with "
                        "CUDA_MPS_PIPE_DIRECTORY=%s) or end its processes\n",
                asked, st->d.log, st->d.pipe);
        goto out;
    }
    if (asked[0]) /* a control program that failed: why carve run waited */
        fprintf(stderr, "carve run: %s\n", asked);
    if (alive == 0 && carve_mps_daemon_start(&st->d, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        goto out;
    }
    /* the command's processes come once it runs (mps_command_started) */
    clients[n] = (struct carve_mps_client){.pid = getpid(),
                                           .start = carve_proc_start_time(getpid())};
    if (carve_mps_clients_store(st->d.dir, clients, n + 1, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        if (n == 0 && carve_mps_daemon_stop(&st->d, err, sizeof(err)) < 0)
            fprintf(stderr, "carve run: %s\n", err);
        goto out;
    }
    ret = 0;
out:
    carve_mps_unlock(lock);
    return ret;
}

/* Records processes of the command in this carve run's entry, so that they count as
 * clients after carve run itself is gone (SIGKILL ends it, not its command): the command
 * as soon as it runs, and what it leaves running as it comes to carve run. Under the lock,
 * as every change of the list. A carve run killed before this ran has nothing recorded,
 * and its command is not counted (docs/mps.md, limits). */
static void mps_record(const struct mps_state *st, const pid_t *pids, int npid)
{
    char err[512] = "";
    struct carve_mps_client clients[CARVE_MPS_MAX_CLIENTS];
    int lock = carve_mps_lock(st->d.dir, err, sizeof(err));
    if (lock < 0) {
        fprintf(stderr, "carve run: %s; the command is not recorded as an MPS client\n", err);
        return;
    }
    int n = carve_mps_clients_load(st->d.dir, clients, CARVE_MPS_MAX_CLIENTS, err, sizeof(err));
    int me = -1;
    for (int i = 0; i < n; i++)
        if (clients[i].pid == getpid())
            me = i;
    int full = 0;
    for (int k = 0; me >= 0 && k < npid; k++) {
        /* a start time of 0 (unreadable) still records the pid: a live pid counts */
        uint64_t start = carve_proc_start_time(pids[k]);
        full |= carve_mps_client_add_proc(&clients[me], pids[k], start) < 0;
    }
    if (n < 0)
        fprintf(stderr, "carve run: warning: %s; the command is not recorded as an MPS "
                        "client\n", err);
    else if (me < 0)
        fprintf(stderr, "carve run: warning: %s/clients lost this carve run's entry; its "
                        "command is not recorded as an MPS client\n", st->d.dir);
    else if (carve_mps_clients_store(st->d.dir, clients, n, err, sizeof(err)) < 0)
        fprintf(stderr, "carve run: %s\n", err);
    else if (full && !st->quiet)
        fprintf(stderr, "carve run: note: the command left more than %d processes running; "
                        "the MPS client list records %d of them\n", CARVE_MPS_CLIENT_PROCS,
                CARVE_MPS_CLIENT_PROCS);
    carve_mps_unlock(lock);
}

static void mps_command_started(struct run_mode_ctx *ctx, pid_t pid)
{
    mps_record(ctx->state, &pid, 1);
}

static volatile sig_atomic_t leftover_signal;

/* Only signals sent to carve itself: a terminal's ^C, ^\ or hangup reaches the processes
 * left in its foreground group already (each got it twice, as in run.c's forward_signal). */
static void note_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    if (!info || info->si_code != SI_KERNEL)
        leftover_signal = sig;
}

/* Passes sig on to the processes the command left running. */
static void signal_children(int sig)
{
    pid_t kids[1024]; /* a 4 KiB children file holds fewer */
    int n = carve_proc_children(kids, 1024);
    for (int i = 0; i < n; i++)
        kill(kids[i], sig);
}

/* Records the command's leftovers that carve run has not recorded yet (seen: those that
 * were, *nseen of them). */
static void record_leftovers(const struct mps_state *st, pid_t *seen, int *nseen)
{
    pid_t kids[CARVE_MPS_CLIENT_PROCS], fresh[CARVE_MPS_CLIENT_PROCS];
    int n = carve_proc_children(kids, CARVE_MPS_CLIENT_PROCS), nfresh = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; k < *nseen; k++)
            known |= seen[k] == kids[i];
        if (!known && *nseen < CARVE_MPS_CLIENT_PROCS * 4) {
            seen[(*nseen)++] = kids[i];
            fresh[nfresh++] = kids[i];
        }
    }
    if (nfresh)
        mps_record(st, fresh, nfresh);
}

/* Waits for the processes the command left running (`cmd &'): they are MPS clients of the
 * daemon too, and lose it when the last carve run stops it. A signal that carve run passes
 * on to its command is passed on to them. */
static void wait_leftovers(const struct mps_state *st)
{
    static const int passed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa = {.sa_sigaction = note_signal, .sa_flags = SA_SIGINFO}, was[4];
    int set[4] = {0};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++)
        if (sigaction(passed[i], NULL, &was[i]) == 0 && was[i].sa_handler != SIG_IGN)
            set[i] = sigaction(passed[i], &sa, NULL) == 0;
    leftover_signal = 0;
    pid_t seen[CARVE_MPS_CLIENT_PROCS * 4];
    int nseen = 0;
    for (int said = 0;;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r < 0 && errno != EINTR)
            break; /* ECHILD: none left */
        if (r == 0) /* so that they stay clients if carve run is killed while it waits */
            record_leftovers(st, seen, &nseen);
        if (r == 0 && !said && !st->quiet)
            fprintf(stderr, "carve run: the command ended and left processes running, MPS "
                            "clients of %s's daemon: waiting for them to end before leaving "
                            "the daemon\n", st->d.uuid);
        said |= r == 0;
        if (leftover_signal) {
            signal_children(leftover_signal);
            leftover_signal = 0;
        }
        if (r == 0)
            poll(NULL, 0, 50);
    }
    for (int i = 0; i < 4; i++)
        if (set[i])
            sigaction(passed[i], &was[i], NULL);
}

static void mps_command_ended(struct run_mode_ctx *ctx)
{
    wait_leftovers(ctx->state);
}

/* Takes this carve run off the GPU's clients; the last one stops the daemon, and in a
 * Slurm job removes the step's run directory (carve_mps_release). The others are the
 * entries whose carve run or recorded command processes still run (the load drops the
 * rest), so the orphaned command of a carve run killed with SIGKILL keeps the daemon, and
 * once it has ended, the next carve run to end here stops it. */
static void mps_finish(struct run_mode_ctx *ctx)
{
    struct mps_state *st = ctx->state;
    char err[2048] = "", asked[512];
    wait_leftovers(st); /* none left when command_ended ran: a command that never started */
    const char *job = getenv("SLURM_JOB_ID");
    int r = carve_mps_release(&st->d, getpid(), job && *job, err, sizeof(err));
    if (r < 0)
        fprintf(stderr, "carve run: %s; the MPS daemon of %s is left running\n", err,
                st->d.uuid);
    else if (err[0]) {
        asked[0] = '\0';
        int alive = r == 0 ? carve_mps_daemon_alive(&st->d, asked, sizeof(asked)) : 0;
        fprintf(stderr, "carve run: %s%s%s%s\n", err, asked[0] ? "; " : "", asked,
                alive != 0 ? "; the next carve run --mode mps on this GPU reuses or stops it"
                           : "");
    }
    free(st);
    ctx->state = NULL;
}

static int make_dirs(struct mps_state *st)
{
    char err[512];
    if (carve_mps_run_dir(st->d.uuid, st->d.dir, sizeof(st->d.dir), err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return -1;
    }
    if (absolute(st->d.dir, sizeof(st->d.dir)) < 0)
        return -1;
    snprintf(st->d.pipe, sizeof(st->d.pipe), "%s/pipe", st->d.dir);
    snprintf(st->d.log, sizeof(st->d.log), "%s/log", st->d.dir);
    if (strlen(st->d.pipe) > PIPE_DIR_MAX) {
        fprintf(stderr, "carve run: the MPS pipe directory %s is %zu characters long; MPS "
                        "puts sockets there and needs at most %d: set CARVE_MPS_DIR to a "
                        "shorter place\n", st->d.pipe, strlen(st->d.pipe), PIPE_DIR_MAX);
        return -1;
    }
    if ((mkdir(st->d.pipe, 0700) < 0 && errno != EEXIST) ||
        (mkdir(st->d.log, 0700) < 0 && errno != EEXIST)) {
        fprintf(stderr, "carve run: cannot make %s/{pipe,log}: %s\n", st->d.dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* What --mode mps cannot take, and the thread percentage --compute asks for ("" if none). */
static int check_request(const struct run_opts *o, char *pct, size_t len)
{
    char err[512];
    pct[0] = '\0';
    if (o->slice) {
        fprintf(stderr, "carve run: --slice %s has carved's settings; --mode mps cannot be "
                        "given with it\n(see carve run --help)\n", o->slice);
        return CARVE_EXIT_USAGE;
    }
    if (o->compute_arg &&
        carve_mps_thread_percentage(&o->compute, pct, len, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n(see carve run --help)\n", err);
        return CARVE_EXIT_USAGE;
    }
    return 0;
}

/* The GPU (and its cap) the command runs on: 0, or an exit status after saying why. */
static int pick_gpu(const struct run_opts *o, const char *libdir, struct mps_state *st,
                    uint64_t *cap)
{
    char nvml[PATH_MAX + 64], err[512];
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    carve_nvml_path(o->simulate, libdir, nvml, sizeof(nvml));
    int ngpu = carve_gpus_list(nvml, o->simulate, gpus, CARVE_SLICE_MAX_DEVICES, err, sizeof(err));
    if (ngpu <= 0) {
        fprintf(stderr, "carve run: %s\n", ngpu < 0 ? err : "NVML lists no GPU on this machine");
        return CARVE_EXIT_USAGE;
    }
    int g = carve_mps_pick_gpu(getenv("CUDA_VISIBLE_DEVICES"), gpus, ngpu, err, sizeof(err));
    if (g < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    /* GPUs where an MPS server cannot serve: said here, not left to the command's CUDA
       start, whose error named neither the mode nor what to do (a review's finding) */
    char why[256] = "";
    if (gpus[g].compute_mode == NVML_COMPUTEMODE_PROHIBITED)
        snprintf(why, sizeof(why), "is in compute mode PROHIBITED: no process may make a CUDA "
                 "context there, an MPS server neither; an admin sets `nvidia-smi -i %u -c "
                 "DEFAULT' (or EXCLUSIVE_PROCESS)", gpus[g].index);
    else if (gpus[g].mig_current == NVML_DEVICE_MIG_ENABLE)
        snprintf(why, sizeof(why), "has MIG on: CUDA runs only in its instances there, and "
                 "--mode mps serves whole GPUs; run in an instance with --mode mig (carve mig "
                 "list --index %u)", gpus[g].index);
    if (why[0]) {
        fprintf(stderr, "carve run: GPU %u (%s) %s\n", gpus[g].index, gpus[g].uuid, why);
        return CARVE_EXIT_USAGE;
    }
    /* the slice's own parser reads --memory, so both refuse the same input alike */
    struct carve_slice_spec spec;
    struct carve_compute none = {0, CARVE_COMPUTE_CAP, CARVE_PRIO_NORMAL};
    if (carve_spec_build(&spec, "mps", o->memory, &none, gpus, ngpu, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    *cap = 0;
    for (int i = 0; i < spec.ndev; i++)
        if (spec.dev[i].index == (int)gpus[g].index)
            *cap = spec.dev[i].cap;
    /* IDX=SIZE for other GPUs only: the command would run uncapped on its own */
    if (o->memory && *cap == 0) {
        fprintf(stderr, "carve run: --memory %s caps no memory on GPU %u, the one --mode mps "
                        "runs COMMAND on: give a SIZE, or %u=SIZE\n(see carve run --help)\n",
                o->memory, gpus[g].index, gpus[g].index);
        return CARVE_EXIT_USAGE;
    }
    snprintf(st->d.uuid, sizeof(st->d.uuid), "%s", gpus[g].uuid);
    return 0;
}

/* CUDA_MPS_CLIENT_PRIORITY for --priority (NVIDIA's MPS guide, "Environment Variables"): a
 * hint to the MPS server to schedule a NORMAL (0) client's ready work ahead of a
 * BELOW_NORMAL (1) client's, so that a batch client fills what a latency client leaves
 * instead of queueing in front of it. latency and normal are both NORMAL: MPS has two
 * levels. */
static const char *client_priority(uint8_t priority)
{
    return priority == CARVE_PRIO_BATCH ? "1" : "0";
}

/* The client's variables: its one GPU by UUID (the daemon's CUDA_VISIBLE_DEVICES too, so
 * both agree on device 0), the daemon's directories, its limits and its priority. */
static int set_client_env(const struct mps_state *st, const char *pct, uint64_t cap,
                          const char *priority)
{
    char limit[64];
    int r = setenv("CUDA_VISIBLE_DEVICES", st->d.uuid, 1) |
            setenv("CUDA_MPS_PIPE_DIRECTORY", st->d.pipe, 1) |
            setenv("CUDA_MPS_LOG_DIRECTORY", st->d.log, 1);
    if (*pct)
        r |= setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, 1);
    if (priority)
        r |= setenv("CUDA_MPS_CLIENT_PRIORITY", priority, 1);
    if (cap) {
        carve_mps_mem_limit(cap, limit, sizeof(limit));
        r |= setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", limit, 1);
    }
    return r ? -1 : 0;
}

int carve_mode_mps_prepare(struct run_opts *o, struct run_mode_ctx *ctx)
{
    char pct[16];
    uint64_t cap = 0;
    int ret = check_request(o, pct, sizeof(pct));
    if (ret)
        return ret;
    struct mps_state *st = calloc(1, sizeof(*st));
    if (!st) {
        fprintf(stderr, "carve run: out of memory\n");
        return CARVE_EXIT_USAGE;
    }
    o->simulate = o->simulate || carve_daemon_simulated();
    if ((ret = pick_gpu(o, ctx->libdir, st, &cap)) != 0)
        goto fail;
    ret = CARVE_EXIT_USAGE;
    if (find_control(o, ctx->libdir, st) < 0 || make_dirs(st) < 0 || mps_join(st) < 0)
        goto fail;
    ctx->finish = mps_finish;
    ctx->command_started = mps_command_started;
    ctx->command_ended = mps_command_ended;
    ctx->state = st;
    st->quiet = o->quiet;
    /* the command's orphans become carve run's children, so that finish can wait for them;
       set after the join, so that a daemon started there is not one of them */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        fprintf(stderr, "carve run: warning: PR_SET_CHILD_SUBREAPER: %s; processes the "
                        "command leaves running may lose their MPS daemon\n", strerror(errno));
    /* a user who pointed CUDA at the node's own MPS daemon would otherwise not learn that
       the command runs under carve's */
    const char *theirs = getenv("CUDA_MPS_PIPE_DIRECTORY");
    if (theirs && *theirs && strcmp(theirs, st->d.pipe) != 0 && !o->quiet)
        fprintf(stderr, "carve run: note: CUDA_MPS_PIPE_DIRECTORY=%s is replaced by %s: "
                        "--mode mps runs the command under carve's own MPS daemon for the "
                        "GPU; to use the daemon of %s, run without --mode mps\n",
                theirs, st->d.pipe, theirs);
    const char *priority = o->priority_arg ? client_priority(o->compute.priority) : NULL;
    if (set_client_env(st, pct, cap, priority) < 0) {
        fprintf(stderr, "carve run: cannot set the MPS client's environment\n");
        return CARVE_EXIT_USAGE; /* run.c still calls finish */
    }
    /* the share and the priority are MPS's now: libcarve keeps the memory cap and does not
       pace */
    o->compute.share_bp = 0;
    o->compute.priority = CARVE_PRIO_NORMAL;
    o->compute_arg = NULL;
    o->priority_arg = NULL;
    return 0;
fail:
    free(st);
    return ret;
}
