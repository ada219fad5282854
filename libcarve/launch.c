/* launch.c - every launch entry point the runtime resolves, caught so that compute shares
 * (issue 3) have one place to act. Until a slice has a compute limit, a launch goes straight
 * to the driver: one atomic load (init) and one indirect call, no lock, no syscall. */
#include "libcarve.h"

#define PASS(name, args)                       \
    carve__init();                             \
    if (__builtin_expect(!R.name, 0))          \
        return CUDA_ERROR_NOT_INITIALIZED;     \
    return R.name args;

CARVE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shm, CUstream s,
                                     void **params, void **extra)
{
    PASS(cuLaunchKernel, (f, gx, gy, gz, bx, by, bz, shm, s, params, extra))
}

CARVE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shm, CUstream s,
                                          void **params, void **extra)
{
    PASS(cuLaunchKernel_ptsz, (f, gx, gy, gz, bx, by, bz, shm, s, params, extra))
}

CARVE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **params, void **extra)
{
    PASS(cuLaunchKernelEx, (config, f, params, extra))
}

CARVE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                            void **params, void **extra)
{
    PASS(cuLaunchKernelEx_ptsz, (config, f, params, extra))
}

CARVE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                unsigned int gz, unsigned int bx,
                                                unsigned int by, unsigned int bz,
                                                unsigned int shm, CUstream s, void **params)
{
    PASS(cuLaunchCooperativeKernel, (f, gx, gy, gz, bx, by, bz, shm, s, params))
}

CARVE_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                     unsigned int gy, unsigned int gz,
                                                     unsigned int bx, unsigned int by,
                                                     unsigned int bz, unsigned int shm,
                                                     CUstream s, void **params)
{
    PASS(cuLaunchCooperativeKernel_ptsz, (f, gx, gy, gz, bx, by, bz, shm, s, params))
}

CARVE_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    PASS(cuGraphLaunch, (exec, s))
}

CARVE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
    PASS(cuGraphLaunch_ptsz, (exec, s))
}
