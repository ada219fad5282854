/* fleet_mig.c - the planner's MIG packing: each workload gets the smallest MIG profile that
 * holds it (planner/mig.h's table), and GPUs are filled with geometries the hardware allows
 * (memory slices at each profile's allowed starts, 7 compute slices, a most-per-GPU count).
 *
 * A GPU's geometry is one of a few hundred multisets of profiles, enumerated once per model.
 * The packer repeatedly takes the geometry that uses the most of a GPU (each instance weighed
 * by its scarcest resource: memory slices, compute slices or its profile's count limit) among
 * those the remaining workloads can fill, and applies it to as many GPUs as they can fill: a
 * profile-count problem, not a per-workload search, so 100,000 workloads take milliseconds.
 * Workloads larger than every profile get whole GPUs; without a MIG-capable pool the
 * mechanism is not available (MIG is per pool: a T4, L4 or V100 cannot be partitioned).
 * A plan partitions GPUs of one MIG model (fleet_pack_mig tries each of the fleet's and keeps
 * the best); other pools of that model take its overflow, and when they are full the
 * remaining workloads take whole GPUs of the other pools before the plan goes beyond the
 * fleet. On several models a linear program over the
 * purchase (below) gives the cost bound and says which workloads take whole GPUs of the other
 * pools from the start. */
#include <errno.h>
#include <math.h> /* INFINITY only: the carve command does not link libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "mig.h"

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

#define MIG_MAX_PROFILES 16
#define MIG_MAX_GEOMETRIES 4096

struct geometry {
    uint8_t count[MIG_MAX_PROFILES];
    uint8_t memory_slices, compute_slices;
    double score; /* the instances' weights: how much of a GPU they use (see record) */
};

struct geometry_set {
    const struct mig_model *m;
    struct geometry *g;
    size_t n;
};

static bool same_count(const uint8_t *a, const uint8_t *b)
{
    return memcmp(a, b, MIG_MAX_PROFILES) == 0;
}

static void record(struct geometry_set *gs, const uint8_t *count, unsigned mem, unsigned comp)
{
    for (size_t i = 0; i < gs->n; i++)
        if (same_count(gs->g[i].count, count))
            return;
    if (gs->n == MIG_MAX_GEOMETRIES)
        return;
    struct geometry *g = &gs->g[gs->n++];
    memcpy(g->count, count, MIG_MAX_PROFILES);
    g->memory_slices = (uint8_t)mem;
    g->compute_slices = (uint8_t)comp;
    /* each instance weighs what it takes of the GPU in its scarcest resource: memory
       slices, compute slices or its profile's count limit (a 2g.20gb is a third of an H100,
       since only three fit) */
    g->score = 0;
    for (size_t p = 0; p < gs->m->nprofiles && p < MIG_MAX_PROFILES; p++) {
        const struct mig_profile *pr = &gs->m->profiles[p];
        double w = (double)pr->memory_slices / gs->m->memory_slices;
        if ((double)pr->compute_slices / gs->m->compute_slices > w)
            w = (double)pr->compute_slices / gs->m->compute_slices;
        if (pr->max_count && 1.0 / pr->max_count > w)
            w = 1.0 / pr->max_count;
        g->score += count[p] * w;
    }
}

/* Every layout: profiles placed in table order, each at a start above the previous one of the
 * same profile, so that each multiset is reached without trying its permutations. */
static void enumerate(struct geometry_set *gs, uint8_t *count, unsigned mask, unsigned mem,
                      unsigned comp, size_t first, int last_start)
{
    if (mem)
        record(gs, count, mem, comp);
    const struct mig_model *m = gs->m;
    for (size_t p = first; p < m->nprofiles && p < MIG_MAX_PROFILES; p++) {
        const struct mig_profile *pr = &m->profiles[p];
        if (pr->media || count[p] >= pr->max_count ||
            comp + pr->compute_slices > m->compute_slices)
            continue;
        for (unsigned start = p == first && last_start >= 0 ? (unsigned)last_start + 1 : 0;
             start + pr->memory_slices <= m->memory_slices; start++) {
            unsigned bits = ((1u << pr->memory_slices) - 1) << start;
            if (!(pr->start_mask & (1u << start)) || (mask & bits))
                continue;
            count[p]++;
            enumerate(gs, count, mask | bits, mem + pr->memory_slices, comp + pr->compute_slices,
                      p, (int)start);
            count[p]--;
        }
    }
}

static int by_score_desc(const void *a, const void *b)
{
    const struct geometry *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (int)y->memory_slices - (int)x->memory_slices;
}

static int geometries(const struct mig_model *m, struct geometry_set *gs)
{
    gs->m = m;
    gs->n = 0;
    gs->g = malloc(MIG_MAX_GEOMETRIES * sizeof(*gs->g));
    if (!gs->g)
        return -ENOMEM;
    uint8_t count[MIG_MAX_PROFILES] = {0};
    enumerate(gs, count, 0, 0, 0, 0, -1);
    qsort(gs->g, gs->n, sizeof(*gs->g), by_score_desc);
    return 0;
}

