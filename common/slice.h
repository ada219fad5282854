/* slice.h - the slice table: one shared-memory object per slice holding its per-GPU caps and
 * one slot per tenant process with that process's device-memory usage; admission against the
 * cap is lock-free and exact across processes and threads.
 *
 * There is no global "used" counter: a slice's usage is the sum over its slots, so a process
 * that dies (SIGKILL included) leaves a slot that is its whole record and can be cleared
 * exactly. See docs/internals.md for the admission protocol.
 *
 * This code runs inside tenant processes (libcarve): it never prints and never exits;
 * errors come back as negative errno values with a message where a buffer is given. */
#ifndef CARVE_SLICE_H
#define CARVE_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compute.h"

#define CARVE_SLICE_MAX_DEVICES 16
#define CARVE_SLICE_MAX_PROCS 256
#define CARVE_SLICE_NAME_MAX 64
/* carved's slices are /carve.d.NAME.RAND: libcarve waits for carved over those alone */
#define CARVE_SLICE_DAEMON_PREFIX "carve.d."
/* What a slice's name may hold: carved puts names in shared-memory object names, and the
 * config, the socket API and carve run all check them with carve_slice_name_ok. */
#define CARVE_SLICE_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

struct carve_slice;

struct carve_slice_dev_spec {
    uint8_t uuid[16];
    int index;    /* physical (NVML) index */
    uint64_t cap; /* bytes; 0 = not capped (usage is still recorded) */
    struct carve_compute compute; /* share_bp 0 and normal priority: not paced */
    int board_entry;              /* entry on the GPU's board (board.h), -1 if none */
};

struct carve_slice_spec {
    char name[CARVE_SLICE_NAME_MAX]; /* shown in messages and listings */
    mode_t table_mode; /* of the table tenants write; 0 = 0600 (the terms are always 0644) */
    int ndev;
    struct carve_slice_dev_spec dev[CARVE_SLICE_MAX_DEVICES];
};
/* Who made the slice: its pid and the inode of its PID namespace (0 where it could not read
 * it), from its terms. 0, or -errno (no such slice, or one of another layout). */
int carve_slice_creator(const char *shm_name, int *pid, uint32_t *ns);

/* Owner side: creates the slice's two shared-memory objects, `shm_name` (the table, mode
 * spec->table_mode) and `shm_name`.terms (mode 0644), both O_EXCL. */
int carve_slice_create(const char *shm_name, const struct carve_slice_spec *spec,
                       struct carve_slice **out, char *err, size_t errlen);
/* What one slice takes in /dev/shm: its table and its terms. */
size_t carve_slice_shm_bytes(void);
/* shm_open of carve's objects (slices, boards) that cannot hang on what a user planted under
 * the name: O_NONBLOCK and close-on-exec, and what is not a regular file (a FIFO, whose open
 * waited for a writer on carved's only thread) refused with -EPROTO. An fd, or -errno. */
int carve_shm_open(const char *name, int flags, mode_t mode);
/* Tenant side: maps an existing slice (its terms read-only), checking magic, version and
 * size of both objects. */
int carve_slice_open(const char *shm_name, struct carve_slice **out, char *err,
                     size_t errlen);
/* The same with the table mapped from table_fd (left open) instead of opened by name: a
 * carved slice's table is carved's alone (0600), and carved hands its tenants an fd of it
 * with its answer to their join. */
int carve_slice_open_fd(const char *shm_name, int table_fd, struct carve_slice **out,
                        char *err, size_t errlen);
/* The slice's name, from its terms (which anyone may read): what a tenant asks carved to join
 * before it can map the table; and who owns the terms, and their mode (as
 * carve_slice_terms_owner). */
int carve_slice_label(const char *shm_name, char *out, size_t len, uid_t *uid, mode_t *mode,
                      char *err, size_t errlen);
/* Owner side: an fd of the slice's table, read-write and close-on-exec, to hand a tenant
 * (carved's join); -errno when it cannot be opened. */
int carve_slice_table_fd(const char *shm_name);
void carve_slice_close(struct carve_slice *s);
int carve_slice_unlink(const char *shm_name);
/* The slice objects of `carve run`s that ended without removing them (SIGKILL: a job step
 * killed, an OOM kill), /dev/shm/carve.UID.PID.RAND and its .terms (or the terms alone, of a
 * run killed between its two removals), whose maker runs no more: each such run left 85 KB in
 * /dev/shm until a reboot. Only a maker of the caller's own PID namespace, as its terms record
 * it, is judged: a container that shares the host's /dev/shm but not its PIDs (--ipc=host)
 * has pids that name other processes here, or none. A process the command left running keeps
 * its mapping; a new one gets no context, as after any carve run's end. Every user's
 * (carved), or only_uid's (carve run). removed, when not NULL, is told of each this call
 * removed. How many it removed. */
