/* fleet.h - the fleet planner: GPU models, fleet specs, workload lists, and the packing of a
 * workload list onto a fleet under each sharing mechanism (whole GPUs, time-slicing, MPS,
 * MIG, carve slices), with a lower bound that says how good each packing is.
 *
 * Units everywhere: memory in MiB, compute in basis points of one GPU (10000 = the whole
 * GPU), prices in dollars per GPU-hour. Parsers return 0 or a negative errno with a message
 * that names the line, the field and the number at fault. */
#ifndef CARVE_FLEET_H
#define CARVE_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLEET_BP_FULL 10000u /* compute of one whole GPU, in basis points */
#define FLEET_NAME_MAX 64

/* A GPU model carve knows (fleet_gpus.c). */
struct fleet_gpu_model {
    const char *name;        /* "H100-80GB" */
    const char *family;      /* "H100": what the advisor's gating table speaks of */
    const char *nvml_match;  /* substring of NVML's device name */
    uint64_t memory_mib;
    bool mig;                /* MIG-capable (A100, H100, H200, B200: the hardware gate) */
    const char *arch;        /* "Turing", "Volta", "Ampere", "Ada", "Hopper", "Blackwell" */
};

const struct fleet_gpu_model *fleet_gpu_models(size_t *count);
/* By name, case-insensitive: exact, or a unique prefix ("H200" -> H200-141GB), or a family
 * with one model. NULL if none; *ambiguous set when several match. */
const struct fleet_gpu_model *fleet_gpu_find(const char *name, bool *ambiguous);
/* fleet_gpu_find, and where it finds nothing, NVML's device name of a board or a
 * vendor-prefixed one ("NVIDIA A100-SXM4-40GB" -> A100-40GB, "Tesla T4" -> T4-16GB,
 * "NVIDIA H100 PCIe" -> H100-80GB), or a family's first board with *family_only set ("A100",
 * "NVIDIA L40S"). A name that only contains a board's ("RTX A1000", "GH200") is none. */
const struct fleet_gpu_model *fleet_gpu_named(const char *name, bool *ambiguous);

/* One pool of the fleet: COUNT GPUs of one model at PRICE per hour. */
struct fleet_pool {
    char name[FLEET_NAME_MAX];
    uint64_t memory_mib;
    bool mig;
    uint64_t count;     /* FLEET_UNLIMITED when the spec gave no count */
    double price;       /* per GPU-hour; 0 when the spec gave none */
    bool priced;        /* the spec gave a price (@0 included): all pools have one, or none */
    const struct fleet_gpu_model *model; /* NULL for a custom MODEL/SIZE */
};
#define FLEET_UNLIMITED UINT64_MAX
#define FLEET_MAX_POOLS 16

struct fleet {
    struct fleet_pool pools[FLEET_MAX_POOLS];
    size_t npools;
};

/* SPEC: POOL[,POOL...], POOL = MODEL[:COUNT][@PRICE], MODEL = a known name or NAME/SIZE
 * ("H100-80GB:100@2.49,L4:40@0.80,mygpu/48GiB:8@1.10"). Prices are given for every pool or
 * for none: a pool left unpriced beside priced ones is refused, since it would be planned as
 * free. */
int fleet_parse_spec(const char *spec, struct fleet *out, char *err, size_t errlen);

enum fleet_latency { FLEET_LAT_RELAXED, FLEET_LAT_NORMAL, FLEET_LAT_STRICT };
enum fleet_trust { FLEET_TRUSTED, FLEET_UNTRUSTED };

struct fleet_workload {
    char name[FLEET_NAME_MAX];
    uint64_t memory_mib;
    uint32_t compute_bp;
    uint8_t latency;  /* enum fleet_latency */
    uint8_t trust;    /* enum fleet_trust */
    uint32_t line;    /* where it was declared (CSV line; JSON: index in the array + 1) */
};

struct fleet_workloads {
    struct fleet_workload *w;
    size_t n, cap;
};

/* Parses a workload list, CSV (a header line naming the columns) or JSON (an array of
 * objects, or {"workloads": [...]}), chosen by the first non-blank byte. Columns/keys:
 * name, memory (required), compute, latency, trust, count. file is used in messages.
 * Appends to out; on error out holds what was read so far (free it either way). */
int fleet_parse_workloads(const char *text, size_t len, const char *file,
                          struct fleet_workloads *out, char *err, size_t errlen);
