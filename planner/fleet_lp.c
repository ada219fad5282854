/* fleet_lp.c - the cost bound of a plan on a fleet of several priced models, as a small linear
 * program, and the GPUs of each pool that its solution buys, which the packing then follows.
 *
 * The program (the primal) buys x[g][i] GPUs of pool i for sharing group g and y[k][i] GPUs
 * of pool i for the lone workloads of class k, at the pools' prices, such that
 *   - for each class k, the GPUs of the pools that can hold class k and larger give group g
 *     the memory of its workloads of class k and larger (a workload never uses a pool whose
 *     GPU is smaller than it), and at least as many GPUs as those workloads need by compute,
 *     tenant places and pairs that cannot share (fleet_demand.gpus);
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
 * Why not GLPK: the programs are small (a row per pool and class, a column per group, class
 * and pool) and need one dense tableau, while libglpk and its five shared libraries would be
 * mapped by every `carve run` start-up, since the planner is linked into the carve binary. */
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
};

enum { LP_OPTIMAL, LP_UNBOUNDED, LP_STALLED };

#define LP_EPS 1e-9
#define LP_MAX_PIVOTS 20000

/* Simplex on the tableau [a | I | rhs] with the objective row below it; Bland's rule (the
 * lowest index enters, ties in the ratio test to the lowest basic index) cannot cycle. On
 * LP_OPTIMAL fills z (the dual solution) and primal (the reduced costs of the slack columns:
 * the primal solution). */
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
        t[r * width + cols] = lp->rhs[r];
        basis[r] = lp->nvars + r;
    }
    double *objrow = &t[m * width];
    for (size_t j = 0; j < lp->nvars; j++)
        objrow[j] = -lp->obj[j];
    int status = LP_STALLED;
    for (int pivots = 0; pivots < LP_MAX_PIVOTS; pivots++) {
        size_t enter = cols;
        for (size_t j = 0; j < cols && enter == cols; j++)
            if (objrow[j] < -LP_EPS)
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
            if (leave == m || ratio < best_ratio - LP_EPS ||
                (ratio <= best_ratio + LP_EPS && basis[r] < basis[leave])) {
                leave = r;
                best_ratio = ratio;
            }
        }
        if (leave == m) {
            status = LP_UNBOUNDED;
            break;
        }
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

/* The value of z once it is exactly feasible: scaled down by the worst ratio of a row's use to
 * its right-hand side (a row at or below zero stays so under scaling), so that floating-point
 * error in the simplex can only lower the bound, never raise it. */
static double feasible_value(const struct dual_lp *lp, double *z)
{
    double scale = 1;
    for (size_t r = 0; r < lp->nrows; r++) {
        double use = 0;
        for (size_t j = 0; j < lp->nvars; j++)
            use += lp->a[r * lp->nvars + j] * z[j];
        if (use > lp->rhs[r] && use > 0)
            scale = scale < lp->rhs[r] / use ? scale : lp->rhs[r] / use;
    }
    double value = 0;
    for (size_t j = 0; j < lp->nvars; j++)
        value += lp->obj[j] * z[j] * scale;
    return value > 0 ? value * (1 - 1e-12) : 0;
}

/* What each primal variable is: a row of the dual. */
struct primal_var {
    int kind; /* 0: shared GPUs of group `who', 1: lone GPUs of class `who' */
    size_t who, pool;
};

/* Builds the dual of the program above and solves it; limited: whether the pools' counts
 * hold. Returns LP_OPTIMAL, LP_UNBOUNDED (no purchase within the counts), LP_STALLED, or
 * -ENOMEM. */
