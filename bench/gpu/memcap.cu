// memcap.cu - does a 4 GiB slice hold for a CUDA runtime program?
//
//   memcap [LABEL]      (run inside `carve run --memory 4GiB`)
//
// Prints what cudaMemGetInfo reports, allocates 3 GiB (must succeed), then 2 GiB more (must
// fail with cudaErrorMemoryAllocation), and prints one JSON line:
//   {"framework": LABEL, "sees_total": bytes, "fit_3g": bool, "oom_on_2g_more": bool,
//    "error_type": "cudaErrorMemoryAllocation"}
// Built twice by run-memcap.sh: `-cudart static` and `-cudart shared`, because the two
// runtimes find the driver differently. Exit 0 when both checks hold.
#include <cstdio>

#include <cuda_runtime.h>

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "cudart";
    const size_t gib = 1024ull * 1024ull * 1024ull;
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
    bool fit = rc3 == cudaSuccess;
    bool oom = fit && rc2 == cudaErrorMemoryAllocation;

    std::printf("{\"framework\": \"%s\", \"sees_total\": %zu, \"fit_3g\": %s, "
                "\"oom_on_2g_more\": %s, \"error_type\": \"%s\"}\n",
                label, total_b, fit ? "true" : "false", oom ? "true" : "false",
                fit ? cudaGetErrorName(rc2) : cudaGetErrorName(rc3));
    if (second)
        cudaFree(second);
    if (first)
        cudaFree(first);
    return fit && oom ? 0 : 1;
}
