/* fleet_pack.c - packing a workload list onto a fleet under whole GPUs, time-slicing, MPS and
 * carve slices (MIG is in fleet_mig.c), and the lower bound each packing is measured against.
 *
 * The packing is first-fit decreasing on two dimensions (memory, compute) plus a tenant
 * limit, over a segment tree of the open GPUs so that each placement costs O(log GPUs) in
 * the usual case: 100,000 workloads pack in milliseconds; where memory and compute both bind
 * on a GPU, filling one GPU at a time does better and is kept when it does. Each mechanism's
 * rules decide which workloads must have a GPU of their own (untrusted tenants without
 * hardware isolation, strict latency under time-slicing) and which workloads may not share a
 * GPU (strict latency with anything else under MPS); the rest share. On a fleet of several models the cost bound
 * (fleet_lp.c) comes first, and its solution says which pools the GPUs come from. */
#include <errno.h>
#include <math.h> /* INFINITY only: the carve command does not link libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

static const char *const mech_names[FLEET_NMECH] = {"whole", "time-slicing", "mps", "mig",
                                                    "carve"};
static const char *const mech_titles[FLEET_NMECH] = {"whole GPUs", "time-slicing", "MPS", "MIG",
                                                     "carve slices"};

const char *fleet_mech_name(int mech)
{
    return mech >= 0 && mech < FLEET_NMECH ? mech_names[mech] : "?";
}

const char *fleet_mech_title(int mech)
{
    return mech >= 0 && mech < FLEET_NMECH ? mech_titles[mech] : "?";
}

void fleet_options_defaults(struct fleet_options *o)
{
    memset(o, 0, sizeof(*o));
    o->timeslice_replicas = 16;
    o->mps_clients = 48;
    o->carve_slices = 64;
    o->timeslice_compute_bp = 9200;
}

