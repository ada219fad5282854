/* fleet_exact.c - the cheapest plan for a short list, by trying every assignment: what the
 * planner falls back on when its packing of a few workloads goes beyond the fleet, and how it
 * proves a short list's plan the cheapest there is.
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
 * workloads), for at most the steps it is given. A search that ends within them finds the
 * cheapest plan within the fleet whenever there is one; one cut short keeps the best it found.
 * Without pruning the tree of n workloads on p pools has at most the sum over k <= n of
 * p (p + 1) ... (p + k - 1) nodes: 168,246 for 6 workloads on 5 pools, so every such list is
 * searched through.
 *
 * On a short list the fractional bounds are loose (22 workloads on L4 + T4: MPS's plan 5.4%
 * above its cost bound; lists of 25-60 on A100 + L4 + T4: 2-14%), so a plan within the fleet
 * is also searched against: the search then
 * looks only for a cheaper one, and each branch is cut where its cost plus a bound on what is
 * left to place (each lone workload's cheapest GPU; each group's memory, compute and places
 * beyond the room its open GPUs have, on the cheapest GPUs per MiB and per GPU) reaches the
 * plan's. Workloads alike are placed in the order of their GPUs, and of open GPUs alike only
 * the first is tried: each cut leaves one plan of every set that differ only by such a swap.
 * A search that ends within its steps and finds nothing proves the plan the cheapest.
 *
 * The bound on what a group has left counts whole GPUs: the least a purchase costs that has
 * as many GPUs as its compute and places need and as much memory as it needs (a table made
 * once per search, cover_table), where the memory at the lowest price per MiB bought a
 * fraction of a GPU; an open GPU's room that none of the group's workloads left fits in is
 * not counted. Where no pool's count can bind, the groups (which never share a GPU) are
 * searched one by one (search_by_group). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "mig.h"

#define EXACT_PER_GPU FLEET_EXACT_PER_GPU
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
    bool same_as_before[FLEET_EXACT_MAX]; /* order[k] is alike order[k - 1] */
    double price[FLEET_MAX_POOLS];        /* a GPU's, as the search counts it */
    /* what is left from position k on costs at least: lone workloads, and per group */
    double alone_cost_from[FLEET_EXACT_MAX + 1];
    uint64_t group_mem_from[FLEET_EXACT_MAX + 1][FLEET_GROUPS];
    uint64_t group_comp_from[FLEET_EXACT_MAX + 1][FLEET_GROUPS];
    uint32_t group_n_from[FLEET_EXACT_MAX + 1][FLEET_GROUPS];
    double cheapest_gpu, cheapest_per_mib; /* over the pools */
    /* MIG: what the instances from position k on cost at least, each at its share of the
       cheapest MIG GPU's memory (or compute) slices, or alone on another pool if that is less */
    double mig_by_mem_from[FLEET_EXACT_MAX + 1], mig_by_comp_from[FLEET_EXACT_MAX + 1];
    double mig_gpu;                        /* the cheapest GPU of the MIG model */
    uint64_t largest_mib;
    /* the least any GPUs cost that have at least g GPUs and u units of memory among them:
       cover[g * cover_units + u], g <= n; a pool's GPU counts its memory rounded up to units
       of unit_mib, what is left to place rounded down (so the table stays a bound); NULL
       where its memory could not be had */
    double *cover;
    size_t cover_units;
    uint64_t unit_mib;
    /* of the workloads of each group from position k on, the least memory and compute: an
       open GPU with less room than that holds none of them */
    uint64_t group_min_mem_from[FLEET_EXACT_MAX + 1][FLEET_GROUPS];
    uint32_t group_min_comp_from[FLEET_EXACT_MAX + 1][FLEET_GROUPS];
    unsigned long max_steps;
    struct exact_gpu gpu[FLEET_EXACT_MAX];
    uint8_t gpu_of[FLEET_EXACT_MAX];      /* by item */
    bool whole[FLEET_EXACT_MAX];
    uint64_t used[FLEET_MAX_POOLS];
    unsigned long steps;
    struct fleet_exact_plan *best;
};

static uint64_t u64_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

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

/* A bound on what placing the workloads from position k on adds to the cost, beside the ngpus
 * GPUs open: each lone one's cheapest GPU, and per group what its open GPUs have no room for
 * on the cheapest GPUs (as many as that much memory, compute or places needs at least, and at
 * least the memory at the lowest price per MiB). MIG: the lone ones only. */
