/* state.c - the process's place in its slice: once-only init (first hooked call, any
 * thread), the slot, the CUDA ordinal -> slice device map, fork and exit, and the
 * admit/release/charge helpers every wrapper goes through.
 *
 * Init never runs in the constructor and never calls into CUDA; the device map is filled
 * lazily with cuDeviceGetUuid_v2 the first time a device is used. After init the allocation
 * path reads only atomics and the mapped slice table: no locks, syscalls or getenv. */
#include "libcarve.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "allocmap.h"
#include "size.h"
#include "slice.h"

#define MAX_CU_DEVICES 64
/* Where carved listens. Compiled in, not read from the environment: the environment is the
 * tenant's, and the check below must not be something a tenant can switch off. */
#ifndef CARVE_RUNDIR
#define CARVE_RUNDIR "/run/carve"
#endif
#define SDEV_UNKNOWN (-2)

_Atomic int carve__state;
static _Thread_local bool init_owner;

static struct {
    struct carve_slice *slice; /* NULL: not in a slice, pass everything through */
    int slot;
    pid_t pid;                 /* the process that holds the slot */
    bool forked;               /* a fork child: claim a new slot, forget the parent's records */
    bool quiet;
    bool refused;              /* CARVE_SLICE names a slice not to be used (gone, not made by
                                * carved, every slot taken): no GPU context */
    char name[128];
    _Atomic int sdev_of[MAX_CU_DEVICES];
    _Atomic uint64_t counted[CARVE_SLICE_MAX_DEVICES];
    _Atomic uint64_t counted_moves[CARVE_SLICE_MAX_DEVICES]; /* changes of counted, for a
                                                                 consistent read (overhead.c) */
    _Atomic uint64_t managed[CARVE_SLICE_MAX_DEVICES]; /* of counted, what NVML leaves out */
    _Atomic uint64_t freed_small[CARVE_SLICE_MAX_DEVICES]; /* of counted, small allocations
                                                               freed (carve__release_freed) */
    struct carve_allocmap records[CARVE_KIND_COUNT];
} st;

static void reset_process_state(void)
{
    for (int i = 0; i < MAX_CU_DEVICES; i++)
        atomic_store(&st.sdev_of[i], SDEV_UNKNOWN);
    for (int i = 0; i < CARVE_SLICE_MAX_DEVICES; i++) {
        atomic_store(&st.counted[i], 0);
        atomic_store(&st.counted_moves[i], 0);
        atomic_store(&st.managed[i], 0);
        atomic_store(&st.freed_small[i], 0);
    }
    carve__records_reset();
    carve__vmm_reset();
    carve__pools_reset();
    carve__graph_reset();
    carve__overhead_reset();
}

static bool init_done; /* the process's first init ran (a fork child's is init_child) */

/* Bytes that memory calls in progress counted or gave up (all threads), this thread's depth
 * of such calls (an export may call another), and its part of those bytes. */
static _Atomic uint64_t mem_in_flight;
static _Atomic uint64_t mem_put_in_flight; /* all bytes ever put in flight: never lowered */
static _Thread_local unsigned mem_calls_here;
static _Thread_local uint64_t mem_in_flight_here;

/* A fork child: its first hooked call takes a slot of its own (st.forked). One forked while
 * another thread was in init has the state busy, and that thread is not in the child: it
 * would wait for it forever (a process forking while a thread waits up to 10 s for carved).
 * It does its init again: init_child's with a slice already mapped, else the whole of it. */
static void atfork_child(void)
{
    /* the other threads' calls in progress are not in the child */
    atomic_store(&mem_in_flight, mem_in_flight_here);
    int s = atomic_load(&carve__state);
    if (s == CARVE_ST_BUSY && !init_owner) {
        if (st.slice)
            st.forked = true;
        else
            init_done = st.refused = false;
        atomic_store(&carve__state, CARVE_ST_NONE);
    } else if (s == CARVE_ST_READY && st.slice) {
        st.forked = true;
        atomic_store(&carve__state, CARVE_ST_NONE);
    }
}

