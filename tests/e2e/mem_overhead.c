/* mem_overhead.c - context and module memory (overhead.c) comes and goes without a trace: in
 * a slice on the simulated GPU (a context takes CARVE_SIM_CTX_MEMORY, a module
 * CARVE_SIM_MODULE_MEMORY), with an allocation held throughout, modules loaded and unloaded,
 * contexts created and destroyed and the primary context released and retained again must
 * bring the slice's usage back to where it was each time. Until 2026-11-27 each decrease was
 * given back as if it were an allocation's, pushing what the process counted for its
 * allocations below the truth, and the next reconciliation charged the difference again:
 * usage grew by a module's memory per load and unload, and by a context's per release and
 * retain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dlfcn.h>

#include "mem_common.h"

#define ROUNDS 5

static struct mem_api a;
static CUresult (*ctx_create)(CUcontext *, unsigned int, CUdevice);
static CUresult (*ctx_destroy)(CUcontext);
static CUresult (*ctx_set_limit)(CUlimit, size_t);
static CUresult (*green_create)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned int);
static CUresult (*green_destroy)(CUgreenCtx);
static CUresult (*module_function)(CUfunction *, CUmodule, const char *);
static unsigned long long cap;
static int failed;

static unsigned long long used(void)
{
    size_t f = 0, t = 0;
    if (a.cuMemGetInfo(&f, &t) != CUDA_SUCCESS || t != cap) {
        failed += mem_check(0, "cuMemGetInfo: total %zu == cap %llu", t, cap);
        return ~0ull;
    }
    return t - f;
}

static void expect_used(unsigned long long want, const char *what, int round)
{
    unsigned long long u = used();
    failed += mem_check(u == want, "%s, round %d: used %llu MiB == %llu MiB", what, round,
                        u / MiB, want / MiB);
}

static void modules(unsigned long long base)
{
    for (int i = 1; i <= ROUNDS; i++) {
        CUmodule m;
        failed += mem_check(a.cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE) == CUDA_SUCCESS,
                            "cuModuleLoadData, round %d", i);
        unsigned long long u = used();
        failed += mem_check(u > base, "module loaded, round %d: used %llu MiB > %llu MiB", i,
                            u / MiB, base / MiB);
        a.cuModuleUnload(m);
        expect_used(base, "after cuModuleUnload", i);
    }
}

static void contexts(CUdevice dev, CUcontext primary, unsigned long long base)
{
    for (int i = 1; i <= ROUNDS; i++) {
        CUcontext c;
        failed += mem_check(ctx_create(&c, 0, dev) == CUDA_SUCCESS, "cuCtxCreate_v2, round %d",
                            i);
        unsigned long long u = used();
        failed += mem_check(u > base, "second context, round %d: used %llu MiB > %llu MiB", i,
                            u / MiB, base / MiB);
        ctx_destroy(c);
        a.cuCtxSetCurrent(primary);
        expect_used(base, "after cuCtxDestroy_v2", i);
    }
}

/* The primary context released and retained again: what it held goes and comes back. The
 * allocation is freed first, since the context's release frees its memory. */
static void primary(CUdevice dev, unsigned long long base)
{
    for (int i = 1; i <= ROUNDS; i++) {
        CUcontext c;
        a.cuDevicePrimaryCtxRelease(dev);
        failed += mem_check(a.cuDevicePrimaryCtxRetain(&c, dev) == CUDA_SUCCESS &&
                                a.cuCtxSetCurrent(c) == CUDA_SUCCESS,
                            "cuDevicePrimaryCtxRelease_v2 and Retain, round %d", i);
        expect_used(base, "after the primary context's release and retain", i);
    }
}

/* A pool the driver released at a sync (release threshold 0) while libcarve still counted it:
 * the module load's reconciliation (NVML usage - counted) came out below 0 and set the
 * context's memory as nothing, and cuMemGetInfo then gave back the pool's charge: the slice
 * read 0 MiB used with the context's 500 MiB held, and a tenant could allocate its whole cap
 * beside it (until 2026-11-27). */
