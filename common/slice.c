/* slice.c - the slice table in shared memory and its lock-free admission. */
#include "slice.h"

#include "proc.h"
#include "slice_layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ADMIT_RETRIES 64
#define REUSE_CHECK_NS 10000000ULL /* 10 ms */

struct carve_slice {
    struct slice_table *t;
    const struct slice_terms *k; /* mapped read-only */
    uid_t terms_uid;             /* who owns the terms object, and its mode: the trust */
    mode_t terms_mode;           /* check of libcarve (carve_slice_terms_owner) */
    uid_t table_uid;             /* who owns the table (carved's check when it adopts one) */
    uint32_t self_ns;            /* this process's PID namespace (0: unknown), and whether */
    bool proc_own;               /* /proc is that namespace's: read at open and at attach */
};

/* Which PID namespace this process is in, and whether its /proc/PID are its own PIDs: once
 * at open and at each attach, never on the allocation path. */
static void know_self(struct carve_slice *s)
{
    s->self_ns = carve_proc_ns(0, "pid");
    s->proc_own = carve_proc_is_own() == 1;
}

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *arg)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, arg, strerror(-code));
    return code;
}

int carve_shm_open(const char *name, int flags, mode_t mode)
{
    int fd = shm_open(name, flags | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    struct stat st;
    int r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EPROTO : 0;
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

static int terms_name(const char *shm_name, char *out, size_t len)
{
    int n = snprintf(out, len, "%s%s", shm_name, SLICE_TERMS_SUFFIX);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Creates one object of the slice (O_EXCL) with size bytes, mapped read-write. */
static int create_object(const char *name, mode_t mode, size_t size, void **out)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);
    if (fd < 0)
        return -errno;
    int r = 0;
    /* shm_open's mode passes through the umask; the slice's modes are deliberate */
    if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0)
        r = -errno;
    void *p = r ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!r && p == MAP_FAILED)
        r = -errno;
    close(fd);
    if (r) {
        shm_unlink(name);
        return r;
    }
    *out = p;
    return 0;
}

static void fill_terms(struct slice_terms *k, const struct carve_slice_spec *spec)
{
    k->version = SLICE_VERSION;
    k->size = sizeof(*k);
    snprintf(k->name, sizeof(k->name), "%s", spec->name);
    k->ndev = spec->ndev;
    k->owner_pid = getpid();
    k->owner_ns = carve_proc_ns(0, "pid");
    k->created = (uint64_t)time(NULL);
    for (int i = 0; i < spec->ndev; i++) {
        memcpy(k->dev[i].uuid, spec->dev[i].uuid, 16);
        k->dev[i].index = spec->dev[i].index;
        k->dev[i].cap = spec->dev[i].cap;
        k->dev[i].compute = spec->dev[i].compute;
        k->dev[i].board_entry = spec->dev[i].board_entry;
    }
}

size_t carve_slice_shm_bytes(void)
{
    return sizeof(struct slice_table) + sizeof(struct slice_terms);
}

int carve_slice_create(const char *shm_name, const struct carve_slice_spec *spec,
                       struct carve_slice **out, char *err, size_t errlen)
{
    if (spec->ndev < 0 || spec->ndev > CARVE_SLICE_MAX_DEVICES)
        return fail(err, errlen, -EINVAL, "slice %s: bad device count (%s)", shm_name);
    char kname[256];
    if (terms_name(shm_name, kname, sizeof(kname)) < 0)
        return fail(err, errlen, -ENAMETOOLONG, "slice name %s: %s", shm_name);
    mode_t table_mode = spec->table_mode ? spec->table_mode : 0600;
    struct carve_slice *s = calloc(1, sizeof(*s));
    if (!s)
        return fail(err, errlen, -ENOMEM, "cannot set up slice %s: %s", shm_name);
    struct slice_terms *k = NULL;
    struct slice_table *t = NULL;
    int r = create_object(kname, 0644, sizeof(*k), (void **)&k);
    if (r < 0) {
        free(s);
        return fail(err, errlen, r, "cannot create slice %s: %s", shm_name);
    }
    r = create_object(shm_name, table_mode, sizeof(*t), (void **)&t);
    if (r < 0) {
        munmap(k, sizeof(*k));
        shm_unlink(kname);
        free(s);
        return fail(err, errlen, r, "cannot create slice %s: %s", shm_name);
    }
    fill_terms(k, spec); /* both fresh from ftruncate: all zero */
    t->version = SLICE_VERSION;
    t->size = sizeof(*t);
    /* the magics go last: a tenant that maps early sees an unfinished slice as invalid */
    atomic_thread_fence(memory_order_release);
    k->magic = SLICE_MAGIC;
    t->magic = SLICE_MAGIC;
    s->t = t;
    s->k = k;
    s->terms_uid = geteuid();
    s->terms_mode = 0644;
    s->table_uid = geteuid();
    know_self(s);
    *out = s;
    return 0;
}

