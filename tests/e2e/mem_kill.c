/* mem_kill.c - a SIGKILLed tenant's memory comes back: a child allocates 3 GiB of a 4 GiB
 * cap and is killed; the next 3 GiB allocation (in the parent) must succeed, the dead
 * process's slot being reaped by the slice table before the denial is final. Then the
 * parent allocates 3 GiB and execs itself: the new image (same pid, same start time) must
 * get 3 GiB too, the driver having freed what the old one held. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem_common.h"

static int open_ctx(const struct mem_api *a)
{
    CUdevice dev;
    CUcontext ctx;
    return a->cuInit(0) == CUDA_SUCCESS && a->cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
           a->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
           a->cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
    struct mem_api a;
    int fds[2], failed = 0;
    if (mem_api_dlsym(&a) != 0)
        return 1;
    if (argc > 1 && strcmp(argv[1], "--after-exec") == 0) {
        CUdeviceptr p;
        CUresult r = open_ctx(&a) ? a.cuMemAlloc(&p, 3 * GiB) : CUDA_ERROR_NOT_INITIALIZED;
        failed += mem_check(r == CUDA_SUCCESS, "3 GiB after an exec: %d == SUCCESS", r);
        printf("mem_kill: %d failed after the exec\n", failed);
        return failed ? 1 : 0;
    }
    if (pipe(fds) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        CUdeviceptr p;
        char ok = open_ctx(&a) && a.cuMemAlloc(&p, 3 * GiB) == CUDA_SUCCESS ? 'y' : 'n';
        (void)!write(fds[1], &ok, 1);
        for (;;)
            pause();
    }
    char got = 'n';
    (void)!read(fds[0], &got, 1);
    failed += mem_check(got == 'y', "child %d allocated 3 GiB", (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    failed += mem_check(open_ctx(&a), "parent context");
    CUdeviceptr p;
    CUresult r = a.cuMemAlloc(&p, 3 * GiB);
    failed += mem_check(r == CUDA_SUCCESS, "3 GiB after the SIGKILL: %d == SUCCESS", r);
    if (r == CUDA_SUCCESS)
        a.cuMemFree(p);
    r = a.cuMemAlloc(&p, 3 * GiB);
    failed += mem_check(r == CUDA_SUCCESS, "3 GiB before an exec: %d == SUCCESS", r);
    printf("mem_kill: %d failed\n", failed);
    if (failed)
        return 1;
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "--after-exec", (char *)NULL);
    return 1;
}
