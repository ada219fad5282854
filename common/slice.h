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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CARVE_SLICE_MAX_DEVICES 16
#define CARVE_SLICE_MAX_PROCS 256
#define CARVE_SLICE_NAME_MAX 64

struct carve_slice;

struct carve_slice_dev_spec {
    uint8_t uuid[16];
    int index;    /* physical (NVML) index */
    uint64_t cap; /* bytes; 0 = not capped (usage is still recorded) */
};

struct carve_slice_spec {
    char name[CARVE_SLICE_NAME_MAX]; /* shown in messages and listings */
    int ndev;
    struct carve_slice_dev_spec dev[CARVE_SLICE_MAX_DEVICES];
};

/* Owner side: creates the shared-memory object `shm_name` (O_EXCL, mode 0600). */
int carve_slice_create(const char *shm_name, const struct carve_slice_spec *spec,
                       struct carve_slice **out, char *err, size_t errlen);
/* Tenant side: maps an existing slice, checking its magic, version and size. */
int carve_slice_open(const char *shm_name, struct carve_slice **out, char *err,
                     size_t errlen);
void carve_slice_close(struct carve_slice *s);
int carve_slice_unlink(const char *shm_name);

/* Claims a slot for pid (reusing a dead process's slot); returns its index or -ENOSPC. */
int carve_slice_attach(struct carve_slice *s, pid_t pid);
/* Gives a slot back with everything it counted (a tenant's exit). */
void carve_slice_detach(struct carve_slice *s, int slot);

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
/* Clears the slots of dead processes (gone, or pid reused); returns how many. */
int carve_slice_reap(struct carve_slice *s);
/* Pids of live member processes, at most max; returns the count. */
int carve_slice_pids(const struct carve_slice *s, unsigned int *out, int max);
/* Pid holding slot (0 free, -1 being cleared), for tests and listings. */
int carve_slice_slot_pid(const struct carve_slice *s, int slot);
/* Bytes slot counted on dev (tests and listings). */
uint64_t carve_slice_slot_used(const struct carve_slice *s, int slot, int dev);

/* Process start time in clock ticks since boot (/proc/<pid>/stat field 22), 0 if unknown. */
uint64_t carve_proc_start_time(pid_t pid);

#endif
