/* mig_nvml.c - MIG through NVML, loaded with dlopen like common/gpus.c does, so that carve
 * builds without a driver and runs against the real or the simulated GPU; see mig_nvml.h. */
#include "mig_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carve/nvml_mig_abi.h"
#include "nvml_procs.h"

#define MAX_MIG_HANDLES 16

struct mig_nvml {
    void *lib;
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlShutdown) shutdown;
    __typeof__(&nvmlErrorString) error_string;
    __typeof__(&nvmlDeviceGetCount_v2) count;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetName) name;
    __typeof__(&nvmlDeviceGetUUID) uuid;
    __typeof__(&nvmlDeviceGetMigMode) mig_mode;
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) procs;
    __typeof__(&nvmlDeviceGetGpuInstanceProfileInfo) gi_profile;
    __typeof__(&nvmlDeviceGetGpuInstancePossiblePlacements_v2) placements;
    __typeof__(&nvmlDeviceCreateGpuInstanceWithPlacement) gi_create;
    __typeof__(&nvmlDeviceGetGpuInstances) gi_list;
    __typeof__(&nvmlDeviceGetGpuInstanceById) gi_by_id;
    __typeof__(&nvmlGpuInstanceGetInfo) gi_info;
    __typeof__(&nvmlGpuInstanceDestroy) gi_destroy;
    __typeof__(&nvmlGpuInstanceGetComputeInstanceProfileInfo) ci_profile;
    __typeof__(&nvmlGpuInstanceCreateComputeInstance) ci_create;
    __typeof__(&nvmlGpuInstanceGetComputeInstances) ci_list;
    __typeof__(&nvmlComputeInstanceDestroy) ci_destroy;
    __typeof__(&nvmlDeviceGetMaxMigDeviceCount) mig_count;
    __typeof__(&nvmlDeviceGetMigDeviceHandleByIndex) mig_handle;
    __typeof__(&nvmlDeviceGetGpuInstanceId) mig_gi_id;
    __typeof__(&nvmlDeviceGetComputeInstanceId) mig_ci_id;
    __typeof__(&nvmlDeviceGetAttributes_v2) attributes;
    size_t procs_stride; /* bytes between the entries procs writes (nvml_procs.h) */
};

static const char *nverr(struct mig_nvml *n, nvmlReturn_t r)
{
    return n->error_string ? n->error_string(r) : "NVML error";
}

#define LOAD(field, sym) (n->field = (__typeof__(n->field))dlsym(n->lib, sym))