static void pool_then_module(unsigned long long base)
{
    CUstream s;
    CUdeviceptr p;
    CUmodule m;
    failed += mem_check(a.cuStreamCreate(&s, 0) == CUDA_SUCCESS &&
                            a.cuMemAllocAsync(&p, 2048 * MiB, s) == CUDA_SUCCESS &&
                            a.cuMemFreeAsync(p, s) == CUDA_SUCCESS &&
                            a.cuStreamSynchronize(s) == CUDA_SUCCESS,
                        "cuMemAllocAsync 2 GiB, freed, the stream synchronised");
    failed += mem_check(a.cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE) == CUDA_SUCCESS,
                        "cuModuleLoadData after the pool's release");
    unsigned long long u = used();
    failed += mem_check(u > base && u < base + 512 * MiB,
                        "module loaded after the pool's release: used %llu MiB, over %llu MiB "
                        "and less than 512 MiB more", u / MiB, base / MiB);
    a.cuModuleUnload(m);
    a.cuStreamDestroy(s);
    expect_used(base, "after the module's unload", 0);
}

/* A heap or stack limit raised takes memory at once on the simulated GPU (a stack for every
 * thread the GPU holds): charged as the context's, and given back when lowered again. It
 * went uncounted until 2026-11-27 (cuCtxSetLimit was not wrapped): a 1 GiB heap beside an
 * allocation of the whole cap. */
static void limits(unsigned long long base)
{
    failed += mem_check(ctx_set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, 1024 * MiB) == CUDA_SUCCESS,
                        "cuCtxSetLimit: a 1 GiB heap");
    expect_used(base + 1016 * MiB, "with a 1 GiB heap (8 MiB is the context's own)", 0);
    failed += mem_check(ctx_set_limit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * MiB) == CUDA_SUCCESS,
                        "cuCtxSetLimit: the heap back to 8 MiB");
    expect_used(base, "with the heap back to 8 MiB", 0);
    failed += mem_check(ctx_set_limit(CU_LIMIT_STACK_SIZE, 2048) == CUDA_SUCCESS,
                        "cuCtxSetLimit: a stack of 2 KiB a thread");
    unsigned long long u = used();
    failed += mem_check(u > base, "with 2 KiB stacks: used %llu MiB > %llu MiB", u / MiB,
                        base / MiB);
    ctx_set_limit(CU_LIMIT_STACK_SIZE, 1024);
    expect_used(base, "with the stack back to 1 KiB", 0);
}

/* A green context's memory is a context's: counted while it lives (it was not, and a
 * process refused a GPU got one, until 2026-11-27). */
static void green(CUdevice dev, unsigned long long base)
{
    for (int i = 1; i <= ROUNDS; i++) {
        CUgreenCtx g;
        failed += mem_check(green_create(&g, NULL, dev, CU_GREEN_CTX_DEFAULT_STREAM) ==
                                CUDA_SUCCESS, "cuGreenCtxCreate, round %d", i);
        unsigned long long u = used();
        failed += mem_check(u > base, "green context, round %d: used %llu MiB > %llu MiB", i,
                            u / MiB, base / MiB);
        failed += mem_check(green_destroy(g) == CUDA_SUCCESS, "cuGreenCtxDestroy, round %d", i);
        expect_used(base, "after cuGreenCtxDestroy", i);
    }
}

/* Memory the driver takes between the calls that reconcile (a kernel loaded lazily, at its
 * first use: CARVE_SIM_LAZY_MEMORY at the module's first cuModuleGetFunction) is in the view
 * at the next cuMemGetInfo, which reads NVML again at most every 10 ms: it was not until the
 * next context or module call (until 2026-11-27), and a framework that sizes its caches from
 * cuMemGetInfo (vLLM) went past the cap by that much. An allocation of all the free the view
 * reports then fits, and one more MiB does not. */
