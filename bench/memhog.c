/* memhog.c - a tenant for the demo: show the memory it sees, allocate until refused, hold.
 *
 *   memhog [--label NAME] [--step MIB | --step-bytes N] [--max MIB] [--managed MIB]
 *          [--keep-every K --then-step MIB [--then-pool]] [--hold SECONDS]
 *
 * Prints cuMemGetInfo, allocates --managed MiB of managed memory first if asked (one
 * cuMemAllocManaged; 20 ms later, cuMemGetInfo again), then --step MiB at a time (default
 * 256; or --step-bytes, any size) until the driver (or carve) says CUDA_ERROR_OUT_OF_MEMORY
 * or --max MiB (default 65536) is reached, prints how far it got, prints "holding" and keeps
 * the memory --hold seconds (default 5), then frees it. --keep-every K --then-step MIB: before
 * holding, frees all but every Kth allocation and allocates again in MIB steps until refused
 * (--then-pool: from the GPU's memory pool, cuMemAllocAsync on the default stream).
 * Exit 0 when it stopped at an out-of-memory or at --max, 1 on any other error. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_load.h"

#define MIB (1024ull * 1024ull)
#define MAX_CHUNKS 4096

struct memhog_opts {
    const char *label;
    unsigned long long step; /* bytes */
    unsigned long max_mib;
    unsigned long managed_mib;
    unsigned long keep_every; /* then frees all but every keep_every-th allocation, */
    unsigned long then_mib;   /* and allocates again in steps of then_mib, */
    bool then_pool;           /* from the GPU's memory pool (cuMemAllocAsync) if asked */
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
    unsigned long v = 256;
    o->label = "memhog";
    o->step = 256 * MIB;
    o->max_mib = 65536;
    o->managed_mib = 0;
    o->keep_every = 0;
    o->then_mib = 0;
    o->then_pool = false;
    o->hold_s = 5;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;

        if (!strcmp(a, "--label") && val) {
            o->label = val;
            rc = 0;
        } else if (!strcmp(a, "--step")) {
            rc = parse_ulong(a, val, 1, 1ul << 20, &v);
            o->step = v * MIB;
        } else if (!strcmp(a, "--step-bytes")) {
            rc = parse_ulong(a, val, 1, 1ul << 40, &v);
            o->step = v;
        } else if (!strcmp(a, "--managed")) {
            rc = parse_ulong(a, val, 0, 1ul << 30, &o->managed_mib);
        } else if (!strcmp(a, "--keep-every")) {
            rc = parse_ulong(a, val, 1, MAX_CHUNKS, &o->keep_every);
        } else if (!strcmp(a, "--then-step")) {
            rc = parse_ulong(a, val, 1, 1ul << 20, &o->then_mib);
        } else if (!strcmp(a, "--then-pool")) {
            o->then_pool = true;
            i--; /* takes no value */
            rc = 0;
        } else if (!strcmp(a, "--max")) {
            rc = parse_ulong(a, val, 1, 1ul << 30, &o->max_mib);
        } else if (!strcmp(a, "--hold")) {
            rc = parse_ulong(a, val, 0, 3600, &o->hold_s);
        } else {
            fprintf(stderr, "usage: memhog [--label NAME] [--step MIB | --step-bytes N] "
                            "[--max MIB] [--managed MIB] [--keep-every K --then-step MIB "
                            "[--then-pool]] [--hold SECONDS]\n");
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

/* --keep-every K --then-step MIB: frees all but every Kth allocation, then allocates in MIB
 * steps until refused, into the slots freed (a tenant that fragments the driver's pages). */
static int again(struct bcu *cu, const struct memhog_opts *o, CUdeviceptr *chunks, size_t *n,
                 unsigned long long *held)
{
    size_t kept = 0, got = 0;
    for (size_t i = 0; i < *n; i++) {
        if (i % o->keep_every == 0)
            chunks[kept++] = chunks[i];
        else
            cu->cuMemFree_v2(chunks[i]);
    }
    printf("[%s] kept %zu of %zu allocations (every %luth); allocating again in %lu MiB steps\n",
           o->label, kept, *n, o->keep_every, o->then_mib);
    *n = kept;
    CUresult rc = CUDA_SUCCESS;
    while (*n < MAX_CHUNKS &&
           (rc = o->then_pool ? cu->cuMemAllocAsync(&chunks[*n], (size_t)o->then_mib * MIB, NULL)
                              : cu->cuMemAlloc_v2(&chunks[*n], (size_t)o->then_mib * MIB)) ==
               CUDA_SUCCESS) {
        (*n)++;
        got++;
    }
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "[%s] cuMemAlloc of %lu MiB failed unexpectedly: %s\n", o->label,
                o->then_mib, bcu_errname(cu, rc));
        return -1;
    }
    printf("[%s] got %zu MiB more in %zu allocations\n", o->label, got * o->then_mib, got);
    *held = kept * o->step + got * o->then_mib * MIB;
    return show_meminfo(cu, o->label, "when full again");
}

