/* run.c - `carve run`: make a memory slice, run a command in it with libcarve injected, wait,
 * and leave nothing of the slice behind. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "gpus.h"
#include "modes.h"
#include "size.h"
#include "board.h"
#include "slice.h"
#include "uuid.h"

static const char run_help[] =
    "usage: carve run [--memory SPEC] [--compute SHARE] [--priority CLASS] [--mode MODE]\n"
    "                 [--simulate] [--name NAME] [--quiet] [--] COMMAND [ARGS...]\n"
    "       carve run --slice NAME [--simulate] [--quiet] [--] COMMAND [ARGS...]\n"
    "       carve run --mode mig [--mig-instance UUID | --memory SIZE] [--compute PCT%]\n"
    "                 [--simulate] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND in a GPU slice: COMMAND and every process it starts see a GPU whose\n"
    "memory is the cap, together cannot allocate more than the cap, and together use the\n"
    "GPU's time within their compute share.\n"
    "\n"
    "options:\n"
    "  -m, --memory SPEC   the cap: SIZE for every GPU, or IDX=SIZE[,IDX=SIZE...] per\n"
    "                      physical GPU (nvidia-smi's index); GPUs not named are not capped.\n"
    "                      Without --memory, usage is recorded but nothing is capped.\n"
    "  -c, --compute SHARE share of each GPU's time: `30%' holds the slice to at most 30%\n"
    "                      (even on an idle GPU); `30%+' guarantees at least 30% and lets\n"
    "                      it use idle time on top. Guarantees on one GPU add up to 100%\n"
    "                      at most. Without --compute, launches are not paced.\n"
    "  -p, --priority CLASS latency, batch or normal (default): while a latency slice\n"
    "                      launches work, batch slices on its GPU keep a short queue and\n"
    "                      a lower rate (CARVE_BATCH_YIELD, default 90%); see\n"
    "                      docs/compute.md.\n"
    "  -S, --slice NAME    run in slice NAME of carved (carve slice create); the slice's\n"
    "                      settings apply, so --memory, --compute and --priority cannot\n"
    "                      be given with it\n"
    "  -M, --mode MODE     how the GPU is shared (MODES below): carve (default),\n"
    "                      timeslice or mps keep the slice's memory cap; mig runs in a MIG\n"
    "                      instance (CUDA_VISIBLE_DEVICES=its MIG-... UUID, no libcarve):\n"
    "                      the one --mig-instance names, else the smallest free one with\n"
    "                      at least --memory SIZE and --compute PCT% of the GPU's SMs (30\n"
    "                      or 30%; an instance's share is fixed, so 30%+ is refused; see\n"
    "                      carve mig --help; make them with carve mig apply)\n"
    "  -s, --simulate      run on carve's simulated GPU (no GPU or driver needed)\n"
    "  -I, --mig-instance UUID  (--mode mig) the MIG device to run in\n"
    "  -n, --name NAME     the slice's name in messages (default: the command's name)\n"
    "  -q, --quiet         libcarve prints nothing, not even its out-of-memory line\n"
    "  -h, --help          this text\n"
    "\n"
    "SIZE: a number with an optional unit. B; K, M, G, T and KiB, MiB, GiB, TiB are\n"
    "1024-based (8G = 8GiB); KB, MB, GB, TB are 1000-based. Examples: 512MiB, 8G, 1.5GiB.\n"
    "A number without a unit is bytes; a size below 1 MiB is refused (`8' is not 8 GiB).\n"
    "\n"
    "exit status: COMMAND's status, or 128+N when signal N ended it; 2 for bad input or a\n"
    "mode that cannot be set up (nothing is run); 126 when COMMAND cannot be executed;\n"
    "127 when it is not found. With --slice (and mode carve), COMMAND takes carve run's\n"
    "place in the same process, so signals reach it directly and its status is its own:\n"
    "a command killed by signal N leaves the process killed by N (a shell still shows\n"
    "128+N; a program that waits for it sees the signal).\n"
    "\n"
    "ENVIRONMENT\n"
    "  set for COMMAND: CARVE_SLICE (the slice's shared-memory object), LD_PRELOAD (gets\n"
    "  libcarve.so first), CARVE_QUIET=1 with --quiet; with --simulate also\n"
    "  LD_LIBRARY_PATH and PATH (the simulated libcuda, libnvidia-ml and nvidia-smi).\n"
    "  read: CARVE_LIBDIR (where libcarve.so and sim/ are; default ../lib/carve beside\n"
    "  the carve executable); CARVE_SIM_* configure the simulated GPU (docs/internals.md).\n"
    "  --mode mps sets CUDA_VISIBLE_DEVICES (the GPU's UUID), CUDA_MPS_PIPE_DIRECTORY,\n"
    "  CUDA_MPS_LOG_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (--compute),\n"
    "  CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (--memory) and CUDA_MPS_CLIENT_PRIORITY\n"
    "  (--priority: batch 1, else 0), and reads CUDA_VISIBLE_DEVICES (which\n"
    "  GPU), CARVE_MPS_CONTROL (the nvidia-cuda-mps-control to run; default: PATH's),\n"
    "  CARVE_MPS_DIR (where the run directories go) and SLURM_JOB_ID, SLURM_STEP_ID (a\n"
    "  daemon per job step). --mode mig reads CUDA_VISIBLE_DEVICES (the GPUs and MIG\n"
    "  devices to take an instance from; empty or naming none: refused) and sets it to\n"
    "  the instance's MIG-... UUID.\n"
    "\n"
    "CARVED\n"
    "  When carved runs (something listens on CARVE_SOCKET, default\n"
    "  /run/carve/carved.sock), carve run asks it for the slice, which ends with the\n"
    "  command; carved's config decides whether users may make slices. Without carved,\n"
    "  carve run makes the slice itself.\n"
    "\n"
    "FILES\n"
    "  /dev/shm/carve.UID.PID.RAND: the slice table, removed when COMMAND ends (also when\n"
    "  carve run is sent SIGINT, SIGTERM, SIGHUP or SIGQUIT: it passes them to COMMAND).\n"
    "\n"
    "  /dev/shm/carve-board-UUID: the slices with compute settings on one GPU, removed\n"
    "  when the last of them ends.\n"
    "\n"
    "examples:\n"
    "  carve run --memory 8GiB -- python train.py\n"
    "  carve run --memory 20GiB --compute 30% -- python serve.py\n"
    "  carve run --compute 50%+ --priority latency -- python serve.py\n"
    "  carve run --mode mps --memory 8GiB --compute 30% -- python train.py\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "carve run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see carve run --help)\n");
    return CARVE_EXIT_USAGE;
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
    static const struct option longopts[] = {
        {"memory", required_argument, NULL, 'm'}, {"simulate", no_argument, NULL, 's'},
        {"name", required_argument, NULL, 'n'},   {"quiet", no_argument, NULL, 'q'},
        {"compute", required_argument, NULL, 'c'}, {"priority", required_argument, NULL, 'p'},
        {"slice", required_argument, NULL, 'S'},  {"help", no_argument, NULL, 'h'},
        {"mode", required_argument, NULL, 'M'},   {"mig-instance", required_argument, NULL, 'I'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    char err[256];
    while ((c = getopt_long(argc, argv, "+:m:c:p:sn:qhS:M:I:", longopts, NULL)) != -1) {
        switch (c) {
        case 'I': o->mig_instance = optarg; break;
        case 'm': o->memory = optarg; break;
        case 'c':
            if (strcmp(optarg, "--") == 0)
                return usage_error("option `%s' needs a value", "--compute");
            o->compute_arg = optarg; /* parsed below, once --mode is known */
            break;
        case 'p':
            if (strcmp(optarg, "--") == 0)
                return usage_error("option `%s' needs a value", "--priority");
            o->priority_arg = optarg; /* parsed below: the last one counts */
            break;
        case 's': o->simulate = true; break;
        case 'S': o->slice = optarg; break;
        case 'n': o->name = optarg; break;
        case 'q': o->quiet = true; break;
        case 'M':
            if (!(o->mode = carve_run_mode_find(optarg))) {
                char modes[128];
                carve_run_modes_list(modes, sizeof(modes));
                snprintf(err, sizeof(err), "--mode: unknown mode `%.64s' (modes: %s)", optarg,
                         modes);
                return usage_error("%s", err);
            }
            break;
        case 'h':
            fputs(run_help, stdout);
            carve_run_modes_help(stdout);
            return 0;
        case ':': return usage_error("option `%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind >= argc)
        return usage_error("no command given%s", "");
    if (o->slice && (o->memory || o->compute_arg || o->priority_arg))
        return usage_error("--slice %s has its own settings: drop --memory, --compute and "
                           "--priority", o->slice);
    /* a slice's share is carve's --compute; a MIG instance's is read by carve_mig_choose, with
       the same parser, as a share of the SMs (no guarantee) */
    if (o->compute_arg && !o->mode->no_slice &&
        carve_parse_compute(o->compute_arg, &o->compute, err, sizeof(err)) < 0)
        return usage_error("--compute: %s", err);
    /* read once the options are, as --compute is: `--priority urgent --priority latency' was
       refused for a value that the last one overrides */
    if (o->priority_arg &&
        carve_parse_priority(o->priority_arg, &o->compute.priority, err, sizeof(err)) < 0)
        return usage_error("--priority: %s", err);
    bool mig = strcmp(o->mode->name, "mig") == 0;
    if (o->mig_instance && !mig)
        return usage_error("--mig-instance %s needs --mode mig", o->mig_instance);
    if (mig && (o->slice || o->name))
        return usage_error("--mode mig runs in a MIG instance: --slice and --name do not "
                           "apply%s", "");
    /* normal, the default, is what an instance gives: asked for, it is kept */
    if (mig && o->compute.priority != CARVE_PRIO_NORMAL)
        return usage_error("--mode mig runs the command in a MIG instance, isolated by the "
                           "hardware: no other work shares its SMs, so --priority %s has "
                           "nothing to rank; drop it (or give normal), or use --mode carve or "
                           "mps to share a GPU by priority",
                           carve_priority_name(o->compute.priority));
    if (mig && o->mig_instance && (o->memory || o->compute_arg))
        return usage_error("--mig-instance %s is one instance: drop --memory and --compute",
                           o->mig_instance);
    o->command = &argv[optind];
    return -1;
}

