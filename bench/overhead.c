/* overhead.c - what one driver call costs: allocation pairs and empty-kernel launches.
 *
 *   overhead [--iters N] [--tsv | --json]
 *
 * Times, one call at a time on CLOCK_MONOTONIC, cuMemAlloc_v2+cuMemFree_v2 pairs of 4 KiB and
 * 64 MiB and cuLaunchKernel of an empty kernel, and reports the median and 99th percentile
 * in nanoseconds. Run it plain and under `carve run` to see what carve adds
 * (bench/overhead.sh does both). The empty kernel is the simulated GPU's built-in
 * "carve_empty" on the simulated GPU and a PTX kernel of the same name on a real one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_load.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define LAUNCH_BATCH 64 /* launches between synchronisations: stays below the queue depth */

enum out_format { OUT_TEXT, OUT_TSV, OUT_JSON };

struct op_result {
    const char *op;
    size_t iters;
    uint64_t median_ns;
    uint64_t p99_ns;
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

static void summarize(struct op_result *r, uint64_t *ns, size_t n)
{
    qsort(ns, n, sizeof(*ns), cmp_u64);
    r->iters = n;
    r->median_ns = ns[n / 2];
    r->p99_ns = ns[(n * 99) / 100];
}

/* One cuMemAlloc_v2 + cuMemFree_v2 pair of `size` bytes per sample; warm-up not recorded. */
static int time_alloc(struct bcu *cu, size_t size, size_t iters, uint64_t *ns,
                      struct op_result *r)
{
    size_t warm = iters / 20 + 5;

    for (size_t i = 0; i < warm + iters; i++) {
        CUdeviceptr p;
        uint64_t t0 = bcu_now_ns();
        CUresult rc = cu->cuMemAlloc_v2(&p, size);

        if (rc == CUDA_SUCCESS)
            rc = cu->cuMemFree_v2(p);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "overhead: cuMemAlloc/cuMemFree of %zu bytes failed: %s\n", size,
                    bcu_errname(cu, rc));
            return -1;
        }
        if (i >= warm)
            ns[i - warm] = bcu_now_ns() - t0;
    }
    summarize(r, ns, iters);
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
static int time_launch(struct bcu *cu, size_t iters, uint64_t *ns, struct op_result *r)
{
    CUmodule mod;
    CUfunction fn;
    size_t warm = iters / 20 + LAUNCH_BATCH;
    CUresult rc = CUDA_SUCCESS;

    if (load_empty(cu, &mod, &fn) != 0)
        return -1;
    for (size_t i = 0; i < warm + iters && rc == CUDA_SUCCESS; i++) {
        uint64_t t0 = bcu_now_ns();

        rc = cu->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (i >= warm)
            ns[i - warm] = bcu_now_ns() - t0;
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
    summarize(r, ns, iters);
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

static void report(const struct bcu *cu, const struct op_result *r, size_t n,
                   enum out_format fmt)
{
    int sim = strstr(cu->name, "simulated") != NULL;

    if (fmt == OUT_JSON) {
        printf("{\"device\": ");
        print_json_string(cu->name);
        printf(", \"simulated\": %s, \"ops\": [", sim ? "true" : "false");
        for (size_t i = 0; i < n; i++)
            printf("%s{\"op\": \"%s\", \"iters\": %zu, \"median_ns\": %llu, \"p99_ns\": %llu}",
                   i ? ", " : "", r[i].op, r[i].iters, (unsigned long long)r[i].median_ns,
                   (unsigned long long)r[i].p99_ns);
        printf("]}\n");
        return;
    }
    if (fmt == OUT_TSV) {
        printf("# device\t%s\n", cu->name);
        for (size_t i = 0; i < n; i++)
            printf("%s\t%zu\t%llu\t%llu\n", r[i].op, r[i].iters,
                   (unsigned long long)r[i].median_ns, (unsigned long long)r[i].p99_ns);
        return;
    }
    printf("device: %s\n", cu->name);
    printf("%-16s %8s %12s %12s\n", "op", "iters", "median ns", "p99 ns");
    for (size_t i = 0; i < n; i++)
        printf("%-16s %8zu %12llu %12llu\n", r[i].op, r[i].iters,
               (unsigned long long)r[i].median_ns, (unsigned long long)r[i].p99_ns);
}

static int parse_args(int argc, char **argv, size_t *iters, enum out_format *fmt)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tsv")) {
            *fmt = OUT_TSV;
        } else if (!strcmp(argv[i], "--json")) {
            *fmt = OUT_JSON;
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
            fprintf(stderr, "usage: overhead [--iters N] [--tsv | --json]\n");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t iters = 20000;
    enum out_format fmt = OUT_TEXT;
    struct op_result r[3] = {{.op = "alloc_free_4k"}, {.op = "alloc_free_64m"},
                             {.op = "launch_empty"}};
    struct bcu cu;
    uint64_t *ns;
    int ret = 1;

    if (parse_args(argc, argv, &iters, &fmt) != 0)
        return 2;
    ns = calloc(iters, sizeof(*ns));
    if (!ns) {
        fprintf(stderr, "overhead: out of host memory for %zu samples\n", iters);
        return 1;
    }
    if (bcu_open(&cu, 0) != 0)
        goto out_free;
    /* big allocations are slow on a real GPU: a tenth of the iterations, at least 100 */
    if (time_alloc(&cu, 4 * KIB, iters, ns, &r[0]) != 0 ||
        time_alloc(&cu, 64 * MIB, iters / 10 < 100 ? 100 : iters / 10, ns, &r[1]) != 0 ||
        time_launch(&cu, iters, ns, &r[2]) != 0)
        goto out;
    report(&cu, r, 3, fmt);
    ret = 0;
out:
    bcu_close(&cu);
out_free:
    free(ns);
    return ret;
}
