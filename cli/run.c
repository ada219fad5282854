/* run.c - `carve run`: make a memory slice, run a command in it with libcarve injected, wait,
 * and leave nothing of the slice behind. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "cli.h"
#include "size.h"
#include "slice.h"
#include "uuid.h"

struct gpu {
    unsigned index;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned long long total;
};

struct run_opts {
    const char *memory;
    const char *name;
    bool simulate;
    bool quiet;
    char **command;
};

static const char run_help[] =
    "usage: carve run [--memory SPEC] [--simulate] [--name NAME] [--quiet] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND in a GPU memory slice: COMMAND and every process it starts see a GPU\n"
    "whose memory is the cap, and together cannot allocate more than the cap.\n"
    "\n"
    "options:\n"
    "  -m, --memory SPEC   the cap: SIZE for every GPU, or IDX=SIZE[,IDX=SIZE...] per\n"
    "                      physical GPU (nvidia-smi's index); GPUs not named are not capped.\n"
    "                      Without --memory, usage is recorded but nothing is capped.\n"
    "  -s, --simulate      run on carve's simulated GPU (no GPU or driver needed)\n"
    "  -n, --name NAME     the slice's name in messages (default: the command's name)\n"
    "  -q, --quiet         libcarve prints nothing, not even its out-of-memory line\n"
    "  -h, --help          this text\n"
    "\n"
    "SIZE: a number with an optional unit. B; K, M, G, T and KiB, MiB, GiB, TiB are\n"
    "1024-based (8G = 8GiB); KB, MB, GB, TB are 1000-based. Examples: 512MiB, 8G, 1.5GiB.\n"
    "\n"
    "exit status: COMMAND's status, or 128+N when signal N ended it; 2 for bad input\n"
    "(nothing is run); 126 when COMMAND cannot be executed; 127 when it is not found.\n"
    "\n"
    "ENVIRONMENT\n"
    "  set for COMMAND: CARVE_SLICE (the slice's shared-memory object), LD_PRELOAD (gets\n"
    "  libcarve.so first), CARVE_QUIET=1 with --quiet; with --simulate also\n"
    "  LD_LIBRARY_PATH and PATH (the simulated libcuda, libnvidia-ml and nvidia-smi).\n"
    "  read: CARVE_LIBDIR (where libcarve.so and sim/ are; default ../lib/carve beside\n"
    "  the carve executable); CARVE_SIM_* configure the simulated GPU (docs/internals.md).\n"
    "\n"
    "FILES\n"
    "  /dev/shm/carve.UID.PID.RAND: the slice table, removed when COMMAND ends (also when\n"
    "  carve run is sent SIGINT, SIGTERM, SIGHUP or SIGQUIT: it passes them to COMMAND).\n"
    "\n"
    "example:\n"
    "  carve run --memory 8GiB -- python train.py\n";

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
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:m:sn:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o->memory = optarg; break;
        case 's': o->simulate = true; break;
        case 'n': o->name = optarg; break;
        case 'q': o->quiet = true; break;
        case 'h': fputs(run_help, stdout); return 0;
        case ':': return usage_error("option `%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option `%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("no command given%s", "");
    o->command = &argv[optind];
    return -1;
}

/* The lib/carve directory: CARVE_LIBDIR, or ../lib/carve beside the executable. */
static int find_libdir(char *out, size_t len)
{
    const char *env = getenv("CARVE_LIBDIR");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(out, len, "%s/../lib/carve", dirname(exe));
    return 0;
}

struct nvml {
    void *handle;
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlShutdown) shutdown;
    __typeof__(&nvmlDeviceGetCount_v2) count;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetUUID) uuid;
    __typeof__(&nvmlDeviceGetMemoryInfo) memory;
};

static int nvml_open(struct nvml *n, const char *path)
{
    n->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->handle)
        return -1;
    n->init = (__typeof__(n->init))dlsym(n->handle, "nvmlInit_v2");
    n->shutdown = (__typeof__(n->shutdown))dlsym(n->handle, "nvmlShutdown");
    n->count = (__typeof__(n->count))dlsym(n->handle, "nvmlDeviceGetCount_v2");
    n->by_index = (__typeof__(n->by_index))dlsym(n->handle, "nvmlDeviceGetHandleByIndex_v2");
    n->uuid = (__typeof__(n->uuid))dlsym(n->handle, "nvmlDeviceGetUUID");
    n->memory = (__typeof__(n->memory))dlsym(n->handle, "nvmlDeviceGetMemoryInfo");
    if (n->init && n->shutdown && n->count && n->by_index && n->uuid && n->memory)
        return 0;
    dlclose(n->handle); /* dlerror() still says which symbol is missing */
    return -1;
}

