/* fleet_pack.c - packing a workload list onto a fleet under whole GPUs, time-slicing, MPS and
 * carve slices (MIG is in fleet_mig.c): each mechanism's rules, the pools a group's GPUs come
 * from, and the whole plan with the lower bound it is measured against.
 *
 * Each mechanism's rules decide which workloads must have a GPU of their own (untrusted
 * tenants without hardware isolation, strict latency under time-slicing) and which workloads
 * may not share a GPU (strict latency with anything else under MPS); the rest share, in groups
 * packed by first-fit decreasing (fleet_firstfit.c: 100,000 workloads pack in milliseconds)
 * or, where memory and compute both bind on a GPU, by filling one GPU at a time (fleet_fill.c),
 * whichever does better (fleet_choose.c). On a fleet of several models the cost bound
 * (fleet_lp.c, on the demand fleet_bound.c draws up) comes first, and its solution says which
 * pools the GPUs come from. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h> /* sched_getaffinity, CPU_COUNT: _GNU_SOURCE, from the Makefile */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

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

/* ---- which pool a group's next GPU comes from ---- */

/* The pool that holds the workloads still to place most cheaply: a GPU's price over how many
 * of them it would hold at their average memory and compute; among the pools with GPUs left
 * when need_left. */
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

/* The cost bound's solution says how many GPUs of each pool the groups should take (budget):
 * those are opened largest GPU first, so that first-fit decreasing puts the largest workloads
 * on the largest GPUs and the small ones that come last fill the small GPUs. Or smallest first
 * (pc->small_first, one of the orders fleet_choose_order tries): where compute leads the order,
 * small workloads of much compute came first and opened the A100s of A100 + L4 + T4, whose
 * compute a T4 has for a tenth of the price, and the workloads of 30 and 45 GiB that only an
 * A100 holds then needed more of them (6.1% above the cost bound, 2.8% smallest first). Beyond the
 * budgets (the packing is never as tight as the fractional solution), the pool cheapest per
 * workload; among the pools with GPUs left, else among all. */
int fleet_choose_pool(const struct fleet *f, struct pool_choice *pc,
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
        size_t i = pc->by_size[pc->small_first ? f->npools - 1 - o : o];
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

void fleet_gpu_restart(const struct fleet *f, struct fleet_gpu_list *g, struct fleet_plan *p,
                       uint64_t left[FLEET_MAX_POOLS])
{
    for (size_t q = 0; q < f->npools; q++)
        left[q] = f->pools[q].count;
    p->gpus = 0;
    memset(p->gpus_by_pool, 0, sizeof(p->gpus_by_pool));
    p->shortage = 0;
    p->cost_per_hour = 0;
    p->alone = 0;
    p->placed = 0;
    g->n = 0;
}

void fleet_gpu_add(struct fleet_gpu_use *u, uint64_t memory_mib, uint32_t compute_bp,
                   uint64_t held)
{
    u->tenants++;
    u->memory_used_mib += memory_mib;
    u->memory_held_mib += held;
    u->compute_bp += compute_bp;
}

/* ---- a mechanism's groups ---- */

int fleet_group_of(int mech, const struct fleet_workload *w, const struct mech_rules *r)
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

struct still_to_place fleet_still_all(const struct fleet_workloads *ws,
                                      const struct sort_key *keys, size_t n)
{
    struct still_to_place rest = {0, 0, n};
    for (size_t k = 0; k < n; k++) {
        rest.memory_mib += keys[k].memory_mib;
        rest.compute_bp += keys[k].compute_bp;
    }
    return rest;
}

void fleet_still_drop(struct still_to_place *rest, uint64_t memory_mib, uint32_t compute_bp)
{
    rest->memory_mib -= memory_mib;
    rest->compute_bp -= compute_bp;
    rest->count--;
}

struct sort_key fleet_sort_key(const struct fleet_workloads *ws, size_t index, uint64_t key)
{
    const struct fleet_workload *w = &ws->w[index];
    /* a key by another scale (group_scale) may pass 2 x FLEET_BP_FULL: the counting sort puts
       all such at its top anyway */
    return (struct sort_key){key > UINT32_MAX ? UINT32_MAX : (uint32_t)key, (uint32_t)index,
                             (uint32_t)w->memory_mib, w->compute_bp};
}

void fleet_defer_to_next_share(struct pool_choice *pc, struct still_to_place *rest,
                               struct sort_key key)
{
    pc->deferred[pc->ndeferred++] = key;
    fleet_still_drop(rest, key.memory_mib, key.compute_bp);
}

static int by_key_desc(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Keys are at most 2 x FLEET_BP_FULL (memory and compute in basis points of the largest GPU),
 * so a counting sort does it in O(n). */
void fleet_sort_keys(struct sort_key *keys, size_t n)
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

/* ---- the whole plan for one mechanism ---- */

uint64_t fleet_max_memory(const struct fleet *f)
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

/* The pool with a GPU left whose GPUs are the smallest that hold memory_mib (the cheapest of
 * those), or -1. */
static int smallest_pool(const struct fleet *f, const uint64_t *pool_left, uint64_t memory_mib)
{
    int pool = -1;
    for (size_t q = 0; q < f->npools; q++) {
        const struct fleet_pool *c = &f->pools[q];
        if (!pool_left[q] || c->memory_mib < memory_mib)
            continue;
        if (pool < 0 || c->memory_mib < f->pools[pool].memory_mib ||
            (c->memory_mib == f->pools[pool].memory_mib && c->price < f->pools[pool].price))
            pool = (int)q;
    }
    return pool;
}

/* Lone workloads, each on a GPU of its own: of the pool the bound's solution gives its class
 * (cheapest first), else the cheapest that fits and has a GPU left; or (smallest, when a plan
 * that went beyond the fleet is packed again) on the smallest GPU left that holds it. The
 * largest go first: when a class's pool runs out (the fleet is too small) a small workload
 * falls back to any pool with GPUs left, and taken in list order it could take the large GPUs
 * that the large workloads after it need, which then go beyond the fleet on large GPUs too
 * (on H100:3 + L4:1, four 8 GiB workloads listed before three 30 GiB ones cost 47% more). */
static int place_lone(const struct fleet *f, const struct fleet_workloads *ws,
                      const uint8_t *possible, int mech, const struct mech_rules *r,
                      const struct fleet_demand *d, const struct fleet_lp_plan *lp,
                      bool smallest, uint64_t *pool_left, struct fleet_plan *p,
                      struct fleet_gpu_list *g)
{
    double budget[FLEET_MAX_POOLS][FLEET_MAX_POOLS];
    memcpy(budget, lp->lone, sizeof(budget));
    struct sort_key *lone = malloc((ws->n ? ws->n : 1) * sizeof(*lone));
    if (!lone)
        return -ENOMEM;
    size_t nlone = 0;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i] && fleet_group_of(mech, &ws->w[i], r) == GROUP_ALONE)
            lone[nlone++] = fleet_sort_key(ws, i, ws->w[i].memory_mib);
    qsort(lone, nlone, sizeof(*lone), by_key_desc); /* keys in MiB: no counting sort */
    for (size_t l = 0; l < nlone; l++) {
        size_t i = lone[l].index;
        const struct fleet_workload *w = &ws->w[i];
        size_t k = fleet_class_of(d, w->memory_mib);
        int pool = smallest ? smallest_pool(f, pool_left, w->memory_mib) : -1;
        for (size_t q = 0; q < f->npools && !smallest; q++)
            if (budget[k][q] >= 0.5 && pool_left[q] && f->pools[q].memory_mib >= w->memory_mib &&
                (pool < 0 || f->pools[q].price < f->pools[pool].price))
                pool = (int)q;
        if (pool >= 0 && !smallest)
            budget[k][pool] -= 1;
        else if (pool < 0)
            pool = fleet_pick_pool(f, pool_left, w->memory_mib);
        long gi = fleet_gpu_open(f, g, p, pool_left, pool);
        if (gi < 0) {
            free(lone);
            return -ENOMEM;
        }
        fleet_gpu_add(&g->use[gi], w->memory_mib, w->compute_bp, w->memory_mib);
        if (p->gpu_of)
            p->gpu_of[i] = (uint32_t)gi;
        p->alone++;
        p->placed++;
    }
    free(lone);
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
        if (possible[i] && fleet_group_of(mech, &ws->w[i], r) == grp) {
            const struct fleet_workload *w = &ws->w[i];
            keys[n++] =
                fleet_sort_key(ws, i, w->memory_mib * FLEET_BP_FULL / max_mem + w->compute_bp);
        }
    fleet_sort_keys(keys, n);
    return n;
}

