/* fleet_choose.c - which packer packs a sharing group: each packer tried on it in a dry run,
 * orders near the decreasing one on small groups, of two orders by memory and of the largest or
 * smallest GPU opened first the best, and the group split as the cost bound's solution splits
 * it, band by band, onto the pools. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

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

static packer_fn pack_by_band, pack_by_band_exact;
#define BAND_WORTH 1.01 /* the split is tried for a group more than 1% above its solution */
static packer_fn *const packers[] = {fleet_pack_group, fleet_fill_by_group, fleet_fill_by_rest,
                                     pack_by_band, pack_by_band_exact};

/* A packing on a copy of pc into a plan of its own; kept whole in keep (NULL: not kept). */
static int dry_run(packer_fn *pack, const struct fleet *f, const struct fleet_workloads *ws,
                   const struct sort_key *keys, size_t n, const struct mech_rules *r,
                   const struct pool_choice *pc, struct trial *out, struct fleet_kept_pack *keep)
{
    struct fleet_plan scratch;
    struct fleet_gpu_list g = {0};
    struct pool_choice copy = *pc;
    memset(&scratch, 0, sizeof(scratch));
    if (keep) {
        g = keep->g;
        g.n = 0;
        scratch.gpu_of = keep->gpu_of;
        for (size_t k = 0; k < n; k++)
            keep->gpu_of[keys[k].index] = UINT32_MAX;
    }
    int ret = pack(f, ws, keys, n, r, &copy, &scratch, &g);
    if (keep) {
        keep->valid = pack != pack_by_band && pack != pack_by_band_exact;
        keep->added = scratch;
        keep->added.gpu_of = NULL;
        keep->g = g;
        keep->pc = copy;
    } else {
        free(g.use);
    }
    out->gpus = scratch.gpus;
    out->shortage = scratch.shortage;
    out->deferred = n - scratch.placed;
    out->cost = scratch.cost_per_hour;
    return ret;
}

int fleet_kept_init(struct fleet_kept_pack *k, size_t nworkloads)
{
    memset(k, 0, sizeof(*k));
    k->gpu_of = malloc((nworkloads ? nworkloads : 1) * sizeof(*k->gpu_of));
    return k->gpu_of ? 0 : -ENOMEM;
}

void fleet_kept_free(struct fleet_kept_pack *k)
{
    free(k->g.use);
    free(k->gpu_of);
    memset(k, 0, sizeof(*k));
}

static void kept_swap(struct fleet_kept_pack *a, struct fleet_kept_pack *b)
{
    struct fleet_kept_pack t = *a;
    *a = *b;
    *b = t;
}

