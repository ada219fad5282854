/* launch.c - every launch entry point the runtime resolves: kernels (plain, extended,
 * cooperative, per-thread default stream) and graphs; and the deprecated ones the driver
 * still has (multi-device cooperative, and the launch API before CUDA 4.0). When no slice
 * on this process has compute settings, a launch goes straight to the driver: one atomic
 * load (init), two relaxed loads (the slice's "ran" flag, stored only when carved has
 * cleared it), one relaxed load (pacing), one indirect call, no lock, no syscall. Otherwise
 * pace.c charges and, when the slice is ahead of its share, holds it. */
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

/* One kernel per device, each on a stream of its device's context: each is charged and held
 * as a launch of its own in that context (its device's share, its events), and then the one
 * call launches them all. Entries past MULTI_MAX (more devices than a node has) go uncharged. */
#define MULTI_MAX 64

static bool push_ctx_of(CUstream s)
{
    CUcontext ctx;
    return R.cuStreamGetCtx && R.cuCtxPushCurrent_v2 && R.cuCtxPopCurrent_v2 &&
           R.cuStreamGetCtx(s, &ctx) == CUDA_SUCCESS && R.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS;
}

static void pop_ctx(void)
{
    CUcontext ignored;
    R.cuCtxPopCurrent_v2(&ignored);
}

CARVE_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list,
                                                           unsigned int n, unsigned int flags)
{
    carve__init();
    if (__builtin_expect(!R.cuLaunchCooperativeKernelMultiDevice, 0))
        return CUDA_ERROR_NOT_INITIALIZED;
    carve__note_ran();
    if (__builtin_expect(!atomic_load_explicit(&carve__pacing, memory_order_relaxed), 1) || !list)
        return R.cuLaunchCooperativeKernelMultiDevice(list, n, flags);
    struct carve_launch launches[MULTI_MAX];
    unsigned governed = n < MULTI_MAX ? n : MULTI_MAX;
    for (unsigned i = 0; i < governed; i++) {
        const CUDA_LAUNCH_PARAMS *p = &list[i];
        launches[i].pair = NULL;
        if (!push_ctx_of(p->hStream))
            continue; /* no context to charge: the driver refuses such a stream anyway */
        carve__launch_begin(&launches[i],
                            kernel_key(p->function, p->gridDimX, p->gridDimY, p->gridDimZ,
                                       p->blockDimX, p->blockDimY, p->blockDimZ),
                            p->hStream);
        pop_ctx();
    }
    CUresult r = R.cuLaunchCooperativeKernelMultiDevice(list, n, flags);
    for (unsigned i = 0; i < governed; i++) {
        if (!launches[i].pair)
            continue;
        bool pushed = push_ctx_of(list[i].hStream);
        carve__launch_end(&launches[i], pushed ? r : CUDA_ERROR_INVALID_CONTEXT);
        if (pushed)
            pop_ctx();
    }
    return r;
}

/* The launch API before CUDA 4.0 set the block shape on the function beforehand
 * (cuFuncSetBlockShape), which is not seen here: its kernels are keyed by function and grid. */
CARVE_EXPORT CUresult cuLaunch(CUfunction f)
{
    GOVERN(cuLaunch, kernel_key(f, 1, 1, 1, 0, 0, 0), NULL, (f))
}

CARVE_EXPORT CUresult cuLaunchGrid(CUfunction f, int gw, int gh)
{
    GOVERN(cuLaunchGrid, kernel_key(f, (unsigned)gw, (unsigned)gh, 1, 0, 0, 0), NULL,
           (f, gw, gh))
}

CARVE_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int gw, int gh, CUstream s)
{
    GOVERN(cuLaunchGridAsync, kernel_key(f, (unsigned)gw, (unsigned)gh, 1, 0, 0, 0), s,
           (f, gw, gh, s))
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
