/* fleet_lp.c - the cost bound of a plan on a fleet of several priced models, as a small linear
 * program, and the GPUs of each pool that its solution buys, which the packing then follows.
 *
 * The program (the primal) buys x[g][i] GPUs of pool i for sharing group g and y[k][i] GPUs
 * of pool i for the lone workloads of class k, at the pools' prices, and assigns the memory
 * and the count of each group's workloads, band by band (fleet.h), to the pools whose GPU holds
 * the band, such that
 *   - for each class k, group g has at least as many GPUs of the pools that can hold class k
 *     and larger as its workloads of class k and larger need by compute, tenant places and
 *     pairs that cannot share (fleet_demand.gpus);
 *   - a pool's GPUs hold the memory assigned to them, at most one workload above half of the
 *     GPU each (the reason for the bands: memory-heavy workloads on L4s and T4s go one to a
 *     GPU, which memory alone does not see), and at most `slots' workloads each; the memory of
 *     the n workloads of a band on a pool lies between that of the band's n smallest and n
 *     largest (group_rows says why each row holds);
 *   - each lone workload of class k has a GPU of a pool that holds it;
 *   - no pool gives more GPUs than it has.
 * Every plan on the fleet is such a purchase, so the least cost is a lower bound. It is solved
 * as its dual (which starts feasible at zero: no phase one) by the simplex method with Bland's
 * rule; the dual solution is scaled until it is exactly feasible before its value is taken, so
 * rounding cannot lift the bound above the optimum. When no purchase within the pools' counts
 * exists (the fleet is too small even in fractions), or when the plan itself goes beyond the
 * fleet, the counts are lifted: the bound is then the least any plan costs that buys GPUs of
 * these models at these prices.
 *
 * Why not GLPK: the programs are small (on a fleet of three pools about 70 columns and 250 rows;
 * a fleet of many pools drops the counts, fleet_bound.c) and need one dense tableau, while
 * libglpk and its five shared libraries would be mapped by every `carve run` start-up, since the
 * planner is linked into the carve binary. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

/* The dual: maximise obj.z subject to rows of a.z <= rhs, z >= 0, rhs >= 0. */
struct dual_lp {
    size_t nvars, nrows;
    double *a;   /* nrows x nvars, row-major */
    double *rhs; /* the primal variable's price */
    double *obj;
    bool bland_only; /* Bland's rule throughout (fleet_mig.c's program, as it was tuned) */
    double perturb;  /* rhs r raised by perturb times 1 to 2, in the tableau only (cover_solve) */
    double *work;    /* optional: adds the tableau entries each pivot updates */
    double work_limit; /* with work: the simplex gives up (LP_STALLED) past it */
};

enum { LP_OPTIMAL, LP_UNBOUNDED, LP_STALLED };

#define LP_EPS 1e-9
#define LP_MAX_PIVOTS 20000

/* Simplex on the tableau [a | I | rhs] with the objective row below it. The column of the most
 * negative reduced cost enters (Dantzig's rule: few pivots), ties in the ratio test going to
 * the largest pivot (the steadiest numerically); after LP_DEGENERATE_RUN pivots in a row that
 * do not move (the bound's program is highly degenerate: its unpriced columns put zeros on the
 * right), Bland's rule takes over (the lowest index enters, ties to the lowest basic index),
 * which cannot cycle, until a pivot moves again (Bland's rule alone stalled on the bound's
 * program: 20,000 pivots of rounding noise on 100 rows). On LP_OPTIMAL fills z (the dual solution)
 * and primal (the reduced costs of the slack columns: the primal solution). */