int main(int argc, char **argv)
{
    struct memhog_opts o;
    struct bcu cu;
    static CUdeviceptr chunks[MAX_CHUNKS];
    CUdeviceptr managed = 0;
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

    if (o.managed_mib) {
        rc = cu.cuMemAllocManaged(&managed, o.managed_mib * MIB, CU_MEM_ATTACH_GLOBAL);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "[%s] cuMemAllocManaged of %lu MiB failed: %s\n", o.label,
                    o.managed_mib, bcu_errname(&cu, rc));
            goto out;
        }
        printf("[%s] managed: %lu MiB\n", o.label, o.managed_mib);
        /* past the 10 ms between libcarve's readings of the context's memory, which the
           cuMemGetInfo takes: the reading made beside managed memory (tests/e2e/mem_slice.sh) */
        usleep(20 * 1000);
        if (show_meminfo(&cu, o.label, "after the managed allocation") != 0)
            goto out;
    }
    if (o.step % MIB == 0)
        printf("[%s] allocating in %llu MiB steps (stop at %lu MiB)\n", o.label, o.step / MIB,
               o.max_mib);
    else
        printf("[%s] allocating in steps of %llu B (stop at %lu MiB)\n", o.label, o.step,
               o.max_mib);
    while (n < MAX_CHUNKS && (n + 1) * o.step <= o.max_mib * MIB) {
        rc = cu.cuMemAlloc_v2(&chunks[n], o.step);
        if (rc != CUDA_SUCCESS)
            break;
        n++;
    }
    if (rc == CUDA_SUCCESS)
        printf("[%s] got %llu MiB in %zu allocations; stopped at %s\n", o.label,
               n * o.step / MIB, n, n == MAX_CHUNKS ? "its most allocations" : "the --max limit");
    else if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        printf("[%s] got %llu MiB in %zu allocations; allocation %zu: %s\n", o.label,
               n * o.step / MIB, n, n + 1, bcu_errname(&cu, rc));
    else {
        fprintf(stderr, "[%s] cuMemAlloc of %llu B failed unexpectedly: %s\n", o.label,
                o.step, bcu_errname(&cu, rc));
        goto out;
    }
    if (show_meminfo(&cu, o.label, "when full") != 0)
        goto out;
    unsigned long long held = n * o.step;
    if (o.keep_every && o.then_mib && again(&cu, &o, chunks, &n, &held) != 0)
        goto out;

    printf("[%s] holding %llu MiB for %lu s\n", o.label, held / MIB, o.hold_s);
    sleep((unsigned)o.hold_s);
    ret = 0;
out:
    while (n > 0)
        cu.cuMemFree_v2(chunks[--n]);
    if (managed)
        cu.cuMemFree_v2(managed);
    if (ret == 0)
        printf("[%s] freed everything; done\n", o.label);
    bcu_close(&cu);
    return ret;
}
