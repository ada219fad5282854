/* mem_first.c - cuMemAlloc_v2 as the process's first call that libcarve wraps: it read the
 * real entry point before libcarve's init had resolved it, and answered
 * CUDA_ERROR_NOT_INITIALIZED whatever the driver would have said (until 2026-11-27).
 *
 * The context is made through entry points libcarve does not hand out (glibc's own dlsym,
 * found with dlvsym as interposers find it, answers the driver's), as a library that
 * resolves the driver by itself would; cuMemAlloc_v2 is then libcarve's wrapper, from dlsym
 * (which does not init). Run in
 * a slice of MEM_CAP bytes (env, default 1 GiB): the allocation must go through and count,
 * and one past the cap be refused.
 *
 *   mem_first [ctx]      the context first, then cuMemAlloc_v2
 *   mem_first noctx      cuMemAlloc_v2 before any context: the driver's own answer
 *                        (CUDA_ERROR_INVALID_CONTEXT on the simulated GPU) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

int main(int argc, char **argv)
{
    const char *capv = getenv("MEM_CAP");
    unsigned long long cap = capv ? strtoull(capv, NULL, 0) : GiB;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 2;
    /* the driver's own entry points, through glibc's dlsym (as another interposer finds it) */
    void *(*real_dlsym)(void *, const char *) =
        (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
        real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!real_dlsym)
        return 2;
    __typeof__(&cuInit) init = (__typeof__(init))real_dlsym(h, "cuInit");
    __typeof__(&cuDeviceGet) dev_get = (__typeof__(dev_get))real_dlsym(h, "cuDeviceGet");
    __typeof__(&cuDevicePrimaryCtxRetain) retain =
        (__typeof__(retain))real_dlsym(h, "cuDevicePrimaryCtxRetain");
    __typeof__(&cuCtxSetCurrent) set_current =
        (__typeof__(set_current))real_dlsym(h, "cuCtxSetCurrent");
    /* libcarve's wrappers, through its dlsym */
    __typeof__(&cuMemAlloc_v2) alloc = (__typeof__(alloc))dlsym(h, "cuMemAlloc_v2");
    __typeof__(&cuMemFree_v2) mem_free = (__typeof__(mem_free))dlsym(h, "cuMemFree_v2");
    Dl_info info = {0};
    if (!init || !dev_get || !retain || !set_current || !alloc || !mem_free ||
        !dladdr((void *)alloc, &info) || !info.dli_fname || !strstr(info.dli_fname, "libcarve") ||
        !dladdr((void *)retain, &info) || !info.dli_fname || strstr(info.dli_fname, "libcarve")) {
        printf("FAIL - the driver's entry points by glibc's dlsym, libcarve's cuMemAlloc_v2 by "
               "dlsym\n");
        return 2;
    }
    int failed = 0;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p = 0, q = 0;
    if (init(0) != CUDA_SUCCESS || dev_get(&dev, 0) != CUDA_SUCCESS)
        return 2;
    if (argc > 1 && strcmp(argv[1], "noctx") == 0) {
        CUresult r = alloc(&p, MiB);
        failed += mem_check(r == CUDA_ERROR_INVALID_CONTEXT,
                            "cuMemAlloc_v2 first, no context: %d == INVALID_CONTEXT (the "
                            "driver's answer)", r);
        printf("mem_first: %d failed\n", failed);
        return failed ? 1 : 0;
    }
    if (retain(&ctx, dev) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS)
        return 2;
    CUresult r = alloc(&p, 256 * MiB);
    failed += mem_check(r == CUDA_SUCCESS, "cuMemAlloc_v2 256 MiB first: %d == SUCCESS", r);
    r = alloc(&q, cap);
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                        "cuMemAlloc_v2 of the cap beside it: %d == OUT_OF_MEMORY", r);
    if (r == CUDA_SUCCESS)
        mem_free(q);
    r = mem_free(p);
    failed += mem_check(r == CUDA_SUCCESS, "cuMemFree_v2: %d == SUCCESS", r);
    r = alloc(&q, cap - 64 * MiB);
    failed += mem_check(r == CUDA_SUCCESS, "cuMemAlloc_v2 of the cap less 64 MiB once it is "
                        "freed: %d == SUCCESS", r);
    printf("mem_first: %d failed\n", failed);
    return failed ? 1 : 0;
}