/* Lists the physical GPUs through NVML; returns how many, or -1 with a message printed. */
static int list_gpus(const struct run_opts *o, const char *libdir, struct gpu *gpus, int max)
{
    char path[PATH_MAX + 64];
    struct nvml n = {0};
    if (o->simulate)
        snprintf(path, sizeof(path), "%s/sim/libnvidia-ml.so.1", libdir);
    else
        snprintf(path, sizeof(path), "libnvidia-ml.so.1");
    if (nvml_open(&n, path) < 0) {
        const char *why = dlerror();
        if (o->simulate)
            fprintf(stderr, "carve run: the simulated GPU is missing (%s); build carve with "
                            "make\n", why ? why : path);
        else
            fprintf(stderr, "carve run: no NVIDIA driver found (%s); to try carve without a "
                            "GPU, use --simulate\n", why ? why : path);
        return -1;
    }
    unsigned count = 0;
    nvmlReturn_t r = n.init();
    if (r == NVML_SUCCESS)
        r = n.count(&count);
    int got = 0;
    for (unsigned i = 0; r == NVML_SUCCESS && i < count && got < max; i++) {
        nvmlDevice_t d;
        nvmlMemory_t m;
        if (n.by_index(i, &d) != NVML_SUCCESS ||
            n.uuid(d, gpus[got].uuid, sizeof(gpus[got].uuid)) != NVML_SUCCESS ||
            n.memory(d, &m) != NVML_SUCCESS)
            continue;
        gpus[got].index = i;
        gpus[got].total = m.total;
        got++;
    }
    if (r == NVML_SUCCESS)
        n.shutdown();
    dlclose(n.handle);
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "carve run: NVML could not list the GPUs (error %d)\n", r);
        return -1;
    }
    return got;
}

/* "--memory 100GiB is more than GPU 0 has (80 GiB)"; a per-GPU spec names the entry. */
static int cap_error(const struct carve_memory_spec *mem, const char *spec, unsigned idx,
                     unsigned long long cap, unsigned long long total)
{
    char c[32], t[32];
    carve_format_size(cap, c, sizeof(c));
    carve_format_size(total, t, sizeof(t));
    if (mem->all)
        fprintf(stderr, "carve run: --memory %s is more than GPU %u has (%s)\n", spec, idx,
                t);
    else
        fprintf(stderr, "carve run: --memory %s: %u=%s is more than GPU %u has (%s)\n", spec,
                idx, c, idx, t);
    return CARVE_EXIT_USAGE;
}

static bool has_index(const struct gpu *gpus, int ngpu, unsigned idx)
{
    for (int i = 0; i < ngpu; i++)
        if (gpus[i].index == idx)
            return true;
    return false;
}

