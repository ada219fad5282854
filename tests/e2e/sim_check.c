/* sim_check.c - a driver-API program that checks the simulated GPU behaves as a GPU does:
 * devices and their attributes, contexts taking memory, pools reserving and trimming, kernels
 * taking time on a timeline that two processes share, events, stream capture into graphs, and
 * cuGetProcAddress's versioning. Linked against the simulated libcuda and libnvidia-ml.
 * SIM_CHECK_REORDER=1: the run has CARVE_SIM_DEVICES=2 and CUDA_VISIBLE_DEVICES=1,0. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "carve/cuda_abi.h"
#include "carve/nvml_abi.h"

#define MiB (1024ULL * 1024ULL)
#define POOL_CHUNK (32 * MiB)

static int passed, failed;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    ok ? passed++ : failed++;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned long long env_bytes(const char *name, unsigned long long dflt)
{
    const char *v = getenv(name);
    return v ? strtoull(v, NULL, 0) : dflt;
}

static nvmlDevice_t nvml_dev(unsigned idx)
{
    nvmlDevice_t d = NULL;
    nvmlDeviceGetHandleByIndex_v2(idx, &d);
    return d;
}

static unsigned long long nvml_used_by(nvmlDevice_t d, unsigned pid)
{
    nvmlProcessInfo_t p[64];
    unsigned n = 64;
    if (nvmlDeviceGetComputeRunningProcesses_v3(d, &n, p) != NVML_SUCCESS)
        return ~0ULL;
    for (unsigned i = 0; i < n; i++)
        if (p[i].pid == pid)
            return p[i].usedGpuMemory;
    return 0;
}

static void check_devices(void)
{
    int n = -1, v = 0, sms = 0;
    CUdevice d;
    size_t total = 0;
    char name[128] = "";
    check(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED, "calls before cuInit refused");
    check(cuInit(0) == CUDA_SUCCESS, "cuInit");
    cuDriverGetVersion(&v);
    check(v == 13000, "driver version %d == 13000", v);
    cuDeviceGetCount(&n);
    check(n == atoi(getenv("SIM_CHECK_DEVICES")), "device count %d", n);
    cuDeviceGet(&d, 0);
    cuDeviceGetName(name, sizeof(name), d);
    check(strstr(name, "simulated") != NULL, "name '%s'", name);
    cuDeviceTotalMem_v2(&total, d);
    check(total == env_bytes("SIM_CHECK_TOTAL", 0), "total memory %zu", total);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    check(sms == atoi(getenv("SIM_CHECK_SMS")), "SM count %d", sms);
    check(cuDeviceGet(&d, n) == CUDA_ERROR_INVALID_DEVICE, "ordinal %d is invalid", n);

    /* ordinal 0's UUID is NVML index 0's, or index 1's when CUDA_VISIBLE_DEVICES=1,0 */
    CUuuid u;
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned phys = getenv("SIM_CHECK_REORDER") ? 1 : 0;
    cuDeviceGetUuid_v2(&u, 0);
    nvmlDeviceGetUUID(nvml_dev(phys), text, sizeof(text));
    char mine[48];
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(mine, sizeof(mine),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    check(strcmp(mine, text) == 0, "CUDA ordinal 0 is NVML GPU %u (%s)", phys, mine);
}