static void describe_plan(struct fleet_plan *p, int mech, const struct mech_rules *r)
{
    if (mech == FLEET_TIMESLICE)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (strict latency or untrusted: no isolation, context-switch jitter); "
                 "%u replica%s and %u%% of compute per GPU",
                 (unsigned long long)p->alone, r->slots, r->slots == 1 ? "" : "s",
                 r->compute_cap / 100);
    else if (mech == FLEET_MPS)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (untrusted: no fault isolation); strict latency shares only with "
                 "strict; %u client%s per GPU",
                 (unsigned long long)p->alone, r->slots, r->slots == 1 ? "" : "s");
    else if (mech == FLEET_CARVE)
        snprintf(p->note, sizeof(p->note),
                 "%llu alone (untrusted: software isolation only); exact memory caps, latency "
                 "priority; %u slice%s per GPU",
                 (unsigned long long)p->alone, r->slots, r->slots == 1 ? "" : "s");
    else
        snprintf(p->note, sizeof(p->note), "one workload per GPU");
}

static struct mech_rules rules_of(int mech, const struct fleet_options *o)
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
    return r;
}

void fleet_pool_choice_init(const struct fleet *f, const struct fleet_demand *d,
                             int8_t (*share_packer)[FLEET_MAX_POOLS + 1], struct pool_choice *pc)
{
    memset(pc, 0, sizeof(*pc));
    pc->only = -1;
    pc->d = d;
    pc->share_packer = share_packer;
    fleet_pool_order(f, pc->by_size);
    for (size_t i = 0; i < f->npools; i++)
        pc->left[i] = f->pools[i].count;
    for (size_t i = 1; i < f->npools; i++) /* stable: equal sizes stay cheapest first */
        for (size_t j = i; j > 0 && f->pools[pc->by_size[j]].memory_mib >
                                        f->pools[pc->by_size[j - 1]].memory_mib; j--) {
            size_t t = pc->by_size[j];
            pc->by_size[j] = pc->by_size[j - 1];
            pc->by_size[j - 1] = t;
        }
}

/* Each group has the GPUs the solution buys for it and those the groups before it left: one
 * budget for all let MPS's first group take the L4s on A100 + L4 + T4 and left the strict
 * group T4s only, where memory binds (compute-heavy: 3.0% above the bound against 1.9%). */
static void pool_choice_for_group(const struct fleet *f, const struct fleet_demand *d,
                                  const struct fleet_lp_plan *lp, int grp, struct pool_choice *pc)
{
    for (size_t i = 0; i < f->npools; i++)
        pc->budget[i] = dmax(pc->budget[i], 0) + (lp->solved ? lp->shared[grp][i] : 0);
    pc->band_count = lp->solved && d->counted && f->npools > 1 ? lp->band_count[grp] : NULL;
    pc->band_memory_mib = pc->band_count && lp->within_fleet ? lp->band_memory_mib[grp] : NULL;
    pc->band_cost = 0;
    for (size_t i = 0; i < f->npools; i++)
        pc->band_cost += lp->solved ? lp->shared[grp][i] * f->pools[i].price : 0;
}

/* A short list's plan searched against every other (fleet_exact.c), within lim; the one the
 * search finds takes its place. *e says what the search found and whether it was through.
 * Beyond the fleet: the packing follows the cost bound's fractional solution, whose ties and
 * roundings can give a GPU that others need to a workload that another pool holds as well (on
 * H100:1 + A100-40GB:2 a 1 GiB tenant alone on the H100 that a 39 and a 20 GiB workload
 * should share: a fourth GPU, $6.09 against $4.89). Within it: a cheaper plan, or the proof
 * that there is none. 0, or -ENOMEM. */
