/* simdev.c - configuration and cross-process shared state of the simulated GPU. */
#include "simdev.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mig.h"
#include "proc.h"
#include "size.h"
#include "slice.h"
#include "uuid.h"

#define SIM_MAGIC 0x6361727665534d31ULL /* "carveSM1" */

static struct sim_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static struct sim_shared *shared;
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;
static _Atomic(struct sim_proc *) self;
static _Atomic pid_t self_pid;
static _Atomic uint32_t self_gen;  /* the generation of our claim of self */
static dev_t mapped_dev;           /* the state file mapped, for lock_file */
static ino_t mapped_ino;

static uint64_t env_size(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    uint64_t out;
    char err[256];
    if (!v || !*v)
        return dflt;
    if (strcmp(v, "0") == 0)
        return 0;
    if (carve_parse_size(v, &out, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve simulated GPU: %s=%s: %s; using the default\n", name, v, err);
        return dflt;
    }
    return out;
}

static void read_memory_list(void)
{
    const char *v = getenv("CARVE_SIM_MEMORY");
    uint64_t last = 80ULL << 30;
    char buf[512], err[256];
    snprintf(buf, sizeof(buf), "%s", v && *v ? v : "80GiB");
    char *save = NULL, *tok = strtok_r(buf, ",", &save);
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        if (tok) {
            uint64_t b;
            if (carve_parse_size(tok, &b, err, sizeof(err)) == 0)
                last = b;
            else
                fprintf(stderr, "carve simulated GPU: CARVE_SIM_MEMORY: %s\n", err);
            tok = strtok_r(NULL, ",", &save);
        }
        config.memory[i] = last; /* a short list repeats its last size */
    }
}

static void read_uuids(void)
{
    const char *v = getenv("CARVE_SIM_UUIDS");
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", v ? v : "");
    char *save = NULL, *tok = strtok_r(buf, ",", &save);
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        unsigned char b[16];
        if (tok && carve_uuid_parse(tok, b) == 0) {
            snprintf(config.uuid[i], sizeof(config.uuid[i]), "%s", tok);
        } else {
            snprintf(config.uuid[i], sizeof(config.uuid[i]),
                     "GPU-5a1e0c4a-%04x-4e3d-9a7b-c0ffee%06x", 0x1000 + i, 0xa00000 + i);
        }
        if (tok)
            tok = strtok_r(NULL, ",", &save);
    }
}

/* CARVE_SIM_PROC_LISTS: compute, graphics, mps (comma-separated) or all; unknown words are
 * ignored, and nothing known means compute. */
static uint32_t read_proc_lists(const char *v)
{
    uint32_t lists = 0;
    char buf[128], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", v ? v : "");
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "compute") == 0)
            lists |= SIM_LIST_COMPUTE;
        else if (strcmp(w, "graphics") == 0)
            lists |= SIM_LIST_GRAPHICS;
        else if (strcmp(w, "mps") == 0)
            lists |= SIM_LIST_MPS;
        else if (strcmp(w, "all") == 0)
            lists |= SIM_LIST_COMPUTE | SIM_LIST_GRAPHICS | SIM_LIST_MPS;
    }
    return lists ? lists : SIM_LIST_COMPUTE;
}