static double rest_bound(const struct exact_search *s, size_t k, size_t ngpus)
{
    double bound = s->alone_cost_from[k];
    if (s->r->mig) {
        /* the room the open GPUs' layouts leave takes instances for nothing: at most its
           share of a GPU's slices of their cost */
        const struct mig_model *m = s->r->mig;
        uint64_t mem_used = 0, comp_used = 0, migs = 0;
        for (size_t g = 0; g < ngpus; g++) {
            if (s->gpu[g].kind != KIND_MIG)
                continue;
            migs++;
            for (size_t q = 0; q < m->nprofiles && q < 64 / FLEET_EXACT_LAYOUT_BITS; q++) {
                uint64_t n = s->gpu[g].layout >> (q * FLEET_EXACT_LAYOUT_BITS) &
                             ((1u << FLEET_EXACT_LAYOUT_BITS) - 1);
                mem_used += n * m->profiles[q].memory_slices;
                comp_used += n * m->profiles[q].compute_slices;
            }
        }
        double free_mem = (double)(migs * m->memory_slices - mem_used) / m->memory_slices;
        double free_comp = (double)(migs * m->compute_slices - comp_used) / m->compute_slices;
        double by_mem = s->mig_by_mem_from[k] - free_mem * s->mig_gpu;
        double by_comp = s->mig_by_comp_from[k] - free_comp * s->mig_gpu;
        double more = by_mem > by_comp ? by_mem : by_comp;
        return more > 0 ? bound + more : bound;
    }
    for (int grp = 0; grp < FLEET_GROUPS; grp++) {
        uint64_t mem = s->group_mem_from[k][grp], comp = s->group_comp_from[k][grp];
        uint64_t places = s->group_n_from[k][grp];
        uint64_t min_mem = s->group_min_mem_from[k][grp];
        uint32_t min_comp = s->group_min_comp_from[k][grp];
        for (size_t g = 0; g < ngpus && places; g++) {
            const struct exact_gpu *u = &s->gpu[g];
            if (u->kind != grp)
                continue;
            uint64_t mem_room = s->f->pools[u->pool].memory_mib - u->mem;
            uint32_t comp_room = s->r->compute_cap - u->comp;
            if (mem_room < min_mem || comp_room < min_comp || u->tenants == s->r->slots)
                continue; /* room that none of those left fits in */
            mem -= mem < mem_room ? mem : mem_room;
            comp -= comp < comp_room ? comp : comp_room;
            uint64_t room = s->r->slots - u->tenants;
            places -= places < room ? places : room;
        }
        if (!places)
            continue;
        uint64_t gpus = (mem + s->largest_mib - 1) / s->largest_mib;
        gpus = u64_max(gpus, (comp + s->r->compute_cap - 1) / s->r->compute_cap);
        gpus = u64_max(gpus, (places + s->r->slots - 1) / s->r->slots);
        double by_gpus = (double)gpus * s->cheapest_gpu, by_mib = (double)mem * s->cheapest_per_mib;
        double more = by_gpus > by_mib ? by_gpus : by_mib;
        if (s->cover) {
            size_t units = (size_t)(mem / s->unit_mib);
            double by_cover = s->cover[(gpus < s->n ? gpus : s->n) * s->cover_units +
                                       (units < s->cover_units ? units : s->cover_units - 1)];
            more = by_cover > more ? by_cover : more;
        }
        bound += more;
    }
    return bound;
}

static bool alike_gpus(const struct exact_gpu *a, const struct exact_gpu *b)
{
    return a->pool == b->pool && a->kind == b->kind && a->mem == b->mem && a->comp == b->comp &&
           a->tenants == b->tenants && a->layout == b->layout;
}

