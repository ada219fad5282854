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

#include "slice.h"

#define BOARD_MAGIC 0x6361727665424f44ULL /* "carveBOD" */
#define BOARD_VERSION 1
#define JOIN_TRIES 8

struct board_entry {
    _Atomic int32_t pid; /* owner (`carve run`), 0 when free */
    uint32_t pad;
    uint64_t start_time;
    struct carve_compute compute;
    char name[CARVE_SLICE_NAME_MAX];
    _Atomic uint64_t last_launch_ns;
} __attribute__((aligned(64)));

struct board_table {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    uint8_t uuid[16];
    struct board_entry entry[CARVE_BOARD_ENTRIES];
};

struct carve_board {
    struct board_table *t;
    int fd;
    char name[64];
};

void carve_board_name(const uint8_t uuid[16], char *buf, size_t len)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    snprintf(buf, len, "/carve-board-%s", hex);
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
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    uint64_t now = carve_proc_start_time(pid);
    return e->start_time && now && now != e->start_time; /* pid reused */
}

/* Opens (creating if asked) and maps the board, locked when lock; 0 or -errno. */
static int board_map(const uint8_t uuid[16], bool create, struct carve_board **out)
{
    struct carve_board *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    carve_board_name(uuid, b->name, sizeof(b->name));
    for (int tries = 0; tries < JOIN_TRIES; tries++) {
        int fd = shm_open(b->name, O_RDWR | (create ? O_CREAT : 0), 0666);
        if (fd < 0) {
            int r = -errno;
            free(b);
            return r;
        }
        if (create)
            fchmod(fd, 0666); /* past the umask: every carve user of the GPU joins it */
        if (create && flock(fd, LOCK_EX) < 0) {
            close(fd);
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || (create && st.st_nlink == 0)) {
            close(fd); /* removed by its last user while we waited: open the new one */
            continue;
        }
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
        void *p = mmap(NULL, sizeof(struct board_table), PROT_READ | PROT_WRITE, MAP_SHARED,
                       fd, 0);
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
    close(b->fd);
    free(b);
}

int carve_board_open(const uint8_t uuid[16], struct carve_board **out)
{
    return board_map(uuid, false, out);
}

int carve_board_join(const uint8_t uuid[16], const struct carve_compute *c, const char *name,
                     pid_t pid, struct carve_board **out, int *entry, char *err,
                     size_t errlen)
{
    struct carve_board *b;
    int r = board_map(uuid, true, &b);
    if (r < 0)
        return fail(err, errlen, r, "cannot open the GPU's board %s: %s", "");
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
            char mine[32];
            carve_format_compute(c, mine, sizeof(mine));
            snprintf(err, errlen, "--compute %s: the slices on this GPU already hold "
                     "guarantees of %llu.%02llu%%, and guarantees may add up to 100%% at "
                     "most; ask for %llu.%02llu%%+ or less, or a cap (without '+')", mine,
                     (unsigned long long)(guaranteed / 100),
                     (unsigned long long)(guaranteed % 100),
                     (unsigned long long)((CARVE_BP_FULL - guaranteed) / 100),
                     (unsigned long long)((CARVE_BP_FULL - guaranteed) % 100));
        }
        carve_board_leave(b, -1);
        return -EDQUOT;
    }
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
    atomic_store(&e->last_launch_ns, 0);
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
    flock(b->fd, LOCK_EX); /* held already after a refused join: flock converts, no harm */
    if (entry >= 0 && entry < CARVE_BOARD_ENTRIES)
        atomic_store(&b->t->entry[entry].pid, 0);
    bool empty = true;
    for (int i = 0; i < CARVE_BOARD_ENTRIES && empty; i++)
        empty = atomic_load(&b->t->entry[i].pid) == 0 || entry_dead(&b->t->entry[i]);
    if (empty)
        shm_unlink(b->name); /* a joiner waiting on the lock sees nlink 0 and starts anew */
    flock(b->fd, LOCK_UN);
    carve_board_close(b);
}

void carve_board_note_launch(struct carve_board *b, int entry, uint64_t now_ns)
{
    if (!b || entry < 0 || entry >= CARVE_BOARD_ENTRIES)
        return;
    _Atomic uint64_t *last = &b->t->entry[entry].last_launch_ns;
    if (now_ns - atomic_load_explicit(last, memory_order_relaxed) > CARVE_BOARD_NOTE_NS)
        atomic_store_explicit(last, now_ns, memory_order_relaxed);
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
        uint64_t last = atomic_load_explicit(&e->last_launch_ns, memory_order_relaxed);
        if (i == entry)
            *me = n;
        peers[n].compute = e->compute;
        peers[n].active = last && now_ns - last <= active_ns;
        n++;
    }
    return n;
}
