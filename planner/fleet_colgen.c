/* fleet_colgen.c - a cost bound, and a plan, for lists of up to 256 workloads: the program
 * over the sets of workloads a GPU can hold (its memory, the mechanism's compute cap and
 * places), by column generation, and a plan made from its solution by diving (dive).
 *
 * Why: the cost bound's program (fleet_lp.c) fills a GPU's memory and compute in bulk, as if
 * any fraction of a workload could go anywhere. On thousands of workloads that costs little;
 * on a few dozen, a fraction of a GPU is a visible part of the cost: random lists of 25-60
 * workloads of 1-45 GiB and 1-60% on A100 + L4 + T4 read 2-8% above their bounds, the bound
 * the looser side (the gaps of lists short enough to search through, fleet_exact.c, were 4-5%
 * and all of it bound). No GPU of a plan holds a fraction: each holds a set of one group's
 * workloads that its memory, compute and places allow.
 *
 * The program: for each pool q and each such set S, a variable x(q,S) >= 0 at q's price; a
 * lone workload's sets are itself alone, on a pool that holds it. Every workload is covered
 * (the x of the sets that hold it sum to at least 1) and each counted pool buys at most its
 * count. A plan within the fleet is such a purchase (each of its GPUs' sets once), so the
 * program's least cost bounds every such plan. Its sets are too many to write out: it starts
 * from the plan's own GPUs and the lone workloads' sets, and each round prices, for each pool
 * and group, the sets its dual prices value most (a knapsack on memory, compute and places:
 * by dynamic programming where the sizes make a small table, its best set; else by branch and
 * bound, the best COLGEN_PER_PRICING found) and adds the COLGEN_ADD of them worth most above
 * their pool's price.
 *
 * The bound is taken from each round's duals so that neither stopping early nor rounding can
 * raise it: with y per workload and w per counted pool (both >= 0), and P(q,g) the most any set
 * of group g on pool q is worth (the knapsack's maximum, or an upper bound on it where its
 * search is cut short), theta = min(1, c_q / (P(q,g) - w_q)) over those above zero makes
 * theta (y, w) feasible for the dual of the whole program, so theta (sum y - sum count_q w_q)
 * bounds every plan (Farley's bound; the program's optimum once no set is left to add).
 *
 * Most of what the bound then leaves is the plans' (one list of 46: MPS $26.95, the program
 * $24.37): the program's fractional solution is usually close to whole, so a plan is made from
 * it and kept when cheaper than the packing's.
 *
 * The program is solved as it is by fleet_simplex.c, which keeps its tableau between rounds
 * (fleet_lp.c's solver, on the dual, updated a row per set at each pivot and started each round
 * afresh: on 64 workloads it ran out of its budget before the program was solved). What the
 * solution buys in fractions of a pool's GPUs, every plan buys whole: whole_pools. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define COLGEN_WORDS 4
#define COLGEN_MAX (64 * COLGEN_WORDS) /* workloads at most */
/* Rounds of pricing for the program at most; the simplex's work (COLGEN_WORK) mostly ends them
 * first. 40 until 2026-11-29, when pricing by a table made a round cheap: MPS on a group of 135
 * on H100-80GB + A100-40GB needed 201 to solve its program ($58.90; $48 after 40). */
#define COLGEN_ROUNDS 400
#define COLGEN_COLUMNS 2400
#define COLGEN_NODES 100000ul /* knapsack nodes per pool and group and round */
#define COLGEN_ALL_NODES 2000000ul /* and in all, per list and mechanism */
#define COLGEN_ADD 16         /* sets added per round at most, the most valuable */
/* The simplex's work (tableau entries its pivots update and its columns write), for the rounds
 * and again for each of the three dives: about 0.2 s on this project's 2-core VM. 64 workloads
 * on ten counted pools took 31 s without it. With the search over whole GPUs
 * (COLGEN_BB_WORK, which stays), at most 1.2e9 a mechanism on up to 64 workloads; 1.3 s for the
 * five plans of the slowest list of 68 measured (docs/plan.md). Past COLGEN_WORK_PER workloads
 * (of those that fit some GPU) it grows with them: a pivot updates a row per workload, and
 * more pivots are needed. At 2.0e8 the program of a list of 256 was not solved (MPS: no bound
 * from it, and a plan 3.3% above the other bounds), nor a dive of a list of 200 finished (MPS
 * and carve: no plan from the solution). A dive's grows with their square (16 times for 256,
 * 1.1e10 in all): it solves its program afresh at each step, more steps of more rows each. Grown
 * as the rounds', every dive of MPS on 250 workloads on H100 + L4 + T4 ran out (they need up to
 * 1.6 times it; up to 3.3 times on 200-256 of the lists measured), and the packing's plan,
 * 5.0% above its bound, was kept. */
#define COLGEN_WORK 2.0e8
#define COLGEN_WORK_PER 64.0
#define COLGEN_DIVE_POOLS 3   /* pools each workload may go alone to in the dive: the cheapest */
#define COLGEN_EPS 1e-9
#define COLGEN_SLACK 1e-6     /* dollars taken off the bound */
#define COLGEN_PER_PRICING 4  /* sets a pool and group add per round at most */
#define COLGEN_DIVE_WHOLE 1e-6 /* a set the solution buys at least 1 - this of is bought */
#define COLGEN_DIVE_ROUNDS 3  /* rounds of pricing at each step of the dive */

struct cg_item {
    uint64_t mem;
    uint32_t comp;
    int group; /* GROUP_ALONE: a GPU of its own */
};

/* A set of workloads (items), a bit each. */
struct cg_set {
    uint64_t w[COLGEN_WORDS];
};

static bool set_has(const struct cg_set *s, size_t i)
{
    return s->w[i / 64] >> (i % 64) & 1;
}

