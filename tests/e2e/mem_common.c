/* mem_common.c - the memory walk: every counted allocation API with its free, inside a
 * slice whose cap is MEM_CAP bytes (env), checking the slice's view after each step. */
#include "mem_common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mem_check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    return ok ? 0 : 1;
}

int mem_api_dlsym(struct mem_api *api)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL - dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    int failed = 0;
#define MEM_API_DLSYM(base, name)                                        \
    api->base = (__typeof__(api->base))dlsym(h, #name);                  \
    if (!api->base)                                                      \
        failed += mem_check(0, "dlsym(libcuda, \"%s\") resolves", #name);
    MEM_API(MEM_API_DLSYM)
    return failed;
}

int mem_start(struct mem_api *api, CUcontext *ctx, size_t *total)
{
    CUdevice dev;
    size_t free_bytes;
    if (mem_api_dlsym(api) != 0 || api->cuInit(0) != CUDA_SUCCESS ||
        api->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        api->cuDevicePrimaryCtxRetain(ctx, dev) != CUDA_SUCCESS ||
        api->cuCtxSetCurrent(*ctx) != CUDA_SUCCESS ||
        api->cuMemGetInfo(&free_bytes, total) != CUDA_SUCCESS)
        return -1;
    return 0;
}

struct walk {
    const struct mem_api *api;
    unsigned long long cap, base;
    int failed;
};

/* Slice usage as the tenant sees it: total - free (free is min(cap - used, real free)). */
static unsigned long long used_now(struct walk *w)
{
    size_t f = 0, t = 0;
    if (w->api->cuMemGetInfo(&f, &t) != CUDA_SUCCESS)
        return ~0ull;
    w->failed += mem_check(t == w->cap, "cuMemGetInfo total %zu == cap %llu", t, w->cap);
    return t - f;
}

static void expect_used(struct walk *w, unsigned long long want, const char *what)
{
    unsigned long long u = used_now(w);
    w->failed += mem_check(u == want, "%s: used %llu == %llu", what, u, want);
}

static void expect_oom(struct walk *w, CUresult r, const char *what)
{
    w->failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY, "%s over the cap: %d == OUT_OF_MEMORY",
                           what, r);
}

