/* mem_remap.c - an address unmapped on one thread and mapped again with another handle on a
 * second one, before the first thread's cuMemUnmap has returned: the second handle, released
 * while mapped, must stay counted until it is unmapped, and the first one be given back.
 *
 * Until 2026-11-27 cuMemUnmap took the mapping's note by address once the driver had unmapped
 * it, and could take the new mapping's note instead of its own (the one found first at that
 * address): the new handle's release was then given back while it was still mapped, and the
 * old one stayed counted for good. The notes are placed so that the new one is found first:
 * a map of the address that the driver refuses (a handle it does not know, the refusal after
 * CARVE_SIM_MAP_DELAY_US) notes it first, the real map beside it, and the refused note goes,
 * leaving its place free for the re-map. Run with CARVE_SIM_MAP_DELAY_US=2000,
 * CARVE_SIM_UNMAP_DELAY_US=4000 (the unmap returns that long after the driver unmapped),
 * CARVE_SIM_CTX_MEMORY=0, in a slice of MEM_CAP bytes. A round in which the re-map did not
 * land inside the unmap (a loaded machine) proves nothing and is said so; at least one must. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mem_common.h"

#define ROUNDS 10
#define BOGUS_HANDLE 0x5eed0000ull

static struct mem_api a;
static CUcontext ctx;
static unsigned long long cap;
static int failed;
static size_t gran;
static CUdeviceptr va;
static _Atomic int unmap_done;

static unsigned long long used(void)
{
    size_t f = 0, t = 0;
    if (a.cuMemGetInfo(&f, &t) != CUDA_SUCCESS || t != cap)
        failed += mem_check(0, "cuMemGetInfo: total %zu == cap %llu", t, cap);
    return t - f;
}

static void expect_used(unsigned long long want, const char *what, int round)
{
    unsigned long long u = used();
    failed += mem_check(u == want, "round %d, %s: used %llu MiB == %llu MiB", round, what,
                        u / MiB, want / MiB);
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void *refused_map(void *arg)
{
    (void)arg;
    a.cuCtxSetCurrent(ctx);
    a.cuMemMap(va, gran, 0, BOGUS_HANDLE, 0);
    return NULL;
}

static void *unmapper(void *arg)
{
    (void)arg;
    a.cuCtxSetCurrent(ctx);
    CUresult r = a.cuMemUnmap(va, gran);
    if (r != CUDA_SUCCESS)
        failed += mem_check(0, "cuMemUnmap on the other thread: %d", r);
    unmap_done = 1;
    return NULL;
}

/* One round; true when the re-map landed while the other thread's unmap was in progress. */
static bool round_once(int round, const CUmemAllocationProp *prop)
{
    CUmemGenericAllocationHandle h1, h2;
    pthread_t t;
    /* the first handle twice the size of the second, which it maps the first page of: the
     * usage then says which of the two is counted */
    if (a.cuMemCreate(&h1, 2 * gran, prop, 0) != CUDA_SUCCESS ||
        a.cuMemCreate(&h2, gran, prop, 0) != CUDA_SUCCESS) {
        failed += mem_check(0, "round %d: two handles", round);
        return false;
    }
    /* the refused map's note first, then the real one's beside it */
    pthread_create(&t, NULL, refused_map, NULL);
    sleep_us(500);
    CUresult r = a.cuMemMap(va, gran, 0, h1, 0);
    pthread_join(t, NULL);
    if (r != CUDA_SUCCESS) {
        failed += mem_check(0, "round %d: cuMemMap of the first handle: %d", round, r);
        return false;
    }
    /* the other thread unmaps; the address is mapped again meanwhile */
    unmap_done = 0;
    pthread_create(&t, NULL, unmapper, NULL);
    sleep_us(500);
    r = a.cuMemMap(va, gran, 0, h2, 0);
    bool inside = r == CUDA_SUCCESS && !unmap_done;
    pthread_join(t, NULL);
    if (r != CUDA_SUCCESS) { /* mapped still when we tried: this round proves nothing */
        a.cuMemUnmap(va, gran);
        a.cuMemRelease(h1);
        a.cuMemRelease(h2);
        return false;
    }
    expect_used(3 * gran, "both handles held", round);
    a.cuMemRelease(h1); /* unmapped: gone */
    expect_used(gran, "the first handle released once unmapped, the second mapped", round);
    a.cuMemRelease(h2); /* released while mapped: counted until its unmap */
    expect_used(gran, "the re-mapped handle released while mapped, counted", round);
    a.cuMemUnmap(va, gran);
    expect_used(0, "after its unmap", round);
    return inside;
}

int main(void)
{
    size_t total;
    if (mem_start(&a, &ctx, &total) != 0)
        return 2;
    cap = total;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0; /* GPU 0, whose context mem_start made current */
    a.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (!gran || a.cuMemAddressReserve(&va, gran, 0, 0, 0) != CUDA_SUCCESS)
        return 2;
    expect_used(0, "at the start", 0);
    int inside = 0;
    for (int i = 1; i <= ROUNDS; i++)
        inside += round_once(i, &prop);
    failed += mem_check(inside > 0, "the re-map landed inside the other thread's unmap in %d "
                        "of %d rounds", inside, ROUNDS);
    a.cuMemAddressFree(va, gran);
    printf("mem_remap: %d failed\n", failed);
    return failed ? 1 : 0;
}
