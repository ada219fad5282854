/* sim_nvml.c - the simulated GPU's NVML (libnvidia-ml.so.1): devices in physical order, memory
 * in use by every process, utilisation from the shared kernel timeline, running processes and
 * their memory, per-process utilisation, and MIG mode. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "carve/nvml_abi.h"
#include "simdev.h"

#define API __attribute__((visibility("default")))
/* the sample period of a data-center GPU (H100: 1/6 s), not a whole second */
#define UTIL_WINDOW_NS (1000000000ULL / 6)

struct nvmlDevice_st {
    int index;
};

static struct nvmlDevice_st devices[SIM_MAX_DEVICES];
static _Atomic int init_count;

API nvmlReturn_t nvmlInit_v2(void)
{
    if (!sim_shared())
        return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < SIM_MAX_DEVICES; i++)
        devices[i].index = i;
    atomic_fetch_add(&init_count, 1);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    return nvmlInit_v2();
}

API nvmlReturn_t nvmlShutdown(void)
{
    int n = atomic_load(&init_count);
    while (n > 0 && !atomic_compare_exchange_weak(&init_count, &n, n - 1))
        ;
    return n > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

API const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

#define NEED_INIT()                                  \
    do {                                             \
        if (atomic_load(&init_count) <= 0)           \
            return NVML_ERROR_UNINITIALIZED;         \
    } while (0)

static bool valid(nvmlDevice_t d)
{
    return d && d >= devices && d < devices + sim_config()->ndev;
}

#define NEED_DEV(d)                                  \
    do {                                             \
        NEED_INIT();                                 \
        if (!valid(d))                               \
            return NVML_ERROR_INVALID_ARGUMENT;      \
    } while (0)

API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!version || length < 12)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(version, length, "580.00-sim");
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = 13000;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return nvmlSystemGetCudaDriverVersion(v);
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    NEED_INIT();
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)sim_config()->ndev;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    NEED_INIT();
    if (!device || index >= (unsigned)sim_config()->ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    NEED_INIT();
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < sim_config()->ndev; i++)
        if (strcmp(sim_config()->uuid[i], uuid) == 0) {
            *device = &devices[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index)
{
    NEED_DEV(d);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)d->index;
    return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
    NEED_DEV(d);
    return copy_string(name, length, sim_config()->name);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
    NEED_DEV(d);
    return copy_string(uuid, length, sim_config()->uuid[d->index]);
}

static void memory_of(nvmlDevice_t d, unsigned long long *total, unsigned long long *used)
{
    *total = sim_config()->memory[d->index];
    *used = sim_device_used(d->index);
    if (*used > *total)
        *used = *total;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    NEED_DEV(d);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory_of(d, &m->total, &m->used);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    NEED_DEV(d);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_INVALID_ARGUMENT; /* the real library answers a bad version so */
    memory_of(d, &m->total, &m->used);
    m->reserved = 0;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    NEED_DEV(d);
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = sim_busy_percent(d->index, 0, UTIL_WINDOW_NS);
    u->memory = 0;
    return NVML_SUCCESS;
}

static nvmlReturn_t running_processes(nvmlDevice_t d, unsigned int *count,
                                      nvmlProcessInfo_t *infos)
{
    NEED_DEV(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct sim_shared *s = sim_shared();
    sim_reap();
    unsigned int n = 0, cap = infos ? *count : 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        int32_t pid = atomic_load(&s->proc[i].pid);
        if (pid <= 0 || atomic_load(&s->proc[i].contexts[d->index]) == 0)
            continue;
        if (n < cap)
            infos[n] = (nvmlProcessInfo_t){(unsigned)pid,
                                           atomic_load(&s->proc[i].used[d->index]), ~0u, ~0u};
        n++;
    }
    *count = n;
    return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                         nvmlProcessInfo_t *infos)
{
    return running_processes(d, count, infos);
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                         nvmlProcessInfo_t *infos)
{
    return running_processes(d, count, infos);
}

API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                 nvmlProcessUtilizationSample_t *samples,
                                                 unsigned int *count,
                                                 unsigned long long last_seen_us)
{
    NEED_DEV(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now_us = (unsigned long long)tv.tv_sec * 1000000ULL + tv.tv_usec;
    uint64_t window = UTIL_WINDOW_NS;
    if (last_seen_us && last_seen_us < now_us && (now_us - last_seen_us) * 1000ULL < window)
        window = (now_us - last_seen_us) * 1000ULL;
    struct sim_shared *s = sim_shared();
    unsigned int n = 0, cap = samples ? *count : 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        int32_t pid = atomic_load(&s->proc[i].pid);
        if (pid <= 0 || atomic_load(&s->proc[i].contexts[d->index]) == 0)
            continue;
        if (n < cap)
            samples[n] = (nvmlProcessUtilizationSample_t){
                (unsigned)pid, now_us, sim_busy_percent(d->index, pid, window), 0, 0, 0};
        n++;
    }
    *count = n;
    if (!samples)
        return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_ERROR_NOT_FOUND;
    return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current,
                                      unsigned int *pending)
{
    NEED_DEV(d);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!sim_config()->mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}
