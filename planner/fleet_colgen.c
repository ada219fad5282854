/* fleet_colgen.c - a cost bound, and a plan, for lists of a few dozen workloads: the program
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
 * and group, the sets its dual prices value most (a knapsack on memory, compute and places, by
 * branch and bound: the best COLGEN_PER_PRICING found) and adds the COLGEN_ADD of them worth
 * most above their pool's price.
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
 * it and kept when cheaper than the packing's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define COLGEN_MAX 64         /* workloads at most: a set is a 64-bit mask */
#define COLGEN_ROUNDS 40
#define COLGEN_COLUMNS 1200
#define COLGEN_NODES 100000ul /* knapsack nodes per pool and group and round */
#define COLGEN_ALL_NODES 2000000ul /* and in all, per list and mechanism */
#define COLGEN_ADD 16         /* sets added per round at most, the most valuable */
/* The simplex's work (tableau entries its pivots update), for the rounds and again for the
 * dive, each: about 0.2 s on this project's 2-core VM. 64 workloads on ten counted pools took
 * 31 s without it. */
#define COLGEN_WORK 2.0e8
#define COLGEN_DIVE_POOLS 3   /* pools each workload may go alone to in the dive: the cheapest */
#define COLGEN_EPS 1e-9
#define COLGEN_SLACK 1e-6     /* dollars taken off the bound */
#define COLGEN_PER_PRICING 4  /* sets a pool and group add per round at most */
#define COLGEN_DIVE_WHOLE 1e-6 /* a set the solution buys at least 1 - this of is bought */

struct cg_item {
    uint64_t mem;
    uint32_t comp;
    int group; /* GROUP_ALONE: a GPU of its own */
};

struct cg_column {
    uint64_t set;
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
    uint64_t best_set;
    unsigned long nodes, node_limit;
    double worth;      /* a set worth more than this is kept */
    uint64_t kept[COLGEN_PER_PRICING];
    double kept_value[COLGEN_PER_PRICING];
    size_t nkept;
};

