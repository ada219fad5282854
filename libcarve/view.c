/* view.c - the slice's view of memory: what cuMemGetInfo_v2, cuDeviceTotalMem_v2 and NVML
 * tell a tenant about a capped device (total = the cap, used = the slice's usage), and NVML's
 * process lists trimmed to the slice's processes. Uncapped devices pass through. */
#include "libcarve.h"
#include "nvml_procs.h"
#include "uuid.h"

#include <stdlib.h>
#include <string.h>

static uint64_t clamp_free(int sdev, uint64_t *cap)
{
    *cap = carve__cap(sdev);
    uint64_t used = carve__slice_used(sdev);
    return used >= *cap ? 0 : *cap - used;
}

CARVE_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    struct carve_dev d;
    carve__init();
    if (!R.cuMemGetInfo_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    size_t real_free = 0, real_total = 0;
    /* pools the driver trimmed at a sync give their memory back before we report, and
     * memory the driver took for kernels loaded since is counted (a framework that sizes
     * its caches from this answer, as vLLM does, must not size them past the cap) */
    carve__pools_refresh();
    carve__overhead_refresh();
    CUresult r = R.cuMemGetInfo_v2(&real_free, &real_total);
    if (r != CUDA_SUCCESS || !carve__dev_current(&d)) {
        if (free)
            *free = real_free;
        if (total)
            *total = real_total;
        return r;
    }
    uint64_t cap, f = clamp_free(d.sdev, &cap);
    if (free)
        *free = f < real_free ? f : real_free;
    if (total)
        *total = cap;
    return r;
}

CARVE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    struct carve_dev d;
    carve__init();
    if (!R.cuDeviceTotalMem_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuDeviceTotalMem_v2(bytes, dev);
    if (r == CUDA_SUCCESS && bytes && carve__dev_of(dev, &d))
        *bytes = carve__cap(d.sdev);
    return r;
}

/* The slice device of an NVML handle (matched by UUID), or -1. */
int carve__sdev_of_nvml(nvmlDevice_t dev)
{
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned char uuid[16];
    if (!carve__active() || !R.nvmlDeviceGetUUID ||
        R.nvmlDeviceGetUUID(dev, text, sizeof(text)) != NVML_SUCCESS ||
        carve_uuid_parse(text, uuid) != 0)
        return -1;
    return carve__sdev_of_uuid(uuid);
}

static void fill_memory(int sdev, unsigned long long *total, unsigned long long *used,
                        unsigned long long *free)
{
    uint64_t cap, f = clamp_free(sdev, &cap);
    *total = cap;
    *free = f;
    *used = cap - f;
}

CARVE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    carve__init();
    if (!R.nvmlDeviceGetMemoryInfo)
        return NVML_ERROR_UNINITIALIZED;
    carve__overhead_refresh(); /* as cuMemGetInfo: memory taken or given back since */
    nvmlReturn_t r = R.nvmlDeviceGetMemoryInfo(device, memory);
    int sdev = r == NVML_SUCCESS && memory ? carve__sdev_of_nvml(device) : -1;
    if (sdev >= 0)
        fill_memory(sdev, &memory->total, &memory->used, &memory->free);
    return r;
}

CARVE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                     nvmlMemory_v2_t *memory)
{
    carve__init();
    if (!R.nvmlDeviceGetMemoryInfo_v2)
        return NVML_ERROR_UNINITIALIZED;
    carve__overhead_refresh();
    nvmlReturn_t r = R.nvmlDeviceGetMemoryInfo_v2(device, memory);
    int sdev = r == NVML_SUCCESS && memory ? carve__sdev_of_nvml(device) : -1;
    if (sdev >= 0) {
        fill_memory(sdev, &memory->total, &memory->used, &memory->free);
        memory->reserved = 0;
    }
    return r;
}

size_t carve__nvml_v3_stride(void)
{
    return carve_nvml_v3_stride(R.nvmlDeviceGetConfComputeMemSizeInfo != NULL,
                                R.nvmlDeviceGetRunningProcessDetailList != NULL);
}

/* Where a process list comes from: a call with a count (_v3, _v2), or the detail list of
 * late R535 on, which carries its count and array in a struct of the caller's. */
typedef __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) proc_list_call;
struct proc_source {
    proc_list_call by_count;
    nvmlProcessDetailList_t detail;
};

