/* fleet_simplex.c - a small linear program solved as it is (the primal), by the simplex method
 * on a dense tableau that stays between solves, so that columns can be added to a solved
 * program and the next solve start from the last basis: what column generation
 * (fleet_colgen.c) does every round.
 *
 * Why not fleet_lp.c's solver: it solves a covering program as its dual, whose rows are the
 * program's columns. The sets' program has a few dozen rows and up to 1,200 columns, so each
 * of its pivots updated 1,200 x 1,300 entries, and every round started again from zero: on 64
 * workloads the rounds ran out of their budget (2e8 entries) before the program was solved.
 * Here a pivot updates rows x columns (about 70 x 1,300), and a round that adds a few columns
 * takes a few pivots.
 *
 * The program: minimise cost.x over x >= 0, each row either `>=' or `<=' its right-hand side
 * (>= 0). The first basis is a column of the identity per row: a slack (cost 0) for a `<=' row,
 * an artificial one (cost big, the big-M method) for a `>=' row, whose surplus column comes
 * next. An artificial column still in the basis at the optimum means the program as written
 * has no solution (or big is too small); the caller's bound does not depend on that (it takes
 * the duals, whatever they are, into a bound that holds: fleet_colgen.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define SIMPLEX_EPS 1e-9
#define SIMPLEX_MAX_PIVOTS 20000
/* pivots in a row that do not move before Bland's rule takes over (as fleet_lp.c's) */
#define SIMPLEX_DEGENERATE_RUN 50

struct fleet_simplex {
    size_t m;        /* rows */
    size_t ncols;    /* columns so far: m of the first basis, the surplus ones, then the caller's */
    size_t first;    /* the caller's first column */
    size_t cap;      /* columns the tableau has room for */
    double *t;       /* (m + 1) x (cap + 1), row-major: the last row the reduced costs, the
                        last column the right-hand side */
    double *cost;    /* per column */
    size_t *basis;   /* per row, its basic column */
};

static double *at(const struct fleet_simplex *s, size_t r, size_t j)
{
    return &s->t[r * (s->cap + 1) + j];
}

struct fleet_simplex *fleet_simplex_new(size_t rows, const bool *at_least, const double *rhs,
                                        size_t columns, double big)
{
    size_t surplus = 0;
    for (size_t r = 0; r < rows; r++)
        surplus += at_least[r];
    struct fleet_simplex *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->m = rows;
    s->first = rows + surplus;
    s->cap = s->first + columns;
    s->t = calloc((rows + 1) * (s->cap + 1), sizeof(double));
    s->cost = calloc(s->cap + 1, sizeof(double));
    s->basis = malloc((rows + 1) * sizeof(size_t));
    if (!s->t || !s->cost || !s->basis) {
        fleet_simplex_free(s);
        return NULL;
    }
    size_t next = rows;
    for (size_t r = 0; r < rows; r++) {
        *at(s, r, r) = 1;
        *at(s, r, s->cap) = rhs[r];
        s->basis[r] = r;
        s->cost[r] = at_least[r] ? big : 0;
        if (!at_least[r])
            continue;
        /* the artificial column's cost in the basis: the reduced costs start at c - big a */
        *at(s, r, next) = -1;
        *at(s, rows, next) = big;
        next++;
    }
    s->ncols = s->first;
    return s;
}

void fleet_simplex_free(struct fleet_simplex *s)
{
    if (!s)
        return;
    free(s->t);
    free(s->cost);
    free(s->basis);
    free(s);
}

/* The dual value of row r: the cost of its first-basis column less that column's reduced cost
 * (the first basis is the identity, so its columns in the tableau are the basis's inverse). */
static double dual_of(const struct fleet_simplex *s, size_t r)
{
    return s->cost[r] - *at(s, s->m, r);
}

long fleet_simplex_add(struct fleet_simplex *s, const size_t *rows, size_t nrows, double cost,
                       double *work)
{
    if (s->ncols == s->cap)
        return -1;
    size_t j = s->ncols++;
    s->cost[j] = cost;
    double reduced = cost;
    for (size_t k = 0; k < nrows; k++)
        reduced -= dual_of(s, rows[k]);
    for (size_t r = 0; r < s->m; r++) {
        double v = 0;
        for (size_t k = 0; k < nrows; k++)
            v += *at(s, r, rows[k]);
        *at(s, r, j) = v;
    }
    *at(s, s->m, j) = reduced;
    if (work)
        *work += (double)(s->m + 1) * (double)nrows;
    return (long)(j - s->first);
}