void fleet_pool_order(const struct fleet *f, size_t order[FLEET_MAX_POOLS])
{
    for (size_t i = 0; i < f->npools; i++)
        order[i] = i;
    for (size_t i = 1; i < f->npools; i++)
        for (size_t j = i; j > 0; j--) {
            const struct fleet_pool *a = &f->pools[order[j - 1]], *b = &f->pools[order[j]];
            if (a->price / (double)a->memory_mib <= b->price / (double)b->memory_mib)
                break;
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

int fleet_pick_pool(const struct fleet *f, const uint64_t *pool_left, uint64_t memory_mib)
{
    int best = -1, fallback = -1;
    for (size_t i = 0; i < f->npools; i++) {
        const struct fleet_pool *p = &f->pools[i];
        if (p->memory_mib < memory_mib)
            continue;
        /* cheapest first; among equal prices the smallest GPU that fits */
        if (fallback < 0 || p->price < f->pools[fallback].price ||
            (p->price == f->pools[fallback].price && p->memory_mib < f->pools[fallback].memory_mib))
            fallback = (int)i;
        if (pool_left[i] == 0)
            continue;
        if (best < 0 || p->price < f->pools[best].price ||
            (p->price == f->pools[best].price && p->memory_mib < f->pools[best].memory_mib))
            best = (int)i;
    }
    return best >= 0 ? best : fallback;
}

/* Which pool a sharing group's next GPU comes from. The cost bound's solution says how many
 * GPUs of each pool the groups should take (budget): those are opened largest GPU first, so
 * that first-fit decreasing puts the largest workloads on the largest GPUs and the small ones
 * that come last fill the small GPUs. Beyond the budgets (the packing is never as tight as
 * the fractional solution), the pool that holds the workloads still to place most cheaply: a
 * GPU's price over how many of them it would hold at their average memory and compute (see
 * cheapest_per_workload); among the pools with GPUs left, else among all. */
struct pool_choice {
    uint64_t left[FLEET_MAX_POOLS];  /* GPUs each pool has left */
    double budget[FLEET_MAX_POOLS];  /* GPUs the bound's solution buys for the groups, less
                                        those opened */
    size_t by_size[FLEET_MAX_POOLS]; /* largest memory first; ties cheapest first */
    int only;                        /* >= 0: the pool GPUs come from while it has GPUs left
                                        (a pool's share of the group, pack_by_band) */
    struct sort_key *deferred;       /* with only: where a workload goes when that pool has no
                                        GPU left for it (for the next pool's share), or NULL */
    size_t ndeferred;
    const struct fleet_demand *d;    /* the bands, and the solution's share of each band */
    const double (*band_count)[FLEET_MAX_POOLS]; /* per pool (the group's), or NULL */
    const double (*band_memory_mib)[FLEET_MAX_POOLS]; /* their memory, with band_count */
    double band_cost; /* what the solution's GPUs for the group cost */
    bool exact; /* the split with each band's ends as the solution has them and the limited
                   pools' GPUs filled exactly (pack_by_band_exact) */
    int8_t (*share_packer)[FLEET_MAX_POOLS + 1]; /* per split (exact or not) and share (by_size
                             order, then the rest): the packer its dry runs chose (index in
                             packers[]), -1 unknown; kept from the split's dry run for its
                             packing */
};

/* The workloads of a group still to place, the one at hand included. */
struct still_to_place {
    uint64_t memory_mib, compute_bp, count;
};

static int cheapest_per_workload(const struct fleet *f, const struct pool_choice *pc,
                                 const struct still_to_place *rest, uint32_t compute_cap,
                                 uint32_t slots, uint64_t memory_mib, bool need_left)
{
    int pool = -1;
    double best = 0;
    for (size_t i = 0; i < f->npools; i++) {
        if ((need_left && !pc->left[i]) || f->pools[i].memory_mib < memory_mib)
            continue;
        double holds = (double)slots;
        if (rest->memory_mib)
            holds = dmin(holds, (double)f->pools[i].memory_mib * (double)rest->count /
                                    (double)rest->memory_mib);
        if (rest->compute_bp)
            holds = dmin(holds, (double)compute_cap * (double)rest->count / (double)rest->compute_bp);
        double per = f->pools[i].price / dmin(dmax(holds, 1), (double)rest->count);
        if (pool < 0 || per < best - 1e-12) {
            pool = (int)i;
            best = per;
        }
    }
    return pool;
}

static int choose_pool(const struct fleet *f, struct pool_choice *pc,
                       const struct still_to_place *rest, uint32_t compute_cap, uint32_t slots,
                       uint64_t memory_mib)
{
    if (pc->only >= 0 && pc->left[pc->only] && f->pools[pc->only].memory_mib >= memory_mib) {
        pc->budget[pc->only] -= 1;
        return pc->only;
    }
    if (pc->only >= 0 && pc->deferred)
        return -1;
    for (size_t o = 0; o < f->npools; o++) {
        size_t i = pc->by_size[o];
        if (pc->budget[i] >= 0.5 && pc->left[i] && f->pools[i].memory_mib >= memory_mib) {
            pc->budget[i] -= 1;
            return (int)i;
        }
    }
    int pool = cheapest_per_workload(f, pc, rest, compute_cap, slots, memory_mib, true);
    return pool >= 0 ? pool : cheapest_per_workload(f, pc, rest, compute_cap, slots, memory_mib, false);
}

/* ---- the plan's GPUs ---- */

long fleet_gpu_open(const struct fleet *f, struct fleet_gpu_list *g, struct fleet_plan *p,
                    uint64_t *pool_left, int pool)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        struct fleet_gpu_use *bigger = realloc(g->use, cap * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        g->use = bigger;
        g->cap = cap;
    }
    memset(&g->use[g->n], 0, sizeof(g->use[0]));
    g->use[g->n].pool = (uint32_t)pool;
    if (pool_left[pool])
        pool_left[pool]--;
    else
        p->shortage++;
    p->gpus_by_pool[pool]++;
    p->gpus++;
    p->cost_per_hour += f->pools[pool].price;
    return (long)g->n++;
}

static void gpu_add(struct fleet_gpu_use *u, const struct fleet_workload *w, uint64_t held)
{
    u->tenants++;
    u->memory_used_mib += w->memory_mib;
    u->memory_held_mib += held;
    u->compute_bp += w->compute_bp;
}

/* ---- first fit over a segment tree ---- */

struct fit_tree {
    size_t size;     /* leaves, a power of two */
    size_t nbins;    /* open bins (leaves 0..nbins-1) */
    uint64_t *mem;   /* max free memory in the subtree */
    uint32_t *comp;  /* max free compute */
    uint32_t *slots; /* max free tenant places */
    long *gpu;       /* leaf -> index into the plan's GPUs */
};

static int tree_init(struct fit_tree *t, size_t max_bins)
{
    t->size = 1;
    while (t->size < max_bins)
        t->size <<= 1;
    t->nbins = 0;
    t->mem = calloc(2 * t->size, sizeof(*t->mem));
    t->comp = calloc(2 * t->size, sizeof(*t->comp));
    t->slots = calloc(2 * t->size, sizeof(*t->slots));
    t->gpu = calloc(t->size, sizeof(*t->gpu));
    return t->mem && t->comp && t->slots && t->gpu ? 0 : -ENOMEM;
}

static void tree_free(struct fit_tree *t)
{
    free(t->mem);
    free(t->comp);
    free(t->slots);
    free(t->gpu);
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

static void tree_set(struct fit_tree *t, size_t leaf, uint64_t mem, uint32_t comp, uint32_t slots)
{
    size_t i = leaf + t->size;
    t->mem[i] = mem;
    t->comp[i] = comp;
    t->slots[i] = slots;
    for (i >>= 1; i; i >>= 1) {
        t->mem[i] = MAX(t->mem[2 * i], t->mem[2 * i + 1]);
        t->comp[i] = MAX(t->comp[2 * i], t->comp[2 * i + 1]);
        t->slots[i] = MAX(t->slots[2 * i], t->slots[2 * i + 1]);
    }
}

static bool node_may_fit(const struct fit_tree *t, size_t i, uint64_t mem, uint32_t comp)
{
    return t->mem[i] >= mem && t->comp[i] >= comp && t->slots[i] >= 1;
}

/* The leftmost open bin with room for (mem, comp), or -1. The maxima are per dimension, so
 * a subtree may pass the test and still hold no bin that fits both: then it backtracks. */
static long tree_find(const struct fit_tree *t, size_t i, uint64_t mem, uint32_t comp,
                      unsigned *budget)
{
    if (!node_may_fit(t, i, mem, comp) || !*budget)
        return -1;
    --*budget;
    if (i >= t->size)
        return (long)(i - t->size);
    long r = tree_find(t, 2 * i, mem, comp, budget);
    return r >= 0 ? r : tree_find(t, 2 * i + 1, mem, comp, budget);
}

/* Nodes one search may visit before the workload opens a GPU instead: bounds the time of a
 * placement on lists whose open GPUs are full in one dimension and roomy in the other. */
#define FIT_SEARCH_BUDGET 2048

/* ---- one mechanism's packing ---- */

struct mech_rules {
    uint32_t compute_cap;  /* what one shared GPU delivers */
    uint32_t slots;        /* tenants per GPU */
};

enum { GROUP_ALONE = 255 };

/* Which group a workload packs in under mech: GROUP_ALONE for a GPU of its own. Groups never
 * share a GPU. */
static int group_of(int mech, const struct fleet_workload *w, const struct mech_rules *r)
{
    switch (mech) {
    case FLEET_WHOLE:
        return GROUP_ALONE;
    case FLEET_TIMESLICE: /* no isolation at all, and context-switch jitter */
        if (w->trust == FLEET_UNTRUSTED || w->latency == FLEET_LAT_STRICT ||
            w->compute_bp > r->compute_cap)
            return GROUP_ALONE;
        return 0;
    case FLEET_MPS: /* no fault isolation; a batch neighbour wrecks the tail (5.3x P99) */
        if (w->trust == FLEET_UNTRUSTED)
            return GROUP_ALONE;
        return w->latency == FLEET_LAT_STRICT ? 1 : 0;
    default: /* carve: software isolation, latency priority lets strict share */
        return w->trust == FLEET_UNTRUSTED ? GROUP_ALONE : 0;
    }
}

struct sort_key {
    uint64_t key;
    uint32_t index;
};

/* A group's totals: all of keys[0..n) still to place. */
static struct still_to_place still_all(const struct fleet_workloads *ws,
                                       const struct sort_key *keys, size_t n)
{
    struct still_to_place rest = {0, 0, n};
    for (size_t k = 0; k < n; k++) {
        rest.memory_mib += ws->w[keys[k].index].memory_mib;
        rest.compute_bp += ws->w[keys[k].index].compute_bp;
    }
    return rest;
}

/* w is placed, or left to another pool's share: no longer this packing's to place. */
static void still_drop(struct still_to_place *rest, const struct fleet_workload *w)
{
    rest->memory_mib -= w->memory_mib;
    rest->compute_bp -= w->compute_bp;
    rest->count--;
}

/* No pool of this share can open a GPU for w: it goes to the next pool's share. */
static void defer_to_next_share(struct pool_choice *pc, struct still_to_place *rest,
                                struct sort_key key, const struct fleet_workload *w)
{
    pc->deferred[pc->ndeferred++] = key;
    still_drop(rest, w);
}

static int by_key_desc(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Largest key first, ties in list order. Keys are at most 2 x FLEET_BP_FULL (memory and
 * compute in basis points of the largest GPU), so a counting sort does it in O(n). */
static void sort_keys(struct sort_key *keys, size_t n)
{
    const size_t range = 2 * FLEET_BP_FULL + 1;
    if (n < range / 8) { /* few keys: the counting array would cost more than sorting */
        qsort(keys, n, sizeof(*keys), by_key_desc);
        return;
    }
    size_t *start = calloc(range + 1, sizeof(*start));
    struct sort_key *out = malloc((n ? n : 1) * sizeof(*out));
    if (!start || !out) {
        free(start);
        free(out);
        qsort(keys, n, sizeof(*keys), by_key_desc);
        return;
    }
    for (size_t i = 0; i < n; i++)
        start[range - 1 - (keys[i].key < range ? keys[i].key : range - 1)]++;
    size_t sum = 0;
    for (size_t b = 0; b < range; b++) {
        size_t c = start[b];
        start[b] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        out[start[range - 1 - (keys[i].key < range ? keys[i].key : range - 1)]++] = keys[i];
    memcpy(keys, out, n * sizeof(*keys));
    free(out);
    free(start);
}

static int pack_group(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t n, const struct mech_rules *r,
                      struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    struct fit_tree t;
    int ret = tree_init(&t, n ? n : 1);
    /* the smallest memory and compute among the workloads still to place: a GPU that cannot
       take them is closed, which keeps the search from wandering into full GPUs */
    uint64_t *min_mem = malloc((n + 1) * sizeof(*min_mem));
    uint32_t *min_comp = malloc((n + 1) * sizeof(*min_comp));
    if (!min_mem || !min_comp)
        ret = -ENOMEM;
    if (!ret) {
        min_mem[n] = UINT64_MAX;
        min_comp[n] = UINT32_MAX;
        for (size_t k = n; k-- > 0;) {
            const struct fleet_workload *w = &ws->w[keys[k].index];
            min_mem[k] = w->memory_mib < min_mem[k + 1] ? w->memory_mib : min_mem[k + 1];
            min_comp[k] = w->compute_bp < min_comp[k + 1] ? w->compute_bp : min_comp[k + 1];
        }
    }
    struct still_to_place rest = still_all(ws, keys, n);
    for (size_t k = 0; k < n && !ret; k++) {
        const struct fleet_workload *w = &ws->w[keys[k].index];
        unsigned budget = FIT_SEARCH_BUDGET;
        long leaf = tree_find(&t, 1, w->memory_mib, w->compute_bp, &budget);
        if (leaf < 0) {
            int pool = choose_pool(f, pc, &rest, r->compute_cap, r->slots, w->memory_mib);
            if (pool < 0) {
                defer_to_next_share(pc, &rest, keys[k], w);
                continue;
            }
            long gi = fleet_gpu_open(f, g, p, pc->left, pool);
            if (gi < 0) {
                ret = -ENOMEM;
                break;
            }
            leaf = (long)t.nbins++;
            t.gpu[leaf] = gi;
        }
        struct fleet_gpu_use *u = &g->use[t.gpu[leaf]];
        gpu_add(u, w, w->memory_mib);
        still_drop(&rest, w);
        if (p->gpu_of)
            p->gpu_of[keys[k].index] = (uint32_t)t.gpu[leaf];
        p->placed++;
        uint64_t free_mem = f->pools[u->pool].memory_mib - u->memory_used_mib;
        uint32_t free_comp = u->compute_bp >= r->compute_cap ? 0 : r->compute_cap - u->compute_bp;
        uint32_t free_slots = r->slots - u->tenants;
        if (free_mem < min_mem[k + 1] || free_comp < min_comp[k + 1])
            free_mem = free_comp = free_slots = 0;
        tree_set(&t, (size_t)leaf, free_mem, free_comp, free_slots);
    }
    free(min_mem);
    free(min_comp);
    tree_free(&t);
    return ret;
}

/* ---- filling one GPU at a time ---- */

/* When memory and compute both bind on a GPU (workloads of a fifth of a small GPU in each),
 * first-fit decreasing leaves the GPUs 87-93% full. Filling one GPU at a time instead, each
 * step taking the workload that leaves the least room (the smallest sum of the squares of
 * what is left in each dimension, as shares of the GPU), gets within about 2% of the volume
 * bound there. To find that workload quickly the group is kept in a grid of cells by memory
 * and compute, with a bitmap of the non-empty cells of each memory column: a step looks at
 * the fullest cell that fits in each column, and stops at the first column that cannot beat
 * the best found. A few hundred operations a workload.
 *
 * Taking the fullest fit at each step can leave a room that nothing fills (workloads of
 * 10-30% compute that add up to 93% leave 7%, which none fills: 4-10% of the GPU left on a
 * fifth of the L4s of a compute-heavy list). So when a GPU closes with room in both
 * dimensions, its last workload is given back and the best pair for the room it had is looked
 * for (fill_pair: about a hundred candidates, each with its best second); the pair replaces
 * it if it leaves less room. On limited small GPUs whose shortfall goes to GPUs at three times
 * the price this took compute-heavy plans from 5.3% above the cost bound to 1.0%
 * (docs/results/2026-11-23-plan-bench-mixed.md).
 *
 * A limited large pool (H100:3000 beside L4s) has to hold every workload that no smaller GPU
 * holds; filled by the least room alone, its GPUs took workloads an L4 could have held and
 * left the large ones beyond the fleet. So while those outnumber its GPUs left, a GPU of it
 * takes them first (only_here), then anything.
 *
 * Where the tenant places bind (16 time-sliced replicas on an H100 or A100), each step keeps
 * room for the places still free at the average workload left (leave_room_for_places), so
 * that a GPU ends full in places and memory together: time-slicing on small notebooks went
 * from 0.5% to 0.0% above the GPU bound on H100s alone, 3.4% to 2.7% on A100 + L4 + T4.
 *
 * A limited pool's share of a group split by bands (pack_by_band_exact) is what its GPUs
 * should hold to the last MiB, and what they cannot hold goes to smaller GPUs, one to a GPU
 * where it is large. Its GPUs are filled exactly (fill_exact: a subset sum over the
 * workloads' memory in 1/1024 of the largest GPU, per count), most of them to within 0.5% of
 * their memory. */
#define FILL_GRID 64
#define FILL_CELL_SCAN 8 /* workloads of a cell on the border of the room tried for a fit */
#define FILL_FULL 200    /* a GPU with less than 1/200 of it left in a dimension is full */

struct fill_grid {
    uint64_t mem_lo, mem_step;   /* column a: memory in [mem_lo + a*mem_step, + mem_step) */
    uint64_t comp_lo, comp_step; /* row b: compute likewise */
    uint64_t bits[FILL_GRID];    /* bit b of column a: cell (a, b) has workloads left */
    uint32_t *start;             /* FILL_GRID^2 + 1: each cell's first entry in order */
    uint32_t *next;              /* each cell's first entry not yet taken */
    uint32_t *order;             /* positions in keys, by cell; largest first in a cell */
    uint8_t *taken;              /* per position in keys */
    uint64_t sizes[FLEET_MAX_POOLS]; /* the pools' memory sizes, distinct, ascending */
    uint64_t above[FLEET_MAX_POOLS]; /* workloads left above each size */
    size_t nsizes;
    struct exact_buckets *ex;        /* for fill_exact, or NULL */
};

/* The workloads of a group by memory in units of unit MiB, rounded up (bucket b holds those of
 * (b-1)*unit+1 .. b*unit MiB), for the exact fill of a limited pool's GPUs (fill_exact). */
#define EXACT_UNITS 1024 /* units in the largest GPU */
#define EXACT_WORDS (EXACT_UNITS / 64 + 1)
#define EXACT_MOST 16    /* a GPU that would hold more of the workloads left is filled greedily */
struct exact_buckets {
    uint64_t unit;
    uint32_t start[EXACT_UNITS + 2]; /* each bucket's first entry in order */
    uint32_t next[EXACT_UNITS + 1];  /* its first entry not yet taken */
    uint32_t left[EXACT_UNITS + 1];  /* its workloads not yet taken */
    uint32_t *order;                 /* positions in keys, by bucket; largest key first */
    double debt;                     /* workloads the GPUs so far took fewer than wanted */
    uint64_t (*reach)[EXACT_MOST + 1][EXACT_WORDS]; /* per bucket tried: before it, per count,
                                                       the fills reachable */
};

/* Counts workload w in (change 1) or out (-1) of the workloads left above each pool size. */
static void fill_count(struct fill_grid *gr, const struct fleet_workload *w, int change)
{
    for (size_t j = 0; j < gr->nsizes && w->memory_mib > gr->sizes[j]; j++)
        gr->above[j] += (uint64_t)(int64_t)change;
}

static void insert_distinct(uint64_t *list, size_t *n, uint64_t v);
static uint64_t fleet_max_memory(const struct fleet *f);

static size_t exact_bucket(const struct exact_buckets *ex, const struct fleet_workload *w)
{
    return (size_t)((w->memory_mib + ex->unit - 1) / ex->unit);
}

static void exact_take(struct exact_buckets *ex, const uint8_t *taken,
                       const struct fleet_workload *w)
{
    size_t b = exact_bucket(ex, w);
    ex->left[b]--;
    while (ex->next[b] < ex->start[b + 1] && taken[ex->order[ex->next[b]]])
        ex->next[b]++;
}

static void exact_untake(struct exact_buckets *ex, const struct fleet_workload *w, size_t k)
{
    size_t b = exact_bucket(ex, w);
    ex->left[b]++;
    for (uint32_t e = ex->start[b]; e < ex->next[b]; e++)
        if (ex->order[e] == k) {
            ex->next[b] = e;
            break;
        }
}

/* The buckets of keys[0..n) for fill_exact; 0 or -ENOMEM. */
static int exact_init(struct fill_grid *gr, const struct fleet *f,
                      const struct fleet_workloads *ws, const struct sort_key *keys, size_t n)
{
    struct exact_buckets *ex = calloc(1, sizeof(*ex));
    gr->ex = ex;
    if (!ex)
        return -ENOMEM;
    ex->unit = (fleet_max_memory(f) + EXACT_UNITS - 1) / EXACT_UNITS;
    ex->order = malloc((n ? n : 1) * sizeof(*ex->order));
    ex->reach = malloc((EXACT_UNITS + 1) * sizeof(*ex->reach));
    if (!ex->order || !ex->reach)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) /* workloads fit the largest GPU: at most EXACT_UNITS */
        ex->start[exact_bucket(ex, &ws->w[keys[k].index]) + 1]++;
    for (size_t b = 0; b <= EXACT_UNITS; b++) {
        ex->left[b] = ex->start[b + 1];
        ex->start[b + 1] += ex->start[b];
        ex->next[b] = ex->start[b];
    }
    for (size_t k = 0; k < n; k++)
        ex->order[ex->next[exact_bucket(ex, &ws->w[keys[k].index])]++] = (uint32_t)k;
    for (size_t b = 0; b <= EXACT_UNITS; b++)
        ex->next[b] = ex->start[b];
    return 0;
}

static void exact_free(struct exact_buckets *ex)
{
    if (ex) {
        free(ex->order);
        free(ex->reach);
    }
    free(ex);
}

static size_t fill_cell(const struct fill_grid *gr, const struct fleet_workload *w)
{
    return (size_t)((w->memory_mib - gr->mem_lo) / gr->mem_step) * FILL_GRID +
           (size_t)((w->compute_bp - gr->comp_lo) / gr->comp_step);
}

static int fill_grid_init(struct fill_grid *gr, const struct fleet *f,
                          const struct fleet_workloads *ws, const struct sort_key *keys, size_t n)
{
    memset(gr, 0, sizeof(*gr));
    const size_t cells = FILL_GRID * FILL_GRID;
    gr->start = calloc(cells + 1, sizeof(*gr->start));
    gr->next = calloc(cells, sizeof(*gr->next));
    gr->order = malloc((n ? n : 1) * sizeof(*gr->order));
    gr->taken = calloc(n ? n : 1, 1);
    if (!gr->start || !gr->next || !gr->order || !gr->taken)
        return -ENOMEM;
    uint64_t mem_hi = 0, comp_hi = 0;
    gr->mem_lo = UINT64_MAX;
    gr->comp_lo = UINT64_MAX;
    for (size_t k = 0; k < n; k++) {
        const struct fleet_workload *w = &ws->w[keys[k].index];
        gr->mem_lo = w->memory_mib < gr->mem_lo ? w->memory_mib : gr->mem_lo;
        gr->comp_lo = w->compute_bp < gr->comp_lo ? w->compute_bp : gr->comp_lo;
        mem_hi = MAX(mem_hi, w->memory_mib);
        comp_hi = MAX(comp_hi, (uint64_t)w->compute_bp);
    }
    gr->mem_step = (mem_hi - gr->mem_lo) / FILL_GRID + 1;
    gr->comp_step = (comp_hi - gr->comp_lo) / FILL_GRID + 1;
    /* a counting sort by cell, stable: keys come largest first */
    for (size_t k = 0; k < n; k++)
        gr->start[fill_cell(gr, &ws->w[keys[k].index]) + 1]++;
    for (size_t c = 0; c < cells; c++) {
        gr->start[c + 1] += gr->start[c];
        gr->next[c] = gr->start[c];
    }
    for (size_t k = 0; k < n; k++)
        gr->order[gr->next[fill_cell(gr, &ws->w[keys[k].index])]++] = (uint32_t)k;
    for (size_t c = 0; c < cells; c++) {
        gr->next[c] = gr->start[c];
        if (gr->start[c + 1] > gr->start[c])
            gr->bits[c / FILL_GRID] |= 1ULL << (c % FILL_GRID);
    }
    for (size_t i = 0; i < f->npools; i++)
        insert_distinct(gr->sizes, &gr->nsizes, f->pools[i].memory_mib);
    for (size_t k = 0; k < n; k++)
        fill_count(gr, &ws->w[keys[k].index], 1);
    return 0;
}

static void fill_grid_free(struct fill_grid *gr)
{
    exact_free(gr->ex);
    free(gr->start);
    free(gr->next);
    free(gr->order);
    free(gr->taken);
}

/* Marks position k of keys placed; a cell whose entries are all placed leaves the bitmap. */
static void fill_take(struct fill_grid *gr, const struct fleet_workload *w, size_t k)
{
    gr->taken[k] = 1;
    fill_count(gr, w, -1);
    if (gr->ex)
        exact_take(gr->ex, gr->taken, w);
    size_t c = fill_cell(gr, w);
    while (gr->next[c] < gr->start[c + 1] && gr->taken[gr->order[gr->next[c]]])
        gr->next[c]++;
    if (gr->next[c] == gr->start[c + 1])
        gr->bits[c / FILL_GRID] &= ~(1ULL << (c % FILL_GRID));
}

/* Gives position k of keys back (a pair that fills the room better replaces it). */
static void fill_untake(struct fill_grid *gr, const struct fleet_workload *w, size_t k)
{
    gr->taken[k] = 0;
    fill_count(gr, w, 1);
    if (gr->ex)
        exact_untake(gr->ex, w, k);
    size_t c = fill_cell(gr, w);
    for (uint32_t e = gr->start[c]; e < gr->next[c]; e++)
        if (gr->order[e] == k) {
            gr->next[c] = e;
            break;
        }
    gr->bits[c / FILL_GRID] |= 1ULL << (c % FILL_GRID);
}

/* What is left of a GPU being filled, and the weights that make each dimension a share. */
struct fill_room {
    uint64_t mem, comp;
    double per_mib, per_bp;
    uint64_t min_mem; /* only workloads of at least this much memory (those no smaller GPU
                         holds, fill_group) */
};

/* The first entry of cell c that fits the room, or -1: every entry fits in a cell inside
 * the room, only those on its border need trying. */
static long fill_fit_in_cell(const struct fill_grid *gr, const struct fleet_workloads *ws,
                             const struct sort_key *keys, size_t c, const struct fill_room *room)
{
    unsigned tried = 0;
    for (uint32_t e = gr->next[c]; e < gr->start[c + 1] && tried < FILL_CELL_SCAN; e++) {
        uint32_t k = gr->order[e];
        if (gr->taken[k])
            continue;
        const struct fleet_workload *w = &ws->w[keys[k].index];
        if (w->memory_mib <= room->mem && w->compute_bp <= room->comp &&
            w->memory_mib >= room->min_mem)
            return (long)k;
        tried++;
    }
    return -1;
}

/* The position in keys of the workload that leaves the least room, or -1 if none fits. */
static long fill_best(const struct fill_grid *gr, const struct fleet_workloads *ws,
                      const struct sort_key *keys, const struct fill_room *room)
{
    if (room->mem < gr->mem_lo || room->comp < gr->comp_lo)
        return -1;
    size_t top_col = (size_t)((room->mem - gr->mem_lo) / gr->mem_step);
    size_t top_row = (size_t)((room->comp - gr->comp_lo) / gr->comp_step);
    top_col = top_col < FILL_GRID ? top_col : FILL_GRID - 1;
    uint64_t rows = top_row < FILL_GRID - 1 ? (2ULL << top_row) - 1 : ~0ULL;
    long best = -1;
    double best_left = INFINITY;
    for (size_t a = top_col + 1; a-- > 0;) {
        /* no workload of this column or a lower one leaves less memory than this */
        uint64_t col_top = gr->mem_lo + (a + 1) * gr->mem_step - 1;
        if (col_top < room->min_mem)
            break;
        double mem_left = col_top < room->mem ? (double)(room->mem - col_top) * room->per_mib : 0;
        if (mem_left * mem_left >= best_left)
            break;
        for (uint64_t bits = gr->bits[a] & rows; bits;) {
            size_t b = 63 - (size_t)__builtin_clzll(bits);
            bits &= ~(1ULL << b);
            long k = fill_fit_in_cell(gr, ws, keys, a * FILL_GRID + b, room);
            if (k < 0)
                continue;
            const struct fleet_workload *w = &ws->w[keys[k].index];
            double dm = (double)(room->mem - w->memory_mib) * room->per_mib;
            double dc = (double)(room->comp - w->compute_bp) * room->per_bp;
            if (dm * dm + dc * dc < best_left) {
                best_left = dm * dm + dc * dc;
                best = k;
            }
            break; /* lower cells of the column leave more compute */
        }
    }
    return best;
}

static void fill_place(const struct fleet_workloads *ws, const struct sort_key *keys, size_t k,
                       long gi, struct fleet_plan *p, struct fleet_gpu_list *g,
                       struct still_to_place *rest)
{
    const struct fleet_workload *w = &ws->w[keys[k].index];
    gpu_add(&g->use[gi], w, w->memory_mib);
    still_drop(rest, w);
    if (p->gpu_of)
        p->gpu_of[keys[k].index] = (uint32_t)gi;
    p->placed++;
}

/* The weighted room left, as fill_best scores it. */
static double room_left(const struct fill_room *room)
{
    double dm = (double)room->mem * room->per_mib, dc = (double)room->comp * room->per_bp;
    return dm * dm + dc * dc;
}

/* Whether a GPU is as good as full: less than 1/FILL_FULL of it left in some dimension. */
static bool fill_full(const struct fill_room *room, uint64_t gpu_mib, uint32_t compute_cap)
{
    return room->mem * FILL_FULL <= gpu_mib || room->comp * FILL_FULL <= compute_cap;
}

/* Position k of keys taken for GPU gi: out of the grid, onto the GPU, off the room. */
static void take_into(struct fill_grid *gr, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t k, long gi, struct fill_room *room,
                      uint32_t *tenants, struct fleet_plan *p, struct fleet_gpu_list *g,
                      struct still_to_place *rest)
{
    const struct fleet_workload *w = &ws->w[keys[k].index];
    room->mem -= w->memory_mib;
    room->comp -= w->compute_bp;
    ++*tenants;
    fill_take(gr, w, k);
    fill_place(ws, keys, k, gi, p, g, rest);
}

/* fill_place undone (the grid apart). */
static void unplace(const struct fleet_workloads *ws, const struct sort_key *keys, size_t k,
                    long gi, struct fleet_plan *p, struct fleet_gpu_list *g,
                    struct still_to_place *rest)
{
    const struct fleet_workload *w = &ws->w[keys[k].index];
    struct fleet_gpu_use *u = &g->use[gi];
    u->tenants--;
    u->memory_used_mib -= w->memory_mib;
    u->memory_held_mib -= w->memory_mib;
    u->compute_bp -= w->compute_bp;
    rest->memory_mib += w->memory_mib;
    rest->compute_bp += w->compute_bp;
    rest->count++;
    if (p->gpu_of)
        p->gpu_of[keys[k].index] = UINT32_MAX;
    p->placed--;
}

/* The workload y that, with the best second one z for what y leaves (fill_best), leaves the
 * least room; pair[1] is -1 when nothing fits beside y, pair[0] when nothing fits at all.
 * Returns the room they leave (room_left). The candidates for y: in each memory column the
 * fullest cell that fits (what fill_best weighs) and in each compute row the fullest column,
 * so that a y of less compute, whose room a z then fills, is among them. */
static double fill_pair(struct fill_grid *gr, const struct fleet_workloads *ws,
                        const struct sort_key *keys, const struct fill_room *room, long pair[2])
{
    pair[0] = pair[1] = -1;
    if (room->mem < gr->mem_lo || room->comp < gr->comp_lo)
        return INFINITY;
    size_t top_col = (size_t)((room->mem - gr->mem_lo) / gr->mem_step);
    size_t top_row = (size_t)((room->comp - gr->comp_lo) / gr->comp_step);
    top_col = top_col < FILL_GRID ? top_col : FILL_GRID - 1;
    uint64_t rows = top_row < FILL_GRID - 1 ? (2ULL << top_row) - 1 : ~0ULL, rows_done = 0;
    double best = INFINITY;
    for (size_t a = top_col + 1; a-- > 0 && best > 0;) {
        bool column_done = false;
        for (uint64_t bits = gr->bits[a] & rows; bits && best > 0;) {
            size_t b = 63 - (size_t)__builtin_clzll(bits);
            bits &= ~(1ULL << b);
            if (column_done && (rows_done & (1ULL << b)))
                continue;
            long y = fill_fit_in_cell(gr, ws, keys, a * FILL_GRID + b, room);
            if (y < 0)
                continue;
            column_done = true;
            rows_done |= 1ULL << b;
            const struct fleet_workload *w = &ws->w[keys[y].index];
            struct fill_room after = *room;
            after.mem -= w->memory_mib;
            after.comp -= w->compute_bp;
            gr->taken[y] = 1; /* not a z of its own */
            long z = fill_best(gr, ws, keys, &after);
            gr->taken[y] = 0;
            if (z >= 0) {
                after.mem -= ws->w[keys[z].index].memory_mib;
                after.comp -= ws->w[keys[z].index].compute_bp;
            }
            if (room_left(&after) < best) {
                best = room_left(&after);
                pair[0] = y;
                pair[1] = z;
            }
        }
    }
    return best;
}

/* The GPU being filled: its index in the plan, its room and its tenants. */
struct fill_gpu {
    long gi;
    struct fill_room *room;
    uint32_t *tenants;
};

/* Replaces the last workload taken (position last of keys) by the pair fill_pair finds for
 * the room it had, if that pair leaves less room; whether it did. */
static bool fill_repair(struct fill_grid *gr, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t last, struct fill_gpu *at,
                        struct fleet_plan *p, struct fleet_gpu_list *g,
                        struct still_to_place *rest)
{
    const struct fleet_workload *v = &ws->w[keys[last].index];
    struct fill_room before = *at->room;
    before.mem += v->memory_mib;
    before.comp += v->compute_bp;
    fill_untake(gr, v, last);
    long pair[2];
    if (fill_pair(gr, ws, keys, &before, pair) >= room_left(at->room) - 1e-12) {
        fill_take(gr, v, last);
        return false;
    }
    unplace(ws, keys, last, at->gi, p, g, rest);
    *at->room = before;
    --*at->tenants;
    for (int j = 0; j < 2 && pair[j] >= 0; j++)
        take_into(gr, ws, keys, (size_t)pair[j], at->gi, at->room, at->tenants, p, g, rest);
    return true;
}

/* to |= from shifted up by s bits (words of each). */
static void reach_shift_or(uint64_t *to, const uint64_t *from, size_t words, size_t s)
{
    size_t by_words = s / 64, by_bits = s % 64;
    for (size_t i = words; i-- > by_words;) {
        uint64_t v = from[i - by_words] << by_bits;
        if (by_bits && i > by_words)
            v |= from[i - by_words - 1] >> (64 - by_bits);
        to[i] |= v;
    }
}

static bool reach_has(const uint64_t *set, size_t m)
{
    return set[m / 64] >> (m % 64) & 1;
}

/* The fullest fill of cap units by exactly c of the buckets tried (-1 if none). */
static long reach_top(const uint64_t *set, size_t cap)
{
    for (size_t m = cap + 1; m-- > 0;)
        if (reach_has(set, m))
            return (long)m;
    return -1;
}

/* The exact fill of a limited pool's GPU (gr->ex): of the workloads left, the set whose
 * memory, rounded up to whole units, fills the most of the GPU's room, found by a subset sum
 * over the units and the count (per count a bit per fill reachable, a shift per workload
 * tried, at most as many of a bucket as fit). The count is the pool's share left over its
 * GPUs left (want; less the opener where it stays), rounded up or down so that the GPUs so
 * far took as many as they should (ex->debt), unless the other count fills more: GPUs that
 * each took the fullest set of any count took the largest workloads first and left the last
 * GPUs of the pool four of the smallest, which filled 80% of them. Among sets of equal fill
 * and count, the one of the workloads only this pool holds (above must units), then of the
 * smallest. Taken if it fits the compute and the places too; whether it was. */
static bool fill_exact(struct fill_grid *gr, const struct fleet_workloads *ws,
                       const struct sort_key *keys, struct fill_gpu *at, uint32_t places,
                       double want, size_t must, struct fleet_plan *p, struct fleet_gpu_list *g,
                       struct still_to_place *rest)
{
    struct exact_buckets *ex = gr->ex;
    size_t cap = (size_t)(at->room->mem / ex->unit), smallest = 1;
    cap = cap < EXACT_UNITS ? cap : EXACT_UNITS;
    while (smallest <= cap && !ex->left[smallest])
        smallest++;
    if (smallest > cap || cap / smallest > EXACT_MOST)
        return false;
    size_t most = cap / smallest < places ? cap / smallest : places;
    size_t words = cap / 64 + 1, npref = 0;
    uint16_t pref[EXACT_UNITS + 1];
    for (size_t b = cap; b > must && b >= smallest; b--)
        if (ex->left[b])
            pref[npref++] = (uint16_t)b;
    for (size_t b = smallest; b <= cap && b <= must; b++)
        if (ex->left[b])
            pref[npref++] = (uint16_t)b;
    uint64_t now[EXACT_MOST + 1][EXACT_WORDS];
    memset(now, 0, sizeof(now));
    now[0][0] = 1;
    for (size_t o = 0; o < npref; o++) {
        size_t b = pref[o], copies = ex->left[b] < cap / b ? ex->left[b] : cap / b;
        memcpy(ex->reach[o], now, sizeof(now));
        for (size_t j = 0; j < copies && j < most; j++)
            for (size_t c = most; c > 0; c--)
                reach_shift_or(now[c], now[c - 1], words, b);
    }
    /* the count: want rounded as the debt says, or the other way if that fills more */
    size_t lo = want < 0 ? 0 : (size_t)want;
    double up = want - (double)lo + ex->debt;
    size_t first = up >= 0.5 ? lo + 1 : lo, second = up >= 0.5 ? lo : lo + 1;
    long fill = -1;
    size_t count = 0;
    for (size_t c = 0; c <= most; c++) { /* the fullest of any count */
        long top = reach_top(now[c], cap);
        if (top > fill) {
            fill = top;
            count = c;
        }
    }
    long slack = (long)cap / 200;
    for (int k = 1; k >= 0; k--) {
        size_t c = k ? second : first; /* first last: it wins a tie */
        long top = c <= most ? reach_top(now[c], cap) : -1;
        if (top >= 0 && top + slack >= fill && (k == 0 || count != first))
            count = c;
    }
    fill = reach_top(now[count], cap);
    if (fill <= 0)
        return false;
    ex->debt += want - (double)count;
    /* back from the last bucket tried: as few of it as the fill allows */
    uint32_t take[EXACT_MOST];
    size_t ntake = 0, m = (size_t)fill, c = count;
    uint64_t comp = 0;
    for (size_t o = npref; o-- > 0 && c;) {
        size_t b = pref[o], j = 0;
        while (j > c || j * b > m || !reach_has(ex->reach[o][c - j], m - j * b))
            j++;
        uint32_t e = ex->next[b];
        for (size_t t = 0; t < j; t++, e++) {
            while (gr->taken[ex->order[e]])
                e++;
            take[ntake++] = ex->order[e];
            comp += ws->w[keys[ex->order[e]].index].compute_bp;
        }
        c -= j;
        m -= j * b;
    }
    if (!ntake || ntake > places || comp > at->room->comp)
        return false;
    for (size_t j = 0; j < ntake; j++)
        take_into(gr, ws, keys, take[j], at->gi, at->room, at->tenants, p, g, rest);
    return true;
}

/* Room left in each dimension as a share of the GPU, divided by the fourth power of how
 * scarce that dimension is among the workloads still to place (their total over the GPU's,
 * the two summing to one): the scarce dimension is the one to fill, and the other, with
 * room to spare, barely counts. On the test's lists the fourth power left 1.7% against 2.0%
 * for plain shares and 1.9% for the first power. */
static void fill_weights(struct fill_room *room, const struct still_to_place *rest,
                         uint64_t gpu_mib, uint32_t compute_cap)
{
    double mem = (double)rest->memory_mib / (double)gpu_mib;
    double comp = (double)rest->compute_bp / (double)compute_cap;
    double wm = mem + comp > 0 ? dmax(mem / (mem + comp), 0.01) : 0.5;
    double wc = mem + comp > 0 ? dmax(comp / (mem + comp), 0.01) : 0.5;
    room->per_mib = 1.0 / ((double)gpu_mib * wm * wm * wm * wm);
    room->per_bp = 1.0 / ((double)compute_cap * wc * wc * wc * wc);
}

/* When a limited pool has fewer GPUs left than the workloads still to place that only GPUs
 * of its size or larger hold, some of its GPUs must take two of them or more: a GPU of it
 * then takes those first (the least memory they have, else 0). */
static uint64_t only_here(const struct fleet *f, const struct fill_grid *gr,
                          const struct pool_choice *pc, int pool)
{
    size_t j = 0;
    while (j < gr->nsizes && gr->sizes[j] < f->pools[pool].memory_mib)
        j++;
    if (!j || f->pools[pool].count == FLEET_UNLIMITED || gr->above[j - 1] <= pc->left[pool])
        return 0;
    return gr->sizes[j - 1] + 1;
}

/* Where the tenant places bind (time-slicing's 16 replicas on a large GPU), the least room
 * alone fills a GPU with large workloads and leaves it short of places, then another with
 * small ones and leaves it short of memory. So the workload taken now leaves room for the
 * places still free after it at the average of the workloads still to place: room is capped
 * at that, in each dimension where those places would not fill it. Whether it capped any. */
static bool leave_room_for_places(struct fill_room *room, const struct still_to_place *rest,
                                  uint32_t after)
{
    if (!after || !rest->count)
        return false;
    uint64_t mem = after * (rest->memory_mib / rest->count);
    uint64_t comp = after * (rest->compute_bp / rest->count);
    bool capped = false;
    if (mem < room->mem) {
        room->mem -= mem;
        capped = true;
    }
    if (comp < room->comp) {
        room->comp -= comp;
        capped = true;
    }
    return capped;
}

/* The largest pool size below gpu_mib, or 0. */
static uint64_t smaller_size(const struct fill_grid *gr, uint64_t gpu_mib)
{
    uint64_t below = 0;
    for (size_t j = 0; j < gr->nsizes && gr->sizes[j] < gpu_mib; j++)
        below = gr->sizes[j];
    return below;
}

/* Whether a pool's GPUs are filled exactly (fill_exact): a limited pool beside smaller GPUs,
 * whose GPUs have to hold the workloads only they hold and should hold those the smaller
 * GPUs hold worst. */
static bool exact_worth(const struct fleet *f, int pool)
{
    if (f->pools[pool].count == FLEET_UNLIMITED)
        return false;
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].memory_mib < f->pools[pool].memory_mib)
            return true;
    return false;
}

/* Whether some pool of the fleet is one (pack_by_band_exact is tried only then). */
static bool some_exact_worth(const struct fleet *f)
{
    for (size_t i = 0; i < f->npools; i++)
        if (exact_worth(f, (int)i))
            return true;
    return false;
}

/* The group (keys, largest first) packed one GPU at a time: the largest workload left opens
 * a GPU of the pool choose_pool gives, and the workloads that leave the least room fill it. */
static int fill_group(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t n, const struct mech_rules *r,
                      struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g,
                      bool weigh_by_rest)
{
    struct fill_grid gr;
    int ret = fill_grid_init(&gr, f, ws, keys, n);
    if (!ret && pc->exact && pc->only >= 0 && exact_worth(f, pc->only))
        ret = exact_init(&gr, f, ws, keys, n);
    struct still_to_place rest = still_all(ws, keys, n);
    const struct still_to_place whole_group = rest;
    for (size_t first = 0; !ret && first < n; first++) {
        if (gr.taken[first])
            continue;
        const struct fleet_workload *w = &ws->w[keys[first].index];
        int pool = choose_pool(f, pc, &rest, r->compute_cap, r->slots, w->memory_mib);
        if (pool < 0) {
            fill_take(&gr, w, first);
            defer_to_next_share(pc, &rest, keys[first], w);
            continue;
        }
        long gi = fleet_gpu_open(f, g, p, pc->left, pool);
        if (gi < 0) {
            ret = -ENOMEM;
            break;
        }
        uint64_t gpu_mib = f->pools[pool].memory_mib;
        struct fill_room room = {f->pools[pool].memory_mib - w->memory_mib,
                                 r->compute_cap - w->compute_bp, 0, 0, 0}; /* none above cap */
        fill_weights(&room, weigh_by_rest ? &rest : &whole_group, f->pools[pool].memory_mib,
                     r->compute_cap);
        fill_take(&gr, w, first);
        fill_place(ws, keys, first, gi, p, g, &rest);
        room.min_mem = only_here(f, &gr, pc, pool);
        uint32_t tenants = 1;
        long last = -1;
        bool repaired = false;
        if (gr.ex && pool == pc->only) {
            /* a workload that smaller GPUs hold opens the GPU but the fill chooses whether
               it stays: forced in, the largest of those left (21-23 GiB beside L4s) ended
               three to a GPU with no room for a fourth */
            size_t must = (size_t)(smaller_size(&gr, gpu_mib) / gr.ex->unit);
            bool open_free = w->memory_mib <= smaller_size(&gr, gpu_mib);
            if (open_free) {
                unplace(ws, keys, first, gi, p, g, &rest);
                fill_untake(&gr, w, first);
                room.mem += w->memory_mib;
                room.comp += w->compute_bp;
                tenants = 0;
            }
            struct fill_gpu at = {gi, &room, &tenants};
            double want = (double)(rest.count + !open_free) / (double)(pc->left[pool] + 1) -
                          !open_free;
            if (!fill_exact(&gr, ws, keys, &at, r->slots - tenants, want, must, p, g, &rest) &&
                open_free)
                take_into(&gr, ws, keys, first, gi, &room, &tenants, p, g, &rest);
            if (!gr.taken[first])
                first--; /* it opens the next GPU */
        }
        while (tenants < r->slots) {
            long k = -1;
            struct fill_room step = room;
            if (leave_room_for_places(&step, &rest, r->slots - tenants - 1))
                k = fill_best(&gr, ws, keys, &step);
            if (k < 0)
                k = fill_best(&gr, ws, keys, &room);
            if (k >= 0) {
                take_into(&gr, ws, keys, (size_t)k, gi, &room, &tenants, p, g, &rest);
                last = k;
                continue;
            }
            if (room.min_mem) { /* then any workload */
                room.min_mem = 0;
                continue;
            }
            /* the GPU closes with room in both dimensions: once a GPU, a pair in place of the
               last workload may fill it better, and then more may follow */
            if (repaired || last < 0 || fill_full(&room, gpu_mib, r->compute_cap))
                break;
            repaired = true;
            struct fill_gpu at = {gi, &room, &tenants};
            if (!fill_repair(&gr, ws, keys, (size_t)last, &at, p, g, &rest))
                break;
        }
    }
    fill_grid_free(&gr);
    return ret;
}

/* Which dimension is scarce can be judged once for the whole group or afresh for each GPU by
 * the workloads still to place; neither wins on every list (the second did better on L4s and
 * mixed fleets, the first on T4s), so both are tried. */
static int fill_by_group(const struct fleet *f, const struct fleet_workloads *ws,
                         const struct sort_key *keys, size_t n, const struct mech_rules *r,
                         struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    return fill_group(f, ws, keys, n, r, pc, p, g, false);
}

static int fill_by_rest(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    return fill_group(f, ws, keys, n, r, pc, p, g, true);
}

/* On small groups first-fit decreasing can miss a packing that is plainly there (pairs of 40%
 * workloads filling GPUs to 80% where one each and the small ones beside them would do). A
 * few orders near the decreasing one, each packed in a dry run, often find it; the best is
 * kept. Deterministic (a fixed seed), and only below SMALL_GROUP workloads, where it costs
 * well under a millisecond per try. */
#define SMALL_GROUP 2000
#define SMALL_TRIES 48

struct trial {
    uint64_t gpus, shortage, deferred;
    double cost;
};

typedef int packer_fn(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t n, const struct mech_rules *r,
                      struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g);
static packer_fn pack_group, fill_by_group, fill_by_rest, pack_by_band, pack_by_band_exact;
#define BAND_WORTH 1.01 /* the split is tried for a group more than 1% above its solution */
static packer_fn *const packers[] = {pack_group, fill_by_group, fill_by_rest, pack_by_band,
                                      pack_by_band_exact};
static size_t band_of(const struct fleet_demand *d, uint64_t memory_mib);

static int dry_run(packer_fn *pack, const struct fleet *f, const struct fleet_workloads *ws,
                   const struct sort_key *keys, size_t n, const struct mech_rules *r,
                   const struct pool_choice *pc, struct trial *out)
{
    struct fleet_plan scratch;
    struct fleet_gpu_list g = {0};
    struct pool_choice copy = *pc;
    memset(&scratch, 0, sizeof(scratch));
    int ret = pack(f, ws, keys, n, r, &copy, &scratch, &g);
    free(g.use);
    out->gpus = scratch.gpus;
    out->shortage = scratch.shortage;
    out->deferred = n - scratch.placed;
    out->cost = scratch.cost_per_hour;
    return ret;
}

static bool better(const struct fleet *f, const struct trial *a, const struct trial *b)
{
    if (a->shortage != b->shortage) /* a plan within the fleet first */
        return a->shortage < b->shortage;
    if (a->deferred != b->deferred) /* then a pool's share on that pool */
        return a->deferred < b->deferred;
    if (f->npools > 1 && (a->cost < b->cost - 1e-9 || a->cost > b->cost + 1e-9))
        return a->cost < b->cost;
    return a->gpus < b->gpus || (a->gpus == b->gpus && a->cost < b->cost - 1e-9);
}

static int improve_order(const struct fleet *f, const struct fleet_workloads *ws,
                         struct sort_key *keys, size_t n, const struct mech_rules *r,
                         const struct pool_choice *pc)
{
    if (n < 3 || n > SMALL_GROUP)
        return 0;
    struct sort_key *best = malloc(n * sizeof(*best)), *trial = malloc(n * sizeof(*trial));
    struct trial best_t, t;
    int ret = best && trial ? dry_run(pack_group, f, ws, keys, n, r, pc, &best_t) : -ENOMEM;
    uint64_t seed = 0x9E3779B97F4A7C15ULL ^ n;
    if (!ret)
        memcpy(best, keys, n * sizeof(*best));
    for (int k = 0; k < SMALL_TRIES && !ret; k++) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            trial[i] = keys[i];
            trial[i].key = keys[i].key * (700 + (seed >> 33) % 301) / 1000; /* 70-100% */
        }
        sort_keys(trial, n);
        if ((ret = dry_run(pack_group, f, ws, trial, n, r, pc, &t)))
            break;
        if (better(f, &t, &best_t)) {
            best_t = t;
            memcpy(best, trial, n * sizeof(*best));
        }
    }
    if (!ret)
        memcpy(keys, best, n * sizeof(*keys));
    free(best);
    free(trial);
    return ret;
}