static struct cg_set set_with(struct cg_set s, size_t i)
{
    s.w[i / 64] |= 1ull << (i % 64);
    return s;
}

static struct cg_set set_of(size_t i)
{
    return set_with((struct cg_set){{0}}, i);
}

static bool set_empty(const struct cg_set *s)
{
    for (size_t k = 0; k < COLGEN_WORDS; k++)
        if (s->w[k])
            return false;
    return true;
}

/* The first item of a set that is not empty. */
static size_t set_first(const struct cg_set *s)
{
    size_t k = 0;
    while (k + 1 < COLGEN_WORDS && !s->w[k])
        k++;
    return 64 * k + (size_t)__builtin_ctzll(s->w[k]);
}

/* s loses what t lacks (keep) or what t has (!keep). */
static void set_cut(struct cg_set *s, const struct cg_set *t, bool keep)
{
    for (size_t k = 0; k < COLGEN_WORDS; k++)
        s->w[k] &= keep ? t->w[k] : ~t->w[k];
}

struct cg_column {
    struct cg_set set;
    size_t pool;
};

/* The most a set of the candidates is worth at prices y, within a GPU's memory, compute and
 * places. */
struct knapsack {
    const struct cg_item *item;
    const double *y;
    size_t n, by_mem[COLGEN_MAX], by_comp[COLGEN_MAX], by_value[COLGEN_MAX];
    size_t rank[COLGEN_MAX]; /* position of each candidate in by_mem: the search's order */
    uint64_t mem_cap;
    uint32_t comp_cap, slots;
    double best, open; /* open: the most a set left unsearched could be worth */
    struct cg_set best_set;
    unsigned long nodes, node_limit;
    double worth;      /* a set worth more than this is kept */
    struct cg_set kept[COLGEN_PER_PRICING];
    double kept_value[COLGEN_PER_PRICING];
    size_t nkept;
};

/* Keeps set among the most valuable found (those worth more than ks->worth). */
static void keep(struct knapsack *ks, struct cg_set set, double value)
{
    /* the empty set: worth nothing, though a lower limit's price can make a GPU worth buying
       empty (worth below zero); no plan buys one */
    if (set_empty(&set) || value <= ks->worth + COLGEN_EPS)
        return;
    size_t at = ks->nkept;
    if (at == COLGEN_PER_PRICING) {
        at = 0;
        for (size_t k = 1; k < ks->nkept; k++)
            if (ks->kept_value[k] < ks->kept_value[at])
                at = k;
        if (ks->kept_value[at] >= value)
            return;
    } else {
        ks->nkept++;
    }
    ks->kept[at] = set;
    ks->kept_value[at] = value;
}

/* What the candidates of a knapsack are sorted by (qsort_r: the mechanisms are planned on
 * threads of their own, fleet_pack.c). */
struct ratio_order {
    const struct knapsack *ks;
    enum { PER_MIB, PER_COMPUTE, BY_VALUE } by;
};

static double per(double value, double size)
{
    return size > 0 ? value / size : value * 1e18;
}

static int by_ratio(const void *a, const void *b, void *order)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct ratio_order *o = order;
    const struct knapsack *k = o->ks;
    double x, z;
    if (o->by == PER_MIB) {
        x = per(k->y[i], (double)k->item[i].mem);
        z = per(k->y[j], (double)k->item[j].mem);
    } else if (o->by == PER_COMPUTE) {
        x = per(k->y[i], k->item[i].comp);
        z = per(k->y[j], k->item[j].comp);
    } else {
        x = k->y[i];
        z = k->y[j];
    }
    return x > z ? -1 : x < z ? 1 : (i > j) - (i < j);
}

/* The most the candidates from position k of the search's order on can add to a set that has
 * mem, comp and places left: the least of three fractional fills (by memory, by compute, by
 * places), each a bound. */
static double fill_bound(const struct knapsack *ks, size_t k, uint64_t mem, uint32_t comp,
                         uint32_t places)
{
    double by_mem = 0, by_comp = 0, by_places = 0;
    double room = (double)mem;
    for (size_t o = 0; o < ks->n && room > 0; o++) {
        size_t i = ks->by_mem[o];
        if (ks->rank[i] < k)
            continue;
        double take = (double)ks->item[i].mem <= room ? 1 : room / (double)ks->item[i].mem;
        by_mem += take * ks->y[i];
        room -= take * (double)ks->item[i].mem;
    }
    room = comp;
    for (size_t o = 0; o < ks->n; o++) { /* those of no compute first: each fits */
        size_t i = ks->by_comp[o];
        if (ks->rank[i] < k)
            continue;
        if (ks->item[i].comp && room <= 0)
            break;
        double take = ks->item[i].comp <= room ? 1 : room / ks->item[i].comp;
        by_comp += take * ks->y[i];
        room -= take * ks->item[i].comp;
    }
    uint32_t left = places;
    for (size_t o = 0; o < ks->n && left; o++) {
        size_t i = ks->by_value[o];
        if (ks->rank[i] < k)
            continue;
        by_places += ks->y[i];
        left--;
    }
    double b = by_mem < by_comp ? by_mem : by_comp;
    return b < by_places ? b : by_places;
}