static void read_config(void)
{
    const char *v = getenv("CARVE_SIM_DEVICES");
    config.ndev = v && *v ? atoi(v) : 1;
    if (config.ndev < 0 || config.ndev > SIM_MAX_DEVICES)
        config.ndev = config.ndev < 0 ? 0 : SIM_MAX_DEVICES;
    read_memory_list();
    v = getenv("CARVE_SIM_SMS");
    config.sms = v && atoi(v) > 0 ? atoi(v) : 132;
    v = getenv("CARVE_SIM_NAME");
    snprintf(config.name, sizeof(config.name), "%s",
             v && *v ? v : "NVIDIA H100 80GB HBM3 (simulated)");
    /* CARVE_SIM_MODEL=A100-40GB ...: that model's NVML name and memory, unless given */
    const struct mig_model *model = mig_model_find(getenv("CARVE_SIM_MODEL"));
    if (model && !(v && *v))
        snprintf(config.name, sizeof(config.name), "NVIDIA %s (simulated)", model->nvml_match);
    v = getenv("CARVE_SIM_MEMORY");
    if (model && !(v && *v))
        for (int i = 0; i < SIM_MAX_DEVICES; i++)
            config.memory[i] = model->memory_mib << 20;
    read_uuids();
    v = getenv("CARVE_SIM_MIG");
    config.mig_on = v && (strcmp(v, "1") == 0 || strcmp(v, "on") == 0);
    config.mig = config.mig_on || (v && strcmp(v, "off") == 0);
    v = getenv("CARVE_SIM_PROC_UTIL");
    config.proc_util = !config.mig_on && !(v && strcmp(v, "off") == 0);
    v = getenv("CARVE_SIM_NVML_PID_OFFSET");
    config.nvml_pid_offset = v ? atoi(v) : 0;
    v = getenv("CARVE_SIM_NVML_UTIL_PID_OFFSET");
    config.nvml_util_pid_offset = v ? atoi(v) : 0;
    config.proc_lists = read_proc_lists(getenv("CARVE_SIM_PROC_LISTS"));
    v = getenv("CARVE_SIM_COMPUTE_MODE");
    config.compute_mode = v && v[0] >= '0' && v[0] <= '3' && !v[1] ? v[0] - '0' : 0;
    v = getenv("CARVE_SIM_ALLOC_DELAY_US");
    config.alloc_delay_us = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    v = getenv("CARVE_SIM_FREE_DELAY_US");
    config.free_delay_us = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    v = getenv("CARVE_SIM_MAP_DELAY_US");
    config.map_delay_us = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    v = getenv("CARVE_SIM_UNMAP_DELAY_US");
    config.unmap_delay_us = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    v = getenv("CARVE_SIM_RETAIN_DELAY_US");
    config.retain_delay_us = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    v = getenv("CARVE_SIM_STALE_EVENTS");
    config.stale_events_abort = v && strcmp(v, "abort") == 0;
    config.ctx_memory = env_size("CARVE_SIM_CTX_MEMORY", 500ULL << 20);
    config.module_memory = env_size("CARVE_SIM_MODULE_MEMORY", 2ULL << 20);
    config.lazy_memory = env_size("CARVE_SIM_LAZY_MEMORY", 0);
    v = getenv("CARVE_SIM_TIMESLICE_US");
    config.timeslice_ns = v && atoi(v) > 0 ? (uint64_t)atoi(v) * 1000 : 0;
    v = getenv("CARVE_SIM_STATE");
    if (v && *v)
        snprintf(config.state_path, sizeof(config.state_path), "%s", v);
    else
        snprintf(config.state_path, sizeof(config.state_path), "/dev/shm/carve-sim.%u",
                 (unsigned)getuid());
}

const struct sim_config *sim_config(void)
{
    pthread_once(&config_once, read_config);
    return &config;
}

static uint64_t config_hash(void)
{
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *p = (const unsigned char *)config.memory;
    for (size_t i = 0; i < sizeof(config.memory); i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    /* processes that disagree on time-slicing cannot share a timeline */
    return h ^ (uint64_t)config.ndev ^ config.timeslice_ns << 8;
}

static void map_shared(void)
{
    const struct sim_config *c = sim_config();
    int fd = open(c->state_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "carve simulated GPU: cannot open state file %s: %s\n", c->state_path,
                strerror(errno));
        return;
    }
    flock(fd, LOCK_EX); /* first users race to initialise: one does, under the lock */
    struct stat st;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size != sizeof(struct sim_shared) &&
        ftruncate(fd, sizeof(struct sim_shared)) < 0) {
        fprintf(stderr, "carve simulated GPU: cannot size %s: %s\n", c->state_path,
                strerror(errno));
        close(fd);
        return;
    }
    void *p = mmap(NULL, sizeof(struct sim_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "carve simulated GPU: cannot map %s: %s\n", c->state_path,
                strerror(errno));
        close(fd);
        return;
    }
    struct sim_shared *s = p;
    uint64_t h = config_hash();
    if (s->magic != SIM_MAGIC || s->config_hash != h || s->size != sizeof(*s)) {
        memset(s, 0, sizeof(*s));
        s->config_hash = h;
        s->ndev = (uint32_t)c->ndev;
        s->size = sizeof(*s);
        for (int i = 0; i < c->ndev; i++) {
            s->dev[i].total = c->memory[i];
            sim_timeline_init(&s->timeline[i]);
        }
        s->magic = SIM_MAGIC;
    }
    flock(fd, LOCK_UN);
    if (fstat(fd, &st) == 0) {
        mapped_dev = st.st_dev;
        mapped_ino = st.st_ino;
    }
    close(fd);
    shared = s;
}

