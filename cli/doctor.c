/* doctor.c - `carve doctor`: is this node ready for carve? It looks at what carve needs, in
 * the order a problem would show: carve's own libraries, the driver (NVML), each GPU (its
 * compute mode and MIG mode), a real slice (a probe run under `carve run --memory 1GiB` that
 * must see 1 GiB and be refused more), carved, /dev/shm, MPS and Slurm. Each finding is one
 * line, `ok', `info', `warn' or `FAIL', saying what was found and, for a problem, what to
 * do; --json gives the same to scripts. Exit status 1 when something FAILed.
 *
 * The probe is this same program, `carve doctor --probe BYTES`, run as the slice's tenant: it
 * opens the driver the way an application does (dlopen of libcuda.so.1) so that what it sees
 * is what a tenant would. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "carve/cuda_abi.h"
#include "carve/nvml_abi.h"
#include "cli.h"
#include "gpus.h"
#include "mps.h"
#include "mps_daemon.h"
#include "proc.h"
#include "size.h"
#include "slice.h"
#include "uuid.h"

#define PROBE_CAP (1ull << 30)        /* the probe's slice: room for a context and 16 MiB */
#define PROBE_SMALL (16ull << 20)     /* what the probe must get inside it */
#define PROBE_TIMEOUT_MS 60000        /* a first context on a cold GPU takes a second or two */
#define SHM_SLICES_LOW 100            /* room for fewer slices in /dev/shm: a warning */
#define DOCTOR_MAX_FINDINGS 48
#define DOCTOR_MAX_GPUS 16

static const char doctor_help[] =
    "usage: carve doctor [--simulate] [--no-probe] [--json]\n"
    "\n"
    "Is this node ready for carve? Looks at carve's libraries, the NVIDIA driver (NVML),\n"
    "each GPU (compute mode, MIG mode, processes), a real slice (a probe run with\n"
    "`carve run --memory 1GiB' must see 1 GiB on CUDA's first GPU, be refused 1 GiB more\n"
    "and get 16 MiB), carved, /dev/shm, MPS and Slurm. Each finding is a line: ok, info,\n"
    "warn or FAIL, with what to do about a problem.\n"
    "\n"
    "options:\n"
    "  -s, --simulate  look at carve's simulated GPU instead of the driver\n"
    "  -P, --no-probe  do not run the probe (it makes a context on one GPU for about a\n"
    "                  second, like any CUDA program)\n"
    "  -j, --json      the findings as JSON: {\"version\", \"simulated\", \"findings\":\n"
    "                  [{\"check\", \"status\", \"message\"}], \"problems\", \"warnings\"}\n"
    "  -h, --help      this text\n"
    "\n"
    "exit status: 0 when nothing FAILed (warnings included), 1 when something did, 2 for\n"
    "bad input.\n";

enum status { ST_OK, ST_INFO, ST_WARN, ST_FAIL };
static const char *const status_names[] = {"ok", "info", "warn", "FAIL"};

struct finding {
    enum status status;
    char check[24];
    char message[600];
};

struct report {
    struct finding findings[DOCTOR_MAX_FINDINGS];
    int count;
    bool simulate;
    char libdir[PATH_MAX];
    struct carve_gpu_info gpus[DOCTOR_MAX_GPUS];
    int ngpu; /* -1: the driver could not be asked */
    bool mig_on[DOCTOR_MAX_GPUS];
    bool libraries_ok; /* the carve check passed: libdir is carve's */
};

__attribute__((format(printf, 4, 5))) static void note(struct report *r, enum status st,
                                                       const char *check, const char *fmt, ...)
{
    if (r->count == DOCTOR_MAX_FINDINGS)
        return;
    struct finding *f = &r->findings[r->count++];
    f->status = st;
    snprintf(f->check, sizeof(f->check), "%s", check);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    va_end(ap);
}

/* ---------- the probe: run as a slice's tenant ---------- */

