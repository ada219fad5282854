/* sim_nvml.c - the simulated GPU's NVML (libnvidia-ml.so.1): devices in physical order, memory
 * in use by every process, utilisation from the shared kernel timeline, running processes and
 * their memory, per-process utilisation, MIG mode, and MIG instances (sim_mig.c keeps them):
 * profiles and placements from carve's tables, GPU and compute instances created and
 * destroyed across processes, MIG device handles with their UUIDs and processes. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#include "carve/nvml_mig_abi.h"
#include "mig_plan.h"
#include "sim_mig.h"
#include "simdev.h"

#define API __attribute__((visibility("default")))
/* the sample period of a data-center GPU (H100: 1/6 s), not a whole second */
#define UTIL_WINDOW_NS (1000000000ULL / 6)

struct nvmlDevice_st {
    int index;
    unsigned gi; /* a MIG device handle: its GPU instance ID; 0 for the whole GPU */
};

static struct nvmlDevice_st devices[SIM_MAX_DEVICES];
static struct nvmlDevice_st mig_devices[SIM_MAX_DEVICES][SIM_MIG_MAX_ID + 1];
static _Atomic int init_count;

API nvmlReturn_t nvmlInit_v2(void)
{
    if (!sim_shared())
        return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < SIM_MAX_DEVICES; i++) {
        devices[i].index = i;
        for (unsigned g = 0; g <= SIM_MIG_MAX_ID; g++)
            mig_devices[i][g] = (struct nvmlDevice_st){i, g};
    }
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
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
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

/* CARVE_SIM_LOST=FILE: while FILE exists, the GPUs whose indices it lists ("1", "0,1") have
 * fallen off the bus, and NVML answers NVML_ERROR_GPU_IS_LOST for them, as a driver does
 * after an Xid 79; a test takes a GPU away from a running carved so, and gives it back. */
static bool lost(unsigned index)
{
    const char *path = getenv("CARVE_SIM_LOST");
    FILE *f = path && *path ? fopen(path, "re") : NULL;
    if (!f)
        return false;
    char buf[256];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (char *p = buf, *end; *p; p = end) {
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            end = p + 1;
        else if (v == index)
            return true;
    }
    return false;
}

#define NEED_DEV(d)                                  \
    do {                                             \
        NEED_INIT();                                 \
        if (!valid(d))                               \
            return NVML_ERROR_INVALID_ARGUMENT;      \
        if (lost((d)->index))                        \
            return NVML_ERROR_GPU_IS_LOST;           \
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
    return lost(index) ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
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

static bool mig_instance_of(nvmlDevice_t d, struct sim_mig_gi *out);

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
    struct sim_mig_gi g;
    if (mig_instance_of(d, &g)) {
        const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
        char buf[160];
        snprintf(buf, sizeof(buf), "%s MIG %s", sim_config()->name, p ? p->name : "?");
        return copy_string(name, length, buf);
    }
    NEED_DEV(d);
    return copy_string(name, length, sim_config()->name);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
    struct sim_mig_gi g;
    if (mig_instance_of(d, &g))
        return copy_string(uuid, length, g.uuid);
    NEED_DEV(d);
    return copy_string(uuid, length, sim_config()->uuid[d->index]);
}

static void memory_of(nvmlDevice_t d, unsigned long long *total, unsigned long long *used)
{
    struct sim_mig_gi g;
    if (mig_instance_of(d, &g)) {
        const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
        *total = p ? p->memory_mib << 20 : 0;
        sim_reap();
        *used = sim_instance_used(d->index, d->gi);
    } else {
        *total = sim_config()->memory[d->index];
        *used = sim_device_used(d->index);
    }
    if (*used > *total)
        *used = *total;
}

/* NEED_DEV, letting MIG device handles through as well */
#define NEED_DEV_OR_MIG(d)                           \
    do {                                             \
        struct sim_mig_gi g_;                        \
        NEED_INIT();                                 \
        if (!valid(d) && !mig_instance_of(d, &g_))   \
            return NVML_ERROR_INVALID_ARGUMENT;      \
        if (valid(d) && lost((d)->index))            \
            return NVML_ERROR_GPU_IS_LOST;           \
    } while (0)

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    NEED_DEV_OR_MIG(d);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory_of(d, &m->total, &m->used);
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    NEED_DEV_OR_MIG(d);
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
    u->gpu = sim_busy_percent(d->index, -1, UTIL_WINDOW_NS);
    u->memory = 0;
    return NVML_SUCCESS;
}