static void place_from(struct exact_search *s, size_t k, size_t ngpus, double cost)
{
    if (s->steps >= s->max_steps)
        return;
    s->steps++;
    if (k == s->n) {
        if (cost < s->best->cost - EXACT_PER_GPU / 2)
            record_best(s, ngpus, cost);
        return;
    }
    if (cost + rest_bound(s, k, ngpus) >= s->best->cost - EXACT_PER_GPU / 2)
        return;
    if (!room_enough(s, k, ngpus))
        return;
    size_t item = s->order[k];
    /* a workload alike the one before goes to its GPU or a later one; of open GPUs alike,
       only the first (each such choice leaves a plan of the same cost to the search) */
    size_t from = s->same_as_before[k] ? s->gpu_of[s->order[k - 1]] : 0;
    for (size_t g = from; g < ngpus; g++) {
        if (!joins(s, &s->gpu[g], k))
            continue;
        size_t before = from;
        while (before < g && !alike_gpus(&s->gpu[before], &s->gpu[g]))
            before++;
        if (before < g)
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
        place_from(s, k + 1, ngpus + 1, cost + s->price[q] + EXACT_PER_GPU);
        s->used[q]--;
    }
}

/* The table of exact_search.cover, for what the workloads share: rows g = 0..n GPUs at
 * least, columns of memory at least in units of unit_mib (the largest GPU's / COVER_STEPS, so
 * a GPU's rounding up costs the bound at most that much a GPU), each cell the least cost of a
 * purchase of the pools' GPUs that has both (counts not held to). NULL if its memory could not
 * be had. */
#define COVER_STEPS 256
static double *cover_table(const struct exact_search *s, size_t *units_out, uint64_t *unit_out)
{
    uint64_t unit = s->largest_mib / COVER_STEPS ? s->largest_mib / COVER_STEPS : 1;
    size_t units = (size_t)(s->mem_from[0] / unit) + 2, rows = s->n + 1;
    double *t = malloc(rows * units * sizeof(*t));
    if (!t)
        return NULL;
    size_t cap[FLEET_MAX_POOLS];
    for (size_t q = 0; q < s->f->npools; q++)
        cap[q] = (size_t)((s->f->pools[q].memory_mib + unit - 1) / unit);
    for (size_t g = 0; g < rows; g++)
        for (size_t u = 0; u < units; u++) {
            double best = g == 0 && u == 0 ? 0 : INFINITY;
            for (size_t q = 0; q < s->f->npools && (g || u); q++) {
                if (!cap[q])
                    continue;
                /* one GPU of pool q, and the rest: a row above (fewer GPUs) or, on row 0, a
                   column to the left (computed before) */
                size_t rest_u = u > cap[q] ? u - cap[q] : 0;
                double rest = t[(g ? g - 1 : 0) * units + rest_u];
                double c = s->price[q] + EXACT_PER_GPU + rest;
                best = c < best ? c : best;
            }
            t[g * units + u] = best;
        }
    *units_out = units;
    *unit_out = unit;
    return t;
}

/* A workload's memory as a share of a GPU of largest_mib plus its compute as a share of a GPU. */
static double size_of(const struct fleet_workload *w, uint64_t largest_mib)
{
    return (double)w->memory_mib / (double)largest_mib + w->compute_bp / (double)FLEET_BP_FULL;
}

/* Whether workload a goes before b (largest_mib > 0: the larger size_of first; then most
 * memory, then most compute, then by group and profile: workloads alike end up side by
 * side). */
static bool goes_before(const struct fleet_workloads *ws, const struct fleet_exact_item *a,
                        const struct fleet_exact_item *b, uint64_t largest_mib)
{
    const struct fleet_workload *x = &ws->w[a->index], *y = &ws->w[b->index];
    if (largest_mib && size_of(x, largest_mib) != size_of(y, largest_mib))
        return size_of(x, largest_mib) > size_of(y, largest_mib);
    if (x->memory_mib != y->memory_mib)
        return x->memory_mib > y->memory_mib;
    if (x->compute_bp != y->compute_bp)
        return x->compute_bp > y->compute_bp;
    if (a->group != b->group)
        return a->group < b->group;
    return a->profile < b->profile;
}

