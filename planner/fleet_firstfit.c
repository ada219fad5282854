/* fleet_firstfit.c - first-fit decreasing of a sharing group on two dimensions (memory,
 * compute) plus a tenant limit, over a segment tree of the open GPUs so that each placement
 * costs O(log GPUs) in the usual case: 100,000 workloads pack in milliseconds. */
#include <errno.h>
#include <stdlib.h>

#include "fleet_pack.h"

/* A node's room: the most free memory, compute and tenant places of any GPU below it, and the
 * most of any one GPU's free memory and compute added up (each as a share, fit_sum). Kept
 * together, so that testing a node reads one cache line, not four. Memory fits 32 bits: a
 * GPU has at most 1 PiB, 2^30 MiB. */
struct fit_node {
    uint32_t mem;
    uint32_t comp;
    uint32_t slots;
    uint32_t sum;
};

struct fit_tree {
    size_t size;           /* leaves, a power of two */
    size_t nbins;          /* open bins (leaves 0..nbins-1) */
    struct fit_node *node; /* 2 * size: 1 is the root, leaf l is size + l */
    long *gpu;             /* leaf -> index into the plan's GPUs */
    uint64_t most_mem;     /* the largest GPU's memory and the compute one GPU delivers: */
    uint32_t most_comp;    /* what fit_sum takes as whole */
};

/* Memory and compute as shares of a GPU, in 2^-20, added up. Rounded down, so that a GPU with
 * at least a workload's memory and compute has at least its sum: a subtree whose most is less
 * holds no GPU that fits, though its most memory and most compute (of two GPUs) may pass. */
#define FIT_SUM_ONE (1ULL << 20)
static uint64_t fit_sum(const struct fit_tree *t, uint64_t mem, uint32_t comp)
{
    return mem * FIT_SUM_ONE / t->most_mem + (uint64_t)comp * FIT_SUM_ONE / t->most_comp;
}

static int tree_init(struct fit_tree *t, size_t max_bins, uint64_t most_mem, uint32_t most_comp)
{
    t->most_mem = most_mem ? most_mem : 1;
    t->most_comp = most_comp ? most_comp : 1;
    t->size = 1;
    while (t->size < max_bins)
        t->size <<= 1;
    t->nbins = 0;
    t->node = calloc(2 * t->size, sizeof(*t->node));
    t->gpu = calloc(t->size, sizeof(*t->gpu));
    return t->node && t->gpu ? 0 : -ENOMEM;
}

static void tree_free(struct fit_tree *t)
{
    free(t->node);
    free(t->gpu);
}

static void tree_set(struct fit_tree *t, size_t leaf, uint64_t mem, uint32_t comp, uint32_t slots)
{
    size_t i = leaf + t->size;
    t->node[i] = (struct fit_node){(uint32_t)mem, comp, slots, (uint32_t)fit_sum(t, mem, comp)};
    for (i >>= 1; i; i >>= 1) {
        const struct fit_node *l = &t->node[2 * i], *r = &t->node[2 * i + 1];
        t->node[i] = (struct fit_node){MAX(l->mem, r->mem), MAX(l->comp, r->comp),
                                       MAX(l->slots, r->slots), MAX(l->sum, r->sum)};
    }
}

static bool node_may_fit(const struct fit_tree *t, size_t i, uint64_t mem, uint32_t comp,
                         uint64_t sum)
{
    const struct fit_node *n = &t->node[i];
    return n->mem >= mem && n->comp >= comp && n->slots >= 1 && n->sum >= sum;
}

/* The leftmost open bin with room for (mem, comp), or -1. The maxima are per dimension, so
 * a subtree may pass the test and still hold no bin that fits: then it backtracks (to the
 * right sibling of the deepest left child on the way down). Each node that passes costs one
 * of budget; none left, it gives up. */
static long tree_find(const struct fit_tree *t, uint64_t mem, uint32_t comp, uint64_t sum,
                      unsigned *budget)
{
    size_t i = 1;
    if (!node_may_fit(t, i, mem, comp, sum))
        return -1;
    for (;;) {
        if (!*budget)
            return -1;
        --*budget;
        if (i >= t->size)
            return (long)(i - t->size);
        i = 2 * i;
        while (!node_may_fit(t, i, mem, comp, sum)) {
            for (; i & 1; i >>= 1) /* a right child: its parent is done */
                if (i == 1)
                    return -1;
            i++;
        }
    }
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
        const struct sort_key *w = &keys[k];
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
    uint64_t most_mem = 0;
    for (size_t i = 0; i < f->npools; i++)
        most_mem = MAX(most_mem, f->pools[i].memory_mib);
    int ret = tree_init(&t, n ? n : 1, most_mem, r->compute_cap);
    uint64_t *min_mem = malloc((n + 1) * sizeof(*min_mem));
    uint32_t *min_comp = malloc((n + 1) * sizeof(*min_comp));
    if (!min_mem || !min_comp)
        ret = -ENOMEM;
    if (!ret)
        least_from(ws, keys, n, min_mem, min_comp);
    struct still_to_place rest = fleet_still_all(ws, keys, n);
    for (size_t k = 0; k < n && !ret; k++) {
        const struct sort_key *w = &keys[k];
        unsigned budget = FIT_SEARCH_BUDGET;
        long leaf = tree_find(&t, w->memory_mib, w->compute_bp,
                              fit_sum(&t, w->memory_mib, w->compute_bp), &budget);
        if (leaf < 0) {
            int pool = fleet_choose_pool(f, pc, &rest, r->compute_cap, r->slots, w->memory_mib);
            if (pool < 0) {
                fleet_defer_to_next_share(pc, &rest, keys[k]);
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
        fleet_gpu_add(u, w->memory_mib, w->compute_bp, w->memory_mib);
        fleet_still_drop(&rest, w->memory_mib, w->compute_bp);
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
