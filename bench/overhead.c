/* overhead.c - what one driver call costs: allocation pairs and empty-kernel launches.
 *
 *   overhead [--iters N] [--paired] [--tsv | --json]
 *
 * Times, one call at a time on CLOCK_MONOTONIC, cuMemAlloc_v2+cuMemFree_v2 pairs of 4 KiB and
 * 64 MiB, cuLaunchKernel of an empty kernel and cuGraphLaunch of a graph of one empty
 * kernel, and reports the median and 99th percentile in nanoseconds. Run it plain and under `carve run` to see what carve adds
 * (bench/overhead.sh does both). The empty kernel is the simulated GPU's built-in
 * "carve_empty" on the simulated GPU and a PTX kernel of the same name on a real one. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_load.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define LAUNCH_BATCH 64 /* launches between synchronisations: stays below the queue depth */

enum out_format { OUT_TEXT, OUT_TSV, OUT_JSON };

/* The calls a sample times. With --paired, samples alternate between two sets, carve's
 * wrappers and the driver's own functions (from libcarve's carve_real_symbol), in one process:
 * the driver's own cost drifts by more between processes than carve adds, and alternation
 * cancels that drift out. */
struct calls {
    __typeof__(cuMemAlloc_v2) *alloc;
    __typeof__(cuMemFree_v2) *free;
    __typeof__(cuLaunchKernel) *launch;
    __typeof__(cuGraphLaunch) *graph_launch;
};

#define MAX_SETS 2

struct op_result {
    const char *op;
    size_t iters;
    uint64_t median_ns[MAX_SETS];
    uint64_t p99_ns[MAX_SETS];
    int64_t added_ns; /* paired: median of (wrapped - real) over adjacent samples */
};

struct run {
    struct bcu *cu;
    struct calls set[MAX_SETS];
    int nsets;
    size_t iters;       /* samples per set */
    uint64_t *ns[MAX_SETS];
};

static const char empty_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry carve_empty()\n"
    "{\n"
    "    ret;\n"
    "}\n";

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static void summarize(const struct run *run, size_t n, struct op_result *r)
{
    r->iters = n;
    r->added_ns = 0;
    if (run->nsets == 2) {
        /* differences before sorting, while sample k of each set are neighbours in time */
        int64_t *diff = malloc(n * sizeof(*diff));
        if (diff) {
            for (size_t k = 0; k < n; k++)
                diff[k] = (int64_t)run->ns[0][k] - (int64_t)run->ns[1][k];
            qsort(diff, n, sizeof(*diff), cmp_i64);
            r->added_ns = diff[n / 2];
            free(diff);
        }
    }
    for (int s = 0; s < run->nsets; s++) {
        qsort(run->ns[s], n, sizeof(uint64_t), cmp_u64);
        r->median_ns[s] = run->ns[s][n / 2];
        r->p99_ns[s] = run->ns[s][(n * 99) / 100];
    }
}

/* One cuMemAlloc_v2 + cuMemFree_v2 pair of `size` bytes per sample; warm-up not recorded. */
static int time_alloc(struct run *run, size_t size, size_t iters, struct op_result *r)
{
    size_t warm = iters / 20 + 5;
    size_t total = (warm + iters) * (size_t)run->nsets;

    for (size_t i = 0; i < total; i++) {
        const struct calls *c = &run->set[i % (size_t)run->nsets];
        size_t k = i / (size_t)run->nsets;
        CUdeviceptr p;
        uint64_t t0 = bcu_now_ns();
        CUresult rc = c->alloc(&p, size);

        if (rc == CUDA_SUCCESS)
            rc = c->free(p);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "overhead: cuMemAlloc/cuMemFree of %zu bytes failed: %s\n", size,
                    bcu_errname(run->cu, rc));
            return -1;
        }
        if (k >= warm)
            run->ns[i % (size_t)run->nsets][k - warm] = bcu_now_ns() - t0;
    }
    summarize(run, iters, r);
    return 0;
}

/* Load the empty kernel: the built-in one on the simulated GPU, PTX on a real one; the
 * other is the fallback when the device name misleads (CARVE_SIM_NAME can be anything). */
static int load_empty(struct bcu *cu, CUmodule *mod, CUfunction *fn)
{
    const char *images[2] = {CARVE_SIM_KERNEL_IMAGE, empty_ptx};
    int first = strstr(cu->name, "simulated") ? 0 : 1;
    CUresult rc = CUDA_ERROR_UNKNOWN;

    for (int k = 0; k < 2; k++) {
        const char *image = images[(first + k) % 2];

        rc = cu->cuModuleLoadData(mod, image);
        if (rc != CUDA_SUCCESS)
            continue;
        rc = cu->cuModuleGetFunction(fn, *mod, "carve_empty");
        if (rc == CUDA_SUCCESS)
            return 0;
        cu->cuModuleUnload(*mod);
    }
    fprintf(stderr, "overhead: cannot load an empty kernel (built-in or PTX): %s\n",
            bcu_errname(cu, rc));
    return -1;
}

