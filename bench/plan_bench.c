/* plan_bench.c - the fleet planner at scale: a seeded synthetic workload list (notebooks,
 * online inference, batch, untrusted tenants) packed onto a fleet under every mechanism,
 * timed, with each plan's gap to its lower bound.
 *
 *   build/bench/plan_bench [--threads N] [WORKLOADS [SPEC [SEED]]]
 *                                      default: the CPUs it may use, 100000 H100-80GB:10000@2.49 1
 *   build/bench/plan_bench --csv FILE [WORKLOADS [SEED]]  write the list for `carve plan`
 *
 * It prints the wall time of the best of five plannings, and the CPU time that one took
 * (fleet_plan_all plans the mechanisms on threads of their own). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet.h"
#include "plan_synth.h"

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_csv(const char *path, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "name,memory,compute,latency,trust\n");
    for (size_t i = 0; i < n; i++) {
        struct fleet_workload w;
        plan_synth(&w, i);
        fprintf(f, "%s,%lluMiB,%u.%02u%%,%s,%s\n", w.name, (unsigned long long)w.memory_mib,
                w.compute_bp / 100, w.compute_bp % 100, fleet_latency_name(w.latency),
                fleet_trust_name(w.trust));
    }
    return fclose(f) ? 1 : 0;
}

static const char usage[] =
    "usage: plan_bench [--threads N] [WORKLOADS [SPEC [SEED]]]\n"
    "                  default: as many threads as CPUs (at most 5), 100000\n"
    "                  H100-80GB:10000@2.49 1\n"
    "       plan_bench --csv FILE [WORKLOADS [SEED]]  write the list for `carve plan`\n";

/* A count or seed argument: digits only, at most max; 0 and a message otherwise. */
static bool number_arg(const char *what, const char *s, unsigned long long max,
                       unsigned long long *out)
{
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end || errno || *out > max) {
        fprintf(stderr, "plan_bench: %s `%s' is not a number from 0 to %llu\n%s", what, s, max,
                usage);
        return false;
    }
    return true;
}

#define MAX_WORKLOADS 10000000ULL

int main(int argc, char **argv)
{
    unsigned long long workloads = 100000, seed = 1, threads = 0;
    if (argc > 1 && strcmp(argv[1], "--threads") == 0) {
        if (argc < 3) {
            fputs(usage, stderr);
            return 2;
        }
        if (!number_arg("--threads", argv[2], 1024, &threads))
            return 2;
        if (!threads) {
            fprintf(stderr, "plan_bench: --threads 0: one thread at least\n%s", usage);
            return 2;
        }
        argv[2] = argv[0]; /* the rest read as if --threads N were not there */
        argc -= 2;
        argv += 2;
    }
    bool csv = argc > 1 && strcmp(argv[1], "--csv") == 0;
    int first = csv ? 3 : 1; /* where WORKLOADS is */
    if ((argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))) {
        fputs(usage, stdout);
        return 0;
    }
    if ((csv && (argc < 3 || argc > 5)) || (!csv && argc > 4)) {
        fputs(usage, stderr);
        return 2;
    }
    if (argc > first && !number_arg("WORKLOADS", argv[first], MAX_WORKLOADS, &workloads))
        return 2;
    int seed_at = csv ? 4 : 3;
    if (argc > seed_at && !number_arg("SEED", argv[seed_at], ~0ULL, &seed))
        return 2;
    plan_synth_seed(seed);
    size_t n = (size_t)workloads;
    if (csv)
        return write_csv(argv[2], n);
    const char *spec = argc > 2 ? argv[2] : "H100-80GB:10000@2.49";
    struct fleet f;
    char err[256];
    if (fleet_parse_spec(spec, &f, err, sizeof(err))) {
        fprintf(stderr, "plan_bench: %s\n", err);
        return 2;
    }
    struct fleet_workloads ws = {0};
    ws.w = malloc(n * sizeof(*ws.w));
    if (!ws.w)
        return 1;
    ws.n = ws.cap = n;
    for (size_t i = 0; i < n; i++)
        plan_synth(&ws.w[i], i);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.threads = (unsigned)threads;
    struct fleet_result r;
    double best = 1e9, best_cpu = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        if (fleet_plan_all(&f, &ws, &o, &r)) {
            fprintf(stderr, "plan_bench: out of memory\n");
            return 1;
        }
        double t = now(CLOCK_MONOTONIC) - t0;
        if (t < best) {
            best = t;
            best_cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
        if (rep < 4)
            fleet_result_free(&r);
    }
    char on[32] = "as many threads as CPUs";
    if (threads)
        snprintf(on, sizeof(on), "%llu thread%s", threads, threads == 1 ? "" : "s");
    printf("%zu workloads onto %s: all five mechanisms planned in %.3f s (best of 5; %s, "
           "%.3f s of CPU)\n", n, spec, best, on, best_cpu);
    /* one model: the gap in GPUs; several: GPUs of different models do not compare, so the
       gap is in dollars per hour, and none for a plan beyond the fleet (as carve plan) */
    bool several = f.npools > 1;
    printf("%-13s %8s %8s %7s %8s %12s %12s %12s %7s\n", "mechanism", "GPUs", "bound", "gap",
           "beyond", "stranded GiB", "$/hour", "$ bound", "$ gap");
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r.plans[m];
        if (!p->available) {
            printf("%-13s  (%s)\n", fleet_mech_title(m), p->note);
            continue;
        }
        char gpu_gap[16] = "-", cost_gap[16] = "-";
        if (!several && p->lower_bound)
            snprintf(gpu_gap, sizeof(gpu_gap), "%.2f%%",
                     100.0 * ((double)p->gpus - (double)p->lower_bound) / (double)p->lower_bound);
        if (p->cost_lower_bound > 0 && !(several && p->shortage)) {
            double g = 100.0 * (p->cost_per_hour - p->cost_lower_bound) / p->cost_lower_bound;
            snprintf(cost_gap, sizeof(cost_gap), "%.2f%%", g > -0.005 && g < 0.005 ? 0.0 : g);
        }
        printf("%-13s %8llu %8llu %7s %8llu %12.0f %12.2f %12.2f %7s\n", fleet_mech_title(m),
               (unsigned long long)p->gpus, (unsigned long long)p->lower_bound, gpu_gap,
               (unsigned long long)p->shortage, p->stranded_mib / 1024.0, p->cost_per_hour,
               p->cost_lower_bound, cost_gap);
    }
    fleet_result_free(&r);
    free(ws.w);
    return 0;
}