static void knapsack_from(struct knapsack *ks, size_t k, struct cg_set set, double value,
                          uint64_t mem, uint32_t comp, uint32_t places)
{
    if (value > ks->best) {
        ks->best = value;
        ks->best_set = set;
    }
    if (k == ks->n || !places) {
        keep(ks, set, value); /* each set once: at a leaf of the search */
        return;
    }
    double bound = value + fill_bound(ks, k, mem, comp, places);
    double least = ks->nkept == COLGEN_PER_PRICING ? ks->kept_value[0] : ks->worth;
    for (size_t o = 1; o < ks->nkept && ks->nkept == COLGEN_PER_PRICING; o++)
        least = least < ks->kept_value[o] ? least : ks->kept_value[o];
    if (bound <= ks->best + COLGEN_EPS && bound <= least + COLGEN_EPS) {
        keep(ks, set, value);
        return;
    }
    if (++ks->nodes > ks->node_limit) {
        ks->open = ks->open > bound ? ks->open : bound;
        return;
    }
    size_t i = ks->by_mem[k];
    if (ks->item[i].mem <= mem && ks->item[i].comp <= comp)
        knapsack_from(ks, k + 1, set_with(set, i), value + ks->y[i], mem - ks->item[i].mem,
                      comp - ks->item[i].comp, places - 1);
    knapsack_from(ks, k + 1, set, value, mem, comp, places);
}

/* The most a set of group grp's workloads is worth on a GPU of mem_cap, or an upper bound on
 * it where the search was cut short; the most valuable sets found worth more than worth are
 * left in ks->kept. */
static double knapsack(struct knapsack *out, const struct cg_item *item, size_t n,
                       const double *y, int grp, uint64_t mem_cap, const struct mech_rules *r,
                       double worth, unsigned long node_limit)
{
    struct knapsack ks = {.item = item, .y = y, .mem_cap = mem_cap, .comp_cap = r->compute_cap,
                          .slots = r->slots, .worth = worth, .node_limit = node_limit};
    for (size_t i = 0; i < n; i++)
        if (item[i].group == grp && y[i] > COLGEN_EPS && item[i].mem <= mem_cap &&
            item[i].comp <= r->compute_cap)
            ks.by_mem[ks.n++] = i;
    memcpy(ks.by_comp, ks.by_mem, ks.n * sizeof(size_t));
    memcpy(ks.by_value, ks.by_mem, ks.n * sizeof(size_t));
    struct ratio_order order = {&ks, PER_MIB};
    qsort_r(ks.by_mem, ks.n, sizeof(size_t), by_ratio, &order);
    order.by = PER_COMPUTE;
    qsort_r(ks.by_comp, ks.n, sizeof(size_t), by_ratio, &order);
    order.by = BY_VALUE;
    qsort_r(ks.by_value, ks.n, sizeof(size_t), by_ratio, &order);
    for (size_t i = 0; i < n; i++)
        ks.rank[i] = COLGEN_MAX;
    for (size_t o = 0; o < ks.n; o++)
        ks.rank[ks.by_mem[o]] = o;
    knapsack_from(&ks, 0, (struct cg_set){{0}}, 0, mem_cap, r->compute_cap, r->slots);
    *out = ks;
    return ks.open > ks.best ? ks.open : ks.best;
}

/* The knapsack by dynamic programming over memory and compute, each in units of the greatest
 * common divisor of the candidates' sizes, where that table is small (whole GiB, or 256 MiB
 * steps, and whole percents: 320 x 100 cells on an 80 GB GPU): *best, the most a set is worth
 * within memory and compute, and that set; *fits when the set is within the places too, and
 * *best is then the knapsack's exact maximum (else a bound above it). The branch and bound
 * above runs out of nodes where a large GPU holds many workloads: MPS on H100-80GB, a group of
 * 135 workloads, spent the 2 million nodes of the list by its 35th round, and its bound is then
 * the fractional fill's (the program's bound stayed at $40 where the plans cost $62). The table
 * costs cells x candidates steps (4.3 million there) and no search. false where the table
 * would be too large (or out of memory). */
#define COLGEN_DP_CELLS (1u << 16)
#define COLGEN_DP_WORK (1u << 24) /* cells x candidates */
static bool knapsack_dp(const struct cg_item *item, size_t n, const double *y, int grp,
                        uint64_t mem_cap, const struct mech_rules *r, double *best,
                        struct cg_set *best_set, bool *fits)
{
    size_t cand[COLGEN_MAX], nc = 0;
    uint64_t gm = 0, gc = 0;
    for (size_t i = 0; i < n; i++)
        if (item[i].group == grp && y[i] > COLGEN_EPS && item[i].mem <= mem_cap &&
            item[i].comp <= r->compute_cap) {
            cand[nc++] = i;
            gm = fleet_gcd(item[i].mem, gm);
            gc = fleet_gcd(item[i].comp, gc);
        }
    *best = 0;
    *best_set = (struct cg_set){{0}};
    *fits = true;
    if (!nc)
        return true;
    uint64_t mcap = gm ? mem_cap / gm : 0, ccap = gc ? r->compute_cap / gc : 0;
    if ((mcap + 1) * (ccap + 1) > COLGEN_DP_CELLS)
        return false;
    size_t cells = (size_t)((mcap + 1) * (ccap + 1));
    if (cells * nc > COLGEN_DP_WORK)
        return false;
    double *value = calloc(cells, sizeof(*value));
    uint64_t *took = calloc((cells * nc + 63) / 64, sizeof(*took));
    if (!value || !took) {
        free(value);
        free(took);
        return false;
    }
    size_t row = (size_t)ccap + 1; /* cell (m, c) at m * row + c */
    for (size_t k = 0; k < nc; k++) {
        const struct cg_item *it = &item[cand[k]];
        size_t dm = (size_t)(gm ? it->mem / gm : 0), dc = (size_t)(gc ? it->comp / gc : 0);
        double v = y[cand[k]];
        for (size_t m = (size_t)mcap + 1; m-- > dm;)
            for (size_t c = (size_t)ccap + 1; c-- > dc;) {
                double with = value[(m - dm) * row + c - dc] + v;
                if (with > value[m * row + c]) {
                    value[m * row + c] = with;
                    size_t bit = k * cells + m * row + c;
                    took[bit / 64] |= 1ull << (bit % 64);
                }
            }
    }
    *best = value[cells - 1];
    size_t m = (size_t)mcap, c = (size_t)ccap, count = 0;
    for (size_t k = nc; k-- > 0;) {
        size_t bit = k * cells + m * row + c;
        if (took[bit / 64] >> (bit % 64) & 1) {
            *best_set = set_with(*best_set, cand[k]);
            count++;
            m -= (size_t)(gm ? item[cand[k]].mem / gm : 0);
            c -= (size_t)(gc ? item[cand[k]].comp / gc : 0);
        }
    }
    *fits = count <= r->slots;
    free(value);
    free(took);
    return true;
}