void fleet_workloads_free(struct fleet_workloads *ws);
/* A name (of a workload, or of a GPU model carve does not know) goes into JSON and SVG: 0 if
 * it is UTF-8 text without control characters, else -EINVAL with why. */
int fleet_name_check(const char *s, char *why, size_t len);

const char *fleet_latency_name(int latency);
const char *fleet_trust_name(int trust);

/* The mechanisms, in the order they are reported. */
enum fleet_mech {
    FLEET_WHOLE, FLEET_TIMESLICE, FLEET_MPS, FLEET_MIG, FLEET_CARVE, FLEET_NMECH
};
const char *fleet_mech_name(int mech);  /* "whole", "time-slicing", "mps", "mig", "carve" */
const char *fleet_mech_title(int mech); /* "whole GPUs", "time-slicing", ... */

/* Knobs of the packing. */
struct fleet_options {
    unsigned timeslice_replicas; /* most workloads one time-sliced GPU takes (default 16) */
    unsigned mps_clients;        /* most MPS clients per GPU (48, Volta and later) */
    unsigned carve_slices;       /* most carve slices per GPU (64, the board's size) */
    uint32_t timeslice_compute_bp; /* compute a time-sliced GPU delivers (9200: 8% lost to
                                      context switches) */
    bool keep_assignment;        /* fill fleet_plan.gpu_of and the per-GPU table */
    unsigned threads;            /* mechanisms planned at once: 0 (default) as many as the
                                    CPUs the process may use, at most one a mechanism; 1 one
                                    after another. The plans do not depend on it. */
    bool repack_groups;          /* tests only: each sharing group packed again by the packer
                                    that won its dry runs, not taken from that dry run
                                    (fleet_kept_pack); the plans are the same */
};
void fleet_options_defaults(struct fleet_options *o);

/* One GPU the plan uses. */
struct fleet_gpu_use {
    uint32_t pool;
    uint32_t tenants;
    uint64_t memory_used_mib;  /* by its workloads' declared memory */
    uint64_t memory_held_mib;  /* held by what it hosts: for MIG the profiles' memory */
    uint32_t compute_bp;
};

struct fleet_plan {
    int mech;
    bool available;             /* false: no pool of the fleet can use this mechanism */
    uint64_t gpus;              /* GPUs used, all pools */
    uint64_t gpus_by_pool[FLEET_MAX_POOLS];
    uint64_t shortage;          /* GPUs used beyond what the fleet has */
    uint64_t lower_bound;       /* no packing under this mechanism's rules uses fewer GPUs */
    double cost_per_hour;       /* of the GPUs used */
    double cost_lower_bound;
    uint64_t stranded_mib;      /* memory of used GPUs that no workload uses */
    uint64_t rounding_mib;      /* part of it held by a workload but not used (MIG profiles) */
    uint64_t alone;             /* workloads given a GPU of their own by this mechanism's rules */
    uint64_t placed;
    bool proved_cheapest;       /* a short list's plan that every other plan within the fleet
                                   was tried against, or (MIG) whose cost bound reaches its
                                   cost (the bounds then say its cost) */
    /* optional (fleet_options.keep_assignment) */
    uint32_t *gpu_of;           /* per workload: the GPU index, UINT32_MAX when not placed */
    struct fleet_gpu_use *use;  /* per GPU used */
    const char **profile_of;    /* MIG: per workload, the profile name (or "whole") */
    char note[256];             /* what shaped this plan, one line */
};

/* A workload that fits no GPU of the fleet at all: reported, never dropped. */
struct fleet_impossible {
    size_t index;
    char why[160];
};

struct fleet_result {
    struct fleet_plan plans[FLEET_NMECH];
    struct fleet_impossible *impossible;
    size_t nimpossible;
    size_t nworkloads;
};

/* Some pool has a price: the plans have costs. */
bool fleet_priced(const struct fleet *f);
/* Whether gaps are measured in cost (a fleet of several priced pools, where GPUs of
   different models do not compare) rather than in GPUs. */
bool fleet_gap_in_cost(const struct fleet *f);
/* (GPUs - bound) / bound, or (cost - cost bound) / cost bound, in percent */
double fleet_plan_gap(const struct fleet *f, const struct fleet_plan *p);

/* Plans ws on f under every mechanism. 0, or -ENOMEM. */
int fleet_plan_all(const struct fleet *f, const struct fleet_workloads *ws,
                   const struct fleet_options *o, struct fleet_result *r);
void fleet_result_free(struct fleet_result *r);