static int by_layout(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

/* The MIG pool a new GPU comes from: one of the primary model with GPUs left (in order),
 * else the primary pool itself (beyond the fleet). */
static int mig_pool(const struct fleet *f, const size_t *order, const struct mig_model **models,
                    const struct mig_model *primary, const uint64_t *pool_left, int first)
{
    for (size_t o = 0; o < f->npools; o++)
        if (models[order[o]] == primary && pool_left[order[o]])
            return (int)order[o];
    return first;
}

/* Workload indices per profile, largest memory first within a profile. */
struct by_profile {
    uint32_t *idx;
    size_t n, next;
    size_t total; /* workloads of this profile before any spilled to other pools */
};

/* qsort_r's: fleet_plan_all plans the mechanisms on threads of their own */
static int by_memory_desc(const void *a, const void *b, void *workloads)
{
    const struct fleet_workloads *ws = workloads;
    uint64_t x = ws->w[*(const uint32_t *)a].memory_mib;
    uint64_t y = ws->w[*(const uint32_t *)b].memory_mib;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Workload i alone on a whole GPU of pool. */
static int place_whole(const struct fleet *f, const struct fleet_workloads *ws, size_t i,
                       int pool, uint64_t *pool_left, struct fleet_gpu_list *g,
                       struct fleet_plan *p)
{
    const struct fleet_workload *w = &ws->w[i];
    long gi = fleet_gpu_open(f, g, p, pool_left, pool);
    if (gi < 0)
        return -ENOMEM;
    g->use[gi] = (struct fleet_gpu_use){(uint32_t)pool, 1, w->memory_mib, w->memory_mib,
                                        w->compute_bp};
    if (p->gpu_of)
        p->gpu_of[i] = (uint32_t)gi;
    if (p->profile_of)
        p->profile_of[i] = "whole";
    p->alone++;
    p->placed++;
    return 0;
}

/* Workload i as an instance of profile q on GPU gi. */
static void place_instance(const struct fleet_workloads *ws, size_t i,
                           const struct mig_model *primary, size_t q, long gi,
                           struct fleet_gpu_list *g, struct fleet_plan *p)
{
    const struct fleet_workload *w = &ws->w[i];
    struct fleet_gpu_use *u = &g->use[gi];
    u->tenants++;
    u->memory_used_mib += w->memory_mib;
    u->memory_held_mib += primary->profiles[q].memory_mib > w->memory_mib
                              ? primary->profiles[q].memory_mib
                              : w->memory_mib;
    u->compute_bp += w->compute_bp;
    if (p->gpu_of)
        p->gpu_of[i] = (uint32_t)gi;
    if (p->profile_of)
        p->profile_of[i] = primary->profiles[q].name;
    p->placed++;
}

/* ---- the cost bound on a fleet of several models, and whom it sends to whole GPUs ----
 *
 * A linear program over the purchase, solved by fleet_lp.c's simplex. Workloads that fit a
 * profile are in types: their profile q and their class, the smallest memory among the pools
 * not of the MIG model that holds them (or none). The program buys N[g][k] GPUs of pool k of
 * the MIG model laid out as geometry g (only the maximal geometries: every layout is part of
 * one), and y[t][k] whole GPUs of pool k (not of the MIG model, large enough) for workloads
 * of type t:
 *   each profile q:  sum_{g,k} count_q(g) N[g][k] + sum_{t of q, k} y[t][k] >= n[q]
 *   each type t:     sum_k y[t][k] <= n[t]   (whole GPUs of a type serve only that type)
 *   each pool k:     sum_g N[g][k] <= count[k], or sum_t y[t][k] <= count[k]
 * at least cost. Every plan under MIG's rules (each workload on its smallest profile on a GPU
 * of the MIG model, or alone on a whole GPU of another pool) is such a purchase, so the least
 * cost is a lower bound. A geometry counted whole is the packing's own unit, which is why this
 * bound sees what slices and count limits alone do not (a 1g.10gb never takes memory slice 7,
 * three 2g.20gb leave one compute slice). Every column has a price: a column at no cost would
 * be a dual row with nothing on its right-hand side, which floating-point noise in the
 * simplex would make look violated and fleet_lp.c's exact-feasibility scaling would turn into
 * a bound of zero. Workloads larger than every profile are priced apart (the cheapest GPU
 * that holds each). The solution's y says how many of each type take whole GPUs of each
 * pool. */
#define MIG_CLASSES (FLEET_MAX_POOLS + 1)
struct mig_types {
    size_t nsizes;
    uint64_t size[FLEET_MAX_POOLS]; /* distinct memory of the other pools, ascending */
    uint64_t n[MIG_MAX_PROFILES][MIG_CLASSES];
};

static size_t class_of(const struct mig_types *t, uint64_t memory_mib)
{
    size_t c = 0;
    while (c < t->nsizes && t->size[c] < memory_mib)
        c++;
    return c;
}

static void type_sizes(const struct fleet *f, const struct mig_model *const *models,
                       const struct mig_model *primary, struct mig_types *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t k = 0; k < f->npools; k++) {
        if (models[k] == primary)
            continue;
        size_t c = class_of(t, f->pools[k].memory_mib);
        if (c < t->nsizes && t->size[c] == f->pools[k].memory_mib)
            continue;
        memmove(&t->size[c + 1], &t->size[c], (t->nsizes - c) * sizeof(t->size[0]));
        t->size[c] = f->pools[k].memory_mib;
        t->nsizes++;
    }
}

struct mig_cost {
    bool solved, limited;
    bool none_within; /* the program within the pools' counts has no solution: no plan of the
                         model fits the fleet */
    double value;
    double whole[MIG_MAX_PROFILES][MIG_CLASSES][FLEET_MAX_POOLS]; /* y[t][k] */
};

/* The program's columns (after the N[g][k], ngeo per pool of the MIG model) and rows; NONE:
 * not in this program. */
struct mig_program {
    size_t ncols, nrows;
    size_t geo_col[FLEET_MAX_POOLS]; /* first N[g][k] of pool k */
    size_t pool_row[FLEET_MAX_POOLS], profile_row[MIG_MAX_PROFILES];
    size_t type_row[MIG_MAX_PROFILES][MIG_CLASSES];
    size_t whole[MIG_MAX_PROFILES][MIG_CLASSES][FLEET_MAX_POOLS];
};
#define NONE SIZE_MAX

static void number_program(const struct fleet *f, const struct mig_model *const *models,
                           const struct mig_model *primary, const struct mig_types *t,
                           size_t ngeo, bool limited, struct mig_program *pg)
{
    size_t np = primary->nprofiles < MIG_MAX_PROFILES ? primary->nprofiles : MIG_MAX_PROFILES;
    memset(pg, 0xff, sizeof(*pg)); /* every index NONE */
    pg->ncols = pg->nrows = 0;
    for (size_t k = 0; k < f->npools; k++) {
        if (models[k] == primary) {
            pg->geo_col[k] = pg->ncols;
            pg->ncols += ngeo;
        }
        if (limited && f->pools[k].count != FLEET_UNLIMITED)
            pg->pool_row[k] = pg->nrows++;
    }
    for (size_t q = 0; q < np; q++)
        for (size_t c = 0; c <= t->nsizes; c++) {
            if (!t->n[q][c])
                continue;
            if (pg->profile_row[q] == NONE)
                pg->profile_row[q] = pg->nrows++;
            for (size_t k = 0; k < f->npools; k++)
                if (models[k] != primary && c < t->nsizes &&
                    f->pools[k].memory_mib >= t->size[c])
                    pg->whole[q][c][k] = pg->ncols++;
            if (c < t->nsizes)
                pg->type_row[q][c] = pg->nrows++;
        }
}

static bool dominated(const struct geometry_set *gs, size_t i)
{
    for (size_t j = 0; j < gs->n; j++) {
        bool covers = j != i;
        for (size_t q = 0; q < MIG_MAX_PROFILES && covers; q++)
            covers = gs->g[j].count[q] >= gs->g[i].count[q];
        if (covers)
            return true;
    }
    return false;
}

/* The coefficients of the program; geo: the maximal geometries. */
static void fill_program(const struct fleet *f, const struct geometry_set *gs, const size_t *geo,
                         size_t ngeo, const struct mig_types *t, const struct mig_program *pg,
                         double *a, double *demand, double *cost)
{
    size_t nc = pg->ncols;
    for (size_t k = 0; k < f->npools; k++) {
        if (pg->pool_row[k] != NONE)
            demand[pg->pool_row[k]] = -(double)f->pools[k].count;
        for (size_t j = 0; j < ngeo && pg->geo_col[k] != NONE; j++) {
            size_t col = pg->geo_col[k] + j;
            cost[col] = f->pools[k].price;
            if (pg->pool_row[k] != NONE)
                a[pg->pool_row[k] * nc + col] = -1;
            for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
                if (pg->profile_row[q] != NONE)
                    a[pg->profile_row[q] * nc + col] = gs->g[geo[j]].count[q];
        }
    }
    for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
        for (size_t c = 0; c < MIG_CLASSES && pg->profile_row[q] != NONE; c++) {
            demand[pg->profile_row[q]] += (double)t->n[q][c];
            if (pg->type_row[q][c] != NONE)
                demand[pg->type_row[q][c]] = -(double)t->n[q][c];
            for (size_t k = 0; k < f->npools; k++) {
                size_t col = pg->whole[q][c][k];
                if (col == NONE)
                    continue;
                cost[col] = f->pools[k].price;
                a[pg->profile_row[q] * nc + col] = 1;
                a[pg->type_row[q][c] * nc + col] = -1;
                if (pg->pool_row[k] != NONE)
                    a[pg->pool_row[k] * nc + col] = -1;
            }
        }
}

/* Every plan buys a whole number of GPUs of each pool: the branch and bound's sums, one row per
 * pool in the program (its geometries' columns and its whole GPUs'). Returns how many. */
static size_t pool_sums(const struct fleet *f, const struct mig_program *pg, size_t ngeo,
                        double *rows)
{
    size_t n = 0;
    for (size_t k = 0; k < f->npools; k++) {
        double *row = &rows[n * pg->ncols];
        size_t columns = 0;
        for (size_t j = 0; j < ngeo && pg->geo_col[k] != NONE; j++, columns++)
            row[pg->geo_col[k] + j] = 1;
        for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
            for (size_t c = 0; c < MIG_CLASSES; c++)
                if (pg->whole[q][c][k] != NONE) {
                    row[pg->whole[q][c][k]] = 1;
                    columns++;
                }
        n += columns > 0;
    }
    return n;
}

/* Builds and solves the program; limited: whether the pools' counts hold. plan_cost > 0: what
 * a plan's GPUs for these workloads cost, and the bound is raised to the least cost with whole
 * GPUs of each pool (fleet_cover_bound_whole). */
static int solve_mig_cost(const struct fleet *f, const struct mig_model *const *models,
                          const struct mig_model *primary, const struct geometry_set *gs,
                          const struct mig_types *t, bool limited, double plan_cost,
                          struct mig_cost *out)
{
    size_t *geo = malloc((gs->n ? gs->n : 1) * sizeof(*geo)), ngeo = 0;
    if (!geo)
        return -ENOMEM;
    for (size_t i = 0; i < gs->n; i++)
        if (!dominated(gs, i))
            geo[ngeo++] = i;
    struct mig_program pg;
    number_program(f, models, primary, t, ngeo, limited, &pg);
    size_t nc = pg.ncols;
    double *a = calloc(pg.nrows * nc + 1, sizeof(double));
    double *demand = calloc(pg.nrows + 1, sizeof(double)), *cost = calloc(nc + 1, sizeof(double));
    double *x = calloc(nc + 1, sizeof(double));
    int ret = -ENOMEM;
    if (a && demand && cost && x) {
        fill_program(f, gs, geo, ngeo, t, &pg, a, demand, cost);
        bool no_solution = false;
        struct fleet_cover_lp lp = {.nvars = nc, .nrows = pg.nrows, .a = a, .demand = demand,
                                    .cost = cost, .no_solution = &no_solution};
        ret = fleet_cover_solve(&lp, x, &out->value, &out->solved);
        out->none_within |= limited && no_solution;
        double *sums = NULL, whole = 0;
        if (!ret && out->solved && plan_cost > out->value &&
            !(ret = (sums = calloc(f->npools * nc + 1, sizeof(double))) ? 0 : -ENOMEM)) {
            size_t nsums = pool_sums(f, &pg, ngeo, sums);
            ret = fleet_cover_bound_whole(&lp, sums, nsums, plan_cost, &whole);
            out->value = whole > out->value ? whole : out->value;
        }
        free(sums);
    }
    out->limited = limited;
    memset(out->whole, 0, sizeof(out->whole));
    for (size_t q = 0; q < MIG_MAX_PROFILES && !ret && out->solved; q++)
        for (size_t c = 0; c < MIG_CLASSES; c++)
            for (size_t k = 0; k < f->npools; k++)
                if (pg.whole[q][c][k] != NONE)
                    out->whole[q][c][k] = x[pg.whole[q][c][k]];
    free(geo);
    free(a);
    free(demand);
    free(cost);
    free(x);
    return ret;
}

/* The program within the pools' counts, or with the counts lifted when the fleet cannot
 * hold the workloads even in fractions (or when the plan went beyond it). */
static int mig_cost_bound(const struct fleet *f, const struct mig_model *const *models,
                          const struct mig_model *primary, const struct geometry_set *gs,
                          const struct mig_types *t, bool within_fleet, double plan_cost,
                          struct mig_cost *out)
{
    int ret = 0;
    out->solved = out->none_within = false;
    if (within_fleet)
        ret = solve_mig_cost(f, models, primary, gs, t, true, plan_cost, out);
    if (!ret && !out->solved)
        ret = solve_mig_cost(f, models, primary, gs, t, false, plan_cost, out);
    return ret;
}

/* Whether the program's bound (or the weaker one) is below cost: the search with whole GPUs
 * may raise it. */
static bool bound_below(const struct mig_cost *c, double weaker, double cost)
{
    return cost > c->value * (1 + 1e-9) && cost > weaker;
}

/* The MIG pools are full: the workloads still waiting take whole GPUs of pools that have
 * GPUs left (not of the MIG model), the largest profiles first, each on the cheapest that
 * holds it. What nothing holds stays for MIG GPUs beyond the fleet. */
static int spill(const struct fleet *f, const struct fleet_workloads *ws,
                 const struct mig_model *primary, struct by_profile *lists, uint64_t *pool_left,
                 const struct mig_model **models, struct fleet_gpu_list *g, struct fleet_plan *p)
{
    for (size_t q = primary->nprofiles < MIG_MAX_PROFILES ? primary->nprofiles : MIG_MAX_PROFILES;
         q-- > 0;) {
        while (lists[q].n > lists[q].next) {
            uint32_t i = lists[q].idx[lists[q].n - 1];
            const struct fleet_workload *w = &ws->w[i];
            int pool = -1;
            for (size_t k = 0; k < f->npools; k++)
                if (models[k] != primary && pool_left[k] && f->pools[k].memory_mib >= w->memory_mib &&
                    (pool < 0 || f->pools[k].price < f->pools[pool].price))
                    pool = (int)k;
            if (pool < 0)
                break;
            if (place_whole(f, ws, i, pool, pool_left, g, p))
                return -ENOMEM;
            lists[q].n--;
        }
    }
    return 0;
}

/* A weaker bound, for when the program is not solved: each workload costs at least its memory
 * slices' share of a MIG GPU of the model, or a whole GPU that holds it; the same in compute
 * slices; the larger of the two sums. (Not the larger share per workload: a GPU's instances
 * may take all its memory and all its compute, as two 2g.20gb and two 1g.20gb do, and those
 * shares would add up to more than the GPU.) */
static double workload_shares(const struct fleet *f, const struct fleet_workloads *ws,
                              const struct mig_model *const *models,
                              const struct mig_model *primary, const struct by_profile *lists)
{
    double mig_price = INFINITY, by_memory = 0, by_compute = 0;
    for (size_t k = 0; k < f->npools; k++)
        if (models[k] == primary)
            mig_price = dmin(mig_price, f->pools[k].price);
    for (size_t q = 0; q < MIG_MAX_PROFILES && q < primary->nprofiles; q++) {
        const struct mig_profile *pr = &primary->profiles[q];
        double memory = mig_price * pr->memory_slices / primary->memory_slices;
        double compute = mig_price * pr->compute_slices / primary->compute_slices;
        for (size_t k = 0; k < lists[q].total; k++) {
            const struct fleet_workload *w = &ws->w[lists[q].idx[k]];
            double whole = INFINITY;
            for (size_t m = 0; m < f->npools; m++)
                if (f->pools[m].memory_mib >= w->memory_mib)
                    whole = dmin(whole, f->pools[m].price);
            by_memory += dmin(memory, whole);
            by_compute += dmin(compute, whole);
        }
    }
    return by_memory > by_compute ? by_memory : by_compute;
}

/* The workloads the program gives whole GPUs of other pools take them (its fractions rounded,
 * within the GPUs the pools have left); the rest stay in their profile's list, in order. */
static int give_whole(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct mig_model *primary, const struct mig_types *t,
                      const struct mig_cost *cost, struct by_profile *lists, uint64_t *pool_left,
                      struct fleet_gpu_list *g, struct fleet_plan *p)
{
    uint64_t quota[MIG_MAX_PROFILES][MIG_CLASSES][FLEET_MAX_POOLS];
    for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
        for (size_t c = 0; c < MIG_CLASSES; c++)
            for (size_t k = 0; k < f->npools; k++)
                quota[q][c][k] = (uint64_t)(cost->whole[q][c][k] + 0.5);
    for (size_t q = 0; q < MIG_MAX_PROFILES && q < primary->nprofiles; q++) {
        size_t kept = 0;
        for (size_t j = 0; j < lists[q].n; j++) {
            uint32_t i = lists[q].idx[j];
            size_t c = class_of(t, ws->w[i].memory_mib);
            int pool = -1;
            for (size_t k = 0; k < f->npools && pool < 0; k++)
                if (quota[q][c][k] && pool_left[k])
                    pool = (int)k;
            if (pool < 0) {
                lists[q].idx[kept++] = i;
                continue;
            }
            quota[q][c][pool]--;
            if (place_whole(f, ws, i, pool, pool_left, g, p))
                return -ENOMEM;
        }
        lists[q].n = kept;
    }
    return 0;
}

/* The rules fleet_exact.c and fleet_mig_repair.c go by: every layout a GPU of the MIG model
 * allows (*layouts, ascending, for the caller to free). 0, or -ENOMEM. */
static int layout_rules(const struct fleet *f, const struct mig_model *const *models,
                        const struct geometry_set *gs, struct fleet_exact_rules *rules,
                        uint64_t **layouts)
{
    *layouts = malloc((gs->n ? gs->n : 1) * sizeof(**layouts));
    if (!*layouts)
        return -ENOMEM;
    *rules = (struct fleet_exact_rules){.mig = gs->m, .layouts = *layouts, .nlayouts = gs->n};
    for (size_t k = 0; k < f->npools; k++)
        rules->mig_pool[k] = models[k] == gs->m;
    for (size_t j = 0; j < gs->n; j++) {
        (*layouts)[j] = 0;
        for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
            (*layouts)[j] |= (uint64_t)gs->g[j].count[q] << (q * FLEET_EXACT_LAYOUT_BITS);
    }
    qsort(*layouts, gs->n, sizeof(**layouts), by_layout);
    return 0;
}

/* A short list's plan searched against every other (fleet_exact.c), within lim; the one the
 * search finds takes its place. Beyond the fleet: the cost program's solution can give a whole
 * GPU of another pool to a small workload (a tie: whole GPUs of one pool cost the same
 * whichever type takes them), and the geometries then leave the large ones beyond the fleet:
 * on H100:1 + A100-40GB:2 a 1 GiB workload on the H100, the 39 and 20 GiB ones (a 7g.40gb
 * each) on the A100s and the other 1 GiB one on a third A100, where the two 1g.5gb share an
 * A100 and the 20 GiB one takes the H100. Within it: a cheaper plan, or the proof that there
 * is none (e->exhaustive, e->found false). */
static int search_exactly(const struct fleet *f, const struct fleet_workloads *ws,
                          const uint8_t *possible, const struct fleet_exact_rules *rules,
                          const struct fleet_exact_limits *lim, struct fleet_gpu_list *g,
                          struct fleet_plan *p, struct fleet_exact_plan *e)
{
    const struct mig_model *primary = rules->mig;
    struct fleet_exact_item items[FLEET_EXACT_MAX];
    size_t n = 0;
    memset(e, 0, sizeof(*e));
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        if (n == FLEET_EXACT_MAX)
            return 0;
        const struct fleet_workload *w = &ws->w[i];
        const struct mig_profile *pr =
            mig_profile_fit(primary, w->memory_mib, w->compute_bp / 100.0);
        items[n++] = (struct fleet_exact_item){(uint32_t)i, FLEET_EXACT_ALONE,
                                               pr ? (int)(pr - primary->profiles) : -1};
    }
    fleet_exact_search(f, ws, items, n, rules, lim, e);
    if (!e->found)
        return 0;
    if (fleet_exact_adopt(f, e, g, p) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) {
        size_t i = items[k].index;
        const struct fleet_workload *w = &ws->w[i];
        if (!e->whole[k]) {
            place_instance(ws, i, primary, (size_t)items[k].profile, e->gpu_of[k], g, p);
            continue;
        }
        g->use[e->gpu_of[k]] = (struct fleet_gpu_use){e->pool[e->gpu_of[k]], 1, w->memory_mib,
                                                      w->memory_mib, w->compute_bp};
        if (p->gpu_of)
            p->gpu_of[i] = e->gpu_of[k];
        if (p->profile_of)
            p->profile_of[i] = "whole";
        p->alone++;
        p->placed++;
    }
    return 0;
}

