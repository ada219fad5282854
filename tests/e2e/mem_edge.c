/* mem_edge.c - frees and sizes a careless or hostile tenant tries, inside a slice with no
 * context memory (CARVE_SIM_CTX_MEMORY=0): a free of the middle of an allocation, a double
 * free, eight threads freeing one pointer at once, frees through the other free call (a pool's
 * allocation by cuMemFree, its pool destroyed meanwhile, included), sizes
 * whose arithmetic overflows, a handle mapped at two addresses, a map refused because its
 * range is mapped already, and such a map whose handle another thread releases meanwhile. After each, the tenant's usage (total - free) must be what it
 * holds: never less, or it could take more than its cap, and back to 0 at the end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mem_common.h"

#define RACES 300
#define RACERS 8

static struct mem_api a;
static CUcontext ctx;
static int failed;
static unsigned long long cap;

static unsigned long long used(void)
{
    size_t f = 0, t = 0;
    if (a.cuMemGetInfo(&f, &t) != CUDA_SUCCESS || t != cap)
        failed += mem_check(0, "cuMemGetInfo: total %zu == cap %llu", t, cap);
    return t - f;
}

static void expect_used(unsigned long long want, const char *what)
{
    unsigned long long u = used();
    failed += mem_check(u == want, "%s: used %llu == %llu", what, u, want);
}

static CUdeviceptr raced;
static _Atomic int wins;
static pthread_barrier_t bar;

static void *racer(void *arg)
{
    (void)arg;
    a.cuCtxSetCurrent(ctx);
    for (int i = 0; i < RACES; i++) {
        pthread_barrier_wait(&bar);
        if (a.cuMemFree(raced) == CUDA_SUCCESS)
            wins++;
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

static void frees(void)
{
    CUdeviceptr p, q;
    size_t pitch;
    a.cuMemAlloc(&p, 256 * MiB);
    CUresult r = a.cuMemFree(p + 4096);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemFree of the middle of an allocation: %d", r);
    expect_used(256 * MiB, "after it, the allocation still counts");
    a.cuMemFree(p);
    r = a.cuMemFree(p);
    failed += mem_check(r != CUDA_SUCCESS, "a second cuMemFree of one pointer: %d", r);
    expect_used(0, "after the double free");

    pthread_t t[RACERS];
    pthread_barrier_init(&bar, NULL, RACERS + 1);
    for (int i = 0; i < RACERS; i++)
        pthread_create(&t[i], NULL, racer, NULL);
    for (int i = 0; i < RACES; i++) {
        a.cuMemAlloc(&raced, (1 + i % 7) * MiB);
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    failed += mem_check(wins == RACES, "%d threads free one pointer at once, %d times: %d won",
                        RACERS, RACES, (int)wins);
    expect_used(0, "after the racing frees");

    a.cuMemAllocManaged(&p, 100 * MiB, CU_MEM_ATTACH_GLOBAL);
    a.cuMemAllocPitch(&q, &pitch, 1000, 1000, 4);
    a.cuMemFree(p);
    a.cuMemFreeAsync(q, NULL);
    expect_used(0, "managed memory freed by cuMemFree, pitched by cuMemFreeAsync");

    /* a stream-ordered allocation freed by cuMemFree (the driver accepts it), its pool
     * destroyed meanwhile: the pool's charge comes back at that free, as at cuMemFreeAsync */
    CUmemoryPool pool;
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0; /* ctx's device */
    a.cuMemPoolCreate(&pool, &props);
    r = a.cuMemAllocFromPoolAsync(&p, 128 * MiB, pool, NULL);
    failed += mem_check(r == CUDA_SUCCESS, "cuMemAllocFromPoolAsync 128 MiB: %d", r);
    a.cuMemPoolDestroy(pool);
    expect_used(128 * MiB, "its pool destroyed, the allocation still counts");
    r = a.cuMemFree(p);
    failed += mem_check(r == CUDA_SUCCESS, "cuMemFree of a pool's allocation: %d", r);
    expect_used(0, "a destroyed pool's last allocation freed by cuMemFree");
}

static void sizes(void)
{
    CUdeviceptr p;
    size_t pitch;
    CUarray arr;
    CUresult r = a.cuMemAllocPitch(&p, &pitch, SIZE_MAX - 100, 2, 4);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemAllocPitch width SIZE_MAX-100: %d", r);
    r = a.cuMemAllocPitch(&p, &pitch, (size_t)1 << 40, (size_t)1 << 30, 4);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemAllocPitch of 2^70 bytes: %d", r);
    r = a.cuMemAllocPitch(&p, &pitch, 512, ((size_t)1 << 55) + 1, 4);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemAllocPitch of 2^64 + 512 bytes: %d", r);
    CUDA_ARRAY3D_DESCRIPTOR d;
    memset(&d, 0, sizeof(d));
    d.Width = d.Height = d.Depth = (size_t)1 << 40;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 4;
    r = a.cuArray3DCreate(&arr, &d);
    failed += mem_check(r != CUDA_SUCCESS, "cuArray3DCreate of 2^124 bytes: %d", r);
    d.Width = d.Height = d.Depth = 1 << 16;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d.NumChannels = 1;
    r = a.cuArray3DCreate(&arr, &d);
    failed += mem_check(r != CUDA_SUCCESS, "cuArray3DCreate of 2^48 bytes: %d", r);
    r = a.cuMemAlloc(&p, 0);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemAlloc of 0 bytes: %d", r);
    expect_used(0, "after the refused sizes");
}

