/* mem_graph.c - graph memory is held to the slice's cap: allocations made by CUDA graphs'
 * allocation nodes (stream capture of cuMemAllocAsync, cuGraphAddMemAllocNode) count as the
 * device's graph memory reserves them, from the upload or launch that maps them until
 * cuDeviceGraphMemTrim. Run in a 1 GiB slice with no context memory (mem_slice.sh). Before
 * libcarve counted graph memory, a tenant could launch 800 MiB of graph allocations and then
 * cuMemAlloc 400 MiB more, or launch a graph of 2 GiB. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"
#include "slice.h"

#define GRAPH_API(X)                                                      \
    X(cuStreamBeginCapture_v2)                                            \
    X(cuStreamEndCapture)                                                 \
    X(cuGraphCreate)                                                      \
    X(cuGraphAddMemAllocNode)                                             \
    X(cuGraphInstantiateWithFlags)                                        \
    X(cuGraphInstantiateWithParams)                                       \
    X(cuGraphInstantiate)                                                 \
    X(cuGraphInstantiate_v2)                                              \
    X(cuGraphLaunch)                                                      \
    X(cuGraphUpload)                                                      \
    X(cuGraphExecDestroy)                                                 \
    X(cuGraphDestroy)                                                     \
    X(cuDeviceGetGraphMemAttribute)                                       \
    X(cuDeviceGraphMemTrim)

static struct mem_api a;
static struct {
#define GRAPH_FIELD(name) __typeof__(&name) name;
    GRAPH_API(GRAPH_FIELD)
#undef GRAPH_FIELD
} g;
static CUcontext ctx;
static CUstream stream;
static int failed;

static unsigned long long used_now(void)
{
    size_t f = 0, t = 0;
    return a.cuMemGetInfo(&f, &t) == CUDA_SUCCESS ? t - f : ~0ull;
}

/* The driver's own count of graph memory: what the slice must have counted. */
static unsigned long long reserved_now(void)
{
    cuuint64_t v = ~0ull;
    g.cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v);
    return v;
}

static void expect_used(unsigned long long want, const char *what)
{
    unsigned long long u = used_now(), r = reserved_now();
    failed += mem_check(u == want && r <= GiB,
                        "%s: slice usage %llu MiB == %llu MiB, graph memory reserved %llu MiB",
                        what, u / MiB, want / MiB, r / MiB);
}

static void expect(CUresult got, CUresult want, const char *what)
{
    failed += mem_check(got == want, "%s: %d == %d", what, got, want);
}

/* A graph captured from the stream: an allocation of bytes, freed in the graph if asked. */
static CUgraph captured(unsigned long long bytes, bool free_inside, CUdeviceptr *p)
{
    CUgraph graph = NULL;
    if (g.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS ||
        a.cuMemAllocAsync(p, bytes, stream) != CUDA_SUCCESS ||
        (free_inside && a.cuMemFreeAsync(*p, stream) != CUDA_SUCCESS) ||
        g.cuStreamEndCapture(stream, &graph) != CUDA_SUCCESS)
        failed += mem_check(0, "capture of a %llu MiB allocation", bytes / MiB);
    return graph;
}

/* Ends the stream's capture into *graph (ok: the captured calls went well, as what says)
 * and instantiates it. */
static CUgraphExec capture_instantiated(bool ok, CUgraph *graph, const char *what)
{
    CUgraphExec exec = NULL;
    ok = g.cuStreamEndCapture(stream, graph) == CUDA_SUCCESS && ok;
    failed += mem_check(ok, "%s", what);
    expect(g.cuGraphInstantiateWithFlags(&exec, *graph, 0), CUDA_SUCCESS, "instantiate");
    return exec;
}

static CUgraph explicit_graph(unsigned long long bytes)
{
    CUgraph graph = NULL;
    CUgraphNode node;
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    if (g.cuGraphCreate(&graph, 0) != CUDA_SUCCESS ||
        g.cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p) != CUDA_SUCCESS)
        failed += mem_check(0, "cuGraphAddMemAllocNode of %llu MiB", bytes / MiB);
    return graph;
}

static void trim_to_nothing(const char *what)
{
    g.cuDeviceGraphMemTrim(0);
    expect_used(0, what);
}