struct cuda_calls {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDeviceGetUuid) device_uuid;
    __typeof__(&cuCtxCreate_v2) ctx_create;
    __typeof__(&cuCtxDestroy_v2) ctx_destroy;
    __typeof__(&cuMemGetInfo_v2) mem_info;
    __typeof__(&cuMemAlloc_v2) alloc;
    __typeof__(&cuMemFree_v2) free;
};

/* Prints one line for the doctor: "carve-doctor-probe total=N info=R over=R small=R
 * uuid=GPU-..." (R: the CUresults of cuMemGetInfo, of allocating the cap and of allocating
 * 16 MiB; the UUID of the CUDA device 0 it ran on) or "... error=TEXT". */
static int probe(uint64_t cap)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("carve-doctor-probe error=libcuda.so.1 cannot be loaded (%s)\n", dlerror());
        return 1;
    }
    struct cuda_calls cu = {
        .init = (__typeof__(cu.init))dlsym(lib, "cuInit"),
        .device_get = (__typeof__(cu.device_get))dlsym(lib, "cuDeviceGet"),
        .device_uuid = (__typeof__(cu.device_uuid))dlsym(lib, "cuDeviceGetUuid"),
        .ctx_create = (__typeof__(cu.ctx_create))dlsym(lib, "cuCtxCreate_v2"),
        .ctx_destroy = (__typeof__(cu.ctx_destroy))dlsym(lib, "cuCtxDestroy_v2"),
        .mem_info = (__typeof__(cu.mem_info))dlsym(lib, "cuMemGetInfo_v2"),
        .alloc = (__typeof__(cu.alloc))dlsym(lib, "cuMemAlloc_v2"),
        .free = (__typeof__(cu.free))dlsym(lib, "cuMemFree_v2"),
    };
    if (!cu.init || !cu.device_get || !cu.device_uuid || !cu.ctx_create || !cu.ctx_destroy || !cu.mem_info ||
        !cu.alloc || !cu.free) {
        printf("carve-doctor-probe error=libcuda.so.1 lacks a driver call (%s)\n", dlerror());
        return 1;
    }
    CUdevice dev;
    CUcontext ctx;
    CUresult rc = cu.init(0);
    if (rc == CUDA_SUCCESS)
        rc = cu.device_get(&dev, 0);
    if (rc == CUDA_SUCCESS)
        rc = cu.ctx_create(&ctx, 0, dev);
    if (rc != CUDA_SUCCESS) {
        printf("carve-doctor-probe error=no context on CUDA device 0 (CUresult %d)\n", (int)rc);
        return 1;
    }
    CUuuid id;
    char uuid[48] = "unknown";
    if (cu.device_uuid(&id, dev) == CUDA_SUCCESS)
        carve_uuid_format((const unsigned char *)id.bytes, uuid, sizeof(uuid));
    size_t free_bytes = 0, total = 0;
    rc = cu.mem_info(&free_bytes, &total);
    CUdeviceptr big = 0, small = 0;
    CUresult over = cu.alloc(&big, (size_t)cap);
    CUresult fits = cu.alloc(&small, PROBE_SMALL);
    if (big)
        cu.free(big);
    if (small)
        cu.free(small);
    cu.ctx_destroy(ctx);
    printf("carve-doctor-probe total=%zu info=%d over=%d small=%d uuid=%s\n", total, (int)rc,
           (int)over, (int)fits, uuid);
    return 0;
}

/* ---------- the doctor's checks ---------- */