int mig_nvml_open(const char *path, struct mig_nvml **out, char *err, size_t errlen)
{
    struct mig_nvml *n = calloc(1, sizeof(*n));
    *out = NULL;
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(err, errlen, "cannot load NVML (%s): %s; on a machine without an NVIDIA "
                 "driver, try --simulate", path, dlerror());
        free(n);
        return -1;
    }
    LOAD(init, "nvmlInit_v2");
    LOAD(shutdown, "nvmlShutdown");
    LOAD(error_string, "nvmlErrorString");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(name, "nvmlDeviceGetName");
    LOAD(uuid, "nvmlDeviceGetUUID");
    LOAD(mig_mode, "nvmlDeviceGetMigMode");
    LOAD(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    n->procs_stride = carve_nvml_lib_v3_stride(n->lib);
    LOAD(gi_profile, "nvmlDeviceGetGpuInstanceProfileInfo");
    LOAD(placements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    LOAD(gi_create, "nvmlDeviceCreateGpuInstanceWithPlacement");
    LOAD(gi_list, "nvmlDeviceGetGpuInstances");
    LOAD(gi_by_id, "nvmlDeviceGetGpuInstanceById");
    LOAD(gi_info, "nvmlGpuInstanceGetInfo");
    LOAD(gi_destroy, "nvmlGpuInstanceDestroy");
    LOAD(ci_profile, "nvmlGpuInstanceGetComputeInstanceProfileInfo");
    LOAD(ci_create, "nvmlGpuInstanceCreateComputeInstance");
    LOAD(ci_list, "nvmlGpuInstanceGetComputeInstances");
    LOAD(ci_destroy, "nvmlComputeInstanceDestroy");
    LOAD(mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    LOAD(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    LOAD(mig_gi_id, "nvmlDeviceGetGpuInstanceId");
    LOAD(mig_ci_id, "nvmlDeviceGetComputeInstanceId");
    LOAD(attributes, "nvmlDeviceGetAttributes_v2");
    if (!n->init || !n->shutdown || !n->count || !n->by_index || !n->name || !n->uuid) {
        snprintf(err, errlen, "%s lacks NVML's basic entry points", path);
        goto fail;
    }
    nvmlReturn_t r = n->init();
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML did not start: %s", nverr(n, r));
        goto fail;
    }
    *out = n;
    return 0;
fail:
    dlclose(n->lib);
    free(n);
    return -1;
}

void mig_nvml_close(struct mig_nvml *n)
{
    if (!n)
        return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}

/* the entry points the MIG calls need, or -1 naming the first missing one */
static int need_mig(struct mig_nvml *n, char *err, size_t errlen)
{
    static const struct {
        size_t off;
        const char *name;
    } want[] = {
        {offsetof(struct mig_nvml, mig_mode), "nvmlDeviceGetMigMode"},
        {offsetof(struct mig_nvml, gi_profile), "nvmlDeviceGetGpuInstanceProfileInfo"},
        {offsetof(struct mig_nvml, gi_list), "nvmlDeviceGetGpuInstances"},
        {offsetof(struct mig_nvml, gi_info), "nvmlGpuInstanceGetInfo"},
        {offsetof(struct mig_nvml, mig_count), "nvmlDeviceGetMaxMigDeviceCount"},
        {offsetof(struct mig_nvml, mig_handle), "nvmlDeviceGetMigDeviceHandleByIndex"},
        {offsetof(struct mig_nvml, mig_gi_id), "nvmlDeviceGetGpuInstanceId"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        void *fn;
        memcpy(&fn, (char *)n + want[i].off, sizeof(fn));
        if (!fn) {
            snprintf(err, errlen, "this NVML has no %s: the driver is too old for MIG",
                     want[i].name);
            return -1;
        }
    }
    return 0;
}

static int device(struct mig_nvml *n, unsigned gpu, nvmlDevice_t *d, char *err, size_t errlen)
{
    nvmlReturn_t r = n->by_index(gpu, d);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "GPU %u: %s", gpu, nverr(n, r));
        return -1;
    }
    return 0;
}

int mig_nvml_gpus(struct mig_nvml *n, struct mig_gpu *gpus, int max, char *err, size_t errlen)
{
    unsigned count = 0;
    nvmlReturn_t r = n->count(&count);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML cannot count GPUs: %s", nverr(n, r));
        return -1;
    }
    int k = 0;
    /* a GPU NVML counts but does not answer for (lost, outside a devices cgroup) is left out,
       as carve's other commands leave it out: it failed every carve mig command (a review's
       finding, 2026-11-29). The list is then not by index: look GPUs up by their index. */
    for (unsigned i = 0; i < count && k < max; i++) {
        struct mig_gpu *g = &gpus[k];
        nvmlDevice_t d;
        memset(g, 0, sizeof(*g));
        g->index = i;
        g->mode = -1;
        if (n->by_index(i, &d) != NVML_SUCCESS)
            continue;
        k++;
        n->name(d, g->name, sizeof(g->name));
        n->uuid(d, g->uuid, sizeof(g->uuid));
        unsigned cur = 0, pending = 0;
        if (n->mig_mode && n->mig_mode(d, &cur, &pending) == NVML_SUCCESS)
            g->mode = cur == NVML_DEVICE_MIG_ENABLE;
        g->model = mig_model_find(g->name);
    }
    return k;
}

/* processes in one MIG device, appended to l */
static void add_procs(struct mig_nvml *n, nvmlDevice_t mig, struct mig_live *l)
{
    _Alignas(nvmlProcessInfo_t) unsigned char info[64 * CARVE_NVML_PROC_STRIDE_MAX];
    unsigned cnt = 64;
    /* a list NVML would not give (no such call, a failure, more than 64) is not "none": the
       instance was handed to a command and could be destroyed under its processes (a
       review's finding, 2026-11-29) */
    nvmlReturn_t r = n->procs ? n->procs(mig, &cnt, (void *)info) : NVML_ERROR_NOT_SUPPORTED;
    if (r != NVML_SUCCESS) {
        l->pids_unknown = true;
        return;
    }
    for (unsigned i = 0; i < cnt && i < 64; i++) {
        if (l->npids < MIG_NVML_MAX_PIDS)
            l->pids[l->npids] = carve_nvml_proc_at(info, n->procs_stride, i).pid;
        l->npids++;
    }
}