/* Keeps set among the most valuable found (those worth more than ks->worth). */
static void keep(struct knapsack *ks, uint64_t set, double value)
{
    if (value <= ks->worth + COLGEN_EPS)
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

static const struct knapsack *sort_ks;
static const size_t *sort_key; /* 0: by value per MiB, 1: per compute, 2: by value */

static double per(double value, double size)
{
    return size > 0 ? value / size : value * 1e18;
}

static int by_ratio(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct knapsack *k = sort_ks;
    double x, z;
    if (sort_key == k->by_mem) {
        x = per(k->y[i], (double)k->item[i].mem);
        z = per(k->y[j], (double)k->item[j].mem);
    } else if (sort_key == k->by_comp) {
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

static void knapsack_from(struct knapsack *ks, size_t k, uint64_t set, double value, uint64_t mem,
                          uint32_t comp, uint32_t places)
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
        knapsack_from(ks, k + 1, set | 1ull << i, value + ks->y[i], mem - ks->item[i].mem,
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
    sort_ks = &ks;
    sort_key = ks.by_mem;
    qsort(ks.by_mem, ks.n, sizeof(size_t), by_ratio);
    sort_key = ks.by_comp;
    qsort(ks.by_comp, ks.n, sizeof(size_t), by_ratio);
    sort_key = ks.by_value;
    qsort(ks.by_value, ks.n, sizeof(size_t), by_ratio);
    for (size_t i = 0; i < n; i++)
        ks.rank[i] = COLGEN_MAX;
    for (size_t o = 0; o < ks.n; o++)
        ks.rank[ks.by_mem[o]] = o;
    knapsack_from(&ks, 0, 0, 0, mem_cap, r->compute_cap, r->slots);
    *out = ks;
    return ks.open > ks.best ? ks.open : ks.best;
}

struct colgen {
    const struct fleet *f;
    const struct mech_rules *r;
    struct cg_item item[COLGEN_MAX];
    size_t n;
    size_t pool_row[FLEET_MAX_POOLS]; /* SIZE_MAX: the pool is not counted */
    size_t nrows;
    struct cg_column *col;
    size_t ncols;
    struct knapsack ks; /* the last pricing's */
    unsigned long nodes;                /* knapsack nodes so far */
    double work;                        /* the simplex's so far (COLGEN_WORK) */
    uint64_t uncovered;                /* the workloads the program must cover */
    uint64_t left[FLEET_MAX_POOLS];    /* GPUs each counted pool has left */
};

static bool holds(const struct colgen *cg, size_t q, size_t i)
{
    return cg->f->pools[q].memory_mib >= cg->item[i].mem &&
           (cg->item[i].group == GROUP_ALONE || cg->item[i].comp <= cg->r->compute_cap);
}

static void add_column(struct colgen *cg, uint64_t set, size_t pool)
{
    for (size_t j = 0; j < cg->ncols; j++)
        if (cg->col[j].set == set && cg->col[j].pool == pool)
            return;
    if (cg->ncols < COLGEN_COLUMNS)
        cg->col[cg->ncols++] = (struct cg_column){set, pool};
}

/* Solves the program over the columns so far: the duals (y, then w per counted pool) and the
 * solution x, or *solved false where the simplex gives up, or where its work (cg->work) passes
 * limit. */
static int solve_round(struct colgen *cg, double *duals, double *x, double limit, bool *solved)
{
    size_t rows = cg->nrows, vars = cg->ncols;
    double *a = calloc(rows * vars + 1, sizeof(double));
    double *demand = calloc(rows + 1, sizeof(double));
    double *cost = calloc(vars + 1, sizeof(double));
    int ret = -ENOMEM;
    if (!a || !demand || !cost)
        goto out;
    for (size_t i = 0; i < cg->n; i++)
        demand[i] = cg->uncovered >> i & 1;
    for (size_t q = 0; q < cg->f->npools; q++)
        if (cg->pool_row[q] != SIZE_MAX)
            demand[cg->pool_row[q]] = -(double)cg->left[q];
    for (size_t j = 0; j < vars; j++) {
        const struct cg_column *c = &cg->col[j];
        cost[j] = cg->f->pools[c->pool].price;
        for (size_t i = 0; i < cg->n; i++)
            if (c->set >> i & 1)
                a[i * vars + j] = 1;
        if (cg->pool_row[c->pool] != SIZE_MAX)
            a[cg->pool_row[c->pool] * vars + j] = -1;
    }
    struct fleet_cover_lp lp = {.nvars = vars, .nrows = rows, .a = a, .demand = demand,
                                .cost = cost, .dantzig = true, .duals = duals,
                                .work = &cg->work, .work_limit = limit};
    double value;
    ret = fleet_cover_solve(&lp, x, &value, solved);
out:
    free(a);
    free(demand);
    free(cost);
    return ret;
}

/* Prices every pool's sets at the duals, adds those worth more than their pool's price, and
 * returns the bound these duals give (Farley's: see the top of the file). *added: columns. */
static double price_round(struct colgen *cg, const double *duals, size_t *added)
{
    const struct fleet *f = cg->f;
    double theta = 1, value = 0;
    struct cg_column cand[COLGEN_ADD];
    double gain[COLGEN_ADD]; /* what each is worth above its pool's price */
    size_t ncand = 0;
    *added = 0;
    for (size_t i = 0; i < cg->n; i++)
        value += duals[i];
    for (size_t q = 0; q < f->npools; q++) {
        double w = cg->pool_row[q] != SIZE_MAX ? duals[cg->pool_row[q]] : 0;
        value -= cg->pool_row[q] != SIZE_MAX ? w * (double)f->pools[q].count : 0;
        double price = f->pools[q].price;
        for (int grp = 0; grp < FLEET_GROUPS; grp++) {
            struct knapsack *ks = &cg->ks;
            unsigned long left = COLGEN_ALL_NODES > cg->nodes ? COLGEN_ALL_NODES - cg->nodes : 0;
            double most = knapsack(ks, cg->item, cg->n, duals, grp, f->pools[q].memory_mib,
                                   cg->r, price + w, left < COLGEN_NODES ? left : COLGEN_NODES);
            cg->nodes += ks->nodes;
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
        for (size_t i = 0; i < cg->n; i++)
            if (cg->item[i].group == GROUP_ALONE && holds(cg, q, i) && duals[i] > w)
                theta = theta < price / (duals[i] - w) ? theta : price / (duals[i] - w);
    }
    for (size_t c = 0; c < ncand; c++) {
        size_t before = cg->ncols;
        add_column(cg, cand[c].set, cand[c].pool);
        *added += cg->ncols > before;
    }
    double bound = theta * value - COLGEN_SLACK; /* the simplex's rounding in value */
    return bound > 0 ? bound : 0;
}

/* Takes column j's workloads still uncovered, on a GPU of its pool, into the plan being made;
 * false if none is left or the pool has no GPU left. */
static bool take(struct colgen *cg, size_t j, struct cg_column *chosen, size_t *nchosen)
{
    struct cg_column c = cg->col[j];
    c.set &= cg->uncovered;
    if (!c.set || (cg->pool_row[c.pool] != SIZE_MAX && !cg->left[c.pool]))
        return false;
    chosen[(*nchosen)++] = c;
    cg->uncovered &= ~c.set;
    if (cg->pool_row[c.pool] != SIZE_MAX)
        cg->left[c.pool]--;
    return true;
}

/* A plan from the program's solution, by diving: the sets the solution buys whole are taken,
 * else the one it buys most of; every set loses the workloads taken (what is left of a set a
 * GPU holds, it still holds), and the program is solved again over what is left, until every
 * workload is on a GPU. chosen gets the plan's GPUs (*nchosen, 0 if the dive failed). */
static int dive(struct colgen *cg, double *duals, double *x, struct cg_column *chosen,
                size_t *nchosen)
{
    *nchosen = 0;
    size_t order[FLEET_MAX_POOLS];
    fleet_pool_order(cg->f, order); /* cheapest per MiB first */
    for (size_t i = 0; i < cg->n; i++) /* room to move what the sets taken leave */
        for (size_t o = 0, added = 0; o < cg->f->npools && added < COLGEN_DIVE_POOLS; o++)
            if (holds(cg, order[o], i)) {
                add_column(cg, 1ull << i, order[o]);
                added++;
            }
    double stop = cg->work + COLGEN_WORK;
    for (size_t step = 0; step < COLGEN_MAX && cg->uncovered && cg->work < stop; step++) {
        bool solved = false;
        int ret = solve_round(cg, duals, x, stop, &solved);
        if (ret || !solved) {
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
        size_t kept = 0;
        for (size_t j = 0; j < cg->ncols; j++) {
            cg->col[j].set &= cg->uncovered;
            if (cg->col[j].set)
                cg->col[kept++] = cg->col[j];
        }
        cg->ncols = kept;
    }
    if (cg->uncovered)
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
            if (index[i] == SIZE_MAX || !(chosen[k].set >> index[i] & 1))
                continue;
            fleet_gpu_add(&g->use[gi], &ws->w[i], ws->w[i].memory_mib);
            p->gpu_of[i] = (uint32_t)gi;
            p->placed++;
            p->alone += cg->item[index[i]].group == GROUP_ALONE;
        }
    }
    return 0;
}

int fleet_colgen(const struct fleet *f, const struct fleet_workloads *ws, const uint8_t *possible,
                 int mech, const struct mech_rules *r, struct fleet_plan *p,
                 struct fleet_gpu_list *g, double *value)
{
    *value = 0;
    struct colgen *cg = calloc(1, sizeof(*cg));
    size_t *index = malloc((ws->n ? ws->n : 1) * sizeof(*index)); /* workload -> item */
    if (!cg || !index) {
        free(cg);
        free(index);
        return -ENOMEM;
    }
    int ret = 0;
    cg->f = f;
    cg->r = r;
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
    cg->nrows = cg->n;
    cg->uncovered = cg->n == 64 ? ~0ull : (1ull << cg->n) - 1;
    for (size_t q = 0; q < f->npools; q++) {
        cg->pool_row[q] = f->pools[q].count == FLEET_UNLIMITED ? SIZE_MAX : cg->nrows++;
        cg->left[q] = f->pools[q].count;
    }
    double *duals = calloc(cg->nrows + 1, sizeof(double));
    double *x = calloc(COLGEN_COLUMNS, sizeof(double));
    cg->col = malloc(COLGEN_COLUMNS * sizeof(*cg->col));
    if (!duals || !x || !cg->col) {
        free(duals);
        free(x);
        ret = -ENOMEM;
        goto out;
    }
    /* the plan's GPUs, and each workload alone on each pool that holds it */
    for (size_t k = 0; k < g->n && p->gpu_of; k++) {
        uint64_t set = 0;
        for (size_t i = 0; i < ws->n; i++)
            if (index[i] != SIZE_MAX && p->gpu_of[i] == k)
                set |= 1ull << index[i];
        if (set)
            add_column(cg, set, g->use[k].pool);
    }
    for (size_t i = 0; i < cg->n; i++) /* the sets a lone workload has: the rounds add none */
        for (size_t q = 0; q < f->npools; q++)
            if (cg->item[i].group == GROUP_ALONE && holds(cg, q, i))
                add_column(cg, 1ull << i, q);
    for (int round = 0; round < COLGEN_ROUNDS && !ret && cg->work < COLGEN_WORK; round++) {
        bool solved = false;
        ret = solve_round(cg, duals, x, COLGEN_WORK, &solved);
        if (ret || !solved)
            break;
        size_t added;
        double bound = price_round(cg, duals, &added);
        *value = bound > *value ? bound : *value;
        if (!added)
            break;
    }
    /* a plan from the program's solution, when it is cheaper */
    struct cg_column chosen[COLGEN_MAX];
    size_t nchosen = 0;
    if (!ret && p->gpu_of)
        ret = dive(cg, duals, x, chosen, &nchosen);
    double cost = 0;
    for (size_t k = 0; k < nchosen; k++)
        cost += f->pools[chosen[k].pool].price;
    if (!ret && nchosen && cost < p->cost_per_hour - 1e-9)
        ret = adopt(f, ws, index, cg, chosen, nchosen, p, g);
    free(duals);
    free(x);
out:
    free(cg->col);
    free(cg);
    free(index);
    return ret;
}