/* The last part of a command's path (without touching argv, which is exec'd later). */
static const char *command_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* Fills the slice spec from the memory spec and the GPUs; 0 or an exit status. */
static int build_spec(const struct run_opts *o, const struct gpu *gpus, int ngpu,
                      struct carve_slice_spec *spec)
{
    struct carve_memory_spec mem = {0};
    char err[256];
    if (o->memory && carve_parse_memory_spec(o->memory, &mem, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: --memory: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++)
        if (mem.per_index[i] && !has_index(gpus, ngpu, (unsigned)i)) {
            fprintf(stderr, "carve run: --memory %s names GPU %d, but this machine has %d "
                            "GPU%s (0-%d)\n", o->memory, i, ngpu, ngpu == 1 ? "" : "s",
                    ngpu - 1);
            return CARVE_EXIT_USAGE;
        }
    memset(spec, 0, sizeof(*spec));
    snprintf(spec->name, sizeof(spec->name), "%s",
             o->name ? o->name : command_name(o->command[0]));
    spec->ndev = ngpu < CARVE_SLICE_MAX_DEVICES ? ngpu : CARVE_SLICE_MAX_DEVICES;
    for (int i = 0; i < spec->ndev; i++) {
        uint64_t cap = mem.all ? mem.all : mem.per_index[gpus[i].index];
        if (cap > gpus[i].total)
            return cap_error(&mem, o->memory, gpus[i].index, cap, gpus[i].total);
        if (carve_uuid_parse(gpus[i].uuid, spec->dev[i].uuid) < 0) {
            fprintf(stderr, "carve run: GPU %u has a UUID carve cannot read: %s\n",
                    gpus[i].index, gpus[i].uuid);
            return CARVE_EXIT_USAGE;
        }
        spec->dev[i].index = (int)gpus[i].index;
        spec->dev[i].cap = cap;
    }
    return 0;
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
    if (o->simulate) {
        snprintf(path, sizeof(path), "%s/sim", libdir);
        char *sim = realpath(path, NULL);
        if (!sim) {
            fprintf(stderr, "carve run: the simulated GPU is missing at %s\n", path);
            return -1;
        }
        r |= env_prepend("LD_LIBRARY_PATH", sim);
        snprintf(path, sizeof(path), "%s/bin", sim);
        r |= env_prepend("PATH", path);
        free(sim);
    }
    return r ? -1 : 0;
}

static volatile sig_atomic_t child_pid;

/* Passes a signal on to the command. A terminal's ^C, ^\ or hangup already reaches the
 * command (it stays in the foreground process group): only signals sent to carve itself
 * (kill, a job scheduler) are forwarded, so that the command does not get them twice. */
static void forward_signal(int sig, siginfo_t *info, void *ctx)
{
    if (child_pid > 0 && (!info || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
}

static void exec_child(char **command)
{
    execvp(command[0], command);
    int e = errno;
    fprintf(stderr, "carve run: cannot run `%s': %s\n", command[0], strerror(e));
    _exit(e == ENOENT ? CARVE_EXIT_NOTFOUND : CARVE_EXIT_NOEXEC);
}

/* Runs the command and returns the exit status carve run should have. The handlers go in
 * before the fork, so that no signal can end carve (and strand the slice) once it has a
 * child; execvp resets them to their defaults in the command. */
static int run_and_wait(char **command)
{
    static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO};
    sigset_t block, old;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
        sigaction(forwarded[i], &sa, NULL);
        sigaddset(&block, forwarded[i]);
    }
    /* held back until child_pid is known, then forwarded */
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        exec_child(command);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        fprintf(stderr, "carve run: fork: %s\n", strerror(errno));
        return CARVE_EXIT_NOEXEC;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return CARVE_EXIT_NOEXEC;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static void make_shm_name(char *buf, size_t len)
{
    unsigned int rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        rnd = (unsigned)getpid() * 2654435761u;
    snprintf(buf, len, "/carve.%u.%d.%08x", (unsigned)getuid(), (int)getpid(), rnd);
}

int carve_cmd_run(int argc, char **argv)
{
    struct run_opts o = {0};
    int ret = parse_opts(argc, argv, &o);
    if (ret >= 0)
        return ret;
    char libdir[PATH_MAX];
    if (find_libdir(libdir, sizeof(libdir)) < 0) {
        fprintf(stderr, "carve run: cannot find carve's libraries; set CARVE_LIBDIR\n");
        return CARVE_EXIT_USAGE;
    }
    struct gpu gpus[CARVE_SLICE_MAX_DEVICES];
    int ngpu = list_gpus(&o, libdir, gpus, CARVE_SLICE_MAX_DEVICES);
    if (ngpu < 0)
        return CARVE_EXIT_USAGE;
    if (ngpu == 0) {
        fprintf(stderr, "carve run: NVML lists no GPU on this machine%s\n",
                o.simulate ? " (CARVE_SIM_DEVICES=0?)" : "; to try carve, use --simulate");
        return CARVE_EXIT_USAGE;
    }
    struct carve_slice_spec spec;
    if ((ret = build_spec(&o, gpus, ngpu, &spec)) != 0)
        return ret;

    char shm_name[96], err[256];
    struct carve_slice *slice = NULL;
    make_shm_name(shm_name, sizeof(shm_name));
    if (carve_slice_create(shm_name, &spec, &slice, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    ret = CARVE_EXIT_USAGE;
    if (setup_env(&o, libdir, shm_name) < 0)
        goto out;
    ret = run_and_wait(o.command);
out:
    carve_slice_close(slice);
    carve_slice_unlink(shm_name);
    return ret;
}