/* In the constructor, so that a fork during the first init finds it (it is not init). */
__attribute__((constructor)) static void carve_atfork(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

/* Every slot taken (CARVE_SLICE_MAX_PROCS processes of the slice use the GPU): this process
 * could not be counted, so it gets no GPU rather than an uncapped one. */
static void refuse_no_slot(struct carve_slice *s)
{
    fprintf(stderr, "carve: slice \"%s\" has no free process slot (%d processes hold one): no "
            "GPU context will be created\n", st.name, CARVE_SLICE_MAX_PROCS);
    st.refused = true;
    carve_slice_close(s);
}

/* A fork child's first hooked call: its own slot, nothing of the parent's. */
static void init_child(void)
{
    st.forked = false;
    reset_process_state();
    st.pid = getpid();
    st.slot = carve_slice_attach(st.slice, st.pid);
    if (st.slot < 0) {
        struct carve_slice *s = st.slice;
        st.slice = NULL; /* before it is unmapped: a fork meanwhile must not attach to it */
        refuse_no_slot(s);
    }
    carve__pace_setup(st.slice, st.slot);
}

/* The process is out of file descriptors: what to say instead of blaming carved or the
 * slice's owner, since then neither carved's socket nor a table's fd can be had. */
#define NO_FD (-2)
static void say_no_fd(int err, const char *what, char *why, size_t len)
{
    struct rlimit rl = {0};
    if (err == ENFILE) {
        snprintf(why, len, "the system's file table is full (ENFILE): no file descriptor %s: "
                 "no GPU context will be created; see fs.file-max and what holds the files",
                 what);
        return;
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    snprintf(why, len, "this process has no free file descriptor %s (RLIMIT_NOFILE %llu): no "
             "GPU context will be created; make the first CUDA call before opening that many "
             "files, or raise the limit (ulimit -n)", what, (unsigned long long)rl.rlim_cur);
}

/* fd connected to path's socket, or -1; NO_FD when the process has no descriptor left. */
static int connect_path(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path))
        return -1;
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? NO_FD : -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* carved's socket, connected, with its owner's uid in *daemon; -1 when nothing accepts
 * connections there: then carve works standalone and trusts any slice; NO_FD when the
 * process has no file descriptor left for a socket. carved's is the node's socket,
 * CARVE_RUNDIR/carved.sock, whose directory only root may write. CARVE_SOCKET (carve run's
 * setting, which a tenant inherits and may change) names another only when root answers
 * there: a carved of the tenant's own would vouch for slices of the tenant's making. */
static int connect_carved(long *daemon)
{
    const char *other = getenv("CARVE_SOCKET");
    if (other && *other) {
        int fd = connect_path(other);
        struct ucred peer;
        socklen_t n = sizeof(peer);
        if (fd == NO_FD)
            return fd;
        if (fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &n) == 0 &&
            peer.uid == 0) {
            *daemon = 0;
            return fd;
        }
        if (fd >= 0)
            close(fd);
    }
    char node[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(node, sizeof(node), "%s/carved.sock", CARVE_RUNDIR);
    struct stat sb;
    if (stat(node, &sb) < 0 || !S_ISSOCK(sb.st_mode))
        return -1;
    int fd = connect_path(node);
    if (fd >= 0)
        *daemon = (long)sb.st_uid;
    return fd;
}

/* The text of the reply's "error" (carved's own words, \" and \\ undone), or a stand-in. */
static void carved_error(const char *reply, char *out, size_t len)
{
    const char *p = strstr(reply, "\"error\":\"");
    size_t n = 0;
    if (!p) {
        snprintf(out, len, "%s", *reply ? "carved's answer was not understood"
                                         : "carved did not answer (busy, or stopping)");
        return;
    }
    for (p += 9; *p && *p != '"' && n + 1 < len; p++) {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
            p++;
        out[n++] = *p;
    }
    out[n] = '\0';
}

/* Keeps the fd that came with a chunk of carved's reply (its SCM_RIGHTS), closing any
 * other: carved sends at most one, the slice's table, with the first bytes of a join's answer. */
static void take_fd(struct msghdr *msg, int *table_fd)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (*table_fd < 0)
                *table_fd = fd;
            else
                close(fd);
        }
    }
}

/* One join request on fd, asking for the slice's table; the reply line (or what came of it,
 * "" for none) in buf, and the table's fd, if carved sent one, in *table_fd (else -1).
 * *fd_lost: EMFILE or ENFILE when carved sent an fd that the kernel dropped for want of a free
 * one (MSG_CTRUNC), else left alone. */
