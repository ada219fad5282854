/* gpus.c - listing GPUs through NVML (loaded with dlopen: carve's tools need no driver at
 * build time) and building slice specs; see gpus.h. */
#include "gpus.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "size.h"
#include "uuid.h"

void carve_nvml_path(int simulate, const char *libdir, char *out, size_t len)
{
    if (simulate)
        snprintf(out, len, "%s/sim/libnvidia-ml.so.1", libdir);
    else
        snprintf(out, len, "libnvidia-ml.so.1");
}

int carve_find_libdir(char *out, size_t len)
{
    const char *env = getenv("CARVE_LIBDIR");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    return carve_own_libdir(out, len);
}

int carve_own_libdir(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    /* a program of lib/carve itself (carve-dynamic, carve-top) is beside libcarve.so */
    const char *dir = dirname(exe);
    char beside[PATH_MAX + 16];
    snprintf(beside, sizeof(beside), "%s/libcarve.so", dir);
    if (access(beside, F_OK) == 0)
        snprintf(out, len, "%s", dir);
    else
        snprintf(out, len, "%s/../lib/carve", dir);
    return 0;
}

int carve_twin_paths(char paths[2][CARVE_TWIN_PATH_MAX])
{
    char own[PATH_MAX];
    const char *env = getenv("CARVE_LIBDIR");
    int n = 0;
    if (carve_own_libdir(own, sizeof(own)) == 0)
        snprintf(paths[n++], CARVE_TWIN_PATH_MAX, "%s/carve-dynamic", own);
    if (env && *env)
        snprintf(paths[n++], CARVE_TWIN_PATH_MAX, "%s/carve-dynamic", env);
    return n;
}

struct nvml {
    void *handle;
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlShutdown) shutdown;
    __typeof__(&nvmlDeviceGetCount_v2) count;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetUUID) uuid;
    __typeof__(&nvmlDeviceGetName) name;
    __typeof__(&nvmlDeviceGetMemoryInfo) memory;
    /* optional: an older NVML lacks some, and a GPU's entry then says -1 */
    __typeof__(&nvmlSystemGetDriverVersion) driver_version;
    __typeof__(&nvmlSystemGetCudaDriverVersion) cuda_version;
    __typeof__(&nvmlDeviceGetComputeMode) compute_mode;
    __typeof__(&nvmlDeviceGetMigMode) mig_mode;
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) processes;
};

#define NVML_SYM(n, field, symbol) ((n)->field = (__typeof__((n)->field))dlsym((n)->handle, symbol))

static int nvml_open(struct nvml *n, const char *path)
{
    n->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->handle)
        return -1;
    NVML_SYM(n, driver_version, "nvmlSystemGetDriverVersion");
    NVML_SYM(n, cuda_version, "nvmlSystemGetCudaDriverVersion");
    NVML_SYM(n, compute_mode, "nvmlDeviceGetComputeMode");
    NVML_SYM(n, mig_mode, "nvmlDeviceGetMigMode");
    NVML_SYM(n, processes, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (NVML_SYM(n, init, "nvmlInit_v2") && NVML_SYM(n, shutdown, "nvmlShutdown") &&
        NVML_SYM(n, count, "nvmlDeviceGetCount_v2") &&
        NVML_SYM(n, by_index, "nvmlDeviceGetHandleByIndex_v2") &&
        NVML_SYM(n, uuid, "nvmlDeviceGetUUID") && NVML_SYM(n, name, "nvmlDeviceGetName") &&
        NVML_SYM(n, memory, "nvmlDeviceGetMemoryInfo"))
        return 0;
    dlclose(n->handle); /* dlerror() still says which symbol is missing */
    return -1;
}

/* The optional facts of one GPU, -1 each where NVML does not say. */
static void gpu_modes(const struct nvml *n, nvmlDevice_t d, struct carve_gpu_info *g)
{
    nvmlComputeMode_t mode;
    unsigned current, pending, count = 0;
    g->compute_mode = n->compute_mode && n->compute_mode(d, &mode) == NVML_SUCCESS ? mode : -1;
    g->mig_current = g->mig_pending = -1;
    if (n->mig_mode && n->mig_mode(d, &current, &pending) == NVML_SUCCESS) {
        g->mig_current = (int)current;
        g->mig_pending = (int)pending;
    }
    nvmlReturn_t r = n->processes ? n->processes(d, &count, NULL) : NVML_ERROR_NOT_SUPPORTED;
    g->compute_procs = r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE ? (int)count : -1;
}

int carve_gpus_list(const char *nvml_path, int simulate, struct carve_gpu_info *gpus, int max,
                    char *err, size_t errlen)
{
    return carve_gpus_list_driver(nvml_path, simulate, gpus, max, NULL, err, errlen);
}