static int search_exactly(const struct fleet *f, const struct fleet_workloads *ws,
                          const uint8_t *possible, int mech, const struct mech_rules *r,
                          const struct fleet_exact_limits *lim, struct fleet_plan *p,
                          struct fleet_gpu_list *g, struct fleet_exact_plan *e)
{
    struct fleet_exact_item items[FLEET_EXACT_MAX];
    size_t n = 0;
    memset(e, 0, sizeof(*e));
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        if (n == FLEET_EXACT_MAX)
            return 0;
        int grp = fleet_group_of(mech, &ws->w[i], r);
        items[n++] = (struct fleet_exact_item){(uint32_t)i, grp == GROUP_ALONE ? FLEET_EXACT_ALONE
                                                                                : grp, -1};
    }
    struct fleet_exact_rules rules = {.compute_cap = r->compute_cap, .slots = r->slots};
    fleet_exact_search(f, ws, items, n, &rules, lim, e);
    if (!e->found)
        return 0;
    if (fleet_exact_adopt(f, e, g, p) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) {
        const struct fleet_workload *w = &ws->w[items[k].index];
        fleet_gpu_add(&g->use[e->gpu_of[k]], w->memory_mib, w->compute_bp, w->memory_mib);
        if (p->gpu_of)
            p->gpu_of[items[k].index] = e->gpu_of[k];
        p->alone += items[k].group == FLEET_EXACT_ALONE;
        p->placed++;
    }
    return 0;
}

/* A short list's plan still more than TOWARD_STEP above its bound, after the search for any
 * cheaper plan was cut short: searched for a plan within TOWARD_STEP of the bound instead,
 * where the cap cuts far more branches. One it finds takes the plan's place; a search that
 * ends without one raises the bound by TOWARD_STEP (no plan costs less than the cap: the
 * search counts each GPU FLEET_EXACT_PER_GPU dearer, so less that much a workload and one
 * more), and the next round looks again from there, while the plan is above the next cap.
 * On 68 lists of 25-64 on four fleets, plans above 2% of their bound: MPS 30 -> 28, carve
 * 32 -> 31 (on H100-80GB + A100-40GB, where one A100 is 4-9% of a plan, MPS 14 -> 12), at no
 * time to speak of. A round cut short searches once more with the workloads by size (memory
 * and compute, each a share of the largest GPU) instead of by memory: where the bound is tight
 * on both, that order finds a packing that most memory first misses (an H100 and ten A100s
 * filled to 89% of their memory and 91% of their compute, 695 nodes where memory first
 * passes five million); the same 68 lists: carve 31 -> 28 (two of 7.1% now 0.0%), MPS
 * 28 -> 27, 5% more time. As the first search's order it proves less (MPS plans above 2%:
 * 28 -> 37). Priced fleets only. 0, or -ENOMEM. */
#define TOWARD_STEP 0.02
#define TOWARD_ROUNDS 4
static int search_toward_bound(const struct fleet *f, const struct fleet_workloads *ws,
                               const uint8_t *possible, int mech, const struct mech_rules *r,
                               struct fleet_plan *p, struct fleet_gpu_list *g)
{
    for (int round = 0; round < TOWARD_ROUNDS; round++) {
        double cap = p->cost_lower_bound * (1 + TOWARD_STEP);
        if (p->cost_lower_bound <= 0 || cap >= p->cost_per_hour)
            return 0;
        struct fleet_exact_limits lim = {.below_cost = cap, .steps = FLEET_EXACT_PROOF_STEPS};
        struct fleet_exact_plan e;
        int ret = search_exactly(f, ws, possible, mech, r, &lim, p, g, &e);
        if (!ret && !e.found && !e.exhaustive) { /* cut short: once more, by size */
            lim.by_size = true;
            ret = search_exactly(f, ws, possible, mech, r, &lim, p, g, &e);
        }
        if (ret)
            return ret;
        if (e.found)
            continue; /* the plan is below the cap now */
        if (!e.exhaustive)
            return 0;
        p->cost_lower_bound = dmax(p->cost_lower_bound,
                                   cap - (double)(p->placed + 1) * FLEET_EXACT_PER_GPU);
    }
    return 0;
}

bool fleet_proof_worth(const struct fleet *f)
{
    bool counted = false;
    for (size_t q = 0; q < f->npools; q++)
        counted |= f->pools[q].count != FLEET_UNLIMITED;
    /* in GPUs on several counted pools a plan beyond the fleet may use fewer (larger) GPUs
       than any within it: the search there can only find a plan of fewer GPUs (1 in 150 lists
       of 24 on H100-80GB:6,A100-40GB:6, 90 ms a list), never raise the bound */
    return fleet_gap_in_cost(f) || f->npools == 1 || !counted;
}

struct fleet_exact_limits fleet_proof_limits(const struct fleet *f, const struct fleet_plan *p)
{
    bool in_cost = fleet_gap_in_cost(f);
    return (struct fleet_exact_limits){.below_cost = in_cost ? p->cost_per_hour : 0,
                                       .below_gpus = p->gpus,
                                       .steps = FLEET_EXACT_PROOF_STEPS,
                                       .by_gpus = !in_cost};
}

void fleet_plan_proved(const struct fleet *f, struct fleet_plan *p)
{
    if (!fleet_proof_worth(f))
        return;
    p->proved_cheapest = true;
    if (fleet_gap_in_cost(f))
        p->cost_lower_bound = dmax(p->cost_lower_bound,
                                   p->cost_per_hour - (double)p->placed * FLEET_EXACT_PER_GPU);
    else
        p->lower_bound = MAX(p->lower_bound, p->gpus);
}

/* What each packing of a mechanism's workloads goes by: its rules, the bounds' demand and
 * the cost bound's solution. */
struct shared_pack {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const uint8_t *possible;
    int mech;
    struct mech_rules r;
    uint64_t max_mem;
    struct fleet held; /* f with the memory a GPU can hold of the list (fleet_most_held) */
    struct fleet_demand d;
    struct fleet_lp_plan lp;
    struct sort_key *keys;
    struct sort_key *other_keys; /* a group's keys by another scale (group_scale) */
    bool groups[FLEET_GROUPS]; /* each sharing group has workloads */
    struct fleet_kept_pack *kept; /* the winning packer's dry run of a group */
};

