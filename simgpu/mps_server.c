/* mps_server.c - a stand-in for nvidia-cuda-mps-server on the simulated GPU: the process an
 * MPS control daemon starts to run its clients' work. Like the real one it holds a context on
 * each GPU it may use (CUDA_VISIBLE_DEVICES, as the daemon saw it), so NVML lists it among the
 * compute processes, in no slice, beside its clients; carved must tell it from an escape. It
 * lives until its daemon ends it (SIGTERM) or dies. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "carve/cuda_abi.h"

int main(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 0; /* the daemon is already gone */
    unsetenv("CUDA_MPS_PIPE_DIRECTORY"); /* the server is no client of its own daemon */
    setenv("CARVE_SIM_CTX_MEMORY", "32MiB", 1); /* about what a real server holds */
    int n = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS) {
        fprintf(stderr, "nvidia-cuda-mps-server (simulated): no GPU\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        CUdevice dev;
        CUcontext ctx;
        if (cuDeviceGet(&dev, i) == CUDA_SUCCESS)
            cuDevicePrimaryCtxRetain(&ctx, dev);
    }
    int sig;
    sigwait(&set, &sig);
    return 0;
}
