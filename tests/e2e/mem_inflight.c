/* mem_inflight.c - context memory is not taken off the slice while another thread's
 * allocation is under way: run in a slice on the simulated GPU with CARVE_SIM_ALLOC_DELAY_US
 * (each cuMemAlloc_v2 waits before the driver allocates, while libcarve already counted it)
 * and a context of CARVE_SIM_CTX_MEMORY. One thread allocates and frees 1 GiB in a loop;
 * another asks cuMemGetInfo every millisecond, which reconciles the context's memory with
 * NVML's usage (libcarve/overhead.c). After each allocation returns, the slice's usage
 * (nvmlDeviceGetMemoryInfo, which reconciles nothing) must not be below what NVML says the
 * process holds, and an allocation of what the slice says is left must leave the process
 * within the cap. Until 2026-11-28 a reconciliation during an allocation read NVML's usage
 * below the count and took the context's memory off the slice: 500 MiB more was admitted.
 *
 * `mem_inflight unload' (CARVE_SIM_MODULE_MEMORY=512MiB): a module's memory comes back at its
 * unload while another thread allocates and frees 64 MiB without a pause. The first fix
 * lowered the context's memory only when no other thread was in such a call, and so never
 * under that churn: a 3400 MiB allocation that fits a 4 GiB slice after the unload was
 * refused (a reviewer's finding).
 *
 * `mem_inflight pools': one thread allocates 256 MiB from the default pool, frees it and
 * synchronizes (the driver then gives the pool's memory back, its release threshold 0) beside
 * one calling cuMemGetInfo every millisecond; the slice must never read below NVML's usage of
 * the process. A release at a sync between libcarve's look at the pools and its reading of
 * NVML took the pool's 256 MiB off the context's memory (7-9 samples in 8,000, a reviewer's
 * finding).
 *
 * `mem_inflight unmap' (CARVE_SIM_UNMAP_DELAY_US=4000): the same beside a thread that maps
 * a 1 GiB handle, releases it while mapped and unmaps it: the driver frees it at the unmap,
 * which gives the count back after; the context's 500 MiB was taken off meanwhile (635 of
 * 7,364 samples, a reviewer's finding against the bytes-in-flight fix).
 *
 *   carve run --simulate --memory 4GiB -- mem_inflight [SECONDS|unload|pools|unmap]   exit 0,
 *                                                                   or 1 with the misses
 *                                                                   named */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "mem_common.h"

static struct mem_api a;
static CUcontext ctx;
static atomic_bool done;
static nvmlDevice_t nvml_dev;
static __typeof__(&nvmlDeviceGetMemoryInfo) slice_memory;          /* libcarve's view */
static __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) procs; /* the driver's own */

/* What NVML says this process holds on GPU 0 (the real list, not libcarve's). */
static unsigned long long process_usage(void)
{
    nvmlProcessInfo_t list[64];
    unsigned int n = 64;
    if (procs(nvml_dev, &n, list) != NVML_SUCCESS)
        return 0;
    for (unsigned int i = 0; i < n; i++)
        if (list[i].pid == (unsigned int)getpid())
            return list[i].usedGpuMemory;
    return 0;
}

static unsigned long long slice_used(void)
{
    nvmlMemory_t m;
    return slice_memory(nvml_dev, &m) == NVML_SUCCESS ? m.used : 0;
}

static int seconds_of(int argc, char **argv, int otherwise)
{
    return argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : otherwise;
}

static void *churn(void *unused)
{
    (void)unused;
    a.cuCtxSetCurrent(ctx);
    while (!atomic_load(&done)) {
        CUdeviceptr p;
        if (a.cuMemAlloc(&p, 64 * MiB) == CUDA_SUCCESS)
            a.cuMemFree(p);
    }
    return NULL;
}

static unsigned long long used_now(void)
{
    size_t f = 0, t = 0;
    a.cuMemGetInfo(&f, &t);
    return t - f;
}

/* A module loaded and unloaded while another thread churns: its memory comes back. */
static int unload_under_churn(size_t cap)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    CUmodule m;
    pthread_t churner;
    pthread_create(&churner, NULL, churn, NULL);
    nanosleep(&tick, NULL); /* the churn under way before the load and the unload */
    int failed = mem_check(a.cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE) == CUDA_SUCCESS,
                           "cuModuleLoadData");
    unsigned long long loaded = used_now();
    a.cuModuleUnload(m);
    unsigned long long after = 0;
    for (int i = 0; i < 100; i++) { /* a second of refreshes */
        after = used_now();
        nanosleep(&tick, NULL);
    }
    CUdeviceptr big;
    unsigned long long want = cap - 600 * MiB; /* the context's 500 MiB and the churn's 64 */
    CUresult r = a.cuMemAlloc(&big, want);
    atomic_store(&done, true);
    pthread_join(churner, NULL);
    if (r == CUDA_SUCCESS)
        a.cuMemFree(big);
    failed += mem_check(after + 400 * MiB < loaded, "the module's memory came back under the "
                        "churn: %llu MiB used loaded, %llu MiB after its unload", loaded / MiB,
                        after / MiB);
    failed += mem_check(r == CUDA_SUCCESS, "then %llu MiB of the %llu MiB cap are admitted (%d)",
                        want / MiB, (unsigned long long)cap / MiB, r);
    return failed;
}