/* One cuLaunchKernel per sample, synchronising (untimed) every LAUNCH_BATCH launches. */
static int time_launch(struct run *run, struct op_result *r)
{
    struct bcu *cu = run->cu;
    CUmodule mod;
    CUfunction fn;
    size_t warm = run->iters / 20 + LAUNCH_BATCH;
    size_t total = (warm + run->iters) * (size_t)run->nsets;
    CUresult rc = CUDA_SUCCESS;

    if (load_empty(cu, &mod, &fn) != 0)
        return -1;
    for (size_t i = 0; i < total && rc == CUDA_SUCCESS; i++) {
        const struct calls *c = &run->set[i % (size_t)run->nsets];
        size_t k = i / (size_t)run->nsets;
        uint64_t t0 = bcu_now_ns();

        rc = c->launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (k >= warm)
            run->ns[i % (size_t)run->nsets][k - warm] = bcu_now_ns() - t0;
        if (rc == CUDA_SUCCESS && (i + 1) % LAUNCH_BATCH == 0)
            rc = cu->cuCtxSynchronize();
    }
    if (rc == CUDA_SUCCESS)
        rc = cu->cuCtxSynchronize();
    cu->cuModuleUnload(mod);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "overhead: launching the empty kernel failed: %s\n",
                bcu_errname(cu, rc));
        return -1;
    }
    summarize(run, run->iters, r);
    return 0;
}

/* One cuGraphLaunch of a graph holding one empty kernel per sample, synchronising (untimed)
 * every LAUNCH_BATCH launches. */
static int time_graph_launch(struct run *run, struct op_result *r)
{
    struct bcu *cu = run->cu;
    CUmodule mod;
    CUfunction fn;
    CUstream stream = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    size_t warm = run->iters / 20 + LAUNCH_BATCH;
    size_t total = (warm + run->iters) * (size_t)run->nsets;

    if (load_empty(cu, &mod, &fn) != 0)
        return -1;
    CUresult rc = cu->cuStreamCreate(&stream, 0);
    if (rc == CUDA_SUCCESS)
        rc = cu->cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (rc == CUDA_SUCCESS) {
        CUresult launched = cu->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
        rc = cu->cuStreamEndCapture(stream, &graph);
        rc = launched != CUDA_SUCCESS ? launched : rc;
    }
    if (rc == CUDA_SUCCESS)
        rc = cu->cuGraphInstantiateWithFlags(&exec, graph, 0);
    for (size_t i = 0; i < total && rc == CUDA_SUCCESS; i++) {
        const struct calls *c = &run->set[i % (size_t)run->nsets];
        size_t k = i / (size_t)run->nsets;
        uint64_t t0 = bcu_now_ns();

        rc = c->graph_launch(exec, stream);
        if (k >= warm)
            run->ns[i % (size_t)run->nsets][k - warm] = bcu_now_ns() - t0;
        if (rc == CUDA_SUCCESS && (i + 1) % LAUNCH_BATCH == 0)
            rc = cu->cuStreamSynchronize(stream);
    }
    if (rc == CUDA_SUCCESS)
        rc = cu->cuStreamSynchronize(stream);
    if (exec)
        cu->cuGraphExecDestroy(exec);
    if (graph)
        cu->cuGraphDestroy(graph);
    if (stream)
        cu->cuStreamDestroy_v2(stream);
    cu->cuModuleUnload(mod);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "overhead: launching a graph of the empty kernel failed: %s\n",
                bcu_errname(cu, rc));
        return -1;
    }
    summarize(run, run->iters, r);
    return 0;
}