/* First-fit decreasing or filling one GPU at a time, whichever does better on this group in a
 * dry run: filling wins where memory and compute both bind on the GPUs, first-fit where one
 * dimension alone does (it then packs that one to within a fraction of a percent). */
static int choose_packer(const struct fleet *f, const struct fleet_workloads *ws,
                         const struct sort_key *keys, size_t n, const struct mech_rules *r,
                         const struct pool_choice *pc, packer_fn **pack)
{
    struct trial best, t;
    *pack = pack_group;
    if (n < 2)
        return 0;
    int ret = dry_run(pack_group, f, ws, keys, n, r, pc, &best);
    size_t npackers = sizeof(packers) / sizeof(packers[0]) - 2 * !pc->band_count;
    for (size_t i = 1; i < npackers && !ret; i++) {
        if (packers[i] == pack_by_band && best.cost <= pc->band_cost * BAND_WORTH)
            break; /* close enough to the solution: the split (twice the time) is not worth it */
        if (packers[i] == pack_by_band_exact && (!pc->band_memory_mib || !some_exact_worth(f)))
            break; /* the fleet cannot hold the group even in fractions, or no pool is one the
                      exact fill is for */
        ret = dry_run(packers[i], f, ws, keys, n, r, pc, &t);
        if (!ret && better(f, &t, &best)) {
            best = t;
            *pack = packers[i];
        }
    }
    return ret;
}