/* fills uuid, ci_id and processes of the instances from the MIG device handles */
static void join_mig_devices(struct mig_nvml *n, nvmlDevice_t d, struct mig_live *out, int k)
{
    unsigned max = 0;
    if (n->mig_count(d, &max) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < max && i < MAX_MIG_HANDLES; i++) {
        nvmlDevice_t mig;
        unsigned gi = 0, ci = 0;
        if (n->mig_handle(d, i, &mig) != NVML_SUCCESS || n->mig_gi_id(mig, &gi) != NVML_SUCCESS)
            continue;
        for (int j = 0; j < k; j++) {
            if (out[j].gi_id != gi)
                continue;
            if (n->mig_ci_id && n->mig_ci_id(mig, &ci) == NVML_SUCCESS && out[j].ci_id < 0)
                out[j].ci_id = (int)ci;
            if (!out[j].uuid[0])
                n->uuid(mig, out[j].uuid, sizeof(out[j].uuid));
            add_procs(n, mig, &out[j]);
        }
    }
}

/* the table's profile a MIG device is: its compute slices, and the memory nearest NVML's */
static const struct mig_profile *profile_of(const struct mig_model *model, unsigned slices,
                                            uint64_t memory_mib)
{
    const struct mig_profile *best = NULL;
    uint64_t best_gap = UINT64_MAX;
    for (size_t i = 0; model && i < model->nprofiles; i++) {
        const struct mig_profile *p = &model->profiles[i];
        uint64_t gap = p->memory_mib > memory_mib ? p->memory_mib - memory_mib
                                                  : memory_mib - p->memory_mib;
        if (p->compute_slices == slices && !p->media && gap < best_gap) {
            best = p;
            best_gap = gap;
        }
    }
    return best;
}

/* Without root, NVML may refuse to list GPU instances but still shows the MIG devices: the
   instances, then, as their MIG devices say (no placement). */
static int from_mig_devices(struct mig_nvml *n, nvmlDevice_t d, unsigned gpu,
                            const struct mig_model *model, struct mig_live *out, int max)
{
    unsigned cnt = 0;
    int k = 0;
    if (n->mig_count(d, &cnt) != NVML_SUCCESS)
        return 0;
    for (unsigned i = 0; i < cnt && i < MAX_MIG_HANDLES && k < max; i++) {
        nvmlDevice_t mig;
        unsigned gi = 0, ci = 0;
        if (n->mig_handle(d, i, &mig) != NVML_SUCCESS || n->mig_gi_id(mig, &gi) != NVML_SUCCESS)
            continue;
        struct mig_live *l = &out[k++];
        memset(l, 0, sizeof(*l));
        l->gpu = gpu;
        l->gi_id = gi;
        l->ci_id = n->mig_ci_id && n->mig_ci_id(mig, &ci) == NVML_SUCCESS ? (int)ci : -1;
        n->uuid(mig, l->uuid, sizeof(l->uuid));
        nvmlDeviceAttributes_t a;
        if (n->attributes && n->attributes(mig, &a) == NVML_SUCCESS) {
            l->memory_mib = a.memorySizeMB;
            l->profile = profile_of(model, a.gpuInstanceSliceCount, a.memorySizeMB);
            if (l->profile)
                l->profile_id = l->profile->nvml_id;
        }
        add_procs(n, mig, l);
    }
    return k;
}

static int by_start(const void *a, const void *b)
{
    const struct mig_live *x = a, *y = b;
    return (int)x->start - (int)y->start;
}