static void search_init(struct exact_search *s, const struct fleet *f,
                        const struct fleet_workloads *ws, const struct fleet_exact_item *items,
                        size_t n, const struct fleet_exact_rules *r,
                        const struct fleet_exact_limits *lim, struct fleet_exact_plan *out)
{
    *s = (struct exact_search){.f = f, .ws = ws, .items = items, .r = r, .n = n, .best = out,
                               .max_steps = lim->steps};
    uint64_t largest = 0;
    for (size_t q = 0; q < f->npools && lim->by_size; q++)
        largest = u64_max(largest, f->pools[q].memory_mib);
    for (size_t k = 0; k < n; k++) { /* stable */
        size_t j = k;
        for (; j > 0 && goes_before(ws, &items[k], &items[s->order[j - 1]], largest); j--)
            s->order[j] = s->order[j - 1];
        s->order[j] = k;
    }
    for (size_t k = 1; k < n; k++)
        s->same_as_before[k] =
            !goes_before(ws, &items[s->order[k - 1]], &items[s->order[k]], largest);
    fleet_pool_order(f, s->by_price); /* cheapest per MiB first: a first plan near the best */
    s->cheapest_gpu = s->cheapest_per_mib = INFINITY;
    for (size_t q = 0; q < f->npools; q++) {
        s->unlimited |= f->pools[q].count == FLEET_UNLIMITED;
        s->price[q] = lim->by_gpus ? 0 : f->pools[q].price;
        double gpu = s->price[q] + EXACT_PER_GPU;
        s->cheapest_gpu = gpu < s->cheapest_gpu ? gpu : s->cheapest_gpu;
        if (f->pools[q].memory_mib && gpu / (double)f->pools[q].memory_mib < s->cheapest_per_mib)
            s->cheapest_per_mib = gpu / (double)f->pools[q].memory_mib;
        s->largest_mib = u64_max(s->largest_mib, f->pools[q].memory_mib);
    }
    s->mig_gpu = INFINITY;
    for (size_t q = 0; q < f->npools && r->mig; q++)
        if (r->mig_pool[q] && s->price[q] + EXACT_PER_GPU < s->mig_gpu)
            s->mig_gpu = s->price[q] + EXACT_PER_GPU;
    for (size_t k = n; k-- > 0;) {
        const struct fleet_exact_item *it = &items[s->order[k]];
        const struct fleet_workload *w = item_workload(s, k);
        double by_mem = 0, by_comp = 0;
        if (r->mig && it->profile >= 0) {
            const struct mig_profile *pr = &r->mig->profiles[it->profile];
            double other = INFINITY; /* alone on a GPU of another pool */
            for (size_t q = 0; q < f->npools; q++)
                if (!r->mig_pool[q] && f->pools[q].memory_mib >= w->memory_mib &&
                    s->price[q] + EXACT_PER_GPU < other)
                    other = s->price[q] + EXACT_PER_GPU;
            by_mem = s->mig_gpu * pr->memory_slices / r->mig->memory_slices;
            by_comp = s->mig_gpu * pr->compute_slices / r->mig->compute_slices;
            by_mem = by_mem < other ? by_mem : other;
            by_comp = by_comp < other ? by_comp : other;
        }
        s->mig_by_mem_from[k] = s->mig_by_mem_from[k + 1] + by_mem;
        s->mig_by_comp_from[k] = s->mig_by_comp_from[k + 1] + by_comp;
        bool alone = r->mig ? it->profile < 0 : it->group == FLEET_EXACT_ALONE;
        s->mem_from[k] = s->mem_from[k + 1] + w->memory_mib;
        s->comp_from[k] = s->comp_from[k + 1] + (alone ? 0 : w->compute_bp);
        s->alone_from[k] = s->alone_from[k + 1] + alone;
        double lone = INFINITY;
        for (size_t q = 0; q < f->npools && alone; q++)
            if (f->pools[q].memory_mib >= w->memory_mib && s->price[q] + EXACT_PER_GPU < lone)
                lone = s->price[q] + EXACT_PER_GPU;
        s->alone_cost_from[k] = s->alone_cost_from[k + 1] + (alone && lone < INFINITY ? lone : 0);
        memcpy(s->group_mem_from[k], s->group_mem_from[k + 1], sizeof(s->group_mem_from[k]));
        memcpy(s->group_comp_from[k], s->group_comp_from[k + 1], sizeof(s->group_comp_from[k]));
        memcpy(s->group_n_from[k], s->group_n_from[k + 1], sizeof(s->group_n_from[k]));
        memcpy(s->group_min_mem_from[k], s->group_min_mem_from[k + 1],
               sizeof(s->group_min_mem_from[k]));
        memcpy(s->group_min_comp_from[k], s->group_min_comp_from[k + 1],
               sizeof(s->group_min_comp_from[k]));
        if (k == n - 1)
            for (int grp = 0; grp < FLEET_GROUPS; grp++) {
                s->group_min_mem_from[k][grp] = UINT64_MAX;
                s->group_min_comp_from[k][grp] = UINT32_MAX;
            }
        if (!r->mig && it->group >= 0 && it->group < FLEET_GROUPS) {
            s->group_mem_from[k][it->group] += w->memory_mib;
            s->group_comp_from[k][it->group] += w->compute_bp;
            s->group_n_from[k][it->group]++;
            uint64_t *min_mem = &s->group_min_mem_from[k][it->group];
            uint32_t *min_comp = &s->group_min_comp_from[k][it->group];
            *min_mem = w->memory_mib < *min_mem ? w->memory_mib : *min_mem;
            *min_comp = w->compute_bp < *min_comp ? w->compute_bp : *min_comp;
        }
    }
    if (!r->mig)
        s->cover = cover_table(s, &s->cover_units, &s->unit_mib);
}