static void lazy(unsigned long long base, unsigned long long lazy_bytes)
{
    CUmodule m;
    CUfunction f;
    CUdeviceptr p, q;
    failed += mem_check(a.cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE) == CUDA_SUCCESS &&
                            module_function(&f, m, "carve_sleep") == CUDA_SUCCESS,
                        "cuModuleLoadData and the first cuModuleGetFunction");
    struct timespec past_refresh = {.tv_nsec = 20000000};
    nanosleep(&past_refresh, NULL);
    unsigned long long u = used();
    failed += mem_check(u >= base + lazy_bytes,
                        "with a kernel loaded lazily: used %llu MiB >= %llu MiB (+%llu lazily)",
                        u / MiB, (base + lazy_bytes) / MiB, lazy_bytes / MiB);
    failed += mem_check(a.cuMemAlloc(&p, cap - u) == CUDA_SUCCESS,
                        "cuMemAlloc_v2 of the %llu MiB free", (cap - u) / MiB);
    failed += mem_check(a.cuMemAlloc(&q, MiB) == CUDA_ERROR_OUT_OF_MEMORY,
                        "one MiB more: refused");
    a.cuMemFree(p);
    a.cuModuleUnload(m);
    expect_used(base, "after the lazily loaded module's unload", 0);
}

/* `mem_overhead refused`, run where libcarve refuses the process a GPU (its slice is gone):
 * no context of any kind. */
static int refused(void)
{
    CUdevice dev;
    CUcontext c;
    CUgreenCtx g;
    if (a.cuInit(0) != CUDA_SUCCESS || a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
        return 2;
    CUresult rc = ctx_create(&c, 0, dev), rg = green_create(&g, NULL, dev,
                                                             CU_GREEN_CTX_DEFAULT_STREAM);
    failed += mem_check(rc == CUDA_ERROR_NOT_PERMITTED, "refused: cuCtxCreate_v2 %d", rc);
    failed += mem_check(rg == CUDA_ERROR_NOT_PERMITTED, "refused: cuGreenCtxCreate %d", rg);
    printf("mem_overhead refused: %d failed\n", failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    size_t f, t;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (mem_api_dlsym(&a) != 0 || !h)
        return 2;
    ctx_create = (__typeof__(ctx_create))dlsym(h, "cuCtxCreate_v2");
    ctx_destroy = (__typeof__(ctx_destroy))dlsym(h, "cuCtxDestroy_v2");
    ctx_set_limit = (__typeof__(ctx_set_limit))dlsym(h, "cuCtxSetLimit");
    green_create = (__typeof__(green_create))dlsym(h, "cuGreenCtxCreate");
    green_destroy = (__typeof__(green_destroy))dlsym(h, "cuGreenCtxDestroy");
    module_function = (__typeof__(module_function))dlsym(h, "cuModuleGetFunction");
    if (!ctx_create || !ctx_destroy || !green_create || !green_destroy || !module_function)
        return 2;
    if (argc > 1 && strcmp(argv[1], "refused") == 0)
        return refused();
    if (!ctx_set_limit || a.cuInit(0) != CUDA_SUCCESS ||
        a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || a.cuMemGetInfo(&f, &t) != CUDA_SUCCESS)
        return 2;
    cap = t;
    unsigned long long ctx_only = used();
    failed += mem_check(ctx_only > 0, "context memory counted: %llu MiB", ctx_only / MiB);
    failed += mem_check(a.cuMemAlloc(&p, 256 * MiB) == CUDA_SUCCESS, "cuMemAlloc_v2 256 MiB");
    unsigned long long base = used();
    failed += mem_check(base == ctx_only + 256 * MiB, "with the allocation: used %llu MiB",
                        base / MiB);
    modules(base);
    limits(base);
    contexts(dev, ctx, base);
    green(dev, base);
    a.cuMemFree(p);
    expect_used(ctx_only, "after cuMemFree_v2", 0);
    primary(dev, ctx_only);
    modules(ctx_only);
    pool_then_module(ctx_only);
    const char *lazy_env = getenv("MEM_LAZY_MIB");
    if (lazy_env)
        lazy(ctx_only, strtoull(lazy_env, NULL, 10) * MiB);
    printf("mem_overhead: %d failed\n", failed);
    return failed ? 1 : 0;
}