static void check_libraries(struct report *r)
{
    if (carve_find_libdir(r->libdir, sizeof(r->libdir)) < 0) {
        note(r, ST_FAIL, "carve", "cannot find carve's libraries (/proc/self/exe unreadable); "
             "set CARVE_LIBDIR to carve's lib/carve");
        return;
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/libcarve.so", r->libdir);
    if (access(path, R_OK) < 0) {
        note(r, ST_FAIL, "carve", "no libcarve.so at %s (%s): rebuild carve with make, or set "
             "CARVE_LIBDIR to its lib/carve", path, strerror(errno));
        return;
    }
    /* a static carve hands the commands that load NVML, this one included, to carve-dynamic
       (cli/dynamic_twin.c: beside carve's own libraries, else in CARVE_LIBDIR); without it
       the first dlopen below would end the doctor with that message and exit 2, no report */
    if (getauxval(AT_BASE) == 0) { /* no program interpreter: linked statically */
        char twins[2][CARVE_TWIN_PATH_MAX];
        int n = carve_twin_paths(twins), runnable = 0;
        for (int i = 0; i < n && !runnable; i++)
            runnable = access(twins[i], X_OK) == 0;
        if (!runnable) {
            note(r, ST_FAIL, "carve", "this carve is linked statically and runs the commands "
                 "that load NVML (doctor, carve run without carved, carve mig) as "
                 "carve-dynamic, and %s cannot be run (%s): reinstall carve (make install), "
                 "or set CARVE_LIBDIR to its lib/carve", n ? twins[n - 1] : "carve-dynamic",
                 strerror(errno));
            return;
        }
    }
    r->libraries_ok = true;
    note(r, ST_OK, "carve", "carve %s, libcarve.so in %s", CARVE_VERSION, r->libdir);
}

static const char *compute_mode_name(int mode)
{
    switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT: return "Default";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: return "Exclusive_Thread";
    case NVML_COMPUTEMODE_PROHIBITED: return "Prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return "Exclusive_Process";
    default: return "not reported";
    }
}

static void check_gpu(struct report *r, int i)
{
    const struct carve_gpu_info *g = &r->gpus[i];
    char check[24], total[32], mig[64] = "", procs[48] = "";
    snprintf(check, sizeof(check), "gpu %u", g->index);
    carve_format_size(g->total, total, sizeof(total));
    if (g->mig_current >= 0)
        snprintf(mig, sizeof(mig), ", MIG %s%s", g->mig_current ? "on" : "off",
                 g->mig_pending != g->mig_current
                     ? (g->mig_pending ? " (on after a reset)" : " (off after a reset)")
                     : "");
    if (g->compute_procs >= 0)
        snprintf(procs, sizeof(procs), ", %d compute process%s", g->compute_procs,
                 g->compute_procs == 1 ? "" : "es");
    int mode = g->compute_mode;
    if (mode == NVML_COMPUTEMODE_PROHIBITED)
        note(r, ST_FAIL, check, "%s, %s%s%s, compute mode Prohibited: no process may use it; "
             "an admin sets it back with `nvidia-smi -i %u -c DEFAULT'", g->name, total, mig,
             procs, g->index);
    else if (mode == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS || mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD)
        note(r, ST_WARN, check, "%s, %s%s%s, compute mode %s: one process at a time, so "
             "carve's own slices cannot share it; `carve run --mode mps' can (an MPS server is "
             "that one process), or an admin sets `nvidia-smi -i %u -c DEFAULT'", g->name,
             total, mig, procs, compute_mode_name(mode), g->index);
    else
        note(r, ST_OK, check, "%s, %s%s%s, compute mode %s", g->name, total, mig, procs,
             compute_mode_name(mode));
    r->mig_on[i] = g->mig_current == NVML_DEVICE_MIG_ENABLE;
    if (r->mig_on[i])
        note(r, ST_INFO, check, "MIG is on: `carve run --mode mig' runs in its instances "
             "(`carve mig list --index %u'); NVML's per-process utilisation, which carved "
             "reports as a slice's compute share, is not given in MIG mode", g->index);
}