/* Checks the head of an object: magic, version, size. 0 or -EPROTO with a message. */
static int check_head(const char *shm_name, int fd, off_t size, size_t want, char *err,
                      size_t errlen)
{
    struct {
        uint64_t magic;
        uint32_t version, size;
    } head;
    if (size < (off_t)sizeof(head) || pread(fd, &head, sizeof(head), 0) != sizeof(head) ||
        head.magic != SLICE_MAGIC)
        return fail(err, errlen, -EPROTO, "%s is not a carve slice (%s)", shm_name);
    if (head.version != SLICE_VERSION) {
        if (err && errlen)
            snprintf(err, errlen, "slice %s has table version %u; this carve reads version %u "
                     "(carve and libcarve from different builds?)", shm_name, head.version,
                     SLICE_VERSION);
        return -EPROTO;
    }
    if (head.size != want || size != (off_t)want)
        return fail(err, errlen, -EPROTO, "slice %s has the wrong size for its version (%s)",
                    shm_name);
    return 0;
}

/* Opens and maps one object of a slice after checking its head; st gets its fstat. The
 * object is given_fd when that is not -1 (the caller's, left open), else opened by name. */
static int open_object(const char *name, int given_fd, bool writable, size_t want, void **out,
                       struct stat *st, char *err, size_t errlen)
{
    int fd = given_fd >= 0 ? given_fd : carve_shm_open(name, writable ? O_RDWR : O_RDONLY, 0);
    if (fd < 0)
        return fail(err, errlen, fd, "cannot open slice %s: %s", name);
    int r = fstat(fd, st) < 0 ? -errno : 0;
    if (r < 0) {
        fail(err, errlen, r, "cannot open slice %s: %s", name);
        goto out;
    }
    if ((r = check_head(name, fd, st->st_size, want, err, errlen)) < 0)
        goto out;
    void *p = mmap(NULL, want, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        r = fail(err, errlen, -errno, "cannot map slice %s: %s", name);
        goto out;
    }
    *out = p;
out:
    if (fd != given_fd)
        close(fd);
    return r;
}

int carve_slice_open(const char *shm_name, struct carve_slice **out, char *err, size_t errlen)
{
    return carve_slice_open_fd(shm_name, -1, out, err, errlen);
}

int carve_slice_open_fd(const char *shm_name, int table_fd, struct carve_slice **out, char *err,
                        size_t errlen)
{
    char kname[256];
    if (terms_name(shm_name, kname, sizeof(kname)) < 0)
        return fail(err, errlen, -ENAMETOOLONG, "slice name %s: %s", shm_name);
    struct carve_slice *s = calloc(1, sizeof(*s));
    if (!s)
        return fail(err, errlen, -ENOMEM, "cannot open slice %s: %s", shm_name);
    struct stat kst, tst;
    void *k = NULL, *t = NULL;
    int r = open_object(shm_name, table_fd, true, sizeof(struct slice_table), &t, &tst, err,
                        errlen);
    if (r == 0)
        r = open_object(kname, -1, false, sizeof(struct slice_terms), &k, &kst, err, errlen);
    if (r < 0) {
        if (t)
            munmap(t, sizeof(struct slice_table));
        free(s);
        return r;
    }
    s->k = k;
    s->t = t;
    s->terms_uid = kst.st_uid;
    s->terms_mode = kst.st_mode & 07777;
    s->table_uid = tst.st_uid;
    know_self(s);
    *out = s;
    return 0;
}