static nvmlReturn_t fetch_procs(nvmlDevice_t device, struct proc_source *src, unsigned int *n,
                                void *buf)
{
    if (src->by_count)
        return src->by_count(device, n, buf);
    src->detail.procArray = buf;
    src->detail.numProcArrayEntries = *n;
    nvmlReturn_t r = R.nvmlDeviceGetRunningProcessDetailList(device, &src->detail);
    *n = src->detail.numProcArrayEntries;
    return r;
}

/* The real list, then only the slice's pids, with NVML's size protocol (*count in: room in
 * out; out: the number kept); entries of stride bytes, as the driver writes them and its
 * callers read them, the pid first in every layout (nvml_procs.h). */
static nvmlReturn_t slice_processes(nvmlDevice_t device, struct proc_source *src, size_t stride,
                                    unsigned int *count, void *out)
{
    unsigned int n = 0;
    unsigned char *all = NULL;
    nvmlReturn_t r = NVML_ERROR_UNKNOWN;
    for (int tries = 0; tries < 4; tries++) { /* the list may grow between the two calls */
        n += 16;
        unsigned char *grown = realloc(all, n * stride);
        if (!grown) {
            free(all);
            return NVML_ERROR_UNKNOWN;
        }
        all = grown;
        r = fetch_procs(device, src, &n, all);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            break;
    }
    if (r != NVML_SUCCESS) {
        free(all);
        return r;
    }
    unsigned int pids[1024];
    int np = carve__pids(pids, 1024);
    unsigned int kept = carve_nvml_keep_procs(all, stride, n, pids, np);
    if (*count < kept || (!out && kept)) {
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (kept) {
        memcpy(out, all, kept * stride);
    }
    *count = kept;
    free(all);
    return r;
}

static nvmlReturn_t slice_processes_by_count(nvmlDevice_t device, unsigned int *count,
                                             void *infos, size_t stride, proc_list_call real)
{
    if (!real)
        return NVML_ERROR_UNINITIALIZED;
    if (!count || carve__sdev_of_nvml(device) < 0)
        return real(device, count, infos);
    struct proc_source src = {.by_count = real};
    return slice_processes(device, &src, stride, count, infos);
}

/* Every process list of the count protocol, compute, graphics and MPS alike: a tool in the
 * slice that reads any of them sees only the slice's processes. Entries are _v3's stride
 * (24 or 32 bytes, nvml_procs.h), _v2's 24 bytes, or the unversioned 16 of old binaries. */
#define SLICE_PROCESS_LIST(name, stride)                                                  \
    CARVE_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount,           \
                                   nvmlProcessInfo_t *infos)                              \
    {                                                                                     \
        carve__init();                                                                    \
        return slice_processes_by_count(device, infoCount, infos, (stride), R.name);     \
    }
SLICE_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses_v3, carve__nvml_v3_stride())
SLICE_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses_v2, sizeof(nvmlProcessInfo_t))
SLICE_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses, sizeof(nvmlProcessInfo_v1_t))
SLICE_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v3, carve__nvml_v3_stride())
SLICE_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v2, sizeof(nvmlProcessInfo_t))
SLICE_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses, sizeof(nvmlProcessInfo_v1_t))
SLICE_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, carve__nvml_v3_stride())
SLICE_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, sizeof(nvmlProcessInfo_t))
SLICE_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses, sizeof(nvmlProcessInfo_v1_t))

/* The list of late R535 on, which a newer nvidia-smi or monitor may read instead: the same
 * filter. */
CARVE_EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                                nvmlProcessDetailList_t *plist)
{
    carve__init();
    if (!R.nvmlDeviceGetRunningProcessDetailList)
        return NVML_ERROR_UNINITIALIZED;
    if (!plist || plist->version != nvmlProcessDetailList_v1 ||
        carve__sdev_of_nvml(device) < 0)
        return R.nvmlDeviceGetRunningProcessDetailList(device, plist);
    struct proc_source src = {.detail = *plist};
    unsigned int count = plist->procArray ? plist->numProcArrayEntries : 0;
    nvmlReturn_t r = slice_processes(device, &src, sizeof(nvmlProcessDetail_v1_t), &count,
                                     plist->procArray);
    plist->numProcArrayEntries = count;
    return r;
}
