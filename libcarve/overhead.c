/* overhead.c - context and module memory, counted by one mechanism:
 *
 *   overhead(dev) = this process's usage as NVML reports it - what we counted on dev
 *
 * reconciled after every call that creates or destroys a context or loads or unloads a
 * module: the difference from what is already charged as overhead is charged (never
 * refused: the driver has taken it already) or released. Where NVML is missing or does not
 * list our pid, the change in cuMemGetInfo_v2's free across the call stands in. */
#include "libcarve.h"
#include "nvml_procs.h"

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
    bool fallback_done = false;
    int ndev = carve__ndev();
    for (int sdev = 0; sdev < ndev && sdev < MAX_SDEV; sdev++) {
        uint64_t usage;
        if (nvml_usage(sdev, &usage)) {
            overhead_set(sdev, (int64_t)usage - (int64_t)carve__counted(sdev));
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

/* Body of a wrapper whose call may change context or module memory; one that makes a
 * context on dev (else -1) has a refusal for the GPU's compute mode explained
 * (carve__say_unavailable). */
#define WITH_NEW_CONTEXT(name, args, dev)                       \
    struct carve_probe p;                                       \
    carve__init();                                              \
    if (!R.name)                                                \
        return CUDA_ERROR_NOT_INITIALIZED;                      \
    carve__overhead_begin(&p);                                  \
    CUresult r = R.name args;                                   \
    carve__overhead_end(&p);                                    \
    if (r == CUDA_ERROR_DEVICE_UNAVAILABLE && (int)(dev) >= 0)  \
        carve__say_unavailable(dev);                            \
    return r;
#define WITH_OVERHEAD(name, args) WITH_NEW_CONTEXT(name, args, -1)

CARVE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    WITH_NEW_CONTEXT(cuDevicePrimaryCtxRetain, (pctx, dev), dev)
}

CARVE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    WITH_OVERHEAD(cuDevicePrimaryCtxRelease_v2, (dev))
}

CARVE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    WITH_OVERHEAD(cuDevicePrimaryCtxReset_v2, (dev))
}

CARVE_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    WITH_NEW_CONTEXT(cuCtxCreate_v2, (pctx, flags, dev), dev)
}

CARVE_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params,
                                     int numParams, unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    WITH_NEW_CONTEXT(cuCtxCreate_v3, (pctx, params, numParams, flags, dev), dev)
}

CARVE_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                     unsigned int flags, CUdevice dev)
{
    if (carve__refused())
        return CUDA_ERROR_NOT_PERMITTED;
    WITH_NEW_CONTEXT(cuCtxCreate_v4, (pctx, params, flags, dev), dev)
}

CARVE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    WITH_OVERHEAD(cuCtxDestroy_v2, (ctx))
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