/* The plan whose MIG GPUs are of model primary (NULL: the first MIG model in order, none when
 * the fleet has no pool MIG partitions: the plan not available). */
static int pack_mig_model(const struct fleet *f, const struct fleet_workloads *ws,
                          const uint8_t *possible, const struct fleet_options *o,
                          const struct mig_model *primary, struct fleet_plan *p,
                          double *within_bound)
{
    *within_bound = INFINITY;
    bool none_within = false;
    double within_fleet = 0; /* with a plan beyond the fleet: the bound on plans within it */
    const struct mig_model *models[FLEET_MAX_POOLS] = {NULL};
    size_t order[FLEET_MAX_POOLS];
    uint64_t pool_left[FLEET_MAX_POOLS];
    int first = -1;
    fleet_pool_order(f, order);
    for (size_t i = 0; i < f->npools; i++) {
        pool_left[i] = f->pools[i].count;
        models[i] = f->pools[i].mig ? mig_model_find(f->pools[i].name) : NULL;
        if (models[i] && models[i]->nprofiles > MIG_MAX_PROFILES)
            models[i] = NULL;
    }
    for (size_t i = 0; i < f->npools && first < 0; i++)
        if (models[order[i]] && (!primary || models[order[i]] == primary)) {
            primary = models[order[i]];
            first = (int)order[i];
        }
    p->mech = FLEET_MIG;
    p->available = primary != NULL;
    if (!primary) {
        const char *untabled = NULL;
        for (size_t i = 0; i < f->npools; i++)
            if (f->pools[i].mig)
                untabled = f->pools[i].name;
        if (untabled)
            snprintf(p->note, sizeof(p->note),
                     "%s supports MIG, but carve has no MIG profile table for it yet", untabled);
        else
            snprintf(p->note, sizeof(p->note),
                     "no pool of this fleet can be partitioned: MIG needs A100, H100, H200 or B200");
        return 0;
    }
    struct geometry_set gs = {0};
    struct by_profile lists[MIG_MAX_PROFILES];
    struct fleet_gpu_list g = {0};
    memset(lists, 0, sizeof(lists));
    struct fleet_exact_rules rules;
    uint64_t *layouts = NULL;
    int ret = geometries(primary, &gs);
    if (!ret)
        ret = layout_rules(f, models, &gs, &rules, &layouts);
    /* the repair needs each workload's GPU and profile, kept or not */
    bool own_gpu_of = !p->gpu_of;
    if (!ret && own_gpu_of) {
        if ((p->gpu_of = malloc((ws->n ? ws->n : 1) * sizeof(*p->gpu_of))))
            for (size_t i = 0; i < ws->n; i++)
                p->gpu_of[i] = UINT32_MAX;
        else
            ret = -ENOMEM;
    }
    if (!ret) {
        p->profile_of = calloc(ws->n ? ws->n : 1, sizeof(*p->profile_of));
        if (!p->profile_of)
            ret = -ENOMEM;
    }
    for (size_t q = 0; q < MIG_MAX_PROFILES && !ret; q++)
        if (!(lists[q].idx = malloc((ws->n ? ws->n : 1) * sizeof(uint32_t))))
            ret = -ENOMEM;
    uint64_t mem_slices = 0, comp_slices = 0, big_mem = 0, big_comp = 0, too_large = 0;
    struct mig_types types;
    type_sizes(f, models, primary, &types);
    /* each workload to its profile's list, or to a whole GPU */
    for (size_t i = 0; i < ws->n && !ret; i++) {
        if (!possible[i])
            continue;
        const struct fleet_workload *w = &ws->w[i];
        const struct mig_profile *pr = mig_profile_fit(primary, w->memory_mib, w->compute_bp / 100.0);
        if (pr) {
            size_t q = (size_t)(pr - primary->profiles);
            lists[q].idx[lists[q].n++] = (uint32_t)i;
            mem_slices += pr->memory_slices;
            comp_slices += pr->compute_slices;
            big_mem += pr->memory_slices * 2 > primary->memory_slices;
            big_comp += pr->compute_slices * 2 > primary->compute_slices;
            types.n[q][class_of(&types, w->memory_mib)]++;
            continue;
        }
        too_large++;
        ret = place_whole(f, ws, i, fleet_pick_pool(f, pool_left, w->memory_mib), pool_left, &g, p);
        double cheapest = INFINITY;
        for (size_t k = 0; k < f->npools; k++)
            if (f->pools[k].memory_mib >= w->memory_mib)
                cheapest = dmin(cheapest, f->pools[k].price);
        p->cost_lower_bound += cheapest;
    }
    for (size_t q = 0; q < MIG_MAX_PROFILES && !ret; q++) {
        qsort_r(lists[q].idx, lists[q].n, sizeof(uint32_t), by_memory_desc, (void *)ws);
        lists[q].total = lists[q].n;
    }
    /* on several models, the cost program says which workloads take whole GPUs of the
       other pools; the rest go to MIG GPUs */
    double per_workload_bound = 0;
    struct mig_cost *cost = NULL;
    if (f->npools > 1 && !ret) {
        per_workload_bound = workload_shares(f, ws, models, primary, lists);
        if (!(cost = malloc(sizeof(*cost))))
            ret = -ENOMEM;
        if (!ret)
            ret = mig_cost_bound(f, models, primary, &gs, &types, true, 0, cost);
        if (!ret)
            none_within = cost->none_within;
        if (!ret && cost->solved)
            ret = give_whole(f, ws, primary, &types, cost, lists, pool_left, &g, p);
    }
    /* GPUs of the MIG model the fleet has; when they run out, the remaining workloads take
       whole GPUs of the other pools (MIG is per pool) before the plan goes beyond the fleet */
    uint64_t mig_left = 0;
    for (size_t i = 0; i < f->npools; i++)
        if (models[i] == primary)
            mig_left = pool_left[i] == FLEET_UNLIMITED || mig_left == FLEET_UNLIMITED
                           ? FLEET_UNLIMITED
                           : mig_left + pool_left[i];
    bool spilled = false;
    /* the fullest geometry the remaining workloads can fill, on as many GPUs as they fill */
    while (!ret) {
        if (mig_left == 0 && !spilled) {
            spilled = true;
            ret = spill(f, ws, primary, lists, pool_left, models, &g, p);
            mig_left = FLEET_UNLIMITED;
            continue;
        }
        const struct geometry *best = NULL;
        uint64_t times = 0;
        for (size_t k = 0; k < gs.n && !best; k++) {
            uint64_t t = UINT64_MAX;
            for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
                if (gs.g[k].count[q]) {
                    uint64_t left = lists[q].n - lists[q].next;
                    if (left / gs.g[k].count[q] < t)
                        t = left / gs.g[k].count[q];
                }
            if (t && t != UINT64_MAX) {
                best = &gs.g[k];
                times = t;
            }
        }
        if (!best)
            break;
        if (mig_left != FLEET_UNLIMITED && times > mig_left)
            times = mig_left;
        if (mig_left != FLEET_UNLIMITED)
            mig_left -= times;
        for (uint64_t t = 0; t < times && !ret; t++) {
            int pool = mig_pool(f, order, models, primary, pool_left, first);
            long gi = fleet_gpu_open(f, &g, p, pool_left, pool);
            if (gi < 0) {
                ret = -ENOMEM;
                break;
            }
            for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
                for (unsigned c = 0; c < best->count[q]; c++)
                    place_instance(ws, lists[q].idx[lists[q].next++], primary, q, gi, &g, p);
        }
    }
    /* beyond the fleet, unless the cost program shows that no plan fits it even in
       fractions: a short list tries every plan within it */
    struct fleet_exact_plan exact;
    if (!ret && p->shortage && !(cost && cost->solved && !cost->limited)) {
        const struct fleet_exact_limits beyond = {.below_cost = INFINITY,
                                                  .steps = FLEET_EXACT_STEPS};
        ret = search_exactly(f, ws, possible, &rules, &beyond, &g, p, &exact);
    }
    /* rounding and the greedy geometries can leave a MIG GPU that whole GPUs beat, or whole
       GPUs whose workloads a MIG GPU has room for */
    if (!ret && f->npools > 1)
        ret = fleet_mig_repair(f, ws, &rules, &g, p);
    /* bound: lone GPUs, plus the slices the smallest fitting profiles need (no other profile
     * choice needs fewer), the count limit of each profile, or one GPU per instance too big
     * to pair in one dimension */
    uint64_t shared = ceil_div(mem_slices, primary->memory_slices);
    for (size_t q = 0; q < primary->nprofiles && q < MIG_MAX_PROFILES; q++)
        if (primary->profiles[q].max_count &&
            ceil_div(lists[q].total, primary->profiles[q].max_count) > shared)
            shared = ceil_div(lists[q].total, primary->profiles[q].max_count);
    if (ceil_div(comp_slices, primary->compute_slices) > shared)
        shared = ceil_div(comp_slices, primary->compute_slices);
    if (big_mem > shared)
        shared = big_mem;
    if (big_comp > shared)
        shared = big_comp;
    /* GPUs: the spilled workloads are counted in `shared' (a whole GPU each is no less than
       their slices), so only the workloads too large for any profile are added */
    p->lower_bound = too_large + shared;
    if (f->npools == 1) {
        p->cost_lower_bound += (double)shared * f->pools[first].price;
    } else {
        /* the program's purchase is fractional: with whole GPUs of each pool, up to what
           this plan's GPUs for the profiled workloads cost; for a plan beyond the fleet, also
           the bound on the plans within it, that fleet_pack_mig measures other models' plans
           by. A plan beyond the fleet is measured against every plan that buys these models
           at these prices. */
        double too_large_cost = p->cost_lower_bound;
        double profiled = p->cost_per_hour - too_large_cost;
        bool priced = fleet_gap_in_cost(f);
        if (!ret && cost && cost->solved && cost->limited) {
            if (priced && (p->shortage || bound_below(cost, per_workload_bound, profiled)))
                ret = mig_cost_bound(f, models, primary, &gs, &types, true,
                                     p->shortage ? INFINITY : profiled, cost);
            within_fleet = too_large_cost + dmax(cost->value, per_workload_bound);
            if (!ret && p->shortage)
                ret = mig_cost_bound(f, models, primary, &gs, &types, false, 0, cost);
        }
        if (!ret && cost && cost->solved && !cost->limited && priced &&
            bound_below(cost, per_workload_bound, profiled))
            ret = mig_cost_bound(f, models, primary, &gs, &types, false, profiled, cost);
        p->cost_lower_bound += cost && cost->solved && cost->value > per_workload_bound
                                   ? cost->value
                                   : per_workload_bound;
    }
    free(cost);
    /* a bound that reaches the plan's cost proves it the cheapest; a short list within the
       fleet above its bound: a cheaper plan, or the proof that there is none */
    if (!ret && !p->shortage && fleet_gap_in_cost(f) &&
        p->cost_lower_bound >= p->cost_per_hour * (1 - 1e-9))
        fleet_plan_proved(f, p);
    if (!ret && !p->shortage && !p->proved_cheapest && fleet_plan_gap(f, p) > 0) {
        const struct fleet_exact_limits cheaper = fleet_proof_limits(f, p);
        ret = search_exactly(f, ws, possible, &rules, &cheaper, &g, p, &exact);
        if (!ret && exact.exhaustive)
            fleet_plan_proved(f, p);
    }
    /* no plan of this model fits the fleet (its program within the counts has no solution,
       and its plan goes beyond the fleet), or one that is within it costs at least this */
    *within_bound = none_within && p->shortage ? INFINITY
                    : within_fleet > 0 && p->shortage ? dmax(within_fleet, p->cost_lower_bound)
                                                      : p->cost_lower_bound;
    for (size_t i = 0; i < g.n; i++) {
        uint64_t have = f->pools[g.use[i].pool].memory_mib;
        p->stranded_mib += have > g.use[i].memory_used_mib ? have - g.use[i].memory_used_mib : 0;
        p->rounding_mib += g.use[i].memory_held_mib - g.use[i].memory_used_mib;
    }
    p->use = g.use;
    for (size_t q = 0; q < MIG_MAX_PROFILES; q++)
        free(lists[q].idx);
    free(gs.g);
    free(layouts);
    if (own_gpu_of) {
        free(p->gpu_of);
        p->gpu_of = NULL;
    }
    if (!o->keep_assignment) {
        free(p->profile_of);
        p->profile_of = NULL;
    }
    snprintf(p->note, sizeof(p->note),
             "%s profiles (the smallest that holds each workload); %llu on whole GPUs (larger "
             "than every profile, beyond the MIG pools, or cheaper so); %.0f GiB held by "
             "profiles beyond use",
             primary->name, (unsigned long long)p->alone, p->rounding_mib / 1024.0);
    return ret;
}