#define LP_DEGENERATE_RUN 50
static int simplex(const struct dual_lp *lp, double *z, double *primal)
{
    size_t cols = lp->nvars + lp->nrows, width = cols + 1, m = lp->nrows;
    double *t = calloc((m + 1) * width, sizeof(*t));
    size_t *basis = malloc((m ? m : 1) * sizeof(*basis));
    if (!t || !basis) {
        free(t);
        free(basis);
        return -ENOMEM;
    }
    for (size_t r = 0; r < m; r++) {
        memcpy(&t[r * width], &lp->a[r * lp->nvars], lp->nvars * sizeof(*t));
        t[r * width + lp->nvars + r] = 1;
        t[r * width + cols] = lp->rhs[r] + lp->perturb * (double)(1000 + r * 7919 % 1000) / 1000;
        basis[r] = lp->nvars + r;
    }
    double *objrow = &t[m * width];
    for (size_t j = 0; j < lp->nvars; j++)
        objrow[j] = -lp->obj[j];
    int status = LP_STALLED;
    int stuck = lp->bland_only ? LP_DEGENERATE_RUN : 0;
    for (int pivots = 0; pivots < LP_MAX_PIVOTS; pivots++) {
        if (lp->work && *lp->work > lp->work_limit)
            break; /* LP_STALLED */
        bool bland = stuck >= LP_DEGENERATE_RUN;
        size_t enter = cols;
        for (size_t j = 0; j < cols && !(bland && enter < cols); j++)
            if (objrow[j] < -LP_EPS && (enter == cols || objrow[j] < objrow[enter]))
                enter = j;
        if (enter == cols) {
            status = LP_OPTIMAL;
            break;
        }
        size_t leave = m;
        double best_ratio = 0;
        for (size_t r = 0; r < m; r++) {
            double coef = t[r * width + enter];
            if (coef <= LP_EPS)
                continue;
            double ratio = t[r * width + cols] / coef;
            bool tie = leave < m && ratio <= best_ratio + LP_EPS;
            if (leave == m || ratio < best_ratio - LP_EPS ||
                (tie && (bland ? basis[r] < basis[leave] : coef > t[leave * width + enter]))) {
                leave = r;
                best_ratio = ratio;
            }
        }
        if (leave == m) {
            status = LP_UNBOUNDED;
            break;
        }
        stuck = best_ratio <= LP_EPS || lp->bland_only ? stuck + 1 : 0;
        double *prow = &t[leave * width];
        double pv = prow[enter];
        for (size_t j = 0; j < width; j++)
            prow[j] /= pv;
        for (size_t r = 0; r <= m; r++) {
            double *row = &t[r * width];
            double factor = row[enter];
            if (r == leave || factor == 0)
                continue;
            for (size_t j = 0; j < width; j++)
                row[j] -= factor * prow[j];
        }
        basis[leave] = enter;
        if (lp->work)
            *lp->work += (double)(m + 1) * (double)width;
    }
    if (status == LP_OPTIMAL) {
        memset(z, 0, lp->nvars * sizeof(*z));
        for (size_t r = 0; r < m; r++)
            if (basis[r] < lp->nvars)
                z[basis[r]] = t[r * width + cols] > 0 ? t[r * width + cols] : 0;
        for (size_t r = 0; r < m; r++)
            primal[r] = objrow[lp->nvars + r] > 0 ? objrow[lp->nvars + r] : 0;
    }
    free(t);
    free(basis);
    return status;
}

static double row_use(const struct dual_lp *lp, const double *z, size_t r)
{
    double use = 0;
    for (size_t j = 0; j < lp->nvars; j++)
        use += lp->a[r * lp->nvars + j] * z[j];
    return use;
}

/* A value that no primal solution beats, from a dual solution z that floating-point error in
 * the simplex may have left a little infeasible. For every primal x >= 0 with a.x >= b, and
 * z >= 0: b.z <= (a.x).z = sum over rows r of the dual of use_r(z) x_r. Where a row is
 * exceeded (use_r > rhs_r, the primal variable's price), either
 *   - z is scaled down by rhs_r / use_r (a row at or below zero stays so under scaling), or,
 *   - for a primal variable with a known upper bound U_r on every solution the bound must hold
 *     for (upper, may be NULL), the excess (use_r - rhs_r) U_r is taken off the value: this
 *     repairs rows whose right-hand side is zero (unpriced variables), which no scaling can.
 * So the bound can only be lowered by rounding, never raised. */
static double feasible_value(const struct dual_lp *lp, const double *z, const double *upper)
{
    double scale = 1, excess = 0;
    for (size_t r = 0; r < lp->nrows; r++) {
        double use = row_use(lp, z, r);
        if (use > lp->rhs[r] && use > 0 && !(upper && upper[r] >= 0))
            scale = scale < lp->rhs[r] / use ? scale : lp->rhs[r] / use;
    }
    for (size_t r = 0; r < lp->nrows && upper; r++) {
        double use = row_use(lp, z, r) * scale;
        if (upper[r] >= 0 && use > lp->rhs[r])
            excess += (use - lp->rhs[r]) * upper[r];
    }
    double value = -excess;
    for (size_t j = 0; j < lp->nvars; j++)
        value += lp->obj[j] * z[j] * scale;
    return value > 0 ? value * (1 - 1e-12) : 0;
}

/* The bound's program is so degenerate (its unpriced columns put zeros on the right) that the
 * simplex can drift, in rounding, to a basis that reads as singular, from which a column shows
 * no positive entry: the dual unbounded, the program without a solution, where CBC solves it.
 * MPS's program on the benchmark's list on H100 + L4 + T4 (100,000 workloads, and 5,000 on a
 * fleet a twentieth of its size) then read as having no purchase within the pools' counts,
 * though the plan is one, and its bound was taken with the counts lifted: $15,460 where CBC
 * finds $20,951, 36% below the plan. So a program (the cost bound's, and each branch of the
 * whole-GPU search, bb_solve: one dropped as empty though CBC solves it put the time-slicing
 * bound on 200 workloads at $42.71, above a plan of $42.52) that reads as unbounded is solved
 * once more with every
 * right-hand side raised by a different amount of 1e-7 to 2e-7 (prices are cents to dollars),
 * which breaks the ties that degeneracy is made of; its solution is taken against the program
 * as it is (feasible_value), so the bound stays a bound, a hair lower. Raising a price leaves
 * which purchases hold the demand as they were: a program truly without solution stays so. */
#define LP_PERTURB 1e-7