static void check_driver(struct report *r)
{
    char path[PATH_MAX + 64], err[512], cuda[32] = "";
    struct carve_driver_info driver;
    carve_nvml_path(r->simulate, r->libdir, path, sizeof(path));
    r->ngpu = carve_gpus_list_driver(path, r->simulate, r->gpus, DOCTOR_MAX_GPUS, &driver, err,
                                     sizeof(err));
    if (r->ngpu < 0) {
        note(r, ST_FAIL, "driver", "%s", err);
        return;
    }
    if (driver.cuda > 0)
        snprintf(cuda, sizeof(cuda), ", CUDA %d.%d", driver.cuda / 1000, driver.cuda % 1000 / 10);
    if (r->ngpu == 0 && driver.nunread > 0)
        note(r, ST_FAIL, "driver", "NVIDIA driver %s%s: NVML counts %d GPU%s but answers for "
             "none (below)", driver.version, cuda, driver.nunread,
             driver.nunread == 1 ? "" : "s");
    else if (r->ngpu == 0)
        note(r, ST_FAIL, "driver", "NVIDIA driver %s%s, but NVML lists no GPU (in a "
             "container: were the GPU's device files passed in? nvidia-smi -L shows what the "
             "driver sees)", driver.version, cuda);
    else
        note(r, ST_OK, "driver", "NVIDIA driver %s%s, %d GPU%s%s", driver.version, cuda,
             r->ngpu, r->ngpu == 1 ? "" : "s", r->simulate ? " (carve's simulated GPU)" : "");
    for (int i = 0; i < r->ngpu; i++)
        check_gpu(r, i);
    for (int k = 0; k < driver.nunread; k++) {
        char check[32], buf[32];
        snprintf(check, sizeof(check), "GPU %u", driver.unread_index[k]);
        note(r, ST_FAIL, check, "NVML counts it but answers `%s' for it: carve cannot use it, "
             "and carved does not list it%s", carve_nvml_error_text(driver.unread_error[k], buf,
                                                                      sizeof(buf)),
             driver.unread_error[k] == NVML_ERROR_GPU_IS_LOST
                 ? " (fallen off the bus? see the kernel log for an Xid; reset the GPU or "
                   "reboot the node)"
                 : "");
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with its output (stdout and stderr together; the last len - 1 bytes of it) into
 * out; its wait status, or -1 when it could not be started or ran past PROBE_TIMEOUT_MS
 * (then it is killed). */
static int run_captured(char *const argv[], char *out, size_t len)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t doctor = getpid(), pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0); /* a timeout ends the probe's whole group */
        /* which a Ctrl-C or a timeout(1) that ends the doctor then does not reach: the
           doctor's end does (carve run forwards SIGTERM to the probe and removes its slice) */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != doctor)
            _exit(CARVE_EXIT_NOEXEC);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        /* not printf: stdout is the pipe, fully buffered, and _exit does not flush it */
        dprintf(STDOUT_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(CARVE_EXIT_NOEXEC);
    }
    close(fds[1]);
    size_t used = 0;
    double deadline = now_s() + PROBE_TIMEOUT_MS / 1000.0;
    bool timed_out = false;
    for (;;) {
        int left = (int)((deadline - now_s()) * 1000);
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) == 0) {
            timed_out = true;
            break;
        }
        char buf[512];
        ssize_t got = read(fds[0], buf, sizeof(buf));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        /* the last len - 1 bytes are kept: the probe's line comes at its end, after
           whatever the driver or the loader wrote to stderr */
        size_t drop = used + (size_t)got > len - 1 ? used + (size_t)got - (len - 1) : 0;
        if (drop > used)
            drop = used;
        memmove(out, out + drop, used - drop);
        used -= drop;
        size_t take = (size_t)got < len - 1 - used ? (size_t)got : len - 1 - used;
        memcpy(out + used, buf + (size_t)got - take, take);
        used += take;
    }
    out[used] = '\0';
    close(fds[0]);
    int status = 0;
    pid_t done = 0;
    if (timed_out) { /* SIGTERM first: carve run removes its slice (SIGKILL left it in /dev/shm) */
        kill(-pid, SIGTERM);
        for (int i = 0; i < 40 && (done = waitpid(pid, &status, WNOHANG)) == 0; i++)
            nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
        kill(-pid, SIGKILL);
    }
    while (done != pid && (done = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    return timed_out ? -1 : status;
}

/* The last non-empty line of text, for a message. */
static const char *last_line(char *text)
{
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

static void check_slice(struct report *r, bool skip)
{
    if (skip) {
        note(r, ST_INFO, "slice", "not tried (--no-probe)");
        return;
    }
    if (r->ngpu < 0) {
        note(r, ST_INFO, "slice", "not tried: the checks above did not pass");
        return;
    }
    if (r->ngpu == 0) {
        note(r, ST_INFO, "slice", "not tried: no GPU to try it on");
        return;
    }
    int mig = 0;
    for (int i = 0; i < r->ngpu; i++)
        mig += r->mig_on[i];
    if (mig == r->ngpu) {
        note(r, ST_INFO, "slice", "not tried: every GPU is in MIG mode, where a process runs "
             "in an instance (carve run --mode mig)");
        return;
    }
    char self[PATH_MAX], cap[32], out[8192];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        note(r, ST_WARN, "slice", "not tried: /proc/self/exe is unreadable");
        return;
    }
    self[n] = '\0';
    snprintf(cap, sizeof(cap), "%llu", PROBE_CAP);
    char *argv[16];
    int a = 0;
    argv[a++] = self;
    argv[a++] = "run";
    argv[a++] = "--quiet";
    argv[a++] = "--name";
    argv[a++] = "carve-doctor";
    argv[a++] = "--memory";
    argv[a++] = cap;
    if (r->simulate)
        argv[a++] = "--simulate";
    argv[a++] = "--";
    argv[a++] = self;
    argv[a++] = "doctor";
    argv[a++] = "--probe";
    argv[a++] = cap;
    argv[a] = NULL;
    double start = now_s();
    int status = run_captured(argv, out, sizeof(out));
    double took = now_s() - start;
    char want[32], seen[32], small[32];
    carve_format_size(PROBE_CAP, want, sizeof(want));
    carve_format_size(PROBE_SMALL, small, sizeof(small));
    const char *line = strstr(out, "carve-doctor-probe ");
    unsigned long long total = 0;
    int info = -1, over = -1, fits = -1;
    char uuid[64] = "", where[96];
    if (status < 0) {
        note(r, ST_FAIL, "slice", "the probe in a %s slice did not finish in %d s (it was "
             "killed): %s", want, PROBE_TIMEOUT_MS / 1000, *out ? last_line(out) : "no output");
    } else if (!line || sscanf(line, "carve-doctor-probe total=%llu info=%d over=%d small=%d "
                               "uuid=%63s", &total, &info, &over, &fits, uuid) != 5) {
        const char *err = line ? strstr(line, "error=") : NULL;
        /* some GPUs in MIG mode: CUDA's device 0 may be one of them, where no context is
           made outside an instance */
        note(r, ST_FAIL, "slice", "carve run --memory %s could not run its probe (exit %d): %s%s",
             want, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
             err ? err + 6 : *out ? last_line(out) : "no output",
             mig ? " (some GPUs are in MIG mode: CUDA_VISIBLE_DEVICES naming one that is not "
                   "gives the probe a GPU it can use)" : "");
    } else {
        /* CUDA's device 0 by NVML's index (CUDA_VISIBLE_DEVICES and CUDA's own order may
           make it another GPU than NVML's 0) */
        snprintf(where, sizeof(where), "CUDA device 0 (%s)", uuid);
        for (int i = 0; i < r->ngpu; i++)
            if (strcmp(r->gpus[i].uuid, uuid) == 0)
                snprintf(where, sizeof(where), "GPU %u", r->gpus[i].index);
        carve_format_size(total, seen, sizeof(seen));
        if (info != CUDA_SUCCESS || total != PROBE_CAP)
            note(r, ST_FAIL, "slice", "a tenant of a %s slice saw %s on %s (cuMemGetInfo "
                 "CUresult %d): libcarve did not take hold; is LD_PRELOAD cleared on this node "
                 "(a setuid launcher, a container runtime's own preload)?", want, seen, where,
                 info);
        else if (over != CUDA_ERROR_OUT_OF_MEMORY)
            note(r, ST_FAIL, "slice", "a tenant of a %s slice was not refused %s more (CUresult "
                 "%d, not %d out of memory): the cap does not hold", want, want, over,
                 CUDA_ERROR_OUT_OF_MEMORY);
        else if (fits != CUDA_SUCCESS)
            note(r, ST_FAIL, "slice", "a tenant of a %s slice saw %s but could not allocate "
                 "%s in it (CUresult %d)", want, seen, small, fits);
        else
            note(r, ST_OK, "slice", "a %s slice on %s: its tenant saw %s, was refused %s "
                 "more (out of memory) and got %s (%.0f ms)", want, where, seen, want, small,
                 took * 1000);
    }
}

static void check_carved(struct report *r)
{
    int fd = carve_daemon_connect();
    struct stat st;
    if (fd < 0 && stat(carve_socket_path(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
        note(r, ST_WARN, "carved", "%s is not a socket (%s): carve can reach no carved there; "
             "unset CARVE_SOCKET, or point it at carved's socket (carved --socket)",
             carve_socket_path(), getenv("CARVE_SOCKET") && *getenv("CARVE_SOCKET")
                                      ? "CARVE_SOCKET names it" : "carved's default path");
        return;
    }
    if (fd < 0) {
        note(r, ST_INFO, "carved", "not running (no one listens on %s): carve run works without "
             "it; carve slice, ps and top, the metrics and the dashboard need it",
             carve_socket_path());
        return;
    }
    char err[512];
    json_t *reply = carve_daemon_call(fd, json_pack("{s:s}", "op", "list"), err, sizeof(err));
    close(fd);
    if (!reply) {
        note(r, ST_FAIL, "carved", "listens on %s but its answer to a list was: %s",
             carve_socket_path(), err);
        return;
    }
    json_t *snap = json_object_get(reply, "snapshot");
    size_t slices = json_array_size(json_object_get(snap, "slices"));
    size_t escapes = json_array_size(json_object_get(snap, "escapes"));
    bool simulated = json_is_true(json_object_get(snap, "simulated"));
    note(r, escapes ? ST_WARN : ST_OK, "carved", "running on %s%s: %zu slice%s, %zu escape%s%s",
         carve_socket_path(), simulated ? " (on the simulated GPU)" : "", slices,
         slices == 1 ? "" : "s", escapes, escapes == 1 ? "" : "s",
         escapes ? " (GPU processes outside every slice: carve ps lists them)" : "");
    json_decref(reply);
}

static void check_shm(struct report *r)
{
    struct statvfs vfs;
    if (statvfs("/dev/shm", &vfs) < 0) {
        note(r, ST_FAIL, "/dev/shm", "cannot be read (%s): carve's slices are POSIX shared "
             "memory there; a container needs it mounted", strerror(errno));
        return;
    }
    if (access("/dev/shm", W_OK | X_OK) < 0) {
        note(r, ST_FAIL, "/dev/shm", "not writable by this user (%s): carve run makes its "
             "slices there", strerror(errno));
        return;
    }
    uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    char free_text[32];
    carve_format_size(free_bytes, free_text, sizeof(free_text));
    uint64_t room = free_bytes / carve_slice_shm_bytes();
    if (room < SHM_SLICES_LOW)
        note(r, ST_WARN, "/dev/shm", "writable, but only %s free: room for %" PRIu64 " more "
             "slices (each takes %zu bytes there; a container's is small unless docker run "
             "--shm-size says otherwise)", free_text, room, carve_slice_shm_bytes());
    else
        note(r, ST_OK, "/dev/shm", "writable, %s free", free_text);
}

/* MPS control daemons running on the node, by their executable's name: "pid N (user)" each */
static int running_mps(char *out, size_t len)
{
    DIR *d = opendir("/proc");
    int count = 0;
    out[0] = '\0';
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char exe[PATH_MAX], link[64];
        snprintf(link, sizeof(link), "/proc/%ld/cmdline", pid);
        FILE *f = fopen(link, "r");
        if (!f)
            continue;
        size_t got = fread(exe, 1, sizeof(exe) - 1, f);
        fclose(f);
        exe[got] = '\0';
        const char *base = strrchr(exe, '/');
        base = base ? base + 1 : exe;
        if (strcmp(base, CARVE_MPS_CONTROL_NAME) != 0)
            continue;
        uid_t uid;
        gid_t gid;
        char who[64] = "uid ?";
        if (carve_proc_ids((pid_t)pid, &uid, &gid) == 0) /* by number: carve may be static */
            snprintf(who, sizeof(who), "uid %u%s", (unsigned)uid, uid == getuid() ? ", yours" : "");
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%spid %ld (%s)", count ? ", " : "", pid, who);
        count++;
    }
    closedir(d);
    return count;
}

static void check_mps(struct report *r)
{
    char control[PATH_MAX + 64], daemons[512];
    if (r->simulate && !r->libraries_ok) {
        note(r, ST_INFO, "mps", "not looked at: the simulated GPU's MPS control program is "
             "among carve's libraries, not found (above)");
        return;
    }
    const char *missing = carve_mps_control_find(r->simulate, r->libdir, control,
                                                 sizeof(control));
    int running = running_mps(daemons, sizeof(daemons));
    char daemon_text[600];
    if (running)
        snprintf(daemon_text, sizeof(daemon_text), "; MPS control daemon%s running: %s "
                 "(carve run --mode mps starts its own, per GPU and user, and leaves these "
                 "alone)", running == 1 ? "" : "s", daemons);
    else
        snprintf(daemon_text, sizeof(daemon_text), "; no MPS daemon running");
    if (!missing)
        note(r, ST_INFO, "mps", "%s%s", control, daemon_text);
    else if (strcmp(missing, "PATH") == 0)
        note(r, ST_INFO, "mps", "no %s in PATH: carve run --mode mps needs it (it comes with "
             "the NVIDIA driver's utilities)%s", CARVE_MPS_CONTROL_NAME, daemon_text);
    else
        note(r, ST_INFO, "mps", "%s (%s) cannot be run: carve run --mode mps needs it%s",
             control, missing, daemon_text);
}

/* 1 when the file names spank_carve.so on a line that is not a comment */
static int names_plugin(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        found = *p != '#' && strstr(p, "spank_carve.so") != NULL;
    }
    fclose(f);
    return found;
}

static void check_slurm(struct report *r)
{
    char plugin[PATH_MAX + 32], conf[PATH_MAX + 32];
    if (!r->libraries_ok) {
        note(r, ST_INFO, "slurm", "not looked at: the plugin is among carve's libraries, not "
             "found (above)");
        return;
    }
    snprintf(plugin, sizeof(plugin), "%s/spank_carve.so", r->libdir);
    bool built = access(plugin, R_OK) == 0;
    const char *slurm_conf = getenv("SLURM_CONF");
    if (slurm_conf && *slurm_conf) {
        snprintf(conf, sizeof(conf), "%s", slurm_conf);
        char *slash = strrchr(conf, '/');
        snprintf(slash ? slash + 1 : conf, sizeof(conf) - (size_t)(slash ? slash + 1 - conf : 0),
                 "plugstack.conf");
    } else {
        snprintf(conf, sizeof(conf), "/etc/slurm/plugstack.conf");
    }
    int named = names_plugin(conf);
    if (!built)
        note(r, ST_INFO, "slurm", "the SPANK plugin is not built (Slurm's spank.h was missing: "
             "install libslurm-dev and run make)");
    else if (named == 1)
        note(r, ST_OK, "slurm", "%s names %s", conf, plugin);
    else if (named == 0)
        note(r, ST_INFO, "slurm", "%s is built; %s does not name it (docs/slurm.md)", plugin,
             conf);
    else
        note(r, ST_INFO, "slurm", "%s is built; no %s here (not a Slurm node?)", plugin, conf);
}

/* ---------- output ---------- */

static int count_status(const struct report *r, enum status st)
{
    int n = 0;
    for (int i = 0; i < r->count; i++)
        n += r->findings[i].status == st;
    return n;
}

static void print_text(const struct report *r)
{
    for (int i = 0; i < r->count; i++) {
        const struct finding *f = &r->findings[i];
        printf("%-5s %-9s %s\n", status_names[f->status], f->check, f->message);
    }
    int problems = count_status(r, ST_FAIL), warnings = count_status(r, ST_WARN);
    if (!problems && !warnings) {
        printf("\nno problems found\n");
        return;
    }
    printf("\n%d problem%s, %d warning%s:", problems, problems == 1 ? "" : "s", warnings,
           warnings == 1 ? "" : "s");
    for (int i = 0; i < r->count; i++)
        if (r->findings[i].status >= ST_WARN)
            printf(" %s", r->findings[i].check);
    printf("\n");
}

/* JSON carries UTF-8 only, and json_pack's "s" refuses anything else (the finding was then
 * left out): a text that is not UTF-8 (a Latin-1 path, a message cut inside a character)
 * gets '?' for each byte that is not ASCII */
static json_t *json_text(const char *text)
{
    json_t *j = json_string(text);
    if (j)
        return j;
    char copy[sizeof(((struct finding *)0)->message)];
    snprintf(copy, sizeof(copy), "%s", text);
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    return json_string(copy);
}

static void print_json(const struct report *r)
{
    json_t *list = json_array();
    for (int i = 0; i < r->count; i++) {
        const struct finding *f = &r->findings[i];
        json_t *status = json_string(f->status == ST_FAIL ? "fail" : status_names[f->status]);
        json_array_append_new(list, json_pack("{s:o, s:o, s:o}", "check", json_text(f->check),
                                              "status", status, "message",
                                              json_text(f->message)));
    }
    json_t *doc = json_pack("{s:s, s:b, s:o, s:i, s:i}", "version", CARVE_VERSION, "simulated",
                            r->simulate, "findings", list, "problems",
                            count_status(r, ST_FAIL), "warnings", count_status(r, ST_WARN));
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
}

static int doctor_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "carve doctor: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see carve doctor --help)\n");
    return CARVE_EXIT_USAGE;
}