/* A captured 800 MiB allocation, freed in its graph: counted from the first launch on. */
static void captured_alloc_and_free(void)
{
    CUdeviceptr p, q;
    CUgraphExec exec;
    CUgraph graph = captured(800 * MiB, true, &p);
    expect(g.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS, "instantiate");
    expect_used(0, "captured and instantiated, not launched");
    expect(g.cuGraphLaunch(exec, stream), CUDA_SUCCESS, "launch of 800 MiB");
    expect_used(800 * MiB, "after the launch");
    CUresult r = a.cuMemAlloc(&q, 400 * MiB);
    expect(r, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc 400 MiB beside 800 MiB of graph memory");
    if (r == CUDA_SUCCESS)
        a.cuMemFree(q);
    int ok = 0;
    for (int i = 0; i < 20; i++)
        ok += g.cuGraphLaunch(exec, stream) == CUDA_SUCCESS;
    failed += mem_check(ok == 20, "20 launches more: %d succeed", ok);
    expect_used(800 * MiB, "after 21 launches");
    g.cuGraphExecDestroy(exec);
    g.cuGraphDestroy(graph);
    expect_used(800 * MiB, "graph destroyed: its memory stays reserved");
    trim_to_nothing("cuDeviceGraphMemTrim");
    expect(a.cuMemAlloc(&q, 900 * MiB), CUDA_SUCCESS, "cuMemAlloc 900 MiB after the trim");
    a.cuMemFree(q);
}

/* A 2 GiB allocation node in a 1 GiB slice: no launch, upload or instantiate-and-upload,
 * whichever instantiation made the executable graph. */
static void graph_past_the_cap(void)
{
    CUgraphExec exec;
    CUgraph graph = explicit_graph(2 * GiB);
    expect(g.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS, "instantiate 2 GiB");
    expect(g.cuGraphLaunch(exec, stream), CUDA_ERROR_OUT_OF_MEMORY, "launch of 2 GiB");
    expect_used(0, "the refused launch");
    expect(g.cuGraphUpload(exec, stream), CUDA_ERROR_OUT_OF_MEMORY, "upload of 2 GiB");
    expect_used(0, "the refused upload");
    g.cuGraphExecDestroy(exec);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                        .hUploadStream = stream};
    expect(g.cuGraphInstantiateWithParams(&exec, graph, &ip), CUDA_ERROR_OUT_OF_MEMORY,
           "instantiate with FLAG_UPLOAD, 2 GiB");
    failed += mem_check(ip.result_out == CUDA_GRAPH_INSTANTIATE_ERROR,
                        "its result_out says so: %d", ip.result_out);
    expect_used(0, "the refused instantiation");

    /* the instantiation of the CUDA 10 and 11 runtimes: the same admission at launch */
    expect(g.cuGraphInstantiate_v2(&exec, graph, NULL, NULL, 0), CUDA_SUCCESS,
           "cuGraphInstantiate_v2 of 2 GiB");
    expect(g.cuGraphLaunch(exec, stream), CUDA_ERROR_OUT_OF_MEMORY, "its launch");
    g.cuGraphExecDestroy(exec);
    expect(g.cuGraphInstantiate(&exec, graph, NULL, NULL, 0), CUDA_SUCCESS,
           "cuGraphInstantiate of 2 GiB");
    expect(g.cuGraphLaunch(exec, stream), CUDA_ERROR_OUT_OF_MEMORY, "its launch");
    g.cuGraphExecDestroy(exec);
    expect_used(0, "the refused launches");
    g.cuGraphDestroy(graph);

    graph = explicit_graph(512 * MiB);
    ip.result_out = -1;
    expect(g.cuGraphInstantiateWithParams(&exec, graph, &ip), CUDA_SUCCESS,
           "instantiate with FLAG_UPLOAD, 512 MiB");
    expect_used(512 * MiB, "uploaded at its instantiation");
    g.cuGraphExecDestroy(exec);
    g.cuGraphDestroy(graph);
    trim_to_nothing("trimmed");
}