/* Internal, shared by fleet_mig.c, fleet_lp.c and the shared packing (fleet_pack.h). */
struct fleet_item {
    uint64_t memory_mib;
    uint32_t compute_bp;
    uint32_t index;       /* into the workload list */
};
int fleet_pack_mig(const struct fleet *f, const struct fleet_workloads *ws,
                   const uint8_t *possible, const struct fleet_options *o,
                   struct fleet_plan *p);
/* The GPUs a plan opens, growing; fleet_gpu_open opens one of pool (a fleet GPU while the
 * pool has one left in pool_left, else one more the fleet lacks: p->shortage), books it in p
 * and returns its index, or -ENOMEM. */
struct fleet_gpu_list {
    struct fleet_gpu_use *use;
    size_t n, cap;
};
long fleet_gpu_open(const struct fleet *f, struct fleet_gpu_list *g, struct fleet_plan *p,
                    uint64_t *pool_left, int pool);
/* Empties p's GPUs (g) and counts, to open them again: left gets each pool's count. */
void fleet_gpu_restart(const struct fleet *f, struct fleet_gpu_list *g, struct fleet_plan *p,
                       uint64_t left[FLEET_MAX_POOLS]);
/* The pools in the order shared GPUs are opened: cheapest per MiB first (spec order when no
 * prices are given, or on ties). */
void fleet_pool_order(const struct fleet *f, size_t order[FLEET_MAX_POOLS]);
/* The cost bound on a fleet of several models (fleet_lp.c). Lone workloads are in classes by
 * the pools that can hold them: class k needs a GPU of at least class_mib[k] (the pools'
 * memory sizes, distinct, ascending), so it may use every pool of that size or more. Sharing
 * workloads are in bands of memory cut at the pools' sizes and (on fleets of few pools) at
 * half of each and around each pool's pair limits (below): a band fits a pool's GPU or not as
 * a whole, is either all above half of it (one to a GPU) or all at most half, and is on one
 * side of each limit. */
#define FLEET_GROUPS 2 /* sharing groups of one mechanism at most (MPS keeps strict apart) */
#define FLEET_BANDS 96
#define FLEET_PAIR_LIMITS 8
#define FLEET_TANGENTS 2 /* counts at which the memory of n workloads of a band is bounded */
struct fleet_band_demand {
    double count, memory_mib; /* the group's workloads in the band, and their memory */
    /* At FLEET_TANGENTS counts n (at[0] = 0): the n largest of them hold largest_mib and the
       next one below them has next_largest_mib; the n smallest likewise. Through these points
       run lines that no subset of the band crosses (fleet_lp.c). */
    double at[FLEET_TANGENTS];
    double largest_mib[FLEET_TANGENTS], next_largest_mib[FLEET_TANGENTS];
    double smallest_mib[FLEET_TANGENTS], next_smallest_mib[FLEET_TANGENTS];
};
struct fleet_demand {
    size_t nclass;
    uint64_t class_mib[FLEET_MAX_POOLS];
    size_t nband;
    uint64_t band_mib[FLEET_BANDS]; /* band b: memory in (band_mib[b - 1], band_mib[b]] */
    bool counted;   /* the bands' counts take part (halves, places, memory of n workloads);
                       false on fleets of many pools, where the program would grow too big */
    uint32_t slots; /* tenants per shared GPU */
    /* per pool, limits k of at most half its GPU (C): a workload above C - k shares a GPU of
       the pool only with workloads below k (fleet_lp.c); with counted only */
    uint64_t pair_limit[FLEET_MAX_POOLS][FLEET_PAIR_LIMITS];
    size_t npair_limit[FLEET_MAX_POOLS];
    struct fleet_band_demand band[FLEET_GROUPS][FLEET_BANDS];
    double gpus[FLEET_GROUPS][FLEET_MAX_POOLS];   /* GPUs group g's workloads of class >= k
                                                     need at least (compute, tenant places,
                                                     pairs that cannot share) */
    uint64_t lone[FLEET_MAX_POOLS];               /* workloads of class k alone on a GPU */
};
/* The least-cost fractional purchase that holds the demand: its cost (a lower bound on every
 * plan on the fleet; when within_fleet is false the fleet cannot hold the demand even in
 * fractions, and it bounds every plan that buys these models at these prices), and the GPUs
 * of each pool it buys for each sharing group and for the lone workloads of each class. */