int carve_gpus_list_driver(const char *nvml_path, int simulate, struct carve_gpu_info *gpus,
                           int max, struct carve_driver_info *driver, char *err, size_t errlen)
{
    struct nvml n = {0};
    if (nvml_open(&n, nvml_path) < 0) {
        const char *why = dlerror();
        if (simulate)
            snprintf(err, errlen, "the simulated GPU is missing (%s); build carve with make",
                     why ? why : nvml_path);
        else
            snprintf(err, errlen, "no NVIDIA driver found (%s); to try carve without a GPU, "
                     "use --simulate", why ? why : nvml_path);
        return -1;
    }
    unsigned count = 0;
    nvmlReturn_t r = n.init();
    if (r == NVML_SUCCESS)
        r = n.count(&count);
    int got = 0;
    if (driver)
        driver->nunread = 0;
    for (unsigned i = 0; r == NVML_SUCCESS && i < count && got < max; i++) {
        nvmlDevice_t d;
        nvmlMemory_t m;
        struct carve_gpu_info *g = &gpus[got];
        nvmlReturn_t answer = n.by_index(i, &d);
        if (answer == NVML_SUCCESS)
            answer = n.uuid(d, g->uuid, sizeof(g->uuid));
        if (answer == NVML_SUCCESS)
            answer = n.memory(d, &m);
        if (answer != NVML_SUCCESS) {
            if (driver && driver->nunread < CARVE_SLICE_MAX_DEVICES) {
                driver->unread_index[driver->nunread] = i;
                driver->unread_error[driver->nunread++] = answer;
            }
            continue;
        }
        if (n.name(d, g->name, sizeof(g->name)) != NVML_SUCCESS)
            snprintf(g->name, sizeof(g->name), "GPU %u", i);
        g->index = i;
        g->total = m.total;
        gpu_modes(&n, d, g);
        got++;
    }
    if (r == NVML_SUCCESS && driver) {
        int cuda = 0;
        if (!n.driver_version || n.driver_version(driver->version, sizeof(driver->version)) !=
                                     NVML_SUCCESS)
            snprintf(driver->version, sizeof(driver->version), "unknown");
        driver->cuda = n.cuda_version && n.cuda_version(&cuda) == NVML_SUCCESS ? cuda : 0;
    }
    if (r == NVML_SUCCESS)
        n.shutdown();
    dlclose(n.handle);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML could not list the GPUs (error %d)", r);
        return -1;
    }
    return got;
}

const char *carve_nvml_error_text(int error, char *buf, size_t len)
{
    switch (error) {
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_NO_PERMISSION:
        return "no permission";
    case NVML_ERROR_NOT_FOUND:
        return "not found";
    default:
        snprintf(buf, len, "error %d", error);
        return buf;
    }
}

static bool has_index(const struct carve_gpu_info *gpus, int ngpu, unsigned idx)
{
    for (int i = 0; i < ngpu; i++)
        if (gpus[i].index == idx)
            return true;
    return false;
}

/* "--memory 100GiB is more than GPU 0 has (80 GiB)"; a per-GPU spec names the entry. */
static int cap_error(const struct carve_memory_spec *mem, const char *spec, unsigned idx,
                     uint64_t cap, uint64_t total, char *err, size_t errlen)
{
    char c[32], t[32];
    carve_format_size(cap, c, sizeof(c));
    carve_format_size(total, t, sizeof(t));
    if (mem->all)
        snprintf(err, errlen, "--memory %s is more than GPU %u has (%s)", spec, idx, t);
    else
        snprintf(err, errlen, "--memory %s: %u=%s is more than GPU %u has (%s)", spec, idx, c,
                 idx, t);
    return -EINVAL;
}

int carve_spec_build(struct carve_slice_spec *spec, const char *name, const char *memory,
                     const struct carve_compute *compute, const struct carve_gpu_info *gpus,
                     int ngpu, char *err, size_t errlen)
{
    struct carve_memory_spec mem = {0};
    char why[256];
    if (memory && carve_parse_memory_spec(memory, &mem, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--memory: %s", why);
        return -EINVAL;
    }
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++)
        if (mem.per_index[i] && !has_index(gpus, ngpu, (unsigned)i)) {
            snprintf(err, errlen, "--memory %s names GPU %d, but this machine has %d GPU%s "
                     "(0-%d)", memory, i, ngpu, ngpu == 1 ? "" : "s", ngpu - 1);
            return -EINVAL;
        }
    memset(spec, 0, sizeof(*spec));
    snprintf(spec->name, sizeof(spec->name), "%s", name);
    spec->ndev = ngpu < CARVE_SLICE_MAX_DEVICES ? ngpu : CARVE_SLICE_MAX_DEVICES;
    for (int i = 0; i < spec->ndev; i++) {
        /* IDX=SIZE names indexes below CARVE_SPEC_MAX_DEVICES only */
        uint64_t cap = mem.all                                   ? mem.all
                       : gpus[i].index < CARVE_SPEC_MAX_DEVICES ? mem.per_index[gpus[i].index]
                                                                : 0;
        if (cap > gpus[i].total)
            return cap_error(&mem, memory, gpus[i].index, cap, gpus[i].total, err, errlen);
        if (carve_uuid_parse(gpus[i].uuid, spec->dev[i].uuid) < 0) {
            snprintf(err, errlen, "GPU %u has a UUID carve cannot read: %s", gpus[i].index,
                     gpus[i].uuid);
            return -EINVAL;
        }
        spec->dev[i].index = (int)gpus[i].index;
        spec->dev[i].cap = cap;
        spec->dev[i].compute = *compute;
        spec->dev[i].board_entry = -1;
    }
    return 0;
}

int carve_gpu_ref_find(const struct carve_gpu_ref *r, const struct carve_gpu_info *gpus, int n)
{
    for (int k = 0; k < n; k++)
        if (r->index >= 0 ? gpus[k].index == (unsigned)r->index
                          : carve_uuid_is(gpus[k].uuid, r->uuid))
            return k;
    return -1;
}