struct colgen {
    const struct fleet *f;
    const struct mech_rules *r;
    struct cg_item item[COLGEN_MAX];
    size_t n;
    struct cg_column *col;
    size_t ncols;
    struct knapsack ks; /* the last pricing's */
    unsigned long nodes, node_budget; /* knapsack nodes so far, and at most */
    double work;                      /* the simplex's so far */
    double work_step;                 /* its budget for the rounds */
    double dive_step;                 /* and for each dive */
    double big;                       /* the artificial columns' cost (fleet_simplex.c) */
    struct cg_set uncovered;          /* the workloads the program must cover */
    uint64_t left[FLEET_MAX_POOLS];   /* GPUs each counted pool has left */
};

/* What every plan buys a whole number of, so the search over whole GPUs may hold it to a
 * range: the GPUs of each pool (sum q), and of each pool for each group and for the lone
 * workloads (kind_sum: a GPU holds one group's workloads, or one lone workload). */
#define CG_KINDS (FLEET_GROUPS + 1)
#define CG_SUMS (FLEET_MAX_POOLS * (1 + CG_KINDS))

static size_t kind_sum(size_t pool, size_t kind)
{
    return FLEET_MAX_POOLS + pool * CG_KINDS + kind;
}

/* Those sums a program buys: lo <= each <= hi (INFINITY: no limit). */
struct cg_range {
    double lo[CG_SUMS], hi[CG_SUMS];
};

/* The restricted program of one range: cg's columns so far, over the rows of the workloads
 * still to cover and of the pools' limits. */
struct cg_master {
    struct fleet_simplex *s;
    size_t row_of[COLGEN_MAX];               /* SIZE_MAX: covered already */
    size_t hi_row[CG_SUMS], lo_row[CG_SUMS]; /* SIZE_MAX: none */
    size_t ncols;                            /* cg's columns it has */
};

/* Dual prices: y per workload, w per sum's upper limit, v per lower limit, all >= 0. */
struct cg_prices {
    double y[COLGEN_MAX], w[CG_SUMS], v[CG_SUMS];
};

static bool holds(const struct colgen *cg, size_t q, size_t i)
{
    return cg->f->pools[q].memory_mib >= cg->item[i].mem &&
           (cg->item[i].group == GROUP_ALONE || cg->item[i].comp <= cg->r->compute_cap);
}

/* The sums column c counts in: its pool's, and its pool's for its kind. */
static void sums_of(const struct colgen *cg, const struct cg_column *c, size_t sums[2])
{
    int grp = cg->item[set_first(&c->set)].group;
    sums[0] = c->pool;
    sums[1] = kind_sum(c->pool, grp == GROUP_ALONE ? FLEET_GROUPS : (size_t)grp);
}

static void add_column(struct colgen *cg, struct cg_set set, size_t pool)
{
    if (set_empty(&set))
        return;
    for (size_t j = 0; j < cg->ncols; j++)
        if (!memcmp(&cg->col[j].set, &set, sizeof(set)) && cg->col[j].pool == pool)
            return;
    if (cg->ncols < COLGEN_COLUMNS)
        cg->col[cg->ncols++] = (struct cg_column){set, pool};
}

/* Gives the master cg's columns it lacks; false when its tableau is full. */
static bool master_sync(struct colgen *cg, struct cg_master *ms)
{
    for (; ms->ncols < cg->ncols; ms->ncols++) {
        const struct cg_column *c = &cg->col[ms->ncols];
        size_t rows[COLGEN_MAX + 4], k = 0, sums[2];
        for (size_t i = 0; i < cg->n; i++)
            if (set_has(&c->set, i) && ms->row_of[i] != SIZE_MAX)
                rows[k++] = ms->row_of[i];
        sums_of(cg, c, sums);
        for (size_t b = 0; b < 2; b++) {
            if (ms->hi_row[sums[b]] != SIZE_MAX)
                rows[k++] = ms->hi_row[sums[b]];
            if (ms->lo_row[sums[b]] != SIZE_MAX)
                rows[k++] = ms->lo_row[sums[b]];
        }
        if (fleet_simplex_add(ms->s, rows, k, cg->f->pools[c->pool].price, &cg->work) < 0)
            return false;
    }
    return true;
}

/* The program of range rg over the workloads in cg->uncovered, with cg's columns and room for
 * `rounds' rounds' more. 0, or -ENOMEM. */
static int master_new(struct colgen *cg, const struct cg_range *rg, int rounds,
                      struct cg_master *ms)
{
    bool at_least[COLGEN_MAX + 2 * CG_SUMS];
    double rhs[COLGEN_MAX + 2 * CG_SUMS];
    size_t m = 0;
    for (size_t i = 0; i < cg->n; i++) {
        ms->row_of[i] = set_has(&cg->uncovered, i) ? m : SIZE_MAX;
        if (ms->row_of[i] != SIZE_MAX) {
            at_least[m] = true;
            rhs[m++] = 1;
        }
    }
    for (size_t b = 0; b < CG_SUMS; b++) {
        ms->hi_row[b] = ms->lo_row[b] = SIZE_MAX;
        if (rg->hi[b] < INFINITY) {
            ms->hi_row[b] = m;
            at_least[m] = false;
            rhs[m++] = rg->hi[b];
        }
        if (rg->lo[b] > 0) {
            ms->lo_row[b] = m;
            at_least[m] = true;
            rhs[m++] = rg->lo[b];
        }
    }
    ms->ncols = 0;
    size_t room = cg->ncols + (size_t)rounds * COLGEN_ADD;
    ms->s = fleet_simplex_new(m, at_least, rhs, room < COLGEN_COLUMNS ? room : COLGEN_COLUMNS,
                              cg->big);
    return ms->s && master_sync(cg, ms) ? 0 : -ENOMEM;
}

