/* compute_load.c - a tenant that keeps the GPU busy and reports, from the GPU side, the
 * share of the GPU's time it got: the work its completed kernels represent, per window.
 *
 *   compute_load [--kind big|small|graph] [--kernel-us N] [--seconds S] [--window-ms W]
 *                [--depth D] [--graph-nodes G] [--iters-per-us X] [--label L] [--launch API]
 *                [--long-every N --long-us L] [--grow-after S --grow-us N] [--grid BLOCKS]
 *                [--spin]
 *   compute_load --kind latency [--graph-nodes G] [--think-us T] ...
 *   compute_load --calibrate [--grid BLOCKS]   (real GPU: the spin loop's iterations per us)
 *
 * A unit of work is one kernel (big: 10 ms by default; small: 20 us) or one graph replay of
 * G small kernels captured from a stream. Up to D units are in flight; an event after each
 * unit tells when it completed. A kernel's work is what it takes alone: on the simulated GPU
 * the built-in carve_sleep kernel's duration; on a real GPU a spin loop (one FMA chain per
 * thread, two blocks per SM, or --grid blocks of 128 threads) whose iterations per
 * microsecond --calibrate measures alone, with the same grid.
 * So the share reported is work done per wall time, measured where the work is done, not
 * from carve's own books. Prints one JSON line per window and a summary line.
 *
 * --kind latency is a closed-loop latency tenant instead: a request is G small kernels and a
 * wait for them; then it thinks T us. The summary gives the p50 and p99 in us of the requests
 * after the first half second.
 *
 * --launch picks the driver entry point of every kernel launch (big and small kinds), so that
 * a test can show each one held to its share: kernel (cuLaunchKernel, the default),
 * kernel-ptsz, ex (cuLaunchKernelEx), ex-ptsz, coop (cuLaunchCooperativeKernel), coop-ptsz,
 * multi-device (cuLaunchCooperativeKernelMultiDevice, this device alone), and the API before
 * CUDA 4.0: launch (cuLaunch), grid (cuLaunchGrid, on the default stream) and grid-async
 * (cuLaunchGridAsync).
 *
 * --long-every N makes every Nth kernel (big and small kinds) run --long-us L instead: one
 * kernel and grid whose work varies, as a kernel whose loop count is an argument does (a
 * mixture-of-experts layer, a varying sequence length).
 *
 * --grow-after S --grow-us N: from S seconds on, the kernels (those not made long by
 * --long-every) run N us instead of --kernel-us: one kernel and grid whose work changes
 * for good, as a decode step's attention does while its context grows.
 *
 * --spin waits for completions by polling (wait_done), as the CUDA driver does by default,
 * instead of in the driver's synchronize call. */
#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_load.h"

#define MAX_DEPTH 64

/* The FMA chain's result is stored when it is infinite (never): the store keeps the compiler
 * from removing the loop, which it did when the result was unused. */
static const char spin_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry carve_spin(.param .u64 iters, .param .u64 out)\n"
    "{\n"
    "    .reg .u64 %rd<4>;\n"
    "    .reg .f32 %f<2>;\n"
    "    .reg .pred %p<3>;\n"
    "    ld.param.u64 %rd1, [iters];\n"
    "    ld.param.u64 %rd3, [out];\n"
    "    mov.u64 %rd2, 0;\n"
    "    cvt.rn.f32.u64 %f1, %rd1;\n"
    "LOOP:\n"
    "    fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3A83126F;\n"
    "    add.u64 %rd2, %rd2, 1;\n"
    "    setp.lt.u64 %p1, %rd2, %rd1;\n"
    "    @%p1 bra LOOP;\n"
    "    setp.eq.f32 %p2, %f1, 0f7F800000;\n"
    "    @%p2 st.global.f32 [%rd3], %f1;\n"
    "    ret;\n"
    "}\n";

