/* memhog.c - a tenant for the demo: show the memory it sees, allocate until refused, hold.
 *
 *   memhog [--label NAME] [--step MIB] [--max MIB] [--hold SECONDS]
 *
 * Prints cuMemGetInfo, allocates --step MiB at a time (default 256) until the driver (or
 * carve) says CUDA_ERROR_OUT_OF_MEMORY or --max MiB (default 65536) is reached, prints how far
 * it got, prints "holding" and keeps the memory --hold seconds (default 5), then frees it.
 * Exit 0 when it stopped at an out-of-memory or at --max, 1 on any other error. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_load.h"

#define MIB (1024ull * 1024ull)
#define MAX_CHUNKS 4096

struct memhog_opts {
    const char *label;
    unsigned long step_mib;
    unsigned long max_mib;
    unsigned long hold_s;
};

static int parse_ulong(const char *flag, const char *s, unsigned long lo, unsigned long hi,
                       unsigned long *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s ? s : "", &end, 10);
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "memhog: %s wants a number %lu-%lu, not `%s'\n", flag, lo, hi,
                s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct memhog_opts *o)
{
    o->label = "memhog";
    o->step_mib = 256;
    o->max_mib = 65536;
    o->hold_s = 5;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;

        if (!strcmp(a, "--label") && v) {
            o->label = v;
            rc = 0;
        } else if (!strcmp(a, "--step")) {
            rc = parse_ulong(a, v, 1, 1ul << 20, &o->step_mib);
        } else if (!strcmp(a, "--max")) {
            rc = parse_ulong(a, v, 1, 1ul << 30, &o->max_mib);
        } else if (!strcmp(a, "--hold")) {
            rc = parse_ulong(a, v, 0, 3600, &o->hold_s);
        } else {
            fprintf(stderr, "usage: memhog [--label NAME] [--step MIB] [--max MIB] "
                            "[--hold SECONDS]\n");
            return -1;
        }
        if (rc)
            return -1;
    }
    return 0;
}

static int show_meminfo(struct bcu *cu, const char *label, const char *when)
{
    size_t free_b = 0, total_b = 0;
    CUresult rc = cu->cuMemGetInfo_v2(&free_b, &total_b);

    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "[%s] cuMemGetInfo failed: %s\n", label, bcu_errname(cu, rc));
        return -1;
    }
    printf("[%s] cuMemGetInfo %s: total %llu MiB, free %llu MiB\n", label, when,
           (unsigned long long)(total_b / MIB), (unsigned long long)(free_b / MIB));
    return 0;
}

int main(int argc, char **argv)
{
    struct memhog_opts o;
    struct bcu cu;
    static CUdeviceptr chunks[MAX_CHUNKS];
    size_t n = 0;
    CUresult rc = CUDA_SUCCESS;
    int ret = 1;

    if (parse_args(argc, argv, &o) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (bcu_open(&cu, 0) != 0)
        return 1;
    printf("[%s] pid %d on %s\n", o.label, (int)getpid(), cu.name);
    if (show_meminfo(&cu, o.label, "at start") != 0)
        goto out;

    printf("[%s] allocating in %lu MiB steps (stop at %lu MiB)\n", o.label, o.step_mib,
           o.max_mib);
    while (n < MAX_CHUNKS && (n + 1) * o.step_mib <= o.max_mib) {
        rc = cu.cuMemAlloc_v2(&chunks[n], (size_t)o.step_mib * MIB);
        if (rc != CUDA_SUCCESS)
            break;
        n++;
    }
    if (rc == CUDA_SUCCESS)
        printf("[%s] got %zu MiB in %zu allocations; stopped at the --max limit\n", o.label,
               n * o.step_mib, n);
    else if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        printf("[%s] got %zu MiB in %zu allocations; allocation %zu: %s\n", o.label,
               n * o.step_mib, n, n + 1, bcu_errname(&cu, rc));
    else {
        fprintf(stderr, "[%s] cuMemAlloc of %lu MiB failed unexpectedly: %s\n", o.label,
                o.step_mib, bcu_errname(&cu, rc));
        goto out;
    }
    if (show_meminfo(&cu, o.label, "when full") != 0)
        goto out;

    printf("[%s] holding %zu MiB for %lu s\n", o.label, n * o.step_mib, o.hold_s);
    sleep((unsigned)o.hold_s);
    ret = 0;
out:
    while (n > 0)
        cu.cuMemFree_v2(chunks[--n]);
    if (ret == 0)
        printf("[%s] freed everything; done\n", o.label);
    bcu_close(&cu);
    return ret;
}