struct sim_shared *sim_shared(void)
{
    pthread_once(&shared_once, map_shared);
    return shared;
}

/* The lock that says an entry's process lives, wherever it runs: an open file description's
 * lock (F_OFD_SETLK) on a byte of the state file past its end, one per entry, taken at the
 * claim. The kernel drops it when the process exits or execs (the fd is close-on-exec), so a
 * process that cannot see another's (a sibling container's) asks its lock. A fork child closes
 * the fd it inherited: the description would hold its parent's lock for as long as it lives. */
#define LOCK_BASE (1ll << 40)
static _Atomic int lock_fd = -1;

/* The fd the locks are taken and asked through: opened once, and again if the program closed
 * it and its number now names another file (closefrom, dup2), which is then left alone. A
 * lock taken through the lost one is lost with it: such a process's entry is judged as before
 * the locks, by its pid. */
static int lock_file(void)
{
    int fd = atomic_load(&lock_fd);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == mapped_dev && st.st_ino == mapped_ino)
        return fd;
    if (fd >= 0)
        atomic_compare_exchange_strong(&lock_fd, &fd, -1);
    fd = open(sim_config()->state_path, O_RDWR | O_CLOEXEC);
    int none = -1;
    if (fd >= 0 && !atomic_compare_exchange_strong(&lock_fd, &none, fd)) {
        close(fd); /* another thread's is there */
        fd = none;
    }
    return fd;
}

static bool lock_entry(size_t i, short type)
{
    int fd = lock_file();
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = LOCK_BASE + (off_t)i,
                      .l_len = 1};
    return fd >= 0 && fcntl(fd, F_OFD_SETLK, &l) == 0;
}

/* 1 when entry i's lock is held, 0 when nobody holds it, -1 when that cannot be asked. */
static int entry_locked(size_t i)
{
    int fd = lock_file();
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_BASE + (off_t)i,
                      .l_len = 1};
    if (fd < 0 || fcntl(fd, F_OFD_GETLK, &l) < 0)
        return -1;
    return l.l_type != F_UNLCK;
}

static void lock_forget_in_child(void)
{
    int fd = atomic_exchange(&lock_fd, -1);
    if (fd >= 0)
        close(fd);
}

__attribute__((constructor)) static void lock_atfork(void)
{
    pthread_atfork(NULL, NULL, lock_forget_in_child);
}

/* The PID namespace this process reads the table from, and whether its /proc is that
 * namespace's (else /proc/PID names another namespace's process). Read again in a fork child
 * (it may be of a namespace its parent made). */
struct viewer {
    pid_t pid;
    uint32_t ns;
    bool proc_own;
};

static struct viewer viewer(void)
{
    static _Thread_local struct viewer v;
    pid_t me = getpid();
    if (v.pid != me)
        v = (struct viewer){me, carve_proc_ns(0, "pid"), carve_proc_is_own() == 1};
    return v;
}

static bool of_viewer_ns(uint32_t ns, const struct viewer *v)
{
    return !ns || !v->ns || ns == v->ns;
}

