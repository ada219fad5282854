/* overhead.c - context and module memory, counted by one mechanism:
 *
 *   overhead(dev) = this process's usage as NVML reports it - what we counted on dev
 *                   (less managed memory, which NVML leaves out)
 *
 * reconciled after every call that creates or destroys a context or loads or unloads a
 * module: the difference from what is already charged as overhead is charged (never
 * refused: the driver has taken it already) or released. Where NVML is missing or does not
 * list our pid, the change in cuMemGetInfo_v2's free across the call stands in. The context
 * calls also tell pace.c which contexts are made and which go, for its event pairs. */
#include "libcarve.h"
#include "nvml_procs.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_SDEV 64
#define PROC_BUF 64

static _Atomic int64_t overhead[MAX_SDEV];
static _Atomic(nvmlDevice_t) nvml_dev[MAX_SDEV];
static _Atomic int nvml_state; /* 0 unknown, 1 usable, -1 not */

void carve__overhead_reset(void)
{
    for (int i = 0; i < MAX_SDEV; i++)
        atomic_store(&overhead[i], 0);
}

/* Finds, once, the NVML handle of every slice device (by UUID). */
static bool nvml_ready(void)
{
    int s = atomic_load(&nvml_state);
    if (s)
        return s > 0;
    unsigned int n = 0;
    s = -1;
    if (R.nvmlInit_v2 && R.nvmlDeviceGetCount_v2 && R.nvmlDeviceGetHandleByIndex_v2 &&
        R.nvmlDeviceGetUUID && R.nvmlDeviceGetComputeRunningProcesses_v3 &&
        R.nvmlInit_v2() == NVML_SUCCESS && R.nvmlDeviceGetCount_v2(&n) == NVML_SUCCESS) {
        for (unsigned int i = 0; i < n; i++) {
            nvmlDevice_t h;
            if (R.nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS)
                continue;
            int sdev = carve__sdev_of_nvml(h);
            if (sdev >= 0 && sdev < MAX_SDEV)
                atomic_store(&nvml_dev[sdev], h);
        }
        s = 1;
    }
    atomic_store(&nvml_state, s);
    return s > 0;
}

/* This process's usage on sdev as NVML reports it; false when NVML cannot say. */
static bool nvml_usage(int sdev, uint64_t *bytes)
{
    nvmlDevice_t h = nvml_ready() ? atomic_load(&nvml_dev[sdev]) : NULL;
    if (!h)
        return false;
    /* entries as this driver writes them: 24 or 32 bytes (nvml_procs.h) */
    size_t stride = carve__nvml_v3_stride();
    _Alignas(nvmlProcessInfo_t) unsigned char stackbuf[PROC_BUF * CARVE_NVML_PROC_STRIDE_MAX];
    unsigned char *buf = stackbuf;
    unsigned int n = PROC_BUF;
    nvmlReturn_t r = R.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, (void *)buf);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
        n += 16;
        buf = malloc(n * stride);
        if (!buf)
            return false;
        r = R.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, (void *)buf);
    }
    bool found = false;
    unsigned int me = (unsigned int)getpid();
    for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++) {
        nvmlProcessInfo_t p = carve_nvml_proc_at(buf, stride, i);
        if (p.pid == me) {
            *bytes = p.usedGpuMemory;
            found = true;
            break;
        }
    }
    if (buf != stackbuf)
        free(buf);
    return found;
}

/* Moves the overhead charged on sdev to target bytes. Overhead is outside carve__counted
 * both ways (charge, uncharge): given back with carve__release, each decrease took that
 * count below the allocations' bytes, and the next reconciliation (usage - counted) charged
 * it again, so that every module unload and context destroy left its memory on the slice. */
static void overhead_set(int sdev, int64_t target)
{
    if (target < 0)
        target = 0;
    int64_t old = atomic_exchange(&overhead[sdev], target);
    if (target > old)
        carve__charge(sdev, (uint64_t)(target - old));
    else if (old > target)
        carve__uncharge(sdev, (uint64_t)(old - target));
}