/* The memory the keys of group grp weigh against beside the largest GPU's: that of the largest
 * GPU the bound's solution buys for the group. The order largest first is the packers' (the
 * largest workload left opens a GPU, the order breaks ties), and against an A100 that the
 * solution leaves out, where the L4s hold the group, memory barely counted in it: MPS on a
 * compute-heavy list on A100 + L4 was 2.35% above the cost bound in that order, 1.60% in the
 * L4's (an order by the L4 packed a list on H100 + L4 worse, 1.93% for 1.57%: both are
 * tried). */
static uint64_t group_scale(const struct shared_pack *s, int grp)
{
    uint64_t scale = 0;
    for (size_t i = 0; i < s->f->npools && s->lp.solved; i++)
        if (s->lp.shared[grp][i] >= 0.5)
            scale = MAX(scale, s->f->pools[i].memory_mib);
    return scale ? scale : s->max_mem;
}

/* How a plan that went beyond the fleet is packed again (pack_again). */
enum { PACK_GROUPS_REVERSED = 1, PACK_LONE_SMALLEST = 2, PACK_HOLD_BACK = 4 };

/* With PACK_HOLD_BACK, while the k-th group is packed, each limited pool's GPUs that the bound's
 * solution buys for the groups after it (rounded up) are taken out of left into kept, to be
 * given back after. A group packed first judges the pools by itself alone: under MPS on a
 * memory-heavy list on H100:3000 + L4 an H100 holds either group's workloads for less than L4s
 * do, so the first group took the H100s that the other one's workloads over an L4's 23034 MiB
 * needed (the others first: 2,879 of 2,902, leaving the strict group 23 where the solution
 * gives it 769; the strict group first: 1,218, and the others, packed exactly into the 1,684
 * left, went 10 beyond). */
static void hold_back(const struct shared_pack *s, unsigned how, int k, uint64_t *left,
                      uint64_t kept[FLEET_MAX_POOLS])
{
    memset(kept, 0, FLEET_MAX_POOLS * sizeof(kept[0]));
    for (int later = k + 1; later < FLEET_GROUPS && (how & PACK_HOLD_BACK) && s->lp.solved;
         later++) {
        int grp = how & PACK_GROUPS_REVERSED ? FLEET_GROUPS - 1 - later : later;
        for (size_t i = 0; i < s->f->npools && s->groups[grp]; i++) {
            double want = s->lp.shared[grp][i];
            if (s->f->pools[i].count == FLEET_UNLIMITED || want <= 0)
                continue;
            uint64_t whole = (uint64_t)want; /* rounded up, without libm */
            whole += (double)whole < want - 1e-9;
            whole = whole < left[i] ? whole : left[i];
            left[i] -= whole;
            kept[i] += whole;
        }
    }
}

/* Whether PACK_HOLD_BACK holds anything back: the solution buys GPUs of a limited pool for the
 * group packed second. */
static bool hold_back_worth(const struct shared_pack *s)
{
    for (size_t i = 0; i < s->f->npools && s->lp.solved && s->groups[0] && s->groups[1]; i++)
        if (s->f->pools[i].count != FLEET_UNLIMITED && s->lp.shared[1][i] > 0)
            return true;
    return false;
}

/* GPUs the plan has beyond the pools' counts. */
static uint64_t beyond_fleet(const struct fleet *f, const struct fleet_plan *p)
{
    uint64_t beyond = 0;
    for (size_t q = 0; q < f->npools; q++)
        if (f->pools[q].count != FLEET_UNLIMITED && p->gpus_by_pool[q] > f->pools[q].count)
            beyond += p->gpus_by_pool[q] - f->pools[q].count;
    return beyond;
}

/* The lone workloads, then each sharing group by the best packer for it. A GPU opened while
 * its pool's GPUs were held back for the other group counted as one beyond the fleet
 * (fleet_gpu_open), though the other group may not take them all: what is beyond is counted
 * again at the end (7 workloads on big:1 + mid:2 + small:2, MPS: 2 beyond the fleet said, 1
 * in its GPUs). */
static int pack_workloads(const struct shared_pack *s, unsigned how, struct fleet_plan *p,
                          struct fleet_gpu_list *g)
{
    struct pool_choice pc;
    int8_t share_packer[2][FLEET_MAX_POOLS + 1];
    fleet_pool_choice_init(s->f, &s->d, share_packer, &pc);
    int ret = place_lone(s->f, s->ws, s->possible, s->mech, &s->r, &s->d, &s->lp,
                         how & PACK_LONE_SMALLEST, pc.left, p, g);
    for (int k = 0; k < FLEET_GROUPS && !ret; k++) {
        int grp = how & PACK_GROUPS_REVERSED ? FLEET_GROUPS - 1 - k : k;
        pool_choice_for_group(s->f, &s->d, &s->lp, grp, &pc);
        uint64_t kept[FLEET_MAX_POOLS];
        hold_back(s, how, k, pc.left, kept);
        memset(share_packer, -1, sizeof(share_packer));
        size_t n = group_keys(s->ws, s->possible, s->mech, &s->r, grp, s->max_mem, s->keys);
        ret = fleet_improve_order(s->f, s->ws, s->keys, n, &s->r, &pc);
        packer_fn *pack = fleet_pack_group;
        uint64_t scale = group_scale(s, grp);
        if (scale < s->max_mem)
            group_keys(s->ws, s->possible, s->mech, &s->r, grp, scale, s->other_keys);
        int won = ORDER_KEYS;
        if (!ret)
            ret = fleet_choose_order(s->f, s->ws, s->keys, scale < s->max_mem ? s->other_keys : NULL,
                                     n, &s->r, &pc, &pack, &won, s->kept);
        if (won == ORDER_OTHER)
            memcpy(s->keys, s->other_keys, n * sizeof(*s->keys));
        if (!ret && s->kept && s->kept->valid)
            ret = fleet_kept_adopt(s->f, s->kept, s->keys, n, &pc, p, g);
        else if (!ret)
            ret = pack(s->f, s->ws, s->keys, n, &s->r, &pc, p, g);
        for (size_t i = 0; i < s->f->npools; i++)
            pc.left[i] += kept[i];
    }
    p->shortage = beyond_fleet(s->f, p);
    return ret;
}