/* A covering program (a.x >= demand, x >= 0, minimising cost.x with cost >= 0) solved as its
 * dual; the dual's rows are the primal's variables. Returns the simplex's status (LP_UNBOUNDED:
 * the primal has no solution), or -ENOMEM; *value only on LP_OPTIMAL. */
static int cover_solve(const struct fleet_cover_lp *c, bool bland_only, double perturb, double *x,
                       double *value)
{
    struct dual_lp lp = {c->nrows, c->nvars, calloc(c->nrows * c->nvars + 1, sizeof(double)),
                         calloc(c->nvars + 1, sizeof(double)), calloc(c->nrows + 1, sizeof(double)),
                         bland_only, perturb, c->work, c->work_limit};
    double *z = calloc(c->nrows + 1, sizeof(double));
    int status = -ENOMEM;
    if (!lp.a || !lp.rhs || !lp.obj || !z)
        goto out;
    for (size_t r = 0; r < c->nrows; r++)
        for (size_t j = 0; j < c->nvars; j++)
            lp.a[j * c->nrows + r] = c->a[r * c->nvars + j];
    memcpy(lp.rhs, c->cost, c->nvars * sizeof(double));
    memcpy(lp.obj, c->demand, c->nrows * sizeof(double));
    status = simplex(&lp, z, x);
    if (status == LP_OPTIMAL)
        *value = feasible_value(&lp, z, c->upper);
out:
    free(lp.a);
    free(lp.rhs);
    free(lp.obj);
    free(z);
    return status;
}

/* The program in covering form, built row by row: its variables are numbered first (nvars),
 * then each row is appended with its demand. */
struct program {
    size_t nvars, nrows, cap;
    double *a, *demand, *cost;
};

static double *new_row(struct program *pg, double demand)
{
    pg->demand[pg->nrows] = demand;
    return &pg->a[pg->nrows++ * pg->nvars];
}

/* The columns of the program: GPUs of each pool for each group (x) and for the lone workloads
 * of each class (y); per group, band and pool the memory (m, in units of the largest GPU) and
 * the count (n) of the band's workloads that the pool's GPUs hold. */
#define NO_VAR SIZE_MAX
struct program_vars {
    size_t shared[FLEET_GROUPS][FLEET_MAX_POOLS];
    size_t lone[FLEET_MAX_POOLS][FLEET_MAX_POOLS];
    size_t memory[FLEET_GROUPS][FLEET_BANDS][FLEET_MAX_POOLS];
    size_t count[FLEET_GROUPS][FLEET_BANDS][FLEET_MAX_POOLS];
};

static uint64_t band_floor(const struct fleet_demand *d, size_t b)
{
    return b ? d->band_mib[b - 1] : 0;
}

static void number_vars(const struct fleet *f, const struct fleet_demand *d,
                        struct program_vars *v, struct program *pg)
{
    size_t n = 0;
    memset(v, 0xff, sizeof(*v)); /* NO_VAR everywhere */
    for (size_t g = 0; g < FLEET_GROUPS; g++) {
        bool any = d->gpus[g][0] > 0;
        for (size_t b = 0; b < d->nband; b++)
            any |= d->band[g][b].count > 0;
        for (size_t i = 0; i < f->npools && any; i++)
            v->shared[g][i] = n++;
        for (size_t b = 0; b < d->nband && any; b++)
            for (size_t i = 0; i < f->npools && d->band[g][b].count > 0; i++) {
                if (f->pools[i].memory_mib < d->band_mib[b])
                    continue;
                v->memory[g][b][i] = n++;
                if (d->counted)
                    v->count[g][b][i] = n++;
            }
    }
    for (size_t k = 0; k < d->nclass; k++)
        for (size_t i = 0; i < f->npools && d->lone[k]; i++)
            if (f->pools[i].memory_mib >= d->class_mib[k])
                v->lone[k][i] = n++;
    pg->nvars = n;
    pg->nrows = 0;
    pg->cap = FLEET_GROUPS * (d->nclass + 2 * d->nband + (3 + FLEET_PAIR_LIMITS) * f->npools +
                              2 * FLEET_TANGENTS * d->nband * f->npools) +
              d->nclass + f->npools + 1; /* + 1: fleet_cost_bound_whole's floor */
}

/* Pool i's GPUs against a pair limit k (2 <= k <= C/2, C its memory): a workload above C - k
 * cannot share a GPU with one of k or more (together more than C), nor with one above C/2
 * (C - k >= C/2). So on a GPU that holds such a workload, only workloads below k join it;
 * count that GPU as full (C) and the workloads below k as nothing. Any other GPU holds at most
 * C of workloads of k or more. Summed over the pool's GPUs:
 *     C x >= C (number above C - k) + (memory of those of k up to C - k).
 * A band counts as above C - k only if all of it is, and by its memory only if all of it is
 * k or more (else not at all), which keeps the row valid whatever the cuts. k = 1 would be the
 * memory row, k = C/2 the half row with the memory of the workloads at exactly C/2 added. */