/* The processes NVML's list of kind `list' (SIM_LIST_*) names: on a MIG device handle, those
   in that instance; on the whole GPU, all, with the GPU and compute instance they run in (~0
   for none), as NVML reports them. Entries of stride bytes: 24 (nvmlProcessInfo_t), or 16
   (the unversioned lists, pid and memory). */
static nvmlReturn_t running_processes(nvmlDevice_t d, unsigned int *count, void *infos,
                                      size_t stride, uint32_t list)
{
    NEED_DEV_OR_MIG(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct sim_shared *s = sim_shared();
    sim_reap();
    struct sim_seen seen[SIM_MAX_PROCS];
    sim_see_entries(s, seen);
    unsigned int n = 0, cap = infos ? *count : 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        pid_t pid = seen[i].here;
        if (pid <= 0 || atomic_load(&s->proc[i].contexts[d->index]) == 0 ||
            !(atomic_load(&s->proc[i].lists) & list))
            continue;
        unsigned gi = atomic_load(&s->proc[i].mig_gi[d->index]);
        if (d->gi && gi != d->gi)
            continue;
        if (n < cap) {
            /* as driver 580 does: a process's managed memory is not in its usage, touched or
               not (docs/results/2026-11-28-driver-facts-nvidia-h200.md) */
            uint64_t used = atomic_load(&s->proc[i].used[d->index]),
                     unlisted = atomic_load(&s->proc[i].unlisted[d->index]);
            nvmlProcessInfo_t e = {(unsigned)(pid + sim_config()->nvml_pid_offset),
                                   used > unlisted ? used - unlisted : 0, gi ? gi : ~0u,
                                   gi ? 0u : ~0u};
            memcpy((unsigned char *)infos + (size_t)n * stride, &e, stride);
        }
        n++;
    }
    *count = n;
    return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

#define SIM_PROCESS_LIST(name, list, stride)                                               \
    API nvmlReturn_t name(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos) \
    {                                                                                     \
        return running_processes(d, count, infos, stride, list);                         \
    }
SIM_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses_v3, SIM_LIST_COMPUTE,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses_v2, SIM_LIST_COMPUTE,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetComputeRunningProcesses, SIM_LIST_COMPUTE,
                 sizeof(nvmlProcessInfo_v1_t))
SIM_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v3, SIM_LIST_GRAPHICS,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses_v2, SIM_LIST_GRAPHICS,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetGraphicsRunningProcesses, SIM_LIST_GRAPHICS,
                 sizeof(nvmlProcessInfo_v1_t))
SIM_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v3, SIM_LIST_MPS,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses_v2, SIM_LIST_MPS,
                 sizeof(nvmlProcessInfo_t))
SIM_PROCESS_LIST(nvmlDeviceGetMPSComputeRunningProcesses, SIM_LIST_MPS,
                 sizeof(nvmlProcessInfo_v1_t))

/* A driver of R535 on has both (so _v3's entries are 24 bytes, common/nvml_procs.h); the
 * simulated GPU has no confidential computing to report. */
API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t d,
                                                     nvmlConfComputeMemSizeInfo_t *memInfo)
{
    NEED_DEV(d);
    (void)memInfo;
    return NVML_ERROR_NOT_SUPPORTED;
}