/* What this process found another namespace's entry to be, by its generation: a walk through
 * /proc costs a millisecond or more, and the table is read at every allocation and NVML call.
 * A process found keeps its pid here while it lives; one not found is looked for again after
 * SEE_AGAIN_NS. Per process (a fork child may be of another namespace), one word per entry. */
#define SEE_AGAIN_NS 1000000000ull
static _Atomic uint64_t found_as[SIM_MAX_PROCS]; /* generation << 32 | pid here (0: none) */
static _Atomic uint64_t look_again_ns[SIM_MAX_PROCS];
static _Atomic pid_t found_by;

static int see(struct sim_shared *s, struct sim_seen *out, const struct viewer *v)
{
    struct carve_proc_nspid want[SIM_MAX_PROCS];
    int index[SIM_MAX_PROCS];
    int n = 0;
    if (atomic_exchange(&found_by, v->pid) != v->pid)
        for (int i = 0; i < SIM_MAX_PROCS; i++)
            atomic_store(&found_as[i], 0);
    uint64_t now = sim_now_ns();
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        struct sim_proc *p = &s->proc[i];
        /* a claim bumps gen before it publishes the pid, last: the same gen and pid before and
         * after the namespace is read, and the namespace is that pid's */
        uint32_t gen = atomic_load(&p->gen);
        int32_t pid = atomic_load(&p->pid);
        uint32_t ns = atomic_load(&p->pidns);
        if (atomic_load(&p->pid) != pid || atomic_load(&p->gen) != gen)
            pid = 0; /* changing hands: left for the next look */
        out[i] = (struct sim_seen){pid, gen, pid > 0 && of_viewer_ns(ns, v) ? pid : 0};
        if (pid <= 0 || out[i].here || !v->proc_own)
            continue;
        uint64_t known = atomic_load(&found_as[i]);
        if (known >> 32 == gen && (uint32_t)known) {
            out[i].here = (pid_t)(uint32_t)known;
        } else if (known >> 32 != gen || now >= atomic_load(&look_again_ns[i])) {
            want[n] = (struct carve_proc_nspid){ns, pid, 0};
            index[n++] = i;
        }
    }
    if (!n)
        return 1;
    int complete = carve_proc_find_nspids(want, n);
    for (int k = 0; k < n; k++) {
        int i = index[k];
        out[i].here = want[k].found;
        if (!want[k].found && complete != 1)
            continue; /* maybe among those it could not look into: not kept as not there */
        atomic_store(&found_as[i], (uint64_t)out[i].gen << 32 | (uint32_t)want[k].found);
        atomic_store(&look_again_ns[i], now + SEE_AGAIN_NS);
    }
    return complete;
}

int sim_see_entries(struct sim_shared *s, struct sim_seen *out)
{
    struct viewer v = viewer();
    return see(s, out, &v);
}

/* Whether the process of entry i, as this process saw it (e), is gone. One of another
 * namespace that this process cannot find is gone when its lock is free, or when the host's
 * namespace, with its /proc, cannot find it in a full look: there every process is seen. A
 * zombie (exited, not yet reaped) has let go of its lock: such a reader frees its entry at
 * once, where one that sees it keeps the entry until it is reaped (sim_device_held_by_other). */
static bool proc_dead(struct sim_shared *s, size_t i, const struct sim_seen *e, int complete,
                      const struct viewer *v)
{
    struct sim_proc *p = &s->proc[i];
    if (e->pid <= 0)
        return false;
    if (!e->here)
        return (v->ns == CARVE_HOST_PID_NS && v->proc_own && complete == 1) ||
               (atomic_load(&p->locked) && entry_locked(i) == 0);
    if (kill(e->here, 0) < 0 && errno == ESRCH)
        return true;
    if (!v->proc_own)
        return false; /* /proc/PID is another namespace's process */
    uint64_t st = atomic_load(&p->start_time), now = carve_proc_start_time(e->here);
    return st && now && st != now;
}

