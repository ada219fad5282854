/* cost.h - the GPU economics calculator: what sharing a cluster's GPUs among tenants does to
 * the cost of a workload-hour and to the idle GPU-hours of a day, per mechanism. */
#ifndef CARVE_COST_H
#define CARVE_COST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

enum cost_mech { COST_TIMESLICE, COST_MPS, COST_MIG, COST_HAMI, COST_CARVE, COST_NMECH };

struct cost_mech_info {
    const char *name;       /* "time-slicing", "mps", "mig", "hami", "carve" */
    const char *title;      /* "Time-slicing" */
    double efficiency;      /* share of a shared GPU's time that does tenant work */
    unsigned max_tenants;   /* most tenants one GPU takes under it */
    const char *good_for;   /* one line: the set-ups it suits */
};
const struct cost_mech_info *cost_mech(int mech);
int cost_mech_find(const char *name); /* -1 if unknown */

#define COST_MAX_GPUS 10000000u /* GPUs in the cluster */
#define COST_MAX_TENANTS 64u     /* tenants per GPU: carve's slices per GPU */

struct cost_input {
    double gpus;        /* GPUs in the cluster: one workload each without sharing */
    double price;       /* $ per GPU-hour */
    double tenants;     /* tenants per GPU wanted */
    double utilisation; /* each tenant's busy share of one GPU, 0..1 */
    const char *gpu;    /* GPU model for the hardware gate (MIG), or NULL */
};

struct cost_result {
    int mech;
    /* false: the GPU cannot run the mechanism (MIG on an L4), so it has no cost, hosts no one
       and saves nothing; the numbers below are 0 and unavailable_reason says why */
    bool available;
    char unavailable_reason[160];
    double tenants_hosted;   /* what the mechanism really fits on one GPU */
    double gpus_needed;      /* ceil(gpus / tenants_hosted): whole GPUs */
    double cost_per_workload_hour;
    double baseline_per_hour; /* one workload per GPU: the price */
    double savings_pct;      /* negative: cheaper than the baseline */
    double recovered_gpu_hours_day;
    double demand;           /* tenants_hosted * utilisation: share of one GPU asked for */
    bool suitable;
    char verdict[320];       /* "Time-slicing — suitable for this configuration" or why not */
};

/* The GPU model decides one thing only, MIG's hardware gate, so the calculator knows the
 * models carve plan knows (fleet_gpus.c), by family ("H100"), board ("H100-80GB") or NVML's
 * name ("NVIDIA H100 80GB HBM3", "Tesla T4"). cost_gpu_mig: 1 has MIG, 0 has not, -1 carve
 * does not know the model. cost_gpu_check: 0 for a model carve knows, else -EINVAL with a
 * message that lists the ones it knows. */
int cost_gpu_mig(const char *gpu);
int cost_gpu_check(const char *gpu, char *err, size_t errlen);

/* Checks the input: 0, or -EINVAL with a message naming the number. */
int cost_check(const struct cost_input *in, char *err, size_t errlen);
void cost_compute(const struct cost_input *in, int mech, struct cost_result *out);
json_t *cost_result_json(const struct cost_result *r);

/* Measured set-up from a carved snapshot (carved.h's schema): GPUs, tenants per GPU in use,
 * mean utilisation of a tenant, and the GPU model. 0, or -EINVAL with why. */
struct cost_measured {
    double gpus, tenants, utilisation;
    char gpu[64];
    char source[96]; /* "slices' achieved compute share" or "processes' SM utilisation" */
    unsigned ntenants;
};
int cost_from_snapshot(const json_t *snap, struct cost_measured *m, char *err, size_t errlen);

#endif