/* The lists above again, in the one of late R535 on: the compute, graphics or MPS processes. */
API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t d,
                                                       nvmlProcessDetailList_t *plist)
{
    NEED_DEV_OR_MIG(d);
    if (!plist)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (plist->version != nvmlProcessDetailList_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlProcessInfo_t all[SIM_MAX_PROCS];
    unsigned int n = SIM_MAX_PROCS;
    uint32_t list = plist->mode == NVML_PROCESS_MODE_GRAPHICS ? SIM_LIST_GRAPHICS
                    : plist->mode == NVML_PROCESS_MODE_MPS    ? SIM_LIST_MPS
                                                              : SIM_LIST_COMPUTE;
    if (running_processes(d, &n, all, sizeof(all[0]), list) != NVML_SUCCESS)
        return NVML_ERROR_UNKNOWN;
    unsigned int cap = plist->procArray ? plist->numProcArrayEntries : 0;
    plist->numProcArrayEntries = n;
    if (n > cap)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned int i = 0; i < n; i++)
        plist->procArray[i] = (nvmlProcessDetail_v1_t){all[i].pid, all[i].usedGpuMemory,
                                                       all[i].gpuInstanceId,
                                                       all[i].computeInstanceId, 0};
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                 nvmlProcessUtilizationSample_t *samples,
                                                 unsigned int *count,
                                                 unsigned long long last_seen_us)
{
    NEED_DEV(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!sim_config()->proc_util)
        return NVML_ERROR_NOT_SUPPORTED;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now_us = (unsigned long long)tv.tv_sec * 1000000ULL + tv.tv_usec;
    uint64_t window = UTIL_WINDOW_NS;
    if (last_seen_us && last_seen_us < now_us && (now_us - last_seen_us) * 1000ULL < window)
        window = (now_us - last_seen_us) * 1000ULL;
    struct sim_shared *s = sim_shared();
    struct sim_seen seen[SIM_MAX_PROCS];
    sim_see_entries(s, seen);
    unsigned int n = 0, cap = samples ? *count : 0;
    for (int i = 0; i < SIM_MAX_PROCS; i++) {
        pid_t pid = seen[i].here;
        if (pid <= 0 || atomic_load(&s->proc[i].contexts[d->index]) == 0)
            continue;
        if (n < cap)
            samples[n] = (nvmlProcessUtilizationSample_t){
                (unsigned)(pid + sim_config()->nvml_pid_offset + sim_config()->nvml_util_pid_offset),
                now_us,
                sim_busy_percent(d->index, i, window), 0, 0, 0};
        n++;
    }
    *count = n;
    if (!samples)
        return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_ERROR_NOT_FOUND;
    return n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

/* Default unless CARVE_SIM_COMPUTE_MODE says otherwise (sim_config's compute_mode). */
API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, nvmlComputeMode_t *mode)
{
    NEED_DEV(d);
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = sim_config()->compute_mode;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current,
                                      unsigned int *pending)
{
    NEED_DEV(d);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!sim_config()->mig || !sim_mig_model())
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = sim_config()->mig_on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

/* ---------- MIG instances ---------- */

struct nvmlGpuInstance_st {
    int dev;
    unsigned id;
};
struct nvmlComputeInstance_st {
    int dev;
    unsigned gi, id;
};
static struct nvmlGpuInstance_st gi_handles[SIM_MAX_DEVICES][SIM_MIG_MAX_ID + 1];
static struct nvmlComputeInstance_st ci_handles[SIM_MAX_DEVICES][SIM_MIG_MAX_ID + 1];

static struct nvmlGpuInstance_st *gi_handle(int dev, unsigned id)
{
    gi_handles[dev][id] = (struct nvmlGpuInstance_st){dev, id};
    return &gi_handles[dev][id];
}

static bool valid_gi(nvmlGpuInstance_t g)
{
    return g && (const void *)g >= (const void *)gi_handles &&
           (const void *)g < (const void *)(gi_handles + SIM_MAX_DEVICES);
}

static bool valid_ci(nvmlComputeInstance_t c)
{
    return c && (const void *)c >= (const void *)ci_handles &&
           (const void *)c < (const void *)(ci_handles + SIM_MAX_DEVICES);
}

/* the GPU instance a MIG device handle stands for, while it has its compute instance */
static bool mig_instance_of(nvmlDevice_t d, struct sim_mig_gi *out)
{
    if (!d || (const void *)d < (const void *)mig_devices ||
        (const void *)d >= (const void *)(mig_devices + SIM_MAX_DEVICES) || d->gi == 0)
        return false;
    struct sim_mig_gi list[SIM_MIG_MAX];
    int n = sim_mig_load(list, SIM_MIG_MAX);
    for (int i = 0; i < n; i++)
        if (list[i].dev == d->index && list[i].gi == d->gi && list[i].ci >= 0) {
            *out = list[i];
            return true;
        }
    return false;
}

