/* slice_layout.h - a slice's layout in shared memory: private to slice.c, and to the unit
 * tests that forge slots and versions. A slice is two objects: its terms (name, caps,
 * shares: written once by whoever made the slice, mapped read-only by tenants, and not
 * writable by them when carved made it) and its table (what tenants write: usage slots,
 * pacing clocks, counters). Every process mapping a slice must agree on both; change
 * SLICE_VERSION with any change here. */
#ifndef CARVE_SLICE_LAYOUT_H
#define CARVE_SLICE_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "slice.h"

#define SLICE_MAGIC 0x6361727665534c43ULL /* "carveSLC" */
#define SLICE_VERSION 7
#define SLICE_TERMS_SUFFIX ".terms" /* the terms object is the table's name + this */
/* A slot's owner is one word, so that one compare-and-swap claims, checks or clears it
 * whole: the process's pid in its own PID namespace (low 32 bits) and that namespace, by the
 * inode of /proc/PID/ns/pid (high 32 bits; 0 when the process could not read it). Pids of
 * different namespaces collide (every container's first process is 1); the pair does not. */
#define SLOT_FREE 0ULL
#define SLOT_REAPING UINT64_MAX /* pid -1: being cleared */
#define SLOT_OWNER(ns, pid) ((uint64_t)(uint32_t)(ns) << 32 | (uint32_t)(pid))
#define SLOT_OWNER_PID(o) ((int32_t)(uint32_t)(o))
#define SLOT_OWNER_NS(o) ((uint32_t)((o) >> 32))

struct slice_terms_dev {
    uint8_t uuid[16];
    int32_t index;
    uint32_t pad;
    uint64_t cap;
    struct carve_compute compute;
    int32_t board_entry; /* this slice's entry on the GPU's board, -1 if none */
};

struct slice_terms {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    char name[CARVE_SLICE_NAME_MAX];
    int32_t ndev;
    int32_t owner_pid; /* who made it, in its PID namespace (the inode of its ns/pid; 0: not */
    uint32_t owner_ns; /* known): carved sweeps a killed carve run's slice by them */
    uint32_t pad_owner;
    uint64_t created;
    struct slice_terms_dev dev[CARVE_SLICE_MAX_DEVICES];
};

struct slice_dev {
    _Atomic uint64_t denials;
    _Atomic uint64_t peak;
};

/* The pacing of a slice's launches on one GPU, written by every launch that is paced: a
 * line of its own, away from the memory counters. */
struct slice_pace {
    _Atomic int64_t tat_ns;      /* when the work admitted so far has "paid" its time */
    _Atomic int64_t queue_ns;    /* taking turns: when the work admitted so far would end */
    _Atomic uint64_t charged_ns; /* estimated GPU time admitted */
    _Atomic uint64_t held_ns;    /* time launches waited */
    _Atomic uint64_t launches;   /* paced launches admitted */
    _Atomic int32_t launcher;    /* the slot + 1 of the process that launched last, 0: none */
    uint32_t pad;
    _Atomic uint64_t shared_until_ns; /* until then another process launched beside it */
} __attribute__((aligned(64)));

struct slice_slot {
    _Atomic uint64_t owner;      /* SLOT_FREE, SLOT_REAPING or SLOT_OWNER(ns, pid) */
    _Atomic uint64_t start_time; /* the owner's, in clock ticks since boot; 0 unknown */
    _Atomic uint64_t reuse_checked_ns; /* when the pid-reuse check last ran */
    _Atomic uint64_t used[CARVE_SLICE_MAX_DEVICES];
    _Atomic uint64_t reserving[CARVE_SLICE_MAX_DEVICES];
} __attribute__((aligned(64)));

struct slice_table {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    struct slice_dev dev[CARVE_SLICE_MAX_DEVICES];
    struct slice_pace pace[CARVE_SLICE_MAX_DEVICES];
    /* 1 once a kernel or graph of the slice's processes was launched since carved last
     * cleared it: a line of its own, which launches read and write only when it is clear */
    _Atomic uint32_t ran __attribute__((aligned(64)));
    _Atomic uint32_t slots_hw; /* slots [0, slots_hw) have ever been claimed */
    struct slice_slot slot[CARVE_SLICE_MAX_PROCS] __attribute__((aligned(64)));
};

#endif