int mig_nvml_instances(struct mig_nvml *n, unsigned gpu, struct mig_live *out, int max,
                       char *err, size_t errlen)
{
    nvmlDevice_t d;
    if (need_mig(n, err, errlen) < 0 || device(n, gpu, &d, err, errlen) < 0)
        return -1;
    char name[96] = "";
    n->name(d, name, sizeof(name));
    const struct mig_model *model = mig_model_find(name);
    int k = 0;
    bool denied = false;
    unsigned seen[NVML_GPU_INSTANCE_PROFILE_COUNT], nseen = 0;
    for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstanceProfileInfo_t info;
        nvmlReturn_t r = n->gi_profile(d, p, &info);
        denied |= r == NVML_ERROR_NO_PERMISSION;
        if (r != NVML_SUCCESS)
            continue;
        /* two indices of one profile (a newer driver's alias of an older index) would list
         * its instances twice */
        bool again = false;
        for (unsigned i = 0; i < nseen; i++)
            again |= seen[i] == info.id;
        if (again)
            continue;
        seen[nseen++] = info.id;
        nvmlGpuInstance_t gis[MIG_NVML_MAX_LIVE];
        unsigned cnt = MIG_NVML_MAX_LIVE;
        r = n->gi_list(d, info.id, gis, &cnt);
        denied |= r == NVML_ERROR_NO_PERMISSION;
        if (r != NVML_SUCCESS)
            continue;
        for (unsigned i = 0; i < cnt && k < max; i++) {
            nvmlGpuInstanceInfo_t gi;
            if (n->gi_info(gis[i], &gi) != NVML_SUCCESS)
                continue;
            struct mig_live *l = &out[k++];
            memset(l, 0, sizeof(*l));
            l->gpu = gpu;
            l->gi_id = gi.id;
            l->profile_id = gi.profileId;
            l->profile = mig_profile_by_nvml_id(model, gi.profileId);
            l->start = gi.placement.start;
            l->size = gi.placement.size;
            l->placement_known = true;
            l->memory_mib = info.memorySizeMB;
            l->ci_id = -1;
        }
    }
    if (denied && k == 0)
        return from_mig_devices(n, d, gpu, model, out, max);
    join_mig_devices(n, d, out, k);
    qsort(out, (size_t)k, sizeof(*out), by_start);
    return k;
}

/* NVML's profile ID for p on d, checked against carve's table */
static int profile_info(struct mig_nvml *n, nvmlDevice_t d, const struct mig_profile *p,
                        nvmlGpuInstanceProfileInfo_t *info, char *err, size_t errlen)
{
    nvmlReturn_t r = n->gi_profile(d, p->nvml_profile, info);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML knows no GPU instance profile %s here: %s", p->name,
                 nverr(n, r));
        return -1;
    }
    if (info->sliceCount != p->compute_slices) {
        snprintf(err, errlen, "NVML's profile %u has %u compute slices where carve's %s has %u: "
                 "carve's table does not match this GPU", info->id, info->sliceCount, p->name,
                 p->compute_slices);
        return -1;
    }
    return 0;
}

int mig_nvml_facts(struct mig_nvml *n, unsigned gpu, const struct mig_profile *p,
                   struct mig_nvml_facts *f, char *err, size_t errlen)
{
    nvmlDevice_t d;
    nvmlGpuInstanceProfileInfo_t info;
    memset(f, 0, sizeof(*f));
    if (need_mig(n, err, errlen) < 0 || device(n, gpu, &d, err, errlen) < 0)
        return -1;
    nvmlReturn_t r = n->gi_profile(d, p->nvml_profile, &info);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML knows no GPU instance profile %s here: %s", p->name,
                 nverr(n, r));
        return -1;
    }
    f->id = info.id;
    f->compute_slices = info.sliceCount;
    f->max_count = info.instanceCount;
    f->memory_mib = info.memorySizeMB;
    if (!n->placements) {
        snprintf(err, errlen, "this NVML has no nvmlDeviceGetGpuInstancePossiblePlacements_v2");
        return -1;
    }
    nvmlGpuInstancePlacement_t pl[16];
    unsigned cnt = 16;
    r = n->placements(d, info.id, pl, &cnt);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML's placements for %s: %s", p->name, nverr(n, r));
        return -1;
    }
    for (unsigned i = 0; i < cnt && i < 16; i++) {
        if (pl[i].start < 32)
            f->start_mask |= 1u << pl[i].start;
        f->memory_slices = pl[i].size;
    }
    return 0;
}

/* the compute instance profile that takes the whole GPU instance */
static unsigned full_ci_profile(unsigned compute_slices)
{
    switch (compute_slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 8: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    default: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    }
}

