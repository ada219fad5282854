/* cuda_load.c - open the driver API at run time for the bench programs (see cuda_load.h). */
#include "cuda_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int bcu_resolve(struct bcu *cu)
{
#define BCU_RESOLVE(fn)                                                                        \
    cu->fn = (__typeof__(fn) *)dlsym(cu->handle, #fn);                                         \
    if (!cu->fn) {                                                                             \
        fprintf(stderr, "libcuda.so.1 has no %s: %s\n", #fn, dlerror());                       \
        return -1;                                                                             \
    }
    BCU_FUNCTIONS(BCU_RESOLVE)
#undef BCU_RESOLVE
    return 0;
}

int bcu_open(struct bcu *cu, int ordinal)
{
    CUresult rc;

    memset(cu, 0, sizeof(*cu));
    cu->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cu->handle) {
        fprintf(stderr, "cannot open libcuda.so.1: %s\n"
                "(no NVIDIA driver here? run under `carve run --simulate`)\n", dlerror());
        return -1;
    }
    if (bcu_resolve(cu) != 0)
        goto fail;
    if ((rc = cu->cuInit(0)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuInit failed: %s\n", bcu_errname(cu, rc));
        goto fail;
    }
    if ((rc = cu->cuDeviceGet(&cu->dev, ordinal)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuDeviceGet(%d) failed: %s\n", ordinal, bcu_errname(cu, rc));
        goto fail;
    }
    if (cu->cuDeviceGetName(cu->name, (int)sizeof(cu->name), cu->dev) != CUDA_SUCCESS)
        snprintf(cu->name, sizeof(cu->name), "device %d", ordinal);
    if ((rc = cu->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuDevicePrimaryCtxRetain failed: %s\n", bcu_errname(cu, rc));
        goto fail;
    }
    if ((rc = cu->cuCtxSetCurrent(cu->ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuCtxSetCurrent failed: %s\n", bcu_errname(cu, rc));
        cu->cuDevicePrimaryCtxRelease_v2(cu->dev);
        goto fail;
    }
    return 0;
fail:
    dlclose(cu->handle);
    cu->handle = NULL;
    return -1;
}

void bcu_close(struct bcu *cu)
{
    if (!cu->handle)
        return;
    if (cu->ctx)
        cu->cuDevicePrimaryCtxRelease_v2(cu->dev);
    dlclose(cu->handle);
    cu->handle = NULL;
}

const char *bcu_errname(const struct bcu *cu, CUresult rc)
{
    static char buf[32];
    const char *name = NULL;

    if (cu->cuGetErrorName && cu->cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, sizeof(buf), "CUresult %d", rc);
    return buf;
}

uint64_t bcu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