/* Which end of each band each pool's share is: the band's smallest where the solution's
 * workloads of the band on that pool are smaller than the band's on average and the smaller
 * GPUs that take the rest of it hold them one to a GPU (nothing of the list fits beside them:
 * a limited large pool beside L4s, each of its workloads of such a band saves an L4 and the
 * smallest take the least of it), else its largest. */
static void band_ends(const struct fleet *f, const struct pool_choice *pc, uint64_t min_mib,
                      bool smallest[FLEET_BANDS][FLEET_MAX_POOLS])
{
    memset(smallest, 0, FLEET_BANDS * sizeof(smallest[0]));
    for (size_t b = 0; b < pc->d->nband && pc->band_memory_mib; b++) {
        uint64_t floor = b ? pc->d->band_mib[b - 1] : 0;
        double count = 0, mem = 0;
        for (size_t i = 0; i < f->npools; i++) {
            count += pc->band_count[b][i];
            mem += pc->band_memory_mib[b][i];
        }
        for (size_t i = 0; i < f->npools; i++) {
            bool alone_below = true;
            for (size_t j = 0; j < f->npools; j++)
                if (pc->band_count[b][j] >= 0.5 &&
                    f->pools[j].memory_mib < f->pools[i].memory_mib &&
                    floor + min_mib <= f->pools[j].memory_mib)
                    alone_below = false;
            smallest[b][i] = alone_below && pc->band_count[b][i] >= 0.5 &&
                             pc->band_memory_mib[b][i] * count <
                                 mem * pc->band_count[b][i] * (1 - 1e-6);
        }
    }
}

