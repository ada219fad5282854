/* fleet_exact.c - the cheapest plan within the fleet for a short list, by trying every
 * assignment: what the planner falls back on when its packing of a few workloads goes beyond
 * the fleet.
 *
 * The packers follow the cost bound's fractional solution and fill GPUs greedily. On a fleet
 * of several models that can send work beyond the fleet when a plan within it exists: on
 * H100-80GB:1 + A100-40GB:2, with two untrusted 1 GiB workloads and trusted ones of 39 and
 * 20 GiB, the solution's tie sent a 1 GiB workload alone to the H100 that the two trusted ones
 * should share, and MPS and carve bought a fourth GPU ($6.09 against $4.89 within the fleet).
 * So when a list of at most FLEET_EXACT_MAX workloads goes beyond the fleet, this search tries
 * every assignment of it to the fleet's GPUs under the mechanism's rules: most memory first,
 * onto a GPU already open or a new one of each pool with a GPU left (the GPUs of a pool are
 * alike, so one new GPU per pool is a branch; pools cheapest per MiB first), pruned by cost
 * and by what is still to place against the room left (memory, compute, GPUs for the lone
 * workloads), for at most FLEET_EXACT_STEPS steps. A search that ends within them finds the
 * cheapest plan within the fleet whenever there is one; one cut short keeps the best it found.
 * Without pruning the tree of n workloads on p pools has at most the sum over k <= n of
 * p (p + 1) ... (p + k - 1) nodes: 168,246 for 6 workloads on 5 pools, so every such list is
 * searched through. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

#define EXACT_PER_GPU 1e-6 /* among plans of one cost (or on an unpriced fleet) fewer GPUs */
enum { KIND_ALONE = -1, KIND_MIG = -2 };

struct exact_gpu {
    size_t pool;
    int kind;         /* the group of the workloads sharing it, KIND_ALONE or KIND_MIG */
    uint64_t mem;     /* declared memory on it */
    uint32_t comp, tenants;
    uint64_t layout;  /* KIND_MIG: its instances per profile, FLEET_EXACT_LAYOUT_BITS each */
};

struct exact_search {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const struct fleet_exact_item *items;
    const struct fleet_exact_rules *r;
    size_t n;
    size_t order[FLEET_EXACT_MAX];        /* items, most memory first */
    uint64_t mem_from[FLEET_EXACT_MAX + 1]; /* memory of order[k..n) */
    uint64_t comp_from[FLEET_EXACT_MAX + 1]; /* compute of those that share (not MIG) */
    uint64_t alone_from[FLEET_EXACT_MAX + 1]; /* those alone on a GPU whatever it is */
    size_t by_price[FLEET_MAX_POOLS];
    bool unlimited;                       /* some pool has no count: no memory pruning */
    struct exact_gpu gpu[FLEET_EXACT_MAX];
    uint8_t gpu_of[FLEET_EXACT_MAX];      /* by item */
    bool whole[FLEET_EXACT_MAX];
    uint64_t used[FLEET_MAX_POOLS];
    unsigned long steps;
    struct fleet_exact_plan *best;
};

