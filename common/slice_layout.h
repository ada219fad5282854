/* slice_layout.h - the slice table's layout in shared memory: private to slice.c, and to the
 * unit tests that forge slots and versions. Every process mapping a slice must agree on it;
 * change SLICE_VERSION with any change here. */
#ifndef CARVE_SLICE_LAYOUT_H
#define CARVE_SLICE_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "slice.h"

#define SLICE_MAGIC 0x6361727665534c43ULL /* "carveSLC" */
#define SLICE_VERSION 1
#define SLOT_FREE 0
#define SLOT_REAPING (-1)

struct slice_dev {
    uint8_t uuid[16];
    int32_t index;
    uint32_t pad;
    uint64_t cap;
    _Atomic uint64_t denials;
    _Atomic uint64_t peak;
};

struct slice_slot {
    _Atomic int32_t pid; /* SLOT_FREE, SLOT_REAPING or the owner's pid */
    uint32_t pad;
    _Atomic uint64_t start_time;
    _Atomic uint64_t reuse_checked_ns; /* when the pid-reuse check last ran */
    _Atomic uint64_t used[CARVE_SLICE_MAX_DEVICES];
    _Atomic uint64_t reserving[CARVE_SLICE_MAX_DEVICES];
} __attribute__((aligned(64)));

struct slice_table {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    char name[CARVE_SLICE_NAME_MAX];
    int32_t ndev;
    int32_t owner_pid;
    uint64_t created;
    struct slice_dev dev[CARVE_SLICE_MAX_DEVICES];
    _Atomic uint32_t slots_hw; /* slots [0, slots_hw) have ever been claimed */
    struct slice_slot slot[CARVE_SLICE_MAX_PROCS] __attribute__((aligned(64)));
};

#endif