/* The group split as the bound's solution splits it: each band's workloads go to the pools
 * it gives them (the band's largest to the largest GPU, its counts rounded), and each pool's
 * share is packed on GPUs of that pool, largest GPU first, by the best of the other packers
 * for it; what a pool's GPUs cannot hold (the solution is fractional) joins the next pool's
 * share, and what has no share comes last, on any pool. The other packers open the large GPUs
 * first and fill them from the whole group: under time-slicing the notebooks the solution
 * puts 16 to an L4 (the smallest) then go to A100s or H100s too, which the 16 replicas then
 * keep short of memory (small notebooks on A100 + L4 + T4: 2.7% above the bound, 1.0% split).
 * It packs each workload twice over (a dry run per share), so choose_packer tries it only for
 * a group whose best plan is more than BAND_WORTH over what the solution's GPUs for it cost:
 * on the mixed benchmark list that is none, and its time stays as it was. */
static int pack_by_band(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    struct sort_key *share = malloc((n ? n : 1) * sizeof(*share));
    struct sort_key *deferred = malloc((n ? n : 1) * sizeof(*deferred));
    int8_t *pool_of = malloc(ws->n ? ws->n : 1); /* per workload: the pool of its share */
    int ret = share && deferred && pool_of ? 0 : -ENOMEM;
    double quota[FLEET_BANDS][FLEET_MAX_POOLS];
    for (size_t b = 0; b < pc->d->nband && !ret; b++)
        for (size_t i = 0; i < f->npools; i++)
            quota[b][i] = (double)(uint64_t)(pc->band_count[b][i] + 0.5);
    bool smallest[FLEET_BANDS][FLEET_MAX_POOLS];
    uint64_t min_mib = UINT64_MAX;
    for (size_t k = 0; k < n; k++)
        min_mib = ws->w[keys[k].index].memory_mib < min_mib ? ws->w[keys[k].index].memory_mib
                                                            : min_mib;
    band_ends(f, pc, min_mib, smallest);
    if (!pc->exact)
        memset(smallest, 0, sizeof(smallest));
    for (size_t k = 0; k < n && !ret; k++)
        pool_of[keys[k].index] = -1;
    for (int pass = 0; pass < 2 && !ret; pass++) /* the shares of smallest, then the others */
        for (size_t j = 0; j < n; j++) {
            size_t k = pass ? j : n - 1 - j;
            const struct fleet_workload *w = &ws->w[keys[k].index];
            size_t b = band_of(pc->d, w->memory_mib);
            for (size_t o = 0; o < f->npools && pool_of[keys[k].index] < 0; o++) {
                size_t i = pc->by_size[o];
                if (smallest[b][i] == !pass && quota[b][i] >= 1 &&
                    f->pools[i].memory_mib >= w->memory_mib) {
                    quota[b][i] -= 1;
                    pool_of[keys[k].index] = (int8_t)i;
                }
            }
        }
    const double(*band_count)[FLEET_MAX_POOLS] = pc->band_count;
    pc->band_count = NULL; /* the shares are packed by the other packers */
    for (size_t o = 0; o <= f->npools && !ret; o++) {
        pc->only = o < f->npools ? (int)pc->by_size[o] : -1;
        pc->deferred = o < f->npools ? deferred : NULL;
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (pool_of[keys[k].index] == pc->only)
                share[m++] = keys[k];
        packer_fn *pack = pack_group;
        pc->ndeferred = 0; /* the dry runs write there too; what the packing writes counts */
        int8_t *known = &pc->share_packer[pc->exact][o];
        if (*known >= 0)
            pack = packers[*known];
        else
            ret = choose_packer(f, ws, share, m, r, pc, &pack);
        for (int8_t i = 0; i < (int8_t)(sizeof(packers) / sizeof(packers[0])); i++)
            if (packers[i] == pack)
                *known = i;
        pc->ndeferred = 0;
        if (!ret)
            ret = pack(f, ws, share, m, r, pc, p, g);
        for (size_t j = 0; j < pc->ndeferred; j++)
            pool_of[deferred[j].index] = o + 1 < f->npools ? (int8_t)pc->by_size[o + 1] : -1;
    }
    pc->only = -1;
    pc->deferred = NULL;
    pc->band_count = band_count;
    pc->exact = false;
    free(share);
    free(deferred);
    free(pool_of);
    return ret;
}