/* --paired: the driver's own functions behind carve's wrappers, or -1 outside a slice. */
static int real_calls(struct calls *real)
{
    void *(*real_symbol)(const char *) =
        (void *(*)(const char *))dlsym(RTLD_DEFAULT, "carve_real_symbol");

    if (!real_symbol) {
        fprintf(stderr, "overhead: --paired needs libcarve (run it under `carve run`)\n");
        return -1;
    }
    real->alloc = (__typeof__(real->alloc))real_symbol("cuMemAlloc_v2");
    real->free = (__typeof__(real->free))real_symbol("cuMemFree_v2");
    real->launch = (__typeof__(real->launch))real_symbol("cuLaunchKernel");
    real->graph_launch = (__typeof__(real->graph_launch))real_symbol("cuGraphLaunch");
    if (!real->alloc || !real->free || !real->launch || !real->graph_launch) {
        fprintf(stderr, "overhead: libcarve has no driver functions behind its wrappers\n");
        return -1;
    }
    return 0;
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void report(const struct bcu *cu, const struct op_result *r, size_t n, int nsets,
                   enum out_format fmt)
{
    int sim = strstr(cu->name, "simulated") != NULL;
    bool paired = nsets == 2;

    if (fmt == OUT_JSON) {
        printf("{\"device\": ");
        print_json_string(cu->name);
        printf(", \"simulated\": %s, \"paired\": %s, \"ops\": [", sim ? "true" : "false",
               paired ? "true" : "false");
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"op\": \"%s\", \"iters\": %zu, \"median_ns\": %llu, \"p99_ns\": %llu",
                   i ? ", " : "", r[i].op, r[i].iters, (unsigned long long)r[i].median_ns[0],
                   (unsigned long long)r[i].p99_ns[0]);
            if (paired)
                printf(", \"real_median_ns\": %llu, \"real_p99_ns\": %llu, \"added_ns\": %lld",
                       (unsigned long long)r[i].median_ns[1],
                       (unsigned long long)r[i].p99_ns[1], (long long)r[i].added_ns);
            printf("}");
        }
        printf("]}\n");
        return;
    }
    if (fmt == OUT_TSV) {
        printf("# device\t%s\n", cu->name);
        for (size_t i = 0; i < n; i++) {
            printf("%s\t%zu\t%llu\t%llu", r[i].op, r[i].iters,
                   (unsigned long long)r[i].median_ns[0], (unsigned long long)r[i].p99_ns[0]);
            if (paired)
                printf("\t%llu\t%llu\t%lld", (unsigned long long)r[i].median_ns[1],
                       (unsigned long long)r[i].p99_ns[1], (long long)r[i].added_ns);
            printf("\n");
        }
        return;
    }
    printf("device: %s%s\n", cu->name,
           paired ? " (paired: carve's wrappers and the driver's own calls, alternating)" : "");
    if (paired)
        printf("%-16s %8s %14s %14s %12s %12s %12s\n", "op", "iters", "carve median", "driver median",
               "carve p99", "driver p99", "added ns");
    else
        printf("%-16s %8s %12s %12s\n", "op", "iters", "median ns", "p99 ns");
    for (size_t i = 0; i < n; i++) {
        if (paired)
            printf("%-16s %8zu %14llu %14llu %12llu %12llu %12lld\n", r[i].op, r[i].iters,
                   (unsigned long long)r[i].median_ns[0], (unsigned long long)r[i].median_ns[1],
                   (unsigned long long)r[i].p99_ns[0], (unsigned long long)r[i].p99_ns[1],
                   (long long)r[i].added_ns);
        else
            printf("%-16s %8zu %12llu %12llu\n", r[i].op, r[i].iters,
                   (unsigned long long)r[i].median_ns[0], (unsigned long long)r[i].p99_ns[0]);
    }
}

static int parse_args(int argc, char **argv, size_t *iters, enum out_format *fmt, bool *paired)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tsv")) {
            *fmt = OUT_TSV;
        } else if (!strcmp(argv[i], "--json")) {
            *fmt = OUT_JSON;
        } else if (!strcmp(argv[i], "--paired")) {
            *paired = true;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            char *end;
            unsigned long v;

            errno = 0;
            v = strtoul(argv[++i], &end, 10);
            if (errno || *end || v < 100 || v > 10000000) {
                fprintf(stderr, "overhead: --iters wants a number 100-10000000, not `%s'\n",
                        argv[i]);
                return -1;
            }
            *iters = v;
        } else {
            fprintf(stderr, "usage: overhead [--iters N] [--paired] [--tsv | --json]\n");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t iters = 20000;
    enum out_format fmt = OUT_TEXT;
    bool paired = false;
    struct op_result r[4] = {{.op = "alloc_free_4k"}, {.op = "alloc_free_64m"},
                             {.op = "launch_empty"}, {.op = "launch_graph"}};
    struct bcu cu;
    struct run run = {.cu = &cu, .nsets = 1};
    int ret = 1;

    if (parse_args(argc, argv, &iters, &fmt, &paired) != 0)
        return 2;
    if (paired) {
        run.nsets = 2;
        if (real_calls(&run.set[1]) != 0)
            return 2;
    }
    for (int s = 0; s < run.nsets; s++) {
        run.ns[s] = calloc(iters, sizeof(uint64_t));
        if (!run.ns[s]) {
            fprintf(stderr, "overhead: out of host memory for %zu samples\n", iters);
            goto out_free;
        }
    }
    if (bcu_open(&cu, 0) != 0)
        goto out_free;
    run.set[0] = (struct calls){cu.cuMemAlloc_v2, cu.cuMemFree_v2, cu.cuLaunchKernel,
                                cu.cuGraphLaunch};
    run.iters = iters;
    /* big allocations are slow on a real GPU: a tenth of the iterations, at least 100 */
    if (time_alloc(&run, 4 * KIB, iters, &r[0]) != 0 ||
        time_alloc(&run, 64 * MIB, iters / 10 < 100 ? 100 : iters / 10, &r[1]) != 0 ||
        time_launch(&run, &r[2]) != 0 || time_graph_launch(&run, &r[3]) != 0)
        goto out;
    report(&cu, r, 4, run.nsets, fmt);
    ret = 0;
out:
    bcu_close(&cu);
out_free:
    for (int s = 0; s < run.nsets; s++)
        free(run.ns[s]);
    return ret;
}