int carve_cmd_doctor(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"simulate", no_argument, NULL, 's'}, {"no-probe", no_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'j'},     {"probe", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},     {NULL, 0, NULL, 0},
    };
    bool json = false, no_probe = false;
    static struct report r; /* 30 KiB of findings: not on the stack */
    memset(&r, 0, sizeof(r));
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:sPjh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': r.simulate = true; break;
        case 'P': no_probe = true; break;
        case 'j': json = true; break;
        case 'p': { /* the doctor's own probe, as a slice's tenant (check_slice) */
            char *end;
            errno = 0;
            unsigned long long cap = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || cap == 0 || optarg[0] == '-')
                return doctor_error("--probe `%s' is not a number of bytes", optarg);
            return probe(cap);
        }
        case 'h': fputs(doctor_help, stdout); return 0;
        case ':': return doctor_error("option `%s' needs a value", argv[optind - 1]);
        default: return doctor_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind < argc)
        return doctor_error("unexpected argument `%s'", argv[optind]);
    check_libraries(&r);
    if (r.libraries_ok)
        check_driver(&r);
    else
        r.ngpu = -1;
    check_slice(&r, no_probe);
    check_carved(&r);
    check_shm(&r);
    check_mps(&r);
    check_slurm(&r);
    if (json)
        print_json(&r);
    else
        print_text(&r);
    return count_status(&r, ST_FAIL) ? 1 : 0;
}