static int solve(const struct fleet *f, const struct fleet_demand *d, uint64_t max_mem,
                 bool limited, struct fleet_lp_plan *out)
{
    /* dual variables: per group and class a memory price and a GPU price, per class a lone
       workload's price, per pool with a count its rent */
    size_t mem_var[FLEET_GROUPS][FLEET_MAX_POOLS], gpu_var[FLEET_GROUPS][FLEET_MAX_POOLS];
    size_t lone_var[FLEET_MAX_POOLS], rent_var[FLEET_MAX_POOLS];
    const size_t none = SIZE_MAX;
    size_t nvars = 0;
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        for (size_t k = 0; k < d->nclass; k++) {
            mem_var[g][k] = d->memory[g][k] > 0 ? nvars++ : none;
            gpu_var[g][k] = d->gpus[g][k] > 0 ? nvars++ : none;
        }
    for (size_t k = 0; k < d->nclass; k++)
        lone_var[k] = d->lone[k] ? nvars++ : none;
    for (size_t i = 0; i < f->npools; i++)
        rent_var[i] = limited && f->pools[i].count != FLEET_UNLIMITED ? nvars++ : none;

    struct primal_var rows[FLEET_GROUPS * FLEET_MAX_POOLS + FLEET_MAX_POOLS * FLEET_MAX_POOLS];
    size_t nrows = 0;
    for (size_t g = 0; g < FLEET_GROUPS; g++) {
        bool any = false;
        for (size_t k = 0; k < d->nclass; k++)
            any |= mem_var[g][k] != none || gpu_var[g][k] != none;
        for (size_t i = 0; i < f->npools && any; i++)
            rows[nrows++] = (struct primal_var){0, g, i};
    }
    for (size_t k = 0; k < d->nclass; k++)
        for (size_t i = 0; i < f->npools && lone_var[k] != none; i++)
            if (f->pools[i].memory_mib >= d->class_mib[k])
                rows[nrows++] = (struct primal_var){1, k, i};

    struct dual_lp lp = {nvars, nrows, calloc(nrows * nvars + 1, sizeof(double)),
                         calloc(nrows + 1, sizeof(double)), calloc(nvars + 1, sizeof(double))};
    double *z = calloc(nvars + 1, sizeof(double)), *primal = calloc(nrows + 1, sizeof(double));
    int status = -ENOMEM;
    if (!lp.a || !lp.rhs || !lp.obj || !z || !primal)
        goto out;
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        for (size_t k = 0; k < d->nclass; k++) {
            /* memory in units of the largest GPU, so that every number is near one */
            if (mem_var[g][k] != none)
                lp.obj[mem_var[g][k]] = d->memory[g][k] / (double)max_mem;
            if (gpu_var[g][k] != none)
                lp.obj[gpu_var[g][k]] = d->gpus[g][k];
        }
    for (size_t k = 0; k < d->nclass; k++)
        if (lone_var[k] != none)
            lp.obj[lone_var[k]] = (double)d->lone[k];
    for (size_t i = 0; i < f->npools; i++)
        if (rent_var[i] != none)
            lp.obj[rent_var[i]] = -(double)f->pools[i].count;
    for (size_t r = 0; r < nrows; r++) {
        const struct fleet_pool *pool = &f->pools[rows[r].pool];
        double *a = &lp.a[r * nvars];
        lp.rhs[r] = pool->price;
        if (rent_var[rows[r].pool] != none)
            a[rent_var[rows[r].pool]] = -1;
        if (rows[r].kind == 1) {
            a[lone_var[rows[r].who]] = 1;
            continue;
        }
        /* a GPU of this pool serves every class it can hold */
        for (size_t k = 0; k < d->nclass; k++) {
            if (pool->memory_mib < d->class_mib[k])
                continue;
            if (mem_var[rows[r].who][k] != none)
                a[mem_var[rows[r].who][k]] = (double)pool->memory_mib / (double)max_mem;
            if (gpu_var[rows[r].who][k] != none)
                a[gpu_var[rows[r].who][k]] = 1;
        }
    }
    status = simplex(&lp, z, primal);
    if (status != LP_OPTIMAL)
        goto out;
    out->cost = feasible_value(&lp, z);
    out->within_fleet = limited;
    memset(out->shared, 0, sizeof(out->shared));
    memset(out->lone, 0, sizeof(out->lone));
    for (size_t r = 0; r < nrows; r++) {
        if (rows[r].kind == 0)
            out->shared[rows[r].who][rows[r].pool] = primal[r];
        else
            out->lone[rows[r].who][rows[r].pool] = primal[r];
    }
out:
    free(lp.a);
    free(lp.rhs);
    free(lp.obj);
    free(z);
    free(primal);
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

/* The same solver for another program (fleet_mig.c's): the primal given row by row as
 * a.x >= demand, x >= 0, minimising cost.x with cost >= 0, solved as its dual. */
int fleet_cover_solve(const struct fleet_cover_lp *c, double *x, double *value, bool *solved)
{
    struct dual_lp lp = {c->nrows, c->nvars, calloc(c->nrows * c->nvars + 1, sizeof(double)),
                         calloc(c->nvars + 1, sizeof(double)), calloc(c->nrows + 1, sizeof(double))};
    double *z = calloc(c->nrows + 1, sizeof(double));
    int ret = -ENOMEM;
    *solved = false;
    *value = 0;
    if (!lp.a || !lp.rhs || !lp.obj || !z)
        goto out;
    /* the dual's rows are the primal's variables: the transpose */
    for (size_t r = 0; r < c->nrows; r++)
        for (size_t j = 0; j < c->nvars; j++)
            lp.a[j * c->nrows + r] = c->a[r * c->nvars + j];
    memcpy(lp.rhs, c->cost, c->nvars * sizeof(double));
    memcpy(lp.obj, c->demand, c->nrows * sizeof(double));
    int status = simplex(&lp, z, x);
    ret = status < 0 ? status : 0;
    if (status == LP_OPTIMAL) {
        *value = feasible_value(&lp, z);
        *solved = true;
    }
out:
    free(lp.a);
    free(lp.rhs);
    free(lp.obj);
    free(z);
    return ret;
}
