/* nvml_procs.c - a running-process list of either layout (nvml_procs.h). */
#include "nvml_procs.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

size_t carve_nvml_v3_stride(bool has_conf_compute_mem_size_info, bool has_detail_list)
{
    return has_conf_compute_mem_size_info && !has_detail_list ? 32 : sizeof(nvmlProcessInfo_t);
}

size_t carve_nvml_lib_v3_stride(void *nvml_lib)
{
    return carve_nvml_v3_stride(dlsym(nvml_lib, "nvmlDeviceGetConfComputeMemSizeInfo") != NULL,
                                dlsym(nvml_lib, "nvmlDeviceGetRunningProcessDetailList") != NULL);
}

nvmlProcessInfo_t carve_nvml_proc_at(const void *list, size_t stride, unsigned int i)
{
    nvmlProcessInfo_t p; /* the first 24 bytes are the same fields in both layouts */
    memcpy(&p, (const unsigned char *)list + (size_t)i * stride, sizeof(p));
    return p;
}

unsigned int carve_nvml_keep_procs(void *list, size_t stride, unsigned int n,
                                   const unsigned int *pids, int npids)
{
    unsigned char *bytes = list;
    unsigned int kept = 0;
    for (unsigned int i = 0; i < n; i++) {
        unsigned int pid; /* the pid leads every layout, the 16-byte entries of v1 too */
        memcpy(&pid, bytes + (size_t)i * stride, sizeof(pid));
        for (int j = 0; j < npids; j++)
            if (pid == pids[j]) {
                if (kept != i)
                    memmove(bytes + (size_t)kept * stride, bytes + (size_t)i * stride, stride);
                kept++;
                break;
            }
    }
    return kept;
}