int carve_slice_label(const char *shm_name, char *out, size_t len, uid_t *uid, mode_t *mode,
                      char *err, size_t errlen)
{
    char kname[256];
    if (terms_name(shm_name, kname, sizeof(kname)) < 0)
        return fail(err, errlen, -ENAMETOOLONG, "slice name %s: %s", shm_name);
    struct stat kst;
    struct slice_terms *k = NULL;
    int r = open_object(kname, -1, false, sizeof(*k), (void **)&k, &kst, err, errlen);
    if (r < 0)
        return r;
    snprintf(out, len, "%.*s", (int)sizeof(k->name), k->name);
    munmap(k, sizeof(*k));
    *uid = kst.st_uid;
    *mode = kst.st_mode & 07777;
    return 0;
}

int carve_slice_creator(const char *shm_name, int *pid, uint32_t *ns)
{
    char kname[256];
    if (terms_name(shm_name, kname, sizeof(kname)) < 0)
        return -ENAMETOOLONG;
    struct stat kst;
    struct slice_terms *k = NULL;
    int r = open_object(kname, -1, false, sizeof(*k), (void **)&k, &kst, NULL, 0);
    if (r < 0)
        return r;
    *pid = k->owner_pid;
    *ns = k->owner_ns;
    munmap(k, sizeof(*k));
    return 0;
}

int carve_slice_table_fd(const char *shm_name)
{
    return carve_shm_open(shm_name, O_RDWR, 0);
}

void carve_slice_close(struct carve_slice *s)
{
    if (!s)
        return;
    munmap(s->t, sizeof(struct slice_table));
    munmap((void *)s->k, sizeof(struct slice_terms));
    free(s);
}

/* The table first: a carve run killed between the two leaves its terms, which say who made
 * them and in which PID namespace, so that carved can judge and sweep them (a table alone
 * names no namespace, and was left for good). */
int carve_slice_unlink(const char *shm_name)
{
    int r = shm_unlink(shm_name) < 0 ? -errno : 0;
    char kname[256];
    if (terms_name(shm_name, kname, sizeof(kname)) == 0)
        shm_unlink(kname);
    return r;
}

/* Whether a dead-looking maker is dead: in a PID namespace whose /proc is an outer one's, a
 * pid's /proc entry is another process's, and only kill(2)'s word counts. */
static bool maker_runs(pid_t pid, bool proc_is_own)
{
    if (proc_is_own)
        return carve_proc_running(pid);
    return kill(pid, 0) == 0 || errno != ESRCH;
}

int carve_slice_sweep_killed(bool every_user, uid_t only_uid, carve_slice_swept_fn removed,
                             void *arg)
{
    uint32_t own_ns = carve_proc_ns(0, "pid");
    if (!own_ns)
        return 0;
    bool proc_is_own = carve_proc_is_own() == 1;
    DIR *dir = opendir("/dev/shm");
    int n = 0;
    if (!dir)
        return 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        unsigned uid, rnd;
        int pid, end = 0;
        /* the table's name (carve_slice_unlink takes its terms with it), or terms whose table
         * is gone: a run killed between its two unlinks */
        if (sscanf(e->d_name, "carve.%u.%d.%8x%n", &uid, &pid, &rnd, &end) != 3 || pid <= 0)
            continue;
        bool terms_only = strcmp(e->d_name + end, ".terms") == 0;
        if ((e->d_name[end] != '\0' && !terms_only) || (!every_user && uid != only_uid))
            continue;
        char shm[NAME_MAX + 2];
        int maker;
        uint32_t maker_ns;
        snprintf(shm, sizeof(shm), "/%.*s", end, e->d_name);
        if (terms_only && faccessat(dirfd(dir), shm + 1, F_OK, 0) == 0)
            continue; /* the table is there: judged by its own name */
        if (carve_slice_creator(shm, &maker, &maker_ns) < 0 || maker != pid ||
            maker_ns != own_ns || maker_runs(pid, proc_is_own))
            continue;
        /* told only of what this call removed: carved and a carve run may sweep at once */
        bool gone;
        if (terms_only) {
            char kname[NAME_MAX + 2];
            snprintf(kname, sizeof(kname), "/%s", e->d_name);
            gone = shm_unlink(kname) == 0;
        } else {
            gone = carve_slice_unlink(shm) == 0;
        }
        if (!gone)
            continue;
        if (removed)
            removed(shm, terms_only, pid, uid, arg);
        n++;
    }
    closedir(dir);
    return n;
}