/* Whether plan a is better than b: within the fleet first (fewer GPUs beyond it), then
 * cheaper, then fewer GPUs. */
static bool plan_better(const struct fleet_plan *a, const struct fleet_plan *b)
{
    if (a->shortage != b->shortage)
        return a->shortage < b->shortage;
    if (a->cost_per_hour < b->cost_per_hour - 1e-9 || a->cost_per_hour > b->cost_per_hour + 1e-9)
        return a->cost_per_hour < b->cost_per_hour;
    return a->gpus < b->gpus;
}

/* A plan that went beyond the fleet where the bound's program fits it in fractions, packed
 * again in other ways, the best kept. The groups in the other order: MPS's first group took
 * the H100s its strict group needed (memory-heavy lists on H100:3000 + L4: 333 GPUs beyond;
 * strict first, none, 1.2% above the bound, until the L4 had NVML's 23034 MiB). The lone
 * workloads on the smallest GPU that holds them: the solution may give a small one a large GPU
 * that the groups need (a tie, or a fraction rounded up). Each way costs a packing, and is
 * tried only while the plan is beyond the fleet: both changes first, and on a list of more
 * than PACK_AGAIN_ALL_MAX workloads that one alone (on 100,000 workloads onto H100:8950 +
 * L4:1000, each packing took 0.4 s, and the other two left MPS 9 and 23 GPUs beyond where both
 * together left 7). Last, on every list, the groups in their order with the limited pools'
 * GPUs the solution gives the second held back from the first (hold_back): the same
 * memory-heavy MPS, 10 GPUs beyond with the strict group first since the L4's 23034 MiB (2 with
 * clang's lists), is within the fleet that way, 1.83% above the cost bound (1.83%); tried
 * after the others, it leaves as it was every plan they bring within the fleet. */
#define PACK_AGAIN_ALL_MAX 10000
static int pack_again(const struct shared_pack *s, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    static const unsigned ways[] = {PACK_GROUPS_REVERSED | PACK_LONE_SMALLEST,
                                    PACK_GROUPS_REVERSED, PACK_LONE_SMALLEST, PACK_HOLD_BACK};
    bool all = s->ws->n <= PACK_AGAIN_ALL_MAX;
    int ret = 0;
    for (size_t k = 0; k < sizeof(ways) / sizeof(ways[0]) && p->shortage && !ret; k++) {
        if (!all && k > 0 && !(ways[k] & PACK_HOLD_BACK))
            continue;
        if ((ways[k] & PACK_GROUPS_REVERSED) && !(s->groups[0] && s->groups[1]))
            continue;
        if ((ways[k] & PACK_HOLD_BACK) && !hold_back_worth(s))
            continue;
        struct fleet_plan t;
        struct fleet_gpu_list tg = {0};
        memset(&t, 0, sizeof(t));
        if (p->gpu_of && !(t.gpu_of = malloc((s->ws->n ? s->ws->n : 1) * sizeof(*t.gpu_of))))
            return -ENOMEM;
        if (t.gpu_of)
            memcpy(t.gpu_of, p->gpu_of, s->ws->n * sizeof(*t.gpu_of)); /* UINT32_MAX kept */
        ret = pack_workloads(s, ways[k], &t, &tg);
        if (!ret && plan_better(&t, p)) {
            uint32_t *gpu_of = p->gpu_of;
            p->gpus = t.gpus;
            memcpy(p->gpus_by_pool, t.gpus_by_pool, sizeof(p->gpus_by_pool));
            p->shortage = t.shortage;
            p->cost_per_hour = t.cost_per_hour;
            p->alone = t.alone;
            p->placed = t.placed;
            p->gpu_of = t.gpu_of;
            t.gpu_of = gpu_of;
            struct fleet_gpu_list swap = *g;
            *g = tg;
            tg = swap;
        }
        free(t.gpu_of);
        free(tg.use);
    }
    return ret;
}

#define FLEET_BB_MAX_GPUS 1000

static int pack_shared(const struct fleet *f, const struct fleet_workloads *ws,
                       const uint8_t *possible, int mech, const struct fleet_options *o,
                       struct fleet_plan *p)
{
    p->mech = mech;
    p->available = true;
    /* the repair (fleet_repack.c) needs each workload's GPU, kept or not */
    bool own_gpu_of = !p->gpu_of;
    if (own_gpu_of) {
        if (!(p->gpu_of = malloc((ws->n ? ws->n : 1) * sizeof(*p->gpu_of))))
            return -ENOMEM;
        for (size_t i = 0; i < ws->n; i++)
            p->gpu_of[i] = UINT32_MAX;
    }
    struct shared_pack *s = calloc(1, sizeof(*s));
    struct sort_key *keys = malloc((ws->n ? ws->n : 1) * sizeof(*keys));
    struct sort_key *other_keys = malloc((ws->n ? ws->n : 1) * sizeof(*other_keys));
    struct fleet_kept_pack kept;
    if (fleet_kept_init(&kept, ws->n) || !s || !keys || !other_keys) {
        fleet_kept_free(&kept);
        free(s);
        free(keys);
        free(other_keys);
        if (own_gpu_of) {
            free(p->gpu_of);
            p->gpu_of = NULL;
        }
        return -ENOMEM;
    }
    s->kept = o->repack_groups ? NULL : &kept;
    s->f = f;
    s->ws = ws;
    s->possible = possible;
    s->mech = mech;
    s->r = rules_of(mech, o);
    s->max_mem = fleet_max_memory(f);
    s->keys = keys;
    s->other_keys = other_keys;

    /* the bounds first: GPUs per group (L2), then the cost of the cheapest purchase that
       holds everything, whose solution the packing follows */
    uint64_t group_gpus[FLEET_GROUPS];
    p->lower_bound = 0;
    for (int grp = 0; grp < FLEET_GROUPS; grp++) {
        size_t n = group_keys(ws, possible, mech, &s->r, grp, s->max_mem, keys);
        group_gpus[grp] = fleet_group_bound(ws, keys, n, s->max_mem, &s->r);
        p->lower_bound += group_gpus[grp];
        s->groups[grp] = n > 0;
    }
    /* the cost bound on the memory each GPU can hold of these workloads, which its
       solution's bands and counts say of the real GPUs too */
    struct fleet *held = &s->held;
    fleet_most_held(f, ws, possible, held);
    int ret = fleet_demand_of(held, ws, possible, mech, &s->r, group_gpus, &s->d);
    if (!ret)
        ret = fleet_cost_bound(held, &s->d, true, &s->lp);

