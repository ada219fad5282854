/* mem_stress.c - 64 tenant processes x 4 threads allocate and free at once under one slice
 * while the parent samples the slice table and asserts that its usage never passes the
 * cap. Half the tenants are fork children (libcarve's fork path: a new slot claimed
 * lazily), half are fork+exec grandchildren-style fresh processes (LD_PRELOAD inherited).
 * Run with CARVE_SIM_CTX_MEMORY=0 so that contexts (charged, never refused) stay out. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem_common.h"
#include "slice.h"

#define PROCS 64
#define THREADS 4
#define ITERS 40

static struct mem_api api;
static CUcontext ctx;

static void *worker_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg ^ (unsigned)getpid();
    long bad = 0;
    api.cuCtxSetCurrent(ctx);
    for (int i = 0; i < ITERS; i++) {
        CUdeviceptr p;
        size_t n = (size_t)(32 + rand_r(&seed) % 160) * MiB;
        CUresult r = api.cuMemAlloc(&p, n);
        if (r == CUDA_SUCCESS) {
            usleep(rand_r(&seed) % 2000);
            if (api.cuMemFree(p) != CUDA_SUCCESS)
                bad++;
        } else if (r != CUDA_ERROR_OUT_OF_MEMORY) {
            bad++;
        }
    }
    return (void *)bad;
}

static int worker(void)
{
    CUdevice dev;
    if (mem_api_dlsym(&api) != 0 || api.cuInit(0) != CUDA_SUCCESS ||
        api.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        api.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
        return 2;
    pthread_t t[THREADS];
    long bad = 0;
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker_thread, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *b;
        pthread_join(t[i], &b);
        bad += (long)b;
    }
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "worker") == 0)
        return worker();
    int failed = 0;
    struct carve_slice *s = NULL;
    const char *name = getenv("CARVE_SLICE");
    if (!name || carve_slice_open(name, &s, NULL, 0) < 0)
        return mem_check(0, "open the slice named by CARVE_SLICE");
    uint64_t cap = carve_slice_cap(s, 0);
    /* make this process a tenant too, so that fork children take libcarve's fork path */
    struct mem_api a;
    size_t f, t;
    if (mem_api_dlsym(&a) == 0)
        a.cuMemGetInfo(&f, &t);

    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            if (i % 2)
                execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
            _exit(worker());
        }
    }
    long samples = 0;
    uint64_t peak = 0;
    int running = PROCS, bad_exit = 0;
    while (running > 0) {
        uint64_t u = carve_slice_used(s, 0);
        samples++;
        if (u > peak)
            peak = u;
        int st;
        pid_t done = waitpid(-1, &st, WNOHANG);
        if (done > 0) {
            running--;
            bad_exit += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        } else {
            usleep(200);
        }
    }
    failed += mem_check(peak <= cap, "%ld samples of the slice's usage: peak %llu <= cap %llu",
                        samples, (unsigned long long)peak, (unsigned long long)cap);
    failed += mem_check(bad_exit == 0, "%d tenants x %d threads finished cleanly (%d did not)",
                        PROCS, THREADS, bad_exit);
    uint64_t left = carve_slice_used(s, 0);
    failed += mem_check(left == 0, "usage back to 0 after the tenants exited: %llu",
                        (unsigned long long)left);
    printf("mem_stress: %d failed\n", failed);
    return failed ? 1 : 0;
}