/* The last part of a command's path (without touching argv, which is exec'd later). */
static const char *command_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* Prepends value to the ':'-list in variable name. */
static int env_prepend(const char *name, const char *value)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, value, 1);
    size_t len = strlen(value) + strlen(old) + 2;
    char *joined = malloc(len);
    if (!joined)
        return -1;
    snprintf(joined, len, "%s:%s", value, old);
    int r = setenv(name, joined, 1);
    free(joined);
    return r;
}

/* the simulated libcuda, libnvidia-ml and nvidia-smi first in the command's paths */
int carve_run_sim_env(const char *libdir)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/sim", libdir);
    char *sim = realpath(path, NULL);
    if (!sim) {
        fprintf(stderr, "carve run: the simulated GPU is missing at %s\n", path);
        return -1;
    }
    int r = env_prepend("LD_LIBRARY_PATH", sim);
    snprintf(path, sizeof(path), "%s/bin", sim);
    r |= env_prepend("PATH", path);
    free(sim);
    return r ? -1 : 0;
}

static int setup_env(const struct run_opts *o, const char *libdir, const char *shm_name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/libcarve.so", libdir);
    char *real = realpath(path, NULL);
    if (!real) {
        fprintf(stderr, "carve run: libcarve.so not found at %s (%s); build carve with make "
                        "or set CARVE_LIBDIR\n", path, strerror(errno));
        return -1;
    }
    int r = env_prepend("LD_PRELOAD", real) | setenv("CARVE_SLICE", shm_name, 1);
    free(real);
    if (o->quiet)
        r |= setenv("CARVE_QUIET", "1", 1);
    if (o->simulate && carve_run_sim_env(libdir) < 0)
        return -1;
    return r ? -1 : 0;
}