/* sdev's overhead from NVML's usage less what this process counted; false when NVML cannot
 * say. The pools' books must be fresh (carve__pools_refresh): what they still hold past what
 * the pools reserve would be taken off the usage as if it were held. */
static bool overhead_from_nvml(int sdev)
{
    /* usage and count of one moment: a free given back between NVML's answer and the read
     * of the count took its bytes off the count but not off the usage, and was charged as
     * overhead; a process that ended before the next refresh left it on its slot
     * (mem_stress, 1 run in 12 on a busy CPU). Counts that keep moving: the overhead stays
     * as it is until the next refresh, and small frees wait on (carve__release_freed): they
     * are given back with a reading that charges the pages still held, never without one. */
    for (int tries = 0; tries < 4; tries++) {
        uint64_t moves = carve__counted_moves(sdev), usage;
        uint64_t counted = carve__counted(sdev), managed = carve__managed(sdev);
        uint64_t freed = carve__freed_small(sdev);
        /* what NVML's usage includes: not managed memory, nor small allocations freed */
        counted = counted > managed + freed ? counted - managed - freed : 0;
        atomic_thread_fence(memory_order_acquire); /* the count is read before the last look */
        /* the bytes in flight at NVML's answer: those in flight before it, and those put in
           flight since (two calls, one ending and one starting around the answer, are both
           counted; the larger of two readings missed the smaller call) */
        uint64_t put_before, put_after;
        uint64_t in_flight = carve__mem_in_flight(&put_before);
        if (!nvml_usage(sdev, &usage)) {
            carve__release_freed_small(sdev); /* no reading to charge pages with: as before */
            return false;
        }
        carve__mem_in_flight(&put_after);
        in_flight += put_after - put_before;
        /* pool memory the driver released at a sync since the pools were last looked at
           (carve__overhead_refresh) left NVML's usage low against the count: its release
           from the books moves the count, and the reading is not used */
        carve__pools_refresh();
        if (carve__counted_moves(sdev) == moves) {
            /* with allocations or frees under way NVML's usage is low by up to the bytes
               they move (carve__mem_in_flight): the overhead is lowered no further than
               that allows */
            int64_t estimate = (int64_t)usage - (int64_t)counted;
            int64_t now = atomic_load(&overhead[sdev]);
            if (estimate < now) {
                int64_t within = estimate + (int64_t)in_flight;
                estimate = within < now ? within : now;
            }
            /* the frees this reading left out, unless another reading took them meanwhile
               or more came (then read again): charged first, then given back */
            if (freed && !carve__take_freed_small(sdev, freed))
                continue;
            overhead_set(sdev, estimate);
            carve__release(sdev, freed);
            return true;
        }
    }
    return true;
}

#define REFRESH_EVERY_NS 10000000ull /* 10 ms */

bool carve__overhead_refresh(void)
{
    static _Atomic uint64_t next;
    uint64_t now = carve__now_ns(), due = atomic_load(&next);
    /* small frees waiting for a reading are read at once: a program that freed them and
       asks again must find the memory the driver gave back */
    bool waiting = carve__freed_small_waiting();
    if (!carve__active())
        return false;
    if (waiting) /* whether or not another thread reads meanwhile (overhead_from_nvml) */
        atomic_store(&next, now + REFRESH_EVERY_NS);
    else if (now < due || !atomic_compare_exchange_strong(&next, &due, now + REFRESH_EVERY_NS))
        return false;
    carve__pools_refresh();
    bool lower = false;
    int ndev = carve__ndev();
    for (int sdev = 0; sdev < ndev && sdev < MAX_SDEV; sdev++) {
        int64_t before = atomic_load(&overhead[sdev]);
        lower |= overhead_from_nvml(sdev) && atomic_load(&overhead[sdev]) < before;
    }
    return lower || waiting;
}

void carve__overhead_begin(struct carve_probe *p)
{
    struct carve_dev d;
    size_t total;
    p->active = carve__active();
    p->have_free = false;
    p->sdev = -1;
    if (p->active && carve__dev_current(&d) && R.cuMemGetInfo_v2 &&
        R.cuMemGetInfo_v2(&p->free_before, &total) == CUDA_SUCCESS) {
        p->sdev = d.sdev;
        p->have_free = true;
    }
}