static void ask_join(int fd, const char *name, char *buf, size_t len, int *table_fd,
                     int *fd_lost)
{
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int n = snprintf(buf, len, "{\"op\":\"join\",\"name\":\"%s\",\"table\":true}\n", name);
    size_t got = 0;
    *table_fd = -1;
    /* MSG_NOSIGNAL: a carved that hangs up must not SIGPIPE somebody else's program */
    if (n > 0 && (size_t)n < len && send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n)
        while (got < len - 1) {
            union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
            } control;
            struct iovec iov = {.iov_base = buf + got, .iov_len = len - 1 - got};
            struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                                 .msg_controllen = sizeof(control.buf)};
            ssize_t r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
            if (r <= 0)
                break;
            take_fd(&msg, table_fd);
            if (msg.msg_flags & MSG_CTRUNC) {
                /* cut for want of an fd, or refused by a security module: tell them apart */
                int probe = fcntl(fd, F_DUPFD_CLOEXEC, 0);
                if (probe >= 0)
                    close(probe);
                else if (errno == EMFILE || errno == ENFILE)
                    *fd_lost = errno;
            }
            bool whole = memchr(buf + got, '\n', (size_t)r) != NULL;
            got += (size_t)r;
            if (whole)
                break;
        }
    buf[got] = '\0';
}

static double monotonic_s(void)
{
    return (double)carve__now_ns() / 1e9;
}

/* Asks carved, as carve run --slice does, whether this process may be in the slice: the
 * join is judged by the socket's peer credentials (this process's user), and carved answers
 * with the slice's object, which must be the one CARVE_SLICE names (a slice deleted and made
 * again under its name is another), and an fd of its table, which is carved's alone (0600):
 * the tenant maps that. CARVE_SLICE is the tenant's to set: without this, a user could run
 * in any slice on the node. A carved with every slot taken says it is busy: asked again for
 * up to 10 s (many processes of a job start at once). *table_fd: the table's fd, or -1 (a
 * carved of before 2026-11-27 sends none: its tables are 0666 and open by name). */
static bool carved_admits(const char *name, const char *shm, int *table_fd, char *why,
                          size_t len)
{
    char buf[1024];
    double give_up = monotonic_s() + 10;
    int fd_lost = 0;
    *table_fd = -1;
    for (;;) {
        long daemon;
        int fd = connect_carved(&daemon);
        buf[0] = '\0';
        if (fd == NO_FD) {
            say_no_fd(errno, "to ask carved with", why, len);
            return false;
        }
        if (fd >= 0) {
            ask_join(fd, name, buf, sizeof(buf), table_fd, &fd_lost);
            close(fd);
        }
        if ((buf[0] && !strstr(buf, "\"busy\":true")) || monotonic_s() > give_up)
            break;
        if (*table_fd >= 0)
            close(*table_fd);
        *table_fd = -1;
        struct timespec pause = {.tv_nsec = 100000000};
        nanosleep(&pause, NULL);
    }
    const char *object = strstr(buf, "\"shm\":\"");
    while (*shm == '/')
        shm++;
    if (strncmp(buf, "{\"ok\":true", 10) == 0 && object && fd_lost && *table_fd < 0) {
        say_no_fd(fd_lost, "to receive the slice's table from carved", why, len);
    } else if (strncmp(buf, "{\"ok\":true", 10) == 0 && object) {
        for (object += 7; *object == '/'; object++)
            ;
        size_t k = strlen(shm);
        if (strncmp(object, shm, k) == 0 && object[k] == '"')
            return true;
        snprintf(why, len, "slice \"%s\" is not the one CARVE_SLICE names (/%s: it was deleted "
                 "and made again since): no GPU context will be created; run through `carve "
                 "run --slice %s` again", name, shm, name);
    } else {
        char reason[512];
        carved_error(buf, reason, sizeof(reason));
        snprintf(why, len, "carved refuses slice \"%s\" to this process: %s: no GPU context "
                 "will be created", name, reason);
    }
    if (*table_fd >= 0)
        close(*table_fd);
    *table_fd = -1;
    return false;
}

/* Whether shm names an object of carved's making (/carve.d.NAME.RAND): one whose table
 * only carved hands out, worth waiting for carved over. */
static bool carveds_object(const char *shm)
{
    while (*shm == '/')
        shm++;
    return strncmp(shm, CARVE_SLICE_DAEMON_PREFIX, strlen(CARVE_SLICE_DAEMON_PREFIX)) == 0;
}

