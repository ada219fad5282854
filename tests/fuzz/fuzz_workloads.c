/* fuzz_workloads.c - libFuzzer harness for the planner's inputs: a workload list (CSV or JSON)
 * and a fleet spec. Any input gets workloads or an error message, never a crash; accepted
 * workloads keep the parser's promises; a small accepted list is also planned, and every
 * plan places each workload that fits the fleet and costs no less than its bound. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void check_workloads(const struct fleet_workloads *ws)
{
    for (size_t i = 0; i < ws->n; i++) {
        const struct fleet_workload *w = &ws->w[i];
        if (w->memory_mib < 1 || w->memory_mib > (1ULL << 30) || w->compute_bp > FLEET_BP_FULL ||
            w->latency > FLEET_LAT_STRICT || w->trust > FLEET_UNTRUSTED ||
            !memchr(w->name, '\0', sizeof(w->name)) || w->line < 1)
            abort();
    }
}

/* spec: one MIG model and a pool that MIG does not partition, or two MIG models (each planned,
   the bound the least over those with plans within the fleet) */
static void plan(const struct fleet_workloads *ws, const char *spec)
{
    struct fleet f;
    char err[256];
    if (fleet_parse_spec(spec, &f, err, sizeof(err)))
        abort();
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    if (fleet_plan_all(&f, ws, &o, &r))
        abort();
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r.plans[m];
        if (p->available && (p->placed + r.nimpossible != ws->n || p->gpus < p->lower_bound))
            abort();
        /* a plan within the fleet is one of those its cost bound bounds */
        if (p->available && !p->shortage && p->cost_lower_bound > p->cost_per_hour + 1e-6)
            abort();
    }
    fleet_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    struct fleet_workloads ws = {0};
    char err[512];
    err[0] = '\0';
    int r = fleet_parse_workloads((const char *)data, len, "fuzz.csv", &ws, err, sizeof(err));
    if (r != 0 && !err[0])
        abort(); /* every refusal says why */
    if (r == 0) {
        check_workloads(&ws);
        if (ws.n <= 40) /* planning is the slow part; small lists reach every path */
            plan(&ws, "H100-80GB:3@2.49,L4:2@0.80");
        if (ws.n <= 12)
            plan(&ws, "H100-80GB:1@2.49,A100-40GB:2@1.20,L4@0.80");
    }
    fleet_workloads_free(&ws);
    /* the same bytes as a fleet spec */
    char *spec = malloc(len + 1);
    if (!spec)
        return 0;
    memcpy(spec, data, len);
    spec[len] = '\0';
    struct fleet f;
    err[0] = '\0';
    r = fleet_parse_spec(spec, &f, err, sizeof(err));
    if (r != 0 && !err[0])
        abort();
    if (r == 0)
        for (size_t i = 0; i < f.npools; i++)
            if (!f.pools[i].memory_mib || f.pools[i].count == 0 || !(f.pools[i].price >= 0))
                abort();
    free(spec);
    return 0;
}