typedef void (*carve_slice_swept_fn)(const char *shm, bool terms_only, int pid, unsigned uid,
                                     void *arg);
int carve_slice_sweep_killed(bool every_user, uid_t only_uid, carve_slice_swept_fn removed,
                             void *arg);
/* Who owns the slice's terms, and their mode: a tenant trusts caps only from a slice whose
 * terms it cannot write (libcarve checks them against carved's socket when carved runs). */
void carve_slice_terms_owner(const struct carve_slice *s, uid_t *uid, mode_t *mode);
/* Who owns the slice's table (writable by its tenants, so not a trust check by itself). */
uid_t carve_slice_table_owner(const struct carve_slice *s);
/* Whether the slice's objects exist at their full size. Its tenants can write the table, and
 * so truncate it; reading a mapping past a truncated end raises SIGBUS. */
bool carve_slice_intact(const char *shm_name);
/* Whether the mapped table's head (magic, version, size) is still a slice's: a tenant holds
 * the table's fd and may overwrite it, and libcarve then refuses every later join. A table
 * cut short raises SIGBUS here, as any read of it. */
bool carve_slice_head_ok(const struct carve_slice *s);

/* A slot's process is named by its pid in its own PID namespace and by that namespace (the
 * inode of /proc/PID/ns/pid): tenants of one slice may run in several (containers), where
 * one pid names different processes, and a process of one cannot tell whether one of
 * another runs. Each judges the slots of its own namespace only; carved, in the host's,
 * finds the others' processes by /proc (carve_slice_owners, carve_slice_reap_owner). */

/* Claims a slot for pid, a pid of the caller's namespace (reusing a dead process's slot of
 * that namespace); returns its index or -ENOSPC. Reads the caller's namespace again: a fork
 * child may be in another than its parent (unshare(CLONE_NEWPID) moves children only). */
int carve_slice_attach(struct carve_slice *s, pid_t pid);
/* Gives a slot back with everything it counted (a tenant's exit). */
void carve_slice_detach(struct carve_slice *s, int slot);
/* Gives back the slots pid holds in the caller's namespace: called by a process before it
 * attaches, they are what its image before an exec counted (the driver freed that memory at
 * the exec, and the pid and its start time are unchanged, so no reaper would ever take
 * them). Returns how many. */
int carve_slice_forget_pid(struct carve_slice *s, pid_t pid);

/* Admits bytes on device dev for the process in slot: 0, or -ENOMEM when the slice's cap
 * would be passed (after reaping dead processes). No lock, no syscall when it fits. */
int carve_slice_admit(struct carve_slice *s, int slot, int dev, uint64_t bytes);
/* Gives back bytes counted by slot (clamped: never below zero). */
void carve_slice_release(struct carve_slice *s, int slot, int dev, uint64_t bytes);
/* Counts bytes without admission: memory the driver already took (context, modules). */
void carve_slice_charge(struct carve_slice *s, int slot, int dev, uint64_t bytes);

uint64_t carve_slice_used(const struct carve_slice *s, int dev);
uint64_t carve_slice_cap(const struct carve_slice *s, int dev);
/* Highest usage an admission saw on a capped device (uncapped devices keep no peak). */
uint64_t carve_slice_peak(const struct carve_slice *s, int dev);
uint64_t carve_slice_denials(const struct carve_slice *s, int dev);
int carve_slice_ndev(const struct carve_slice *s);
int carve_slice_dev_index(const struct carve_slice *s, int dev);
const char *carve_slice_name(const struct carve_slice *s);
/* Slice device whose UUID is uuid, or -1. */
int carve_slice_find_uuid(const struct carve_slice *s, const uint8_t uuid[16]);
/* Clears the slots of dead processes of the caller's namespace (gone, or pid reused);
 * returns how many. Slots of other namespaces are left to whoever can see their processes. */
int carve_slice_reap(struct carve_slice *s);
/* Pids of live member processes of the caller's namespace, at most max; returns the count. */
int carve_slice_pids(const struct carve_slice *s, unsigned int *out, int max);
/* A claimed slot's owner. */
struct carve_slice_owner {
    int slot;
    pid_t pid;      /* in its own PID namespace */
    uint32_t pidns; /* that namespace: the inode of /proc/PID/ns/pid; 0 when it was unreadable */
    bool local;     /* of the caller's namespace: pid is a pid here */
    uint64_t start; /* its start time, clock ticks since boot (0: unknown) */
};
/* The slots' owners, at most max: those of the caller's namespace that live, and every one
 * of another namespace, which the caller cannot judge. Returns the count. */