/* CARVE_SIM_UNPRIVILEGED=1: NVML answers as to a user who is not root: MIG devices are
   visible, GPU instances cannot be listed, made or destroyed */
static bool unprivileged(void)
{
    const char *v = getenv("CARVE_SIM_UNPRIVILEGED");
    return v && strcmp(v, "1") == 0;
}

#define NEED_ROOT()                                  \
    do {                                             \
        if (unprivileged())                          \
            return NVML_ERROR_NO_PERMISSION;         \
    } while (0)

/* MIG calls need MIG on: as the driver, NOT_SUPPORTED on a GPU without it */
#define NEED_MIG(d)                                                   \
    do {                                                              \
        NEED_DEV(d);                                                  \
        if (!sim_config()->mig || !sim_mig_model())                   \
            return NVML_ERROR_NOT_SUPPORTED;                          \
    } while (0)

static const struct mig_profile *profile_by_index(unsigned index)
{
    const struct mig_model *m = sim_mig_model();
    for (size_t i = 0; m && i < m->nprofiles; i++)
        if (m->profiles[i].nvml_profile == index)
            return &m->profiles[i];
    return NULL;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned int profile,
                                                     nvmlGpuInstanceProfileInfo_t *info)
{
    NEED_MIG(d);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_profile *p = profile_by_index(profile);
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned sms = (unsigned)sim_config()->sms;
    *info = (nvmlGpuInstanceProfileInfo_t){
        .id = p->nvml_id, .sliceCount = p->compute_slices, .instanceCount = p->max_count,
        .multiprocessorCount = sms * p->compute_slices / sim_mig_model()->compute_slices,
        .copyEngineCount = p->compute_slices, .jpegCount = p->media ? 1 : 0,
        .ofaCount = p->media ? 1 : 0, .memorySizeMB = p->memory_mib};
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t d, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
    unsigned int *count)
{
    NEED_MIG(d);
    const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), profileId);
    if (!p || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0, cap = placements ? *count : 0;
    for (unsigned s = 0; s < 32; s++) {
        if (!(p->start_mask & (1u << s)))
            continue;
        if (n < cap)
            placements[n] = (nvmlGpuInstancePlacement_t){s, p->memory_slices};
        n++;
    }
    *count = n;
    return placements && n > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

struct create_arg {
    int dev;
    const struct mig_profile *p;
    unsigned start, id;
};

static int create_gi(struct sim_mig_gi *list, int *n, void *varg)
{
    struct create_arg *a = varg;
    const struct mig_model *m = sim_mig_model();
    struct mig_instance inst[SIM_MIG_MAX + 1];
    size_t k = 0;
    unsigned used_ids = 0;
    for (int i = 0; i < *n; i++)
        if (list[i].dev == a->dev) {
            inst[k++] = (struct mig_instance){mig_profile_by_nvml_id(m, list[i].nvml_id),
                                              list[i].start};
            used_ids |= 1u << list[i].gi;
        }
    inst[k++] = (struct mig_instance){a->p, a->start};
    /* the driver refuses an overlap, a slot the profile cannot start at, too many */
    if (!mig_layout_valid(m, inst, k, NULL, 0) || *n >= SIM_MIG_MAX)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    unsigned id = 1;
    while (id <= SIM_MIG_MAX_ID && (used_ids & (1u << id)))
        id++;
    if (id > SIM_MIG_MAX_ID)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    list[(*n)++] = (struct sim_mig_gi){a->dev, id, a->p->nvml_id, a->start, -1, ""};
    a->id = id;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t d, unsigned int profileId,
                                                          const nvmlGpuInstancePlacement_t *pl,
                                                          nvmlGpuInstance_t *gi)
{
    NEED_MIG(d);
    NEED_ROOT();
    if (!sim_config()->mig_on)
        return NVML_ERROR_NOT_SUPPORTED;
    const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), profileId);
    if (!p || !pl || !gi || pl->size != p->memory_slices)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct create_arg a = {d->index, p, pl->start, 0};
    int r = sim_mig_update(create_gi, &a);
    if (r == NVML_SUCCESS)
        *gi = gi_handle(d->index, a.id);
    return r;
}