/* The split again, each band's ends on the pools as the solution has them (band_ends) and the
 * GPUs of a limited pool beside smaller ones filled exactly (fill_exact): on H100:3000 + L4
 * memory-heavy carve slices 4.7% above the bound before, 1.6% with it. Tried beside the plain
 * split, which stays the better one elsewhere (memory-heavy MPS there, beyond the fleet, by
 * 3-5 GPUs fewer). */
static int pack_by_band_exact(const struct fleet *f, const struct fleet_workloads *ws,
                              const struct sort_key *keys, size_t n, const struct mech_rules *r,
                              struct pool_choice *pc, struct fleet_plan *p,
                              struct fleet_gpu_list *g)
{
    pc->exact = true;
    return pack_by_band(f, ws, keys, n, r, pc, p, g);
}

/* ---- lower bounds ---- */

static int u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Sorts s (values at most max) largest first: a counting sort when the range is small next
 * to the count, as it is for 100,000 workloads in MiB or basis points; qsort otherwise. */
static void sort_desc(uint64_t *s, size_t n, uint64_t max)
{
    uint32_t *count = max <= (1u << 22) && max / 16 <= n ? calloc(max + 1, sizeof(*count)) : NULL;
    if (!count) {
        qsort(s, n, sizeof(*s), u64_desc);
        return;
    }
    for (size_t i = 0; i < n; i++)
        count[s[i] <= max ? s[i] : max]++;
    size_t k = 0;
    for (uint64_t v = max + 1; v-- > 0;)
        for (uint32_t c = count[v]; c; c--)
            s[k++] = v;
    free(count);
}

/* Martello and Toth's L2 bound for one dimension: for each threshold k, items above cap-k
 * need a bin each, items in (cap/2, cap-k] too, and items in [k, cap/2] fill what those
 * leave. s is sorted in place, largest first. */
static uint64_t bound_l2(uint64_t *s, size_t n, uint64_t cap)
{
    if (!n || !cap)
        return 0;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++)
        top = s[i] > top ? s[i] : top;
    sort_desc(s, n, top);
    uint64_t *prefix = malloc((n + 1) * sizeof(*prefix));
    if (!prefix)
        return 0;
    prefix[0] = 0;
    for (size_t i = 0; i < n; i++)
        prefix[i + 1] = prefix[i] + s[i];
    /* first index with s[i] <= v (s descending) */