/* An allocation its graph does not free lives on after the launch until it is freed. */
static void allocation_outliving_its_graph(void)
{
    CUdeviceptr p;
    CUgraphExec exec;
    CUgraph graph = captured(600 * MiB, false, &p);
    expect(g.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS, "instantiate");
    expect(g.cuGraphLaunch(exec, stream), CUDA_SUCCESS, "launch of 600 MiB, not freed");
    expect_used(600 * MiB, "its allocation live");
    failed += mem_check(g.cuGraphLaunch(exec, stream) != CUDA_SUCCESS,
                        "a relaunch while it is live is the driver's error");
    expect_used(600 * MiB, "after the failed relaunch");
    expect(a.cuMemFreeAsync(p, stream), CUDA_SUCCESS, "cuMemFreeAsync of it");
    expect(g.cuGraphLaunch(exec, stream), CUDA_SUCCESS, "relaunch once freed");
    expect(a.cuMemFree(p), CUDA_SUCCESS, "cuMemFree of it");
    g.cuGraphExecDestroy(exec);
    /* instantiated to free it on each launch: relaunches need no memory more */
    expect(g.cuGraphInstantiateWithFlags(&exec, graph,
                                         CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
           CUDA_SUCCESS, "instantiate with AUTO_FREE_ON_LAUNCH");
    int ok = 0;
    for (int i = 0; i < 5; i++)
        ok += g.cuGraphLaunch(exec, stream) == CUDA_SUCCESS;
    failed += mem_check(ok == 5, "five launches of 600 MiB freed on relaunch: %d succeed", ok);
    expect_used(600 * MiB, "its last allocation live");
    expect(a.cuMemFreeAsync(p, stream), CUDA_SUCCESS, "cuMemFreeAsync of it");
    g.cuGraphExecDestroy(exec);
    g.cuGraphDestroy(graph);
    trim_to_nothing("trimmed");
}

/* Two graphs of 600 MiB each, launched in turn: they cannot both stay mapped in 1 GiB, so
 * the other's mapping is trimmed and each launch still goes through. */
static void two_graphs_in_turn(void)
{
    CUdeviceptr p1, p2;
    CUgraphExec e1, e2;
    CUgraph g1 = captured(600 * MiB, true, &p1), g2 = captured(600 * MiB, true, &p2);
    expect(g.cuGraphInstantiateWithFlags(&e1, g1, 0), CUDA_SUCCESS, "instantiate the first");
    expect(g.cuGraphInstantiateWithFlags(&e2, g2, 0), CUDA_SUCCESS, "instantiate the second");
    int ok = 0;
    for (int i = 0; i < 6; i++)
        ok += g.cuGraphLaunch(i % 2 ? e2 : e1, stream) == CUDA_SUCCESS;
    failed += mem_check(ok == 6, "six launches in turn: %d succeed", ok);
    expect_used(600 * MiB, "one graph's memory mapped at a time");
    g.cuGraphExecDestroy(e1);
    g.cuGraphExecDestroy(e2);
    g.cuGraphDestroy(g1);
    g.cuGraphDestroy(g2);
    trim_to_nothing("trimmed");
}

/* Four 400 MiB allocations, each freed before the next: the driver reuses one allocation's
 * memory for the next, so the graph needs 400 MiB, not the 1.6 GiB its nodes add up to. */
static void allocations_in_sequence(void)
{
    CUdeviceptr p;
    CUgraph graph = NULL;
    CUgraphExec exec;
    bool ok = g.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS;
    for (int i = 0; ok && i < 4; i++)
        ok = a.cuMemAllocAsync(&p, 400 * MiB, stream) == CUDA_SUCCESS &&
             a.cuMemFreeAsync(p, stream) == CUDA_SUCCESS;
    exec = capture_instantiated(ok, &graph,
                                "capture of four 400 MiB allocations, each freed in turn");
    expect(g.cuGraphLaunch(exec, stream), CUDA_SUCCESS,
           "launch of 4 x 400 MiB freed in turn (1.6 GiB in all) in a 1 GiB slice");
    expect_used(400 * MiB, "after the launch");
    expect(g.cuGraphLaunch(exec, stream), CUDA_SUCCESS, "its relaunch");
    expect_used(400 * MiB, "after the relaunch");
    g.cuGraphExecDestroy(exec);
    g.cuGraphDestroy(graph);
    trim_to_nothing("trimmed");

    /* two 600 MiB allocations live at once, both freed at the end: 1.2 GiB does not fit */
    CUdeviceptr q;
    ok = g.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS &&
         a.cuMemAllocAsync(&p, 600 * MiB, stream) == CUDA_SUCCESS &&
         a.cuMemAllocAsync(&q, 600 * MiB, stream) == CUDA_SUCCESS &&
         a.cuMemFreeAsync(p, stream) == CUDA_SUCCESS &&
         a.cuMemFreeAsync(q, stream) == CUDA_SUCCESS;
    exec = capture_instantiated(ok, &graph, "capture of two 600 MiB allocations live at once");
    expect(g.cuGraphLaunch(exec, stream), CUDA_ERROR_OUT_OF_MEMORY,
           "launch of 2 x 600 MiB live at once in a 1 GiB slice");
    expect_used(0, "after the refused launch");
    g.cuGraphExecDestroy(exec);
    g.cuGraphDestroy(graph);
}

/* Two threads launching a 600 MiB graph each, in their own streams, and a third trimming the
 * graph memory: each launch uploads its graph (trimming the other's idle mapping when both
 * do not fit), and no trim, the tenant's or carve's, may land between a thread's upload and
 * its launch (the launch would map that graph again, past the cap). The slice's usage,
 * sampled all along, stays within the cap. */
#define RACE_LAUNCHES 200000

static struct carve_slice *slice;
/* RACE_LAUNCHES, or MEM_GRAPH_RACE_LAUNCHES: under valgrind, which runs one thread at a time,
 * the trimmer and the sampler spin through the launchers' time slices, and 200000 launches
 * took 14 to 55 s from one run to the next (valgrind.sh sets 5000: it looks for memory
 * errors, not for the race) */
static int race_launches = RACE_LAUNCHES;
static _Atomic uint64_t race_peak;
static _Atomic int race_running;

static void race_sample(void)
{
    uint64_t u = carve_slice_used(slice, 0), was = atomic_load(&race_peak);
    while (u > was && !atomic_compare_exchange_weak(&race_peak, &was, u))
        ;
}

static void *race_launcher(void *arg)
{
    CUgraphExec exec = arg;
    CUstream s;
    long refused = 0;
    if (a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || a.cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        return (void *)(long)race_launches;
    for (int i = 0; i < race_launches; i++) {
        refused += g.cuGraphLaunch(exec, s) != CUDA_SUCCESS;
        race_sample();
    }
    a.cuStreamSynchronize(s);
    a.cuStreamDestroy(s);
    atomic_fetch_sub(&race_running, 1);
    return (void *)refused;
}

static void *race_trimmer(void *arg)
{
    (void)arg;
    a.cuCtxSetCurrent(ctx);
    while (atomic_load(&race_running)) {
        g.cuDeviceGraphMemTrim(0);
        race_sample();
    }
    return NULL;
}

static void threads_near_the_cap(void)
{
    const char *name = getenv("CARVE_SLICE"), *launches = getenv("MEM_GRAPH_RACE_LAUNCHES");
    if (launches && atoi(launches) > 0)
        race_launches = atoi(launches);
    if (!name || carve_slice_open(name, &slice, NULL, 0) < 0) {
        failed += mem_check(0, "open the slice named by CARVE_SLICE");
        return;
    }
    CUdeviceptr p1, p2;
    CUgraphExec e1, e2;
    CUgraph g1 = captured(600 * MiB, true, &p1), g2 = captured(600 * MiB, true, &p2);
    expect(g.cuGraphInstantiateWithFlags(&e1, g1, 0), CUDA_SUCCESS, "instantiate the first");
    expect(g.cuGraphInstantiateWithFlags(&e2, g2, 0), CUDA_SUCCESS, "instantiate the second");
    pthread_t t1, t2, t3;
    void *r1 = NULL, *r2 = NULL;
    atomic_store(&race_running, 2);
    pthread_create(&t1, NULL, race_launcher, e1);
    pthread_create(&t2, NULL, race_launcher, e2);
    pthread_create(&t3, NULL, race_trimmer, NULL);
    while (atomic_load(&race_running))
        race_sample();
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    pthread_join(t3, NULL);
    uint64_t peak = atomic_load(&race_peak), cap = carve_slice_cap(slice, 0);
    failed += mem_check(peak <= cap, "two threads x %d launches of 600 MiB graphs: the "
                        "slice's usage peaked at %llu MiB <= cap %llu MiB", race_launches,
                        (unsigned long long)(peak / MiB), (unsigned long long)(cap / MiB));
    failed += mem_check(r1 == NULL && r2 == NULL, "every launch went through (%ld and %ld "
                        "refused)", (long)r1, (long)r2);
    g.cuGraphExecDestroy(e1);
    g.cuGraphExecDestroy(e2);
    g.cuGraphDestroy(g1);
    g.cuGraphDestroy(g2);
    trim_to_nothing("trimmed");
    carve_slice_close(slice);
}

int main(void)
{
    CUdevice dev;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || mem_api_dlsym(&a) != 0)
        return 1;
#define GRAPH_DLSYM(name)                                                    \
    if (!(g.name = (__typeof__(g.name))dlsym(h, #name)))                     \
        failed += mem_check(0, "dlsym(libcuda, \"%s\") resolves", #name);
    GRAPH_API(GRAPH_DLSYM)
    if (failed || a.cuInit(0) != CUDA_SUCCESS || a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        a.cuStreamCreate(&stream, 0) != CUDA_SUCCESS)
        return 1;
    captured_alloc_and_free();
    graph_past_the_cap();
    allocation_outliving_its_graph();
    two_graphs_in_turn();
    allocations_in_sequence();
    threads_near_the_cap();
    printf("mem_graph: %d failed\n", failed);
    return failed ? 1 : 0;
}