struct fleet_lp_plan {
    bool solved, within_fleet;
    double cost;
    double shared[FLEET_GROUPS][FLEET_MAX_POOLS];
    double lone[FLEET_MAX_POOLS][FLEET_MAX_POOLS]; /* [class][pool] */
    /* with fleet_demand.counted: how many of group g's workloads of band b it puts on pool
       i's GPUs, and their memory (MiB) */
    double band_count[FLEET_GROUPS][FLEET_BANDS][FLEET_MAX_POOLS];
    double band_memory_mib[FLEET_GROUPS][FLEET_BANDS][FLEET_MAX_POOLS];
};
/* within_fleet: within the pools' counts if the fleet can hold the demand in fractions (false:
 * the counts lifted). 0 (out->solved false if the simplex gave up, which Bland's rule makes
 * unexpected), or -ENOMEM. */
int fleet_cost_bound(const struct fleet *f, const struct fleet_demand *d, bool within_fleet,
                     struct fleet_lp_plan *out);
/* The same program with a whole number of GPUs of each pool for each group and class (every
 * plan buys whole GPUs), by branch and bound: *value, a lower bound on every plan that
 * fleet_cost_bound's (with the same within_fleet) bounds, at least that bound and at most
 * plan_cost, the cost of one such plan; 0 when the program has no solution. floor > 0: a
 * bound known from elsewhere on the same plans, a row of the program (the whole purchases
 * that cost at least floor, as every plan does, may all cost more). 0, or -ENOMEM. */
int fleet_cost_bound_whole(const struct fleet *f, const struct fleet_demand *d,
                           bool within_fleet, double floor, double plan_cost, double *value);
/* The pool a lone workload of memory_mib goes to: the cheapest per hour that fits and has a
 * GPU left (pool_left), else the cheapest that fits; -1 if none fits. */
int fleet_pick_pool(const struct fleet *f, const uint64_t *pool_left, uint64_t memory_mib);

/* A covering program solved by fleet_lp.c's simplex for other parts of the planner
 * (fleet_mig.c): minimise cost.x subject to the rows of a (nrows x nvars, row-major)
 * a.x >= demand, x >= 0, with every cost >= 0. *value is a lower bound on its optimum (the
 * dual solution made exactly feasible) and x (nvars) the primal solution, when *solved;
 * *solved false when no x satisfies the rows (or the simplex gave up). 0, or -ENOMEM. */
struct fleet_cover_lp {
    size_t nvars, nrows;
    const double *a, *demand, *cost;
    const double *upper; /* optional: per variable, at least its value in every solution the
                            bound must hold for (negative: none); unpriced variables need one */
    bool dantzig;        /* the entering column by the most negative reduced cost, Bland's rule
                            only where pivots stall (fewer pivots), as the cost bound's program;
                            false: Bland's rule throughout (fleet_mig.c's program, as tuned) */
    double *work;        /* optional: adds the simplex's work (tableau entries updated) */
    double work_limit;   /* with work: past it the simplex gives up (no solution) */
    bool *no_solution;   /* optional: set when no x satisfies the rows, read twice (the second
                            time with fleet_lp.c's perturbation: not the simplex giving up) */
};
int fleet_cover_solve(const struct fleet_cover_lp *lp, double *x, double *value, bool *solved);
/* The least cost over lp's solutions in which every branch sum is a whole number (each of the
 * nbranches rows of branch_rows, nvars coefficients each, sums columns that every plan makes
 * whole: the GPUs of one pool), by fleet_lp.c's branch and bound: *value, a lower bound on
 * every such solution, at least lp's own bound and at most plan_cost (the cost of one such
 * solution, or more); 0 when lp has no solution or the simplex gave up at its root. 0, or
 * -ENOMEM. lp->work is not used. */
int fleet_cover_bound_whole(const struct fleet_cover_lp *lp, const double *branch_rows,
                            size_t nbranches, double plan_cost, double *value);

struct mig_model;
/* The cheapest plan within the fleet's counts for a short list, by trying every assignment
 * (fleet_exact.c): what a plan that goes beyond the fleet falls back on. Each item is a
 * workload and what the mechanism's rules make of it: a group it shares a GPU with (never with
 * another group) or a GPU of its own; under MIG (rules.mig set) its profile on a GPU of the MIG
 * model (rules.mig_pool), else (or with no profile) a whole GPU of a pool that holds it. */
#define FLEET_EXACT_MAX 64           /* items at most */
#define FLEET_EXACT_STEPS 200000ul   /* assignments tried at most, beyond the fleet */
#define FLEET_EXACT_PROOF_STEPS 1000000ul /* and to prove a plan within it the cheapest (35 ms
                                              on a list of 24) */