/* A process that exited and is not yet reaped holds no GPU: the driver lets go at the exit
 * (a holder killed by a signal never cleared its entry). Not a check of every reaper's, where
 * a zombie's entry must stay until it is reaped (an MPS client under a parent that does not
 * reap, mps.sh). The check and a new context's count are not one step across processes: two
 * processes asking at the same instant under Exclusive_Process may both get one. */
bool sim_device_held_by_other(int dev)
{
    struct sim_shared *sh = sim_shared();
    if (!sh)
        return false;
    struct sim_seen seen[SIM_MAX_PROCS];
    struct viewer v = viewer();
    int complete = see(sh, seen, &v);
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        struct sim_proc *p = &sh->proc[i];
        struct carve_proc_stat st;
        if (seen[i].pid > 0 && seen[i].here != v.pid && atomic_load(&p->contexts[dev]) > 0 &&
            !proc_dead(sh, (size_t)i, &seen[i], complete, &v) &&
            !(seen[i].here && v.proc_own && carve_proc_stat(seen[i].here, &st) == 0 &&
              st.state == 'Z'))
            return true;
    }
    return false;
}

/* Also forgets the start time and namespace: a claimed entry whose new owner has not stored
 * its own yet must not look like a reused pid to a reaper in another process. */
static void proc_clear(struct sim_proc *p)
{
    atomic_store(&p->start_time, 0);
    atomic_store(&p->pidns, 0);
    atomic_store(&p->locked, 0);
    for (int d = 0; d < SIM_MAX_DEVICES; d++) {
        atomic_store(&p->used[d], 0);
        atomic_store(&p->unlisted[d], 0);
        atomic_store(&p->contexts[d], 0);
        atomic_store(&p->busy_ns[d], 0);
        atomic_store(&p->mig_gi[d], 0);
    }
}

/* Frees entry i if it still holds the process seen: its pid and generation. Containers' first
 * processes are all pid 1, so between the look and the take the entry may have gone to
 * another of pid 1: its generation tells, and its pid is put back. */
static bool take_entry(struct sim_proc *p, const struct sim_seen *e)
{
    int32_t pid = e->pid;
    if (!atomic_compare_exchange_strong(&p->pid, &pid, -1))
        return false;
    if (atomic_load(&p->gen) != e->gen) {
        atomic_store(&p->pid, e->pid); /* held as -1 here: nobody else wrote it meanwhile */
        return false;
    }
    proc_clear(p);
    atomic_store(&p->pid, 0);
    return true;
}

void sim_reap(void)
{
    struct sim_shared *s = sim_shared();
    if (!s)
        return;
    struct sim_seen seen[SIM_MAX_PROCS];
    struct viewer v = viewer();
    int complete = see(s, seen, &v);
    for (int i = 0; i < SIM_MAX_PROCS; i++)
        if (proc_dead(s, (size_t)i, &seen[i], complete, &v))
            take_entry(&s->proc[i], &seen[i]);
}

/* At exit: our entry, if it is still ours (its generation ours), and its lock, which the
 * kernel would drop only once the process is gone: the next claim of the entry takes it. A
 * reaper holds an entry as -1 for a moment: asked again then. */
static void release_self(void)
{
    struct sim_proc *p = atomic_load(&self);
    pid_t me = getpid();
    if (!p || atomic_load(&self_pid) != me)
        return;
    struct sim_seen e = {me, atomic_load(&self_gen), me};
    lock_entry((size_t)(p - shared->proc), F_UNLCK);
    for (int tries = 0; tries < 1000 && atomic_load(&p->gen) == e.gen; tries++) {
        if (take_entry(p, &e) || atomic_load(&p->pid) != -1)
            return; /* let go, or not ours any more */
        sched_yield();
    }
}

/* An entry with our pid before this image's first claim is the image's before an exec: as
 * on a GPU, the exec released everything it held. Once per image (the NVML library's copy
 * of this file never claims), before any claim. */
static pthread_once_t exec_once = PTHREAD_ONCE_INIT;

