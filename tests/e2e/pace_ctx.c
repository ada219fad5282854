/* pace_ctx.c - launches sampled by libcarve's pacer (pace.c) in contexts that go and come
 * back: run in a slice with --compute by pace_contexts.sh, with CARVE_PACE_DEBUG=1 (the
 * estimates and their sample counts at exit) and CARVE_SIM_STALE_EVENTS=abort (a use of an
 * event whose context went aborts the simulated driver). A shape launched ten times, a
 * stream synchronisation after each, gets 5 samples or more from a pacer that samples it;
 * shapes in flight as their context goes get 1 at most. Modes:
 *
 *   reset    the primary context: a shape ten times, another in flight, then
 *            cuDevicePrimaryCtxReset_v2 and a retain (the same handle on the simulated GPU),
 *            and a third shape ten times: two keys of 5 samples or more;
 *   idle     the same with no sample in flight: the old events are the new context's
 *            first claim;
 *   release  as reset, but retained twice, and released once with a sample in flight (the
 *            context stays) before a shape ten times and its last release
 *            (cuDevicePrimaryCtxRelease_v2): three keys of 5 samples or more;
 *   destroy  a created context with 80 shapes in flight (every event pair of the pacer's
 *            busy in it) destroyed while a second lives, then a third created (the destroyed
 *            one's handle again on the simulated GPU); a shape ten times in the second, and
 *            another in the third: two keys of 5 samples or more;
 *   stale    no pacing: an event of a destroyed context queried, and one of a primary
 *            context reset and retained again (exit 0 when the simulated driver refuses
 *            both; with CARVE_SIM_STALE_EVENTS=abort it aborts at the first).
 *
 *   pace_ctx MODE   (exit 1 when a CUDA call fails, 2 on bad usage) */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "carve/cuda_abi.h"

#define ROUNDS 10
#define KERNEL_NS 1000000ull  /* the kernel launched ROUNDS times on each side */
#define INFLIGHT_NS 5000000ull /* the kernels in flight as the context goes */
#define SHAPES 80             /* more than the pacer's 64 event pairs */

#define DRIVER_API(X)                                                                        \
    X(cuInit)                                                                                \
    X(cuDeviceGet)                                                                           \
    X(cuDevicePrimaryCtxRetain)                                                              \
    X(cuDevicePrimaryCtxRelease_v2)                                                          \
    X(cuDevicePrimaryCtxReset_v2)                                                            \
    X(cuCtxCreate_v2)                                                                        \
    X(cuCtxDestroy_v2)                                                                       \
    X(cuCtxSetCurrent)                                                                       \
    X(cuModuleLoadData)                                                                      \
    X(cuModuleGetFunction)                                                                   \
    X(cuStreamCreate)                                                                        \
    X(cuStreamSynchronize)                                                                   \
    X(cuLaunchKernel)                                                                        \
    X(cuEventCreate)                                                                         \
    X(cuEventQuery)

static struct {
#define API_MEMBER(name) __typeof__(&name) name;
    DRIVER_API(API_MEMBER)
#undef API_MEMBER
} cu;

static int failed;

static void expect(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "pace_ctx: %s: CUresult %d\n", what, (int)r);
        failed = 1;
    }
}