static void check_context(CUcontext *ctx)
{
    nvmlDevice_t d = nvml_dev(getenv("SIM_CHECK_REORDER") ? 1 : 0);
    unsigned long long ctx_mem = env_bytes("SIM_CHECK_CTX", 0);
    CUdeviceptr p;
    check(cuMemAlloc_v2(&p, MiB) == CUDA_ERROR_INVALID_CONTEXT, "no context: refused");
    check(cuDevicePrimaryCtxRetain(ctx, 0) == CUDA_SUCCESS, "primary context");
    cuCtxSetCurrent(*ctx);
    check(nvml_used_by(d, (unsigned)getpid()) == ctx_mem, "NVML: our context takes %llu",
          ctx_mem);
    size_t f, t;
    cuMemGetInfo_v2(&f, &t);
    check(t - f >= ctx_mem, "cuMemGetInfo: %zu in use >= the context", t - f);
    CUcontext extra, popped;
    check(cuCtxCreate_v2(&extra, 0, 0) == CUDA_SUCCESS, "created context");
    check(nvml_used_by(d, (unsigned)getpid()) == 2 * ctx_mem, "two contexts' memory");
    cuCtxPopCurrent_v2(&popped);
    check(popped == extra, "pop returns the created context");
    cuCtxDestroy_v2(extra);
    check(nvml_used_by(d, (unsigned)getpid()) == ctx_mem, "destroy gives it back");
}

static void check_memory(void)
{
    CUdeviceptr p;
    char in[64] = "carve simulated memory", out[64] = "";
    check(cuMemAlloc_v2(&p, 4 * MiB) == CUDA_SUCCESS, "cuMemAlloc_v2");
    cuMemcpyHtoD_v2(p, in, sizeof(in));
    cuMemcpyDtoH_v2(out, p, sizeof(out));
    check(strcmp(in, out) == 0, "host -> device -> host round trip");
    CUdeviceptr base;
    size_t size;
    cuMemGetAddressRange_v2(&base, &size, p + 100);
    check(base == p && size == 4 * MiB, "cuMemGetAddressRange_v2");
    cuMemFree_v2(p);
    size_t pitch;
    check(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4) == CUDA_SUCCESS && pitch % 512 == 0 &&
              pitch >= 1000, "pitch %zu", pitch);
    cuMemFree_v2(p);
    size_t total, f;
    cuMemGetInfo_v2(&f, &total);
    check(cuMemAlloc_v2(&p, total + 1) == CUDA_ERROR_OUT_OF_MEMORY, "more than the device");

    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemGenericAllocationHandle h;
    check(cuMemCreate(&h, 3 * MiB, &prop, 0) == CUDA_ERROR_INVALID_VALUE,
          "cuMemCreate of a size off the granularity refused");
    size_t before, after;
    cuMemGetInfo_v2(&before, &total);
    check(cuMemCreate(&h, 4 * MiB, &prop, 0) == CUDA_SUCCESS, "cuMemCreate 4 MiB");
    cuMemGetInfo_v2(&after, &total);
    check(before - after == 4 * MiB, "cuMemCreate takes 4 MiB");
    CUdeviceptr va;
    cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0);
    check(cuMemMap(va, 4 * MiB, 0, h, 0) == CUDA_SUCCESS, "cuMemMap");
    *(volatile int *)(uintptr_t)va = 42;
    check(*(volatile int *)(uintptr_t)va == 42, "mapped memory is usable");
    cuMemUnmap(va, 4 * MiB);
    cuMemAddressFree(va, 4 * MiB);
    cuMemRelease(h);
    cuMemGetInfo_v2(&after, &total);
    check(after == before, "cuMemRelease gives it back");
}

static unsigned long long pool_reserved(CUmemoryPool pool)
{
    cuuint64_t v = 0;
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
    return v;
}

static void check_pools(CUstream s)
{
    CUmemoryPool pool;
    CUdeviceptr p;
    cuDeviceGetDefaultMemPool(&pool, 0);
    cuMemAllocAsync(&p, MiB, s);
    check(pool_reserved(pool) == POOL_CHUNK, "1 MiB from the pool reserves %llu",
          pool_reserved(pool));
    cuMemFreeAsync(p, s);
    check(pool_reserved(pool) == POOL_CHUNK, "a free keeps the reservation");
    cuStreamSynchronize(s);
    check(pool_reserved(pool) == 0, "a sync with threshold 0 releases it");
    cuuint64_t threshold = 64 * MiB;
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    cuMemAllocAsync(&p, MiB, s);
    cuMemFreeAsync(p, s);
    cuStreamSynchronize(s);
    check(pool_reserved(pool) == POOL_CHUNK, "under the threshold the sync keeps it");
    cuMemPoolTrimTo(pool, 0);
    check(pool_reserved(pool) == 0, "cuMemPoolTrimTo(0) releases it");
}