static void pair_limit_row(const struct fleet *f, const struct fleet_demand *d, size_t g,
                           size_t i, uint64_t k, const struct program_vars *v, double unit_mib,
                           struct program *pg)
{
    double capacity = (double)f->pools[i].memory_mib / unit_mib;
    double *row = new_row(pg, 0);
    row[v->shared[g][i]] = capacity;
    for (size_t b = 0; b < d->nband; b++) {
        if (v->count[g][b][i] == NO_VAR)
            continue;
        if (band_floor(d, b) >= f->pools[i].memory_mib - k)
            row[v->count[g][b][i]] = -capacity;
        else if (band_floor(d, b) + 1 >= k)
            row[v->memory[g][b][i]] = -1;
    }
}

/* The rows of one sharing group, memory in units of the largest GPU (unit_mib). Why each holds
 * for every plan, with x its GPUs of pool i, m and n the memory and count of the workloads of
 * band b on them:
 *   - by class: its GPUs of the pools that can hold class k and larger number at least
 *     fleet_demand.gpus (compute, tenant places, pairs that cannot share, the L2 bound);
 *   - each band's memory and count are all placed: sum over pools of m (n) is the band's (at
 *     least, in the program: as two opposite rows an equality made the simplex see an
 *     unbounded dual in rounding noise, and placing more is never cheaper, bar the tangents
 *     below, which more count on one pool tightens on the others);
 *   - a pool's GPUs hold the memory placed on them: memory x >= sum of m;
 *   - no two workloads above half of pool i's GPU share one (together they exceed it), and a
 *     band above half of it is all above half: x >= sum of n over those bands;
 *   - a GPU takes at most `slots' tenants: slots x >= sum of n;
 *   - the workloads of a band on a pool are some n of the band, whose memory lies between
 *     that of its n smallest and its n largest. The n largest hold top(n), a concave function
 *     of n (each one more adds a smaller workload), so top lies below its tangent at any t:
 *     top(n) <= top(t) + s(n - t), s the (t+1)-th largest (for n > t each added workload is
 *     at most s; for n < t each removed one is at least s). Likewise the n smallest hold
 *     bot(n) >= bot(t) + r(n - t), r the (t+1)-th smallest. At t = 0 these say each workload
 *     is at most the band's largest and at least its smallest. */
static void group_rows(const struct fleet *f, const struct fleet_demand *d, size_t g,
                       const struct program_vars *v, double unit_mib, struct program *pg)
{
    if (v->shared[g][0] == NO_VAR)
        return;
    for (size_t k = 0; k < d->nclass; k++) {
        if (d->gpus[g][k] <= 0)
            continue;
        double *row = new_row(pg, d->gpus[g][k]);
        for (size_t i = 0; i < f->npools; i++)
            if (f->pools[i].memory_mib >= d->class_mib[k])
                row[v->shared[g][i]] = 1;
    }
    for (size_t b = 0; b < d->nband; b++) {
        const struct fleet_band_demand *bd = &d->band[g][b];
        if (bd->count <= 0)
            continue;
        double *placed = new_row(pg, bd->memory_mib / unit_mib);
        for (size_t i = 0; i < f->npools; i++)
            if (v->memory[g][b][i] != NO_VAR)
                placed[v->memory[g][b][i]] = 1;
        if (!d->counted)
            continue;
        placed = new_row(pg, bd->count);
        for (size_t i = 0; i < f->npools; i++)
            if (v->count[g][b][i] != NO_VAR)
                placed[v->count[g][b][i]] = 1;
        for (size_t i = 0; i < f->npools; i++)
            for (size_t t = 0; t < FLEET_TANGENTS && v->count[g][b][i] != NO_VAR; t++) {
                if (t && bd->at[t] <= bd->at[t - 1])
                    continue;
                size_t mv = v->memory[g][b][i], nv = v->count[g][b][i];
                /* s n - m >= s t - top(t) */
                double *row = new_row(pg, (bd->next_largest_mib[t] * bd->at[t] -
                                           bd->largest_mib[t]) / unit_mib);
                row[nv] = bd->next_largest_mib[t] / unit_mib;
                row[mv] = -1;
                /* m - r n >= bot(t) - r t */
                row = new_row(pg, (bd->smallest_mib[t] - bd->next_smallest_mib[t] * bd->at[t]) /
                                      unit_mib);
                row[nv] = -bd->next_smallest_mib[t] / unit_mib;
                row[mv] = 1;
            }
    }
    for (size_t i = 0; i < f->npools; i++) {
        const struct fleet_pool *pool = &f->pools[i];
        double *row = new_row(pg, 0);
        row[v->shared[g][i]] = (double)pool->memory_mib / unit_mib;
        for (size_t b = 0; b < d->nband; b++)
            if (v->memory[g][b][i] != NO_VAR)
                row[v->memory[g][b][i]] = -1;
        if (!d->counted)
            continue;
        double *big = new_row(pg, 0), *places = new_row(pg, 0);
        big[v->shared[g][i]] = 1;
        places[v->shared[g][i]] = d->slots;
        for (size_t b = 0; b < d->nband; b++) {
            if (v->count[g][b][i] == NO_VAR)
                continue;
            if (band_floor(d, b) >= pool->memory_mib / 2)
                big[v->count[g][b][i]] = -1;
            places[v->count[g][b][i]] = -1;
        }
        for (size_t j = 0; j < d->npair_limit[i]; j++)
            pair_limit_row(f, d, g, i, d->pair_limit[i][j], v, unit_mib, pg);
    }
}

