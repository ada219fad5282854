/* mem_pooldev.c - a pool's memory is on the device the pool belongs to, whichever device is
 * current: in a slice with caps 0=4GiB,1=1GiB (two simulated GPUs, no context memory) and
 * GPU 0 current, allocations from a pool made on GPU 1, and from GPU 1's default pool, are
 * held to GPU 1's 1 GiB and leave GPU 0's cap alone. */
#include <stdio.h>
#include <string.h>

#include "mem_common.h"

int main(void)
{
    struct mem_api a;
    CUdevice dev0;
    CUcontext ctx;
    CUdeviceptr p, q, r0;
    CUmemoryPool pool, dflt;
    int failed = 0;
    if (mem_api_dlsym(&a) != 0 || a.cuInit(0) != CUDA_SUCCESS ||
        a.cuDeviceGet(&dev0, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev0) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    failed += mem_check(a.cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS,
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
    printf("mem_pooldev: %d failed\n", failed);
    return failed ? 1 : 0;
}
