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
#include "sigbus_guard.h"
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
    struct board_activity *act; /* a tenant's only: joiners write the activity with pwrite */
    int fd;
    int act_fd;    /* a joiner's, until its join has cleared its entry's activity; else -1 */
    bool writable; /* a joiner's mapping; tenants' is read-only */
    bool guarded;  /* a tenant's: both mappings are under the SIGBUS guard */
    atomic_bool cut; /* a guarded mapping was cut short: zero pages in its place */
    struct stat t_id, act_id; /* a tenant's: the objects mapped (st_dev and st_ino) */
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

/* Opens the activity object beside the board (creating it, mode 0666, when create), its size
 * made right when it is short: a tenant may have cut it (every tenant may write it), and a
 * longer one only has room to spare. The fd, or -errno. Called with the board's lock held
 * when create. */
static int activity_open(struct carve_board *b, bool create)
{
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
    } else if (st.st_size < (off_t)sizeof(struct board_activity)) {
        if (st.st_size == 0 && create)
            fchmod(fd, 0666); /* past the umask: every tenant on the GPU notes its launches */
        if (ftruncate(fd, sizeof(struct board_activity)) < 0)
            r = -errno;
    }
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* Maps a tenant's object read from fd at *addr (anywhere when NULL; over the same place, the
 * guard's zero pages, when not), noting which object it is in *id. 0 or -errno. */
