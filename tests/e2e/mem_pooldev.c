/* mem_pooldev.c - a pool's memory is on the device the pool belongs to, whichever device is
 * current: in a slice with a 1 GiB cap on GPU 1 (two simulated GPUs, no context memory) and
 * GPU 0 current, allocations from a pool made on GPU 1, and from GPU 1's default pool, are
 * held to GPU 1's 1 GiB and leave GPU 0 alone. GPU 0 has a cap of 4 GiB or none (the slice's
 * caps say): until 2026-11-27 a pool allocation with an uncapped GPU current went through
 * uncounted, whatever the pool's GPU (4 x 1 GiB from GPU 1's pools, the slice counted 0).
 * cuMemAllocAsync on a stream of GPU 1 with GPU 0 current takes GPU 1's pool and counts
 * there (it counted on GPU 0 until 2026-11-29).
 *
 *   mem_pooldev [FILL]
 *
 * FILL: pools made on GPU 0 first and kept live (256 fill libcarve's table of pools): the
 * allocations from GPU 1's pools are then counted by request, and must still count on GPU 1,
 * not on the current GPU 0 (until 2026-11-27 they did). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

#define FILL_MAX 1024

static CUmemPoolProps props_on(int dev)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    return props;
}

int main(int argc, char **argv)
{
    struct mem_api a;
    CUdevice dev0;
    CUcontext ctx;
    CUdeviceptr p, q, r0;
    CUmemoryPool pool, dflt, fill[FILL_MAX];
    int failed = 0, nfill = argc > 1 ? atoi(argv[1]) : 0;
    if (nfill < 0 || nfill > FILL_MAX || mem_api_dlsym(&a) != 0 || a.cuInit(0) != CUDA_SUCCESS ||
        a.cuDeviceGet(&dev0, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev0) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 2;
    CUmemPoolProps on0 = props_on(0), on1 = props_on(1);
    int made = 0;
    while (made < nfill && a.cuMemPoolCreate(&fill[made], &on0) == CUDA_SUCCESS)
        made++;
    if (nfill)
        failed += mem_check(made == nfill, "%d of %d pools made on GPU 0 and kept", made, nfill);
    failed += mem_check(a.cuMemPoolCreate(&pool, &on1) == CUDA_SUCCESS,
                        "cuMemPoolCreate on GPU 1");
    CUresult r = a.cuMemAllocFromPoolAsync(&p, 2 * GiB, pool, NULL);
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                        "2 GiB from GPU 1's pool, GPU 0 current: %d == OUT_OF_MEMORY", r);
    r = a.cuMemAllocFromPoolAsync(&p, 512 * MiB, pool, NULL);
    failed += mem_check(r == CUDA_SUCCESS, "512 MiB from GPU 1's pool: %d == SUCCESS", r);
    r = a.cuMemAllocFromPoolAsync(&q, 600 * MiB, pool, NULL);
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                        "600 MiB more from it: %d == OUT_OF_MEMORY", r);
    failed += mem_check(a.cuDeviceGetDefaultMemPool(&dflt, 1) == CUDA_SUCCESS,
                        "cuDeviceGetDefaultMemPool of GPU 1");
    r = a.cuMemAllocFromPoolAsync(&q, 768 * MiB, dflt, NULL);
    failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                        "768 MiB from GPU 1's default pool beside 512 MiB: %d == OUT_OF_MEMORY", r);
    r = a.cuMemAlloc(&r0, 3 * GiB);
    failed += mem_check(r == CUDA_SUCCESS, "3 GiB on GPU 0, its cap untouched: %d == SUCCESS", r);
    if (r == CUDA_SUCCESS)
        a.cuMemFree(r0);
    a.cuMemFreeAsync(p, NULL);
    a.cuMemPoolDestroy(pool);
    r = a.cuMemAllocFromPoolAsync(&q, 768 * MiB, dflt, NULL);
    failed += mem_check(r == CUDA_SUCCESS,
                        "768 MiB from GPU 1's default pool once the other is gone: %d", r);
    if (r == CUDA_SUCCESS)
        a.cuMemFreeAsync(q, NULL);
    /* the review's repro: four allocations of nearly 1 GiB from GPU 1's pools; the first
     * alone fits */
    a.cuStreamSynchronize(NULL);
    a.cuMemPoolTrimTo(dflt, 0);
    a.cuMemPoolCreate(&pool, &on1);
    CUdeviceptr four[4];
    for (int i = 0; i < 4; i++) {
        r = a.cuMemAllocFromPoolAsync(&four[i], GiB - 64 * MiB, i % 2 ? dflt : pool, NULL);
        if (i == 0)
            failed += mem_check(r == CUDA_SUCCESS, "960 MiB from GPU 1's pool, kept: %d", r);
        else
            failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                                "960 MiB more from GPU 1's %s pool (%d of 4): %d == "
                                "OUT_OF_MEMORY", i % 2 ? "default" : "own", i + 1, r);
    }
    /* cuMemAllocAsync takes the current GPU's pool: GPU 1's, once it is current */
    CUdevice dev1;
    CUcontext ctx1;
    if (a.cuDeviceGet(&dev1, 1) == CUDA_SUCCESS &&
        a.cuDevicePrimaryCtxRetain(&ctx1, dev1) == CUDA_SUCCESS &&
        a.cuCtxSetCurrent(ctx1) == CUDA_SUCCESS) {
        r = a.cuMemAllocAsync(&q, 512 * MiB, NULL);
        failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                            "cuMemAllocAsync 512 MiB, GPU 1 current: %d == OUT_OF_MEMORY", r);
        /* and the pool of the stream's GPU, whichever is current: a stream of GPU 1 with
           GPU 0 current (it took GPU 0's, uncapped or not its cap, until 2026-11-29) */
        CUstream s1;
        if (a.cuStreamCreate(&s1, 0) == CUDA_SUCCESS) {
            a.cuCtxSetCurrent(ctx);
            r = a.cuMemAllocAsync(&q, 512 * MiB, s1);
            failed += mem_check(r == CUDA_ERROR_OUT_OF_MEMORY,
                                "cuMemAllocAsync 512 MiB on a stream of GPU 1, GPU 0 current: "
                                "%d == OUT_OF_MEMORY", r);
            if (r == CUDA_SUCCESS)
                a.cuMemFreeAsync(q, s1);
            r = a.cuMemAllocAsync(&q, 32 * MiB, s1);
            failed += mem_check(r == CUDA_SUCCESS,
                                "cuMemAllocAsync 32 MiB on it (GPU 1 has room): %d", r);
            if (r == CUDA_SUCCESS)
                a.cuMemFreeAsync(q, s1);
            a.cuStreamSynchronize(s1);
            a.cuCtxSetCurrent(ctx1);
            a.cuStreamDestroy(s1);
        } else {
            failed += mem_check(0, "a stream on GPU 1");
        }
        a.cuCtxSetCurrent(ctx);
        a.cuDevicePrimaryCtxRelease(dev1);
    } else {
        failed += mem_check(0, "GPU 1's primary context");
    }
    a.cuMemFreeAsync(four[0], NULL);
    a.cuMemPoolDestroy(pool);
    for (int i = 0; i < made; i++)
        a.cuMemPoolDestroy(fill[i]);
    printf("mem_pooldev: %d failed\n", failed);
    return failed ? 1 : 0;
}