#define FIRST_LE(v, lo_, out_) do { size_t lo = (lo_), hi = n; \
        while (lo < hi) { size_t mid = (lo + hi) / 2; if (s[mid] <= (v)) hi = mid; else lo = mid + 1; } \
        (out_) = lo; } while (0)
    size_t half_end; /* items [0, half_end) are > cap/2 */
    FIRST_LE(cap / 2, 0, half_end);
    uint64_t best = half_end;
    /* thresholds k: 0 and each distinct size <= cap/2 */
    for (size_t i = half_end; i <= n; i++) {
        uint64_t k = i < n ? s[i] : 0;
        if (i > half_end && i < n && s[i] == s[i - 1])
            continue;
        size_t j1_end; /* items > cap - k */
        FIRST_LE(cap - k, 0, j1_end);
        if (j1_end > half_end)
            j1_end = half_end;
        size_t j3_end; /* items >= k among those <= cap/2 */
        if (k == 0)
            j3_end = n;
        else
            FIRST_LE(k - 1, half_end, j3_end);
        uint64_t j2n = half_end - j1_end;
        uint64_t j2sum = prefix[half_end] - prefix[j1_end];
        uint64_t j3sum = prefix[j3_end] - prefix[half_end];
        uint64_t room = j2n * cap - j2sum;
        uint64_t extra = j3sum > room ? (j3sum - room + cap - 1) / cap : 0;
        uint64_t l = half_end + extra;
        if (l > best)
            best = l;
        if (i == n)
            break;
    }
#undef FIRST_LE
    free(prefix);
    return best;
}

/* A bound on GPUs for one group that shares: the L2 bound on memory (against the largest GPU
 * of the fleet) and on compute, and the tenant limit. */
static uint64_t group_bound(const struct fleet_workloads *ws, const struct sort_key *keys,
                            size_t n, uint64_t max_mem, const struct mech_rules *r)
{
    if (!n)
        return 0;
    uint64_t *s = malloc(n * sizeof(*s));
    if (!s)
        return 0;
    for (size_t i = 0; i < n; i++)
        s[i] = ws->w[keys[i].index].memory_mib;
    uint64_t lb = bound_l2(s, n, max_mem);
    for (size_t i = 0; i < n; i++)
        s[i] = ws->w[keys[i].index].compute_bp;
    uint64_t lc = bound_l2(s, n, r->compute_cap);
    free(s);
    uint64_t ls = (n + r->slots - 1) / r->slots;
    return MAX(lb, MAX(lc, ls));
}

/* ---- the whole plan for one mechanism ---- */

static uint64_t fleet_max_memory(const struct fleet *f)
{
    uint64_t m = 0;
    for (size_t i = 0; i < f->npools; i++)
        m = MAX(m, f->pools[i].memory_mib);
    return m;
}

static void finish_plan(const struct fleet *f, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    for (size_t i = 0; i < g->n; i++) {
        uint64_t have = f->pools[g->use[i].pool].memory_mib;
        p->stranded_mib += have > g->use[i].memory_used_mib ? have - g->use[i].memory_used_mib : 0;
        p->rounding_mib += g->use[i].memory_held_mib - g->use[i].memory_used_mib;
    }
    p->use = g->use;
}

/* Adds v to the ascending list of distinct values list[0..*n). */
static void insert_distinct(uint64_t *list, size_t *n, uint64_t v)
{
    size_t k = 0;
    while (k < *n && list[k] < v)
        k++;
    if (k < *n && list[k] == v)
        return;
    memmove(&list[k + 1], &list[k], (*n - k) * sizeof(uint64_t));
    list[k] = v;
    (*n)++;
}

/* Fleets of more pools than this leave the bands' counts out of the cost bound: with up to
 * ten cuts a pool there would be up to 64 bands x 16 pools x 2 groups of count and memory
 * columns, and the dense simplex would take longer than the packing. */
#define FLEET_COUNTED_POOLS 6

/* The pair limits of a pool of capacity C: the smallest workload of the list (a workload above
 * C less that shares with nothing), a quarter, a third and half of the GPU; each at least 2
 * (a limit of 1 would say no more than the memory) and at most half of C. */
static void pair_limits(uint64_t capacity, uint64_t min_mib, uint64_t *limit, size_t *n)
{
    uint64_t from = min_mib < capacity / 2 ? min_mib : capacity / 2, span = capacity / 2 - from;
    const uint64_t candidates[] = {min_mib, capacity / 4, capacity / 3, capacity / 2,
                                   from + span / 4, from + span / 2, from + span * 3 / 4};
    *n = 0;
    for (size_t c = 0; c < sizeof(candidates) / sizeof(candidates[0]); c++) {
        bool seen = false;
        for (size_t j = 0; j < *n; j++)
            seen |= limit[j] == candidates[c];
        if (!seen && candidates[c] >= 2 && candidates[c] * 2 <= capacity)
            limit[(*n)++] = candidates[c];
    }
}

/* Workload classes: the pools' memory sizes, distinct and ascending; a workload's class is
 * the smallest size that holds it. Bands: the same sizes and, when counted, their halves and
 * for each pair limit k a cut below k and at C - k, so that a band is on one side of each. */
static void size_classes(const struct fleet *f, uint64_t min_mib, struct fleet_demand *d)
{
    d->nclass = d->nband = 0;
    d->counted = f->npools <= FLEET_COUNTED_POOLS;
    for (size_t i = 0; i < f->npools; i++) {
        uint64_t capacity = f->pools[i].memory_mib;
        insert_distinct(d->class_mib, &d->nclass, capacity);
        insert_distinct(d->band_mib, &d->nband, capacity);
        if (!d->counted)
            continue;
        insert_distinct(d->band_mib, &d->nband, capacity / 2);
        pair_limits(capacity, min_mib, d->pair_limit[i], &d->npair_limit[i]);
        for (size_t j = 0; j < d->npair_limit[i]; j++) {
            insert_distinct(d->band_mib, &d->nband, d->pair_limit[i][j] - 1);
            insert_distinct(d->band_mib, &d->nband, capacity - d->pair_limit[i][j]);
        }
    }
}

static size_t class_of(const struct fleet_demand *d, uint64_t memory_mib)
{
    size_t k = 0;
    while (k + 1 < d->nclass && d->class_mib[k] < memory_mib)
        k++;
    return k;
}

static size_t band_of(const struct fleet_demand *d, uint64_t memory_mib)
{
    size_t b = 0;
    while (b + 1 < d->nband && d->band_mib[b] < memory_mib)
        b++;
    return b;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* One band of a group, from its workloads' memory mem[0..n) sorted largest first: the count,
 * the memory, and at FLEET_TANGENTS counts t (evenly spaced from 0) the memory of the t
 * largest and t smallest and of the workload next to them. */
static void band_demand(const uint64_t *mem, size_t n, struct fleet_band_demand *bd)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += mem[i];
    bd->count = (double)n;
    bd->memory_mib = (double)total;
    uint64_t largest = 0, smallest = 0;
    size_t done = 0;
    for (size_t t = 0; t < FLEET_TANGENTS; t++) {
        size_t at = n * t / FLEET_TANGENTS;
        for (; done < at; done++) {
            largest += mem[done];
            smallest += mem[n - 1 - done];
        }
        bd->at[t] = (double)at;
        bd->largest_mib[t] = (double)largest;
        bd->next_largest_mib[t] = (double)mem[at];
        bd->smallest_mib[t] = (double)smallest;
        bd->next_smallest_mib[t] = (double)mem[n - 1 - at];
    }
}

/* The bands of one sharing group; mem is scratch for the whole list. */
static void group_bands(const struct fleet_workloads *ws, const uint8_t *possible, int mech,
                        const struct mech_rules *r, int grp, uint64_t *mem,
                        struct fleet_demand *d)
{
    size_t n = 0;
    uint64_t top = 0;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i] && group_of(mech, &ws->w[i], r) == grp) {
            mem[n++] = ws->w[i].memory_mib;
            top = MAX(top, ws->w[i].memory_mib);
        }
    sort_desc(mem, n, top);
    /* largest first, so each band is one run, the top band first */
    for (size_t lo = 0; lo < n;) {
        size_t b = band_of(d, mem[lo]), hi = lo;
        while (hi < n && band_of(d, mem[hi]) == b)
            hi++;
        band_demand(&mem[lo], hi - lo, &d->band[grp][b]);
        lo = hi;
    }
}

/* What the cost bound needs of one mechanism's workloads: per sharing group its bands, and
 * per class (and larger) the GPUs they need at least (compute, tenant places, workloads too
 * big in memory or compute to pair with each other on any GPU, and for the whole group its L2
 * bound, group_gpus); per class the lone workloads. 0, or -ENOMEM. */
static int fill_demand(const struct fleet *f, const struct fleet_workloads *ws,
                       const uint8_t *possible, int mech, const struct mech_rules *r,
                       const uint64_t group_gpus[FLEET_GROUPS], struct fleet_demand *d)
{
    uint64_t max_mem = fleet_max_memory(f);
    uint64_t comp[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}}, count[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    uint64_t big_mem[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    uint64_t big_comp[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    memset(d, 0, sizeof(*d));
    uint64_t min_mib = max_mem;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i])
            min_mib = ws->w[i].memory_mib < min_mib ? ws->w[i].memory_mib : min_mib;
    size_classes(f, min_mib, d);
    d->slots = r->slots;
    uint64_t *mem = malloc((ws->n ? ws->n : 1) * sizeof(*mem));
    if (!mem)
        return -ENOMEM;
    for (int grp = 0; grp < FLEET_GROUPS; grp++)
        group_bands(ws, possible, mech, r, grp, mem, d);
    free(mem);
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        const struct fleet_workload *w = &ws->w[i];
        int grp = group_of(mech, w, r);
        size_t k = class_of(d, w->memory_mib);
        if (grp == GROUP_ALONE) {
            d->lone[k]++;
            continue;
        }
        comp[grp][k] += w->compute_bp;
        count[grp][k]++;
        big_mem[grp][k] += w->memory_mib * 2 > max_mem;
        big_comp[grp][k] += (uint64_t)w->compute_bp * 2 > r->compute_cap;
    }
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        for (size_t k = d->nclass; k-- > 0;) {
            if (k + 1 < d->nclass) { /* class k and larger */
                comp[g][k] += comp[g][k + 1];
                count[g][k] += count[g][k + 1];
                big_mem[g][k] += big_mem[g][k + 1];
                big_comp[g][k] += big_comp[g][k + 1];
            }
            uint64_t need = MAX(ceil_div(comp[g][k], r->compute_cap), ceil_div(count[g][k], r->slots));
            need = MAX(need, MAX(big_mem[g][k], big_comp[g][k]));
            if (k == 0)
                need = MAX(need, group_gpus[g]);
            d->gpus[g][k] = (double)need;
        }
    return 0;
}

/* A bound that needs no solution: each lone workload on the cheapest GPU that holds it, each
 * group's GPUs at the lowest price, the pools' counts aside. For when the simplex gives up. */