static void forget_image_before_exec(void)
{
    struct sim_shared *s = sim_shared();
    struct viewer v = viewer();
    for (int i = 0; s && i < SIM_MAX_PROCS; i++) {
        struct sim_proc *p = &s->proc[i];
        uint32_t gen = atomic_load(&p->gen); /* before the pid: see() */
        struct sim_seen e = {atomic_load(&p->pid), gen, 0};
        if (e.pid == v.pid && of_viewer_ns(atomic_load(&p->pidns), &v)) /* not a container's */
            take_entry(p, &e);
    }
}

/* Takes a free entry as -1, fills it, and publishes the pid last: a reader that sees the pid
 * sees the namespace, start time and generation that go with it. */
static struct sim_proc *claim_self(struct sim_shared *s, pid_t pid)
{
    pthread_once(&exec_once, forget_image_before_exec);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < SIM_MAX_PROCS; i++) {
            int32_t expect = 0;
            struct sim_proc *p = &s->proc[i];
            if (atomic_compare_exchange_strong(&p->pid, &expect, -1)) {
                struct carve_proc_stat st; /* /proc/self: right wherever /proc is from */
                proc_clear(p);
                atomic_fetch_add(&p->gen, 1);
                atomic_store(&p->pidns, viewer().ns);
                atomic_store(&p->start_time, carve_proc_stat_self(&st) == 0 ? st.start : 0);
                atomic_store(&p->lists, sim_config()->proc_lists);
                atomic_store(&p->locked, lock_entry((size_t)i, F_WRLCK));
                atomic_store(&p->pid, (int32_t)pid);
                return p;
            }
        }
        sim_reap();
    }
    return NULL;
}

struct sim_proc *sim_self(void)
{
    struct sim_shared *s = sim_shared();
    if (!s)
        return NULL;
    pid_t pid = getpid();
    struct sim_proc *p = atomic_load(&self);
    if (p && atomic_load(&self_pid) == pid)
        return p;
    /* first use, or a fork child: its own entry, nothing of the parent's */
    p = claim_self(s, pid);
    if (!p)
        return NULL;
    static _Atomic bool registered;
    if (!atomic_exchange(&registered, true))
        atexit(release_self);
    atomic_store(&self_gen, atomic_load(&p->gen));
    atomic_store(&self_pid, pid);
    atomic_store(&self, p);
    return p;
}

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t sim_device_used(int dev)
{
    struct sim_shared *s = sim_shared();
    if (!s || dev < 0 || dev >= SIM_MAX_DEVICES)
        return 0;
    sim_reap();
    uint64_t sum = 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++)
        if (atomic_load(&s->proc[i].pid) > 0)
            sum += atomic_load(&s->proc[i].used[dev]);
    return sum;
}

static uint64_t sum_used(struct sim_shared *s, int dev)
{
    uint64_t sum = 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++)
        sum += atomic_load(&s->proc[i].used[dev]);
    return sum;
}

/* the MIG instance this process runs in (CUDA_VISIBLE_DEVICES=MIG-...), 0 for none */
static unsigned mig_gi_self;
static uint64_t mig_limit_self;

void sim_set_mig(unsigned gi, uint64_t limit)
{
    mig_gi_self = gi;
    mig_limit_self = limit;
}

uint64_t sim_instance_used(int dev, unsigned gi)
{
    struct sim_shared *s = sim_shared();
    uint64_t sum = 0;
    for (int i = 0; s && i < SIM_MAX_PROCS; i++)
        if (atomic_load(&s->proc[i].pid) > 0 && atomic_load(&s->proc[i].mig_gi[dev]) == gi)
            sum += atomic_load(&s->proc[i].used[dev]);
    return sum;
}

static bool fits(struct sim_shared *s, int dev)
{
    if (sum_used(s, dev) > s->dev[dev].total)
        return false;
    return !mig_gi_self || sim_instance_used(dev, mig_gi_self) <= mig_limit_self;
}

