/* nvml_list.c - prints the pids NVML lists on GPU 0 through one process-list call, so that
 * mem_slice.sh can check each call libcarve filters:
 *   nvml_list LIST
 * LIST is v3, v2 or v1 (the compute lists), graphics-v3|v2|v1, mps-v3|v2|v1, or detail,
 * detail-graphics, detail-mps (the list of late R535 on, in each mode). NVML is opened at run
 * time, as monitoring tools do. Exit status 1 when a call fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "carve/nvml_abi.h"

#define MAX_PROCS 256

static const struct {
    const char *arg, *symbol;
    size_t stride; /* 0: the detail list */
    unsigned int mode;
} lists[] = {
    {"v3", "nvmlDeviceGetComputeRunningProcesses_v3", sizeof(nvmlProcessInfo_t), 0},
    {"v2", "nvmlDeviceGetComputeRunningProcesses_v2", sizeof(nvmlProcessInfo_t), 0},
    {"v1", "nvmlDeviceGetComputeRunningProcesses", sizeof(nvmlProcessInfo_v1_t), 0},
    {"graphics-v3", "nvmlDeviceGetGraphicsRunningProcesses_v3", sizeof(nvmlProcessInfo_t), 0},
    {"graphics-v2", "nvmlDeviceGetGraphicsRunningProcesses_v2", sizeof(nvmlProcessInfo_t), 0},
    {"graphics-v1", "nvmlDeviceGetGraphicsRunningProcesses", sizeof(nvmlProcessInfo_v1_t), 0},
    {"mps-v3", "nvmlDeviceGetMPSComputeRunningProcesses_v3", sizeof(nvmlProcessInfo_t), 0},
    {"mps-v2", "nvmlDeviceGetMPSComputeRunningProcesses_v2", sizeof(nvmlProcessInfo_t), 0},
    {"mps-v1", "nvmlDeviceGetMPSComputeRunningProcesses", sizeof(nvmlProcessInfo_v1_t), 0},
    {"detail", "nvmlDeviceGetRunningProcessDetailList", 0, NVML_PROCESS_MODE_COMPUTE},
    {"detail-graphics", "nvmlDeviceGetRunningProcessDetailList", 0, NVML_PROCESS_MODE_GRAPHICS},
    {"detail-mps", "nvmlDeviceGetRunningProcessDetailList", 0, NVML_PROCESS_MODE_MPS},
};

int main(int argc, char **argv)
{
    const char *arg = argc == 2 ? argv[1] : "";
    int which = -1;
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        if (!strcmp(arg, lists[i].arg))
            which = (int)i;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || which < 0) {
        fprintf(stderr, "usage: nvml_list v3|v2|v1|graphics-v3|graphics-v2|graphics-v1|"
                        "mps-v3|mps-v2|mps-v1|detail|detail-graphics|detail-mps "
                        "(with libnvidia-ml.so.1 loadable)\n");
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
    void *symbol = dlsym(h, lists[which].symbol);
    if (!lists[which].stride) {
        __typeof__(&nvmlDeviceGetRunningProcessDetailList) list = (__typeof__(list))symbol;
        nvmlProcessDetail_v1_t procs[MAX_PROCS];
        nvmlProcessDetailList_t l = {nvmlProcessDetailList_v1, lists[which].mode, MAX_PROCS,
                                     procs};
        r = list ? list(dev, &l) : NVML_ERROR_FUNCTION_NOT_FOUND;
        for (n = 0; r == NVML_SUCCESS && n < l.numProcArrayEntries; n++)
            pids[n] = procs[n].pid;
    } else {
        __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) list = (__typeof__(list))symbol;
        /* entries of the list's own size: 24 bytes (what the simulated NVML writes for _v3
         * too) or 16 for the unversioned lists; the pid leads each */
        nvmlProcessInfo_t procs[MAX_PROCS];
        n = MAX_PROCS;
        r = list ? list(dev, &n, procs) : NVML_ERROR_FUNCTION_NOT_FOUND;
        for (unsigned int i = 0; r == NVML_SUCCESS && i < n; i++)
            memcpy(&pids[i], (unsigned char *)procs + i * lists[which].stride, sizeof(pids[i]));
    }
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "nvml_list: %s (%s) failed: NVML error %d\n", arg, lists[which].symbol,
                (int)r);
        return 1;
    }
    for (unsigned int i = 0; i < n; i++)
        printf("%u\n", pids[i]);
    return 0;
}