static const struct fleet_workload *item_workload(const struct exact_search *s, size_t k)
{
    return &s->ws->w[s->items[s->order[k]].index];
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool fleet_exact_layout_fits(const struct fleet_exact_rules *r, uint64_t layout)
{
    return bsearch(&layout, r->layouts, r->nlayouts, sizeof(*r->layouts), by_key) != NULL;
}

/* The layout with one more instance of profile q, or 0 if its count would overflow. */
static uint64_t layout_plus(uint64_t layout, int q)
{
    unsigned shift = (unsigned)q * FLEET_EXACT_LAYOUT_BITS;
    uint64_t field = (1ULL << FLEET_EXACT_LAYOUT_BITS) - 1;
    return (layout >> shift & field) == field ? 0 : layout + (1ULL << shift);
}

/* Whether the item at position k of the order joins GPU u as the rules allow. */
static bool joins(const struct exact_search *s, const struct exact_gpu *u, size_t k)
{
    const struct fleet_exact_item *it = &s->items[s->order[k]];
    const struct fleet_workload *w = item_workload(s, k);
    if (s->r->mig) {
        uint64_t more = it->profile >= 0 ? layout_plus(u->layout, it->profile) : 0;
        return u->kind == KIND_MIG && more && fleet_exact_layout_fits(s->r, more);
    }
    return it->group >= 0 && u->kind == it->group && u->tenants < s->r->slots &&
           u->mem + w->memory_mib <= s->f->pools[u->pool].memory_mib &&
           u->comp + w->compute_bp <= s->r->compute_cap;
}

/* Whether the item at position k can open a GPU of pool q, and as what (*kind: its group's
 * shared GPU, KIND_MIG: an instance on a GPU of the MIG model, KIND_ALONE: a whole GPU). */
static bool opens(const struct exact_search *s, size_t q, size_t k, int *kind)
{
    const struct fleet_exact_item *it = &s->items[s->order[k]];
    const struct fleet_workload *w = item_workload(s, k);
    if (s->r->mig && it->profile >= 0 && s->r->mig_pool[q]) {
        *kind = KIND_MIG;
        return fleet_exact_layout_fits(s->r, layout_plus(0, it->profile));
    }
    *kind = s->r->mig ? KIND_ALONE : it->group;
    return s->f->pools[q].memory_mib >= w->memory_mib &&
           (*kind < 0 || w->compute_bp <= s->r->compute_cap);
}

/* Whether what is left from position k on can still fit: its memory in the room of the open
 * GPUs that take more and of the GPUs the pools have left, its workloads alone on a GPU in
 * those GPUs left, and (shared GPUs) its compute in theirs. */
static bool room_enough(const struct exact_search *s, size_t k, size_t ngpus)
{
    if (s->unlimited)
        return true;
    uint64_t mem = 0, comp = 0, gpus = 0;
    for (size_t g = 0; g < ngpus; g++) {
        if (s->gpu[g].kind == KIND_ALONE)
            continue;
        mem += s->f->pools[s->gpu[g].pool].memory_mib - s->gpu[g].mem;
        comp += s->r->mig ? 0 : s->r->compute_cap - s->gpu[g].comp;
    }
    for (size_t q = 0; q < s->f->npools; q++) {
        mem += (s->f->pools[q].count - s->used[q]) * s->f->pools[q].memory_mib;
        gpus += s->f->pools[q].count - s->used[q];
    }
    return mem >= s->mem_from[k] && gpus >= s->alone_from[k] &&
           (s->r->mig || comp + gpus * s->r->compute_cap >= s->comp_from[k]);
}

static void record_best(struct exact_search *s, size_t ngpus, double cost)
{
    struct fleet_exact_plan *b = s->best;
    b->found = true;
    b->cost = cost;
    b->ngpus = ngpus;
    for (size_t g = 0; g < ngpus; g++)
        b->pool[g] = (uint8_t)s->gpu[g].pool;
    memcpy(b->gpu_of, s->gpu_of, sizeof(b->gpu_of));
    memcpy(b->whole, s->whole, sizeof(b->whole));
}

static void add_to(struct exact_search *s, struct exact_gpu *u, size_t k, int change)
{
    const struct fleet_workload *w = item_workload(s, k);
    const struct fleet_exact_item *it = &s->items[s->order[k]];
    u->mem += (uint64_t)(int64_t)change * w->memory_mib;
    u->comp += (uint32_t)change * w->compute_bp;
    u->tenants += (uint32_t)change;
    unsigned shift = (unsigned)it->profile * FLEET_EXACT_LAYOUT_BITS;
    if (u->kind == KIND_MIG)
        u->layout = change > 0 ? layout_plus(u->layout, it->profile) : u->layout - (1ULL << shift);
}

static void place_from(struct exact_search *s, size_t k, size_t ngpus, double cost)
{
    if (s->best->found && cost >= s->best->cost - EXACT_PER_GPU / 2)
        return;
    if (s->steps >= FLEET_EXACT_STEPS)
        return;
    s->steps++;
    if (k == s->n) {
        record_best(s, ngpus, cost);
        return;
    }
    if (!room_enough(s, k, ngpus))
        return;
    size_t item = s->order[k];
    for (size_t g = 0; g < ngpus; g++) {
        if (!joins(s, &s->gpu[g], k))
            continue;
        add_to(s, &s->gpu[g], k, 1);
        s->gpu_of[item] = (uint8_t)g;
        s->whole[item] = false;
        place_from(s, k + 1, ngpus, cost);
        add_to(s, &s->gpu[g], k, -1);
    }
    for (size_t o = 0; o < s->f->npools; o++) {
        size_t q = s->by_price[o];
        int kind;
        if (s->used[q] == s->f->pools[q].count || !opens(s, q, k, &kind))
            continue;
        s->gpu[ngpus] = (struct exact_gpu){q, kind, 0, 0, 0, 0};
        add_to(s, &s->gpu[ngpus], k, 1);
        s->used[q]++;
        s->gpu_of[item] = (uint8_t)ngpus;
        s->whole[item] = kind == KIND_ALONE;
        place_from(s, k + 1, ngpus + 1, cost + s->f->pools[q].price + EXACT_PER_GPU);
        s->used[q]--;
    }
}

void fleet_exact_within(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_exact_item *items, size_t n,
                        const struct fleet_exact_rules *r, struct fleet_exact_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (n > FLEET_EXACT_MAX)
        return;
    struct exact_search s = {.f = f, .ws = ws, .items = items, .r = r, .n = n, .best = out};
    for (size_t k = 0; k < n; k++) { /* most memory first, stable */
        size_t j = k;
        for (; j > 0 && ws->w[items[s.order[j - 1]].index].memory_mib <
                            ws->w[items[k].index].memory_mib; j--)
            s.order[j] = s.order[j - 1];
        s.order[j] = k;
    }
    fleet_pool_order(f, s.by_price); /* cheapest per MiB first: a first plan near the best */
    for (size_t q = 0; q < f->npools; q++)
        s.unlimited |= f->pools[q].count == FLEET_UNLIMITED;
    for (size_t k = n; k-- > 0;) {
        const struct fleet_exact_item *it = &items[s.order[k]];
        bool alone = r->mig ? it->profile < 0 : it->group == FLEET_EXACT_ALONE;
        s.mem_from[k] = s.mem_from[k + 1] + item_workload(&s, k)->memory_mib;
        s.comp_from[k] = s.comp_from[k + 1] + (alone ? 0 : item_workload(&s, k)->compute_bp);
        s.alone_from[k] = s.alone_from[k + 1] + alone;
    }
    place_from(&s, 0, 0, 0);
    out->exhaustive = s.steps < FLEET_EXACT_STEPS;
}

int fleet_exact_adopt(const struct fleet *f, const struct fleet_exact_plan *e,
                      struct fleet_gpu_list *g, struct fleet_plan *p)
{
    p->gpus = 0;
    memset(p->gpus_by_pool, 0, sizeof(p->gpus_by_pool));
    p->shortage = 0;
    p->cost_per_hour = 0;
    p->alone = 0;
    p->placed = 0;
    uint64_t left[FLEET_MAX_POOLS];
    for (size_t q = 0; q < f->npools; q++)
        left[q] = f->pools[q].count;
    g->n = 0;
    for (size_t j = 0; j < e->ngpus; j++)
        if (fleet_gpu_open(f, g, p, left, e->pool[j]) < 0)
            return -ENOMEM;
    return 0;
}