/* *v less bytes, never below 0. */
static void take_floor0(_Atomic uint64_t *v, uint64_t bytes)
{
    uint64_t cur = atomic_load(v);
    while (!atomic_compare_exchange_weak(v, &cur, cur > bytes ? cur - bytes : 0))
        ;
}

bool sim_take(int dev, uint64_t bytes)
{
    struct sim_shared *s = sim_shared();
    struct sim_proc *p = sim_self();
    if (!s || !p)
        return false;
    if (mig_gi_self) /* counted in its instance, whose memory is its own */
        atomic_store(&p->mig_gi[dev], mig_gi_self);
    /* add first, then check the sum: of two racing takers at least one sees the other */
    atomic_fetch_add(&p->used[dev], bytes);
    if (fits(s, dev))
        return true;
    sim_reap();
    if (fits(s, dev))
        return true;
    atomic_fetch_sub(&p->used[dev], bytes);
    return false;
}

void sim_give(int dev, uint64_t bytes)
{
    struct sim_proc *p = sim_self();
    if (!p)
        return;
    take_floor0(&p->used[dev], bytes);
}

void sim_unlisted(int dev, uint64_t bytes, bool up)
{
    struct sim_proc *p = sim_self();
    if (!p)
        return;
    if (up) {
        atomic_fetch_add(&p->unlisted[dev], bytes);
        return;
    }
    take_floor0(&p->unlisted[dev], bytes); /* a fork child frees its parent's too */
}

uint64_t sim_run_kernel(int dev, uint64_t after, uint64_t ns)
{
    struct sim_shared *s = sim_shared();
    if (s && sim_config()->timeslice_ns)
        return sim_timeline_run(s, dev, ns);
    uint64_t now = sim_now_ns();
    uint64_t start = now > after ? now : after;
    if (!s)
        return start + ns;
    struct sim_device_state *d = &s->dev[dev];
    uint64_t busy = atomic_load(&d->busy_until_ns), begin, end;
    do {
        begin = busy > start ? busy : start;
        end = begin + ns;
    } while (!atomic_compare_exchange_weak(&d->busy_until_ns, &busy, end));
    if (ns) {
        uint64_t slot = atomic_fetch_add(&d->ring_head, 1) % SIM_RING;
        atomic_store(&d->ring[slot].start_ns, begin);
        atomic_store(&d->ring[slot].end_ns, end);
        struct sim_proc *p = sim_self();
        atomic_store(&d->ring[slot].entry,
                     p ? SIM_RING_KEY(p - s->proc, atomic_load(&p->gen)) : 0);
        if (p)
            atomic_fetch_add(&p->busy_ns[dev], ns);
    }
    return end;
}

uint64_t sim_mark_end(int dev, uint64_t mark, bool *done)
{
    struct sim_shared *s = sim_shared();
    if (s && (mark & SIM_TICKET))
        return sim_timeline_end(s, dev, mark, done);
    *done = sim_now_ns() >= mark;
    return mark;
}

unsigned sim_busy_percent(int dev, int entry, uint64_t window_ns)
{
    struct sim_shared *s = sim_shared();
    if (!s || dev < 0 || dev >= SIM_MAX_DEVICES || window_ns == 0)
        return 0;
    if (sim_config()->timeslice_ns)
        sim_timeline_settle(s, dev);
    uint64_t now = sim_now_ns(), from = now > window_ns ? now - window_ns : 0, busy = 0;
    struct sim_device_state *d = &s->dev[dev];
    uint32_t key = entry >= 0 ? SIM_RING_KEY(entry, atomic_load(&s->proc[entry].gen)) : 0;
    for (int i = 0; i < SIM_RING; i++) {
        uint64_t a = atomic_load(&d->ring[i].start_ns), b = atomic_load(&d->ring[i].end_ns);
        if (entry >= 0 && atomic_load(&d->ring[i].entry) != key)
            continue;
        a = a < from ? from : a;
        b = b > now ? now : b;
        if (b > a)
            busy += b - a;
    }
    unsigned pct = (unsigned)(busy * 100 / window_ns);
    return pct > 100 ? 100 : pct;
}