extern char **environ;

static volatile sig_atomic_t child_pid;

/* Passes a signal on to the command. A terminal's ^C, ^\ or hangup already reaches the
 * command (it stays in the foreground process group): only signals sent to carve itself
 * (kill, a job scheduler) are forwarded, so that the command does not get them twice. */
static void forward_signal(int sig, siginfo_t *info, void *ctx)
{
    if (child_pid > 0 && (!info || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
}

/* Runs the command and returns the exit status carve run should have. The handlers go in
 * before the spawn, so that no signal can end carve (and strand the slice) once it has a
 * child; the command gets them back at their defaults. posix_spawnp, not fork: it shares
 * carve's memory until the exec instead of copying its page tables, a fifth of a start-up
 * (bench/carved-bench.sh). */
static int run_and_wait(char **command, struct run_mode_ctx *mode)
{
    static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO};
    sigset_t block, old;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
        struct sigaction was;
        /* one ignored by carve's parent (nohup, a background job) stays ignored, as exec
           would keep it: carve neither forwards it nor gives it back to the command */
        if (sigaction(forwarded[i], NULL, &was) == 0 && was.sa_handler == SIG_IGN)
            continue;
        sigaction(forwarded[i], &sa, NULL);
        sigaddset(&block, forwarded[i]);
    }
    /* held back until child_pid is known, then forwarded */
    sigprocmask(SIG_BLOCK, &block, &old);
    posix_spawnattr_t attr;
    pid_t pid = 0;
    int e = posix_spawnattr_init(&attr);
    if (e == 0) {
        posix_spawnattr_setsigmask(&attr, &old);
        posix_spawnattr_setsigdefault(&attr, &block);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        e = posix_spawnp(&pid, command[0], NULL, &attr, command, environ);
        if (e == ENOEXEC) { /* a script with no #! line: sh runs it, as execvp would */
            size_t n = 0;
            while (command[n])
                n++;
            char **with_sh = calloc(n + 2, sizeof(*with_sh));
            if (with_sh) {
                with_sh[0] = "sh";
                memcpy(with_sh + 1, command, (n + 1) * sizeof(*command));
                e = posix_spawn(&pid, "/bin/sh", NULL, &attr, with_sh, environ);
                free(with_sh);
            }
        }
        posix_spawnattr_destroy(&attr);
    }
    child_pid = e == 0 ? pid : 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        fprintf(stderr, "carve run: cannot run `%s': %s\n", command[0], strerror(e));
        return e == ENOENT ? CARVE_EXIT_NOTFOUND : CARVE_EXIT_NOEXEC;
    }
    if (mode && mode->command_started)
        mode->command_started(mode, pid);
    /* wait without reaping: until the command is reaped its pid cannot be reused, so no
       signal forwarded meanwhile reaches another process; forwarding stops before the reap.
       Other children are reaped as they end: processes the command left that carve run
       inherits as a subreaper (--mode mps) stayed zombies for as long as the command ran
       (a review's finding, 2026-11-29) */
    for (;;) {
        siginfo_t info = {.si_pid = 0};
        if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (info.si_pid == pid || info.si_pid <= 0)
            break;
        while (waitpid(info.si_pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    sigprocmask(SIG_BLOCK, &block, NULL);
    child_pid = 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return CARVE_EXIT_NOEXEC;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* Runs the command in carve's own process: for a slice of carved's that carve run need not
 * end, one process creation fewer per start-up (bench/carved-bench.sh). Its exit status and
 * signals are then the command's own. Returns only when it cannot run. */
static int replace_with(char **command)
{
    execvp(command[0], command); /* a script with no #! line: execvp has sh run it */
    int e = errno;
    fprintf(stderr, "carve run: cannot run `%s': %s\n", command[0], strerror(e));
    return e == ENOENT ? CARVE_EXIT_NOTFOUND : CARVE_EXIT_NOEXEC;
}

static void leave_boards(const struct carve_slice_spec *spec, struct carve_board **boards)
{
    for (int i = 0; i < spec->ndev; i++)
        if (boards[i])
            carve_board_leave(boards[i], spec->dev[i].board_entry);
}

/* Puts the slice on the board of each GPU when it has compute settings; 0 or exit status. */
static int join_boards(struct carve_slice_spec *spec, struct carve_board **boards)
{
    for (int i = 0; i < spec->ndev; i++) {
        const struct carve_compute *c = &spec->dev[i].compute;
        if (c->share_bp == 0 && c->priority == CARVE_PRIO_NORMAL)
            continue;
        char err[512];
        int r = carve_board_join(spec->dev[i].uuid, CARVE_BOARD_MODE_SHARED, c, spec->name,
                                 getpid(), &boards[i], &spec->dev[i].board_entry, err,
                                 sizeof(err));
        if (r < 0) {
            fprintf(stderr, "carve run: GPU %d: %s\n", spec->dev[i].index, err);
            leave_boards(spec, boards);
            return CARVE_EXIT_USAGE;
        }
    }
    return 0;
}

static void make_shm_name(char *buf, size_t len)
{
    unsigned int rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        rnd = (unsigned)getpid() * 2654435761u;
    snprintf(buf, len, "/carve.%u.%d.%08x", (unsigned)getuid(), (int)getpid(), rnd);
}

/* The mode's work once the command has ended, before its slice goes. */
static void command_ended(const struct run_opts *o)
{
    if (o->mode_ctx && o->mode_ctx->command_ended)
        o->mode_ctx->command_ended(o->mode_ctx);
}

/* With carved: the slice is carved's (--slice NAME, or one made for this command that ends
 * with it); carve run only sets up the environment and waits. */
static int run_through_carved(const struct run_opts *o, const char *libdir, int fd)
{
    char err[1024], name[CARVE_SLICE_NAME_MAX];
    if (fd < 0) {
        fprintf(stderr, "carve run: --slice %s needs carved, and it is not running (no one "
                        "listens on %s)\n", o->slice, carve_socket_path());
        return CARVE_EXIT_USAGE;
    }
    json_t *req;
    if (o->slice) {
        req = json_pack("{s:s,s:s}", "op", "join", "name", o->slice);
    } else {
        /* random too: any user may make a slice, and one named COMMAND-PID for a pid to come
         * made that carve run fail ("exists already") */
        unsigned rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
            rnd = (unsigned)getpid() * 2654435761u;
        snprintf(name, sizeof(name), "%.40s-%d-%08x",
                 o->name ? o->name : command_name(o->command[0]), (int)getpid(), rnd);
        for (char *c = name; *c; c++)
            if (!strchr(CARVE_SLICE_NAME_CHARS, *c))
                *c = '_';
        req = json_pack("{s:s,s:s,s:b,s:s?,s:s?,s:s?}", "op", "create", "name", name, "run", 1,
                        "memory", o->memory, "compute", o->compute_arg, "priority",
                        o->priority_arg);
    }
    json_t *r = carve_daemon_call(fd, req, err, sizeof(err));
    close(fd); /* not held while the command runs: carved serves many */
    if (!r) {
        fprintf(stderr, "carve run: carved: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    char shm[128];
    snprintf(shm, sizeof(shm), "%s", json_string_value(json_object_get(r, "shm")) ?: "");
    /* a carved on the simulated GPU has simulated slices: the command needs that GPU too */
    struct run_opts in_carved = *o;
    in_carved.simulate = o->simulate || json_is_true(json_object_get(r, "simulated"));
    json_decref(r);
    int ret;
    if (setup_env(&in_carved, libdir, shm) < 0)
        ret = CARVE_EXIT_USAGE;
    else if (o->slice && o->may_replace)
        return replace_with(o->command);
    else
        ret = run_and_wait(o->command, o->mode_ctx);
    command_ended(o);
    if (!o->slice && (fd = carve_daemon_connect()) >= 0) {
        r = carve_daemon_call(fd, json_pack("{s:s,s:s}", "op", "delete", "name", name), err,
                              sizeof(err));
        json_decref(r);
        close(fd);
    } /* else carved ends the slice when it sees this carve run gone */
    return ret;
}

/* The slice, the command in it, and the slice gone again: the same in every mode. */
static int run_in_slice(struct run_opts o, const char *libdir)
{
    char nvml[PATH_MAX + 64], err[512];
    int ret;
    int dfd = carve_daemon_connect();
    if (dfd >= 0 || o.slice)
        return run_through_carved(&o, libdir, dfd);
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    carve_nvml_path(o.simulate, libdir, nvml, sizeof(nvml));
    int ngpu = carve_gpus_list(nvml, o.simulate, gpus, CARVE_SLICE_MAX_DEVICES, err, sizeof(err));
    if (ngpu < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    if (ngpu == 0) {
        fprintf(stderr, "carve run: NVML lists no GPU on this machine%s\n",
                o.simulate ? " (CARVE_SIM_DEVICES=0?)" : "; to try carve, use --simulate");
        return CARVE_EXIT_USAGE;
    }
    struct carve_slice_spec spec;
    if (carve_spec_build(&spec, o.name ? o.name : command_name(o.command[0]), o.memory,
                         &o.compute, gpus, ngpu, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }

    char shm_name[96];
    struct carve_slice *slice = NULL;
    struct carve_board *boards[CARVE_SLICE_MAX_DEVICES] = {0};
    if ((ret = join_boards(&spec, boards)) != 0)
        return ret;
    /* what this user's killed runs left, where no carved sweeps it (carved.md) */
    carve_slice_sweep_killed(false, getuid(), NULL, NULL);
    make_shm_name(shm_name, sizeof(shm_name));
    if (carve_slice_create(shm_name, &spec, &slice, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        leave_boards(&spec, boards);
        return CARVE_EXIT_USAGE;
    }
    ret = CARVE_EXIT_USAGE;
    if (setup_env(&o, libdir, shm_name) < 0)
        goto out;
    ret = run_and_wait(o.command, o.mode_ctx);
    command_ended(&o);
out:
    carve_slice_close(slice);
    carve_slice_unlink(shm_name);
    leave_boards(&spec, boards);
    return ret;
}

int carve_cmd_run(int argc, char **argv)
{
    struct run_opts o = {.mode = &carve_run_modes[0]};
    int ret = parse_opts(argc, argv, &o);
    if (ret >= 0)
        return ret;
    char libdir[PATH_MAX];
    if (carve_find_libdir(libdir, sizeof(libdir)) < 0) {
        fprintf(stderr, "carve run: cannot find carve's libraries; set CARVE_LIBDIR\n");
        return CARVE_EXIT_USAGE;
    }
    /* --mode: the mechanism is set up around the slice (or instead of one) and taken down
       after it */
    struct run_mode_ctx mode = {.libdir = libdir};
    if (o.mode->prepare && (ret = o.mode->prepare(&o, &mode)) != 0) {
        if (mode.finish)
            mode.finish(&mode);
        return ret;
    }
    o.may_replace = !mode.finish;
    o.mode_ctx = &mode;
    /* a mode the hardware isolates (mig) runs the command as it is, without libcarve */
    ret = o.mode->no_slice ? run_and_wait(o.command, &mode) : run_in_slice(o, libdir);
    if (mode.finish)
        mode.finish(&mode);
    return ret;
}
