/* advise.h - the mechanism advisor: from a GPU model, a workload archetype, the tenants'
 * trust and a latency budget to a recommended sharing mechanism, with its reasons from the
 * isolation matrix and the hardware gate, and the traps that apply. */
#ifndef CARVE_ADVISE_H
#define CARVE_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum adv_mech { ADV_WHOLE, ADV_TIMESLICE, ADV_MPS, ADV_MIG, ADV_HAMI, ADV_CARVE, ADV_NMECH };
enum adv_archetype { ADV_TRAINING, ADV_INFERENCE, ADV_NOTEBOOK, ADV_BATCH, ADV_NARCH };
enum adv_trust { ADV_TEAM, ADV_UNTRUSTED };

/* One row of the isolation matrix (seed article "Why share a GPU?", plus whole GPUs and
 * carve's own row with its measured numbers). */
struct adv_matrix_row {
    const char *name;   /* "time-slicing" */
    const char *title;  /* "Time-slicing" */
    const char *memory, *compute, *fault, *jitter;
    const char *hardware; /* where it runs */
};
const struct adv_matrix_row *adv_matrix(int mech);
int adv_mech_find(const char *name);     /* -1 if unknown */
int adv_archetype_find(const char *name); /* -1 if unknown */
const char *adv_archetype_name(int a);

struct adv_input {
    const char *gpu;          /* model or family name: "H100", "T4", "A100-80GB" */
    int archetype;
    int trust;
    double latency_ms;        /* P99 budget; 0 = none */
    uint64_t memory_mib;      /* a workload's memory, 0 = not given (MIG rounding check) */
    bool changing;            /* the workload mix changes (training by day, serving by night) */
    int proposal;             /* -1, or a mechanism the user asks about (advise --check) */
};

#define ADV_MAX_LINES 8

struct adv_trap {
    const char *id;          /* stable: "timeslice-online", "mig-gate", ... */
    char text[400];
};

struct adv_result {
    int mech;                /* recommended */
    bool mig_capable;
    bool mig_unknown;        /* a GPU carve does not know, no MIG family in its name: MIG may be
                                there or not (mig_capable false) */
    bool gpu_known;
    char gpu[64];            /* as understood: "H100-80GB" or the input */
    char reasons[ADV_MAX_LINES][320];
    size_t nreasons;
    struct adv_trap traps[ADV_MAX_LINES];
    size_t ntraps;
    int alternative;         /* second choice, or -1 */
    char alternative_why[320];
    /* advise --check MECH */
    int proposal;
    bool proposal_ok;
    bool proposal_unknown;   /* MIG on a GPU whose MIG carve does not know: not ok, not a trap */
    char proposal_verdict[400];
};

/* Checks the input (0, or -EINVAL with a message) and fills out. */
int adv_advise(const struct adv_input *in, struct adv_result *out, char *err, size_t errlen);
json_t *adv_result_json(const struct adv_result *r);

#endif