/* The most any plan puts in each unpriced column: a band's memory and count on one pool are at
 * most the band's (negative for the priced columns: none needed). */
static void unpriced_upper(const struct fleet *f, const struct fleet_demand *d,
                           const struct program_vars *v, double unit_mib, size_t nvars,
                           double *upper)
{
    for (size_t j = 0; j < nvars; j++)
        upper[j] = -1;
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        for (size_t b = 0; b < d->nband; b++)
            for (size_t i = 0; i < f->npools; i++) {
                if (v->memory[g][b][i] != NO_VAR)
                    upper[v->memory[g][b][i]] = d->band[g][b].memory_mib / unit_mib;
                if (v->count[g][b][i] != NO_VAR)
                    upper[v->count[g][b][i]] = d->band[g][b].count;
            }
}

/* The program above, in covering form: pg and upper (nvars) allocated here, freed by the
 * caller (also on failure); limited: whether the pools' counts hold. 0, or -ENOMEM. */
static int build_program(const struct fleet *f, const struct fleet_demand *d, uint64_t max_mem,
                         bool limited, struct program_vars *v, struct program *pg,
                         double **upper)
{
    number_vars(f, d, v, pg);
    pg->a = calloc(pg->cap * pg->nvars + 1, sizeof(double));
    pg->demand = calloc(pg->cap + 1, sizeof(double));
    pg->cost = calloc(pg->nvars + 1, sizeof(double));
    *upper = malloc((pg->nvars + 1) * sizeof(double));
    if (!pg->a || !pg->demand || !pg->cost || !*upper)
        return -ENOMEM;
    unpriced_upper(f, d, v, (double)max_mem, pg->nvars, *upper);
    for (size_t i = 0; i < f->npools; i++) {
        for (size_t g = 0; g < FLEET_GROUPS; g++)
            if (v->shared[g][i] != NO_VAR)
                pg->cost[v->shared[g][i]] = f->pools[i].price;
        for (size_t k = 0; k < d->nclass; k++)
            if (v->lone[k][i] != NO_VAR)
                pg->cost[v->lone[k][i]] = f->pools[i].price;
    }
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        group_rows(f, d, g, v, (double)max_mem, pg);
    /* each lone workload has a GPU of a pool that holds it */
    for (size_t k = 0; k < d->nclass; k++) {
        if (!d->lone[k])
            continue;
        double *row = new_row(pg, (double)d->lone[k]);
        for (size_t i = 0; i < f->npools; i++)
            if (v->lone[k][i] != NO_VAR)
                row[v->lone[k][i]] = 1;
    }
    /* no pool gives more GPUs than it has */
    for (size_t i = 0; i < f->npools && limited; i++) {
        if (f->pools[i].count == FLEET_UNLIMITED)
            continue;
        double *row = new_row(pg, -(double)f->pools[i].count);
        for (size_t g = 0; g < FLEET_GROUPS; g++)
            if (v->shared[g][i] != NO_VAR)
                row[v->shared[g][i]] = -1;
        for (size_t k = 0; k < d->nclass; k++)
            if (v->lone[k][i] != NO_VAR)
                row[v->lone[k][i]] = -1;
    }
    return 0;
}

static void free_program(struct program *pg, double *upper)
{
    free(pg->a);
    free(pg->demand);
    free(pg->cost);
    free(upper);
}

/* Builds the program above and solves it; limited: whether the pools' counts hold. Returns
 * LP_OPTIMAL, LP_UNBOUNDED (no purchase within the counts), LP_STALLED, or -ENOMEM. */
static int solve(const struct fleet *f, const struct fleet_demand *d, uint64_t max_mem,
                 bool limited, struct fleet_lp_plan *out)
{
    struct program_vars v;
    struct program pg = {0};
    double *upper = NULL;
    double *x = NULL;
    int status = build_program(f, d, max_mem, limited, &v, &pg, &upper);
    if (status || !(x = calloc(pg.nvars + 1, sizeof(double)))) {
        status = -ENOMEM;
        goto out;
    }
    struct fleet_cover_lp lp = {.nvars = pg.nvars, .nrows = pg.nrows, .a = pg.a,
                                .demand = pg.demand, .cost = pg.cost, .upper = upper,
                                .dantzig = true};
    status = cover_solve(&lp, false, 0, x, &out->cost);
    if (status == LP_UNBOUNDED) /* perhaps not: see LP_PERTURB */
        status = cover_solve(&lp, false, LP_PERTURB, x, &out->cost);
    if (status != LP_OPTIMAL)
        goto out;
    out->within_fleet = limited;
    memset(out->shared, 0, sizeof(out->shared));
    memset(out->lone, 0, sizeof(out->lone));
    memset(out->band_count, 0, sizeof(out->band_count));
    memset(out->band_memory_mib, 0, sizeof(out->band_memory_mib));
    for (size_t i = 0; i < f->npools; i++) {
        for (size_t g = 0; g < FLEET_GROUPS; g++) {
            if (v.shared[g][i] != NO_VAR)
                out->shared[g][i] = x[v.shared[g][i]];
            for (size_t b = 0; b < d->nband && d->counted; b++)
                if (v.count[g][b][i] != NO_VAR) {
                    out->band_count[g][b][i] = x[v.count[g][b][i]];
                    out->band_memory_mib[g][b][i] = x[v.memory[g][b][i]] * (double)max_mem;
                }
        }
        for (size_t k = 0; k < d->nclass; k++)
            if (v.lone[k][i] != NO_VAR)
                out->lone[k][i] = x[v.lone[k][i]];
    }
out:
    free_program(&pg, upper);
    free(x);
    return status;
}