static int tenant_map(int fd, void **addr, size_t len, int prot, struct stat *id)
{
    if (fstat(fd, id) < 0)
        return -errno;
    void *p = mmap(*addr, len, prot, MAP_SHARED | (*addr ? MAP_FIXED : 0), fd, 0);
    if (p == MAP_FAILED) {
        int r = -errno;
        if (*addr) /* a failed MAP_FIXED may leave nothing there: zero pages again */
            mmap(*addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        return r;
    }
    *addr = p;
    return 0;
}

/* A tenant's activity, mapped, and guarded as the board's table is: a cut of either object
 * no longer kills the tenant (sigbus_guard.h). 0 or -errno. */
static int tenant_activity(struct carve_board *b)
{
    int fd = activity_open(b, false);
    if (fd < 0)
        return fd;
    void *p = NULL;
    int r = tenant_map(fd, &p, sizeof(struct board_activity), PROT_READ | PROT_WRITE,
                       &b->act_id);
    close(fd);
    if (r < 0)
        return r;
    b->act = p;
    if (b->guarded && carve_sigbus_guard(b->act, sizeof(struct board_activity),
                                         PROT_READ | PROT_WRITE, &b->cut) < 0) {
        carve_sigbus_unguard(b->t); /* both or neither: reattaching maps both */
        b->guarded = false;
    }
    return 0;
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
       slices' places, and the next carved's slices were placed after them; a reused pid is
       another process */
    return !carve_proc_alive_since(pid, e->start_time);
}

/* Joiners (create) open the board read-write, creating it with mode and leaving it locked;
 * tenants map it read-only. Then the activity beside it. 0 or -errno. */
static int board_map(const uint8_t uuid[16], bool create, bool writable, mode_t mode,
                     struct carve_board **out)
{
    struct carve_board *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->act_fd = -1;
    carve_board_name(uuid, b->name, sizeof(b->name));
    snprintf(b->act_name, sizeof(b->act_name), "%s.activity", b->name);
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
                shm_unlink(b->act_name);
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
        if (!writable || (create && mode == CARVE_BOARD_MODE_SHARED)) {
            /* before its first read: a tenant's could be cut from now on, and a board of
               `carve run` alone by anyone (carved's is root's: a cut there is root's doing) */
            b->t_id = st;
            b->guarded =
                carve_sigbus_guard(b->t, sizeof(struct board_table), prot, &b->cut) == 0;
        }
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
        int r = 0;
        if (create)
            r = b->act_fd = activity_open(b, true); /* written once, by the join */
        else if (!writable)
            r = tenant_activity(b);
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
    if (b->guarded) {
        carve_sigbus_unguard(b->t);
        if (b->act)
            carve_sigbus_unguard(b->act);
    }
    if (b->t)
        munmap(b->t, sizeof(struct board_table));
    if (b->act)
        munmap(b->act, sizeof(struct board_activity));
    if (b->act_fd >= 0)
        close(b->act_fd);
    close(b->fd);
    free(b);
}

int carve_board_open(const uint8_t uuid[16], struct carve_board **out)
{
    return board_map(uuid, false, false, 0, out);
}

bool carve_board_cut(const struct carve_board *b)
{
    return b && atomic_load_explicit(&b->cut, memory_order_relaxed);
}

/* Maps the object open at fd (or -errno) over the tenant's place at addr again, when it is
 * still the one first mapped there (by id): one made anew is another board's, where the
 * slice's entry means nothing. Closes fd. 0 or -errno. */
static int remap_same(int fd, void *addr, size_t len, int prot, const struct stat *id)
{
    if (fd < 0)
        return fd;
    struct stat now;
    int r = fstat(fd, &now) < 0 ? -errno : 0;
    if (!r && (now.st_dev != id->st_dev || now.st_ino != id->st_ino))
        r = -ESTALE;
    else if (!r && now.st_size < (off_t)len)
        r = -EPROTO; /* the table, cut: only a joiner makes it anew */
    if (!r)
        r = tenant_map(fd, &addr, len, prot, &now);
    close(fd);
    return r;
}

int carve_board_reattach(struct carve_board *b)
{
    if (!b || b->writable || !b->guarded)
        return -EINVAL;
    atomic_store(&b->cut, false); /* before: a cut while mapping sets it again */
    int r = remap_same(carve_shm_open(b->name, O_RDONLY, 0), b->t, sizeof(struct board_table),
                       PROT_READ, &b->t_id);
    if (!r) /* activity_open lengthens a cut activity */
        r = remap_same(activity_open(b, false), b->act, sizeof(struct board_activity),
                       PROT_READ | PROT_WRITE, &b->act_id);
    if (r < 0)
        atomic_store(&b->cut, true);
    return r;
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
    /* through the fd, not a mapping: a cut object is lengthened by the write, where a store
       to a mapping of it would kill this joiner (carved, or slurmstepd's plugin); failing
       (no room left in /dev/shm), the entry keeps the last slice's notes for a moment */
    static const uint64_t cleared[3];
    off_t at = (off_t)free_entry * (off_t)sizeof(((struct board_activity *)0)->entry[0]);
    ssize_t written = pwrite(b->act_fd, cleared, sizeof(cleared), at);
    (void)written;
    close(b->act_fd);
    b->act_fd = -1;
    if (carve_board_cut(b)) {
        /* the place was taken in zero pages: nobody else sees it */
        carve_board_close(b);
        char board[64];
        carve_board_name(uuid, board, sizeof(board));
        if (err && errlen)
            snprintf(err, errlen, "the GPU's board /dev/shm%s was truncated by another "
                     "process as this slice joined it; run the slice again", board);
        return -EIO;
    }
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
    if (!carve_board_cut(b) && entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store(&b->t->entry[entry].pid, 0); /* may fault: the board is cut then */
    bool empty = true;
    for (int i = 0; i < CARVE_BOARD_ENTRIES && empty && !carve_board_cut(b); i++)
        empty = atomic_load(&b->t->entry[i].pid) == 0 || entry_dead(&b->t->entry[i]);
    struct stat st;
    if (carve_board_cut(b)) {
        /* its entry went with the cut, and the zero pages say nothing of the others: a board
           made anew since is left to the slices on it, one still cut is removed */
        empty = fstat(b->fd, &st) == 0 && st.st_size < (off_t)sizeof(struct board_table) &&
                st.st_nlink > 0;
    }
    if (empty) {
        shm_unlink(b->act_name);
        shm_unlink(b->name); /* a joiner waiting on the lock sees nlink 0 and starts anew */
    }
    flock(b->fd, LOCK_UN);
    carve_board_close(b);
}

int carve_board_count(const uint8_t uuid[16])
{
    char name[64];
    carve_board_name(uuid, name, sizeof(name));
    int fd = carve_shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    struct board_table *t = malloc(sizeof(*t));
    /* read, not mapped: a board cut short as it is read is a short read here, not SIGBUS;
       under the joiners' lock, shared: a hand-over half done read as a reused pid */
    flock(fd, LOCK_SH);
    int r = t && pread(fd, t, sizeof(*t), 0) == (ssize_t)sizeof(*t) ? 0 : -EPROTO;
    close(fd);
    if (!r && (t->magic != BOARD_MAGIC || t->version != BOARD_VERSION ||
               t->size != sizeof(struct board_table)))
        r = -EPROTO;
    int live = 0;
    for (int i = 0; !r && i < CARVE_BOARD_ENTRIES; i++)
        live += atomic_load(&t->entry[i].pid) > 0 && !entry_dead(&t->entry[i]);
    free(t);
    return r ? r : live;
}

int carve_board_hand_over(struct carve_board *b, int entry, pid_t from, uint64_t from_start,
                          pid_t to, uint64_t to_start)
{
    if (!b || !b->writable || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
        return -EINVAL;
    struct board_entry *e = &b->t->entry[entry];
    int r = 0;
    flock(b->fd, LOCK_EX); /* joiners judge entries dead under it, by pid and start time */
    if (atomic_load(&e->pid) != (int32_t)from || (from_start && e->start_time != from_start) ||
        carve_board_cut(b))
        r = -ESRCH; /* another's: from's was judged dead and taken, or from reused a pid */
    else if (!to_start || carve_proc_running(to) != 1 || carve_proc_start_time(to) != to_start)
        r = -ECHILD; /* to is gone (a start of 0 would keep a reused pid's entry alive) */
    if (!r) {
        e->start_time = to_start;
        atomic_store(&e->pid, (int32_t)to);
    }
    flock(b->fd, LOCK_UN);
    return r;
}

void carve_board_note_launch(struct carve_board *b, int entry, uint64_t now_ns)
{
    if (!b || !b->act || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
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
    if (!b || !b->act || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
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

void carve_board_set_queue(struct carve_board *b, int entry, uint64_t end_ns)
{
    if (b && b->act && entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store_explicit(&b->act->entry[entry].queue_end_ns, end_ns, memory_order_relaxed);
}

uint64_t carve_board_busy_until(const struct carve_board *b, int entry, uint64_t now_ns,
                                uint64_t horizon_ns)
{
    uint64_t busy = 0;
    for (int i = 0; b && b->act && i < CARVE_BOARD_ENTRIES; i++) {
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
    if (b && b->act && entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store_explicit(&b->act->entry[entry].given_until_ns, until_ns,
                              memory_order_relaxed);
}

uint64_t carve_board_given(const struct carve_board *b, int entry, uint64_t now_ns,
                          uint64_t horizon_ns, uint64_t *from_ns)
{
    *from_ns = 0;
    if (!b || !b->act || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
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
        uint64_t last = b->act ? atomic_load_explicit(&b->act->entry[i].last_launch_ns,
                                                      memory_order_relaxed)
                               : 0; /* a joiner's board: no activity seen */
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