void carve__overhead_end(struct carve_probe *p)
{
    if (!p->active)
        return;
    /* what the pools' books still hold past what they reserve (the driver releases pool
     * memory at a sync, libcarve learns it lazily) would be taken off the usage below as if
     * it were held, and the context's and modules' memory go uncounted */
    carve__pools_refresh();
    bool fallback_done = false;
    int ndev = carve__ndev();
    for (int sdev = 0; sdev < ndev && sdev < MAX_SDEV; sdev++) {
        if (overhead_from_nvml(sdev)) {
            continue;
        } else if (sdev == p->sdev && p->have_free && !fallback_done) {
            size_t free_after, total;
            fallback_done = true;
            if (R.cuMemGetInfo_v2(&free_after, &total) != CUDA_SUCCESS)
                continue;
            int64_t delta = (int64_t)p->free_before - (int64_t)free_after;
            overhead_set(sdev, atomic_load(&overhead[sdev]) + delta);
        }
    }
}

/* The start of every wrapper below: libcarve's init, and the driver's entry point. */
#define READY(name)                                             \
    carve__init();                                              \
    if (!R.name)                                                \
        return CUDA_ERROR_NOT_INITIALIZED;

/* CUresult r = the call, which may change context or module memory; one that makes a context
 * on dev (else -1) has a refusal for the GPU's compute mode explained
 * (carve__say_unavailable). */
#define PROBED(r, name, args, dev)                              \
    struct carve_probe p_;                                      \
    carve__overhead_begin(&p_);                                 \
    CUresult r = R.name args;                                   \
    carve__overhead_end(&p_);                                   \
    if (r == CUDA_ERROR_DEVICE_UNAVAILABLE && (int)(dev) >= 0)  \
        carve__say_unavailable(dev);

#define WITH_OVERHEAD(name, args)                               \
    READY(name)                                                 \
    PROBED(r, name, args, -1)                                   \
    return r;

/* dev's primary context: 1 active, 0 not, -1 unknown. Asked only while launches are paced
 * (pace.c's event pairs are what it is for). */
static int primary_state(CUdevice dev)
{
    unsigned int flags;
    int active = 0;
    if (!atomic_load(&carve__pacing) || !R.cuDevicePrimaryCtxGetState ||
        R.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS)
        return -1;
    return active != 0;
}

/* A context made by the wrapped call (a primary one: primary; fresh: made by this call, not
 * an active one retained again): pace.c is told its handle. */
static void made(CUresult r, CUcontext *pctx, CUdevice dev, bool primary, bool fresh)
{
    if (r == CUDA_SUCCESS && pctx)
        carve__pace_made(*pctx, dev, primary, fresh);
}

CARVE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    READY(cuDevicePrimaryCtxRetain)
    bool fresh = primary_state(dev) == 0;
    PROBED(r, cuDevicePrimaryCtxRetain, (pctx, dev), dev)
    made(r, pctx, dev, true, fresh);
    return r;
}

/* The primary context goes with its last release: pace.c forgets its event pairs then. A
 * state the driver cannot tell counts as gone (pairs forgotten in a live context only leak
 * their events; pairs kept past their context would be used after it). */
CARVE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    READY(cuDevicePrimaryCtxRelease_v2)
    struct carve_pace_close c;
    carve__pace_closing(&c, NULL, dev);
    PROBED(r, cuDevicePrimaryCtxRelease_v2, (dev), -1)
    carve__pace_closed(&c, r == CUDA_SUCCESS && primary_state(dev) != 1);
    return r;
}

/* A reset destroys the primary context's state, its events with it, retained or not. */
CARVE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    READY(cuDevicePrimaryCtxReset_v2)
    struct carve_pace_close c;
    carve__pace_closing(&c, NULL, dev);
    PROBED(r, cuDevicePrimaryCtxReset_v2, (dev), -1)
    carve__pace_closed(&c, r == CUDA_SUCCESS);
    return r;
}