/* count kernels of ns launched on s between two events, *start and *end, which
 * finish_timed waits for, times and destroys. */
static void launch_timed(CUstream s, CUfunction f, unsigned long long ns, int count,
                         CUevent *start, CUevent *end)
{
    void *args[] = {&ns};
    cuEventCreate(start, 0);
    cuEventCreate(end, 0);
    cuEventRecord(*start, s);
    for (int i = 0; i < count; i++)
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    cuEventRecord(*end, s);
}

static float finish_timed(CUevent start, CUevent end)
{
    float ms = -1;
    cuEventSynchronize(end);
    cuEventElapsedTime_v2(&ms, start, end);
    cuEventDestroy_v2(start);
    cuEventDestroy_v2(end);
    return ms;
}

static double timed_sleep(CUstream s, CUfunction f, unsigned long long ns, int count)
{
    CUevent a, b;
    launch_timed(s, f, ns, count, &a, &b);
    return finish_timed(a, b);
}

static void check_kernels(CUstream s, CUfunction f)
{
    CUmodule bad;
    check(cuModuleLoadData(&bad, "not an image") == CUDA_ERROR_INVALID_IMAGE, "bad image");
    unsigned long long ns = 20000000ULL;
    void *args[] = {&ns};
    double t0 = now_ms();
    cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
    check(cuStreamQuery(s) == CUDA_ERROR_NOT_READY, "a launch returns before its kernel ends");
    cuStreamSynchronize(s);
    check(now_ms() - t0 >= 19.5, "sync waits for the 20 ms kernel (%.1f ms)", now_ms() - t0);
    check(cuStreamQuery(s) == CUDA_SUCCESS, "stream idle after the sync");
    double ms = timed_sleep(s, f, 20000000ULL, 1);
    check(ms >= 19.5 && ms < 2000, "events around a 20 ms kernel: %.2f ms", ms);
    ms = timed_sleep(s, f, 5000000ULL, 5);
    check(ms >= 24.5 && ms < 2000, "five 5 ms kernels: %.2f ms", ms);
}

static void check_graphs(CUstream s, CUfunction f)
{
    unsigned long long ns = 5000000ULL;
    void *args[] = {&ns};
    CUgraph g;
    CUgraphExec e;
    CUstreamCaptureStatus st;
    cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    cuStreamIsCapturing(s, &st);
    check(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "stream is capturing");
    for (int i = 0; i < 3; i++)
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    cuStreamEndCapture(s, &g);
    check(cuStreamQuery(s) == CUDA_SUCCESS, "captured launches are recorded, not run");
    check(cuGraphInstantiateWithFlags(&e, g, 0) == CUDA_SUCCESS, "instantiate");
    CUevent a, b;
    float ms = 0;
    cuEventCreate(&a, 0);
    cuEventCreate(&b, 0);
    cuEventRecord(a, s);
    cuGraphLaunch(e, s);
    cuGraphLaunch(e, s);
    cuEventRecord(b, s);
    cuEventSynchronize(b);
    cuEventElapsedTime_v2(&ms, a, b);
    check(ms >= 29.5 && ms < 2000, "two replays of 3 x 5 ms: %.2f ms", ms);
    cuEventDestroy_v2(a);
    cuEventDestroy_v2(b);
    cuGraphExecDestroy(e);
    cuGraphDestroy(g);
}

