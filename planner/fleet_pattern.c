/* fleet_pattern.c - a cost bound for lists of few distinct workload sizes: the cheapest
 * fractional purchase of GPUs, each filled by one of the sets of sizes it can hold (patterns),
 * that holds every workload.
 *
 * The cost bound's program (fleet_lp.c) assigns a group's memory to the pools in bulk, as if a
 * GPU's memory could be filled to its last MiB by whatever is left; on a list of a few sizes it
 * cannot: workloads of 1, 2, 3, 5, 7, 10, 14 and 20 GiB fill a T4's 15 GiB exactly, but the 14s
 * need a 1 beside them, and so do the 20s on an L4, and there are only so many 1s. Every plan
 * puts on each of its GPUs a set of sizes whose total the GPU holds, with at most `slots' of
 * them and at most as many of a size as the group has; each such set lies within a maximal one
 * (no further workload of the group fits beside it). So the number of each pool's GPUs whose
 * set lies within each maximal pattern (each GPU counted once), and the lone workloads' GPUs,
 * is a purchase that covers every size, within the pools' counts for a plan within the fleet:
 * the least cost of such a purchase bounds every plan. Compute is left out (a looser bound,
 * still a bound). On the compute-heavy list of test_mixed_compute_heavy this is 605.09 against
 * the program's 597.09, for MPS on L4 + T4.
 *
 * Where a pool has too many such sets (an A100 beside them: tens of thousands), its patterns
 * are the sets of the group's largest sizes only, maximal or not, each with the room and places
 * it leaves, and the smaller sizes are counted in bulk: their number on the pool's GPUs, whose
 * memory and count fit within the room and places of its patterns in all. A plan's GPU of the
 * pool holds some set of the large sizes, and its small workloads within what that set leaves,
 * so its purchase meets these rows too. On 3,000 compute-heavy workloads of 1 to 45 GiB on
 * A100 + L4 + T4 (test_mixed_three_pools) carve's bound goes from $1689.11 to $1727.15: 45 +
 * 30 GiB leave 5 on an A100, which no 20 fills.
 *
 * Only for groups of at most PATTERN_SIZES distinct sizes (in steps of their greatest common
 * divisor), with at most PATTERN_MOST patterns in all, each pool and group found within
 * PATTERN_VISITS steps; else no bound (0). (Checked against the exhaustive optimum with the
 * budget cut to 40 patterns, most pools then in bulk: test_fleet's 1,280 small mixed plans.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define PATTERN_SIZES 16
#define PATTERN_MOST 768 /* the program's tableau grows with their square */
#define PATTERN_VISITS (1u << 17) /* sets tried, maximal or not, per pool and group at most */
#define PATTERN_KEEP 16 /* patterns kept for each pool and group still to enumerate */

struct patterns {
    /* per group: its distinct sizes (in steps), largest first, and how many of each */
    uint64_t size[FLEET_GROUPS][PATTERN_SIZES];
    uint64_t count[FLEET_GROUPS][PATTERN_SIZES];
    size_t nsizes[FLEET_GROUPS];
    /* per group and pool: the sizes the patterns hold (the nbig largest); the smaller ones are
       counted in bulk, in the room and places the patterns leave (nbig < nsizes) */
    size_t nbig[FLEET_GROUPS][FLEET_MAX_POOLS];
    /* the patterns found: group, pool, how many of each size, and the room (steps) and places
       they leave for the sizes counted in bulk */
    struct pattern {
        uint8_t group, pool;
        uint32_t of[PATTERN_SIZES];
        uint64_t room;
        uint32_t places;
    } *p;
    size_t n, limit, visits; /* limit: the patterns this pool and group may end at */
    bool too_many;
};

/* The patterns of group g on pool i over its nbig largest sizes from size j on, with left steps
 * and places left: every set where some sizes are counted in bulk (a set of fewer large
 * workloads leaves more room for them), the maximal ones where none is. */
static void enumerate_from(struct patterns *pt, size_t g, size_t i, size_t j, uint64_t left,
                           uint32_t places, uint32_t *of)
{
    size_t nbig = pt->nbig[g][i];
    if (pt->too_many || ++pt->visits > PATTERN_VISITS) {
        pt->too_many = true;
        return;
    }
    if (j == nbig) {
        bool any = false, maximal = true; /* maximal: no workload of the group fits beside */
        for (size_t k = 0; k < nbig; k++) {
            any |= of[k] > 0;
            if (places && of[k] < pt->count[g][k] && pt->size[g][k] <= left)
                maximal = false;
        }
        if (nbig == pt->nsizes[g] && (!any || !maximal))
            return;
        if (pt->n == pt->limit) {
            pt->too_many = true;
            return;
        }
        struct pattern *p = &pt->p[pt->n++];
        p->group = (uint8_t)g;
        p->pool = (uint8_t)i;
        memcpy(p->of, of, sizeof(p->of));
        p->room = left;
        p->places = places;
        return;
    }
    uint64_t most = left / pt->size[g][j];
    most = most < pt->count[g][j] ? most : pt->count[g][j];
    most = most < places ? most : places;
    for (uint64_t c = most + 1; c-- > 0;) {
        of[j] = (uint32_t)c;
        enumerate_from(pt, g, i, j + 1, left - c * pt->size[g][j], places - (uint32_t)c, of);
    }
    of[j] = 0;
}