/* Whether a slice's terms are carved's (its user's, and writable by nobody else). */
static bool terms_carveds(const char *label, uid_t uid, mode_t mode, long daemon, char *why,
                          size_t len)
{
    if ((long)uid == daemon && !(mode & 022))
        return true;
    snprintf(why, len, "slice \"%s\" was not made by carved (its terms belong to uid %u, mode "
             "%03o; carved runs as uid %ld): no GPU context will be created; run through "
             "`carve run`", label, (unsigned)uid, (unsigned)mode, daemon);
    return false;
}

/* With carved running, caps count only from a slice whose terms carved's user owns and
 * nobody else can write (a tenant that points CARVE_SLICE at a slice of its own making, a
 * bigger cap, is refused rather than trusted), and that carved lets this process's user
 * join; the table is then the one carved handed over. Without carved, the slice is opened by
 * name, as carve run alone makes it. 1 with *out the opened slice; 0 refused, why says why;
 * -EAGAIN: the table is carved's and carved does not answer. */
static int open_once(const char *shm, struct carve_slice **out, char *why, size_t len)
{
    long daemon = -1;
    int fd = connect_carved(&daemon);
    char err[256], label[CARVE_SLICE_NAME_MAX + 1];
    int table_fd = -1;
    uid_t uid;
    mode_t mode;
    if (fd == NO_FD) {
        say_no_fd(errno, "to ask carved with", why, len);
        return 0;
    }
    if (fd >= 0) {
        close(fd);
        if (carve_slice_label(shm, label, sizeof(label), &uid, &mode, err, sizeof(err)) < 0) {
            snprintf(why, len, "%s: no GPU context will be created, so that nothing runs past "
                     "the slice's cap", err);
            return 0;
        }
        if (!terms_carveds(label, uid, mode, daemon, why, len))
            return 0;
        if (!carve_slice_name_ok(label)) {
            snprintf(why, len, "slice %s has no valid name in its terms: no GPU context will "
                     "be created", shm);
            return 0;
        }
        if (!carved_admits(label, shm, &table_fd, why, len))
            return 0;
    }
    int r = carve_slice_open_fd(shm, table_fd, out, err, sizeof(err));
    if (table_fd >= 0)
        close(table_fd); /* the mapping stays */
    if (r == -EACCES && fd < 0 && carveds_object(shm)) {
        const char *other = getenv("CARVE_SOCKET");
        snprintf(why, len, "%s: the slice's table is carved's, and carved does not answer at "
                 "%s/carved.sock%s%s%s: no GPU context will be created; start the command "
                 "again once carved runs", err, CARVE_RUNDIR,
                 other && *other ? ", nor does a carved running as root at " : "",
                 other && *other ? other : "",
                 other && *other ? " (CARVE_SOCKET; libcarve trusts a carved elsewhere than "
                                   "the node's socket only when it runs as root)" : "");
        return -EAGAIN;
    }
    if (r == -EACCES) {
        snprintf(why, len, "%s: the slice is another user's: no GPU context will be created; "
                 "run in a slice of your own (carve run)", err);
        return 0;
    }
    if (r == -EMFILE || r == -ENFILE) {
        say_no_fd(-r, "to open the slice with", why, len);
        return 0;
    }
    if (r < 0) {
        /* a process left running after its `carve run` ended (which removed the slice),
         * or one whose slice carved deleted: uncapped, it could take the whole GPU */
        snprintf(why, len, "%s: no GPU context will be created, so that nothing runs past "
                 "the slice's cap (a process left running after its `carve run` ended "
                 "cannot use the GPU; start it in a slice of its own)", err);
        return 0;
    }
    if (fd < 0)
        return 1;
    carve_slice_terms_owner(*out, &uid, &mode); /* again: the terms opened may be others */
    if (terms_carveds(label, uid, mode, daemon, why, len))
        return 1;
    carve_slice_close(*out);
    *out = NULL;
    return 0;
}

/* open_once, waited for up to 10 s while the table is carved's and carved does not answer:
 * a process that starts during carved's restart runs once carved is back. Another user's
 * slice made without carved is refused at once, as it always was. */
static bool open_trusted(const char *shm, struct carve_slice **out, char *why, size_t len)
{
    double give_up = monotonic_s() + 10;
    int r;
    while ((r = open_once(shm, out, why, len)) == -EAGAIN && monotonic_s() < give_up) {
        struct timespec pause = {.tv_nsec = 100000000};
        nanosleep(&pause, NULL);
    }
    return r == 1;
}