static void check_proc_address(void)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = -1;
    cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, &st);
    check(p == (void *)&cuMemAlloc_v2 && st == CU_GET_PROC_ADDRESS_SUCCESS,
          "cuMemAlloc at 12000 -> cuMemAlloc_v2");
    cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, NULL);
    check(p == (void *)&cuGetProcAddress, "cuGetProcAddress at 11030 -> v1");
    cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, NULL);
    check(p == (void *)&cuGetProcAddress_v2, "cuGetProcAddress at 12000 -> _v2");
    cuGetProcAddress_v2("cuLaunchKernel", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                        NULL);
    check(p == (void *)&cuLaunchKernel_ptsz, "per-thread stream -> cuLaunchKernel_ptsz");
    cuGetProcAddress_v2("cuCtxCreate", &p, 11000, 0, NULL);
    check(p == (void *)&cuCtxCreate_v2, "cuCtxCreate at 11000 -> _v2");
    cuGetProcAddress_v2("cuCtxCreate", &p, 12000, 0, NULL);
    check(p == (void *)&cuCtxCreate_v3, "cuCtxCreate at 12000 -> _v3 (execution affinity)");
    cuGetProcAddress_v2("cuCtxCreate", &p, 12050, 0, NULL);
    check(p == (void *)&cuCtxCreate_v4, "cuCtxCreate at 12050 -> _v4");
    check(cuGetProcAddress_v2("cuNoSuchThing", &p, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "unknown symbol");
    cuGetProcAddress_v2("cuMemAllocAsync", &p, 11000, 0, &st);
    check(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "cuMemAllocAsync at 11000: too old");
}

/* Two processes each run 10 x 10 ms: one device runs them one after the other. */
static void check_shared_timeline(CUfunction f)
{
    double t0 = now_ms();
    pid_t kid = fork();
    if (kid == 0) {
        CUcontext c;
        cuDevicePrimaryCtxRetain(&c, 0);
        cuCtxSetCurrent(c);
        timed_sleep(NULL, f, 10000000ULL, 10);
        _exit(0);
    }
    timed_sleep(NULL, f, 10000000ULL, 10);
    waitpid(kid, NULL, 0);
    double wall = now_ms() - t0;
    check(wall >= 195, "two processes x 100 ms of kernels take %.0f ms (serialised)", wall);
    nvmlUtilization_t u = {0};
    nvmlDeviceGetUtilizationRates(nvml_dev(getenv("SIM_CHECK_REORDER") ? 1 : 0), &u);
    /* the device was busy for the 200 ms that just ended: NVML samples the last 1/6 s */
    check(u.gpu >= 30 && u.gpu <= 100, "NVML utilisation just after: %u%% >= 30%%", u.gpu);
}

/* With CARVE_SIM_TIMESLICE_US=1000: a 40 ms kernel of one process and a 10 ms kernel of
 * another launched just after it take turns in 1 ms slices, as a GPU time-slices contexts:
 * the 10 ms kernel ends after about 20 ms (queued, it would wait for the other: 50 ms), and
 * the 40 ms one after about 50, stretched by it. A start event on an idle stream takes the
 * time it is recorded, so a launch slowed by a loaded machine adds its own time to what the
 * events say: each upper bound allows for the time the launch took (a CI run with four
 * suites at once failed the 40 ms kernel's bound). */