void carve_slice_terms_owner(const struct carve_slice *s, uid_t *uid, mode_t *mode)
{
    *uid = s->terms_uid;
    *mode = s->terms_mode;
}

uid_t carve_slice_table_owner(const struct carve_slice *s)
{
    return s->table_uid;
}

static bool object_size_at_least(const char *name, size_t want)
{
    struct stat st;
    int fd = carve_shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return false;
    bool ok = fstat(fd, &st) == 0 && st.st_size >= (off_t)want;
    close(fd);
    return ok;
}

bool carve_slice_head_ok(const struct carve_slice *s)
{
    return s->t->magic == SLICE_MAGIC && s->t->version == SLICE_VERSION &&
           s->t->size == sizeof(*s->t);
}

bool carve_slice_intact(const char *shm_name)
{
    char kname[256];
    return terms_name(shm_name, kname, sizeof(kname)) == 0 &&
           object_size_at_least(shm_name, sizeof(struct slice_table)) &&
           object_size_at_least(kname, sizeof(struct slice_terms));
}

bool carve_slice_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n < CARVE_SLICE_NAME_MAX && strspn(name, CARVE_SLICE_NAME_CHARS) == n &&
           strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

uint64_t carve_proc_start_time(pid_t pid)
{
    struct carve_proc_stat st;
    return carve_proc_stat(pid, &st) == 0 ? st.start : 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Whether o names a process: not free, not being cleared. */
static bool owner_is_process(uint64_t o)
{
    return o != SLOT_FREE && o != SLOT_REAPING && SLOT_OWNER_PID(o) > 0;
}

static bool owner_local(const struct carve_slice *s, uint64_t o)
{
    return SLOT_OWNER_NS(o) == s->self_ns;
}

/* Whether the process that owns a slot, one of this process's PID namespace, is gone. A slot
 * of another namespace is never judged here: its pid names another process here, or none
 * (every container's first process is 1). */
static bool slot_owner_dead(const struct carve_slice *s, struct slice_slot *sl, uint64_t owner)
{
    if (!owner_is_process(owner) || !owner_local(s, owner))
        return false;
    pid_t pid = SLOT_OWNER_PID(owner);
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    /* /proc/PID is this namespace's PID only where /proc is its own */
    if (!s->proc_own)
        return false;
    /* A gone process is seen at once above. Reading /proc to catch a reused pid costs a few
     * microseconds per slot, and a storm of refused admissions would pay it for every
     * slot every time: a pid cannot be reused within the interval, so check once per it. */
    uint64_t now = now_ns(), last = atomic_load(&sl->reuse_checked_ns);
    if (now - last < REUSE_CHECK_NS)
        return false;
    atomic_store(&sl->reuse_checked_ns, now);
    uint64_t start = atomic_load(&sl->start_time);
    uint64_t current = carve_proc_start_time(pid);
    /* an unreadable /proc entry (hidepid) proves nothing: keep it */
    return start && current && start != current;
}

static void slot_clear(struct slice_slot *sl)
{
    for (int d = 0; d < CARVE_SLICE_MAX_DEVICES; d++) {
        atomic_store(&sl->used[d], 0);
        atomic_store(&sl->reserving[d], 0);
    }
    atomic_store(&sl->start_time, 0);
    atomic_store(&sl->reuse_checked_ns, 0);
}

/* Clears slot i if it still holds owner; true when this caller cleared it. */
static bool take_slot(struct slice_table *t, uint32_t i, uint64_t owner)
{
    struct slice_slot *sl = &t->slot[i];
    if (!atomic_compare_exchange_strong(&sl->owner, &owner, SLOT_REAPING))
        return false;
    slot_clear(sl);
    atomic_store(&sl->owner, SLOT_FREE);
    return true;
}

/* Takes slot i from a dead owner; true when this caller cleared it. */
static bool reap_slot(const struct carve_slice *s, uint32_t i)
{
    struct slice_slot *sl = &s->t->slot[i];
    uint64_t owner = atomic_load(&sl->owner);
    return slot_owner_dead(s, sl, owner) && take_slot(s->t, i, owner);
}

int carve_slice_reap(struct carve_slice *s)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS; i++)
        n += reap_slot(s, i);
    return n;
}

