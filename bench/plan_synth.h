/* plan_synth.h - the benchmark's synthetic workload list (bench/plan_bench.c), seeded, so that
 * the unit tests (tests/unit/test_fleet.c) can plan the same list. */
#ifndef CARVE_PLAN_SYNTH_H
#define CARVE_PLAN_SYNTH_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fleet.h"

static uint64_t plan_synth_state;

static inline uint32_t plan_synth_rng(void) /* xorshift64*: reproducible on every libc */
{
    plan_synth_state ^= plan_synth_state >> 12;
    plan_synth_state ^= plan_synth_state << 25;
    plan_synth_state ^= plan_synth_state >> 27;
    return (uint32_t)((plan_synth_state * 2685821657736338717ULL) >> 32);
}

static inline uint32_t plan_synth_between(uint32_t lo, uint32_t hi)
{
    return lo + plan_synth_rng() % (hi - lo + 1);
}

/* One synthetic workload: 40% notebooks, 25% strict inference, 25% batch, 8% normal
 * services, 2% untrusted tenants. Memory in MiB, compute in basis points. */
static inline void plan_synth(struct fleet_workload *w, size_t i)
{
    static const struct {
        uint32_t below; /* of 100: the kinds before and this one */
        const char *name;
        uint32_t mem_lo, mem_hi;
        uint32_t bp_lo, bp_hi;
        int latency, trust;
    } kinds[] = {
        {40, "notebook", 1024, 8192, 100, 800, FLEET_LAT_RELAXED, FLEET_TRUSTED},
        {65, "serve", 2048, 12288, 300, 1500, FLEET_LAT_STRICT, FLEET_TRUSTED},
        {90, "batch", 4096, 12288, 500, 1200, FLEET_LAT_RELAXED, FLEET_TRUSTED},
        {98, "svc", 2048, 16384, 500, 2000, FLEET_LAT_NORMAL, FLEET_TRUSTED},
        {100, "tenant", 4096, 16384, 500, 2000, FLEET_LAT_NORMAL, FLEET_UNTRUSTED},
    };
    uint32_t kind = plan_synth_rng() % 100;
    size_t k = 0;
    while (kind >= kinds[k].below)
        k++;
    memset(w, 0, sizeof(*w));
    w->line = (uint32_t)i + 2;
    snprintf(w->name, sizeof(w->name), "%s-%zu", kinds[k].name, i);
    w->memory_mib = plan_synth_between(kinds[k].mem_lo, kinds[k].mem_hi);
    w->compute_bp = plan_synth_between(kinds[k].bp_lo, kinds[k].bp_hi);
    w->latency = kinds[k].latency;
    w->trust = kinds[k].trust;
}

/* The list of seed seed starts here: workload i is the i-th drawn after it. */
static inline void plan_synth_seed(uint64_t seed)
{
    plan_synth_state = seed * 0x9E3779B97F4A7C15ULL + 1;
}

#endif