    struct fleet_gpu_list g = {0};
    if (!ret)
        ret = pack_workloads(s, 0, p, &g);
    p->lower_bound += p->alone;
    /* beyond the fleet, unless the bound's program shows that no plan fits it even in
       fractions: packed again in other ways, and a short list tries every plan within it */
    bool may_fit = !(s->lp.solved && !s->lp.within_fleet);
    if (!ret && p->shortage && may_fit && f->npools > 1)
        ret = pack_again(s, p, &g);
    struct fleet_exact_plan exact;
    if (!ret && p->shortage && may_fit) {
        const struct fleet_exact_limits beyond = {.below_cost = INFINITY,
                                                  .steps = FLEET_EXACT_STEPS};
        ret = search_exactly(f, ws, possible, mech, &s->r, &beyond, p, &g, &exact);
    }
    /* dear GPUs whose tenants a cheaper pool holds for less */
    if (!ret)
        ret = fleet_repack_cheaper(f, ws, mech, &s->r, p, &g);
    /* a plan that goes beyond the fleet is measured against every plan, whatever GPUs of
       these models it buys: a cheaper one may go beyond the fleet too */
    if (!ret && p->shortage && s->lp.within_fleet)
        ret = fleet_cost_bound(held, &s->d, false, &s->lp);
    p->cost_lower_bound = s->lp.solved ? s->lp.cost : fleet_plain_cost_bound(held, &s->d);
    /* whole GPUs: every plan buys them, this one at cost_per_hour; on short lists only,
       where a fraction of a GPU is a visible part of the cost (on 100,000 workloads on three
       pools the search doubled the planning time for under 0.05 points of gap) */
    double whole = 0;
    if (!ret && s->lp.solved && p->gpus <= FLEET_BB_MAX_GPUS)
        ret = fleet_cost_bound_whole(held, &s->d, s->lp.within_fleet, 0, p->cost_per_hour,
                                     &whole);
    p->cost_lower_bound = dmax(p->cost_lower_bound, whole);
    /* on a list of few sizes, by the sets of them each GPU holds */
    double by_patterns = 0;
    if (!ret && f->npools > 1)
        ret = fleet_pattern_bound(held, ws, possible, mech, &s->r, &s->d, !p->shortage,
                                  &by_patterns);
    p->cost_lower_bound = dmax(p->cost_lower_bound, by_patterns);
    /* a short list within the fleet above its bound: a cheaper plan, or the proof that there
       is none */
    if (!ret && !p->shortage && fleet_plan_gap(f, p) > 0) {
        const struct fleet_exact_limits cheaper = fleet_proof_limits(f, p);
        ret = search_exactly(f, ws, possible, mech, &s->r, &cheaper, p, &g, &exact);
        if (!ret && exact.exhaustive)
            fleet_plan_proved(f, p);
    }
    /* on a list of up to 256, by the sets of them each GPU holds */
    double by_sets = 0;
    if (!ret && !p->shortage && fleet_gap_in_cost(f) && !p->proved_cheapest &&
        fleet_plan_gap(f, p) > 0)
        ret = fleet_colgen(f, ws, possible, mech, &s->r, p, &g, &by_sets);
    p->cost_lower_bound = dmax(p->cost_lower_bound, by_sets);
    /* the sets' (or the patterns') bound is fractional: the whole purchases that the cost
       bound's program allows and that cost at least it may all cost more */
    if (!ret && s->lp.solved && s->lp.within_fleet && !p->shortage &&
        p->gpus <= FLEET_BB_MAX_GPUS && !p->proved_cheapest && fleet_gap_in_cost(f) &&
        p->cost_lower_bound > whole + 1e-9 && fleet_plan_gap(f, p) > 0) {
        double lifted = 0;
        ret = fleet_cost_bound_whole(held, &s->d, true, p->cost_lower_bound, p->cost_per_hour,
                                     &lifted);
        p->cost_lower_bound = dmax(p->cost_lower_bound, lifted);
    }
    if (!ret && !p->shortage && fleet_gap_in_cost(f) && !p->proved_cheapest)
        ret = search_toward_bound(f, ws, possible, mech, &s->r, p, &g);
    /* past 256, the sets' program on parts of the plan */
    if (!ret && !p->shortage && fleet_gap_in_cost(f) && !p->proved_cheapest && by_sets == 0)
        ret = fleet_improve_by_parts(f, ws, mech, &s->r, p, &g);
    finish_plan(f, p, &g);
    describe_plan(p, mech, &s->r);
    fleet_kept_free(&kept);
    free(keys);
    free(other_keys);
    free(s);
    if (own_gpu_of) {
        free(p->gpu_of);
        p->gpu_of = NULL;
    }
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

/* ---- a plan under stricter rules, when it is better ----
 *
 * Every plan under one mechanism's rules may be one under another's: a whole GPU each is a
 * MIG plan (a 7g profile, or a model MIG does not partition) and a shared plan; a
 * time-sliced GPU (untrusted and strict alone) is an MPS GPU and a carve GPU; an MPS GPU
 * (strict only with strict) is a carve GPU; each as long as its GPUs hold no more tenants and
 * compute than the other's rules allow. The looser mechanism's packing may still come out
 * dearer (carve slices $6.55 where MPS packs the same list onto L4 + T4 for $6.45; MIG $8.09
 * where whole GPUs cost $7.20, before fleet_mig_repair.c): it then takes the stricter plan. */
static const struct {
    int from, to;
} stricter[] = {
    {FLEET_WHOLE, FLEET_TIMESLICE}, {FLEET_WHOLE, FLEET_MPS}, {FLEET_TIMESLICE, FLEET_MPS},
    {FLEET_WHOLE, FLEET_MIG},       {FLEET_WHOLE, FLEET_CARVE}, {FLEET_TIMESLICE, FLEET_CARVE},
    {FLEET_MPS, FLEET_CARVE},
};

static bool allowed_under(const struct fleet_plan *from, int to, const struct fleet_options *o)
{
    struct mech_rules r = rules_of(to, o);
    for (uint64_t g = 0; g < from->gpus && to != FLEET_MIG; g++)
        if (from->use[g].tenants > 1 &&
            (from->use[g].tenants > r.slots || from->use[g].compute_bp > r.compute_cap))
            return false;
    return true;
}

/* p takes the GPUs and assignment of from (same workloads); its bounds stay its own. 0, or
 * -ENOMEM. */
static int take_plan(struct fleet_plan *p, const struct fleet_plan *from, size_t nworkloads)
{
    struct fleet_gpu_use *use = malloc((from->gpus ? from->gpus : 1) * sizeof(*use));
    if (!use)
        return -ENOMEM;
    memcpy(use, from->use, from->gpus * sizeof(*use));
    free(p->use);
    p->use = use;
    if (p->gpu_of)
        memcpy(p->gpu_of, from->gpu_of, nworkloads * sizeof(*p->gpu_of));
    for (size_t i = 0; p->profile_of && i < nworkloads; i++)
        p->profile_of[i] = from->gpu_of[i] == UINT32_MAX ? NULL : "whole";
    if (p->mech == FLEET_MIG)
        p->alone = from->placed;
    p->gpus = from->gpus;
    memcpy(p->gpus_by_pool, from->gpus_by_pool, sizeof(p->gpus_by_pool));
    p->shortage = from->shortage;
    p->cost_per_hour = from->cost_per_hour;
    p->stranded_mib = from->stranded_mib;
    p->rounding_mib = from->rounding_mib;
    p->placed = from->placed;
    size_t len = strlen(p->note);
    snprintf(p->note + len, sizeof(p->note) - len, "; %s's plan, which packs this list cheaper",
             fleet_mech_title(from->mech));
    return 0;
}

static int take_stricter(struct fleet_result *r, const struct fleet_options *o)
{
    for (size_t k = 0; k < sizeof(stricter) / sizeof(stricter[0]); k++) {
        struct fleet_plan *to = &r->plans[stricter[k].to];
        const struct fleet_plan *from = &r->plans[stricter[k].from];
        if (to->available && from->available && plan_better(from, to) &&
            allowed_under(from, to->mech, o) && take_plan(to, from, r->nworkloads))
            return -ENOMEM;
    }
    return 0;
}

/* ---- a plan by its parts ----
 *
 * Each GPU of a plan holds one part of the mechanism's workloads: one group's (groups never
 * share a GPU) or one lone workload. So a plan is a plan of each part, and costs their sum;
 * each part's bound bounds what its GPUs cost in every plan within the fleet (alone, the part
 * may use the whole fleet), and the bounds' sum bounds the mechanism's plans. Where no pool is
 * counted, the parts' cheapest plans together are the cheapest plan; on a counted fleet they
 * may together need more GPUs of a pool than it has, and are taken only where they do not.
 * Each part planned as a list of its own gets the short lists' means that the whole list is
 * too long for (the proof search up to 64 workloads, the sets' program up to 256). MPS on a
 * list of 120 on A100-80GB + L4 + T4 (19 strict, 64 others, 37 untrusted): $75.45 against a
 * bound of $72.80 (3.6%) as one list; by parts $73.80, the strict ones proved the cheapest at
 * $10.60 (the whole list's program had bought them $9.6 worth of fractions). Lists of at most
 * PARTS_MAX that fit some GPU, more than PARTS_GAP above their bound: each part is planned
 * once more, about the time of the whole list again. */
#define PARTS_MAX 1000
#define PARTS_GAP 1.0 /* percent */

static bool parts_worth(const struct fleet *f, const struct fleet_workloads *ws,
                        const uint8_t *possible, int mech, const struct mech_rules *r,
                        const struct fleet_plan *p)
{
    if (mech == FLEET_WHOLE || p->shortage || fleet_plan_gap(f, p) <= PARTS_GAP)
        return false;
    size_t n = 0, in_part[FLEET_GROUPS + 1] = {0};
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        int grp = fleet_group_of(mech, &ws->w[i], r);
        in_part[grp == GROUP_ALONE ? FLEET_GROUPS : grp]++;
        n++;
    }
    size_t parts = 0;
    for (size_t k = 0; k <= FLEET_GROUPS; k++)
        parts += in_part[k] > 0;
    return n <= PARTS_MAX && parts > 1;
}