int carve_slice_owners(const struct carve_slice *s, struct carve_slice_owner *out, int max);
/* Those of other namespaces alone (no syscall). */
int carve_slice_foreign(const struct carve_slice *s, struct carve_slice_owner *out, int max);
/* Clears o's slot if o still holds it (carved found that process gone); true when cleared. */
bool carve_slice_reap_owner(struct carve_slice *s, const struct carve_slice_owner *o);
/* Pid holding slot in its own namespace (0 free, -1 being cleared), for tests and listings. */
int carve_slice_slot_pid(const struct carve_slice *s, int slot);
/* Bytes slot counted on dev (tests and listings). */
uint64_t carve_slice_slot_used(const struct carve_slice *s, int slot, int dev);

/* The compute settings of device dev, and the slice's entry on that GPU's board (-1: none). */
struct carve_compute carve_slice_compute(const struct carve_slice *s, int dev);
int carve_slice_board_entry(const struct carve_slice *s, int dev);

/* Paces the slice's launches on dev (GCRA): work of cost_ns GPU time is admitted when the
 * slice is at most tau_ns ahead of its rate_bp share of wall time, and then moves it ahead
 * by cost_ns / share. Returns 0 when admitted, else the ns to wait before asking again.
 * Lock-free across the slice's processes and threads; no syscall. */
uint64_t carve_slice_pace(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                          uint64_t tau_ns, uint64_t now_ns);
/* Moves the slice's clock ahead by cost_ns at rate_bp without asking: work already launched
 * that was charged too little (its cost was learned afterwards). */
void carve_slice_pace_debt(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                           uint64_t now_ns);
/* Where the slice's pacing clock stands (ns, CLOCK_MONOTONIC): its admitted work is paid
 * for until then. */
int64_t carve_slice_pace_clock(const struct carve_slice *s, int dev);
/* Taking turns (compute.h's windows): when the work admitted so far would end at full speed,
 * and admitting work: both clocks move (the queue at full speed, the share at rate_bp); it
 * returns where the queue clock now stands. */
int64_t carve_slice_queue_clock(const struct carve_slice *s, int dev);
int64_t carve_slice_turn_admit(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                               uint64_t now_ns);
/* Moves the slice's clock back by cost_ns at rate_bp (work that was charged too much), not
 * earlier than now_ns. */
void carve_slice_pace_refund(struct carve_slice *s, int dev, uint64_t cost_ns, uint32_t rate_bp,
                             uint64_t now_ns);
/* A launch whose cost was measured after it ran cost diff_ns more than it was charged (less,
 * when negative): the share clock moves as carve_slice_pace_debt (or _refund) would, and the
 * queue clock by diff_ns, where the work queued behind it really ends, while that is ahead
 * of now_ns. */
void carve_slice_pace_correct(struct carve_slice *s, int dev, int64_t diff_ns, uint32_t rate_bp,
                              uint64_t now_ns);
/* The UUID of slice device dev: 0, or -EINVAL. */
int carve_slice_dev_uuid(const struct carve_slice *s, int dev, uint8_t uuid[16]);
void carve_slice_note_held(struct carve_slice *s, int dev, uint64_t ns);
/* A paced launch of process pid (any number naming it: libcarve gives its slot + 1) at now_ns:
 * when the last was another process's, the slice's
 * processes launch side by side until hold_ns from now (their kernels lengthen each other's
 * cost samples). Costs a load when the same process launches again. */
void carve_slice_note_launcher(struct carve_slice *s, int dev, int32_t pid, uint64_t now_ns,
                               uint64_t hold_ns);
/* Until when (ns, CLOCK_MONOTONIC) more than one process of the slice launched, 0: never. */
uint64_t carve_slice_shared_until(const struct carve_slice *s, int dev);
struct carve_pace_stats {
    uint64_t charged_ns, held_ns, launches;
};
struct carve_pace_stats carve_slice_pace_stats(const struct carve_slice *s, int dev);
/* The flag that every kernel and graph launch of the slice's processes sets, paced or not
 * (libcarve keeps the pointer: a relaxed load per launch, a store only when it is clear),
 * and carved's read of it: whether anything was launched since its last read, which clears
 * it. Any tenant can write the flag, and so only keep the slice from looking idle. */
_Atomic uint32_t *carve_slice_ran_flag(struct carve_slice *s);
bool carve_slice_take_ran(struct carve_slice *s);

/* 1 to CARVE_SLICE_NAME_MAX - 1 of CARVE_SLICE_NAME_CHARS, and not "." or "..". */
bool carve_slice_name_ok(const char *name);

/* Process start time in clock ticks since boot (/proc/<pid>/stat field 22), 0 if unknown. */
uint64_t carve_proc_start_time(pid_t pid);

#endif
