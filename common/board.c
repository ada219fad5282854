/* board.c - the per-GPU board of slices with compute settings (see board.h). */
#include "board.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "slice.h"

#define BOARD_MAGIC 0x6361727665424f44ULL /* "carveBOD" */
#define BOARD_VERSION 2
#define JOIN_TRIES 8

/* The settings: written by joiners only, so that carved can make them read-only to tenants. */
struct board_entry {
    _Atomic int32_t pid; /* owner (`carve run` or carved), 0 when free */
    uint32_t pad;
    uint64_t start_time;
    struct carve_compute compute;
    char name[CARVE_SLICE_NAME_MAX];
};

struct board_table {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    uint8_t uuid[16];
    struct board_entry entry[CARVE_BOARD_ENTRIES];
};

/* The activity: written by tenants on their launches, a cache line per entry. */
struct board_activity {
    struct {
        _Atomic uint64_t last_launch_ns;
        _Atomic uint64_t queue_end_ns;
        _Atomic uint64_t given_until_ns; /* its window is left to the next from queue_end_ns */
    } __attribute__((aligned(64))) entry[CARVE_BOARD_ENTRIES];
};

struct carve_board {
    struct board_table *t;
    struct board_activity *act;
    int fd;
    bool writable; /* a joiner's mapping; tenants' is read-only */
    char name[64];
    char act_name[80];
};

void carve_board_name(const uint8_t uuid[16], char *buf, size_t len)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    snprintf(buf, len, "/carve-board-%s", hex);
}

/* Maps the activity object beside the board (creating it, mode 0666, when asked); 0 or
 * -errno. Called with the board's lock held when create. */
static int activity_map(struct carve_board *b, bool create)
{
    snprintf(b->act_name, sizeof(b->act_name), "%s.activity", b->name);
    int fd = carve_shm_open(b->act_name, O_RDWR | (create ? O_CREAT : 0), 0666);
    struct stat st;
    if (create && geteuid() == 0 && (fd == -EACCES || (fd >= 0 && fstat(fd, &st) == 0 &&
                                                       st.st_uid != 0))) {
        /* a user's, made before root's board (as board_map): made again, root's */
        if (fd >= 0)
            close(fd);
        shm_unlink(b->act_name);
        fd = carve_shm_open(b->act_name, O_RDWR | O_CREAT | O_EXCL, 0666);
    }
    if (fd < 0)
        return fd;
    int r = 0;
    if (fstat(fd, &st) < 0) {
        r = -errno;
    } else if (st.st_size == 0 && create) {
        fchmod(fd, 0666); /* past the umask: every tenant on the GPU notes its launches */
        if (ftruncate(fd, sizeof(struct board_activity)) < 0)
            r = -errno;
    } else if (st.st_size != (off_t)sizeof(struct board_activity)) {
        r = -EPROTO;
    }
    void *p = r ? MAP_FAILED
                : mmap(NULL, sizeof(struct board_activity), PROT_READ | PROT_WRITE, MAP_SHARED,
                       fd, 0);
    if (!r && p == MAP_FAILED)
        r = -errno;
    close(fd);
    if (!r)
        b->act = p;
    return r;
}

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *name)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, name, strerror(-code));
    return code;
}

static bool entry_dead(const struct board_entry *e)
{
    int32_t pid = atomic_load(&e->pid);
    if (pid <= 0)
        return false;
    /* a zombie is dead: a carved stopped under a parent that has not reaped it yet held its
       slices' places, and the next carved's slices were placed after them */
    if (!carve_proc_running(pid))
        return true;
    uint64_t now = carve_proc_start_time(pid);
    return e->start_time && now && now != e->start_time; /* pid reused */
}

/* Joiners (create) open the board read-write, creating it with mode and leaving it locked;
 * tenants map it read-only. Then the activity beside it. 0 or -errno. */
