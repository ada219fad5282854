/* slice.c - the slice table in shared memory and its lock-free admission. */
#include "slice.h"
#include "slice_layout.h"

#include <errno.h>
#include <fcntl.h>
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
};

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *arg)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, arg, strerror(-code));
    return code;
}

static int map_table(int fd, struct carve_slice **out)
{
    void *p = mmap(NULL, sizeof(struct slice_table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    struct carve_slice *s = calloc(1, sizeof(*s));
    if (!s) {
        munmap(p, sizeof(struct slice_table));
        return -ENOMEM;
    }
    s->t = p;
    *out = s;
    return 0;
}

int carve_slice_create(const char *shm_name, const struct carve_slice_spec *spec,
                       struct carve_slice **out, char *err, size_t errlen)
{
    if (spec->ndev < 0 || spec->ndev > CARVE_SLICE_MAX_DEVICES)
        return fail(err, errlen, -EINVAL, "slice %s: bad device count (%s)", shm_name);
    int fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return fail(err, errlen, -errno, "cannot create slice %s: %s", shm_name);
    int r = ftruncate(fd, sizeof(struct slice_table)) < 0 ? -errno : 0;
    if (r == 0)
        r = map_table(fd, out);
    close(fd);
    if (r < 0) {
        shm_unlink(shm_name);
        return fail(err, errlen, r, "cannot set up slice %s: %s", shm_name);
    }
    struct slice_table *t = (*out)->t; /* fresh from ftruncate: all zero */
    t->version = SLICE_VERSION;
    t->size = sizeof(*t);
    snprintf(t->name, sizeof(t->name), "%s", spec->name);
    t->ndev = spec->ndev;
    t->owner_pid = getpid();
    t->created = (uint64_t)time(NULL);
    for (int i = 0; i < spec->ndev; i++) {
        memcpy(t->dev[i].uuid, spec->dev[i].uuid, 16);
        t->dev[i].index = spec->dev[i].index;
        t->dev[i].cap = spec->dev[i].cap;
    }
    /* the magic goes last: a tenant that maps early sees an unfinished table as invalid */
    atomic_thread_fence(memory_order_release);
    t->magic = SLICE_MAGIC;
    return 0;
}

/* Checks the head of a mapped object: magic, version, size. 0 or -EPROTO with a message. */
static int check_head(const char *shm_name, int fd, off_t size, char *err, size_t errlen)
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
    if (head.size != sizeof(struct slice_table) || size != (off_t)sizeof(struct slice_table))
        return fail(err, errlen, -EPROTO, "slice %s has the wrong size for its version (%s)",
                    shm_name);
    return 0;
}

int carve_slice_open(const char *shm_name, struct carve_slice **out, char *err, size_t errlen)
{
    int fd = shm_open(shm_name, O_RDWR, 0);
    if (fd < 0)
        return fail(err, errlen, -errno, "cannot open slice %s: %s", shm_name);
    struct stat st;
    int r = fstat(fd, &st) < 0 ? -errno : 0;
    if (r < 0) {
        fail(err, errlen, r, "cannot open slice %s: %s", shm_name);
        goto out;
    }
    if ((r = check_head(shm_name, fd, st.st_size, err, errlen)) < 0)
        goto out;
    if ((r = map_table(fd, out)) < 0)
        fail(err, errlen, r, "cannot map slice %s: %s", shm_name);
out:
    close(fd);
    return r;
}

void carve_slice_close(struct carve_slice *s)
{
    if (!s)
        return;
    munmap(s->t, sizeof(struct slice_table));
    free(s);
}

int carve_slice_unlink(const char *shm_name)
{
    return shm_unlink(shm_name) < 0 ? -errno : 0;
}

uint64_t carve_proc_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* the command name may hold spaces and parentheses: fields resume after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++) /* p is at the space before field 3 */
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool slot_owner_dead(struct slice_slot *sl, int32_t pid)
{
    if (pid <= 0)
        return false;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    /* A gone process is seen at once above. Reading /proc to catch a reused pid costs a few
     * microseconds per slot, and a storm of refused admissions would pay it for every
     * slot every time: a pid cannot be reused within the interval, so check once per it. */
    uint64_t now = now_ns(), last = atomic_load(&sl->reuse_checked_ns);
    if (now - last < REUSE_CHECK_NS)
        return false;
    atomic_store(&sl->reuse_checked_ns, now);
    uint64_t start = atomic_load(&sl->start_time);
    uint64_t current = carve_proc_start_time(pid);
    /* an unreadable /proc entry (hidepid, another namespace) proves nothing: keep it */
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

/* Takes slot i from a dead owner; true when this caller cleared it. */
static bool reap_slot(struct slice_table *t, uint32_t i)
{
    struct slice_slot *sl = &t->slot[i];
    int32_t pid = atomic_load(&sl->pid);
    if (!slot_owner_dead(sl, pid))
        return false;
    if (!atomic_compare_exchange_strong(&sl->pid, &pid, SLOT_REAPING))
        return false;
    slot_clear(sl);
    atomic_store(&sl->pid, SLOT_FREE);
    return true;
}

int carve_slice_reap(struct carve_slice *s)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS; i++)
        n += reap_slot(t, i);
    return n;
}