/* Each part of p's workloads planned alone (the groups, then the lone workloads); their GPUs
 * take p's place when they cost less (or, unpriced, are fewer) and fit the fleet's counts
 * together, and their bounds' sum is p's where higher. 0, or -ENOMEM. */
static int plan_by_parts(const struct fleet *f, const struct fleet_workloads *ws,
                         const uint8_t *possible, int mech, const struct fleet_options *o,
                         struct fleet_plan *p)
{
    struct mech_rules r = rules_of(mech, o);
    struct fleet_plan part[FLEET_GROUPS + 1];
    memset(part, 0, sizeof(part));
    uint8_t *in = malloc(ws->n ? ws->n : 1);
    int ret = in ? 0 : -ENOMEM;
    for (size_t k = 0; !ret && k <= FLEET_GROUPS; k++) {
        int want = k < FLEET_GROUPS ? (int)k : GROUP_ALONE;
        size_t n = 0;
        for (size_t i = 0; i < ws->n; i++) {
            in[i] = possible[i] && fleet_group_of(mech, &ws->w[i], &r) == want;
            n += in[i];
        }
        if (!n)
            continue;
        if (!(part[k].gpu_of = malloc(ws->n * sizeof(*part[k].gpu_of)))) {
            ret = -ENOMEM;
            break;
        }
        for (size_t i = 0; i < ws->n; i++)
            part[k].gpu_of[i] = UINT32_MAX;
        ret = pack_shared(f, ws, in, mech, o, &part[k]);
    }
    struct fleet_plan sum = {0};
    for (size_t k = 0; !ret && k <= FLEET_GROUPS; k++) {
        sum.gpus += part[k].gpus;
        sum.cost_per_hour += part[k].cost_per_hour;
        sum.cost_lower_bound += part[k].cost_lower_bound;
        sum.lower_bound += part[k].lower_bound;
    }
    p->cost_lower_bound = dmax(p->cost_lower_bound, sum.cost_lower_bound);
    p->lower_bound = MAX(p->lower_bound, sum.lower_bound);
    bool cheaper = fleet_gap_in_cost(f) ? sum.cost_per_hour < p->cost_per_hour - 1e-9
                                        : sum.gpus < p->gpus;
    for (size_t q = 0; q < f->npools; q++) { /* the parts' GPUs together, within the counts */
        uint64_t used = 0;
        for (size_t k = 0; k <= FLEET_GROUPS; k++)
            used += part[k].gpus_by_pool[q];
        cheaper &= f->pools[q].count == FLEET_UNLIMITED || used <= f->pools[q].count;
    }
    struct fleet_gpu_use *use = NULL;
    if (!ret && cheaper && !(use = malloc((sum.gpus ? sum.gpus : 1) * sizeof(*use))))
        ret = -ENOMEM;
    if (!ret && cheaper) {
        free(p->use);
        p->use = use;
        p->gpus = 0;
        p->cost_per_hour = 0;
        p->stranded_mib = p->rounding_mib = 0;
        p->alone = p->placed = 0;
        memset(p->gpus_by_pool, 0, sizeof(p->gpus_by_pool));
        for (size_t k = 0; k <= FLEET_GROUPS; k++) {
            const struct fleet_plan *q = &part[k];
            for (size_t i = 0; p->gpu_of && i < ws->n; i++)
                if (q->gpu_of && q->gpu_of[i] != UINT32_MAX)
                    p->gpu_of[i] = (uint32_t)(p->gpus + q->gpu_of[i]);
            if (q->gpus)
                memcpy(p->use + p->gpus, q->use, q->gpus * sizeof(*use));
            p->gpus += q->gpus;
            for (size_t b = 0; b < f->npools; b++)
                p->gpus_by_pool[b] += q->gpus_by_pool[b];
            p->cost_per_hour += q->cost_per_hour;
            p->stranded_mib += q->stranded_mib;
            p->rounding_mib += q->rounding_mib;
            p->alone += q->alone;
            p->placed += q->placed;
        }
        p->proved_cheapest = false;
        size_t len = strlen(p->note);
        snprintf(p->note + len, sizeof(p->note) - len,
                 "; the lone workloads and the sharing groups planned apart, which costs less");
    }
    for (size_t k = 0; k <= FLEET_GROUPS; k++) {
        free(part[k].gpu_of);
        free(part[k].use);
    }
    free(in);
    return ret;
}