static void prices_of(const struct colgen *cg, const struct cg_master *ms, struct cg_prices *pr)
{
    double duals[COLGEN_MAX + 2 * CG_SUMS];
    fleet_simplex_duals(ms->s, duals);
    memset(pr, 0, sizeof(*pr));
    for (size_t i = 0; i < cg->n; i++)
        if (ms->row_of[i] != SIZE_MAX)
            pr->y[i] = duals[ms->row_of[i]] > 0 ? duals[ms->row_of[i]] : 0;
    for (size_t b = 0; b < CG_SUMS; b++) {
        if (ms->hi_row[b] != SIZE_MAX)
            pr->w[b] = duals[ms->hi_row[b]] < 0 ? -duals[ms->hi_row[b]] : 0;
        if (ms->lo_row[b] != SIZE_MAX)
            pr->v[b] = duals[ms->lo_row[b]] > 0 ? duals[ms->lo_row[b]] : 0;
    }
}

/* Prices every pool's sets at pr, adds those worth more than their pool's price to cg, and
 * returns the bound these prices give on every purchase within rg (Farley's: see the top of
 * the file; a pool's lower limit's price v counts as its upper limit's w does, with the other
 * sign). *added: columns. */
static double price_round(struct colgen *cg, const struct cg_prices *pr, const struct cg_range *rg,
                          size_t *added)
{
    const struct fleet *f = cg->f;
    double theta = 1, value = 0;
    struct cg_column cand[COLGEN_ADD];
    double gain[COLGEN_ADD]; /* what each is worth above its pool's price */
    size_t ncand = 0;
    *added = 0;
    for (size_t i = 0; i < cg->n; i++)
        value += pr->y[i];
    for (size_t b = 0; b < CG_SUMS; b++)
        value += (pr->v[b] ? pr->v[b] * rg->lo[b] : 0) - (pr->w[b] ? pr->w[b] * rg->hi[b] : 0);
    for (size_t q = 0; q < f->npools; q++) {
        double price = f->pools[q].price;
        for (int grp = 0; grp < FLEET_GROUPS; grp++) {
            size_t kind = kind_sum(q, (size_t)grp);
            /* what a GPU of this pool and group adds to the limits, priced */
            double w = pr->w[q] - pr->v[q] + pr->w[kind] - pr->v[kind];
            struct knapsack *ks = &cg->ks;
            double exact, most;
            struct cg_set exact_set;
            bool fits = false;
            bool dp = knapsack_dp(cg->item, cg->n, pr->y, grp, f->pools[q].memory_mib, cg->r,
                                  &exact, &exact_set, &fits);
            if (dp && fits) {
                *ks = (struct knapsack){.worth = price + w};
                keep(ks, exact_set, exact);
                most = exact;
            } else {
                unsigned long left =
                    cg->node_budget > cg->nodes ? cg->node_budget - cg->nodes : 0;
                most = knapsack(ks, cg->item, cg->n, pr->y, grp, f->pools[q].memory_mib, cg->r,
                                price + w, left < COLGEN_NODES ? left : COLGEN_NODES);
                cg->nodes += ks->nodes;
                most = dp && exact < most ? exact : most; /* without the places: above it */
            }
            /* it leaves out workloads priced at most COLGEN_EPS and prunes within it */
            most += (double)(cg->n + 1) * COLGEN_EPS;
            if (most > w)
                theta = theta < price / (most - w) ? theta : price / (most - w);
            for (size_t k = 0; k < ks->nkept; k++) { /* the most valuable COLGEN_ADD */
                double above = ks->kept_value[k] - price - w;
                size_t at = ncand < COLGEN_ADD ? ncand++ : COLGEN_ADD;
                if (at == COLGEN_ADD) {
                    at = 0;
                    for (size_t c = 1; c < COLGEN_ADD; c++)
                        at = gain[c] < gain[at] ? c : at;
                    if (gain[at] >= above)
                        continue;
                }
                cand[at] = (struct cg_column){ks->kept[k], q};
                gain[at] = above;
            }
        }
        size_t kind = kind_sum(q, FLEET_GROUPS);
        double w = pr->w[q] - pr->v[q] + pr->w[kind] - pr->v[kind];
        for (size_t i = 0; i < cg->n; i++)
            if (cg->item[i].group == GROUP_ALONE && holds(cg, q, i) && pr->y[i] > w)
                theta = theta < price / (pr->y[i] - w) ? theta : price / (pr->y[i] - w);
    }
    for (size_t c = 0; c < ncand; c++) {
        size_t before = cg->ncols;
        add_column(cg, cand[c].set, cand[c].pool);
        *added += cg->ncols > before;
    }
    return theta * value - COLGEN_SLACK; /* the simplex's rounding in value */
}

/* What solving a range gives: the best of its rounds' bounds (-INFINITY if none), and the
 * GPUs of each pool its last solution buys (sums), when it has one (solved). */
struct cg_solved {
    double bound, sums[CG_SUMS];
    bool solved;
    bool met; /* and it meets every row (no artificial column above zero) */
};

/* Solves range rg's program, priced again after each solve `rounds' times at most, until the
 * simplex's work passes stop. 0, or -ENOMEM. */