API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned int profileId,
                                           nvmlGpuInstance_t *gis, unsigned int *count)
{
    NEED_MIG(d);
    NEED_ROOT();
    if (!gis || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct sim_mig_gi list[SIM_MIG_MAX];
    int n = sim_mig_load(list, SIM_MIG_MAX);
    unsigned k = 0;
    for (int i = 0; i < n && k < *count; i++)
        if (list[i].dev == d->index && list[i].nvml_id == profileId)
            gis[k++] = gi_handle(d->index, list[i].gi);
    *count = k;
    return NVML_SUCCESS;
}

static bool find_gi(int dev, unsigned id, struct sim_mig_gi *out)
{
    struct sim_mig_gi list[SIM_MIG_MAX];
    int n = sim_mig_load(list, SIM_MIG_MAX);
    for (int i = 0; i < n; i++)
        if (list[i].dev == dev && list[i].gi == id) {
            *out = list[i];
            return true;
        }
    return false;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned int id,
                                              nvmlGpuInstance_t *gi)
{
    NEED_MIG(d);
    NEED_ROOT();
    struct sim_mig_gi g;
    if (!gi || id > SIM_MIG_MAX_ID)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!find_gi(d->index, id, &g))
        return NVML_ERROR_NOT_FOUND;
    *gi = gi_handle(d->index, id);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info)
{
    NEED_INIT();
    struct sim_mig_gi g;
    if (!valid_gi(gi) || !info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!find_gi(gi->dev, gi->id, &g))
        return NVML_ERROR_NOT_FOUND;
    const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
    *info = (nvmlGpuInstanceInfo_t){&devices[gi->dev], g.gi, g.nvml_id,
                                    {g.start, p ? p->memory_slices : 0}};
    return NVML_SUCCESS;
}

static bool has_processes(int dev, unsigned gi)
{
    struct sim_shared *s = sim_shared();
    sim_reap();
    for (int i = 0; s && i < SIM_MAX_PROCS; i++)
        if (atomic_load(&s->proc[i].pid) > 0 && atomic_load(&s->proc[i].contexts[dev]) > 0 &&
            atomic_load(&s->proc[i].mig_gi[dev]) == gi)
            return true;
    return false;
}

struct gi_arg {
    int dev;
    unsigned gi;
};

static int destroy_gi(struct sim_mig_gi *list, int *n, void *varg)
{
    struct gi_arg *a = varg;
    for (int i = 0; i < *n; i++) {
        if (list[i].dev != a->dev || list[i].gi != a->gi)
            continue;
        if (list[i].ci >= 0)
            return NVML_ERROR_IN_USE; /* its compute instance goes first, as on the driver */
        list[i] = list[--*n];
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi)
{
    NEED_INIT();
    NEED_ROOT();
    if (!valid_gi(gi))
        return NVML_ERROR_INVALID_ARGUMENT;
    struct gi_arg a = {gi->dev, gi->id};
    return sim_mig_update(destroy_gi, &a);
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gi, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info)
{
    NEED_INIT();
    struct sim_mig_gi g;
    if (!valid_gi(gi) || !info || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!find_gi(gi->dev, gi->id, &g))
        return NVML_ERROR_NOT_FOUND;
    const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
    /* the emulation offers one compute instance profile: the whole GPU instance */
    static const unsigned slices_of[] = {1, 2, 3, 4, 7, 8, 6, 1};
    if (!p || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
        slices_of[profile] != p->compute_slices ||
        profile == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1)
        return NVML_ERROR_NOT_SUPPORTED;
    *info = (nvmlComputeInstanceProfileInfo_t){.id = profile, .sliceCount = p->compute_slices,
                                               .instanceCount = 1};
    return NVML_SUCCESS;
}

static void random_mig_uuid(char *buf, size_t len)
{
    unsigned char b[16] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(b, 1, sizeof(b), f) != sizeof(b)) {
        uint64_t t = sim_now_ns() ^ (uint64_t)getpid() << 32;
        memcpy(b, &t, sizeof(t));
    }
    if (f)
        fclose(f);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x50); /* shaped like NVIDIA's (version 5) */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(buf, len, "MIG-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
             b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int create_ci(struct sim_mig_gi *list, int *n, void *varg)
{
    struct gi_arg *a = varg;
    for (int i = 0; i < *n; i++) {
        if (list[i].dev != a->dev || list[i].gi != a->gi)
            continue;
        if (list[i].ci >= 0)
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
        list[i].ci = 0;
        random_mig_uuid(list[i].uuid, sizeof(list[i].uuid));
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi,
                                                      unsigned int profileId,
                                                      nvmlComputeInstance_t *ci)
{
    NEED_INIT();
    nvmlComputeInstanceProfileInfo_t info;
    if (!valid_gi(gi) || !ci)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, profileId, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r != NVML_SUCCESS)
        return r;
    struct gi_arg a = {gi->dev, gi->id};
    r = sim_mig_update(create_ci, &a);
    if (r == NVML_SUCCESS) {
        ci_handles[gi->dev][gi->id] = (struct nvmlComputeInstance_st){gi->dev, gi->id, 0};
        *ci = &ci_handles[gi->dev][gi->id];
    }
    return r;
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned int profileId,
                                                    nvmlComputeInstance_t *cis,
                                                    unsigned int *count)
{
    NEED_INIT();
    struct sim_mig_gi g;
    nvmlComputeInstanceProfileInfo_t info;
    if (!valid_gi(gi) || !cis || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!find_gi(gi->dev, gi->id, &g))
        return NVML_ERROR_NOT_FOUND;
    unsigned k = 0;
    if (g.ci >= 0 && *count > 0 &&
        nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, profileId, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) == NVML_SUCCESS) {
        ci_handles[gi->dev][gi->id] = (struct nvmlComputeInstance_st){gi->dev, gi->id, 0};
        cis[k++] = &ci_handles[gi->dev][gi->id];
    }
    *count = k;
    return NVML_SUCCESS;
}

