/* mig_plan.h - MIG requests and the geometry planner: turning "8GiB", "20GiB,30%" or
 * "3g.40gb" into GPU instances with a start slot each, on one GPU model, so that as many
 * requests as possible fit and, among such layouts, the least memory is stranded. */
#ifndef CARVE_MIG_PLAN_H
#define CARVE_MIG_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mig.h"

#define MIG_MAX_REQUESTS 64
#define MIG_MAX_INSTANCES 8 /* 7 compute slices: never more than 7 instances, 8 for margin */
#define MIG_REQUEST_TEXT 64

/* What one workload asks for: a profile by name, or at least some memory and/or compute. */
struct mig_request {
    char text[MIG_REQUEST_TEXT]; /* as given, for messages */
    char profile[32];            /* NVIDIA's profile name when asked by name, else "" */
    uint64_t memory_mib;         /* at least this much memory (0: any) */
    double compute_pct;          /* at least this share of the GPU's SMs, 0..100 (0: any) */
};

/* Parses one request: PROFILE ("3g.40gb", "MIG 1g.10gb+me"), SIZE ("8GiB", "512MiB", "20GB"),
 * PCT ("30%") or SIZE,PCT / PCT,SIZE. 0, or -1 with a message naming the text in err. */
int mig_request_parse(const char *text, struct mig_request *out, char *err, size_t errlen);

/* An instance: a profile at a start memory slice. */
struct mig_instance {
    const struct mig_profile *profile;
    unsigned start;
};

struct mig_placement {
    int request; /* index into the requests */
    struct mig_instance inst;
};

struct mig_refusal {
    int request;
    char why[640]; /* room for a reason per candidate profile (explain_no_room) */
};

struct mig_plan {
    size_t nplaced;
    struct mig_placement placed[MIG_MAX_INSTANCES]; /* ordered by request */
    size_t nrefused;
    struct mig_refusal refused[MIG_MAX_REQUESTS];
    /* stranded = over + unreachable: memory given to instances beyond what their requests asked
       for, plus free memory slices that no profile can use any more beside this layout */
    uint64_t stranded_mib, over_mib, unreachable_mib;
    unsigned used_mask;     /* memory slices taken, the kept instances included */
    unsigned used_compute;  /* compute slices taken, the kept instances included */
    uint64_t given_mib;     /* memory of the placed instances */
    uint64_t headroom_mib;  /* memory of the largest profile that could still be added */
    const struct mig_profile *headroom; /* that profile (most SMs among equals), or NULL */
};

/* Plans the requests on model, beside the instances in keep (already on the GPU, left alone).
 * Search: exact, by dynamic programming over (request, memory slices taken, compute slices
 * taken, media engines taken), which covers every assignment of a (profile, start) or "not
 * placed" to every request: at most n x 256 x 8 x 2 states of <= 64 choices each. The best
 * layout places the most requests, then strands the least memory, then gives the placed
 * requests the most memory (honours bigger requests), then leaves the largest profile
 * addable. 0 on success (some requests may still be refused, see plan->refused), or -1 with
 * a message in err for bad arguments (too many requests, a kept layout not valid). */
int mig_plan(const struct mig_model *model, const struct mig_request *req, size_t n,
             const struct mig_instance *keep, size_t nkeep, struct mig_plan *plan, char *err,
             size_t errlen);

/* mig_plan, and among layouts equal in the order above, the one that reuses the most of the
 * instances in prefer (the ones on the GPU now, for apply --replace: the fewest destroyed and
 * created; a layout already right is kept as it is). */
int mig_plan_prefer(const struct mig_model *model, const struct mig_request *req, size_t n,
                    const struct mig_instance *keep, size_t nkeep,
                    const struct mig_instance *prefer, size_t nprefer, struct mig_plan *plan,
                    char *err, size_t errlen);

/* Whether instances form a valid layout on model: starts allowed, memory slices disjoint,
 * compute slices <= model->compute_slices, counts <= max_count, at most one media profile.
 * false with the reason in why (may be NULL). */
bool mig_layout_valid(const struct mig_model *model, const struct mig_instance *inst, size_t n,
                      char *why, size_t whylen);

/* Whether request r is satisfied by profile p of model. */
bool mig_request_fits(const struct mig_model *model, const struct mig_request *r,
                      const struct mig_profile *p);

/* Free memory slices (not in used_mask) no profile of model could still use, given the
 * compute slices and media engines taken; their memory is returned, *headroom gets the
 * memory of the largest profile that could still be added (0 if none). */
uint64_t mig_unreachable_mib(const struct mig_model *model, unsigned used_mask,
                             unsigned used_compute, bool media_used, uint64_t *headroom);

#endif