static int solve_range(struct colgen *cg, const struct cg_range *rg, int rounds, double stop,
                       double *x, struct cg_solved *out)
{
    struct cg_master ms;
    out->bound = -INFINITY;
    out->solved = false;
    int ret = master_new(cg, rg, rounds, &ms);
    for (int round = 0; !ret; round++) {
        out->solved = fleet_simplex_solve(ms.s, &cg->work, stop) == FLEET_SIMPLEX_OPTIMAL;
        if (!out->solved || round == rounds)
            break;
        struct cg_prices pr;
        prices_of(cg, &ms, &pr);
        size_t added;
        double bound = price_round(cg, &pr, rg, &added);
        out->bound = bound > out->bound ? bound : out->bound;
        if (!added || cg->work >= stop || !master_sync(cg, &ms))
            break; /* the solution stands, without the columns just added */
    }
    if (!ret && out->solved) {
        out->met = !fleet_simplex_artificial(ms.s);
        fleet_simplex_values(ms.s, x);
        for (size_t j = ms.ncols; j < cg->ncols; j++) /* added since: not in the solution */
            x[j] = 0;
        memset(out->sums, 0, sizeof(out->sums));
        for (size_t j = 0; j < ms.ncols; j++) {
            size_t sums[2];
            sums_of(cg, &cg->col[j], sums);
            out->sums[sums[0]] += x[j];
            out->sums[sums[1]] += x[j];
        }
    }
    fleet_simplex_free(ms.s);
    return ret;
}

/* ---- whole GPUs of each pool ----
 *
 * Every plan buys a whole number of GPUs of each pool, and of each pool for each group (and
 * for the lone workloads), where the program's solution often buys fractions: 17.95 A100s
 * where every plan buys 18 or more, or 2.5 H100s on a fleet that has 3. So the bound is taken
 * further by branch and bound on those numbers (CG_SUMS), best first: a node is the program
 * with each number held to a range, solved by its own rounds of pricing (a range keeps every
 * set, so the columns found serve every node); the node of least bound is split on the most
 * fractional number v (a pool's total first, then by kind) into at most floor v and at least
 * ceil v, which between them keep every plan of the node. Each node's bound is Farley's for
 * its range (the limits' prices in it), at least its parent's; so the least bound over the
 * open nodes bounds every plan at any point of the search, which stops when that reaches the
 * plan's cost (no bound above it is needed), after COLGEN_BB_NODES solves, or past the
 * simplex's budget. The range of that least bound is where a cheaper plan may still be: the
 * dive looks for one there. */
#define COLGEN_BB_NODES 64
#define COLGEN_BB_ROUNDS 20
#define COLGEN_BB_WORK 4.0e8
#define COLGEN_BB_ALL_NODES 2000000ul /* knapsack nodes, beside the rounds' */

struct cg_node {
    struct cg_range rg;
    struct cg_solved at;
};

static double fraction(double v)
{
    double frac = v - (double)(uint64_t)v; /* v >= 0 */
    return frac < 1 - frac ? frac : 1 - frac;
}

/* Whether n's solution keeps sum b within its range: one that does not (an artificial column
 * left on its row) would split into the range itself again. */
static bool within(const struct cg_node *n, size_t b)
{
    return n->at.sums[b] >= n->rg.lo[b] - 1e-9 && n->at.sums[b] <= n->rg.hi[b] + 1e-9;
}

/* The sum to split n on: the pool whose GPUs are the most fractional, else the pool and kind;
 * CG_SUMS if none is. */
static size_t split_sum(const struct colgen *cg, const struct cg_node *n)
{
    size_t best = CG_SUMS;
    double best_frac = 1e-6;
    for (size_t q = 0; q < cg->f->npools && n->at.solved; q++)
        if (fraction(n->at.sums[q]) > best_frac && within(n, q)) {
            best_frac = fraction(n->at.sums[q]);
            best = q;
        }
    for (size_t q = 0; q < cg->f->npools && n->at.solved && best == CG_SUMS; q++)
        for (size_t k = 0; k < CG_KINDS; k++)
            if (fraction(n->at.sums[kind_sum(q, k)]) > best_frac && within(n, kind_sum(q, k))) {
                best_frac = fraction(n->at.sums[kind_sum(q, k)]);
                best = kind_sum(q, k);
            }
    return best;
}

/* The least bound over the open nodes of that search (*value, at most plan_cost) and its range
 * (*least_open, left as it was when no node is open below plan_cost). 0, or -ENOMEM. */
static int whole_pools(struct colgen *cg, const struct cg_node *root, double plan_cost,
                       double *x, double *value, struct cg_range *least_open)
{
    /* a split takes one node and gives two at most for two solves: open <= 1 + solves / 2 */
    struct cg_node *open = malloc((COLGEN_BB_NODES / 2 + 2) * sizeof(*open));
    if (!open)
        return -ENOMEM;
    size_t nopen = 1;
    open[0] = *root;
    double stop = cg->work + COLGEN_BB_WORK;
    cg->node_budget = cg->nodes + COLGEN_BB_ALL_NODES;
    for (int solved = 0; solved + 2 <= COLGEN_BB_NODES && cg->work < stop;) {
        size_t least = 0;
        for (size_t k = 1; k < nopen; k++)
            least = open[k].at.bound < open[least].at.bound ? k : least;
        struct cg_node n = open[least];
        size_t q = split_sum(cg, &n);
        if (n.at.bound >= plan_cost || q == CG_SUMS)
            break;
        open[least] = open[--nopen];
        double v = (double)(uint64_t)n.at.sums[q];
        struct cg_node kids[2] = {n, n};
        kids[0].rg.hi[q] = dmin(n.rg.hi[q], v);
        kids[1].rg.lo[q] = dmax(n.rg.lo[q], v + 1);
        for (int c = 0; c < 2; c++) {
            if (kids[c].rg.lo[q] > kids[c].rg.hi[q])
                continue; /* no plan buys that many of a counted pool */
            int ret = solve_range(cg, &kids[c].rg, COLGEN_BB_ROUNDS, stop, x, &kids[c].at);
            if (ret) {
                free(open);
                return ret;
            }
            solved++;
            kids[c].at.bound = dmax(kids[c].at.bound, n.at.bound);
            if (kids[c].at.bound < plan_cost)
                open[nopen++] = kids[c];
        }
        if (!nopen)
            break;
    }
    *value = plan_cost;
    for (size_t k = 0; k < nopen; k++)
        if (open[k].at.bound < *value) {
            *value = open[k].at.bound;
            *least_open = open[k].rg;
        }
    free(open);
    return 0;
}

