/* fleet_firstfit.c - first-fit decreasing of a sharing group on two dimensions (memory,
 * compute) plus a tenant limit, over a segment tree of the open GPUs so that each placement
 * costs O(log GPUs) in the usual case: 100,000 workloads pack in milliseconds. */
#include <errno.h>
#include <stdlib.h>

#include "fleet_pack.h"

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

/* The smallest memory and compute among keys[k..n), for each k (n + 1 entries each). */
static void least_from(const struct fleet_workloads *ws, const struct sort_key *keys, size_t n,
                       uint64_t *min_mem, uint32_t *min_comp)
{
    min_mem[n] = UINT64_MAX;
    min_comp[n] = UINT32_MAX;
    for (size_t k = n; k-- > 0;) {
        const struct fleet_workload *w = &ws->w[keys[k].index];
        min_mem[k] = w->memory_mib < min_mem[k + 1] ? w->memory_mib : min_mem[k + 1];
        min_comp[k] = w->compute_bp < min_comp[k + 1] ? w->compute_bp : min_comp[k + 1];
    }
}

/* GPU u's room, at leaf of the tree; none where it cannot take the smallest memory and compute
 * still to place: the GPU is closed, which keeps the search from wandering into full GPUs. */
static void tree_room(struct fit_tree *t, size_t leaf, const struct fleet *f,
                      const struct fleet_gpu_use *u, const struct mech_rules *r, uint64_t min_mem,
                      uint32_t min_comp)
{
    uint64_t free_mem = f->pools[u->pool].memory_mib - u->memory_used_mib;
    uint32_t free_comp = u->compute_bp >= r->compute_cap ? 0 : r->compute_cap - u->compute_bp;
    uint32_t free_slots = r->slots - u->tenants;
    if (free_mem < min_mem || free_comp < min_comp)
        free_mem = free_comp = free_slots = 0;
    tree_set(t, leaf, free_mem, free_comp, free_slots);
}

int fleet_pack_group(const struct fleet *f, const struct fleet_workloads *ws,
                     const struct sort_key *keys, size_t n, const struct mech_rules *r,
                     struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    struct fit_tree t;
    int ret = tree_init(&t, n ? n : 1);
    uint64_t *min_mem = malloc((n + 1) * sizeof(*min_mem));
    uint32_t *min_comp = malloc((n + 1) * sizeof(*min_comp));
    if (!min_mem || !min_comp)
        ret = -ENOMEM;
    if (!ret)
        least_from(ws, keys, n, min_mem, min_comp);
    struct still_to_place rest = fleet_still_all(ws, keys, n);
    for (size_t k = 0; k < n && !ret; k++) {
        const struct fleet_workload *w = &ws->w[keys[k].index];
        unsigned budget = FIT_SEARCH_BUDGET;
        long leaf = tree_find(&t, 1, w->memory_mib, w->compute_bp, &budget);
        if (leaf < 0) {
            int pool = fleet_choose_pool(f, pc, &rest, r->compute_cap, r->slots, w->memory_mib);
            if (pool < 0) {
                fleet_defer_to_next_share(pc, &rest, keys[k], w);
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
        fleet_gpu_add(u, w, w->memory_mib);
        fleet_still_drop(&rest, w);
        if (p->gpu_of)
            p->gpu_of[keys[k].index] = (uint32_t)t.gpu[leaf];
        p->placed++;
        tree_room(&t, (size_t)leaf, f, u, r, min_mem[k + 1], min_comp[k + 1]);
    }
    free(min_mem);
    free(min_comp);
    tree_free(&t);
    return ret;
}