int fleet_cost_bound(const struct fleet *f, const struct fleet_demand *d, bool within_fleet,
                     struct fleet_lp_plan *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t max_mem = 0;
    for (size_t i = 0; i < f->npools; i++)
        max_mem = f->pools[i].memory_mib > max_mem ? f->pools[i].memory_mib : max_mem;
    if (!max_mem)
        return 0;
    int status = within_fleet ? solve(f, d, max_mem, true, out) : LP_UNBOUNDED;
    if (status == LP_UNBOUNDED)
        status = solve(f, d, max_mem, false, out);
    if (status < 0)
        return status;
    out->solved = status == LP_OPTIMAL;
    return 0;
}

int fleet_cover_solve(const struct fleet_cover_lp *c, double *x, double *value, bool *solved)
{
    *value = 0;
    int status = cover_solve(c, !c->dantzig, 0, x, value);
    if (status == LP_UNBOUNDED && c->no_solution) /* perhaps not: see LP_PERTURB */
        status = cover_solve(c, !c->dantzig, LP_PERTURB, x, value);
    if (c->no_solution)
        *c->no_solution = status == LP_UNBOUNDED;
    *solved = status == LP_OPTIMAL;
    return status < 0 ? status : 0;
}

/* ---- the bound with whole GPUs ----
 *
 * Every plan buys a whole number of GPUs of each pool for each sharing group and for the lone
 * workloads of each class: its purchase is a solution of the program above whose priced
 * columns (x and y) are integers. So the least cost over such solutions is a lower bound too,
 * and a tighter one: the fractional purchase may buy 2.4 L4s for a group where any plan buys
 * 3, or 2 and more T4s. It is found by branch and bound, best first: a node is the program
 * with some priced columns held to a range lo <= x_j <= hi (rows x_j >= lo, -x_j >= -hi);
 * the node of least value is split on a column whose value v is fractional into x_j <= floor v
 * and x_j >= ceil v, which between them keep every integer solution of the node. Every whole
 * purchase lies in some open node (or in one dropped as infeasible, which holds none), and a
 * node's value (made exactly feasible, feasible_value) is at most the cost of every solution in
 * it, a child's at least its parent's; so the least value over the open nodes is a lower bound
 * on every plan, at any point of the search. A plan that costs plan_cost is itself such a
 * purchase: no bound above it is ever needed, and the search stops when the least open value
 * reaches it (every plan then costs at least plan_cost: that plan is optimal), or after
 * FLEET_BB_SOLVES programs, or on a node whose program the simplex gave up on (kept at its
 * parent's value). */
#define FLEET_BB_SOLVES 48
/* and at most this much simplex work (tableau entries updated, about 0.3 s on this project's
 * 2-core VM), in all and in any one solve but the root's: 48 solves took 2-3 s per mechanism
 * on some lists of 64 workloads on four pools (a reviewer's, 2026-11-27). The open nodes bound
 * every plan whenever the search stops, and a solve cut short is one the simplex gave up on
 * (its node kept at its parent's value). The root's solve has a budget of its own, larger: cut
 * short, it leaves no bound from the search at all. */
#define FLEET_BB_WORK 3e8
#define FLEET_BB_ROOT_WORK 1e9
/* With a floor (fleet_cost_bound_whole), in all: it runs after the other bounds, on lists of a
 * few dozen (the floor's program on 64 workloads on four pools: 2-6e7 a root solve). */
#define FLEET_BB_FLOOR_WORK 1e8
/* fleet_cover_bound_whole's, in all: fleet_mig.c's program has a few dozen rows and columns
   whatever the list's length */
#define FLEET_BB_COVER_WORK 1e8

struct bb_node {
    double value;
    double *lo, *hi; /* per branch: the range its sum is held to (hi < 0: none) */
    double *x;       /* the node's solution, NULL if the simplex gave up */
};

/* What the search branches on: sums of columns that every plan makes whole numbers (a priced
 * column, or all the columns of one pool), each a row of nvars coefficients. */
struct bb_branches {
    size_t n;
    const double *rows; /* n x nvars, row-major */
    bool bland_only;    /* the simplex's rule (fleet_cover_lp.dantzig, negated) */
};

