/* nvml_list.c - prints the pids NVML lists on GPU 0 through one process-list call, so that
 * mem_slice.sh can check each call libcarve filters:
 *   nvml_list v3|v2|detail
 * NVML is opened at run time, as monitoring tools do. Exit status 1 when a call fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "carve/nvml_abi.h"

#define MAX_PROCS 256

int main(int argc, char **argv)
{
    const char *api = argc == 2 ? argv[1] : "";
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || (strcmp(api, "v3") && strcmp(api, "v2") && strcmp(api, "detail"))) {
        fprintf(stderr, "usage: nvml_list v3|v2|detail (with libnvidia-ml.so.1 loadable)\n");
        return 2;
    }
    __typeof__(&nvmlInit_v2) init = (__typeof__(init))dlsym(h, "nvmlInit_v2");
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) handle =
        (__typeof__(handle))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    nvmlDevice_t dev;
    if (!init || !handle || init() != NVML_SUCCESS || handle(0, &dev) != NVML_SUCCESS) {
        fprintf(stderr, "nvml_list: NVML has no GPU 0\n");
        return 1;
    }
    unsigned int pids[MAX_PROCS], n = 0;
    nvmlReturn_t r;
    if (!strcmp(api, "detail")) {
        __typeof__(&nvmlDeviceGetRunningProcessDetailList) list =
            (__typeof__(list))dlsym(h, "nvmlDeviceGetRunningProcessDetailList");
        nvmlProcessDetail_v1_t procs[MAX_PROCS];
        nvmlProcessDetailList_t l = {nvmlProcessDetailList_v1, NVML_PROCESS_MODE_COMPUTE,
                                     MAX_PROCS, procs};
        r = list ? list(dev, &l) : NVML_ERROR_FUNCTION_NOT_FOUND;
        for (n = 0; r == NVML_SUCCESS && n < l.numProcArrayEntries; n++)
            pids[n] = procs[n].pid;
    } else {
        __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) list = (__typeof__(list))dlsym(
            h, !strcmp(api, "v3") ? "nvmlDeviceGetComputeRunningProcesses_v3"
                                  : "nvmlDeviceGetComputeRunningProcesses_v2");
        nvmlProcessInfo_t procs[MAX_PROCS]; /* 24 bytes each: what the simulated NVML writes */
        n = MAX_PROCS;
        r = list ? list(dev, &n, procs) : NVML_ERROR_FUNCTION_NOT_FOUND;
        for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++)
            pids[i] = procs[i].pid;
    }
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "nvml_list: %s failed: NVML error %d\n", api, (int)r);
        return 1;
    }
    for (unsigned int i = 0; i < n; i++)
        printf("%u\n", pids[i]);
    return 0;
}