/* One mechanism's plan: the per-mechanism part of fleet_plan_all, which shares nothing with
 * another mechanism's (the plans are apart, f, ws and possible are only read). */
static int plan_mechanism(const struct fleet *f, const struct fleet_workloads *ws,
                          const uint8_t *possible, int m, const struct fleet_options *o,
                          struct fleet_plan *p)
{
    p->mech = m;
    if (o->keep_assignment) {
        if (!(p->gpu_of = malloc((ws->n ? ws->n : 1) * sizeof(*p->gpu_of))))
            return -ENOMEM;
        for (size_t i = 0; i < ws->n; i++)
            p->gpu_of[i] = UINT32_MAX;
    }
    if (m == FLEET_MIG)
        return fleet_pack_mig(f, ws, possible, o, p);
    int ret = pack_shared(f, ws, possible, m, o, p);
    struct mech_rules r = rules_of(m, o);
    if (!ret && parts_worth(f, ws, possible, m, &r, p))
        ret = plan_by_parts(f, ws, possible, m, o, p);
    return ret;
}

/* ---- the mechanisms at once ----
 *
 * The five plans are apart, so they are planned on as many threads as the process may use
 * CPUs (fleet_options.threads), up to one a mechanism: on 100,000 workloads onto 10,000
 * H100s the shared mechanisms take 0.4-0.8 s each, and one after another they took 1.2-2.0 s
 * on a 2-CPU VM whose speed drifted. Each thread takes the next mechanism not yet begun, the
 * dearest first; the plans are the same whatever the number of threads (test_fleet checks
 * it). */
static const int by_planning_time[FLEET_NMECH] = {FLEET_MPS, FLEET_CARVE, FLEET_TIMESLICE,
                                                  FLEET_WHOLE, FLEET_MIG};

struct plan_all_job {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const uint8_t *possible;
    const struct fleet_options *o;
    struct fleet_result *r;
    atomic_int next;          /* index into by_planning_time of the next mechanism to plan */
    atomic_bool failed;       /* a mechanism ran out of memory: the others begun end, no more
                                 begin */
    int ret[FLEET_NMECH];
};

static void *plan_some(void *arg)
{
    struct plan_all_job *job = arg;
    while (!atomic_load(&job->failed)) {
        int k = atomic_fetch_add(&job->next, 1);
        if (k >= FLEET_NMECH)
            break;
        int m = by_planning_time[k];
        job->ret[m] = plan_mechanism(job->f, job->ws, job->possible, m, job->o, &job->r->plans[m]);
        if (job->ret[m])
            atomic_store(&job->failed, true);
    }
    return NULL;
}

/* The threads to plan on: fleet_options.threads, or the CPUs this process may run on; at most
 * one a mechanism. */
static unsigned planning_threads(const struct fleet_options *o)
{
    unsigned n = o->threads;
    if (!n) {
        cpu_set_t cpus;
        n = sched_getaffinity(0, sizeof(cpus), &cpus) ? 1 : (unsigned)CPU_COUNT(&cpus);
    }
    return n < 1 ? 1 : n > FLEET_NMECH ? FLEET_NMECH : n;
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
    struct plan_all_job job = {.f = f, .ws = ws, .possible = possible, .o = o, .r = r};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);
    pthread_t helpers[FLEET_NMECH - 1];
    unsigned started = 0, want = planning_threads(o) - 1;
    /* a helper that cannot start leaves its mechanisms to the others and to this thread */
    while (started < want && !pthread_create(&helpers[started], NULL, plan_some, &job))
        started++;
    plan_some(&job);
    for (unsigned t = 0; t < started; t++)
        pthread_join(helpers[t], NULL);
    free(possible);
    for (int m = 0; m < FLEET_NMECH; m++)
        if (job.ret[m])
            return job.ret[m];
    return take_stricter(r, o);
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