enum launch_api {
    API_KERNEL, API_KERNEL_PTSZ, API_EX, API_EX_PTSZ, API_COOP, API_COOP_PTSZ, API_MULTI_DEVICE,
    API_LAUNCH, API_GRID, API_GRID_ASYNC
};
static const char *const api_names[] = {"kernel", "kernel-ptsz", "ex", "ex-ptsz", "coop",
                                        "coop-ptsz", "multi-device", "launch", "grid",
                                        "grid-async"};
#define N_APIS (sizeof(api_names) / sizeof(api_names[0]))

/* The entry points only --launch uses, looked up when it asks for them: a driver without the
 * deprecated ones still runs every other load. */
#define LAUNCH_FUNCTIONS(X)                                                                  \
    X(cuLaunchKernel_ptsz)                                                                   \
    X(cuLaunchKernelEx)                                                                      \
    X(cuLaunchKernelEx_ptsz)                                                                 \
    X(cuLaunchCooperativeKernel)                                                             \
    X(cuLaunchCooperativeKernel_ptsz)                                                        \
    X(cuLaunchCooperativeKernelMultiDevice)                                                  \
    X(cuFuncSetBlockShape)                                                                   \
    X(cuParamSetSize)                                                                        \
    X(cuParamSetv)                                                                           \
    X(cuLaunch)                                                                              \
    X(cuLaunchGrid)                                                                          \
    X(cuLaunchGridAsync)

struct opts {
    enum launch_api api;
    const char *kind, *label;
    double kernel_us, seconds, window_ms, iters_per_us, think_us, long_us, grow_after, grow_us;
    int depth, graph_nodes, long_every, grid;
    bool calibrate, spin;
};

struct load {
    struct bcu cu;
    bool sim;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    int sms;       /* as the device says: under MPS, what the client's thread share leaves */
    unsigned grid;
    unsigned long long param; /* ns (simulated) or loop iterations (real) */
    CUdeviceptr out;          /* the spin kernel's never-taken store */
    CUgraphExec exec;
    enum launch_api api;
#define LAUNCH_MEMBER(fn) __typeof__(fn) *fn;
    LAUNCH_FUNCTIONS(LAUNCH_MEMBER)
#undef LAUNCH_MEMBER
};

static int usage(const char *why)
{
    fprintf(stderr, "compute_load: %s\nusage: compute_load [--kind big|small|graph] "
            "[--kernel-us N] [--seconds S] [--window-ms W] [--depth D] [--graph-nodes G] "
            "[--iters-per-us X] [--label L] [--launch API] [--long-every N --long-us L] "
            "[--grow-after S --grow-us N] [--grid BLOCKS] [--spin] | --calibrate [--grid BLOCKS]\n"
            "API: kernel kernel-ptsz ex ex-ptsz coop coop-ptsz multi-device launch grid "
            "grid-async\n", why);
    return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        bool num_ok = v && end && !*end && x > 0;
        if (!strcmp(a, "--calibrate")) {
            o->calibrate = true;
            continue;
        }
        if (!strcmp(a, "--spin")) {
            o->spin = true;
            continue;
        }
        if (!v)
            return usage("an option needs a value");
        if (!strcmp(a, "--launch")) {
            size_t k = 0;
            while (k < N_APIS && strcmp(api_names[k], v))
                k++;
            if (k == N_APIS)
                return usage("unknown --launch API");
            o->api = (enum launch_api)k;
        } else if (!strcmp(a, "--kind")) o->kind = v;
        else if (!strcmp(a, "--label")) o->label = v;
        else if (!num_ok) return usage("a number option needs a positive number");
        else if (!strcmp(a, "--kernel-us")) o->kernel_us = x;
        else if (!strcmp(a, "--seconds")) o->seconds = x;
        else if (!strcmp(a, "--window-ms")) o->window_ms = x;
        else if (!strcmp(a, "--iters-per-us")) o->iters_per_us = x;
        else if (!strcmp(a, "--depth")) o->depth = (int)x;
        else if (!strcmp(a, "--think-us")) o->think_us = x;
        else if (!strcmp(a, "--graph-nodes")) o->graph_nodes = (int)x;
        else if (!strcmp(a, "--long-every")) o->long_every = (int)x;
        else if (!strcmp(a, "--long-us")) o->long_us = x;
        else if (!strcmp(a, "--grow-after")) o->grow_after = x;
        else if (!strcmp(a, "--grow-us")) o->grow_us = x;
        else if (!strcmp(a, "--grid")) o->grid = x < 1u << 24 ? (int)x : 1 << 24;
        else return usage("unknown option");
        i++;
    }
    if (strcmp(o->kind, "big") && strcmp(o->kind, "small") && strcmp(o->kind, "graph") &&
        strcmp(o->kind, "latency"))
        return usage("--kind is big, small, graph or latency");
    if (!strcmp(o->kind, "graph") && o->api != API_KERNEL)
        return usage("--launch is for kernels; a graph's are captured with cuLaunchKernel");
    if ((o->long_every > 0) != (o->long_us > 0))
        return usage("--long-every and --long-us go together");
    if (o->long_every && (strcmp(o->kind, "big") && strcmp(o->kind, "small")))
        return usage("--long-every is for the big and small kinds");
    if ((o->grow_after > 0) != (o->grow_us > 0))
        return usage("--grow-after and --grow-us go together");
    if (o->grow_us && (strcmp(o->kind, "big") && strcmp(o->kind, "small")))
        return usage("--grow-after is for the big and small kinds");
    if (o->depth == 0)
        o->depth = strcmp(o->kind, "big") ? 16 : 4;
    if (o->depth < 1 || o->depth > MAX_DEPTH)
        return usage("--depth is 1-64");
    if (o->kernel_us == 0)
        o->kernel_us = strcmp(o->kind, "big") ? 20 : 10000;
    return -1;
}