static void init_slice(void)
{
    const char *name = getenv("CARVE_SLICE");
    const char *quiet = getenv("CARVE_QUIET");
    st.quiet = quiet && strcmp(quiet, "1") == 0;
    if (!name || !*name)
        return;
    snprintf(st.name, sizeof(st.name), "%s", name);
    struct carve_slice *s = NULL;
    char why[1024];
    if (!open_trusted(name, &s, why, sizeof(why))) {
        fprintf(stderr, "carve: %s\n", why); /* even when quiet: the process will fail */
        st.refused = true;
        return;
    }
    const char *label = carve_slice_name(s);
    if (label && *label)
        snprintf(st.name, sizeof(st.name), "%s", label);
    st.pid = getpid();
    /* a slot with our pid in our PID namespace was our image's before an exec: what it
     * counted is gone (our pid in another namespace is another process: a container's) */
    carve_slice_forget_pid(s, st.pid);
    st.slot = carve_slice_attach(s, st.pid);
    if (st.slot < 0) {
        refuse_no_slot(s); /* even when quiet: the process will fail */
        return;
    }
    st.slice = s;
}

static void do_init(void)
{
    if (st.forked) {
        init_child();
        return;
    }
    if (init_done)
        return;
    init_done = true;
    reset_process_state();
    carve__resolve_real();
    init_slice();
    carve__pace_setup(st.slice, st.slot);
}

void carve__init_slow(void)
{
    for (;;) {
        int s = atomic_load(&carve__state);
        if (s == CARVE_ST_READY)
            return;
        if (s == CARVE_ST_NONE &&
            atomic_compare_exchange_strong(&carve__state, &s, CARVE_ST_BUSY)) {
            init_owner = true;
            do_init();
            init_owner = false;
            atomic_store_explicit(&carve__state, CARVE_ST_READY, memory_order_release);
            return;
        }
        if (init_owner)
            return; /* re-entered from our own init (a constructor in libcuda): go through */
        sched_yield();
    }
}

__attribute__((destructor)) static void carve_fini(void)
{
    if (st.slice && !st.forked && st.pid == getpid())
        carve_slice_detach(st.slice, st.slot);
}

bool carve__refused(void)
{
    carve__init();
    return st.refused;
}

void carve__say_unavailable(CUdevice dev)
{
    static _Atomic bool said; /* once: a framework tries again, and every GPU */
    int mode = -1;
    if (!R.cuDeviceGetAttribute ||
        R.cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev) != CUDA_SUCCESS ||
        (mode != CU_COMPUTEMODE_EXCLUSIVE_PROCESS && mode != CU_COMPUTEMODE_PROHIBITED) ||
        atomic_exchange(&said, true))
        return;
    /* even when quiet, as a refused slice is: the process is about to fail */
    char who[160] = "";
    if (st.name[0])
        snprintf(who, sizeof(who), " slice \"%s\":", st.name);
    if (mode == CU_COMPUTEMODE_PROHIBITED)
        fprintf(stderr, "carve:%s no GPU context on CUDA device %d: the GPU is in the "
                "Prohibited compute mode, where no process may use it (an admin sets it back "
                "with nvidia-smi -c DEFAULT; carve doctor shows each GPU's mode)\n",
                who, (int)dev);
    else
        fprintf(stderr, "carve:%s no GPU context on CUDA device %d: the GPU is in the "
                "Exclusive_Process compute mode and another process holds it; carve's slices "
                "share a GPU in the Default mode only (an admin sets it with nvidia-smi -c "
                "DEFAULT), and in Exclusive_Process only an MPS server shares it (carve run "
                "--mode mps, once the GPU is free)\n", who, (int)dev);
}

bool carve__active(void)
{
    return st.slice != NULL;
}

int carve__ndev(void)
{
    return st.slice ? carve_slice_ndev(st.slice) : 0;
}

int carve__sdev_of_uuid(const unsigned char uuid[16])
{
    if (!st.slice)
        return -1;
    int sdev = carve_slice_find_uuid(st.slice, uuid);
    if (sdev < 0 || sdev >= CARVE_SLICE_MAX_DEVICES || carve_slice_cap(st.slice, sdev) == 0)
        return -1;
    return sdev;
}

