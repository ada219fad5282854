/* allocmap.h - lock-free map from an allocation's key (pointer, handle, array) to what it
 * was counted as, so that a free gives back exactly what its allocation took.
 *
 * Open addressing with linear probing over 64-bit keys; a full table chains a bigger one
 * (never moved, never freed while the process lives); deletes leave tombstones that later
 * inserts reuse. Keys 0 and UINT64_MAX are reserved and never stored. Safe from any thread
 * without locks; a key is inserted once and removed once (the driver never hands out the
 * same live pointer twice). */
#ifndef CARVE_ALLOCMAP_H
#define CARVE_ALLOCMAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct carve_allocmap_table;

struct carve_allocmap {
    _Atomic(struct carve_allocmap_table *) first;
};

/* value packing: device index in the top byte, bytes below */
#define CARVE_ALLOCMAP_DEV_SHIFT 56
#define CARVE_ALLOCMAP_BYTES_MAX ((UINT64_C(1) << CARVE_ALLOCMAP_DEV_SHIFT) - 1)

/* Returns 0, or -EINVAL for a reserved key, -ENOMEM when no table could be added. */
int carve_allocmap_insert(struct carve_allocmap *m, uint64_t key, uint64_t value);
/* Removes key; true and *value set when it was there. */
bool carve_allocmap_remove(struct carve_allocmap *m, uint64_t key, uint64_t *value);
/* Re-reads key's value without removing it. */
bool carve_allocmap_find(const struct carve_allocmap *m, uint64_t key, uint64_t *value);
/* key's value word, for a caller that changes it in place (a count), or NULL. Once the key is
 * removed, its slot may be taken by another key, whose insert stores its own value there: a
 * caller that may race with the remove changes the word only by compare-and-swap from a value
 * that only its key can hold. */
_Atomic uint64_t *carve_allocmap_value_of(struct carve_allocmap *m, uint64_t key);
/* Number of live keys (walks every table; for tests and diagnostics). */
uint64_t carve_allocmap_count(const struct carve_allocmap *m);
/* Forgets every key and unmaps every table; only when no other thread uses the map (a
 * fork child before its first call, the test harness). */
void carve_allocmap_reset(struct carve_allocmap *m);

#endif