static int board_map(const uint8_t uuid[16], bool create, bool writable, mode_t mode,
                     struct carve_board **out)
{
    struct carve_board *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    carve_board_name(uuid, b->name, sizeof(b->name));
    writable = writable || create;
    b->writable = writable;
    int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
    /* root (carved) joins only a board of root's: one a user made first (anyone may make a
       file in /dev/shm, and the board is gone after a reboot or its last slice) was that
       user's to rewrite, shares included: it is removed, and made again */
    bool own_only = create && geteuid() == 0;
    for (int tries = 0; tries < JOIN_TRIES; tries++) {
        int fd = carve_shm_open(b->name, create ? O_RDWR | O_CREAT : writable ? O_RDWR : O_RDONLY,
                                mode);
        if (fd == -EACCES && own_only) /* a user's, where protected_regular refuses O_CREAT */
            fd = carve_shm_open(b->name, O_RDONLY, 0);
        if (fd < 0) {
            free(b);
            return fd;
        }
        struct stat owner;
        if (own_only && fstat(fd, &owner) == 0 && owner.st_uid != 0) {
            /* by name, so only while the name is still that board: another root joiner may
               have made root's in its place since (it would lose it) */
            char path[sizeof(b->name) + 16];
            struct stat named;
            snprintf(path, sizeof(path), "/dev/shm%s", b->name);
            close(fd);
            if (stat(path, &named) == 0 && named.st_ino == owner.st_ino &&
                named.st_dev == owner.st_dev) {
                shm_unlink(b->name);
                char act[sizeof(b->act_name)];
                snprintf(act, sizeof(act), "%s.activity", b->name);
                shm_unlink(act);
            }
            continue;
        }
        if (create && flock(fd, LOCK_EX) < 0) {
            close(fd);
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || (create && st.st_nlink == 0)) {
            close(fd); /* removed by its last user while we waited: open the new one */
            continue;
        }
        /* past the umask, on a board this joiner made; a tighter mode (carved's) is applied
           to a board made by others too, which only its owner or root can do */
        if (create && (st.st_size == 0 || (mode & 0022) == 0))
            fchmod(fd, mode);
        if (st.st_size == 0 && create) {
            if (ftruncate(fd, sizeof(struct board_table)) < 0) {
                int r = -errno;
                close(fd);
                free(b);
                return r;
            }
            st.st_size = sizeof(struct board_table);
        }
        if (st.st_size != (off_t)sizeof(struct board_table)) {
            close(fd);
            free(b);
            return -EPROTO;
        }
        void *p = mmap(NULL, sizeof(struct board_table), prot, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int r = -errno;
            close(fd);
            free(b);
            return r;
        }
        b->t = p;
        b->fd = fd;
        if (b->t->magic == 0 && create) {
            b->t->version = BOARD_VERSION;
            b->t->size = sizeof(struct board_table);
            memcpy(b->t->uuid, uuid, 16);
            atomic_thread_fence(memory_order_release);
            b->t->magic = BOARD_MAGIC;
        }
        if (b->t->magic != BOARD_MAGIC || b->t->version != BOARD_VERSION ||
            b->t->size != sizeof(struct board_table)) {
            carve_board_close(b);
            return -EPROTO;
        }
        int r = activity_map(b, create);
        if (r < 0) {
            carve_board_close(b);
            return r;
        }
        *out = b;
        return 0;
    }
    free(b);
    return -EAGAIN;
}

void carve_board_close(struct carve_board *b)
{
    if (!b)
        return;
    if (b->t)
        munmap(b->t, sizeof(struct board_table));
    if (b->act)
        munmap(b->act, sizeof(struct board_activity));
    close(b->fd);
    free(b);
}

int carve_board_open(const uint8_t uuid[16], struct carve_board **out)
{
    return board_map(uuid, false, false, 0, out);
}

int carve_board_attach(const uint8_t uuid[16], struct carve_board **out)
{
    return board_map(uuid, false, true, 0, out);
}