static double bb_sum(const struct bb_branches *b, size_t j, const double *x, size_t nvars)
{
    double sum = 0;
    for (size_t c = 0; c < nvars; c++)
        sum += b->rows[j * nvars + c] * x[c];
    return sum;
}

/* Solves the program pg with node n's ranges as rows; n->value stays at least its parent's.
 * Returns the simplex's status, or -ENOMEM. */
static int bb_solve(const struct program *pg, const double *upper, const struct bb_branches *b,
                    struct bb_node *n, double *work, double work_limit)
{
    size_t rows = pg->nrows + 2 * b->n, nv = pg->nvars;
    double *a = calloc(rows * nv + 1, sizeof(double));
    double *demand = calloc(rows + 1, sizeof(double));
    int status = -ENOMEM;
    if (!a || !demand)
        goto out;
    memcpy(a, pg->a, pg->nrows * nv * sizeof(double));
    memcpy(demand, pg->demand, pg->nrows * sizeof(double));
    rows = pg->nrows;
    for (size_t j = 0; j < b->n; j++) {
        const double *branch = &b->rows[j * nv];
        if (n->lo[j] > 0) {
            for (size_t c = 0; c < nv; c++)
                a[rows * nv + c] = branch[c];
            demand[rows++] = n->lo[j];
        }
        if (n->hi[j] >= 0) {
            for (size_t c = 0; c < nv; c++)
                a[rows * nv + c] = -branch[c];
            demand[rows++] = -n->hi[j];
        }
    }
    struct fleet_cover_lp lp = {.nvars = nv, .nrows = rows, .a = a, .demand = demand,
                                .cost = pg->cost, .upper = upper, .dantzig = true,
                                .work = work, .work_limit = work_limit};
    double value = 0;
    status = cover_solve(&lp, b->bland_only, 0, n->x, &value);
    if (status == LP_UNBOUNDED) /* perhaps not: see LP_PERTURB */
        status = cover_solve(&lp, b->bland_only, LP_PERTURB, n->x, &value);
    if (status == LP_OPTIMAL)
        n->value = value > n->value ? value : n->value;
out:
    free(a);
    free(demand);
    return status;
}

/* The branch of node n to split on: the most fractional sum; b->n if none is. */
static size_t bb_split(const struct bb_node *n, const struct bb_branches *b, size_t nvars)
{
    size_t best = b->n;
    double best_frac = 1e-6;
    for (size_t j = 0; j < b->n && n->x; j++) {
        double v = bb_sum(b, j, n->x, nvars), frac = v - (double)(uint64_t)v;
        frac = frac < 1 - frac ? frac : 1 - frac;
        if (frac > best_frac) {
            best_frac = frac;
            best = j;
        }
    }
    return best;
}

static struct bb_node *bb_new(size_t nbranches, size_t nvars, const struct bb_node *parent)
{
    struct bb_node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->lo = calloc(nbranches + 1, sizeof(double));
    n->hi = malloc((nbranches + 1) * sizeof(double));
    n->x = calloc(nvars + 1, sizeof(double));
    if (!n->lo || !n->hi || !n->x) {
        free(n->lo);
        free(n->hi);
        free(n->x);
        free(n);
        return NULL;
    }
    for (size_t j = 0; j < nbranches; j++)
        n->hi[j] = -1;
    if (parent) {
        memcpy(n->lo, parent->lo, nbranches * sizeof(double));
        memcpy(n->hi, parent->hi, nbranches * sizeof(double));
        n->value = parent->value;
    }
    return n;
}

static void bb_free(struct bb_node *n)
{
    if (!n)
        return;
    free(n->lo);
    free(n->hi);
    free(n->x);
    free(n);
}

