/* mem_common.h - the driver-API walk shared by mem_direct, mem_dlsym and mem_gpa: each
 * program fills the same table of entry points its own way (linked, dlsym,
 * cuGetProcAddress_v2) and runs mem_walk over it inside a slice. */
#ifndef CARVE_TESTS_MEM_COMMON_H
#define CARVE_TESTS_MEM_COMMON_H

#include "carve/cuda_abi.h"

/* X(base name cuGetProcAddress is asked for, exported name) */
#define MEM_API(X)                                                    \
    X(cuInit, cuInit)                                                 \
    X(cuDeviceGet, cuDeviceGet)                                       \
    X(cuDeviceTotalMem, cuDeviceTotalMem_v2)                          \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)             \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)        \
    X(cuCtxSetCurrent, cuCtxSetCurrent)                               \
    X(cuMemGetInfo, cuMemGetInfo_v2)                                  \
    X(cuMemAlloc, cuMemAlloc_v2)                                      \
    X(cuMemAllocPitch, cuMemAllocPitch_v2)                            \
    X(cuMemAllocManaged, cuMemAllocManaged)                           \
    X(cuMemFree, cuMemFree_v2)                                        \
    X(cuMemCreate, cuMemCreate)                                       \
    X(cuMemRelease, cuMemRelease)                                     \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity)   \
    X(cuMemAddressReserve, cuMemAddressReserve)                       \
    X(cuMemAddressFree, cuMemAddressFree)                             \
    X(cuMemMap, cuMemMap)                                             \
    X(cuMemUnmap, cuMemUnmap)                                         \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle)       \
    X(cuMemAllocAsync, cuMemAllocAsync)                               \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync)               \
    X(cuMemFreeAsync, cuMemFreeAsync)                                 \
    X(cuMemPoolCreate, cuMemPoolCreate)                               \
    X(cuMemPoolDestroy, cuMemPoolDestroy)                             \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo)                               \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool)                         \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool)           \
    X(cuStreamCreate, cuStreamCreate)                                 \
    X(cuStreamSynchronize, cuStreamSynchronize)                       \
    X(cuStreamDestroy, cuStreamDestroy_v2)                            \
    X(cuArrayCreate, cuArrayCreate_v2)                                \
    X(cuArray3DCreate, cuArray3DCreate_v2)                            \
    X(cuArrayDestroy, cuArrayDestroy)                                 \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate)                 \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy)               \
    X(cuModuleLoadData, cuModuleLoadData)                             \
    X(cuModuleUnload, cuModuleUnload)

struct mem_api {
#define MEM_API_FIELD(base, name) __typeof__(&name) base;
    MEM_API(MEM_API_FIELD)
#undef MEM_API_FIELD
};

/* Fills api by dlsym on the real libcuda.so.1 handle (through libcarve's dlsym). */
int mem_api_dlsym(struct mem_api *api);
/* Fills api (mem_api_dlsym), and makes GPU 0's primary context current in *ctx: 0, with the
 * total cuMemGetInfo says (the slice's cap) in *total, or -1. */
int mem_start(struct mem_api *api, CUcontext *ctx, size_t *total);
/* Runs every check; returns the number of failures. cap: the slice's cap in bytes. */
int mem_walk(const struct mem_api *api, const char *path);
/* Prints one check's line; returns 0 when ok, 1 when not. */
int mem_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

#endif