int carve_board_join(const uint8_t uuid[16], mode_t mode, const struct carve_compute *c,
                     const char *name, pid_t pid, struct carve_board **out, int *entry,
                     char *err, size_t errlen)
{
    struct carve_board *b;
    int r = board_map(uuid, true, true, mode, &b);
    if (r < 0) {
        char board[64];
        carve_board_name(uuid, board, sizeof(board));
        if (r == -EPROTO)
            return fail(err, errlen, r, "the GPU's board /dev/shm%s was made by another "
                        "version of carve (%s); run this slice when that version's slices on "
                        "the GPU have ended", board);
        fail(err, errlen, r, "cannot open the GPU's board /dev/shm%s: %s", board);
        /* -EDQUOT says a guarantee was refused (carved's API names that refusal): a quota
           on /dev/shm is told as a full file system */
        return r == -EDQUOT ? -ENOSPC : r;
    }
    struct board_table *t = b->t;
    uint64_t guaranteed = 0;
    int free_entry = -1;
    for (int i = 0; i < CARVE_BOARD_ENTRIES; i++) {
        struct board_entry *e = &t->entry[i];
        if (entry_dead(e))
            atomic_store(&e->pid, 0);
        if (atomic_load(&e->pid) == 0) {
            if (free_entry < 0)
                free_entry = i;
            continue;
        }
        if (e->compute.mode == CARVE_COMPUTE_GUARANTEE)
            guaranteed += e->compute.share_bp;
    }
    if (c->mode == CARVE_COMPUTE_GUARANTEE && guaranteed + c->share_bp > CARVE_BP_FULL) {
        if (err && errlen) {
            char mine[32], left[64] = "no guarantee is left to give: ask for";
            carve_format_compute(c, mine, sizeof(mine));
            /* with the GPU fully guaranteed, "0.00%+ or less" would name a share that
             * --compute refuses: only a cap can still be given */
            if (guaranteed < CARVE_BP_FULL)
                snprintf(left, sizeof(left), "ask for %llu.%02llu%%+ or less, or",
                         (unsigned long long)((CARVE_BP_FULL - guaranteed) / 100),
                         (unsigned long long)((CARVE_BP_FULL - guaranteed) % 100));
            snprintf(err, errlen, "--compute %s: the slices on this GPU already hold "
                     "guarantees of %llu.%02llu%%, and guarantees may add up to 100%% at "
                     "most; %s a cap (without '+')", mine,
                     (unsigned long long)(guaranteed / 100),
                     (unsigned long long)(guaranteed % 100), left);
        }
        carve_board_leave(b, -1);
        return -EDQUOT;
    }
    int want = *entry; /* a slice adopted again keeps its place: its tenants know it */
    if (want >= 0 && want < CARVE_BOARD_ENTRIES && atomic_load(&t->entry[want].pid) == 0)
        free_entry = want;
    if (free_entry < 0) {
        snprintf(err, errlen, "the GPU's board is full (%d slices with compute settings)",
                 CARVE_BOARD_ENTRIES);
        carve_board_leave(b, -1);
        return -ENOSPC;
    }
    struct board_entry *e = &t->entry[free_entry];
    e->start_time = carve_proc_start_time(pid);
    e->compute = *c;
    snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
    atomic_store(&b->act->entry[free_entry].last_launch_ns, 0);
    atomic_store(&b->act->entry[free_entry].queue_end_ns, 0);
    atomic_store(&b->act->entry[free_entry].given_until_ns, 0);
    atomic_store(&e->pid, (int32_t)pid);
    flock(b->fd, LOCK_UN);
    *out = b;
    *entry = free_entry;
    return 0;
}