/* What every plan of the list costs at least (the search's bound at its root). */
static double root_bound(const struct fleet *f, const struct fleet_workloads *ws,
                         const struct fleet_exact_item *items, size_t n,
                         const struct fleet_exact_rules *r, const struct fleet_exact_limits *lim)
{
    struct exact_search *s = malloc(sizeof(*s));
    struct fleet_exact_plan scratch = {0}; /* search_init's best: not read */
    if (!s)
        return 0;
    search_init(s, f, ws, items, n, r, lim, &scratch);
    double bound = rest_bound(s, 0, 0);
    free(s->cover);
    free(s);
    return bound;
}

/* Whether the pools' counts can hold back no plan of n workloads: each pool has no count or
 * one of at least n (a plan uses at most a GPU per workload). Its groups then never compete
 * for a GPU, and the cheapest plan is each group's cheapest. */
static bool counts_never_bind(const struct fleet *f, size_t n)
{
    for (size_t q = 0; q < f->npools; q++)
        if (f->pools[q].count != FLEET_UNLIMITED && f->pools[q].count < n)
            return false;
    return true;
}

/* Whether a group of m workloads (the first a) is searched before one of m_b (b). */
static bool goes_first(const struct fleet_exact_item *a, size_t m, const struct fleet_exact_item *b,
                       size_t m_b)
{
    if ((a->group == FLEET_EXACT_ALONE) != (b->group == FLEET_EXACT_ALONE))
        return a->group == FLEET_EXACT_ALONE;
    return m < m_b;
}

#define GROUP_STEPS_KEPT 10000ul /* steps a group's search leaves for each group after it */

/* The search group by group, where the counts never bind (above) and the list has more than
 * one: each group's cheapest plan is searched for on its own, and the plan is theirs side by
 * side. In one search, a group's failure to pack onto fewer GPUs was searched again under
 * every placing of the other groups' workloads between its own: MPS on 30 workloads on
 * H100 + A100-40GB took 55 million steps to its proof, group by group 181,000. false (nothing
 * done) where the rules are MIG's, the list has one group or a count may bind. */