/* The start time of pid as the slot keeps it: our own by /proc/self, right wherever /proc
 * is mounted from; another pid's (tests) only where /proc/PID is that pid. */
static uint64_t start_of(const struct carve_slice *s, pid_t pid)
{
    struct carve_proc_stat st;
    if (pid == getpid())
        return carve_proc_stat_self(&st) == 0 ? st.start : 0;
    return s->proc_own ? carve_proc_start_time(pid) : 0;
}

static bool claim_slot(const struct carve_slice *s, uint32_t i, pid_t pid)
{
    struct slice_table *t = s->t;
    uint64_t expect = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&t->slot[i].owner, &expect, SLOT_OWNER(s->self_ns, pid)))
        return false;
    slot_clear(&t->slot[i]);
    atomic_store(&t->slot[i].start_time, start_of(s, pid));
    uint32_t hw = atomic_load(&t->slots_hw);
    while (hw < i + 1 && !atomic_compare_exchange_weak(&t->slots_hw, &hw, i + 1))
        ;
    return true;
}

int carve_slice_attach(struct carve_slice *s, pid_t pid)
{
    know_self(s);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < CARVE_SLICE_MAX_PROCS; i++)
            if (claim_slot(s, i, pid))
                return (int)i;
        if (carve_slice_reap(s) == 0)
            break;
    }
    return -ENOSPC;
}

void carve_slice_detach(struct carve_slice *s, int slot)
{
    if (slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return;
    uint64_t owner = atomic_load(&s->t->slot[slot].owner);
    if (owner_is_process(owner))
        take_slot(s->t, (uint32_t)slot, owner);
}

int carve_slice_forget_pid(struct carve_slice *s, pid_t pid)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    if (pid <= 0)
        return 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS; i++)
        n += take_slot(t, i, SLOT_OWNER(s->self_ns, pid));
    return n;
}

static bool dev_ok(const struct carve_slice *s, int dev)
{
    return dev >= 0 && dev < s->k->ndev;
}

struct slot_sums {
    uint64_t used, reserving;
};

/* Sums used and reserving over the slots ever claimed. Each slot's reserving is read before
 * its used: an admission adds to used and only then clears reserving, so a reader that finds
 * reserving already cleared is sure to find the bytes in used, and no in-flight commit slips
 * between the two reads unseen. */
static struct slot_sums sum_slots(const struct slice_table *t, int dev)
{
    uint32_t hw = atomic_load(&t->slots_hw);
    struct slot_sums s = {0, 0};
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS; i++) {
        s.reserving += atomic_load(&t->slot[i].reserving[dev]);
        s.used += atomic_load(&t->slot[i].used[dev]);
    }
    return s;
}

static void note_peak(struct slice_dev *d, uint64_t used)
{
    uint64_t peak = atomic_load_explicit(&d->peak, memory_order_relaxed);
    while (used > peak && !atomic_compare_exchange_weak(&d->peak, &peak, used))
        ;
}

static void backoff(int attempt)
{
    if (attempt < 8) {
        for (volatile int i = 0; i < (16 << attempt); i++)
            ;
        return;
    }
    sched_yield();
}

/* One admission round: 1 admitted, 0 denied (does not fit even alone), -1 contended.
 * A slot is shared by its process's threads, so reservations are added and taken back, never
 * stored: two threads reserving at once are both visible in the sum. */
static int admit_round(struct slice_table *t, struct slice_slot *sl, int dev, uint64_t cap,
                       uint64_t bytes)
{
    atomic_fetch_add(&sl->reserving[dev], bytes);
    struct slot_sums sum = sum_slots(t, dev); /* reserving includes our own request */
    if (sum.used + sum.reserving <= cap) {
        /* used first, then reserving: at every instant our bytes are visible somewhere */
        atomic_fetch_add(&sl->used[dev], bytes);
        atomic_fetch_sub(&sl->reserving[dev], bytes);
        note_peak(&t->dev[dev], sum.used + bytes);
        return 1;
    }
    atomic_fetch_sub(&sl->reserving[dev], bytes);
    /* only other admissions in flight stand in the way: worth another try */
    return sum.used > cap || bytes > cap - sum.used ? 0 : -1;
}

