// memcap.cu - does a 4 GiB slice hold for a CUDA runtime program?
//
//   memcap [LABEL]          (run inside `carve run --memory 4GiB`)
//   memcap --graph [LABEL]  the same through CUDA graphs' allocation nodes
//
// Prints what cudaMemGetInfo reports, allocates 3 GiB (must succeed), then 2 GiB more (must
// fail with cudaErrorMemoryAllocation), and prints one JSON line:
//   {"framework": LABEL, "sees_total": bytes, "fit_3g": bool, "oom_on_2g_more": bool,
//    "error_type": "cudaErrorMemoryAllocation"}
// Built twice by run-memcap.sh: `-cudart static` and `-cudart shared`, because the two
// runtimes find the driver differently. Exit 0 when both checks hold.
//
// With --graph, the 3 GiB come from a captured graph whose cudaMallocAsync it does not free
// (launched, then still live), and the 2 GiB more from a second captured graph that
// allocates and frees them: its launch must fail with cudaErrorMemoryAllocation.
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

static const size_t gib = 1024ull * 1024ull * 1024ull;

// Prints the JSON line; the exit status: 0 when 3 GiB fit and 2 GiB more did not.
static int report(const char *label, size_t total_b, cudaError_t rc3, cudaError_t rc2)
{
    bool fit = rc3 == cudaSuccess;
    bool oom = fit && rc2 == cudaErrorMemoryAllocation;
    std::printf("{\"framework\": \"%s\", \"sees_total\": %zu, \"fit_3g\": %s, "
                "\"oom_on_2g_more\": %s, \"error_type\": \"%s\"}\n",
                label, total_b, fit ? "true" : "false", oom ? "true" : "false",
                fit ? cudaGetErrorName(rc2) : cudaGetErrorName(rc3));
    return fit && oom ? 0 : 1;
}

// Captures a graph allocating bytes on stream s (freeing them inside when asked), launches
// it and waits: the launch's error, or the capture's.
static cudaError_t graph_alloc(cudaStream_t s, size_t bytes, bool free_inside, void **p,
                               cudaGraphExec_t *exec)
{
    cudaGraph_t graph = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(p, bytes, s);
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(*p, 1, bytes, s);
    if (rc == cudaSuccess && free_inside)
        rc = cudaFreeAsync(*p, s);
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (rc == cudaSuccess)
        rc = end;
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(exec, graph, 0);
    if (rc == cudaSuccess)
        rc = cudaGraphLaunch(*exec, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    if (graph)
        cudaGraphDestroy(graph);
    cudaGetLastError();
    return rc;
}

static int graph_main(const char *label)
{
    size_t free_b = 0, total_b = 0;
    cudaStream_t s;
    void *first = nullptr, *second = nullptr;
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    cudaError_t rc = cudaMemGetInfo(&free_b, &total_b);
    if (rc != cudaSuccess) {
        std::printf("cudaMemGetInfo failed: %s\n", cudaGetErrorName(rc));
        return 1;
    }
    if ((rc = cudaStreamCreate(&s)) != cudaSuccess) {
        std::printf("cudaStreamCreate failed: %s\n", cudaGetErrorName(rc));
        return 1;
    }
    std::printf("cudaMemGetInfo: total %zu MiB, free %zu MiB\n", total_b >> 20, free_b >> 20);
    cudaError_t rc3 = graph_alloc(s, 3 * gib, false, &first, &e1);
    std::printf("graph of cudaMallocAsync(3 GiB), launched: %s\n", cudaGetErrorName(rc3));
    cudaError_t rc2 = cudaErrorUnknown;
    if (rc3 == cudaSuccess) {
        rc2 = graph_alloc(s, 2 * gib, true, &second, &e2);
        std::printf("graph of 2 GiB more, launched: %s\n", cudaGetErrorName(rc2));
    }
    int status = report(label, total_b, rc3, rc2);
    if (rc3 == cudaSuccess)
        cudaFree(first);
    if (e1)
        cudaGraphExecDestroy(e1);
    if (e2)
        cudaGraphExecDestroy(e2);
    cudaDeviceGraphMemTrim(0);
    return status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::strcmp(argv[1], "--graph") == 0)
        return graph_main(argc > 2 ? argv[2] : "cudart-graph");
    const char *label = argc > 1 ? argv[1] : "cudart";
    size_t free_b = 0, total_b = 0;
    void *first = nullptr, *second = nullptr;

    cudaError_t rc = cudaMemGetInfo(&free_b, &total_b);
    if (rc != cudaSuccess) {
        std::printf("cudaMemGetInfo failed: %s\n", cudaGetErrorName(rc));
        return 1;
    }
    std::printf("cudaMemGetInfo: total %zu MiB, free %zu MiB\n", total_b >> 20, free_b >> 20);

    cudaError_t rc3 = cudaMalloc(&first, 3 * gib);
    std::printf("cudaMalloc(3 GiB): %s\n", cudaGetErrorName(rc3));
    cudaError_t rc2 = cudaErrorUnknown;
    if (rc3 == cudaSuccess) {
        rc2 = cudaMalloc(&second, 2 * gib);
        std::printf("cudaMalloc(2 GiB more): %s\n", cudaGetErrorName(rc2));
        cudaGetLastError(); // an allocation failure is not sticky; clear it anyway
    }
    int status = report(label, total_b, rc3, rc2);
    if (second)
        cudaFree(second);
    if (first)
        cudaFree(first);
    return status;
}