/* Whether plan a is better than plan b: fewer GPUs beyond the fleet, then cheaper, then fewer
 * GPUs. */
static bool better_plan(const struct fleet *f, const struct fleet_plan *a,
                        const struct fleet_plan *b)
{
    if (a->shortage != b->shortage)
        return a->shortage < b->shortage;
    bool priced = fleet_gap_in_cost(f);
    if (priced && a->cost_per_hour < b->cost_per_hour - 1e-9)
        return true;
    if (priced && a->cost_per_hour > b->cost_per_hour + 1e-9)
        return false;
    return a->gpus < b->gpus;
}

static void plan_free(struct fleet_plan *p)
{
    free(p->gpu_of);
    free(p->use);
    free(p->profile_of);
}

int fleet_pack_mig(const struct fleet *f, const struct fleet_workloads *ws,
                   const uint8_t *possible, const struct fleet_options *o, struct fleet_plan *p)
{
    const struct mig_model *tried[FLEET_MAX_POOLS];
    size_t ntried = 0;
    for (size_t i = 0; i < f->npools; i++) {
        const struct mig_model *m = f->pools[i].mig ? mig_model_find(f->pools[i].name) : NULL;
        bool seen = !m || m->nprofiles > MIG_MAX_PROFILES;
        for (size_t k = 0; k < ntried && !seen; k++)
            seen = tried[k] == m;
        if (!seen)
            tried[ntried++] = m;
    }
    double within;
    if (ntried < 2)
        return pack_mig_model(f, ws, possible, o, NULL, p, &within);
    /* Several MIG models: a plan partitions one of them (the profile tables and geometries
       are per model), and which one is cheapest depends on the list (on H100-80GB:1@2.49 +
       A100-40GB:2@1.20, two 1 GiB workloads and ones of 39 and 20 GiB: $4.89 on the A100s,
       the cheapest per MiB, $3.69 on the H100). Each is planned; the best is kept, measured
       against the least of their bounds (each bounds the plans of its model). A plan within
       the fleet is measured only against the models that have plans within it: on
       H100-80GB:3 + A100-40GB:4 + L4 + T4, 64 workloads cost $37.82 on the H100s, and no plan
       on the A100s fits the fleet; their bound ($34.14, with the counts lifted) is not one on
       plans within it. */
    struct fleet_plan best = *p;
    int ret = pack_mig_model(f, ws, possible, o, tried[0], &best, &within);
    double cost_bound = best.cost_lower_bound;
    uint64_t gpu_bound = best.lower_bound;
    for (size_t k = 1; k < ntried && !ret; k++) {
        struct fleet_plan other = {.mech = FLEET_MIG};
        if (o->keep_assignment) {
            if (!(other.gpu_of = malloc((ws->n ? ws->n : 1) * sizeof(*other.gpu_of)))) {
                ret = -ENOMEM;
                break;
            }
            for (size_t i = 0; i < ws->n; i++)
                other.gpu_of[i] = UINT32_MAX;
        }
        double other_within;
        ret = pack_mig_model(f, ws, possible, o, tried[k], &other, &other_within);
        cost_bound = dmin(cost_bound, other.cost_lower_bound);
        gpu_bound = other.lower_bound < gpu_bound ? other.lower_bound : gpu_bound;
        within = dmin(within, other_within);
        if (!ret && better_plan(f, &other, &best)) {
            plan_free(&best);
            best = other;
        } else {
            plan_free(&other);
        }
    }
    /* proved where no other model's bound is below the plan's own, in what the gap measures */
    if (!best.shortage && within != INFINITY)
        cost_bound = within;
    best.proved_cheapest &= fleet_gap_in_cost(f) ? cost_bound >= best.cost_lower_bound - 1e-9
                                                 : gpu_bound >= best.lower_bound;
    best.cost_lower_bound = cost_bound;
    best.lower_bound = gpu_bound;
    *p = best;
    return ret;
}