bool carve__dev_of(CUdevice cu, struct carve_dev *d)
{
    carve__init();
    if (!st.slice || cu < 0 || cu >= MAX_CU_DEVICES)
        return false;
    int sdev = atomic_load_explicit(&st.sdev_of[cu], memory_order_relaxed);
    if (sdev == SDEV_UNKNOWN) {
        CUuuid u;
        if (!R.cuDeviceGetUuid_v2 || R.cuDeviceGetUuid_v2(&u, cu) != CUDA_SUCCESS)
            return false; /* not initialised yet: try again next time */
        sdev = carve__sdev_of_uuid((const unsigned char *)u.bytes);
        atomic_store_explicit(&st.sdev_of[cu], sdev, memory_order_relaxed);
    }
    if (sdev < 0)
        return false;
    d->cu = cu;
    d->sdev = sdev;
    return true;
}

bool carve__dev_current(struct carve_dev *d)
{
    carve__init();
    CUdevice cu;
    if (!st.slice || !R.cuCtxGetDevice || R.cuCtxGetDevice(&cu) != CUDA_SUCCESS)
        return false;
    return carve__dev_of(cu, d);
}

int carve__mem_call_begin(void)
{
    mem_calls_here++;
    return 0;
}

void carve__mem_call_end(int *unused)
{
    (void)unused;
    if (--mem_calls_here == 0 && mem_in_flight_here) {
        atomic_fetch_sub(&mem_in_flight, mem_in_flight_here);
        mem_in_flight_here = 0;
    }
}

/* bytes moved by the memory call this thread is in: in flight until it returns */
void carve__mem_in_flight_add(uint64_t bytes)
{
    if (mem_calls_here && bytes) {
        mem_in_flight_here += bytes;
        atomic_fetch_add(&mem_put_in_flight, bytes);
        atomic_fetch_add(&mem_in_flight, bytes);
    }
}

uint64_t carve__mem_in_flight(uint64_t *put_ever)
{
    *put_ever = atomic_load(&mem_put_in_flight);
    return atomic_load(&mem_in_flight);
}

/* The count moves: its change counter first (carve__counted_moves), then the count. An
 * allocation counted by a call in progress may not be the driver's yet (in_flight). */