/* Takes column j's workloads still uncovered, on a GPU of its pool, into the plan being made;
 * false if none is left or the pool has no GPU left. */
static bool take(struct colgen *cg, size_t j, struct cg_column *chosen, size_t *nchosen)
{
    struct cg_column c = cg->col[j];
    set_cut(&c.set, &cg->uncovered, true);
    bool counted = cg->f->pools[c.pool].count != FLEET_UNLIMITED;
    if (set_empty(&c.set) || (counted && !cg->left[c.pool]))
        return false;
    chosen[(*nchosen)++] = c;
    set_cut(&cg->uncovered, &c.set, false);
    if (counted)
        cg->left[c.pool]--;
    return true;
}

/* A plan from the program's solution, by diving: the sets the solution buys whole are taken,
 * else the one it buys most of; every set loses the workloads taken (what is left of a set a
 * GPU holds, it still holds), and the program is solved again over what is left, until every
 * workload is on a GPU. chosen gets the plan's GPUs (*nchosen, 0 if the dive failed). */
static int dive(struct colgen *cg, int rounds, const struct cg_range *range, double *x,
                struct cg_column *chosen, size_t *nchosen)
{
    *nchosen = 0;
    double taken[CG_SUMS] = {0};
    size_t order[FLEET_MAX_POOLS];
    fleet_pool_order(cg->f, order); /* cheapest per MiB first */
    for (size_t i = 0; i < cg->n; i++) /* room to move what the sets taken leave */
        for (size_t o = 0, added = 0; o < cg->f->npools && added < COLGEN_DIVE_POOLS; o++)
            if (holds(cg, order[o], i)) {
                add_column(cg, set_of(i), order[o]);
                added++;
            }
    double stop = cg->work + cg->dive_step;
    for (size_t step = 0; step < COLGEN_MAX && !set_empty(&cg->uncovered) && cg->work < stop;
         step++) {
        struct cg_range rg;
        for (size_t b = 0; b < CG_SUMS; b++) {
            rg.lo[b] = dmax(0, range->lo[b] - taken[b]);
            rg.hi[b] = dmax(0, range->hi[b] - taken[b]);
        }
        struct cg_solved at;
        int ret = solve_range(cg, &rg, rounds, stop, x, &at);
        if (ret || !at.solved || !at.met) {
            *nchosen = 0;
            return ret;
        }
        bool took = false;
        size_t most = 0;
        for (size_t j = 0; j < cg->ncols; j++) {
            if (x[j] >= 1 - COLGEN_DIVE_WHOLE)
                took |= take(cg, j, chosen, nchosen);
            most = x[j] > x[most] ? j : most;
        }
        if (!took && !take(cg, most, chosen, nchosen))
            break;
        memset(taken, 0, sizeof(taken));
        for (size_t k = 0; k < *nchosen; k++) {
            size_t sums[2];
            sums_of(cg, &chosen[k], sums);
            taken[sums[0]]++;
            taken[sums[1]]++;
        }
        size_t kept = 0;
        for (size_t j = 0; j < cg->ncols; j++) {
            set_cut(&cg->col[j].set, &cg->uncovered, true);
            if (!set_empty(&cg->col[j].set))
                cg->col[kept++] = cg->col[j];
        }
        cg->ncols = kept;
    }
    if (!set_empty(&cg->uncovered))
        *nchosen = 0;
    return 0;
}

/* The dive's plan in place of p's: its GPUs opened in g, p's counts made again. */
static int adopt(const struct fleet *f, const struct fleet_workloads *ws, const size_t *index,
                 const struct colgen *cg, const struct cg_column *chosen, size_t nchosen,
                 struct fleet_plan *p, struct fleet_gpu_list *g)
{
    uint64_t left[FLEET_MAX_POOLS];
    fleet_gpu_restart(f, g, p, left);
    for (size_t k = 0; k < nchosen; k++) {
        long gi = fleet_gpu_open(f, g, p, left, (int)chosen[k].pool);
        if (gi < 0)
            return -ENOMEM;
        for (size_t i = 0; i < ws->n; i++) {
            if (index[i] == SIZE_MAX || !set_has(&chosen[k].set, index[i]))
                continue;
            const struct fleet_workload *w = &ws->w[i];
            fleet_gpu_add(&g->use[gi], w->memory_mib, w->compute_bp, w->memory_mib);
            p->gpu_of[i] = (uint32_t)gi;
            p->placed++;
            p->alone += cg->item[index[i]].group == GROUP_ALONE;
        }
    }
    return 0;
}