static void *pool_churn(void *unused)
{
    (void)unused;
    CUstream s;
    a.cuCtxSetCurrent(ctx);
    if (a.cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        return NULL;
    while (!atomic_load(&done)) {
        CUdeviceptr p;
        if (a.cuMemAllocAsync(&p, 256 * MiB, s) == CUDA_SUCCESS)
            a.cuMemFreeAsync(p, s);
        usleep(300); /* the syncs at random points of the other thread's refreshes */
        a.cuStreamSynchronize(s);
        usleep(300);
    }
    a.cuStreamDestroy(s);
    return NULL;
}

static void *unmap_churn(void *unused)
{
    (void)unused;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.cuCtxSetCurrent(ctx);
    while (!atomic_load(&done)) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr va = 0;
        if (a.cuMemCreate(&h, GiB, &prop, 0) != CUDA_SUCCESS) {
            usleep(1000);
            continue;
        }
        if (a.cuMemAddressReserve(&va, GiB, 0, 0, 0) == CUDA_SUCCESS &&
            a.cuMemMap(va, GiB, 0, h, 0) == CUDA_SUCCESS) {
            a.cuMemRelease(h); /* released while mapped: the unmap frees it */
            usleep(500);
            a.cuMemUnmap(va, GiB);
        } else {
            a.cuMemRelease(h);
        }
        if (va)
            a.cuMemAddressFree(va, GiB);
        usleep(500);
    }
    return NULL;
}

static void *ask_free(void *unused)
{
    (void)unused;
    a.cuCtxSetCurrent(ctx);
    while (!atomic_load(&done)) {
        size_t f, t;
        a.cuMemGetInfo(&f, &t);
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 3;
    size_t cap;
    if (mem_start(&a, &ctx, &cap) != 0) {
        printf("FAIL - no context in a slice\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "unload") == 0)
        return unload_under_churn(cap) ? 1 : 0;
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    __typeof__(&nvmlInit_v2) init = nvml ? (__typeof__(init))dlsym(nvml, "nvmlInit_v2") : NULL;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) handle =
        nvml ? (__typeof__(handle))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2") : NULL;
    void *(*real)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "carve_real_symbol");
    slice_memory = nvml ? (__typeof__(slice_memory))dlsym(nvml, "nvmlDeviceGetMemoryInfo") : NULL;
    procs = real ? (__typeof__(procs))real("nvmlDeviceGetComputeRunningProcesses_v3") : NULL;
    if (!init || !handle || !slice_memory || !procs || init() != NVML_SUCCESS ||
        handle(0, &nvml_dev) != NVML_SUCCESS) {
        printf("FAIL - NVML, or libcarve's carve_real_symbol, is not there\n");
        return 1;
    }
    pthread_t asker;
    pthread_create(&asker, NULL, ask_free, NULL);
    if (argc > 1 && (strcmp(argv[1], "pools") == 0 || strcmp(argv[1], "unmap") == 0)) {
        pthread_t pooler;
        pthread_create(&pooler, NULL, strcmp(argv[1], "pools") == 0 ? pool_churn : unmap_churn,
                       NULL);
        int samples = 0, below = 0;
        unsigned long long deepest = 0;
        for (time_t end = time(NULL) + seconds_of(argc, argv, 4); time(NULL) < end; samples++) {
            /* what the process counted is never below 0: a slice below its context's 500 MiB
               had that memory taken off */
            unsigned long long used = slice_used();
            if (used < 500 * MiB) {
                below++;
                deepest = 500 * MiB - used > deepest ? 500 * MiB - used : deepest;
            }
            usleep(200);
        }
        atomic_store(&done, true);
        pthread_join(pooler, NULL);
        pthread_join(asker, NULL);
        return mem_check(below == 0, "%d of %d samples found the slice below the context's "
                                     "500 MiB (by up to %llu MiB) beside %s", below, samples,
                         deepest / MiB, strcmp(argv[1], "pools") == 0
                                            ? "a pool that grew and shrank"
                                            : "a handle released while mapped, then unmapped");
    }
    int rounds = 0, low = 0, over = 0;
    unsigned long long worst = 0;
    time_t end = time(NULL) + seconds;
    while (time(NULL) < end) {
        CUdeviceptr p, q;
        if (a.cuMemAlloc(&p, GiB) != CUDA_SUCCESS)
            continue;
        rounds++;
        unsigned long long used = slice_used(), held = process_usage();
        if (held > used) {
            low++;
            worst = held - used > worst ? held - used : worst;
            /* what the slice says is left: taken, the process would pass the cap */
            if (a.cuMemAlloc(&q, cap - used) == CUDA_SUCCESS) {
                if (process_usage() > cap)
                    over++;
                a.cuMemFree(q);
            }
        }
        a.cuMemFree(p);
    }
    atomic_store(&done, true);
    pthread_join(asker, NULL);
    int failed = mem_check(low == 0, "%d of %d allocations found the slice below NVML's usage of "
                                     "the process (by up to %llu MiB)", low, rounds, worst / MiB);
    failed += mem_check(over == 0, "%d times an allocation took the process past the %llu MiB cap",
                        over, (unsigned long long)cap / MiB);
    failed += mem_check(rounds > 10, "%d allocations of 1 GiB in %d s", rounds, seconds);
    return failed ? 1 : 0;
}