static void count_move(int sdev, uint64_t bytes, bool up)
{
    if (up)
        carve__mem_in_flight_add(bytes);
    atomic_fetch_add(&st.counted_moves[sdev], 1);
    if (up)
        atomic_fetch_add_explicit(&st.counted[sdev], bytes, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(&st.counted[sdev], bytes, memory_order_relaxed);
}

bool carve__try_admit(int sdev, uint64_t bytes)
{
    if (carve_slice_admit(st.slice, st.slot, sdev, bytes) != 0)
        return false;
    count_move(sdev, bytes, true);
    return true;
}

CUresult carve__admit(const struct carve_dev *d, uint64_t bytes)
{
    if (carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    /* pools may have given memory back since we last looked, and the context's memory be
     * other than it was */
    if (carve__pools_refresh() && carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    if (carve__overhead_refresh() && carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    carve__oom_message(d, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

void carve__release(int sdev, uint64_t bytes)
{
    if (!bytes)
        return;
    count_move(sdev, bytes, false);
    carve_slice_release(st.slice, st.slot, sdev, bytes);
}

/* Small frees wait for a reading of the process's memory up to this many bytes on a GPU: the
 * slice's usage, which its other processes' admissions see, reads that much high at most. */
#define FREED_SMALL_MAX (UINT64_C(32) << 20)

void carve__release_freed(enum carve_kind kind, int sdev, uint64_t bytes)
{
    if (kind != CARVE_KIND_PTR || !carve_driver_packs(bytes)) {
        carve__release(sdev, bytes);
        return;
    }
    uint64_t waiting = atomic_fetch_add_explicit(&st.freed_small[sdev], bytes,
                                                 memory_order_relaxed) + bytes;
    if (waiting / FREED_SMALL_MAX != (waiting - bytes) / FREED_SMALL_MAX)
        carve__overhead_refresh(); /* a reading every 32 MiB of small frees, no more */
}

bool carve__freed_small_waiting(void)
{
    for (int i = 0; i < CARVE_SLICE_MAX_DEVICES; i++)
        if (atomic_load_explicit(&st.freed_small[i], memory_order_relaxed))
            return true;
    return false;
}

void carve__release_freed_small(int sdev)
{
    carve__release(sdev, atomic_exchange(&st.freed_small[sdev], 0));
}

uint64_t carve__freed_small(int sdev)
{
    return atomic_load(&st.freed_small[sdev]);
}

bool carve__take_freed_small(int sdev, uint64_t bytes)
{
    return atomic_compare_exchange_strong(&st.freed_small[sdev], &bytes, 0);
}

void carve__charge(int sdev, uint64_t bytes)
{
    if (bytes)
        carve_slice_charge(st.slice, st.slot, sdev, bytes);
}

void carve__uncharge(int sdev, uint64_t bytes)
{
    if (bytes)
        carve_slice_release(st.slice, st.slot, sdev, bytes);
}

void carve__charge_counted(int sdev, uint64_t bytes)
{
    carve__charge(sdev, bytes);
    count_move(sdev, bytes, true);
}

uint64_t carve__cap(int sdev)
{
    return carve_slice_cap(st.slice, sdev);
}

uint64_t carve__slice_used(int sdev)
{
    return carve_slice_used(st.slice, sdev);
}

uint64_t carve__counted(int sdev)
{
    return atomic_load_explicit(&st.counted[sdev], memory_order_relaxed);
}

uint64_t carve__managed(int sdev)
{
    return atomic_load_explicit(&st.managed[sdev], memory_order_relaxed);
}

uint64_t carve__counted_moves(int sdev)
{
    return atomic_load(&st.counted_moves[sdev]);
}

int carve__pids(unsigned int *pids, int max)
{
    return st.slice ? carve_slice_pids(st.slice, pids, max) : 0;
}

void carve__oom_message(const struct carve_dev *d, uint64_t requested)
{
    if (st.quiet)
        return;
    char cap[32], used[32], req[32];
    carve_format_size(carve__cap(d->sdev), cap, sizeof(cap));
    carve_format_size(carve__slice_used(d->sdev), used, sizeof(used));
    carve_format_size(requested, req, sizeof(req));
    char line[256];
    /* sizes whose arithmetic passed 64 bits are admitted as a huge stand-in (mem.c): say so,
     * not "16384.00 PiB" */
    int n = snprintf(line, sizeof(line), "carve: slice \"%s\" out of memory on GPU %d: cap %s, "
                     "in use %s, requested %s\n", st.name, d->cu, cap, used,
                     requested >= UINT64_MAX / 4 ? "a size past 64 bits" : req);
    if (n > 0) /* one write: one line, even with other threads printing */
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* ---- allocation records ---- */

void carve__record(enum carve_kind kind, uint64_t key, int sdev, uint64_t bytes)
{
    uint64_t v = ((uint64_t)sdev << CARVE_ALLOCMAP_DEV_SHIFT) | (bytes & CARVE_ALLOCMAP_BYTES_MAX);
    if (carve_allocmap_insert(&st.records[kind], key, v) != 0)
        carve__release(sdev, bytes); /* cannot find it at its free: do not count it */
    else if (kind == CARVE_KIND_MANAGED) /* after the count went up: mem_in_flight covers it */
        atomic_fetch_add_explicit(&st.managed[sdev], bytes, memory_order_relaxed);
}

bool carve__unrecord(enum carve_kind kind, uint64_t key, int *sdev, uint64_t *bytes)
{
    uint64_t v;
    if (!st.slice || !carve_allocmap_remove(&st.records[kind], key, &v))
        return false;
    *sdev = (int)(v >> CARVE_ALLOCMAP_DEV_SHIFT);
    *bytes = v & CARVE_ALLOCMAP_BYTES_MAX;
    carve__mem_in_flight_add(*bytes); /* the driver may free it before the count gives it back */
    if (kind == CARVE_KIND_MANAGED)
        atomic_fetch_sub_explicit(&st.managed[*sdev], *bytes, memory_order_relaxed);
    return true;
}

bool carve__unrecord_ptr(uint64_t key, enum carve_kind *kind, int *sdev, uint64_t *bytes)
{
    *kind = CARVE_KIND_PTR;
    if (carve__unrecord(*kind, key, sdev, bytes))
        return true;
    *kind = CARVE_KIND_MANAGED;
    return carve__unrecord(*kind, key, sdev, bytes);
}

void carve__freed(enum carve_kind kind, uint64_t key, int sdev, uint64_t bytes, CUresult r)
{
    if (carve__free_done(r))
        carve__release_freed(kind, sdev, bytes);
    else
        carve__record(kind, key, sdev, bytes);
}

void carve__records_reset(void)
{
    for (int k = 0; k < CARVE_KIND_COUNT; k++)
        carve_allocmap_reset(&st.records[k]);
}