/* The search over the program pg; *value: the least open value, at most plan_cost. */
static int bb_search(const struct program *pg, const double *upper, const struct bb_branches *b,
                     double plan_cost, double root_limit, double work_limit, double *value)
{
    struct bb_node *open[2 * FLEET_BB_SOLVES + 2];
    size_t nopen = 0, nv = pg->nvars;
    int ret = -ENOMEM;
    struct bb_node *root = bb_new(b->n, nv, NULL);
    if (!root)
        return -ENOMEM;
    double work = 0;
    int status = bb_solve(pg, upper, b, root, &work, root_limit);
    if (status != LP_OPTIMAL) { /* no bound from here: the caller keeps its own */
        bb_free(root);
        *value = 0;
        return status < 0 ? status : 0;
    }
    open[nopen++] = root;
    for (int solves = 1; solves + 2 <= FLEET_BB_SOLVES && work < work_limit;) {
        size_t least = 0;
        for (size_t k = 1; k < nopen; k++)
            least = open[k]->value < open[least]->value ? k : least;
        struct bb_node *n = open[least];
        size_t j = bb_split(n, b, nv);
        if (n->value >= plan_cost || j == b->n)
            break; /* every plan costs at least this, or the node's solution is whole */
        open[least] = open[--nopen];
        double v = bb_sum(b, j, n->x, nv);
        struct bb_node *down = bb_new(b->n, nv, n), *up = bb_new(b->n, nv, n);
        if (down && up) {
            down->hi[j] = (double)(uint64_t)v;
            up->lo[j] = (double)(uint64_t)v + 1;
        }
        bb_free(n);
        int sd = down && up ? bb_solve(pg, upper, b, down, &work, work_limit) : -ENOMEM;
        int su = sd >= 0 ? bb_solve(pg, upper, b, up, &work, work_limit) : sd;
        solves += 2;
        if (sd < 0 || su < 0) {
            bb_free(down);
            bb_free(up);
            goto out;
        }
        struct bb_node *kids[2] = {down, up};
        int st[2] = {sd, su};
        for (int c = 0; c < 2; c++) {
            if (st[c] == LP_UNBOUNDED) { /* no purchase in this range (read twice) */
                bb_free(kids[c]);
                continue;
            }
            if (st[c] != LP_OPTIMAL) { /* kept at the parent's value, not split again */
                free(kids[c]->x);
                kids[c]->x = NULL;
            }
            open[nopen++] = kids[c];
        }
        if (!nopen)
            break;
    }
    *value = plan_cost;
    for (size_t k = 0; k < nopen; k++)
        *value = open[k]->value < *value ? open[k]->value : *value;
    ret = 0;
out:
    for (size_t k = 0; k < nopen; k++)
        bb_free(open[k]);
    return ret;
}

int fleet_cost_bound_whole(const struct fleet *f, const struct fleet_demand *d,
                           bool within_fleet, double floor, double plan_cost, double *value)
{
    *value = 0;
    uint64_t max_mem = 0;
    for (size_t i = 0; i < f->npools; i++)
        max_mem = f->pools[i].memory_mib > max_mem ? f->pools[i].memory_mib : max_mem;
    if (!max_mem)
        return 0;
    struct program_vars v;
    struct program pg = {0};
    double *upper = NULL;
    size_t priced[FLEET_GROUPS * FLEET_MAX_POOLS + FLEET_MAX_POOLS * FLEET_MAX_POOLS], npriced = 0;
    int ret = build_program(f, d, max_mem, within_fleet, &v, &pg, &upper);
    if (ret)
        goto out;
    /* every plan costs at least floor: a purchase that costs less is none. The row is the
       cost's own, each price raised by a different millionth or less: a row equal to the
       objective left the simplex so degenerate that the root's solve ran past 1e9 (64
       workloads on four pools); raised, the row still holds for every purchase that costs at
       least floor, so the bound stays one */
    if (floor > 0) {
        double *row = new_row(&pg, floor);
        for (size_t j = 0; j < pg.nvars; j++)
            row[j] = pg.cost[j] * (1 + 1e-6 * (double)(j + 1) / (double)pg.nvars);
    }
    for (size_t i = 0; i < f->npools; i++) {
        for (size_t g = 0; g < FLEET_GROUPS; g++)
            if (v.shared[g][i] != NO_VAR)
                priced[npriced++] = v.shared[g][i];
        for (size_t k = 0; k < d->nclass; k++)
            if (v.lone[k][i] != NO_VAR)
                priced[npriced++] = v.lone[k][i];
    }
    double root_limit = floor > 0 ? FLEET_BB_FLOOR_WORK : FLEET_BB_ROOT_WORK;
    double work_limit = floor > 0 ? FLEET_BB_FLOOR_WORK : FLEET_BB_WORK;
    double *rows = calloc(npriced * pg.nvars + 1, sizeof(double));
    if (!rows) {
        ret = -ENOMEM;
        goto out;
    }
    for (size_t j = 0; j < npriced; j++)
        rows[j * pg.nvars + priced[j]] = 1;
    struct bb_branches b = {npriced, rows, false};
    ret = bb_search(&pg, upper, &b, plan_cost, root_limit, work_limit, value);
    free(rows);
out:
    free_program(&pg, upper);
    return ret;
}

int fleet_cover_bound_whole(const struct fleet_cover_lp *lp, const double *branch_rows,
                            size_t nbranches, double plan_cost, double *value)
{
    *value = 0;
    struct program pg = {lp->nvars, lp->nrows, lp->nrows,
                         malloc(lp->nrows * lp->nvars * sizeof(double) + 1),
                         malloc(lp->nrows * sizeof(double) + 1),
                         malloc(lp->nvars * sizeof(double) + 1)};
    int ret = -ENOMEM;
    if (pg.a && pg.demand && pg.cost) {
        memcpy(pg.a, lp->a, lp->nrows * lp->nvars * sizeof(double));
        memcpy(pg.demand, lp->demand, lp->nrows * sizeof(double));
        memcpy(pg.cost, lp->cost, lp->nvars * sizeof(double));
        struct bb_branches b = {nbranches, branch_rows, !lp->dantzig};
        ret = bb_search(&pg, lp->upper, &b, plan_cost, FLEET_BB_COVER_WORK, FLEET_BB_COVER_WORK,
                        value);
    }
    free_program(&pg, NULL);
    return ret;
}
