/* mem_retain.c - a retain racing with a release of the same handle, or with the unmap of its
 * last mapping: the handle, which the retain keeps, must stay counted until the retain's own
 * release.
 *
 * libcarve counts a retain once the driver has answered. Until 2026-11-27 a release on
 * another thread inside that window (after the create's release, its record gone) lowered
 * the mapping's count instead, and the handle was given back while mapped; the last unmap
 * in that window gave it back while retained. A tenant looping on it held 29 GB in a 4 GiB
 * slice. Run with CARVE_SIM_RETAIN_DELAY_US=3000 (the retain returns that long after the
 * driver took its reference), CARVE_SIM_CTX_MEMORY=0, in a slice of MEM_CAP bytes. A round in
 * which the other thread did not land inside the retain (a loaded machine) proves nothing
 * and is said so; at least one must.
 *
 * `mem_retain full' (no delay needed) retains one mapped handle until libcarve refuses: it
 * counts 65,534 retains of a handle, and the 65,535th went on uncounted until 2026-11-28, so
 * that 65,535 retains and releases gave the handle back while the driver still held it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem_common.h"

#define ROUNDS 6

static struct mem_api a;
static CUcontext ctx;
static int failed;
static size_t big;
static CUdeviceptr va;
static CUmemGenericAllocationHandle h;
static _Atomic int retaining; /* the retain is about to be called */
static _Atomic int retained;  /* the retain has returned */

static unsigned long long used(void)
{
    size_t f = 0, t = 0;
    a.cuMemGetInfo(&f, &t);
    return t - f;
}

static void *retainer(void *arg)
{
    CUmemGenericAllocationHandle *kept = arg;
    a.cuCtxSetCurrent(ctx);
    atomic_store(&retaining, 1);
    CUresult r = a.cuMemRetainAllocationHandle(kept, (void *)(uintptr_t)va);
    atomic_store(&retained, 1);
    return (void *)(intptr_t)(r == CUDA_SUCCESS && *kept == h);
}

/* release: h's reference again (the create's went), as soon as the driver takes it; else the
 * unmap of its one mapping, 1 ms into the retain (the simulated driver takes the reference
 * first, then waits 3 ms). True when the call that did it began before the retain returned
 * (libcarve may then hold it until the retain is counted). */
static bool race(bool release)
{
    struct timespec ms = {0, 1000000};
    bool early;
    while (!atomic_load(&retaining))
        ;
    if (!release) {
        nanosleep(&ms, NULL);
        early = !atomic_load(&retained);
        a.cuMemUnmap(va, big);
        return early;
    }
    do {
        early = !atomic_load(&retained);
        if (a.cuMemRelease(h) == CUDA_SUCCESS)
            return early;
    } while (early);
    return false;
}

/* Retains of one mapped handle until refused: the one past what libcarve counts is refused,
 * and the handle stays counted while the driver holds it. */
static void retain_until_full(const CUmemAllocationProp *prop)
{
    CUmemGenericAllocationHandle kept, other;
    va = 0;
    if (a.cuMemCreate(&h, big, prop, 0) != CUDA_SUCCESS ||
        a.cuMemAddressReserve(&va, big, 0, 0, 0) != CUDA_SUCCESS ||
        a.cuMemMap(va, big, 0, h, 0) != CUDA_SUCCESS) {
        failed += mem_check(0, "full: create, reserve and map");
        return;
    }
    int n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < 70000 && (r = a.cuMemRetainAllocationHandle(&kept, (void *)(uintptr_t)va)) ==
                            CUDA_SUCCESS)
        n++;
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY && n == 65534,
                        "full: retains counted %d, the next refused (%d)", n, r);
    for (int i = 0; i < n; i++)
        a.cuMemRelease(h);
    a.cuMemUnmap(va, big);
    unsigned long long u = used();
    failed += mem_check(u >= big, "full: %d retains released and the mapping gone, the "
                        "create's reference still counts: used %llu MiB", n, u / MiB);
    failed += mem_check(a.cuMemCreate(&other, big, prop, 0) == CUDA_ERROR_OUT_OF_MEMORY,
                        "full: a second handle as big is refused");
    a.cuMemRelease(h);
    a.cuMemAddressFree(va, big);
    u = used();
    failed += mem_check(u == 0, "full: used %llu MiB once it is released", u / MiB);
}

int main(int argc, char **argv)
{
    size_t total;
    if (mem_start(&a, &ctx, &total) != 0)
        return 2;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 2 * MiB;
    big = total / 2 / gran * gran + gran; /* two do not fit */
    if (argc > 1 && strcmp(argv[1], "full") == 0) {
        retain_until_full(&prop);
        printf("mem_retain full: %d failed\n", failed);
        return failed ? 1 : 0;
    }
    int landed = 0;
    for (int mode = 0; mode < 2; mode++) {
        const char *what = mode == 0 ? "a release" : "the last unmap";
        for (int i = 1; i <= ROUNDS; i++) {
            CUmemGenericAllocationHandle kept = 0, other;
            pthread_t t;
            void *ok;
            va = 0;
            atomic_store(&retaining, 0);
            atomic_store(&retained, 0);
            CUresult rs[4] = {a.cuMemCreate(&h, big, &prop, 0), CUDA_ERROR_UNKNOWN,
                              CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
            if (rs[0] == CUDA_SUCCESS)
                rs[1] = a.cuMemAddressReserve(&va, big, 0, 0, 0);
            if (rs[1] == CUDA_SUCCESS)
                rs[2] = a.cuMemMap(va, big, 0, h, 0);
            if (rs[2] == CUDA_SUCCESS)
                rs[3] = a.cuMemRelease(h);
            if (rs[3] != CUDA_SUCCESS || pthread_create(&t, NULL, retainer, &kept) != 0) {
                failed += mem_check(0, "%s, round %d: create, reserve, map, release: %d %d %d %d",
                                    what, i, rs[0], rs[1], rs[2], rs[3]);
                continue;
            }
            bool inside = race(mode == 0);
            pthread_join(t, &ok);
            unsigned long long u;
            if (!ok) { /* the unmap came first after all (a loaded machine): nothing held */
                printf("# %s, round %d: the unmap came before the retain, proves nothing\n",
                       what, i);
                a.cuMemAddressFree(va, big);
                u = used();
                failed += mem_check(u == 0, "%s, round %d: used %llu MiB", what, i, u / MiB);
                continue;
            }
            landed += inside;
            /* held: mapped (a release) or retained (an unmap) */
            u = used();
            failed += mem_check(u >= big, "%s inside the retain (%s), round %d: used %llu MiB "
                                "counts the %llu MiB held", what, inside ? "yes" : "no", i,
                                u / MiB, (unsigned long long)(big / MiB));
            failed += mem_check(a.cuMemCreate(&other, big, &prop, 0) ==
                                    CUDA_ERROR_OUT_OF_MEMORY,
                                "%s, round %d: a second handle as big is refused", what, i);
            if (mode == 0)
                a.cuMemUnmap(va, big);
            else
                a.cuMemRelease(kept);
            a.cuMemAddressFree(va, big);
            u = used();
            failed += mem_check(u == 0, "%s, round %d: used %llu MiB once it is gone", what, i,
                                u / MiB);
        }
    }
    failed += mem_check(landed > 0, "%d of %d rounds raced inside the retain", landed,
                        2 * ROUNDS);
    printf("mem_retain: %d failed\n", failed);
    return failed ? 1 : 0;
}