/* The current context's kernel and a stream of its own. */
static void setup(CUfunction *f, CUstream *s)
{
    CUmodule m;
    expect(cu.cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE), "cuModuleLoadData");
    expect(cu.cuModuleGetFunction(f, m, "carve_sleep"), "cuModuleGetFunction");
    expect(cu.cuStreamCreate(s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

static void launch(CUfunction f, CUstream s, unsigned grid, unsigned long long ns)
{
    void *params[] = {&ns};
    expect(cu.cuLaunchKernel(f, grid, 1, 1, 1, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
}

/* One shape (a key of the pacer's) ROUNDS times, each waited for: each launch's sample is
 * taken by the next one's. */
static void rounds(CUfunction f, CUstream s, unsigned grid)
{
    for (int i = 0; i < ROUNDS && !failed; i++) {
        launch(f, s, grid, KERNEL_NS);
        expect(cu.cuStreamSynchronize(s), "cuStreamSynchronize");
    }
}

static void primary(CUdevice dev, bool reset, bool inflight)
{
    CUcontext before, after;
    CUfunction f;
    CUstream s;
    expect(cu.cuDevicePrimaryCtxRetain(&before, dev), "cuDevicePrimaryCtxRetain");
    if (!reset)
        expect(cu.cuDevicePrimaryCtxRetain(&before, dev), "cuDevicePrimaryCtxRetain, twice");
    expect(cu.cuCtxSetCurrent(before), "cuCtxSetCurrent");
    setup(&f, &s);
    rounds(f, s, 1);
    if (!reset) { /* a release that leaves the context: its pairs go on */
        launch(f, s, 4, INFLIGHT_NS);
        expect(cu.cuDevicePrimaryCtxRelease_v2(dev), "cuDevicePrimaryCtxRelease_v2, once");
        rounds(f, s, 5);
    }
    if (inflight)
        launch(f, s, 3, INFLIGHT_NS); /* its sample in flight as the context goes */
    expect(reset ? cu.cuDevicePrimaryCtxReset_v2(dev) : cu.cuDevicePrimaryCtxRelease_v2(dev),
           reset ? "cuDevicePrimaryCtxReset_v2" : "cuDevicePrimaryCtxRelease_v2");
    expect(cu.cuDevicePrimaryCtxRetain(&after, dev), "cuDevicePrimaryCtxRetain again");
    expect(cu.cuCtxSetCurrent(after), "cuCtxSetCurrent again");
    setup(&f, &s);
    rounds(f, s, 2);
    printf("primary context %s, %s handle\n", reset ? "reset" : "released",
           before == after ? "the same" : "another");
    expect(cu.cuDevicePrimaryCtxRelease_v2(dev), "cuDevicePrimaryCtxRelease_v2 at the end");
}

static void created(CUdevice dev)
{
    CUcontext first, second, third;
    CUfunction f;
    CUstream s;
    expect(cu.cuCtxCreate_v2(&first, 0, dev), "cuCtxCreate_v2");
    setup(&f, &s);
    for (unsigned i = 0; i < SHAPES; i++)
        launch(f, s, 100 + i, INFLIGHT_NS);
    expect(cu.cuCtxCreate_v2(&second, 0, dev), "cuCtxCreate_v2, a second");
    expect(cu.cuCtxDestroy_v2(first), "cuCtxDestroy_v2");
    expect(cu.cuCtxSetCurrent(second), "cuCtxSetCurrent");
    setup(&f, &s);
    rounds(f, s, 2);
    expect(cu.cuCtxCreate_v2(&third, 0, dev), "cuCtxCreate_v2, a third");
    setup(&f, &s);
    rounds(f, s, 4);
    printf("context destroyed with %d shapes in flight; the next one made has %s handle\n",
           SHAPES, third == first ? "its" : "another");
    expect(cu.cuCtxDestroy_v2(third), "cuCtxDestroy_v2, the third");
    expect(cu.cuCtxSetCurrent(second), "cuCtxSetCurrent, the second");
    expect(cu.cuCtxDestroy_v2(second), "cuCtxDestroy_v2, the second");
}

static void stale(CUdevice dev)
{
    CUcontext c, p;
    CUevent e, f;
    expect(cu.cuCtxCreate_v2(&c, 0, dev), "cuCtxCreate_v2");
    expect(cu.cuEventCreate(&e, 0), "cuEventCreate");
    expect(cu.cuCtxDestroy_v2(c), "cuCtxDestroy_v2");
    CUresult r = cu.cuEventQuery(e);
    expect(cu.cuDevicePrimaryCtxRetain(&p, dev), "cuDevicePrimaryCtxRetain");
    expect(cu.cuCtxSetCurrent(p), "cuCtxSetCurrent");
    expect(cu.cuEventCreate(&f, 0), "cuEventCreate");
    expect(cu.cuDevicePrimaryCtxReset_v2(dev), "cuDevicePrimaryCtxReset_v2");
    expect(cu.cuDevicePrimaryCtxRetain(&p, dev), "cuDevicePrimaryCtxRetain again");
    CUresult q = cu.cuEventQuery(f);
    printf("cuEventQuery on an event of a destroyed context: CUresult %d, of a reset primary "
           "context: %d\n", (int)r, (int)q);
    if (r != CUDA_ERROR_INVALID_HANDLE || q != CUDA_ERROR_INVALID_HANDLE)
        failed = 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || (strcmp(mode, "reset") && strcmp(mode, "idle") && strcmp(mode, "release") &&
               strcmp(mode, "destroy") && strcmp(mode, "stale"))) {
        fprintf(stderr, "usage: pace_ctx reset|idle|release|destroy|stale (in a slice with "
                        "--compute, with libcuda.so.1 loadable)\n");
        return 2;
    }
#define API_RESOLVE(name)                                                                    \
    if (!(cu.name = (__typeof__(cu.name))dlsym(h, #name))) {                                 \
        fprintf(stderr, "pace_ctx: libcuda.so.1 has no %s\n", #name);                       \
        return 1;                                                                            \
    }
    DRIVER_API(API_RESOLVE)
#undef API_RESOLVE
    CUdevice dev;
    if (cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "pace_ctx: no simulated GPU\n");
        return 1;
    }
    if (strcmp(mode, "destroy") == 0)
        created(dev);
    else if (strcmp(mode, "stale") == 0)
        stale(dev);
    else
        primary(dev, strcmp(mode, "release") != 0, strcmp(mode, "idle") != 0);
    return failed;
}
