/* mem_slots.c - a process the slice cannot count is not let loose: 256 children (every
 * slot of the slice) each make a driver call and wait; the next process must not get 2 GiB
 * in a 1 GiB slice: it is refused a context rather than run uncapped. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem_common.h"

#define CHILDREN 256 /* CARVE_SLICE_MAX_PROCS */

static CUresult alloc_2gib(const struct mem_api *a, CUdeviceptr *p)
{
    CUdevice dev;
    CUcontext ctx = NULL;
    CUresult r = a->cuDeviceGet(&dev, 0);
    if (r == CUDA_SUCCESS)
        r = a->cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = a->cuCtxSetCurrent(ctx);
    return r == CUDA_SUCCESS ? a->cuMemAlloc(p, 2 * GiB) : r;
}

int main(void)
{
    struct mem_api a;
    int fds[2], failed = 0;
    pid_t kids[CHILDREN];
    if (mem_api_dlsym(&a) != 0 || pipe(fds) != 0)
        return 1;
    for (int i = 0; i < CHILDREN; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            CUdevice dev;
            size_t total;
            char c = a.cuInit(0) == CUDA_SUCCESS && a.cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
                             a.cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS ? 'y' : 'n';
            (void)!write(fds[1], &c, 1);
            for (;;)
                pause();
        }
    }
    int ready = 0;
    for (int i = 0; i < CHILDREN; i++) {
        char c = 'n';
        (void)!read(fds[0], &c, 1);
        ready += c == 'y';
    }
    failed += mem_check(ready == CHILDREN, "%d children hold a slot each", ready);
    CUdeviceptr p;
    a.cuInit(0);
    CUresult r = alloc_2gib(&a, &p);
    failed += mem_check(r != CUDA_SUCCESS, "one process more: 2 GiB in a 1 GiB slice refused (%d)",
                        r);
    for (int i = 0; i < CHILDREN; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    printf("mem_slots: %d failed\n", failed);
    return failed ? 1 : 0;
}