void carve_board_leave(struct carve_board *b, int entry)
{
    if (!b)
        return;
    if (!b->writable) { /* a tenant's mapping: the entry is not its to clear */
        carve_board_close(b);
        return;
    }
    flock(b->fd, LOCK_EX); /* held already after a refused join: flock converts, no harm */
    if (entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store(&b->t->entry[entry].pid, 0);
    bool empty = true;
    for (int i = 0; i < CARVE_BOARD_ENTRIES && empty; i++)
        empty = atomic_load(&b->t->entry[i].pid) == 0 || entry_dead(&b->t->entry[i]);
    if (empty) {
        shm_unlink(b->act_name);
        shm_unlink(b->name); /* a joiner waiting on the lock sees nlink 0 and starts anew */
    }
    flock(b->fd, LOCK_UN);
    carve_board_close(b);
}

void carve_board_note_launch(struct carve_board *b, int entry, uint64_t now_ns)
{
    if (!b || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
        return;
    _Atomic uint64_t *last = &b->act->entry[entry].last_launch_ns;
    uint64_t was = atomic_load_explicit(last, memory_order_relaxed);
    if (now_ns > was && now_ns - was > CARVE_BOARD_NOTE_NS) /* never moved back */
        atomic_store_explicit(last, now_ns, memory_order_relaxed);
}

/* Whether entry i's queue end q is one its slice could have noted: no further than horizon_ns
 * past its last noted launch, or past now_ns when that launch is noted later (forged too: a
 * launch note never moves back, and one at 2^62 would make any end believable). The activity
 * is every tenant's to write, and a queue end forged far ahead moved every slice's window by
 * all of its width: the slice before a 30% slice of 10 ms kernels then ran into its window,
 * lengthening its samples, and in 3 runs of 20 the 30% slice, charged as varying, got 15%
 * (2026-11-28). */
static bool queue_end_plausible(const struct carve_board *b, int i, uint64_t q, uint64_t now_ns,
                                uint64_t horizon_ns)
{
    uint64_t last = atomic_load_explicit(&b->act->entry[i].last_launch_ns, memory_order_relaxed);
    if (last > now_ns)
        last = now_ns;
    return q <= last || q - last <= horizon_ns;
}

void carve_board_note_queue(struct carve_board *b, int entry, uint64_t end_ns, uint64_t now_ns,
                            uint64_t horizon_ns)
{
    if (!b || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
        return;
    /* the slice's processes race here; the latest end wins, but not one the readers do not
       believe, which none of them noted */
    _Atomic uint64_t *q = &b->act->entry[entry].queue_end_ns;
    uint64_t was = atomic_load_explicit(q, memory_order_relaxed);
    while ((end_ns > was || !queue_end_plausible(b, entry, was, now_ns, horizon_ns)) &&
           !atomic_compare_exchange_weak_explicit(q, &was, end_ns, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

uint64_t carve_board_busy_until(const struct carve_board *b, int entry, uint64_t now_ns,
                                uint64_t horizon_ns)
{
    uint64_t busy = 0;
    for (int i = 0; b && i < CARVE_BOARD_ENTRIES; i++) {
        if (i == entry || atomic_load_explicit(&b->t->entry[i].pid, memory_order_relaxed) <= 0)
            continue;
        uint64_t q = atomic_load_explicit(&b->act->entry[i].queue_end_ns, memory_order_relaxed);
        if (q > busy && queue_end_plausible(b, i, q, now_ns, horizon_ns))
            busy = q;
    }
    return busy;
}

void carve_board_note_given(struct carve_board *b, int entry, uint64_t until_ns)
{
    if (b && entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store_explicit(&b->act->entry[entry].given_until_ns, until_ns,
                              memory_order_relaxed);
}

uint64_t carve_board_given(const struct carve_board *b, int entry, uint64_t now_ns,
                          uint64_t horizon_ns, uint64_t *from_ns)
{
    *from_ns = 0;
    if (!b || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
        return 0;
    uint64_t from =
        atomic_load_explicit(&b->act->entry[entry].queue_end_ns, memory_order_relaxed);
    if (!queue_end_plausible(b, entry, from, now_ns, horizon_ns))
        return 0; /* nothing given: from a forged end, it would be given from any time */
    *from_ns = from;
    return atomic_load_explicit(&b->act->entry[entry].given_until_ns, memory_order_relaxed);
}

int carve_board_peers(const struct carve_board *b, int entry, uint64_t now_ns,
                      uint64_t active_ns, struct carve_peer *peers, int max, int *me)
{
    int n = 0;
    *me = -1;
    for (int i = 0; b && i < CARVE_BOARD_ENTRIES && n < max; i++) {
        const struct board_entry *e = &b->t->entry[i];
        if (atomic_load_explicit(&e->pid, memory_order_relaxed) <= 0)
            continue;
        uint64_t last =
            atomic_load_explicit(&b->act->entry[i].last_launch_ns, memory_order_relaxed);
        if (i == entry)
            *me = n;
        peers[n].compute = e->compute;
        peers[n].entry = i;
        /* a launch noted after this reader took its clock is newer than now: active (the
         * unsigned difference wrapped, and a busy latency slice read as idle for a refresh,
         * which let a batch slice queue a burst of work ahead of it) */
        peers[n].active = last && (last >= now_ns || now_ns - last <= active_ns);
        n++;
    }
    return n;
}