/* Group g's patterns on pool i, at most most of them: over all its sizes if they fit, else
 * over fewer of the largest, the rest counted in bulk (at worst all of them: one pattern, the
 * pool's memory and places). A100s beside L4s and T4s have tens of thousands of maximal sets
 * of ten sizes, and a handful of the 20, 30 and 45 GiB workloads: 45 + 30 leaves 5 GiB, which
 * no 20 fills, where memory in bulk filled it. */
static void enumerate(struct patterns *pt, size_t g, size_t i, uint64_t cap, uint32_t slots,
                      size_t most)
{
    uint32_t of[PATTERN_SIZES] = {0};
    size_t first = pt->n;
    pt->limit = first + most;
    for (size_t nbig = pt->nsizes[g] + 1; nbig-- > 0;) {
        pt->nbig[g][i] = nbig;
        pt->n = first;
        pt->visits = 0;
        pt->too_many = false;
        enumerate_from(pt, g, i, 0, cap, slots, of);
        if (!pt->too_many)
            return;
    }
}

/* Group g's distinct sizes in steps, largest first; false if more than PATTERN_SIZES. */
static bool group_sizes(const struct fleet_workloads *ws, const uint8_t *possible, int mech,
                        const struct mech_rules *r, int g, uint64_t step, struct patterns *pt)
{
    for (size_t w = 0; w < ws->n; w++) {
        if (!possible[w] || fleet_group_of(mech, &ws->w[w], r) != g)
            continue;
        uint64_t s = ws->w[w].memory_mib / step;
        size_t k = 0;
        while (k < pt->nsizes[g] && pt->size[g][k] > s)
            k++;
        if (k < pt->nsizes[g] && pt->size[g][k] == s) {
            pt->count[g][k]++;
            continue;
        }
        if (pt->nsizes[g] == PATTERN_SIZES)
            return false;
        memmove(&pt->size[g][k + 1], &pt->size[g][k], (pt->nsizes[g] - k) * sizeof(uint64_t));
        memmove(&pt->count[g][k + 1], &pt->count[g][k], (pt->nsizes[g] - k) * sizeof(uint64_t));
        pt->size[g][k] = s;
        pt->count[g][k] = 1;
        pt->nsizes[g]++;
    }
    return true;
}

/* The program in covering form: a row per group and size, per class of lone workloads and,
 * limited, per pool with a count (its GPUs, negated); a column per pattern and per class and
 * pool that holds it. */
