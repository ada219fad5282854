/* allocmap.c - lock-free open-addressing map, allocation key -> counted value.
 *
 * A slot is claimed by one compare-and-swap on its key word (EMPTY or TOMB -> key) and its
 * value is written right after; the key's owner cannot free it before the insert returned,
 * so no reader ever needs a value that is not there yet. Probing stops at a never-used slot
 * (EMPTY) or after PROBE_MAX slots, then goes on in the next, twice bigger, table. */
#include "allocmap.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#define KEY_EMPTY UINT64_C(0)
#define KEY_TOMB UINT64_MAX
#define FIRST_SLOTS 4096u
#define PROBE_MAX 32u

struct slot {
    _Atomic uint64_t key;
    _Atomic uint64_t value;
};

struct carve_allocmap_table {
    _Atomic(struct carve_allocmap_table *) next;
    size_t mask;
    struct slot slots[];
};

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

static size_t table_bytes(size_t slots)
{
    return sizeof(struct carve_allocmap_table) + slots * sizeof(struct slot);
}

static struct carve_allocmap_table *table_new(size_t slots)
{
    struct carve_allocmap_table *t = mmap(NULL, table_bytes(slots), PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED)
        return NULL;
    t->mask = slots - 1; /* mmap gives zeroes: every key EMPTY, next NULL */
    return t;
}

/* The table after *link, created on first need; NULL only when mmap fails. */
static struct carve_allocmap_table *table_after(_Atomic(struct carve_allocmap_table *) *link,
                                                size_t slots)
{
    struct carve_allocmap_table *t = atomic_load(link);
    if (t)
        return t;
    struct carve_allocmap_table *fresh = table_new(slots);
    if (!fresh)
        return NULL;
    if (atomic_compare_exchange_strong(link, &t, fresh))
        return fresh;
    munmap(fresh, table_bytes(slots)); /* another thread linked one first */
    return t;
}

static bool table_insert(struct carve_allocmap_table *t, uint64_t key, uint64_t value)
{
    size_t i = (size_t)mix(key) & t->mask;
    for (unsigned n = 0; n < PROBE_MAX && n <= t->mask; n++, i = (i + 1) & t->mask) {
        uint64_t k = atomic_load(&t->slots[i].key);
        while (k == KEY_EMPTY || k == KEY_TOMB) {
            /* value first: a later reader of this key sees it; a stale reader of the
             * tombstone's old key does not read the value after failing its CAS */
            if (atomic_compare_exchange_weak(&t->slots[i].key, &k, key)) {
                atomic_store(&t->slots[i].value, value);
                return true;
            }
        }
    }
    return false;
}

int carve_allocmap_insert(struct carve_allocmap *m, uint64_t key, uint64_t value)
{
    if (key == KEY_EMPTY || key == KEY_TOMB)
        return -EINVAL;
    size_t slots = FIRST_SLOTS;
    struct carve_allocmap_table *t = table_after(&m->first, slots);
    while (t) {
        if (table_insert(t, key, value))
            return 0;
        slots *= 2;
        t = table_after(&t->next, slots);
    }
    return -ENOMEM;
}

/* Slot holding key, or NULL. */
static struct slot *lookup(const struct carve_allocmap *m, uint64_t key)
{
    if (key == KEY_EMPTY || key == KEY_TOMB)
        return NULL;
    for (struct carve_allocmap_table *t = atomic_load(&m->first); t;
         t = atomic_load(&t->next)) {
        size_t i = (size_t)mix(key) & t->mask;
        for (unsigned n = 0; n < PROBE_MAX && n <= t->mask; n++, i = (i + 1) & t->mask) {
            uint64_t k = atomic_load(&t->slots[i].key);
            if (k == key)
                return &t->slots[i];
            if (k == KEY_EMPTY)
                break;
        }
    }
    return NULL;
}

bool carve_allocmap_remove(struct carve_allocmap *m, uint64_t key, uint64_t *value)
{
    struct slot *s = lookup(m, key);
    if (!s)
        return false;
    uint64_t v = atomic_load(&s->value);
    uint64_t k = key;
    if (!atomic_compare_exchange_strong(&s->key, &k, KEY_TOMB))
        return false; /* a concurrent remove of the same key won */
    *value = v;
    return true;
}

bool carve_allocmap_find(const struct carve_allocmap *m, uint64_t key, uint64_t *value)
{
    struct slot *s = lookup(m, key);
    if (!s)
        return false;
    *value = atomic_load(&s->value);
    return true;
}

_Atomic uint64_t *carve_allocmap_value_of(struct carve_allocmap *m, uint64_t key)
{
    struct slot *s = lookup(m, key);
    return s ? &s->value : NULL;
}

uint64_t carve_allocmap_count(const struct carve_allocmap *m)
{
    uint64_t live = 0;
    for (struct carve_allocmap_table *t = atomic_load(&m->first); t;
         t = atomic_load(&t->next))
        for (size_t i = 0; i <= t->mask; i++) {
            uint64_t k = atomic_load(&t->slots[i].key);
            live += k != KEY_EMPTY && k != KEY_TOMB;
        }
    return live;
}

void carve_allocmap_reset(struct carve_allocmap *m)
{
    struct carve_allocmap_table *t = atomic_exchange(&m->first, NULL);
    while (t) {
        struct carve_allocmap_table *next = atomic_load(&t->next);
        munmap(t, table_bytes(t->mask + 1));
        t = next;
    }
}
