/* launch_multi.c - a multi-device cooperative launch (cuLaunchCooperativeKernelMultiDevice)
 * of a 1 ms kernel on each of two GPUs, 400 times, then a report of the share of each GPU's
 * time it got and whether the calling thread's context is still the one it set. Run in a
 * slice on two simulated GPUs by compute_share.sh: each GPU must be held to the slice's share,
 * and libcarve, which charges each kernel in its own stream's context, must leave the current
 * context as it found it.
 *   launch_multi SHARE   (exit 1 when the share is not within 5 points or the context moved) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "carve/cuda_abi.h"

#define LAUNCHES 400
#define KERNEL_NS 1000000ull

#define DRIVER_API(X)                                                                        \
    X(cuInit)                                                                                \
    X(cuDeviceGet)                                                                           \
    X(cuDevicePrimaryCtxRetain)                                                              \
    X(cuCtxSetCurrent)                                                                       \
    X(cuCtxGetCurrent)                                                                       \
    X(cuModuleLoadData)                                                                      \
    X(cuModuleGetFunction)                                                                   \
    X(cuStreamCreate)                                                                        \
    X(cuStreamSynchronize)                                                                   \
    X(cuLaunchCooperativeKernelMultiDevice)

static struct {
#define API_MEMBER(name) __typeof__(&name) name;
    DRIVER_API(API_MEMBER)
#undef API_MEMBER
} cu;

int main(int argc, char **argv)
{
    double want = argc == 2 ? atof(argv[1]) : 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (want <= 0 || want > 100 || !h) {
        fprintf(stderr, "usage: launch_multi SHARE (in a slice, with libcuda.so.1 loadable)\n");
        return 2;
    }
#define API_RESOLVE(name)                                                                    \
    if (!(cu.name = (__typeof__(cu.name))dlsym(h, #name))) {                                 \
        fprintf(stderr, "launch_multi: libcuda.so.1 has no %s\n", #name);                   \
        return 1;                                                                            \
    }
    DRIVER_API(API_RESOLVE)
#undef API_RESOLVE
    CUcontext ctx[2];
    CUfunction fn[2];
    CUstream stream[2];
    if (cu.cuInit(0) != CUDA_SUCCESS)
        return 1;
    for (int d = 0; d < 2; d++) {
        CUdevice dev;
        CUmodule mod;
        if (cu.cuDeviceGet(&dev, d) != CUDA_SUCCESS ||
            cu.cuDevicePrimaryCtxRetain(&ctx[d], dev) != CUDA_SUCCESS ||
            cu.cuCtxSetCurrent(ctx[d]) != CUDA_SUCCESS ||
            cu.cuModuleLoadData(&mod, CARVE_SIM_KERNEL_IMAGE) != CUDA_SUCCESS ||
            cu.cuModuleGetFunction(&fn[d], mod, "carve_sleep") != CUDA_SUCCESS ||
            cu.cuStreamCreate(&stream[d], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
            fprintf(stderr, "launch_multi: cannot set up GPU %d (two simulated GPUs?)\n", d);
            return 1;
        }
    }
    cu.cuCtxSetCurrent(ctx[0]);
    unsigned long long ns = KERNEL_NS;
    void *params[] = {&ns};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < LAUNCHES; i++) {
        CUDA_LAUNCH_PARAMS both[2] = {{fn[0], 1, 1, 1, 1, 1, 1, 0, stream[0], params},
                                      {fn[1], 1, 1, 1, 1, 1, 1, 0, stream[1], params}};
        CUresult r = cu.cuLaunchCooperativeKernelMultiDevice(both, 2, 0);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "launch_multi: launch %d failed: CUresult %d\n", i, (int)r);
            return 1;
        }
    }
    CUcontext current = NULL;
    cu.cuCtxGetCurrent(&current);
    for (int d = 0; d < 2; d++) {
        cu.cuCtxSetCurrent(ctx[d]);
        cu.cuStreamSynchronize(stream[d]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double share = 100.0 * LAUNCHES * (double)KERNEL_NS / 1e9 / seconds;
    int ok = share > want - 5 && share < want + 5 && current == ctx[0];
    printf("{\"share_each_gpu\": %.2f, \"context_kept\": %s, \"seconds\": %.2f}\n", share,
           current == ctx[0] ? "true" : "false", seconds);
    return ok ? 0 : 1;
}