/* The dive, on a copy of the columns (it cuts them down), and its plan when it is cheaper. */
static int plan_by_dive(struct colgen *cg, int rounds, const struct cg_range *range,
                        const struct fleet_workloads *ws, const size_t *index, double *x,
                        struct fleet_plan *p, struct fleet_gpu_list *g)
{
    struct cg_column *saved = malloc(COLGEN_COLUMNS * sizeof(*saved));
    if (!saved)
        return -ENOMEM;
    memcpy(saved, cg->col, cg->ncols * sizeof(*saved));
    size_t nsaved = cg->ncols;
    struct cg_set uncovered = cg->uncovered;
    uint64_t left[FLEET_MAX_POOLS];
    memcpy(left, cg->left, sizeof(left));
    struct cg_column chosen[COLGEN_MAX];
    size_t nchosen = 0;
    int ret = dive(cg, rounds, range, x, chosen, &nchosen);
    double cost = 0;
    for (size_t k = 0; k < nchosen; k++)
        cost += cg->f->pools[chosen[k].pool].price;
    if (!ret && nchosen && cost < p->cost_per_hour - 1e-9)
        ret = adopt(cg->f, ws, index, cg, chosen, nchosen, p, g);
    memcpy(cg->col, saved, nsaved * sizeof(*saved));
    cg->ncols = nsaved;
    cg->uncovered = uncovered;
    memcpy(cg->left, left, sizeof(left));
    free(saved);
    return ret;
}

/* The program's bound and plans; with whole, its bound taken further over whole GPUs (and a
 * plan from the least open range of that search). */
static int colgen(const struct fleet *f, const struct fleet_workloads *ws, const uint8_t *possible,
                  int mech, const struct mech_rules *r, struct fleet_plan *p,
                  struct fleet_gpu_list *g, bool whole_gpus, double *value)
{
    *value = 0;
    struct colgen *cg = calloc(1, sizeof(*cg));
    size_t *index = malloc((ws->n ? ws->n : 1) * sizeof(*index)); /* workload -> item */
    double *x = calloc(COLGEN_COLUMNS, sizeof(double));
    if (!cg || !index || !x) {
        free(cg);
        free(index);
        free(x);
        return -ENOMEM;
    }
    int ret = 0;
    cg->f = f;
    cg->r = r;
    cg->node_budget = COLGEN_ALL_NODES;
    for (size_t q = 0; q < f->npools; q++)
        cg->big = dmax(cg->big, f->pools[q].price);
    cg->big = 1000 * (cg->big + 1);
    for (size_t i = 0; i < ws->n; i++) {
        index[i] = SIZE_MAX;
        if (!possible[i])
            continue;
        if (cg->n == COLGEN_MAX)
            goto out; /* too long a list: no bound */
        index[i] = cg->n;
        int grp = fleet_group_of(mech, &ws->w[i], r);
        cg->item[cg->n++] = (struct cg_item){ws->w[i].memory_mib, ws->w[i].compute_bp, grp};
    }
    for (size_t i = 0; i < cg->n; i++)
        cg->uncovered = set_with(cg->uncovered, i);
    struct cg_node root;
    for (size_t b = 0; b < CG_SUMS; b++) {
        root.rg.lo[b] = 0;
        root.rg.hi[b] = INFINITY;
    }
    for (size_t q = 0; q < f->npools; q++) {
        cg->left[q] = f->pools[q].count;
        if (f->pools[q].count != FLEET_UNLIMITED)
            root.rg.hi[q] = (double)f->pools[q].count;
    }
    cg->col = malloc(COLGEN_COLUMNS * sizeof(*cg->col));
    if (!cg->col) {
        ret = -ENOMEM;
        goto out;
    }
    /* the plan's GPUs, and each workload alone on each pool that holds it */
    for (size_t k = 0; k < g->n && p->gpu_of; k++) {
        struct cg_set set = {{0}};
        for (size_t i = 0; i < ws->n; i++)
            if (index[i] != SIZE_MAX && p->gpu_of[i] == k)
                set = set_with(set, index[i]);
        add_column(cg, set, g->use[k].pool);
    }
    for (size_t i = 0; i < cg->n; i++) /* the sets a lone workload has: the rounds add none */
        for (size_t q = 0; q < f->npools; q++)
            if (cg->item[i].group == GROUP_ALONE && holds(cg, q, i))
                add_column(cg, set_of(i), q);
    cg->work_step = COLGEN_WORK * dmax(1, (double)cg->n / COLGEN_WORK_PER);
    cg->dive_step = cg->work_step * dmax(1, (double)cg->n / COLGEN_WORK_PER);
    ret = solve_range(cg, &root.rg, COLGEN_ROUNDS, cg->work_step, x, &root.at);
    *value = dmax(0, root.at.bound);
    /* a plan from the program's solution, when it is cheaper */
    if (!ret && root.at.solved && p->gpu_of)
        ret = plan_by_dive(cg, 0, &root.rg, ws, index, x, p, g);
    if (!ret && root.at.solved && p->gpu_of)
        ret = plan_by_dive(cg, COLGEN_DIVE_ROUNDS, &root.rg, ws, index, x, p, g);
    if (!ret && root.at.solved && whole_gpus && *value < p->cost_per_hour) {
        double whole = 0;
        struct cg_range least = root.rg;
        ret = whole_pools(cg, &root, p->cost_per_hour, x, &whole, &least);
        *value = dmax(*value, whole);
        /* a plan within the range of the least open bound, where one cheaper is likeliest */
        if (!ret && p->gpu_of && memcmp(&least, &root.rg, sizeof(least)) &&
            whole < p->cost_per_hour)
            ret = plan_by_dive(cg, COLGEN_DIVE_ROUNDS, &least, ws, index, x, p, g);
    }
out:
    free(cg->col);
    free(cg);
    free(index);
    free(x);
    return ret;
}

int fleet_colgen(const struct fleet *f, const struct fleet_workloads *ws, const uint8_t *possible,
                 int mech, const struct mech_rules *r, struct fleet_plan *p,
                 struct fleet_gpu_list *g, double *value)
{
    return colgen(f, ws, possible, mech, r, p, g, true, value);
}

int fleet_colgen_plan(const struct fleet *f, const struct fleet_workloads *ws,
                      const uint8_t *possible, int mech, const struct mech_rules *r,
                      struct fleet_plan *p, struct fleet_gpu_list *g)
{
    double value;
    return colgen(f, ws, possible, mech, r, p, g, false, &value);
}