static int destroy_ci(struct sim_mig_gi *list, int *n, void *varg)
{
    struct gi_arg *a = varg;
    for (int i = 0; i < *n; i++) {
        if (list[i].dev != a->dev || list[i].gi != a->gi || list[i].ci < 0)
            continue;
        list[i].ci = -1;
        list[i].uuid[0] = '\0';
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci)
{
    NEED_INIT();
    NEED_ROOT();
    if (!valid_ci(ci))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (has_processes(ci->dev, ci->gi))
        return NVML_ERROR_IN_USE; /* the driver refuses while a process runs in it */
    struct gi_arg a = {ci->dev, ci->gi};
    return sim_mig_update(destroy_ci, &a);
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
    NEED_MIG(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = sim_mig_model()->compute_slices;
    return NVML_SUCCESS;
}

static int by_start(const void *a, const void *b)
{
    const struct sim_mig_gi *x = a, *y = b;
    return (int)x->start - (int)y->start;
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index,
                                                     nvmlDevice_t *mig)
{
    NEED_MIG(d);
    if (!mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct sim_mig_gi list[SIM_MIG_MAX], mine[SIM_MIG_MAX];
    int n = sim_mig_load(list, SIM_MIG_MAX), k = 0;
    for (int i = 0; i < n; i++)
        if (list[i].dev == d->index && list[i].ci >= 0)
            mine[k++] = list[i];
    qsort(mine, (size_t)k, sizeof(mine[0]), by_start);
    if (index >= (unsigned)k)
        return NVML_ERROR_NOT_FOUND;
    *mig = &mig_devices[d->index][mine[index].gi];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *a)
{
    NEED_INIT();
    struct sim_mig_gi g;
    if (!a)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_instance_of(d, &g))
        return valid(d) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
    if (!p)
        return NVML_ERROR_UNKNOWN;
    unsigned sms = (unsigned)sim_config()->sms * p->compute_slices /
                   sim_mig_model()->compute_slices;
    *a = (nvmlDeviceAttributes_t){.multiprocessorCount = sms,
                                  .sharedCopyEngineCount = p->compute_slices,
                                  .gpuInstanceSliceCount = p->compute_slices,
                                  .computeInstanceSliceCount = p->compute_slices,
                                  .memorySizeMB = p->memory_mib};
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
    NEED_INIT();
    struct sim_mig_gi g;
    if (!id || !mig_instance_of(d, &g))
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = g.gi;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
    NEED_INIT();
    struct sim_mig_gi g;
    if (!id || !mig_instance_of(d, &g))
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned)g.ci;
    return NVML_SUCCESS;
}
