/* launch.c - every launch entry point the runtime resolves: kernels (plain, extended,
 * cooperative, per-thread default stream) and graphs. When no slice on this process has
 * compute settings, a launch goes straight to the driver: one atomic load (init), two
 * relaxed loads (the slice's "ran" flag, stored only when carved has cleared it), one
 * relaxed load (pacing), one indirect call, no lock, no syscall. Otherwise pace.c charges
 * and, when the slice is ahead of its share, holds it. */
#include "libcarve.h"

/* A kernel's key for its cost estimate: the function and the shape of its grid. */
static uint64_t kernel_key(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz)
{
    uint64_t grid = (uint64_t)gx * gy * gz, block = (uint64_t)bx * by * bz;
    return (uint64_t)(uintptr_t)f ^ (grid * 0x9e3779b97f4a7c15ull) ^ (block << 48);
}

#define GOVERN(name, key, stream, args)                                         \
    carve__init();                                                             \
    if (__builtin_expect(!R.name, 0))                                          \
        return CUDA_ERROR_NOT_INITIALIZED;                                     \
    carve__note_ran();                                                         \
    if (__builtin_expect(!atomic_load_explicit(&carve__pacing, memory_order_relaxed), 1)) \
        return R.name args;                                                    \
    struct carve_launch launch_;                                               \
    carve__launch_begin(&launch_, (key), (stream));                            \
    CUresult r_ = R.name args;                                                 \
    carve__launch_end(&launch_, r_);                                           \
    return r_;

#define KERNEL_ARGS (f, gx, gy, gz, bx, by, bz, shm, s, params, extra)
#define KERNEL_KEY kernel_key(f, gx, gy, gz, bx, by, bz)

CARVE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shm, CUstream s,
                                     void **params, void **extra)
{
    GOVERN(cuLaunchKernel, KERNEL_KEY, s, KERNEL_ARGS)
}

CARVE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shm, CUstream s,
                                          void **params, void **extra)
{
    GOVERN(cuLaunchKernel_ptsz, KERNEL_KEY, s, KERNEL_ARGS)
}

#define CONFIG_KEY(c)                                                                       \
    ((c) ? kernel_key(f, (c)->gridDimX, (c)->gridDimY, (c)->gridDimZ, (c)->blockDimX,     \
                      (c)->blockDimY, (c)->blockDimZ)                                      \
         : (uint64_t)(uintptr_t)f)

CARVE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **params, void **extra)
{
    GOVERN(cuLaunchKernelEx, CONFIG_KEY(config), config ? config->hStream : NULL,
           (config, f, params, extra))
}

CARVE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                            void **params, void **extra)
{
    GOVERN(cuLaunchKernelEx_ptsz, CONFIG_KEY(config), config ? config->hStream : NULL,
           (config, f, params, extra))
}

#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shm, s, params)

CARVE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                unsigned int gz, unsigned int bx,
                                                unsigned int by, unsigned int bz,
                                                unsigned int shm, CUstream s, void **params)
{
    GOVERN(cuLaunchCooperativeKernel, KERNEL_KEY, s, COOP_ARGS)
}

CARVE_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                     unsigned int gy, unsigned int gz,
                                                     unsigned int bx, unsigned int by,
                                                     unsigned int bz, unsigned int shm,
                                                     CUstream s, void **params)
{
    GOVERN(cuLaunchCooperativeKernel_ptsz, KERNEL_KEY, s, COOP_ARGS)
}

/* A graph with allocation nodes has its memory admitted first (graphmem.c, under a lock of
 * its own); while there is none, the check is one relaxed load. */
#define GRAPH_MEMORY(name, upload)                                                         \
    if (__builtin_expect(atomic_load_explicit(&carve__graph_execs, memory_order_relaxed), 0) && \
        R.name)                                                                            \
        return carve__graph_launch(exec, s, R.name, R.upload);

CARVE_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    GRAPH_MEMORY(cuGraphLaunch, cuGraphUpload)
    GOVERN(cuGraphLaunch, (uint64_t)(uintptr_t)exec, s, (exec, s))
}

CARVE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
    GRAPH_MEMORY(cuGraphLaunch_ptsz, cuGraphUpload_ptsz)
    GOVERN(cuGraphLaunch_ptsz, (uint64_t)(uintptr_t)exec, s, (exec, s))
}