/* A handle released on another thread while its map is being refused: the release sees the
 * map's note and leaves the give-back to the handle's last unmap, which never comes. */
#define MAP_RACES 20
static CUmemGenericAllocationHandle released_while_mapping;

static void *releaser(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&bar);
    usleep(100); /* into the map's call: the simulated one waits CARVE_SIM_MAP_DELAY_US */
    a.cuMemRelease(released_while_mapping);
    return NULL;
}

static void map_release_race(CUdeviceptr va, size_t S, const CUmemAllocationProp *prop)
{
    CUmemGenericAllocationHandle h1;
    a.cuMemCreate(&h1, S, prop, 0);
    a.cuMemMap(va, S, 0, h1, 0);
    int refused = 0;
    for (int i = 0; i < MAP_RACES; i++) {
        a.cuMemCreate(&released_while_mapping, S, prop, 0);
        pthread_t t;
        pthread_barrier_init(&bar, NULL, 2);
        pthread_create(&t, NULL, releaser, NULL);
        pthread_barrier_wait(&bar);
        refused += a.cuMemMap(va, S, 0, released_while_mapping, 0) != CUDA_SUCCESS;
        pthread_join(t, NULL);
        pthread_barrier_destroy(&bar);
    }
    failed += mem_check(refused == MAP_RACES, "cuMemMap over a mapped range refused %d of %d",
                        refused, MAP_RACES);
    expect_used(S, "handles released while their maps were refused: only h1 counts");
    a.cuMemUnmap(va, S);
    a.cuMemRelease(h1);
    expect_used(0, "h1 unmapped and released");
}

static void vmm(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    a.cuMemGetAllocationGranularity(&gran, &prop, 0);
    CUmemGenericAllocationHandle h1, h2;
    CUresult r = a.cuMemCreate(&h1, gran + 1, &prop, 0);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemCreate of granularity + 1: %d", r);
    expect_used(0, "after it");

    size_t S = 256 * MiB / gran * gran;
    CUdeviceptr va;
    a.cuMemAddressReserve(&va, 2 * S, 0, 0, 0);
    a.cuMemCreate(&h1, S, &prop, 0);
    a.cuMemMap(va, S, 0, h1, 0);
    a.cuMemMap(va + S, S, 0, h1, 0);
    a.cuMemRelease(h1);
    expect_used(S, "one handle mapped at two addresses and released");
    a.cuMemUnmap(va, S);
    expect_used(S, "its first mapping unmapped");
    a.cuMemUnmap(va + S, S);
    expect_used(0, "its second mapping unmapped");

    /* The refused map noted va a second time; undoing it by address alone took h1's note
     * (until 2026-11-25), so h1's release was given back while h1 stayed mapped. */
    a.cuMemCreate(&h1, S, &prop, 0);
    a.cuMemCreate(&h2, S, &prop, 0);
    a.cuMemMap(va, S, 0, h1, 0);
    r = a.cuMemMap(va, S, 0, h2, 0);
    failed += mem_check(r != CUDA_SUCCESS, "cuMemMap over a mapped range is refused: %d", r);
    a.cuMemRelease(h1);
    expect_used(2 * S, "h1 released while mapped still counts, beside h2");
    CUdeviceptr p;
    r = a.cuMemAlloc(&p, cap - 2 * S + 64 * MiB);
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                        "cuMemAlloc of cap - both + 64 MiB: %d == OUT_OF_MEMORY", r);
    if (r == CUDA_SUCCESS)
        a.cuMemFree(p);
    a.cuMemRelease(h2);
    expect_used(S, "h2 released: h1, mapped, still counts");
    a.cuMemUnmap(va, S);
    expect_used(0, "after its unmap");
    map_release_race(va, S, &prop);
    a.cuMemAddressFree(va, 2 * S);
}

int main(void)
{
    size_t total;
    if (mem_start(&a, &ctx, &total) != 0)
        return 2;
    cap = total;
    expect_used(0, "at the start");
    frees();
    sizes();
    vmm();
    printf("mem_edge: %d failed\n", failed);
    return failed ? 1 : 0;
}
