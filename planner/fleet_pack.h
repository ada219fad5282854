/* fleet_pack.h - what the files of the shared mechanisms' packing (whole GPUs, time-slicing, MPS,
 * carve slices) share: fleet_pack.c (the whole plan), fleet_firstfit.c and fleet_fill.c (the
 * packers), fleet_choose.c (which packer packs a group) and fleet_bound.c (the lower bounds).
 * Internal to the planner. */
#ifndef CARVE_FLEET_PACK_H
#define CARVE_FLEET_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet.h"

static inline double dmin(double a, double b)
{
    return a < b ? a : b;
}

static inline double dmax(double a, double b)
{
    return a > b ? a : b;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- a mechanism's rules (fleet_pack.c) ---- */

struct mech_rules {
    uint32_t compute_cap;  /* what one shared GPU delivers */
    uint32_t slots;        /* tenants per GPU */
};

enum { GROUP_ALONE = 255 };

/* Which group a workload packs in under mech: GROUP_ALONE for a GPU of its own. Groups never
 * share a GPU. */
int fleet_group_of(int mech, const struct fleet_workload *w, const struct mech_rules *r);

/* The largest memory of the fleet's GPUs. */
uint64_t fleet_max_memory(const struct fleet *f);

/* ---- a group's workloads and the pools its GPUs come from (fleet_pack.c) ---- */

/* A workload of a group, with its sizes beside its key: the packers read them in the keys'
 * order, where the list (88 bytes a workload, in its own order) costs a cache miss each on
 * long lists. Every figure fits 32 bits: keys are at most 2 x FLEET_BP_FULL (a lone
 * workload's, its memory; one by another scale is held at UINT32_MAX), memory at most 1 PiB
 * (2^30 MiB). */
struct sort_key {
    uint32_t key;
    uint32_t index;
    uint32_t memory_mib;
    uint32_t compute_bp;
};

/* The key of workload index of ws, its sizes beside it. */
struct sort_key fleet_sort_key(const struct fleet_workloads *ws, size_t index, uint64_t key);

/* Largest key first, ties in list order (keys at most 2 x FLEET_BP_FULL). */
void fleet_sort_keys(struct sort_key *keys, size_t n);

/* What fleet_choose_pool goes by. */
struct pool_choice {
    uint64_t left[FLEET_MAX_POOLS];  /* GPUs each pool has left */
    double budget[FLEET_MAX_POOLS];  /* GPUs the bound's solution buys for the groups, less
                                        those opened */
    size_t by_size[FLEET_MAX_POOLS]; /* largest memory first; ties cheapest first */
    int only;                        /* >= 0: the pool GPUs come from while it has GPUs left
                                        (a pool's share of the group, pack_by_band) */
    struct sort_key *deferred;       /* with only: where a workload goes when that pool has no
                                        GPU left for it (for the next pool's share), or NULL */
    size_t ndeferred;
    const struct fleet_demand *d;    /* the bands, and the solution's share of each band */
    const double (*band_count)[FLEET_MAX_POOLS]; /* per pool (the group's), or NULL */
    const double (*band_memory_mib)[FLEET_MAX_POOLS]; /* their memory, with band_count */
    double band_cost; /* what the solution's GPUs for the group cost */
    bool exact; /* the split with each band's ends as the solution has them and the limited
                   pools' GPUs filled exactly (pack_by_band_exact) */
    bool small_first; /* the budgets' GPUs opened smallest first (fleet_choose_order) */
    int8_t (*share_packer)[FLEET_MAX_POOLS + 1]; /* per split (exact or not) and share (by_size
                             order, then the rest): the packer its dry runs chose (index in
                             fleet_choose.c's packers[]), -1 unknown; kept from the split's dry
                             run for its packing */
};

/* The workloads of a group still to place, the one at hand included. */
struct still_to_place {
    uint64_t memory_mib, compute_bp, count;
};

/* The pool a group's next GPU comes from, for a workload of memory_mib; -1 when pc->only's
 * share cannot open one for it (it goes to the next share: fleet_defer_to_next_share). */
int fleet_choose_pool(const struct fleet *f, struct pool_choice *pc,
                      const struct still_to_place *rest, uint32_t compute_cap, uint32_t slots,
                      uint64_t memory_mib);
/* A group's totals: all of keys[0..n) still to place. */
struct still_to_place fleet_still_all(const struct fleet_workloads *ws,
                                      const struct sort_key *keys, size_t n);
/* A workload of these sizes is placed, or left to another pool's share: no longer this
 * packing's to place. */
void fleet_still_drop(struct still_to_place *rest, uint64_t memory_mib, uint32_t compute_bp);
/* No pool of this share can open a GPU for key's workload: it goes to the next pool's share. */
void fleet_defer_to_next_share(struct pool_choice *pc, struct still_to_place *rest,
                               struct sort_key key);
/* A workload of these sizes onto GPU u, holding held MiB of it. */
void fleet_gpu_add(struct fleet_gpu_use *u, uint64_t memory_mib, uint32_t compute_bp,
                   uint64_t held);

/* pc ready for a mechanism's groups: every pool's count left, the pools by size (d: the
 * bands, or NULL where no packer splits by them). */
void fleet_pool_choice_init(const struct fleet *f, const struct fleet_demand *d,
                            int8_t (*share_packer)[FLEET_MAX_POOLS + 1], struct pool_choice *pc);
/* The GPUs of a dear pool all of whose tenants a cheaper pool's GPUs hold each, packed again
 * on that pool (with GPUs left) and replaced when that costs less; for each pair of pools, on
 * a plan within the fleet. Then the least filled shared GPUs are emptied into the others'
 * room where they fit, and tenants moved and swapped until GPUs empty (fleet_polish). p->gpu_of
 * must be kept. 0, or -ENOMEM (fleet_repack.c). */
int fleet_repack_cheaper(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                         const struct mech_rules *r, struct fleet_plan *p,
                         struct fleet_gpu_list *g);
/* Tenants moved or swapped between GPUs of the same sharing group where the fuller GPU ends
 * fuller, until no move does (fleet_polish.c); tenant_gpu and g's GPUs follow, and emptied
 * (per GPU of g) says which GPUs it left without tenants, to be given back. How many, or
 * -ENOMEM. */
int fleet_polish(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                 const struct mech_rules *r, uint32_t *tenant_gpu, struct fleet_gpu_list *g,
                 bool *emptied);

/* ---- the packers: a group (keys, largest first) onto GPUs of the pools pc gives ---- */

typedef int packer_fn(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t n, const struct mech_rules *r,
                      struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g);
/* First-fit decreasing over a segment tree of the open GPUs (fleet_firstfit.c). */
packer_fn fleet_pack_group;
/* One GPU at a time, the scarce dimension judged once for the whole group or afresh for each
 * GPU (fleet_fill.c). */
packer_fn fleet_fill_by_group, fleet_fill_by_rest;
/* Whether some pool of the fleet is one whose GPUs are filled exactly (fleet_fill.c). */
bool fleet_some_exact_worth(const struct fleet *f);

/* ---- which packer packs a group (fleet_choose.c) ---- */

/* On groups of a few thousand workloads at most, keys reordered to the best of a few orders
 * near the decreasing one, by first-fit decreasing's dry runs. 0, or -ENOMEM. */
int fleet_improve_order(const struct fleet *f, const struct fleet_workloads *ws,
                        struct sort_key *keys, size_t n, const struct mech_rules *r,
                        const struct pool_choice *pc);
/* *pack: the packer that does best on the group in a dry run. 0, or -ENOMEM. */
int fleet_choose_packer(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        const struct pool_choice *pc, packer_fn **pack);

/* Of the group's order keys, order other (improved here by fleet_improve_order; NULL: none)
 * and keys with the smallest GPU of the budgets opened first (pool_choice.small_first), the one
 * whose best packer does best in a dry run, where the first is more than 1% above what the
 * bound's solution buys for the group: *pack that packer, *won which (ORDER_*; pc->small_first
 * set for it). 0, or -ENOMEM. */
enum { ORDER_KEYS, ORDER_OTHER, ORDER_SMALL_FIRST };

/* The winner's dry run whole (fleet_choose_order), so that the group is not packed again the
 * same way: what it added to the plan, the GPUs it opened (from index 0), the group's
 * workloads' GPUs in that list, and the pool choice after it. A packer's dry run is its
 * packing exactly where it reads nothing of the plan before it and no split's packers
 * (fleet_pack_group, fleet_fill_*); a split that wins is packed again (valid false). */
struct fleet_kept_pack {
    bool valid;
    struct fleet_plan added;     /* gpus, gpus_by_pool, shortage, cost_per_hour, placed */
    struct fleet_gpu_list g;
    uint32_t *gpu_of;            /* per workload of the list, the group's entries only */
    struct pool_choice pc;
};
/* 0, or -ENOMEM. */
int fleet_kept_init(struct fleet_kept_pack *k, size_t nworkloads);
void fleet_kept_free(struct fleet_kept_pack *k);
/* The kept packing of keys[0..n) appended to p and g, and pc set to the choice after it, as
 * if it had been packed there. 0, or -ENOMEM. */
int fleet_kept_adopt(const struct fleet *f, const struct fleet_kept_pack *k,
                     const struct sort_key *keys, size_t n, struct pool_choice *pc,
                     struct fleet_plan *p, struct fleet_gpu_list *g);

/* kept (NULL: none wanted) is left with the winner's dry run where it can stand for the
 * packing (fleet_kept_pack.valid). */
int fleet_choose_order(const struct fleet *f, const struct fleet_workloads *ws,
                       const struct sort_key *keys, struct sort_key *other, size_t n,
                       const struct mech_rules *r, struct pool_choice *pc, packer_fn **pack,
                       int *won, struct fleet_kept_pack *kept);

/* ---- lower bounds, and what the cost bound needs (fleet_bound.c) ---- */

/* A bound on GPUs for one group that shares (0 on out of memory). */
uint64_t fleet_group_bound(const struct fleet_workloads *ws, const struct sort_key *keys,
                           size_t n, uint64_t max_mem, const struct mech_rules *r);
/* The demand of one mechanism's workloads that fleet_cost_bound is solved for. 0, or
 * -ENOMEM. */
int fleet_demand_of(const struct fleet *f, const struct fleet_workloads *ws,
                    const uint8_t *possible, int mech, const struct mech_rules *r,
                    const uint64_t group_gpus[FLEET_GROUPS], struct fleet_demand *d);
/* The greatest common divisor (a when b is 0). */
uint64_t fleet_gcd(uint64_t a, uint64_t b);
/* held: f with each pool's memory the most its GPU can hold of the possible workloads (each
 * size any number of times), for the bounds: a GPU holds the same sets of them either way. */
void fleet_most_held(const struct fleet *f, const struct fleet_workloads *ws,
                     const uint8_t *possible, struct fleet *held);
/* The cost bound by the sets of sizes a GPU of held (fleet_most_held) holds, for lists of few
 * distinct sizes, within the pools' counts when limited (fleet_pattern.c): *value, or 0 where
 * it does not apply or has no solution. 0, or -ENOMEM. */
int fleet_pattern_bound(const struct fleet *held, const struct fleet_workloads *ws,
                        const uint8_t *possible, int mech, const struct mech_rules *r,
                        const struct fleet_demand *d, bool limited, double *value);
/* The cost bound by the sets of workloads each GPU holds, for lists of at most 256 workloads
 * whose plan p (on GPUs g, p->gpu_of kept) is within the fleet (fleet_colgen.c): *value, or 0
 * where it does not apply; and a plan from that program's solution takes p's place (p and g
 * made again) when it is cheaper. 0, or -ENOMEM. */
int fleet_colgen(const struct fleet *f, const struct fleet_workloads *ws, const uint8_t *possible,
                 int mech, const struct mech_rules *r, struct fleet_plan *p,
                 struct fleet_gpu_list *g, double *value);
/* fleet_colgen for its plans alone: the program and the plans from its solution, without the
 * search over whole GPUs that takes its bound further. 0, or -ENOMEM. */
int fleet_colgen_plan(const struct fleet *f, const struct fleet_workloads *ws,
                      const uint8_t *possible, int mech, const struct mech_rules *r,
                      struct fleet_plan *p, struct fleet_gpu_list *g);
/* A plan within the fleet of a list too long for fleet_colgen improved part by part: the
 * workloads of a few of its shared GPUs planned again by that program, taking their GPUs'
 * place where cheaper, while the plan is more than 1% above its bound (fleet_parts.c). p and g
 * made again; 0, or -ENOMEM. */
int fleet_improve_by_parts(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                           const struct mech_rules *r, struct fleet_plan *p,
                           struct fleet_gpu_list *g);
/* ---- a linear program solved as it is, columns added between solves (fleet_simplex.c) ---- */

struct fleet_simplex;
enum { FLEET_SIMPLEX_OPTIMAL, FLEET_SIMPLEX_STALLED };
/* min cost.x over x >= 0 with rows (at_least[r]: `>=', else `<=') of right-hand side rhs[r]
 * >= 0, room for `columns' columns; big: the cost of the artificial columns of the `>=' rows
 * (far above any dual value the program can have). NULL on out of memory. */
struct fleet_simplex *fleet_simplex_new(size_t rows, const bool *at_least, const double *rhs,
                                        size_t columns, double big);
void fleet_simplex_free(struct fleet_simplex *s);
/* Adds a column of coefficient 1 in each of rows[0..nrows) (distinct): its number (0 for the
 * first added), or -1 when there is no room; work (optional) counts the entries it writes. */
long fleet_simplex_add(struct fleet_simplex *s, const size_t *rows, size_t nrows, double cost,
                       double *work);
/* From the last basis to an optimum: FLEET_SIMPLEX_OPTIMAL, or FLEET_SIMPLEX_STALLED when
 * work (optional: tableau entries its pivots update, added) passes work_limit, or rounding
 * stops it. */
int fleet_simplex_solve(struct fleet_simplex *s, double *work, double work_limit);
/* Per row, its dual value at the last basis (>= 0 on an optimal `>=' row, <= 0 on `<='). */
void fleet_simplex_duals(const struct fleet_simplex *s, double *duals);
/* Per added column, its value at the last basis. */
void fleet_simplex_values(const struct fleet_simplex *s, double *x);
/* Whether an artificial column is above zero: the columns so far meet not every row. */
bool fleet_simplex_artificial(const struct fleet_simplex *s);

/* A cost bound that needs no solution, for when the simplex gives up. */
double fleet_plain_cost_bound(const struct fleet *f, const struct fleet_demand *d);
/* The class (the smallest pool size that holds it) and the band of memory_mib. */
size_t fleet_class_of(const struct fleet_demand *d, uint64_t memory_mib);
size_t fleet_band_of(const struct fleet_demand *d, uint64_t memory_mib);
/* Adds v to the ascending list of distinct values list[0..*n). */
void fleet_insert_distinct(uint64_t *list, size_t *n, uint64_t v);

#endif