static unsigned block_of(const struct load *L)
{
    return L->sim ? 1 : 128;
}

static CUresult launch_with(struct load *L)
{
    void *params[] = {&L->param, &L->out};
    unsigned g = L->grid, b = block_of(L);
    CUlaunchConfig config = {g, 1, 1, b, 1, 1, 0, L->stream, NULL, 0};
    CUDA_LAUNCH_PARAMS one = {L->fn, g, 1, 1, b, 1, 1, 0, L->stream, params};
    switch (L->api) {
    case API_KERNEL:
        return L->cu.cuLaunchKernel(L->fn, g, 1, 1, b, 1, 1, 0, L->stream, params, NULL);
    case API_KERNEL_PTSZ:
        return L->cuLaunchKernel_ptsz(L->fn, g, 1, 1, b, 1, 1, 0, L->stream, params, NULL);
    case API_EX: return L->cuLaunchKernelEx(&config, L->fn, params, NULL);
    case API_EX_PTSZ: return L->cuLaunchKernelEx_ptsz(&config, L->fn, params, NULL);
    case API_COOP:
        return L->cuLaunchCooperativeKernel(L->fn, g, 1, 1, b, 1, 1, 0, L->stream, params);
    case API_COOP_PTSZ:
        return L->cuLaunchCooperativeKernel_ptsz(L->fn, g, 1, 1, b, 1, 1, 0, L->stream, params);
    case API_MULTI_DEVICE: return L->cuLaunchCooperativeKernelMultiDevice(&one, 1, 0);
    case API_LAUNCH: return L->cuLaunch(L->fn);
    case API_GRID: return L->cuLaunchGrid(L->fn, (int)g, 1);
    case API_GRID_ASYNC: return L->cuLaunchGridAsync(L->fn, (int)g, 1, L->stream);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static int launch_kernel(struct load *L)
{
    return launch_with(L) == CUDA_SUCCESS ? 0 : -1;
}

/* The API before CUDA 4.0 takes the block shape and the parameters from the function: set
 * them once (they never change here). */
static int setup_legacy(struct load *L)
{
    if (L->cuFuncSetBlockShape(L->fn, (int)block_of(L), 1, 1) != CUDA_SUCCESS ||
        L->cuParamSetv(L->fn, 0, &L->param, sizeof(L->param)) != CUDA_SUCCESS ||
        L->cuParamSetv(L->fn, 8, &L->out, sizeof(L->out)) != CUDA_SUCCESS ||
        L->cuParamSetSize(L->fn, 16) != CUDA_SUCCESS) {
        fprintf(stderr, "compute_load: cannot set the kernel's block shape and parameters\n");
        return -1;
    }
    return 0;
}

static int resolve_launch_api(struct load *L, enum launch_api api)
{
    L->api = api;
    if (api == API_KERNEL)
        return 0;
#define LAUNCH_RESOLVE(fn) L->fn = (__typeof__(fn) *)dlsym(L->cu.handle, #fn);
    LAUNCH_FUNCTIONS(LAUNCH_RESOLVE)
#undef LAUNCH_RESOLVE
    void *needed[N_APIS] = {
        [API_KERNEL_PTSZ] = (void *)L->cuLaunchKernel_ptsz,
        [API_EX] = (void *)L->cuLaunchKernelEx,
        [API_EX_PTSZ] = (void *)L->cuLaunchKernelEx_ptsz,
        [API_COOP] = (void *)L->cuLaunchCooperativeKernel,
        [API_COOP_PTSZ] = (void *)L->cuLaunchCooperativeKernel_ptsz,
        [API_MULTI_DEVICE] = (void *)L->cuLaunchCooperativeKernelMultiDevice,
        [API_LAUNCH] = (void *)L->cuLaunch,
        [API_GRID] = (void *)L->cuLaunchGrid,
        [API_GRID_ASYNC] = (void *)L->cuLaunchGridAsync,
    };
    bool legacy = api == API_LAUNCH || api == API_GRID || api == API_GRID_ASYNC;
    if (!needed[api] ||
        (legacy && (!L->cuFuncSetBlockShape || !L->cuParamSetSize || !L->cuParamSetv))) {
        fprintf(stderr, "compute_load: libcuda.so.1 has no entry point for --launch %s\n",
                api_names[api]);
        return -1;
    }
    return 0;
}

static int setup(struct load *L, const struct opts *o)
{
    if (bcu_open(&L->cu, 0) != 0 || resolve_launch_api(L, o->api) != 0)
        return -1;
    L->sim = strstr(L->cu.name, "simulated") != NULL;
    const char *image = L->sim ? CARVE_SIM_KERNEL_IMAGE : spin_ptx;
    if (L->cu.cuModuleLoadData(&L->mod, image) != CUDA_SUCCESS ||
        L->cu.cuModuleGetFunction(&L->fn, L->mod, L->sim ? "carve_sleep" : "carve_spin") !=
            CUDA_SUCCESS) {
        fprintf(stderr, "compute_load: cannot load the %s kernel\n", L->sim ? "sleep" : "spin");
        return -1;
    }
    if (!L->sim && L->cu.cuMemAlloc_v2(&L->out, 64) != CUDA_SUCCESS) {
        fprintf(stderr, "compute_load: cannot allocate 64 bytes of device memory\n");
        return -1;
    }
    L->sms = 1;
    L->cu.cuDeviceGetAttribute(&L->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, L->cu.dev);
    /* 2 blocks an SM by default: a grid sized by the SMs the device admits to, which under MPS
       shrinks with the thread share, so that each kernel does less and takes as long; a
       --grid of the GPU's own count, filling every SM, is what an SM share slows down */
    L->grid = L->sim        ? 1
              : o->grid > 0 ? (unsigned)o->grid
                            : (unsigned)(L->sms > 0 ? L->sms : 1) * 2;
    if (o->api == API_LAUNCH || o->api == API_GRID)
        return 0; /* they launch into the default stream: the events go there too */
    if (L->cu.cuStreamCreate(&L->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "compute_load: cannot create a stream\n");
        return -1;
    }
    return 0;
}

/* --spin: polls, as the CUDA driver waits by default (CU_CTX_SCHED_AUTO spins while a
 * process has fewer contexts than CPUs). The simulated GPU's synchronize sleeps instead, and
 * on a VM a wake-up can come milliseconds late: a lone tenant of 20 us kernels left the
 * simulated GPU idle 1.3% of the time, in gaps of up to 3.5 ms with the CPUs 90% idle, and
 * a limiter's test would count that as the limiter's. */
static void wait_done(struct load *L, CUevent e, bool spin)
{
    if (!spin) {
        L->cu.cuEventSynchronize(e);
        return;
    }
    while (L->cu.cuEventQuery(e) == CUDA_ERROR_NOT_READY)
        sched_yield();
}

/* Real GPU: iterations of the spin loop per microsecond, alone (the fastest of 5 tries). */
static double calibrate(struct load *L)
{
    CUevent a, b;
    L->cu.cuEventCreate(&a, 0);
    L->cu.cuEventCreate(&b, 0);
    double best_ms = 0;
    enum launch_api api = L->api;
    L->api = API_KERNEL; /* the legacy APIs' parameters are not set yet */
    L->param = 2000000;
    for (int i = 0; i < 6; i++) {
        L->cu.cuEventRecord(a, L->stream);
        launch_kernel(L);
        L->cu.cuEventRecord(b, L->stream);
        L->cu.cuEventSynchronize(b);
        float ms = 0;
        L->cu.cuEventElapsedTime(&ms, a, b);
        if (i > 0 && (best_ms == 0 || ms < best_ms)) /* the first warms up */
            best_ms = ms;
    }
    L->cu.cuEventDestroy_v2(a);
    L->cu.cuEventDestroy_v2(b);
    L->api = api;
    return best_ms > 0 ? (double)L->param / (best_ms * 1000.0) : 0;
}

static int make_graph(struct load *L, int nodes)
{
    CUgraph g;
    if (L->cu.cuStreamBeginCapture_v2(L->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) !=
        CUDA_SUCCESS)
        return -1;
    for (int i = 0; i < nodes; i++)
        launch_kernel(L);
    if (L->cu.cuStreamEndCapture(L->stream, &g) != CUDA_SUCCESS ||
        L->cu.cuGraphInstantiateWithFlags(&L->exec, g, 0) != CUDA_SUCCESS)
        return -1;
    L->cu.cuGraphDestroy(g);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_latency(struct load *L, const struct opts *o)
{
    size_t cap = 1 << 20, n = 0;
    double *lat = malloc(cap * sizeof(*lat));
    if (!lat)
        return 1;
    uint64_t start = bcu_now_ns(), end = start + (uint64_t)(o->seconds * 1e9);
    uint64_t warm_until = start + 500000000ull; /* the first half second is not counted */
    while (bcu_now_ns() < end && n < cap) {
        uint64_t t0 = bcu_now_ns();
        for (int k = 0; k < o->graph_nodes; k++)
            if (launch_kernel(L) != 0) {
                fprintf(stderr, "compute_load: launch failed\n");
                free(lat);
                return 1;
            }
        L->cu.cuStreamSynchronize(L->stream);
        if (t0 >= warm_until)
            lat[n++] = (double)(bcu_now_ns() - t0) / 1000.0;
        struct timespec ts = {0, (long)(o->think_us * 1000)};
        nanosleep(&ts, NULL);
    }
    qsort(lat, n, sizeof(*lat), cmp_double);
    printf("{\"label\": \"%s\", \"kind\": \"latency\", \"requests\": %zu, \"p50_us\": %.1f, "
           "\"p99_us\": %.1f, \"device\": \"%s\"}\n", o->label, n, n ? lat[n / 2] : 0,
           n ? lat[(n * 99) / 100] : 0, L->cu.name);
    free(lat);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.kind = "big", .label = "load", .seconds = 10, .window_ms = 1000,
                     .depth = 0, .graph_nodes = 10, .think_us = 2000};
    int r = parse(argc, argv, &o);
    if (r >= 0)
        return r;
    struct load L = {0};
    if (setup(&L, &o) != 0)
        return 1;
    if (o.calibrate) {
        if (L.sim) {
            printf("{\"iters_per_us\": 0, \"simulated\": true, \"sms\": %d}\n", L.sms);
            return 0;
        }
        double ipu = calibrate(&L);
        printf("{\"iters_per_us\": %.3f, \"sms\": %d, \"grid\": %u}\n", ipu, L.sms, L.grid);
        return 0;
    }
    if (!L.sim && o.iters_per_us <= 0)
        o.iters_per_us = calibrate(&L);
    L.param = L.sim ? (unsigned long long)(o.kernel_us * 1000)
                    : (unsigned long long)(o.kernel_us * o.iters_per_us);
    unsigned long long short_param = L.param;
    unsigned long long grown_param = L.sim ? (unsigned long long)(o.grow_us * 1000)
                                           : (unsigned long long)(o.grow_us * o.iters_per_us);
    unsigned long long long_param = L.sim ? (unsigned long long)(o.long_us * 1000)
                                          : (unsigned long long)(o.long_us * o.iters_per_us);
    if ((o.api == API_LAUNCH || o.api == API_GRID || o.api == API_GRID_ASYNC) &&
        setup_legacy(&L) != 0)
        return 1;
    if (!strcmp(o.kind, "latency"))
        return run_latency(&L, &o);
    bool graph = !strcmp(o.kind, "graph");
    if (graph && make_graph(&L, o.graph_nodes) != 0) {
        fprintf(stderr, "compute_load: cannot capture the graph\n");
        return 1;
    }
    double unit_ns = o.kernel_us * 1000 * (graph ? o.graph_nodes : 1);
    double slot_ns[MAX_DEPTH]; /* the work of the unit in flight in each slot */
    CUevent done[MAX_DEPTH];
    for (int i = 0; i < o.depth; i++)
        L.cu.cuEventCreate(&done[i], 0);

    uint64_t start = bcu_now_ns(), window = (uint64_t)(o.window_ms * 1e6);
    uint64_t end = start + (uint64_t)(o.seconds * 1e9), win_start = start;
    double win_work = 0, total_work = 0;
    int w = 0;
    for (uint64_t i = 0;; i++) {
        int slot = (int)(i % (uint64_t)o.depth);
        if (i >= (uint64_t)o.depth) { /* the unit launched depth ago has completed */
            wait_done(&L, done[slot], o.spin);
            win_work += slot_ns[slot];
            total_work += slot_ns[slot];
        }
        uint64_t now = bcu_now_ns();
        while (now >= win_start + window) {
            printf("{\"label\": \"%s\", \"window\": %d, \"share\": %.2f}\n", o.label, w++,
                   100.0 * win_work / (double)window);
            win_work = 0;
            win_start += window;
        }
        if (now >= end)
            break;
        if (o.grow_us > 0 && short_param != grown_param &&
            now >= start + (uint64_t)(o.grow_after * 1e9)) {
            short_param = grown_param;
            unit_ns = o.grow_us * 1000;
        }
        bool is_long = o.long_every && i % (uint64_t)o.long_every == (uint64_t)o.long_every - 1;
        L.param = is_long ? long_param : short_param;
        slot_ns[slot] = is_long ? o.long_us * 1000 : unit_ns;
        int lr = graph ? (L.cu.cuGraphLaunch(L.exec, L.stream) == CUDA_SUCCESS ? 0 : -1)
                       : launch_kernel(&L);
        if (lr != 0 || L.cu.cuEventRecord(done[slot], L.stream) != CUDA_SUCCESS) {
            fprintf(stderr, "compute_load: launch failed\n");
            return 1;
        }
    }
    uint64_t stop = bcu_now_ns();
    L.cu.cuStreamSynchronize(L.stream);
    printf("{\"label\": \"%s\", \"kind\": \"%s\", \"total_share\": %.2f, \"seconds\": %.2f, "
           "\"device\": \"%s\", \"sms\": %d, \"grid\": %u}\n", o.label, o.kind,
           100.0 * total_work / (double)(stop - start), (double)(stop - start) / 1e9,
           L.cu.name, L.sms, L.grid);
    fflush(stdout);
    if (graph)
        L.cu.cuGraphExecDestroy(L.exec);
    if (L.stream)
        L.cu.cuStreamDestroy_v2(L.stream);
    bcu_close(&L.cu);
    return 0;
}