CARVE_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    READY(cuCtxCreate_v2)
    PROBED(r, cuCtxCreate_v2, (pctx, flags, dev), dev)
    made(r, pctx, dev, false, true);
    return r;
}

CARVE_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params,
                                     int numParams, unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    READY(cuCtxCreate_v3)
    PROBED(r, cuCtxCreate_v3, (pctx, params, numParams, flags, dev), dev)
    made(r, pctx, dev, false, true);
    return r;
}

CARVE_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                     unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    READY(cuCtxCreate_v4)
    PROBED(r, cuCtxCreate_v4, (pctx, params, flags, dev), dev)
    made(r, pctx, dev, false, true);
    return r;
}

CARVE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    READY(cuCtxDestroy_v2)
    struct carve_pace_close c;
    carve__pace_closing(&c, ctx, -1);
    PROBED(r, cuCtxDestroy_v2, (ctx), -1)
    carve__pace_closed(&c, r == CUDA_SUCCESS);
    return r;
}

/* A green context (CUDA 12.4) is a context like another: none for a refused process, and its
 * memory is the context's (it was neither, until 2026-11-27). It is not made current, and
 * pace.c learns of it at its first launch, as of any context whose making it did not see. */
CARVE_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                                       unsigned int flags)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    READY(cuGreenCtxCreate)
    PROBED(r, cuGreenCtxCreate, (phCtx, desc, dev, flags), dev)
    return r;
}

/* Its sampling events go with it, as a destroyed context's (the context the driver pairs
 * with it names them). */
CARVE_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    READY(cuGreenCtxDestroy)
    CUcontext ctx = NULL;
    struct carve_pace_close c;
    bool paired = R.cuCtxFromGreenCtx && R.cuCtxFromGreenCtx(&ctx, hCtx) == CUDA_SUCCESS && ctx;
    if (paired)
        carve__pace_closing(&c, ctx, -1);
    PROBED(r, cuGreenCtxDestroy, (hCtx), -1)
    if (paired)
        carve__pace_closed(&c, r == CUDA_SUCCESS);
    return r;
}

/* A stack size, heap size or printf buffer for the current context: memory the driver may
 * take at once (a stack for every thread the GPU can hold), read as the context's. */
CARVE_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    WITH_OVERHEAD(cuCtxSetLimit, (limit, value))
}

CARVE_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    WITH_OVERHEAD(cuModuleLoad, (module, fname))
}

CARVE_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    WITH_OVERHEAD(cuModuleLoadData, (module, image))
}

CARVE_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                         unsigned int numOptions, CUjit_option *options,
                                         void **optionValues)
{
    WITH_OVERHEAD(cuModuleLoadDataEx, (module, image, numOptions, options, optionValues))
}

CARVE_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    WITH_OVERHEAD(cuModuleLoadFatBinary, (module, fatCubin))
}

CARVE_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    WITH_OVERHEAD(cuModuleUnload, (hmod))
}

CARVE_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                        CUjit_option *jitOptions, void **jitOptionsValues,
                                        unsigned int numJitOptions,
                                        CUlibraryOption *libraryOptions,
                                        void **libraryOptionValues,
                                        unsigned int numLibraryOptions)
{
    WITH_OVERHEAD(cuLibraryLoadData, (library, code, jitOptions, jitOptionsValues,
                                      numJitOptions, libraryOptions, libraryOptionValues,
                                      numLibraryOptions))
}

CARVE_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                            CUjit_option *jitOptions, void **jitOptionsValues,
                                            unsigned int numJitOptions,
                                            CUlibraryOption *libraryOptions,
                                            void **libraryOptionValues,
                                            unsigned int numLibraryOptions)
{
    WITH_OVERHEAD(cuLibraryLoadFromFile, (library, fileName, jitOptions, jitOptionsValues,
                                          numJitOptions, libraryOptions, libraryOptionValues,
                                          numLibraryOptions))
}

CARVE_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    WITH_OVERHEAD(cuLibraryUnload, (library))
}