/* row -= factor prow over n entries (two rows of the tableau), four at a time in pairs: each
 * entry comes out as one at a time, bit for bit (same plans), for 10-15% less time on lists of
 * 250 (the pivots' updates are most of the simplex's time) */
static void row_sub(double *row, const double *prow, double factor, size_t n)
{
    typedef double pair __attribute__((vector_size(16)));
    const pair f = {factor, factor};
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        pair a, b, c, d;
        memcpy(&a, row + j, sizeof(a));
        memcpy(&c, row + j + 2, sizeof(c));
        memcpy(&b, prow + j, sizeof(b));
        memcpy(&d, prow + j + 2, sizeof(d));
        a -= f * b;
        c -= f * d;
        memcpy(row + j, &a, sizeof(a));
        memcpy(row + j + 2, &c, sizeof(c));
    }
    for (; j < n; j++)
        row[j] -= factor * prow[j];
}

int fleet_simplex_solve(struct fleet_simplex *s, double *work, double work_limit)
{
    size_t m = s->m, n = s->ncols, rhs = s->cap;
    double *d = at(s, m, 0);
    int stuck = 0;
    for (int pivots = 0; pivots < SIMPLEX_MAX_PIVOTS; pivots++) {
        if (work && *work > work_limit)
            return FLEET_SIMPLEX_STALLED;
        bool bland = stuck >= SIMPLEX_DEGENERATE_RUN;
        size_t enter = n;
        for (size_t j = 0; j < n && !(bland && enter < n); j++)
            if (d[j] < -SIMPLEX_EPS && (enter == n || d[j] < d[enter]))
                enter = j;
        if (enter == n)
            return FLEET_SIMPLEX_OPTIMAL;
        size_t leave = m;
        double best = 0;
        for (size_t r = 0; r < m; r++) {
            double coef = *at(s, r, enter);
            if (coef <= SIMPLEX_EPS)
                continue;
            double ratio = *at(s, r, rhs) / coef;
            bool tie = leave < m && ratio <= best + SIMPLEX_EPS;
            if (leave == m || ratio < best - SIMPLEX_EPS ||
                (tie && (bland ? s->basis[r] < s->basis[leave] : coef > *at(s, leave, enter)))) {
                leave = r;
                best = ratio;
            }
        }
        if (leave == m) /* no cost is negative: only rounding makes a ray */
            return FLEET_SIMPLEX_STALLED;
        stuck = best <= SIMPLEX_EPS ? stuck + 1 : 0;
        double *prow = at(s, leave, 0), pv = prow[enter];
        for (size_t j = 0; j < n; j++)
            prow[j] /= pv;
        prow[rhs] /= pv;
        for (size_t r = 0; r <= m; r++) {
            double *row = at(s, r, 0), factor = row[enter];
            if (r == leave || factor == 0)
                continue;
            row_sub(row, prow, factor, n);
            row[rhs] -= factor * prow[rhs];
            if (row[rhs] < 0 && row[rhs] > -SIMPLEX_EPS && r < m)
                row[rhs] = 0;
        }
        s->basis[leave] = enter;
        if (work)
            *work += (double)(m + 1) * (double)(n + 1);
    }
    return FLEET_SIMPLEX_STALLED;
}

void fleet_simplex_duals(const struct fleet_simplex *s, double *duals)
{
    for (size_t r = 0; r < s->m; r++)
        duals[r] = dual_of(s, r);
}

void fleet_simplex_values(const struct fleet_simplex *s, double *x)
{
    memset(x, 0, (s->ncols - s->first) * sizeof(*x));
    for (size_t r = 0; r < s->m; r++)
        if (s->basis[r] >= s->first)
            x[s->basis[r] - s->first] = *at(s, r, s->cap) > 0 ? *at(s, r, s->cap) : 0;
}

bool fleet_simplex_artificial(const struct fleet_simplex *s)
{
    for (size_t r = 0; r < s->m; r++)
        if (s->basis[r] < s->m && s->cost[s->basis[r]] > 0 && *at(s, r, s->cap) > SIMPLEX_EPS)
            return true;
    return false;
}
