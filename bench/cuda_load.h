/* cuda_load.h - the driver API, opened at run time, for carve's benchmarks and demo programs.
 *
 * The programs dlopen("libcuda.so.1") instead of linking it, so the same binary runs on the
 * simulated GPU (LD_LIBRARY_PATH or `carve run --simulate`) and on a real one, and needs no
 * CUDA toolkit to build. Prototypes come from include/carve/cuda_abi.h. */
#ifndef CARVE_BENCH_CUDA_LOAD_H
#define CARVE_BENCH_CUDA_LOAD_H

#include <stdint.h>

#include "carve/cuda_abi.h"

/* Every entry point the bench programs call, each a member named like the function. */
#define BCU_FUNCTIONS(X)                                                                      \
    X(cuInit)                                                                                 \
    X(cuGetErrorName)                                                                         \
    X(cuDeviceGet)                                                                            \
    X(cuDeviceGetName)                                                                        \
    X(cuDevicePrimaryCtxRetain)                                                               \
    X(cuDevicePrimaryCtxRelease_v2)                                                           \
    X(cuCtxSetCurrent)                                                                        \
    X(cuCtxSynchronize)                                                                       \
    X(cuMemGetInfo_v2)                                                                        \
    X(cuMemAlloc_v2)                                                                          \
    X(cuMemAllocManaged)                                                                      \
    X(cuMemAllocAsync)                                                                        \
    X(cuMemFree_v2)                                                                           \
    X(cuModuleLoadData)                                                                       \
    X(cuModuleGetFunction)                                                                    \
    X(cuModuleUnload)                                                                         \
    X(cuLaunchKernel)                                                                         \
    X(cuDeviceGetAttribute)                                                                   \
    X(cuStreamCreate)                                                                         \
    X(cuStreamDestroy_v2)                                                                     \
    X(cuStreamSynchronize)                                                                    \
    X(cuStreamBeginCapture_v2)                                                                \
    X(cuStreamEndCapture)                                                                     \
    X(cuGraphInstantiateWithFlags)                                                            \
    X(cuGraphLaunch)                                                                          \
    X(cuGraphExecDestroy)                                                                     \
    X(cuGraphDestroy)                                                                         \
    X(cuEventCreate)                                                                          \
    X(cuEventRecord)                                                                          \
    X(cuEventSynchronize)                                                                     \
    X(cuEventQuery)                                                                           \
    X(cuEventElapsedTime)                                                                     \
    X(cuEventDestroy_v2)

struct bcu {
    void *handle;
    CUdevice dev;
    CUcontext ctx;
    char name[256];
#define BCU_MEMBER(fn) __typeof__(fn) *fn;
    BCU_FUNCTIONS(BCU_MEMBER)
#undef BCU_MEMBER
};

/* Open libcuda.so.1, resolve every function, cuInit, and make device `ordinal`'s primary
 * context current. Returns 0, or -1 after printing what failed to stderr. */
int bcu_open(struct bcu *cu, int ordinal);

/* Release the primary context and close the library. */
void bcu_close(struct bcu *cu);

/* The CUresult's name ("CUDA_ERROR_OUT_OF_MEMORY"), or "CUresult <n>". Static buffer. */
const char *bcu_errname(const struct bcu *cu, CUresult rc);

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t bcu_now_ns(void);

#endif
