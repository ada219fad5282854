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
    uint32_t kind = plan_synth_rng() % 100;
    memset(w, 0, sizeof(*w));
    w->line = (uint32_t)i + 2;
    w->trust = FLEET_TRUSTED;
    if (kind < 40) {
        snprintf(w->name, sizeof(w->name), "notebook-%zu", i);
        w->memory_mib = plan_synth_between(1024, 8192);
        w->compute_bp = plan_synth_between(100, 800);
        w->latency = FLEET_LAT_RELAXED;
    } else if (kind < 65) {
        snprintf(w->name, sizeof(w->name), "serve-%zu", i);
        w->memory_mib = plan_synth_between(2048, 12288);
        w->compute_bp = plan_synth_between(300, 1500);
        w->latency = FLEET_LAT_STRICT;
    } else if (kind < 90) {
        snprintf(w->name, sizeof(w->name), "batch-%zu", i);
        w->memory_mib = plan_synth_between(4096, 12288);
        w->compute_bp = plan_synth_between(500, 1200);
        w->latency = FLEET_LAT_RELAXED;
    } else if (kind < 98) {
        snprintf(w->name, sizeof(w->name), "svc-%zu", i);
        w->memory_mib = plan_synth_between(2048, 16384);
        w->compute_bp = plan_synth_between(500, 2000);
        w->latency = FLEET_LAT_NORMAL;
    } else {
        snprintf(w->name, sizeof(w->name), "tenant-%zu", i);
        w->memory_mib = plan_synth_between(4096, 16384);
        w->compute_bp = plan_synth_between(500, 2000);
        w->latency = FLEET_LAT_NORMAL;
        w->trust = FLEET_UNTRUSTED;
    }
}

/* The list of seed seed starts here: workload i is the i-th drawn after it. */
static inline void plan_synth_seed(uint64_t seed)
{
    plan_synth_state = seed * 0x9E3779B97F4A7C15ULL + 1;
}

#endif