int carve_slice_admit(struct carve_slice *s, int slot, int dev, uint64_t bytes)
{
    struct slice_table *t = s->t;
    if (!dev_ok(s, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return -EINVAL;
    struct slice_slot *sl = &t->slot[slot];
    uint64_t cap = s->k->dev[dev].cap;
    if (cap == 0) { /* not capped: record only, one atomic (no sum, no peak) */
        atomic_fetch_add(&sl->used[dev], bytes);
        return 0;
    }
    if (bytes > cap)
        goto deny;
    bool reaped = false;
    for (int attempt = 0; attempt < ADMIT_RETRIES; attempt++) {
        int r = admit_round(t, sl, dev, cap, bytes);
        if (r == 1)
            return 0;
        if (r == 0 || attempt == ADMIT_RETRIES - 1) {
            /* dead processes may hold what we need: clear them once and look again. That
             * includes a process killed inside an admission, whose `reserving` looks like
             * a contender's forever: after the last contended round, reap too */
            if (reaped || carve_slice_reap(s) == 0)
                break;
            reaped = true;
            if (r != 0)
                attempt = -1; /* a full round of tries without the dead reservation */
            continue;
        }
        backoff(attempt);
    }
deny:
    atomic_fetch_add_explicit(&t->dev[dev].denials, 1, memory_order_relaxed);
    return -ENOMEM;
}

void carve_slice_release(struct carve_slice *s, int slot, int dev, uint64_t bytes)
{
    struct slice_table *t = s->t;
    if (!dev_ok(s, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return;
    _Atomic uint64_t *u = &t->slot[slot].used[dev];
    uint64_t cur = atomic_load(u);
    while (!atomic_compare_exchange_weak(u, &cur, cur > bytes ? cur - bytes : 0))
        ;
}

void carve_slice_charge(struct carve_slice *s, int slot, int dev, uint64_t bytes)
{
    struct slice_table *t = s->t;
    if (!dev_ok(s, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return;
    atomic_fetch_add(&t->slot[slot].used[dev], bytes);
    note_peak(&t->dev[dev], sum_slots(t, dev).used);
}

uint64_t carve_slice_used(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? sum_slots(s->t, dev).used : 0;
}

uint64_t carve_slice_cap(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? s->k->dev[dev].cap : 0;
}

uint64_t carve_slice_peak(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? atomic_load(&s->t->dev[dev].peak) : 0;
}

uint64_t carve_slice_denials(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? atomic_load(&s->t->dev[dev].denials) : 0;
}

int carve_slice_ndev(const struct carve_slice *s)
{
    return s->k->ndev;
}

int carve_slice_dev_index(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? s->k->dev[dev].index : -1;
}

const char *carve_slice_name(const struct carve_slice *s)
{
    return s->k->name;
}

int carve_slice_find_uuid(const struct carve_slice *s, const uint8_t uuid[16])
{
    for (int i = 0; i < s->k->ndev; i++)
        if (memcmp(s->k->dev[i].uuid, uuid, 16) == 0)
            return i;
    return -1;
}

int carve_slice_pids(const struct carve_slice *s, unsigned int *out, int max)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS && n < max; i++) {
        uint64_t owner = atomic_load(&t->slot[i].owner);
        if (owner_is_process(owner) && owner_local(s, owner) &&
            !slot_owner_dead(s, &t->slot[i], owner))
            out[n++] = (unsigned int)SLOT_OWNER_PID(owner);
    }
    return n;
}

/* The owners of the claimed slots: of other namespaces, and of ours when locals (those that
 * live: a syscall or two each). */
static int list_owners(const struct carve_slice *s, struct carve_slice_owner *out, int max,
                       bool locals)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS && n < max; i++) {
        struct slice_slot *sl = &t->slot[i];
        uint64_t owner = atomic_load(&sl->owner);
        bool local = owner_local(s, owner);
        if (!owner_is_process(owner) || (local && (!locals || slot_owner_dead(s, sl, owner))))
            continue;
        out[n++] = (struct carve_slice_owner){(int)i, SLOT_OWNER_PID(owner),
                                              SLOT_OWNER_NS(owner), local,
                                              atomic_load(&sl->start_time)};
    }
    return n;
}

int carve_slice_owners(const struct carve_slice *s, struct carve_slice_owner *out, int max)
{
    return list_owners(s, out, max, true);
}

int carve_slice_foreign(const struct carve_slice *s, struct carve_slice_owner *out, int max)
{
    return list_owners(s, out, max, false);
}

bool carve_slice_reap_owner(struct carve_slice *s, const struct carve_slice_owner *o)
{
    if (o->slot < 0 || o->slot >= CARVE_SLICE_MAX_PROCS || o->pid <= 0)
        return false;
    /* the same owner in the same slot, not one of its pid and namespace that came since */
    if (atomic_load(&s->t->slot[o->slot].start_time) != o->start)
        return false;
    return take_slot(s->t, (uint32_t)o->slot, SLOT_OWNER(o->pidns, o->pid));
}

uint64_t carve_slice_slot_used(const struct carve_slice *s, int slot, int dev)
{
    if (!dev_ok(s, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return 0;
    return atomic_load(&s->t->slot[slot].used[dev]);
}

int carve_slice_slot_pid(const struct carve_slice *s, int slot)
{
    if (slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return 0;
    return SLOT_OWNER_PID(atomic_load(&s->t->slot[slot].owner));
}

struct carve_compute carve_slice_compute(const struct carve_slice *s, int dev)
{
    struct carve_compute none = {0, 0, 0};
    return dev_ok(s, dev) ? s->k->dev[dev].compute : none;
}

int carve_slice_board_entry(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? s->k->dev[dev].board_entry : -1;
}

int carve_slice_dev_uuid(const struct carve_slice *s, int dev, uint8_t uuid[16])
{
    if (!dev_ok(s, dev))
        return -EINVAL;
    memcpy(uuid, s->k->dev[dev].uuid, 16);
    return 0;
}

/* At a share of rate_bp, cost_ns of GPU time takes cost_ns * 10000 / rate_bp of wall time. */
static int64_t pace_step(uint64_t cost_ns, uint32_t rate_bp)
{
    if (rate_bp == 0 || rate_bp > CARVE_BP_FULL)
        rate_bp = CARVE_BP_FULL;
    if (cost_ns > (uint64_t)INT64_MAX / CARVE_BP_FULL)
        cost_ns = (uint64_t)INT64_MAX / CARVE_BP_FULL;
    return (int64_t)(cost_ns * CARVE_BP_FULL / rate_bp);
}

/* a + b for b >= 0, saturating: a clock pushed past the end of time stays there */
static int64_t clock_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

void carve_slice_pace_debt(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                           uint64_t now_ns)
{
    if (!dev_ok(s, dev))
        return;
    struct slice_pace *p = &s->t->pace[dev];
    int64_t step = pace_step(cost_ns, rate_bp), now = (int64_t)now_ns;
    int64_t tat = atomic_load(&p->tat_ns), next;
    do
        next = clock_add(tat > now ? tat : now, step);
    while (!atomic_compare_exchange_weak(&p->tat_ns, &tat, next));
    atomic_fetch_add_explicit(&p->charged_ns, cost_ns, memory_order_relaxed);
}

uint64_t carve_slice_pace(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                          uint64_t tau_ns, uint64_t now_ns)
{
    if (!dev_ok(s, dev))
        return 0;
    struct slice_pace *p = &s->t->pace[dev];
    int64_t step = pace_step(cost_ns, rate_bp);
    int64_t now = (int64_t)now_ns, tat = atomic_load(&p->tat_ns), next;
    int64_t horizon = clock_add(now, tau_ns > INT64_MAX ? INT64_MAX : (int64_t)tau_ns);
    do {
        if (tat > horizon)
            return (uint64_t)(tat - horizon);
        /* idle time earns no credit beyond tau: start from now, not from an old tat */
        next = clock_add(tat > now ? tat : now, step);
    } while (!atomic_compare_exchange_weak(&p->tat_ns, &tat, next));
    atomic_fetch_add_explicit(&p->charged_ns, cost_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->launches, 1, memory_order_relaxed);
    return 0;
}

int64_t carve_slice_pace_clock(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? atomic_load(&s->t->pace[dev].tat_ns) : 0;
}

void carve_slice_pace_refund(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                             uint64_t now_ns)
{
    if (!dev_ok(s, dev))
        return;
    struct slice_pace *p = &s->t->pace[dev];
    int64_t step = pace_step(cost_ns, rate_bp), now = (int64_t)now_ns;
    int64_t tat = atomic_load(&p->tat_ns), next;
    do {
        if (tat <= now)
            return;
        next = tat - step > now ? tat - step : now;
    } while (!atomic_compare_exchange_weak(&p->tat_ns, &tat, next));
}

void carve_slice_pace_correct(struct carve_slice *s, int dev, int64_t diff_ns, uint32_t rate_bp,
                              uint64_t now_ns)
{
    if (!dev_ok(s, dev) || diff_ns == 0 || diff_ns == INT64_MIN)
        return;
    struct slice_pace *p = &s->t->pace[dev];
    if (diff_ns > 0) {
        carve_slice_pace_debt(s, dev, (uint64_t)diff_ns, rate_bp, now_ns);
    } else {
        carve_slice_pace_refund(s, dev, (uint64_t)-diff_ns, rate_bp, now_ns);
        /* the GPU time charged is what ran: carved's share from the books where NVML has none */
        uint64_t charged = atomic_load(&p->charged_ns), less = (uint64_t)-diff_ns;
        while (!atomic_compare_exchange_weak(&p->charged_ns, &charged,
                                             charged > less ? charged - less : 0))
            ;
    }
    int64_t q = atomic_load(&p->queue_ns);
    /* a queue clock never set, or already past (the queue drained: what is queued now was
     * admitted after it), is left alone */
    while (q > (int64_t)now_ns && !atomic_compare_exchange_weak(
                    &p->queue_ns, &q,
                    diff_ns > 0 ? clock_add(q, diff_ns) : (q > 1 - diff_ns ? q + diff_ns : 1)))
        ;
}

int64_t carve_slice_queue_clock(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev) ? atomic_load(&s->t->pace[dev].queue_ns) : 0;
}

int64_t carve_slice_turn_admit(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                               uint64_t now_ns)
{
    if (!dev_ok(s, dev))
        return 0;
    struct slice_pace *p = &s->t->pace[dev];
    int64_t now = (int64_t)now_ns, q = atomic_load(&p->queue_ns), next;
    do
        next = clock_add(q > now ? q : now, pace_step(cost_ns, CARVE_BP_FULL));
    while (!atomic_compare_exchange_weak(&p->queue_ns, &q, next));
    carve_slice_pace_debt(s, dev, cost_ns, rate_bp, now_ns); /* the share clock, and charged */
    atomic_fetch_add_explicit(&p->launches, 1, memory_order_relaxed);
    return next;
}

void carve_slice_note_launcher(struct carve_slice *s, int dev, int32_t pid, uint64_t now_ns,
                               uint64_t hold_ns)
{
    if (!dev_ok(s, dev))
        return;
    struct slice_pace *p = &s->t->pace[dev];
    int32_t last = atomic_load_explicit(&p->launcher, memory_order_relaxed);
    if (last == pid)
        return;
    atomic_store_explicit(&p->launcher, pid, memory_order_relaxed);
    if (last != 0)
        atomic_store_explicit(&p->shared_until_ns, now_ns + hold_ns, memory_order_relaxed);
}

uint64_t carve_slice_shared_until(const struct carve_slice *s, int dev)
{
    return dev_ok(s, dev)
               ? atomic_load_explicit(&s->t->pace[dev].shared_until_ns, memory_order_relaxed)
               : 0;
}

void carve_slice_note_held(struct carve_slice *s, int dev, uint64_t ns)
{
    if (dev_ok(s, dev))
        atomic_fetch_add_explicit(&s->t->pace[dev].held_ns, ns, memory_order_relaxed);
}

_Atomic uint32_t *carve_slice_ran_flag(struct carve_slice *s)
{
    return &s->t->ran;
}

bool carve_slice_take_ran(struct carve_slice *s)
{
    return atomic_exchange_explicit(&s->t->ran, 0, memory_order_relaxed) != 0;
}

struct carve_pace_stats carve_slice_pace_stats(const struct carve_slice *s, int dev)
{
    struct carve_pace_stats st = {0, 0, 0};
    if (dev_ok(s, dev)) {
        const struct slice_pace *p = &s->t->pace[dev];
        st.charged_ns = atomic_load(&p->charged_ns);
        st.held_ns = atomic_load(&p->held_ns);
        st.launches = atomic_load(&p->launches);
    }
    return st;
}