static void check_time_slices(CUfunction f, CUfunction empty)
{
    int go[2], back[2];
    if (pipe(go) != 0)
        return;
    if (pipe(back) != 0) {
        close(go[0]);
        close(go[1]);
        return;
    }
    pid_t kid = fork();
    if (kid == 0) {
        close(go[0]);
        close(back[0]);
        CUcontext c;
        CUevent a, b;
        cuDevicePrimaryCtxRetain(&c, 0);
        cuCtxSetCurrent(c);
        /* this process's first launch joins the timeline: not inside the timed launch */
        cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        cuCtxSynchronize();
        double t0 = now_ms();
        launch_timed(NULL, f, 40000000ULL, 1, &a, &b);
        double took[2] = {0, now_ms() - t0};
        (void)!write(go[1], "x", 1);
        took[0] = finish_timed(a, b);
        (void)!write(back[1], took, sizeof(took));
        _exit(0);
    }
    /* the write ends are the child's alone: a child that died unheard ends the reads */
    close(go[1]);
    close(back[1]);
    char x;
    (void)!read(go[0], &x, 1);
    /* an empty kernel behind the other's turn: it waits for this process's turn (predicting
     * its end once went round the other process's work for ever, under the timeline's lock) */
    double t0 = now_ms();
    cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    CUevent a, b;
    cuEventCreate(&a, 0);
    cuEventRecord(a, NULL);
    cuEventSynchronize(a);
    cuEventDestroy_v2(a);
    double waited = now_ms() - t0;
    check(waited < 20, "time-sliced: an empty kernel waits for its turn, %.2f ms (a slice is 1; "
          "queued behind the other process's kernel it would wait about 40)",
          waited);
    t0 = now_ms();
    launch_timed(NULL, f, 10000000ULL, 1, &a, &b);
    double launch_ms = now_ms() - t0;
    float ms = finish_timed(a, b);
    check(ms >= 18 && ms <= 23 + launch_ms, "time-sliced: a 10 ms kernel beside another "
          "process's 40 ms one took %.2f ms (about 20; its launch took %.2f ms)", ms, launch_ms);
    double other[2] = {-1, 0};
    if (read(back[0], other, sizeof(other)) != (ssize_t)sizeof(other))
        other[0] = -1;
    waitpid(kid, NULL, 0);
    check(other[0] >= 48 && other[0] <= 53 + other[1], "time-sliced: the other process's 40 ms "
          "kernel took %.2f ms (about 50; its launch took %.2f ms)", other[0], other[1]);
    close(go[0]);
    close(back[0]);
}

static void check_sigkill(void)
{
    nvmlDevice_t d = nvml_dev(getenv("SIM_CHECK_REORDER") ? 1 : 0);
    nvmlMemory_t before, during, after;
    nvmlDeviceGetMemoryInfo(d, &before);
    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t kid = fork();
    if (kid == 0) {
        CUcontext c;
        CUdeviceptr p;
        cuDevicePrimaryCtxRetain(&c, 0);
        cuCtxSetCurrent(c);
        cuMemAlloc_v2(&p, 1024 * MiB);
        (void)!write(fds[1], "x", 1);
        pause();
    }
    char x;
    (void)!read(fds[0], &x, 1);
    nvmlDeviceGetMemoryInfo(d, &during);
    check(during.used >= before.used + 1024 * MiB, "a tenant holds 1 GiB");
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    nvmlDeviceGetMemoryInfo(d, &after);
    check(after.used == before.used, "SIGKILLed: its memory is back (%llu == %llu)",
          after.used, before.used);
}

int main(void)
{
    CUcontext ctx;
    CUstream s;
    CUmodule m;
    CUfunction f;
    if (nvmlInit_v2() != NVML_SUCCESS) {
        printf("FAIL - nvmlInit_v2\n0 passed, 1 failed\n");
        return 1;
    }
    check_devices();
    check_context(&ctx);
    check_memory();
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    check_pools(s);
    cuModuleLoadData(&m, CARVE_SIM_KERNEL_IMAGE);
    check(cuModuleGetFunction(&f, m, "carve_sleep") == CUDA_SUCCESS, "carve_sleep");
    check_kernels(s, f);
    check_graphs(s, f);
    check_proc_address();
    check_shared_timeline(f);
    CUfunction empty;
    cuModuleGetFunction(&empty, m, "carve_empty");
    if (getenv("SIM_CHECK_TIMESLICE"))
        check_time_slices(f, empty);
    check_sigkill();
    cuModuleUnload(m);
    cuStreamDestroy_v2(s);
    cuDevicePrimaryCtxRelease_v2(0);
    nvmlShutdown();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