static void walk_linear(struct walk *w)
{
    const struct mem_api *a = w->api;
    CUdeviceptr p;
    size_t pitch = 0;
    w->failed += mem_check(a->cuMemAlloc(&p, 256 * MiB) == CUDA_SUCCESS, "cuMemAlloc_v2 256 MiB");
    expect_used(w, w->base + 256 * MiB, "after cuMemAlloc_v2");
    expect_oom(w, a->cuMemAlloc(&p + 0, w->cap), "cuMemAlloc_v2");
    w->failed += mem_check(a->cuMemFree(p) == CUDA_SUCCESS, "cuMemFree_v2");
    expect_used(w, w->base, "after cuMemFree_v2");

    w->failed += mem_check(a->cuMemAllocPitch(&p, &pitch, 1000, 4096, 4) == CUDA_SUCCESS,
                           "cuMemAllocPitch_v2 1000 x 4096 (pitch %zu)", pitch);
    expect_used(w, w->base + (unsigned long long)pitch * 4096, "after cuMemAllocPitch_v2");
    CUdeviceptr q;
    size_t qp;
    expect_oom(w, a->cuMemAllocPitch(&q, &qp, 1 << 20, 8192, 4), "cuMemAllocPitch_v2");
    /* pitch x height past 64 bits (2^64 + 512 MiB), and a width that overflows its rounding */
    expect_oom(w, a->cuMemAllocPitch(&q, &qp, 512 * ((1ull << 35) + 1), 1ull << 20, 4),
               "cuMemAllocPitch_v2 whose size wraps past 64 bits");
    expect_oom(w, a->cuMemAllocPitch(&q, &qp, ~(size_t)0 - 8, 2, 4),
               "cuMemAllocPitch_v2 whose width wraps when rounded");
    expect_used(w, w->base + (unsigned long long)pitch * 4096, "after the wrapping pitches");
    a->cuMemFree(p);
    expect_used(w, w->base, "after freeing the pitched allocation");

    w->failed += mem_check(a->cuMemAllocManaged(&p, 128 * MiB, CU_MEM_ATTACH_GLOBAL) ==
                               CUDA_SUCCESS, "cuMemAllocManaged 128 MiB");
    expect_used(w, w->base + 128 * MiB, "after cuMemAllocManaged");
    expect_oom(w, a->cuMemAllocManaged(&q, w->cap, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
    a->cuMemFree(p);
    expect_used(w, w->base, "after freeing the managed allocation");
}

static void walk_vmm(struct walk *w, CUdevice dev)
{
    const struct mem_api *a = w->api;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    a->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (gran == 0)
        gran = 2 * MiB;
    size_t size = (64 * MiB + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h, h2;
    w->failed += mem_check(a->cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS,
                           "cuMemCreate %zu bytes on the device", size);
    expect_used(w, w->base + size, "after cuMemCreate");
    expect_oom(w, a->cuMemCreate(&h2, (w->cap + gran) / gran * gran, &prop, 0), "cuMemCreate");
    w->failed += mem_check(a->cuMemRelease(h) == CUDA_SUCCESS, "cuMemRelease");
    expect_used(w, w->base, "after cuMemRelease");
    /* a location of a type carve does not know (a newer driver's) counts on the current
     * GPU: refused over the cap before the driver is asked (passed through until
     * 2026-11-27; the simulated GPU would answer INVALID_DEVICE) */
    CUmemAllocationProp later = prop;
    later.location.type = 0x40;
    expect_oom(w, a->cuMemCreate(&h2, (w->cap + gran) / gran * gran, &later, 0),
               "cuMemCreate at an unknown location type");

    /* released while mapped (map, then release at once): the memory lives until the unmap */
    size_t big = (w->cap - w->base) / 2 / gran * gran + gran;
    CUdeviceptr va = 0;
    w->failed += mem_check(a->cuMemCreate(&h, big, &prop, 0) == CUDA_SUCCESS &&
                               a->cuMemAddressReserve(&va, big, 0, 0, 0) == CUDA_SUCCESS &&
                               a->cuMemMap(va, big, 0, h, 0) == CUDA_SUCCESS,
                           "cuMemCreate, cuMemAddressReserve, cuMemMap %zu bytes", big);
    w->failed += mem_check(a->cuMemRelease(h) == CUDA_SUCCESS, "cuMemRelease while mapped");
    expect_used(w, w->base + big, "after cuMemRelease of a mapped handle");
    expect_oom(w, a->cuMemCreate(&h2, big, &prop, 0), "cuMemCreate beside a released mapping");
    w->failed += mem_check(a->cuMemUnmap(va, big) == CUDA_SUCCESS, "cuMemUnmap");
    expect_used(w, w->base, "after the unmap of a released handle");

    /* a retained handle lives until its own release, unmapped or not: counted until then
     * (given back at the unmap until 2026-11-27, with the memory still held) */
    for (int released_first = 0; released_first < 2; released_first++) {
        CUmemGenericAllocationHandle kept = 0;
        const char *order = released_first ? "released, then retained" : "retained, then released";
        int ok = a->cuMemCreate(&h, big, &prop, 0) == CUDA_SUCCESS &&
                 a->cuMemMap(va, big, 0, h, 0) == CUDA_SUCCESS;
        if (released_first)
            ok = ok && a->cuMemRelease(h) == CUDA_SUCCESS;
        ok = ok && a->cuMemRetainAllocationHandle(&kept, (void *)(uintptr_t)(va + gran)) ==
                       CUDA_SUCCESS && kept == h;
        if (!released_first)
            ok = ok && a->cuMemRelease(h) == CUDA_SUCCESS;
        ok = ok && a->cuMemUnmap(va, big) == CUDA_SUCCESS;
        w->failed += mem_check(ok, "%s: create, map, retain, release, unmap %zu bytes", order, big);
        expect_used(w, w->base + big, "a retained handle, unmapped");
        expect_oom(w, a->cuMemCreate(&h2, big, &prop, 0), "cuMemCreate beside a retained handle");
        w->failed += mem_check(a->cuMemRelease(kept) == CUDA_SUCCESS, "%s: the retain's release",
                               order);
        expect_used(w, w->base, "after the retain's release");
    }
    a->cuMemAddressFree(va, big);
}

/* A pool made with props counts an allocation from it, refuses one past the cap, and gives
 * everything back when it is destroyed. */
static void pool_counted(struct walk *w, const CUmemPoolProps *props, CUstream s,
                         const char *what)
{
    const struct mem_api *a = w->api;
    CUmemoryPool pool = NULL;
    CUdeviceptr p = 0, q;
    w->failed += mem_check(a->cuMemPoolCreate(&pool, props) == CUDA_SUCCESS &&
                               a->cuMemAllocFromPoolAsync(&p, 64 * MiB, pool, s) == CUDA_SUCCESS,
                           "%s: cuMemAllocFromPoolAsync 64 MiB", what);
    unsigned long long u = used_now(w);
    w->failed += mem_check(u >= w->base + 64 * MiB, "after an allocation from %s: used %llu "
                           "counts it", what, u);
    expect_oom(w, a->cuMemAllocFromPoolAsync(&q, w->cap, pool, s), what);
    a->cuMemFreeAsync(p, s);
    a->cuStreamSynchronize(s);
    a->cuMemPoolDestroy(pool);
    expect_used(w, w->base, "after the pool is destroyed");
}

static void walk_pools(struct walk *w, CUdevice dev)
{
    const struct mem_api *a = w->api;
    CUstream s;
    CUdeviceptr p, q;
    CUmemoryPool pool;
    a->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    w->failed += mem_check(a->cuMemAllocAsync(&p, 96 * MiB, s) == CUDA_SUCCESS,
                           "cuMemAllocAsync 96 MiB");
    unsigned long long u = used_now(w);
    w->failed += mem_check(u >= w->base + 96 * MiB && u <= w->base + w->cap,
                           "after cuMemAllocAsync: used %llu counts the pool's reserve (>= %llu)",
                           u, w->base + 96 * MiB);
    expect_oom(w, a->cuMemAllocAsync(&q, w->cap, s), "cuMemAllocAsync");
    a->cuMemFreeAsync(p, s);
    /* the default release threshold is 0: the driver trims the pool at the sync itself */
    a->cuStreamSynchronize(s);
    expect_used(w, w->base, "after cuMemFreeAsync + a sync that trims the pool");
    a->cuMemAllocAsync(&p, 96 * MiB, s);
    a->cuMemFreeAsync(p, s);
    a->cuDeviceGetMemPool(&pool, dev);
    a->cuMemPoolTrimTo(pool, 0);
    expect_used(w, w->base, "after cuMemFreeAsync + cuMemPoolTrimTo");
    /* the driver takes cuMemFreeAsync of a pointer of another allocator too: a managed one's
       count stayed for good (2026-11-28, when managed memory got records of its own) */
    w->failed += mem_check(a->cuMemAllocManaged(&p, 64 * MiB, CU_MEM_ATTACH_GLOBAL) ==
                               CUDA_SUCCESS, "cuMemAllocManaged 64 MiB");
    a->cuMemFreeAsync(p, s);
    a->cuStreamSynchronize(s);
    expect_used(w, w->base, "after cuMemFreeAsync of the managed allocation");

    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    w->failed += mem_check(a->cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS, "cuMemPoolCreate");
    w->failed += mem_check(a->cuMemAllocFromPoolAsync(&p, 64 * MiB, pool, s) == CUDA_SUCCESS,
                           "cuMemAllocFromPoolAsync 64 MiB");
    u = used_now(w);
    w->failed += mem_check(u >= w->base + 64 * MiB, "after cuMemAllocFromPoolAsync: used %llu",
                           u);
    expect_oom(w, a->cuMemAllocFromPoolAsync(&q, w->cap, pool, s), "cuMemAllocFromPoolAsync");
    a->cuMemFreeAsync(p, s);
    a->cuStreamSynchronize(s);
    w->failed += mem_check(a->cuMemPoolDestroy(pool) == CUDA_SUCCESS, "cuMemPoolDestroy");
    expect_used(w, w->base, "after cuMemPoolDestroy");

    /* a pool destroyed with an allocation outstanding lives on until it is freed */
    a->cuMemPoolCreate(&pool, &props);
    unsigned long long big = w->cap - w->base - 64 * MiB;
    w->failed += mem_check(a->cuMemAllocFromPoolAsync(&p, big, pool, s) == CUDA_SUCCESS,
                           "cuMemAllocFromPoolAsync all but 64 MiB of what is free");
    w->failed += mem_check(a->cuMemPoolDestroy(pool) == CUDA_SUCCESS,
                           "cuMemPoolDestroy with an allocation outstanding");
    u = used_now(w);
    w->failed += mem_check(u >= w->base + big,
                           "after destroying a pool still in use: used %llu still counts it", u);
    expect_oom(w, a->cuMemAlloc(&q, 128 * MiB), "cuMemAlloc_v2 beside a destroyed pool");
    a->cuMemFreeAsync(p, s);
    a->cuStreamSynchronize(s);
    expect_used(w, w->base, "after freeing the destroyed pool's last allocation");

    /* pools come and go: every new one is still counted once 300 have been destroyed */
    for (int i = 0; i < 300; i++) {
        a->cuMemPoolCreate(&pool, &props);
        a->cuMemAllocFromPoolAsync(&p, MiB, pool, s);
        a->cuMemFreeAsync(p, s);
        a->cuMemPoolDestroy(pool);
    }
    expect_used(w, w->base, "after 300 pools created, used and destroyed");
    pool_counted(w, &props, s, "the 301st pool");

    /* a managed pool placed on no device (CUDA 13) counts on the current GPU, as
     * cuMemAllocManaged does: it was taken for a host pool, and not counted, until
     * 2026-11-27 */
    props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    props.location.type = CU_MEM_LOCATION_TYPE_INVALID; /* _NONE */
    props.location.id = 0;
    pool_counted(w, &props, s, "a managed pool placed nowhere");
    a->cuStreamDestroy(s);
}

static void walk_arrays(struct walk *w)
{
    const struct mem_api *a = w->api;
    CUarray arr, arr2;
    CUmipmappedArray mip, mip2;
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT,
                                .NumChannels = 1};
    w->failed += mem_check(a->cuArrayCreate(&arr, &d2) == CUDA_SUCCESS,
                           "cuArrayCreate_v2 4096x4096 float");
    unsigned long long u = used_now(w);
    w->failed += mem_check(u >= w->base + 64 * MiB, "after cuArrayCreate_v2: used %llu", u);
    CUDA_ARRAY_DESCRIPTOR big2 = {.Width = 65536, .Height = 32768, .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1};
    expect_oom(w, a->cuArrayCreate(&arr2, &big2), "cuArrayCreate_v2");
    w->failed += mem_check(a->cuArrayDestroy(arr) == CUDA_SUCCESS, "cuArrayDestroy");
    expect_used(w, w->base, "after cuArrayDestroy");

    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 256, .Height = 256, .Depth = 256,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4};
    w->failed += mem_check(a->cuArray3DCreate(&arr, &d3) == CUDA_SUCCESS,
                           "cuArray3DCreate_v2 256^3 x 4 bytes");
    u = used_now(w);
    w->failed += mem_check(u >= w->base + 64 * MiB, "after cuArray3DCreate_v2: used %llu", u);
    CUDA_ARRAY3D_DESCRIPTOR big3 = {.Width = 2048, .Height = 2048, .Depth = 512,
                                    .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    expect_oom(w, a->cuArray3DCreate(&arr2, &big3), "cuArray3DCreate_v2");
    a->cuArrayDestroy(arr);
    expect_used(w, w->base, "after destroying the 3D array");

    CUDA_ARRAY3D_DESCRIPTOR dm = {.Width = 2048, .Height = 2048, .Depth = 0,
                                  .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    w->failed += mem_check(a->cuMipmappedArrayCreate(&mip, &dm, 4) == CUDA_SUCCESS,
                           "cuMipmappedArrayCreate 2048^2 float, 4 levels");
    u = used_now(w);
    w->failed += mem_check(u >= w->base + 16 * MiB, "after cuMipmappedArrayCreate: used %llu", u);
    expect_oom(w, a->cuMipmappedArrayCreate(&mip2, &big3, 2), "cuMipmappedArrayCreate");
    w->failed += mem_check(a->cuMipmappedArrayDestroy(mip) == CUDA_SUCCESS,
                           "cuMipmappedArrayDestroy");
    expect_used(w, w->base, "after cuMipmappedArrayDestroy");

    /* a layered one keeps its 16 layers at every level: 64 + 16 + 4 + 1 MiB (counted as if
       its layers halved too, 74 MiB, until 2026-11-28) */
    CUDA_ARRAY3D_DESCRIPTOR dl = {.Width = 1024, .Height = 1024, .Depth = 16,
                                  .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
                                  .Flags = CUDA_ARRAY3D_LAYERED};
    w->failed += mem_check(a->cuMipmappedArrayCreate(&mip, &dl, 4) == CUDA_SUCCESS,
                           "cuMipmappedArrayCreate 1024^2 float, 16 layers, 4 levels");
    u = used_now(w);
    w->failed += mem_check(u >= w->base + 85 * MiB, "after the layered one: used %llu", u);
    expect_oom(w, a->cuMipmappedArrayCreate(&mip2, &big3, 2), "cuMipmappedArrayCreate");
    a->cuMipmappedArrayDestroy(mip);
    expect_used(w, w->base, "after destroying the layered one");
}

static void walk_module(struct walk *w)
{
    CUmodule m;
    w->failed += mem_check(w->api->cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE) == CUDA_SUCCESS,
                           "cuModuleLoadData");
    unsigned long long u = used_now(w);
    w->failed += mem_check(u > w->base, "module memory counted: used %llu > %llu", u, w->base);
    w->api->cuModuleUnload(m);
    expect_used(w, w->base, "after cuModuleUnload");
}

int mem_walk(const struct mem_api *api, const char *path)
{
    struct walk w = {.api = api};
    const char *cap = getenv("MEM_CAP");
    w.cap = cap ? strtoull(cap, NULL, 0) : 4 * GiB;
    printf("# memory walk, entry points via %s, cap %llu\n", path, w.cap);

    Dl_info info = {0};
    w.failed += mem_check(dladdr((void *)api->cuMemAlloc, &info) && info.dli_fname &&
                              strstr(info.dli_fname, "libcarve"),
                          "cuMemAlloc_v2 via %s is libcarve's wrapper (%s)", path,
                          info.dli_fname ? info.dli_fname : "?");
    CUdevice dev;
    CUcontext ctx;
    size_t total = 0;
    if (api->cuInit(0) != CUDA_SUCCESS || api->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        api->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        api->cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return w.failed + mem_check(0, "cuInit, device 0 and its primary context");
    api->cuDeviceTotalMem(&total, dev);
    w.failed += mem_check(total == w.cap, "cuDeviceTotalMem_v2 %zu == cap", total);
    w.base = used_now(&w);
    w.failed += mem_check(w.base > 0 && w.base < w.cap,
                          "context memory counted: %llu bytes in use before any allocation",
                          w.base);
    walk_linear(&w);
    walk_vmm(&w, dev);
    walk_pools(&w, dev);
    walk_arrays(&w);
    walk_module(&w);
    api->cuDevicePrimaryCtxRelease(dev);
    return w.failed;
}