static double plain_cost_bound(const struct fleet *f, const struct fleet_demand *d)
{
    double cost = 0, lowest = INFINITY;
    for (size_t i = 0; i < f->npools; i++)
        lowest = dmin(lowest, f->pools[i].price);
    for (size_t k = 0; k < d->nclass; k++) {
        double cheapest = INFINITY;
        for (size_t i = 0; i < f->npools; i++)
            if (f->pools[i].memory_mib >= d->class_mib[k])
                cheapest = dmin(cheapest, f->pools[i].price);
        cost += d->lone[k] ? (double)d->lone[k] * cheapest : 0;
    }
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        cost += d->gpus[g][0] * lowest;
    return cost;
}

/* Lone workloads, each on a GPU of its own: of the pool the bound's solution gives its class
 * (cheapest first), else the cheapest that fits and has a GPU left. */
static int place_lone(const struct fleet *f, const struct fleet_workloads *ws,
                      const uint8_t *possible, int mech, const struct mech_rules *r,
                      const struct fleet_demand *d, const struct fleet_lp_plan *lp,
                      uint64_t *pool_left, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    double budget[FLEET_MAX_POOLS][FLEET_MAX_POOLS];
    memcpy(budget, lp->lone, sizeof(budget));
    for (size_t i = 0; i < ws->n; i++) {
        const struct fleet_workload *w = &ws->w[i];
        if (!possible[i] || group_of(mech, w, r) != GROUP_ALONE)
            continue;
        size_t k = class_of(d, w->memory_mib);
        int pool = -1;
        for (size_t q = 0; q < f->npools; q++)
            if (budget[k][q] >= 0.5 && pool_left[q] && f->pools[q].memory_mib >= w->memory_mib &&
                (pool < 0 || f->pools[q].price < f->pools[pool].price))
                pool = (int)q;
        if (pool >= 0)
            budget[k][pool] -= 1;
        else
            pool = fleet_pick_pool(f, pool_left, w->memory_mib);
        long gi = fleet_gpu_open(f, g, p, pool_left, pool);
        if (gi < 0)
            return -ENOMEM;
        gpu_add(&g->use[gi], w, w->memory_mib);
        if (p->gpu_of)
            p->gpu_of[i] = (uint32_t)gi;
        p->alone++;
        p->placed++;
    }
    return 0;
}

/* The workloads of one sharing group as sort keys (memory relative to the largest GPU plus
 * compute), largest first; returns how many. */
static size_t group_keys(const struct fleet_workloads *ws, const uint8_t *possible, int mech,
                         const struct mech_rules *r, int grp, uint64_t max_mem,
                         struct sort_key *keys)
{
    size_t n = 0;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i] && group_of(mech, &ws->w[i], r) == grp) {
            const struct fleet_workload *w = &ws->w[i];
            keys[n].key = w->memory_mib * FLEET_BP_FULL / max_mem + w->compute_bp;
            keys[n++].index = (uint32_t)i;
        }
    sort_keys(keys, n);
    return n;
}

static void describe_plan(struct fleet_plan *p, int mech, const struct mech_rules *r)
{
    if (mech == FLEET_TIMESLICE)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (strict latency or untrusted: no isolation, context-switch jitter); "
                 "%u replicas and %u%% of compute per GPU",
                 (unsigned long long)p->alone, r->slots, r->compute_cap / 100);
    else if (mech == FLEET_MPS)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (untrusted: no fault isolation); strict latency shares only with "
                 "strict; %u clients per GPU",
                 (unsigned long long)p->alone, r->slots);
    else if (mech == FLEET_CARVE)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (untrusted: software isolation only); exact memory caps, latency "
                 "priority; %u slices per GPU",
                 (unsigned long long)p->alone, r->slots);
    else
        snprintf(p->note, sizeof(p->note), "one workload per GPU");
}

static int pack_shared(const struct fleet *f, const struct fleet_workloads *ws,
                       const uint8_t *possible, int mech, const struct fleet_options *o,
                       struct fleet_plan *p)
{
    struct mech_rules r = {FLEET_BP_FULL, 1};
    if (mech == FLEET_TIMESLICE)
        r = (struct mech_rules){o->timeslice_compute_bp, o->timeslice_replicas};
    else if (mech == FLEET_MPS)
        r = (struct mech_rules){FLEET_BP_FULL, o->mps_clients};
    else if (mech == FLEET_CARVE)
        r = (struct mech_rules){FLEET_BP_FULL, o->carve_slices};
    if (r.slots < 1)
        r.slots = 1;
    p->mech = mech;
    p->available = true;
    uint64_t max_mem = fleet_max_memory(f);
    struct sort_key *keys = malloc((ws->n ? ws->n : 1) * sizeof(*keys));
    if (!keys)
        return -ENOMEM;

    /* the bounds first: GPUs per group (L2), then the cost of the cheapest purchase that
       holds everything, whose solution the packing follows */
    uint64_t group_gpus[FLEET_GROUPS];
    for (int grp = 0; grp < FLEET_GROUPS; grp++) {
        size_t n = group_keys(ws, possible, mech, &r, grp, max_mem, keys);
        group_gpus[grp] = group_bound(ws, keys, n, max_mem, &r);
    }
    struct fleet_demand d;
    struct fleet_lp_plan lp;
    int ret = fill_demand(f, ws, possible, mech, &r, group_gpus, &d);
    if (!ret)
        ret = fleet_cost_bound(f, &d, true, &lp);

    struct pool_choice pc;
    memset(&pc, 0, sizeof(pc));
    int8_t share_packer[2][FLEET_MAX_POOLS + 1];
    pc.only = -1;
    pc.d = &d;
    pc.share_packer = share_packer;
    fleet_pool_order(f, pc.by_size);
    for (size_t i = 0; i < f->npools; i++)
        pc.left[i] = f->pools[i].count;
    for (size_t i = 1; i < f->npools; i++) /* stable: equal sizes stay cheapest first */
        for (size_t j = i; j > 0 && f->pools[pc.by_size[j]].memory_mib >
                                        f->pools[pc.by_size[j - 1]].memory_mib; j--) {
            size_t t = pc.by_size[j];
            pc.by_size[j] = pc.by_size[j - 1];
            pc.by_size[j - 1] = t;
        }

    struct fleet_gpu_list g = {0};
    if (!ret)
        ret = place_lone(f, ws, possible, mech, &r, &d, &lp, pc.left, p, &g);
    p->lower_bound = p->alone;
    for (int grp = 0; grp < FLEET_GROUPS && !ret; grp++) {
        /* each group has the GPUs the solution buys for it and those the groups before it
           left: one budget for all let MPS's first group take the L4s on A100 + L4 + T4 and
           left the strict group T4s only, where memory binds (compute-heavy: 3.0% above the
           bound against 1.9%) */
        for (size_t i = 0; i < f->npools; i++)
            pc.budget[i] = dmax(pc.budget[i], 0) + (lp.solved ? lp.shared[grp][i] : 0);
        pc.band_count = lp.solved && d.counted && f->npools > 1 ? lp.band_count[grp] : NULL;
        pc.band_memory_mib = pc.band_count && lp.within_fleet ? lp.band_memory_mib[grp] : NULL;
        memset(share_packer, -1, sizeof(share_packer));
        pc.band_cost = 0;
        for (size_t i = 0; i < f->npools; i++)
            pc.band_cost += lp.solved ? lp.shared[grp][i] * f->pools[i].price : 0;
        size_t n = group_keys(ws, possible, mech, &r, grp, max_mem, keys);
        ret = improve_order(f, ws, keys, n, &r, &pc);
        packer_fn *pack = pack_group;
        if (!ret)
            ret = choose_packer(f, ws, keys, n, &r, &pc, &pack);
        if (!ret)
            ret = pack(f, ws, keys, n, &r, &pc, p, &g);
        p->lower_bound += group_gpus[grp];
    }
    /* a plan that goes beyond the fleet is measured against every plan, whatever GPUs of
       these models it buys: a cheaper one may go beyond the fleet too */
    if (!ret && p->shortage && lp.within_fleet)
        ret = fleet_cost_bound(f, &d, false, &lp);
    p->cost_lower_bound = lp.solved ? lp.cost : plain_cost_bound(f, &d);
    free(keys);
    finish_plan(f, p, &g);
    describe_plan(p, mech, &r);
    return ret;
}

static void impossible_reason(const struct fleet *f, const struct fleet_workload *w, char *buf,
                              size_t len)
{
    const struct fleet_pool *big = &f->pools[0];
    for (size_t i = 1; i < f->npools; i++)
        if (f->pools[i].memory_mib > big->memory_mib)
            big = &f->pools[i];
    snprintf(buf, len, "needs %llu MiB (%.1f GiB); the largest GPU of the fleet, %s, has %llu MiB",
             (unsigned long long)w->memory_mib, w->memory_mib / 1024.0, big->name,
             (unsigned long long)big->memory_mib);
}

int fleet_plan_all(const struct fleet *f, const struct fleet_workloads *ws,
                   const struct fleet_options *o, struct fleet_result *r)
{
    memset(r, 0, sizeof(*r));
    r->nworkloads = ws->n;
    uint8_t *possible = malloc(ws->n ? ws->n : 1);
    if (!possible)
        return -ENOMEM;
    uint64_t max_mem = fleet_max_memory(f);
    for (size_t i = 0; i < ws->n; i++) {
        possible[i] = ws->w[i].memory_mib <= max_mem;
        if (possible[i])
            continue;
        if (r->nimpossible % 64 == 0) {
            struct fleet_impossible *bigger =
                realloc(r->impossible, (r->nimpossible + 64) * sizeof(*bigger));
            if (!bigger) {
                free(possible);
                return -ENOMEM;
            }
            r->impossible = bigger;
        }
        r->impossible[r->nimpossible].index = i;
        impossible_reason(f, &ws->w[i], r->impossible[r->nimpossible].why,
                          sizeof(r->impossible[0].why));
        r->nimpossible++;
    }
    int ret = 0;
    for (int m = 0; m < FLEET_NMECH && !ret; m++) {
        struct fleet_plan *p = &r->plans[m];
        p->mech = m;
        if (o->keep_assignment) {
            p->gpu_of = malloc((ws->n ? ws->n : 1) * sizeof(*p->gpu_of));
            if (!p->gpu_of) {
                ret = -ENOMEM;
                break;
            }
            for (size_t i = 0; i < ws->n; i++)
                p->gpu_of[i] = UINT32_MAX;
        }
        ret = m == FLEET_MIG ? fleet_pack_mig(f, ws, possible, o, p)
                             : pack_shared(f, ws, possible, m, o, p);
    }
    free(possible);
    return ret;
}

void fleet_result_free(struct fleet_result *r)
{
    for (int m = 0; m < FLEET_NMECH; m++) {
        free(r->plans[m].gpu_of);
        free(r->plans[m].use);
        free(r->plans[m].profile_of);
    }
    free(r->impossible);
    memset(r, 0, sizeof(*r));
}