static bool search_by_group(const struct fleet *f, const struct fleet_workloads *ws,
                            const struct fleet_exact_item *items, size_t n,
                            const struct fleet_exact_rules *r,
                            const struct fleet_exact_limits *lim, struct fleet_exact_plan *out)
{
    int groups[FLEET_GROUPS + 1];
    size_t ngroups = 0;
    for (size_t i = 0; i < n; i++) {
        size_t g = 0;
        while (g < ngroups && groups[g] != items[i].group)
            g++;
        if (g < ngroups)
            continue;
        if (ngroups > FLEET_GROUPS)
            return false; /* more groups than the rules make: search as one list */
        groups[ngroups++] = items[i].group;
    }
    if (r->mig || ngroups < 2 || !counts_never_bind(f, n))
        return false;
    struct fleet_exact_item sub[FLEET_GROUPS + 1][FLEET_EXACT_MAX];
    size_t of[FLEET_GROUPS + 1][FLEET_EXACT_MAX], m[FLEET_GROUPS + 1] = {0};
    double bound[FLEET_GROUPS + 1], bounds = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t g = 0; g < ngroups; g++)
            if (items[i].group == groups[g]) {
                of[g][m[g]] = i;
                sub[g][m[g]++] = items[i];
            }
    /* the lone workloads first (each on its cheapest GPU that holds it: a few steps), then
       the shortest group first: the longest gets the tightest limit, from the others'
       cheapest, and the steps they leave */
    size_t order[FLEET_GROUPS + 1];
    for (size_t g = 0; g < ngroups; g++) {
        size_t at = g;
        for (; at > 0 && goes_first(sub[g], m[g], sub[order[at - 1]], m[order[at - 1]]); at--)
            order[at] = order[at - 1];
        order[at] = g;
    }
    for (size_t g = 0; g < ngroups; g++) {
        bound[g] = root_bound(f, ws, sub[g], m[g], r, lim);
        bounds += bound[g];
    }
    /* each group's search looks for a plan of it that, beside the others' cheapest (or their
       bound, for those still to search), is cheaper than the limit: where none is, no plan
       is (the search ends there) */
    double limit = lim->below_cost + (double)lim->below_gpus * EXACT_PER_GPU;
    struct fleet_exact_plan sum = {.found = true, .exhaustive = true};
    memset(out, 0, sizeof(*out));
    for (size_t k = 0; k < ngroups && sum.found; k++) {
        size_t g = order[k];
        bounds -= bound[g];
        struct fleet_exact_limits sub_lim = *lim;
        sub_lim.below_cost = limit - sum.cost - bounds;
        sub_lim.below_gpus = 0;
        unsigned long left = lim->steps > sum.steps ? lim->steps - sum.steps : 0;
        unsigned long kept = GROUP_STEPS_KEPT * (ngroups - 1 - k); /* for the groups after */
        sub_lim.steps = left > 2 * kept ? left - kept : left / 2;
        struct fleet_exact_plan one;
        fleet_exact_search(f, ws, sub[g], m[g], r, &sub_lim, &one);
        sum.steps += one.steps;
        sum.exhaustive &= one.exhaustive;
        sum.found &= one.found;
        sum.cost += one.cost;
        for (size_t j = 0; j < m[g] && one.found; j++) {
            sum.gpu_of[of[g][j]] = (uint8_t)(sum.ngpus + one.gpu_of[j]);
            sum.whole[of[g][j]] = one.whole[j];
        }
        for (size_t j = 0; j < one.ngpus && one.found; j++)
            sum.pool[sum.ngpus + j] = one.pool[j];
        sum.ngpus += one.found ? one.ngpus : 0;
    }
    if (sum.found && sum.cost < limit - EXACT_PER_GPU / 2) {
        *out = sum;
    } else {
        out->cost = limit;
        out->steps = sum.steps;
        /* every group searched through: no plan is cheaper */
        out->exhaustive = sum.exhaustive;
    }
    return true;
}

void fleet_exact_search(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_exact_item *items, size_t n,
                        const struct fleet_exact_rules *r, const struct fleet_exact_limits *lim,
                        struct fleet_exact_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (n > FLEET_EXACT_MAX || search_by_group(f, ws, items, n, r, lim, out))
        return;
    struct exact_search *s = malloc(sizeof(*s));
    if (!s)
        return; /* nothing found, and not exhaustive */
    search_init(s, f, ws, items, n, r, lim, out);
    out->cost = lim->below_cost + (double)lim->below_gpus * EXACT_PER_GPU;
    place_from(s, 0, 0, 0);
    free(s->cover);
    out->exhaustive = s->steps < s->max_steps;
    out->steps = s->steps;
    free(s);
}



void fleet_exact_within(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_exact_item *items, size_t n,
                        const struct fleet_exact_rules *r, struct fleet_exact_plan *out)
{
    const struct fleet_exact_limits lim = {.below_cost = INFINITY, .steps = FLEET_EXACT_STEPS};
    fleet_exact_search(f, ws, items, n, r, &lim, out);
}

int fleet_exact_adopt(const struct fleet *f, const struct fleet_exact_plan *e,
                      struct fleet_gpu_list *g, struct fleet_plan *p)
{
    uint64_t left[FLEET_MAX_POOLS];
    fleet_gpu_restart(f, g, p, left);
    for (size_t j = 0; j < e->ngpus; j++)
        if (fleet_gpu_open(f, g, p, left, e->pool[j]) < 0)
            return -ENOMEM;
    return 0;
}