static bool claim_slot(struct slice_table *t, uint32_t i, pid_t pid)
{
    int32_t expect = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&t->slot[i].pid, &expect, (int32_t)pid))
        return false;
    slot_clear(&t->slot[i]);
    atomic_store(&t->slot[i].start_time, carve_proc_start_time(pid));
    uint32_t hw = atomic_load(&t->slots_hw);
    while (hw < i + 1 && !atomic_compare_exchange_weak(&t->slots_hw, &hw, i + 1))
        ;
    return true;
}

int carve_slice_attach(struct carve_slice *s, pid_t pid)
{
    struct slice_table *t = s->t;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < CARVE_SLICE_MAX_PROCS; i++)
            if (claim_slot(t, i, pid))
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
    struct slice_slot *sl = &s->t->slot[slot];
    int32_t pid = atomic_load(&sl->pid);
    if (pid <= 0 || !atomic_compare_exchange_strong(&sl->pid, &pid, SLOT_REAPING))
        return;
    slot_clear(sl);
    atomic_store(&sl->pid, SLOT_FREE);
}

static bool dev_ok(const struct slice_table *t, int dev)
{
    return dev >= 0 && dev < t->ndev;
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
static int admit_round(struct slice_table *t, struct slice_slot *sl, int dev, uint64_t bytes)
{
    uint64_t cap = t->dev[dev].cap;
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
    if (!dev_ok(t, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return -EINVAL;
    struct slice_slot *sl = &t->slot[slot];
    if (t->dev[dev].cap == 0) { /* not capped: record only, one atomic (no sum, no peak) */
        atomic_fetch_add(&sl->used[dev], bytes);
        return 0;
    }
    if (bytes > t->dev[dev].cap)
        goto deny;
    bool reaped = false;
    for (int attempt = 0; attempt < ADMIT_RETRIES; attempt++) {
        int r = admit_round(t, sl, dev, bytes);
        if (r == 1)
            return 0;
        if (r == 0) {
            /* dead processes may hold what we need: clear them once and look again */
            if (reaped || carve_slice_reap(s) == 0)
                break;
            reaped = true;
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
    if (!dev_ok(t, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return;
    _Atomic uint64_t *u = &t->slot[slot].used[dev];
    uint64_t cur = atomic_load(u);
    while (!atomic_compare_exchange_weak(u, &cur, cur > bytes ? cur - bytes : 0))
        ;
}

void carve_slice_charge(struct carve_slice *s, int slot, int dev, uint64_t bytes)
{
    struct slice_table *t = s->t;
    if (!dev_ok(t, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return;
    atomic_fetch_add(&t->slot[slot].used[dev], bytes);
    note_peak(&t->dev[dev], sum_slots(t, dev).used);
}

uint64_t carve_slice_used(const struct carve_slice *s, int dev)
{
    return dev_ok(s->t, dev) ? sum_slots(s->t, dev).used : 0;
}

uint64_t carve_slice_cap(const struct carve_slice *s, int dev)
{
    return dev_ok(s->t, dev) ? s->t->dev[dev].cap : 0;
}

uint64_t carve_slice_peak(const struct carve_slice *s, int dev)
{
    return dev_ok(s->t, dev) ? atomic_load(&s->t->dev[dev].peak) : 0;
}

uint64_t carve_slice_denials(const struct carve_slice *s, int dev)
{
    return dev_ok(s->t, dev) ? atomic_load(&s->t->dev[dev].denials) : 0;
}

int carve_slice_ndev(const struct carve_slice *s)
{
    return s->t->ndev;
}

int carve_slice_dev_index(const struct carve_slice *s, int dev)
{
    return dev_ok(s->t, dev) ? s->t->dev[dev].index : -1;
}

const char *carve_slice_name(const struct carve_slice *s)
{
    return s->t->name;
}

int carve_slice_find_uuid(const struct carve_slice *s, const uint8_t uuid[16])
{
    for (int i = 0; i < s->t->ndev; i++)
        if (memcmp(s->t->dev[i].uuid, uuid, 16) == 0)
            return i;
    return -1;
}

int carve_slice_pids(const struct carve_slice *s, unsigned int *out, int max)
{
    struct slice_table *t = s->t;
    uint32_t hw = atomic_load(&t->slots_hw);
    int n = 0;
    for (uint32_t i = 0; i < hw && i < CARVE_SLICE_MAX_PROCS && n < max; i++) {
        int32_t pid = atomic_load(&t->slot[i].pid);
        if (pid > 0 && !slot_owner_dead(&t->slot[i], pid))
            out[n++] = (unsigned int)pid;
    }
    return n;
}

uint64_t carve_slice_slot_used(const struct carve_slice *s, int slot, int dev)
{
    if (!dev_ok(s->t, dev) || slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return 0;
    return atomic_load(&s->t->slot[slot].used[dev]);
}

int carve_slice_slot_pid(const struct carve_slice *s, int slot)
{
    if (slot < 0 || slot >= CARVE_SLICE_MAX_PROCS)
        return 0;
    return atomic_load(&s->t->slot[slot].pid);
}