#define FLEET_EXACT_PER_GPU 1e-6     /* what a GPU adds to a plan's cost in the search: among
                                        plans of one cost (or unpriced) the fewer GPUs */
#define FLEET_EXACT_ALONE (-1)
#define FLEET_EXACT_LAYOUT_BITS 3    /* a MIG layout: instances per profile, 3 bits each */
struct fleet_exact_item {
    uint32_t index; /* into the workload list */
    int group;      /* shared mechanisms: its group, or FLEET_EXACT_ALONE */
    int profile;    /* MIG: its profile in rules.mig, or -1 (larger than every profile) */
};
struct fleet_exact_rules {
    uint32_t compute_cap, slots;    /* a shared GPU's */
    const struct mig_model *mig;    /* MIG: the model whose GPUs take instances; else NULL */
    bool mig_pool[FLEET_MAX_POOLS]; /* the pools of that model */
    const uint64_t *layouts;        /* MIG: every layout a GPU allows, ascending */
    size_t nlayouts;
};
struct fleet_exact_plan {
    bool found;      /* a plan within the fleet */
    bool exhaustive; /* every assignment was tried (else the steps ran out first) */
    double cost;     /* with found */
    unsigned long steps;
    size_t ngpus;
    uint8_t pool[FLEET_EXACT_MAX];   /* per GPU */
    uint8_t gpu_of[FLEET_EXACT_MAX]; /* per item */
    bool whole[FLEET_EXACT_MAX];     /* per item: alone on a whole GPU (MIG: no instance) */
};
void fleet_exact_within(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_exact_item *items, size_t n,
                        const struct fleet_exact_rules *rules, struct fleet_exact_plan *out);
/* A search for a plan cheaper than one already made (below_cost for below_gpus GPUs: cheaper,
 * or as dear on fewer GPUs), of at most steps assignments; by_gpus: every GPU costs the same
 * (a fleet whose plans are measured in GPUs). found false with exhaustive true: there is none,
 * and the plan made is the cheapest within the fleet. */
struct fleet_exact_limits {
    double below_cost;
    uint64_t below_gpus;
    unsigned long steps;
    bool by_gpus;
    bool by_size; /* the workloads placed by memory and compute together (each a share of the
                     largest GPU), most first; false: most memory first */
};
void fleet_exact_search(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_exact_item *items, size_t n,
                        const struct fleet_exact_rules *rules, const struct fleet_exact_limits *lim,
                        struct fleet_exact_plan *out);
/* A plan that every other plan within the fleet was tried against, none cheaper: its cost is
 * the cost bound (less FLEET_EXACT_PER_GPU for each workload, as many GPUs as any plan has: a
 * plan cheaper by less than that on more GPUs counts as dearer in the search), and where plans
 * are measured in GPUs and none beyond the fleet can use fewer (one pool, or no pool counted),
 * its GPUs are the GPU bound. Marked proved only where it raises the bound the plan is
 * measured by (fleet_proof_worth). */
void fleet_plan_proved(const struct fleet *f, struct fleet_plan *p);
bool fleet_proof_worth(const struct fleet *f);
/* The search (fleet_exact_search) for a plan cheaper than p, which proves p the cheapest when
 * it finds none. */
struct fleet_exact_limits fleet_proof_limits(const struct fleet *f, const struct fleet_plan *p);
bool fleet_exact_layout_fits(const struct fleet_exact_rules *rules, uint64_t layout);
/* The exact plan e takes the place of p's GPUs and counts: p and g emptied, then e's GPUs
 * opened in g, in e's order (what e.gpu_of counts in). 0, or -ENOMEM. */
int fleet_exact_adopt(const struct fleet *f, const struct fleet_exact_plan *e,
                      struct fleet_gpu_list *g, struct fleet_plan *p);

/* A local search over a MIG plan (fleet_mig_repair.c): a workload alone on a whole GPU joins
 * a MIG GPU with room for its profile, and a MIG GPU whose instances cost less as whole GPUs
 * of other pools (with GPUs left) gives them those, while either makes the plan cheaper. The
 * layouts of r say what a GPU of r->mig holds; p->gpu_of and p->profile_of must be kept. The
 * GPUs given back leave g, the others keep their order. 0, or -ENOMEM. */
int fleet_mig_repair(const struct fleet *f, const struct fleet_workloads *ws,
                     const struct fleet_exact_rules *r, struct fleet_gpu_list *g,
                     struct fleet_plan *p);

#endif