int mig_nvml_create(struct mig_nvml *n, unsigned gpu, const struct mig_profile *p,
                    unsigned start, struct mig_live *made, char *err, size_t errlen)
{
    nvmlDevice_t d;
    nvmlGpuInstanceProfileInfo_t info;
    if (need_mig(n, err, errlen) < 0 || device(n, gpu, &d, err, errlen) < 0 ||
        profile_info(n, d, p, &info, err, errlen) < 0)
        return -1;
    if (!n->gi_create || !n->ci_profile || !n->ci_create || !n->gi_destroy) {
        snprintf(err, errlen, "this NVML cannot create MIG instances (the driver is too old)");
        return -1;
    }
    nvmlGpuInstancePlacement_t pl = {start, p->memory_slices};
    nvmlGpuInstance_t gi;
    nvmlReturn_t r = n->gi_create(d, info.id, &pl, &gi);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "creating %s at slot %u on GPU %u: %s%s", p->name, start, gpu,
                 nverr(n, r), r == NVML_ERROR_NO_PERMISSION ? " (MIG changes need root)" : "");
        return -1;
    }
    nvmlComputeInstanceProfileInfo_t ci;
    nvmlComputeInstance_t cih;
    r = n->ci_profile(gi, full_ci_profile(p->compute_slices),
                      NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci);
    if (r == NVML_SUCCESS)
        r = n->ci_create(gi, ci.id, &cih);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "creating the compute instance of %s at slot %u on GPU %u: %s",
                 p->name, start, gpu, nverr(n, r));
        n->gi_destroy(gi); /* leave nothing half made */
        return -1;
    }
    nvmlGpuInstanceInfo_t gii;
    memset(made, 0, sizeof(*made));
    made->ci_id = -1;
    if (n->gi_info(gi, &gii) == NVML_SUCCESS) {
        made->gpu = gpu;
        made->gi_id = gii.id;
        made->profile_id = gii.profileId;
        made->profile = p;
        made->start = gii.placement.start;
        made->size = gii.placement.size;
        made->placement_known = true;
        made->memory_mib = info.memorySizeMB;
        join_mig_devices(n, d, made, 1);
    }
    return 0;
}

int mig_nvml_destroy(struct mig_nvml *n, unsigned gpu, unsigned gi_id, char *err,
                     size_t errlen)
{
    struct mig_live live[MIG_NVML_MAX_LIVE];
    int k = mig_nvml_instances(n, gpu, live, MIG_NVML_MAX_LIVE, err, errlen);
    if (k < 0)
        return -1;
    const struct mig_live *l = NULL;
    for (int i = 0; i < k; i++)
        if (live[i].gi_id == gi_id)
            l = &live[i];
    if (!l) {
        snprintf(err, errlen, "GPU %u has no GPU instance %u", gpu, gi_id);
        return -1;
    }
    if (l->pids_unknown && !l->npids) {
        snprintf(err, errlen, "refusing to destroy GPU instance %u (%s %s) on GPU %u: NVML "
                 "would not list its processes", gi_id, l->profile ? l->profile->name : "?",
                 l->uuid, gpu);
        return -1;
    }
    if (l->npids) {
        size_t used = (size_t)snprintf(err, errlen, "refusing to destroy GPU instance %u (%s %s)"
                                       " on GPU %u: %u process%s run%s in it:", gi_id,
                                       l->profile ? l->profile->name : "?", l->uuid, gpu,
                                       l->npids, l->npids == 1 ? "" : "es",
                                       l->npids == 1 ? "s" : "");
        for (unsigned i = 0; i < l->npids && i < MIG_NVML_MAX_PIDS && used < errlen; i++)
            used += (size_t)snprintf(err + used, errlen - used, " %u", l->pids[i]);
        return -1;
    }
    nvmlDevice_t d;
    nvmlGpuInstance_t gi;
    if (device(n, gpu, &d, err, errlen) < 0)
        return -1;
    if (!n->gi_by_id || !n->gi_destroy || !n->ci_list || !n->ci_destroy || !n->ci_profile) {
        snprintf(err, errlen, "this NVML cannot destroy MIG instances (the driver is too old)");
        return -1;
    }
    nvmlReturn_t r = n->gi_by_id(d, gi_id, &gi);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "GPU instance %u on GPU %u: %s%s", gi_id, gpu, nverr(n, r),
                 r == NVML_ERROR_NO_PERMISSION ? " (MIG changes need root)" : "");
        return -1;
    }
    for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstanceProfileInfo_t ci;
        if (n->ci_profile(gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci) != NVML_SUCCESS)
            continue;
        nvmlComputeInstance_t cis[8];
        unsigned cnt = 8;
        if (n->ci_list(gi, ci.id, cis, &cnt) != NVML_SUCCESS)
            continue;
        for (unsigned i = 0; i < cnt && i < 8; i++) {
            r = n->ci_destroy(cis[i]);
            if (r != NVML_SUCCESS) {
                snprintf(err, errlen, "destroying a compute instance of GPU instance %u: %s%s",
                         gi_id, nverr(n, r), r == NVML_ERROR_IN_USE ? " (a process uses it)" : "");
                return -1;
            }
        }
    }
    r = n->gi_destroy(gi);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "destroying GPU instance %u on GPU %u: %s%s", gi_id, gpu,
                 nverr(n, r), r == NVML_ERROR_IN_USE ? " (in use)" : "");
        return -1;
    }
    return 0;
}