int fleet_kept_adopt(const struct fleet *f, const struct fleet_kept_pack *k,
                     const struct sort_key *keys, size_t n, struct pool_choice *pc,
                     struct fleet_plan *p, struct fleet_gpu_list *g)
{
    size_t base = g->n;
    if (base + k->g.n > g->cap) {
        size_t cap = g->cap ? g->cap : 1024;
        while (cap < base + k->g.n)
            cap *= 2;
        struct fleet_gpu_use *bigger = realloc(g->use, cap * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        g->use = bigger;
        g->cap = cap;
    }
    if (k->g.n)
        memcpy(&g->use[base], k->g.use, k->g.n * sizeof(*g->use));
    g->n += k->g.n;
    /* one GPU at a time, as fleet_gpu_open counts them: the same sum of prices to the bit */
    for (size_t j = 0; j < k->g.n; j++) {
        p->gpus_by_pool[k->g.use[j].pool]++;
        p->gpus++;
        p->cost_per_hour += f->pools[k->g.use[j].pool].price;
    }
    p->shortage += k->added.shortage;
    p->placed += k->added.placed;
    for (size_t i = 0; p->gpu_of && i < n; i++) {
        uint32_t gi = k->gpu_of[keys[i].index];
        p->gpu_of[keys[i].index] = gi == UINT32_MAX ? UINT32_MAX : (uint32_t)(gi + base);
    }
    *pc = k->pc;
    return 0;
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

int fleet_improve_order(const struct fleet *f, const struct fleet_workloads *ws,
                        struct sort_key *keys, size_t n, const struct mech_rules *r,
                        const struct pool_choice *pc)
{
    if (n < 3 || n > SMALL_GROUP)
        return 0;
    struct sort_key *best = malloc(n * sizeof(*best)), *trial = malloc(n * sizeof(*trial));
    struct trial best_t, t;
    int ret =
        best && trial ? dry_run(fleet_pack_group, f, ws, keys, n, r, pc, &best_t, NULL) : -ENOMEM;
    uint64_t seed = 0x9E3779B97F4A7C15ULL ^ n;
    if (!ret)
        memcpy(best, keys, n * sizeof(*best));
    for (int k = 0; k < SMALL_TRIES && !ret; k++) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            trial[i] = keys[i];
            trial[i].key = (uint32_t)((uint64_t)keys[i].key * (700 + (seed >> 33) % 301) /
                                      1000); /* 70-100% */
        }
        fleet_sort_keys(trial, n);
        if ((ret = dry_run(fleet_pack_group, f, ws, trial, n, r, pc, &t, NULL)))
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
 * dimension alone does (it then packs that one to within a fraction of a percent). The
 * winner's dry run in keep (NULL: not wanted), which holds a buffer for another in cand. */
static int choose_packer(const struct fleet *f, const struct fleet_workloads *ws,
                         const struct sort_key *keys, size_t n, const struct mech_rules *r,
                         const struct pool_choice *pc, packer_fn **pack, struct trial *out,
                         struct fleet_kept_pack *keep, struct fleet_kept_pack *cand)
{
    struct trial t, best_t;
    struct trial *best = out ? out : &best_t;
    *pack = fleet_pack_group;
    memset(best, 0, sizeof(*best));
    if (keep)
        keep->valid = false;
    if (n < 2)
        return 0;
    int ret = dry_run(fleet_pack_group, f, ws, keys, n, r, pc, best, keep);
    size_t npackers = sizeof(packers) / sizeof(packers[0]) - 2 * !pc->band_count;
    for (size_t i = 1; i < npackers && !ret; i++) {
        if (packers[i] == pack_by_band && best->cost <= pc->band_cost * BAND_WORTH)
            break; /* close enough to the solution: the split (twice the time) is not worth it */
        if (packers[i] == pack_by_band_exact &&
            (!pc->band_memory_mib || !fleet_some_exact_worth(f)))
            break; /* the fleet cannot hold the group even in fractions, or no pool is one the
                      exact fill is for */
        ret = dry_run(packers[i], f, ws, keys, n, r, pc, &t, keep ? cand : NULL);
        if (!ret && better(f, &t, best)) {
            *best = t;
            *pack = packers[i];
            if (keep)
                kept_swap(keep, cand);
        }
    }
    return ret;
}

int fleet_choose_packer(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        const struct pool_choice *pc, packer_fn **pack)
{
    return choose_packer(f, ws, keys, n, r, pc, pack, NULL, NULL, NULL);
}

/* The other orders are tried on groups of at most this many workloads: on the lists of 20,000
 * and 100,000 of the tests and the benchmark they won nothing, and the benchmark's list on
 * H100 + L4 + T4 took 46% longer (2.3 s -> 3.4 s). */
#define ORDER_MOST 5000

int fleet_choose_order(const struct fleet *f, const struct fleet_workloads *ws,
                       const struct sort_key *keys, struct sort_key *other, size_t n,
                       const struct mech_rules *r, struct pool_choice *pc, packer_fn **pack,
                       int *won, struct fleet_kept_pack *kept)
{
    struct trial best, t;
    packer_fn *t_pack;
    int8_t known[2][FLEET_MAX_POOLS + 1]; /* the splits' packers of the best so far */
    /* spare buffers for the dry runs that may not win: a packer's, and an order's best */
    struct fleet_kept_pack cand = {0}, order_best = {0};
    *won = ORDER_KEYS;
    pc->small_first = false;
    if (kept && (fleet_kept_init(&cand, ws->n) || fleet_kept_init(&order_best, ws->n))) {
        fleet_kept_free(&cand);
        return -ENOMEM;
    }
    int ret = choose_packer(f, ws, keys, n, r, pc, pack, &best, kept, kept ? &cand : NULL);
    if (ret || n < 2 || n > ORDER_MOST || best.cost <= pc->band_cost * BAND_WORTH) {
        fleet_kept_free(&cand);
        fleet_kept_free(&order_best);
        return ret; /* close enough to the solution, or too long: the others are not worth
                       their time */
    }
    size_t budgets = 0; /* pools the solution buys for the group: smallest first needs two */
    for (size_t i = 0; i < f->npools; i++)
        budgets += pc->budget[i] >= 0.5;
    for (int v = ORDER_OTHER; v <= ORDER_SMALL_FIRST && !ret; v++) {
        if ((v == ORDER_OTHER && !other) || (v == ORDER_SMALL_FIRST && budgets < 2))
            continue;
        memcpy(known, pc->share_packer, sizeof(known));
        memset(pc->share_packer, -1, sizeof(known));
        pc->small_first = v == ORDER_SMALL_FIRST;
        if (v == ORDER_OTHER)
            ret = fleet_improve_order(f, ws, other, n, r, pc);
        if (!ret)
            ret = choose_packer(f, ws, v == ORDER_OTHER ? other : keys, n, r, pc, &t_pack, &t,
                                kept ? &order_best : NULL, kept ? &cand : NULL);
        if (!ret && better(f, &t, &best)) {
            best = t;
            *pack = t_pack;
            *won = v;
            if (kept)
                kept_swap(kept, &order_best);
        } else {
            memcpy(pc->share_packer, known, sizeof(known));
        }
    }
    pc->small_first = *won == ORDER_SMALL_FIRST;
    fleet_kept_free(&cand);
    fleet_kept_free(&order_best);
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

/* Each workload's share (pool_of, by workload; -1: none): each band's workloads go to the pools
 * the solution gives them, its counts rounded, largest GPU first; those of the pools that take
 * the band's smallest end (band_ends) from the smallest up. */
static void assign_shares(const struct fleet *f, const struct fleet_workloads *ws,
                          const struct sort_key *keys, size_t n, const struct pool_choice *pc,
                          int8_t *pool_of)
{
    double quota[FLEET_BANDS][FLEET_MAX_POOLS];
    for (size_t b = 0; b < pc->d->nband; b++)
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
    for (size_t k = 0; k < n; k++)
        pool_of[keys[k].index] = -1;
    for (int pass = 0; pass < 2; pass++) /* the shares of smallest, then the others */
        for (size_t j = 0; j < n; j++) {
            size_t k = pass ? j : n - 1 - j;
            const struct fleet_workload *w = &ws->w[keys[k].index];
            size_t b = fleet_band_of(pc->d, w->memory_mib);
            for (size_t o = 0; o < f->npools && pool_of[keys[k].index] < 0; o++) {
                size_t i = pc->by_size[o];
                if (smallest[b][i] == !pass && quota[b][i] >= 1 &&
                    f->pools[i].memory_mib >= w->memory_mib) {
                    quota[b][i] -= 1;
                    pool_of[keys[k].index] = (int8_t)i;
                }
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
 * It packs each workload twice over (a dry run per share), so fleet_choose_packer tries it only
 * for a group whose best plan is more than BAND_WORTH over what the solution's GPUs for it
 * cost: on the mixed benchmark list that is none, and its time stays as it was. */
static int pack_by_band(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    struct sort_key *share = malloc((n ? n : 1) * sizeof(*share));
    struct sort_key *deferred = malloc((n ? n : 1) * sizeof(*deferred));
    int8_t *pool_of = malloc(ws->n ? ws->n : 1); /* per workload: the pool of its share */
    int ret = share && deferred && pool_of ? 0 : -ENOMEM;
    if (!ret)
        assign_shares(f, ws, keys, n, pc, pool_of);
    const double(*band_count)[FLEET_MAX_POOLS] = pc->band_count;
    pc->band_count = NULL; /* the shares are packed by the other packers */
    for (size_t o = 0; o <= f->npools && !ret; o++) {
        pc->only = o < f->npools ? (int)pc->by_size[o] : -1;
        pc->deferred = o < f->npools ? deferred : NULL;
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (pool_of[keys[k].index] == pc->only)
                share[m++] = keys[k];
        packer_fn *pack = fleet_pack_group;
        pc->ndeferred = 0; /* the dry runs write there too; what the packing writes counts */
        int8_t *known = &pc->share_packer[pc->exact][o];
        if (*known >= 0)
            pack = packers[*known];
        else
            ret = fleet_choose_packer(f, ws, share, m, r, pc, &pack);
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