static int solve_patterns(const struct fleet *held, const struct fleet_demand *d,
                          const struct patterns *pt, bool limited, double *value)
{
    size_t nrows = 0, row_of[FLEET_GROUPS][PATTERN_SIZES], lone_row[FLEET_MAX_POOLS],
           pool_row[FLEET_MAX_POOLS], bulk_row[FLEET_GROUPS][FLEET_MAX_POOLS];
    size_t nbulk = 0; /* columns of sizes counted in bulk */
    for (size_t g = 0; g < FLEET_GROUPS; g++) {
        for (size_t k = 0; k < pt->nsizes[g]; k++)
            row_of[g][k] = nrows++;
        for (size_t i = 0; i < held->npools; i++) { /* its room, then its places */
            bulk_row[g][i] = pt->nbig[g][i] < pt->nsizes[g] ? nrows : SIZE_MAX;
            nrows += bulk_row[g][i] != SIZE_MAX ? 2 : 0;
            nbulk += bulk_row[g][i] != SIZE_MAX ? pt->nsizes[g] - pt->nbig[g][i] : 0;
        }
    }
    for (size_t c = 0; c < d->nclass; c++)
        lone_row[c] = d->lone[c] ? nrows++ : SIZE_MAX;
    for (size_t i = 0; i < held->npools; i++)
        pool_row[i] = limited && held->pools[i].count != FLEET_UNLIMITED ? nrows++ : SIZE_MAX;
    size_t nvars = pt->n + nbulk;
    for (size_t c = 0; c < d->nclass; c++)
        for (size_t i = 0; i < held->npools; i++)
            nvars += d->lone[c] && held->pools[i].memory_mib >= d->class_mib[c];
    double *a = calloc(nrows * nvars + 1, sizeof(double));
    double *demand = calloc(nrows + 1, sizeof(double));
    double *cost = calloc(nvars + 1, sizeof(double)), *upper = calloc(nvars + 1, sizeof(double));
    double *x = calloc(nvars + 1, sizeof(double));
    int ret = a && demand && cost && upper && x ? 0 : -ENOMEM;
    for (size_t v = 0; v < pt->n && !ret; v++) {
        const struct pattern *p = &pt->p[v];
        uint64_t workloads = 0; /* a GPU per workload at most */
        for (size_t k = 0; k < pt->nsizes[p->group]; k++) {
            a[row_of[p->group][k] * nvars + v] = p->of[k];
            workloads += pt->count[p->group][k];
        }
        if (pool_row[p->pool] != SIZE_MAX)
            a[pool_row[p->pool] * nvars + v] = -1;
        size_t bulk = bulk_row[p->group][p->pool];
        if (bulk != SIZE_MAX) {
            a[bulk * nvars + v] = (double)p->room;
            a[(bulk + 1) * nvars + v] = p->places;
        }
        cost[v] = held->pools[p->pool].price;
        upper[v] = (double)workloads;
    }
    size_t v = pt->n;
    for (size_t g = 0; g < FLEET_GROUPS && !ret; g++) /* how many of a size a pool holds */
        for (size_t i = 0; i < held->npools; i++)
            for (size_t k = pt->nbig[g][i]; bulk_row[g][i] != SIZE_MAX && k < pt->nsizes[g]; k++) {
                a[row_of[g][k] * nvars + v] = 1;
                a[bulk_row[g][i] * nvars + v] = -(double)pt->size[g][k];
                a[(bulk_row[g][i] + 1) * nvars + v] = -1;
                upper[v++] = (double)pt->count[g][k]; /* unpriced */
            }
    for (size_t c = 0; c < d->nclass && !ret; c++)
        for (size_t i = 0; i < held->npools; i++)
            if (d->lone[c] && held->pools[i].memory_mib >= d->class_mib[c]) {
                a[lone_row[c] * nvars + v] = 1;
                if (pool_row[i] != SIZE_MAX)
                    a[pool_row[i] * nvars + v] = -1;
                cost[v] = held->pools[i].price;
                upper[v++] = (double)d->lone[c];
            }
    for (size_t g = 0; g < FLEET_GROUPS && !ret; g++)
        for (size_t k = 0; k < pt->nsizes[g]; k++)
            demand[row_of[g][k]] = (double)pt->count[g][k];
    for (size_t c = 0; c < d->nclass && !ret; c++)
        if (lone_row[c] != SIZE_MAX)
            demand[lone_row[c]] = (double)d->lone[c];
    for (size_t i = 0; i < held->npools && !ret; i++)
        if (pool_row[i] != SIZE_MAX)
            demand[pool_row[i]] = -(double)held->pools[i].count;
    bool solved = false;
    if (!ret) {
        struct fleet_cover_lp lp = {.nvars = nvars, .nrows = nrows, .a = a, .demand = demand,
                                    .cost = cost, .upper = upper, .dantzig = true};
        ret = fleet_cover_solve(&lp, x, value, &solved);
    }
    if (!solved)
        *value = 0;
    free(a);
    free(demand);
    free(cost);
    free(upper);
    free(x);
    return ret;
}

int fleet_pattern_bound(const struct fleet *held, const struct fleet_workloads *ws,
                        const uint8_t *possible, int mech, const struct mech_rules *r,
                        const struct fleet_demand *d, bool limited, double *value)
{
    *value = 0;
    uint64_t step = 0;
    for (size_t w = 0; w < ws->n; w++)
        if (possible[w] && fleet_group_of(mech, &ws->w[w], r) != GROUP_ALONE)
            step = fleet_gcd(step, ws->w[w].memory_mib);
    if (!step)
        return 0;
    struct patterns *pt = calloc(1, sizeof(*pt));
    if (!pt || !(pt->p = malloc(PATTERN_MOST * sizeof(*pt->p)))) {
        free(pt);
        return -ENOMEM;
    }
    bool few = true;
    for (int g = 0; g < FLEET_GROUPS && few; g++)
        few = group_sizes(ws, possible, mech, r, g, step, pt);
    size_t by_size[FLEET_MAX_POOLS]; /* smallest GPU first: where whole sets count most */
    for (size_t i = 0; i < held->npools; i++) {
        size_t j = i;
        for (; j > 0 && held->pools[by_size[j - 1]].memory_mib > held->pools[i].memory_mib; j--)
            by_size[j] = by_size[j - 1];
        by_size[j] = i;
    }
    size_t pairs = held->npools * FLEET_GROUPS; /* each pool and group left keeps a few */
    for (size_t o = 0; o < held->npools && few && !pt->too_many; o++)
        for (size_t g = 0; g < FLEET_GROUPS && !pt->too_many; g++, pairs--)
            if (pt->nsizes[g])
                enumerate(pt, g, by_size[o], held->pools[by_size[o]].memory_mib / step,
                          r->slots, PATTERN_MOST - pt->n - (pairs - 1) * PATTERN_KEEP);
    int ret = 0;
    if (few && !pt->too_many && pt->n)
        ret = solve_patterns(held, d, pt, limited, value);
    free(pt->p);
    free(pt);
    return ret;
}
