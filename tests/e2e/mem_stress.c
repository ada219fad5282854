/* mem_stress.c - 64 tenant processes x 4 threads allocate and free at once under one slice
 * while the parent samples the slice table and asserts that its usage never passes the
 * cap. Half the tenants are fork children (libcarve's fork path: a new slot claimed
 * lazily), half are fork+exec grandchildren-style fresh processes (LD_PRELOAD inherited).
 * Run with CARVE_SIM_CTX_MEMORY=0 so that contexts (charged, never refused) stay out. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem_common.h"
#include "slice.h"
#include "snapshot.h"

#define SNAPSHOTS 40
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
    /* sums taken while every tenant is stopped: a running sum is no snapshot */
    bool alive[PROCS];
    for (int i = 0; i < PROCS; i++)
        alive[i] = true;
    struct tenants ts = {.pid = pids, .alive = alive, .n = PROCS};
    uint64_t peak = 0;
    int snapshots;
    for (snapshots = 0; snapshots < SNAPSHOTS && ts.done < PROCS; snapshots++) {
        uint64_t u = snapshot_used(s, 0, &ts);
        peak = u > peak ? u : peak;
        usleep(5000);
    }
    tenants_wait(&ts);
    int bad_exit = ts.bad_exit;
    failed += mem_check(peak <= cap, "%d snapshots of the stopped tenants: peak %llu <= cap %llu",
                        snapshots, (unsigned long long)peak, (unsigned long long)cap);
    failed += mem_check(peak > cap / 2, "the cap was contended: peak %llu > half the cap",
                        (unsigned long long)peak);
    failed += mem_check(bad_exit == 0, "%d tenants x %d threads finished cleanly (%d did not)",
                        PROCS, THREADS, bad_exit);
    uint64_t left = carve_slice_used(s, 0);
    for (int i = 0; left && i < CARVE_SLICE_MAX_PROCS; i++)
        if (carve_slice_slot_used(s, i, 0))
            printf("# slot %d (pid %d) still counts %llu\n", i, carve_slice_slot_pid(s, i),
                   (unsigned long long)carve_slice_slot_used(s, i, 0));
    failed += mem_check(left == 0, "usage back to 0 after the tenants exited: %llu",
                        (unsigned long long)left);
    printf("mem_stress: %d failed\n", failed);
    return failed ? 1 : 0;
}
