/* driver_facts.c - the CUDA driver's answers that carve's memory accounting rests on, learnt
 * on GPU 0 by a plain process (no carve): what an allocation, an array and a context really
 * take, what a VMM handle's retain, export and import hold, what a limit takes at once, and
 * which result codes and old entry points the driver has (docs/memory.md, Honest limits),
 * and whether it leaves SIGBUS's handler alone (docs/compute.md).
 *
 *   build/bench/driver_facts      (on a GPU, or with the simulated GPU's libraries first in
 *                                  LD_LIBRARY_PATH)
 *
 * One line per fact, `fact NAME = VALUE  # how it was measured`. VALUE is a number of bytes
 * (or a pitch), a result code's name, yes or no, `unlisted`/`unavailable` (NVML names no
 * such process, or no figure for it), `unsupported` (the driver or NVML lacks the entry
 * point or the feature), or `error CODE` (a call the measurement needs failed). Lines that
 * start with `#` describe the GPU. A size taken is the drop in cuMemGetInfo's free memory,
 * per allocation over ALLOCS of them (cuMemAlloc.step: over up to 4096 of them); at most about
 * 1.4 GiB is held at once, and everything
 * is freed. Exit status: 0 when every probe ran (unsupported ones included), 1 when a fact
 * is an error, 2 when libcuda.so.1, cuInit or the context failed.
 * bench/gpu/run-driver-facts.sh makes a report of it; tests/e2e/driver_facts.sh checks it
 * on the simulated GPU. */
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carve/cuda_abi.h"
#include "carve/nvml_abi.h"
#include "nvml_procs.h"
#include "uuid.h"

#define ALLOCS 64
#define MIB (1024ULL * 1024ULL)
#define NVML_VALUE_NOT_AVAILABLE (~0ULL) /* nvml.h's usedGpuMemory when it has no figure */

/* Every entry point used; those the library lacks stay NULL and their probes say so. */
#define DF_CUDA(X)                                                                            \
    X(cuInit) X(cuGetErrorName) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetName)       \
    X(cuDeviceGetUuid) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)                    \
    X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo_v2) \
    X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocPitch_v2) X(cuArrayCreate_v2)                \
    X(cuArrayDestroy) X(cuArrayGetMemoryRequirements) X(cuMemGetAllocationGranularity)        \
    X(cuMemCreate) X(cuMemRelease) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)     \
    X(cuMemUnmap) X(cuMemSetAccess) X(cuMemRetainAllocationHandle)                            \
    X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle) X(cuCtxSetLimit)        \
    X(cuCtxGetLimit) X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemAllocManaged)              \
    X(cuMemsetD8_v2)
#define DF_NVML(X)                                                                            \
    X(nvmlInit_v2) X(nvmlShutdown) X(nvmlSystemGetDriverVersion) X(nvmlDeviceGetHandleByUUID)  \
    X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetMemoryInfo)                               \
    X(nvmlDeviceGetComputeRunningProcesses_v3)

struct df {
    void *cuda, *nvml;
    CUdevice dev;
    CUcontext ctx;
    nvmlDevice_t nvdev; /* NULL: no NVML to ask */
    size_t nvml_stride; /* bytes between the entries of the _v3 process list */
    int errors;
#define DF_MEMBER(fn) __typeof__(fn) *fn;
    DF_CUDA(DF_MEMBER)
    DF_NVML(DF_MEMBER)
#undef DF_MEMBER
    carve_cuMemAlloc_v1_fn *cuMemAlloc_v1;
    carve_cuMemFree_v1_fn *cuMemFree_v1;
    carve_cuArrayCreate_v1_fn *cuArrayCreate_v1;
};

/* ---------- the lines ---------- */

__attribute__((format(printf, 3, 0))) static void vfact(const char *name, const char *value,
                                                        const char *how, va_list ap)
{
    printf("fact %s = %s  # ", name, value);
    vprintf(how, ap);
    putchar('\n');
    fflush(stdout);
}

__attribute__((format(printf, 3, 4))) static void fact(const char *name, const char *value,
                                                       const char *how, ...)
{
    va_list ap;
    va_start(ap, how);
    vfact(name, value, how, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void fact_num(const char *name, long long value,
                                                           const char *how, ...)
{
    char buf[32];
    va_list ap;
    snprintf(buf, sizeof(buf), "%lld", value);
    va_start(ap, how);
    vfact(name, buf, how, ap);
    va_end(ap);
}

/* rc's name ("CUDA_ERROR_INVALID_VALUE"), or "CUresult_<n>" (a static buffer). */
static const char *code_name(const struct df *d, CUresult rc)
{
    static char buf[32];
    const char *name = NULL;
    if (d->cuGetErrorName && d->cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, sizeof(buf), "CUresult_%d", rc);
    return buf;
}

/* A result code that is itself the fact. */
__attribute__((format(printf, 4, 5))) static void fact_code(const struct df *d, const char *name,
                                                            CUresult rc, const char *how, ...)
{
    char value[64], full[512];
    va_list ap;
    snprintf(value, sizeof(value), "%s", code_name(d, rc));
    va_start(ap, how);
    vsnprintf(full, sizeof(full), how, ap);
    va_end(ap);
    fact(name, value, "%s (result %d)", full, rc);
}

/* A call the measurement needed failed: the fact is unknown, and the run counts an error. */
static void fact_error(struct df *d, const char *name, const char *call, CUresult rc)
{
    char value[80];
    snprintf(value, sizeof(value), "error %s", code_name(d, rc));
    fact(name, value, "%s returned %d", call, rc);
    d->errors++;
}

/* Each of a probe's facts (a NULL-ended list) as unsupported, for why. */
static void fact_unsupported(const char *const *names, const char *why)
{
    for (; *names; names++)
        fact(*names, "unsupported", "%s", why);
}

/* A probe whose entry point fn the library lacks says so for each of its facts, and ends. */
#define NEED(d, fn, names)                                                                    \
    do {                                                                                      \
        if (!(d)->fn) {                                                                       \
            fact_unsupported(names, "the driver library has no " #fn);                        \
            return;                                                                           \
        }                                                                                     \
    } while (0)
#define ONE(name) ((const char *const[]){name, NULL})

/* cuMemGetInfo's free bytes once the GPU is idle; -1 after an error fact for name. */
static long long free_now(struct df *d, const char *name)
{
    size_t free_b = 0, total = 0;
    if (d->cuCtxSynchronize)
        d->cuCtxSynchronize();
    CUresult rc = d->cuMemGetInfo_v2(&free_b, &total);
    if (rc != CUDA_SUCCESS) {
        fact_error(d, name, "cuMemGetInfo_v2", rc);
        return -1;
    }
    return (long long)free_b;
}

/* The drop in free memory since base as fact name, described by how; -1 on an error. */
__attribute__((format(printf, 4, 5))) static int fact_held(struct df *d, long long base,
                                                           const char *name, const char *how,
                                                           ...)
{
    long long now = free_now(d, name);
    va_list ap;
    char value[32];
    if (now < 0)
        return -1;
    snprintf(value, sizeof(value), "%lld", base - now);
    va_start(ap, how);
    vfact(name, value, how, ap);
    va_end(ap);
    return 0;
}

/* ---------- NVML ---------- */

enum nv_kind { NV_OK, NV_UNLISTED, NV_UNAVAILABLE, NV_NONE, NV_ERROR };
struct nv_used {
    enum nv_kind kind;
    unsigned long long bytes; /* NV_OK */
    nvmlReturn_t err;         /* NV_ERROR */
};

/* NVML's usedGpuMemory for this process on the GPU. */
static struct nv_used nvml_self_used(const struct df *d)
{
    static nvmlProcessInfo_t list[400]; /* 256 entries of up to 32 bytes */
    struct nv_used u = {NV_NONE, 0, NVML_SUCCESS};
    if (!d->nvdev || !d->nvmlDeviceGetComputeRunningProcesses_v3)
        return u;
    unsigned int n = (unsigned int)(sizeof(list) / d->nvml_stride);
    u.err = d->nvmlDeviceGetComputeRunningProcesses_v3(d->nvdev, &n, list);
    if (u.err != NVML_SUCCESS) {
        u.kind = NV_ERROR;
        return u;
    }
    u.kind = NV_UNLISTED;
    for (unsigned int i = 0; i < n; i++) {
        nvmlProcessInfo_t p = carve_nvml_proc_at(list, d->nvml_stride, i);
        if (p.pid == (unsigned int)getpid()) {
            u.kind = p.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? NV_UNAVAILABLE : NV_OK;
            u.bytes = p.usedGpuMemory;
            break;
        }
    }
    return u;
}

/* NVML's figure (less base's, when base is given and known) as fact name. */
static void fact_nvml(struct df *d, const char *name, struct nv_used u, const struct nv_used *base,
                      const char *how)
{
    char value[64];
    if (base && base->kind != NV_OK && u.kind == NV_OK)
        u = *base;
    switch (u.kind) {
    case NV_OK:
        fact_num(name, (long long)u.bytes - (base ? (long long)base->bytes : 0), "%s", how);
        return;
    case NV_UNLISTED: fact(name, "unlisted", "%s: NVML does not list pid %d", how, (int)getpid()); return;
    case NV_UNAVAILABLE: fact(name, "unavailable", "%s: NVML lists no figure", how); return;
    case NV_NONE: fact(name, "unsupported", "%s: no NVML", how); return;
    case NV_ERROR:
        snprintf(value, sizeof(value), "error nvmlReturn_%d", u.err);
        fact(name, value, "%s: nvmlDeviceGetComputeRunningProcesses_v3 failed", how);
        d->errors++;
        return;
    }
}

/* NVML's used memory of the whole GPU; -1 when it cannot tell. */
static long long nvml_device_used(const struct df *d)
{
    nvmlMemory_t m;
    if (!d->nvdev || !d->nvmlDeviceGetMemoryInfo ||
        d->nvmlDeviceGetMemoryInfo(d->nvdev, &m) != NVML_SUCCESS)
        return -1;
    return (long long)m.used;
}

/* ---------- opening ---------- */

static void df_resolve(struct df *d)
{
#define DF_CUDA_SYM(fn) d->fn = (__typeof__(fn) *)dlsym(d->cuda, #fn);
    DF_CUDA(DF_CUDA_SYM)
#undef DF_CUDA_SYM
    d->cuMemAlloc_v1 = (carve_cuMemAlloc_v1_fn *)dlsym(d->cuda, "cuMemAlloc");
    d->cuMemFree_v1 = (carve_cuMemFree_v1_fn *)dlsym(d->cuda, "cuMemFree");
    d->cuArrayCreate_v1 = (carve_cuArrayCreate_v1_fn *)dlsym(d->cuda, "cuArrayCreate");
    if (!d->nvml)
        return;
#define DF_NVML_SYM(fn) d->fn = (__typeof__(fn) *)dlsym(d->nvml, #fn);
    DF_NVML(DF_NVML_SYM)
#undef DF_NVML_SYM
}

/* NVML's handle of the CUDA device (by its UUID, else index 0); NULL without NVML. */
static void df_nvml_open(struct df *d)
{
    CUuuid uuid;
    char text[64];
    if (!d->nvml || !d->nvmlInit_v2 || d->nvmlInit_v2() != NVML_SUCCESS)
        return;
    d->nvml_stride = carve_nvml_lib_v3_stride(d->nvml);
    if (d->cuDeviceGetUuid && d->nvmlDeviceGetHandleByUUID &&
        d->cuDeviceGetUuid(&uuid, d->dev) == CUDA_SUCCESS) {
        carve_uuid_format((const unsigned char *)uuid.bytes, text, sizeof(text));
        if (d->nvmlDeviceGetHandleByUUID(text, &d->nvdev) == NVML_SUCCESS)
            return;
    }
    d->nvdev = NULL;
    if (d->nvmlDeviceGetHandleByIndex_v2 &&
        d->nvmlDeviceGetHandleByIndex_v2(0, &d->nvdev) != NVML_SUCCESS)
        d->nvdev = NULL;
}

static void df_header(const struct df *d)
{
    char name[256] = "?", driver[96] = "?";
    int version = 0;
    if (d->cuDeviceGetName)
        d->cuDeviceGetName(name, (int)sizeof(name), d->dev);
    if (d->cuDriverGetVersion)
        d->cuDriverGetVersion(&version);
    if (d->nvdev && d->nvmlSystemGetDriverVersion)
        d->nvmlSystemGetDriverVersion(driver, sizeof(driver));
    printf("# driver_facts: GPU 0 %s, driver %s, CUDA driver API %d, NVML %s, pid %d\n", name,
           driver, version, d->nvdev ? "yes" : "no", (int)getpid());
}

/* Fact h, the context's own memory, on the way to it: NVML's used memory of the GPU before
 * and after the primary context is made and current (cuMemGetInfo needs a context), NVML's
 * figure for this process, and cuMemGetInfo's view. 0, or -1 when there is no context. */
static int df_context(struct df *d)
{
    long long before = nvml_device_used(d);
    CUresult rc = d->cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "driver_facts: cuDevicePrimaryCtxRetain: %s\n", code_name(d, rc));
        return -1;
    }
    if ((rc = d->cuCtxSetCurrent(d->ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "driver_facts: cuCtxSetCurrent: %s\n", code_name(d, rc));
        return -1;
    }
    if (d->cuCtxSynchronize)
        d->cuCtxSynchronize();
    long long after = nvml_device_used(d);
    if (before >= 0 && after >= 0)
        fact_num("context.nvml_device_delta", after - before,
                 "NVML's used memory of the GPU before and after cuDevicePrimaryCtxRetain and "
                 "cuCtxSetCurrent");
    else
        fact("context.nvml_device_delta", "unsupported", "no NVML memory figures");
    fact_nvml(d, "context.nvml_process_used", nvml_self_used(d), NULL,
              "NVML's usedGpuMemory for this process right after (nothing allocated yet)");
    size_t free_b = 0, total = 0;
    if ((rc = d->cuMemGetInfo_v2(&free_b, &total)) != CUDA_SUCCESS)
        fact_error(d, "context.cuMemGetInfo_used", "cuMemGetInfo_v2", rc);
    else
        fact_num("context.cuMemGetInfo_used", (long long)(total - free_b),
                 "cuMemGetInfo total less free at the same moment; NVML's used then: %lld",
                 nvml_device_used(d));
    return 0;
}

/* 0, or 2 (after a line on stderr) when there is no driver, device or context to probe. */
static int df_open(struct df *d)
{
    CUresult rc;
    memset(d, 0, sizeof(*d));
    d->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d->cuda) {
        fprintf(stderr, "driver_facts: cannot open libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    d->nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    df_resolve(d);
    if (!d->cuInit || !d->cuDeviceGet || !d->cuDevicePrimaryCtxRetain || !d->cuCtxSetCurrent ||
        !d->cuMemGetInfo_v2 || !d->cuMemAlloc_v2 || !d->cuMemFree_v2) {
        fprintf(stderr, "driver_facts: libcuda.so.1 lacks the context or allocation calls\n");
        return 2;
    }
    if ((rc = d->cuInit(0)) != CUDA_SUCCESS || (rc = d->cuDeviceGet(&d->dev, 0)) != CUDA_SUCCESS) {
        fprintf(stderr, "driver_facts: cuInit or cuDeviceGet(0): %s\n", code_name(d, rc));
        return 2;
    }
    df_nvml_open(d);
    df_header(d);
    return df_context(d) == 0 ? 0 : 2;
}

static void df_close(struct df *d)
{
    if (d->ctx && d->cuDevicePrimaryCtxRelease_v2)
        d->cuDevicePrimaryCtxRelease_v2(d->dev);
    if (d->nvdev && d->nvmlShutdown)
        d->nvmlShutdown();
}

/* ---------- the probes ---------- */

/* a. what n cuMemAlloc_v2 of size take, per allocation, as fact PREFIX.SIZE. With 64 the
 * sizes past a 2 MiB page show how they are rounded; with thousands, the small ones show
 * their step within the pages they share (4096 of 512 B fill one page, of 4 KiB eight). */
static void probe_alloc(struct df *d, const char *prefix, size_t size, int n_allocs)
{
    char name[64];
    CUdeviceptr *p = calloc((size_t)n_allocs, sizeof(*p));
    CUresult rc = CUDA_SUCCESS;
    int n = 0;
    snprintf(name, sizeof(name), "%s.%zu", prefix, size);
    long long before = p ? free_now(d, name) : -1, after = -1;
    if (before < 0) {
        if (!p)
            fact_error(d, name, "calloc", CUDA_ERROR_OUT_OF_MEMORY);
        free(p);
        return;
    }
    while (n < n_allocs && (rc = d->cuMemAlloc_v2(&p[n], size)) == CUDA_SUCCESS)
        n++;
    if (rc == CUDA_SUCCESS)
        after = free_now(d, name);
    for (int i = 0; i < n; i++)
        d->cuMemFree_v2(p[i]);
    free(p);
    if (rc != CUDA_SUCCESS) {
        fact_error(d, name, "cuMemAlloc_v2", rc);
        return;
    }
    long long back = after < 0 ? -1 : free_now(d, name);
    if (back < 0)
        return;
    fact_num(name, (before - after) / n_allocs,
             "free memory fell %lld B over %d cuMemAlloc_v2 of %zu B; per allocation (after "
             "their cuMemFree_v2, %lld B of it back)",
             before - after, n_allocs, size, back - after);
}

/* b. the pitch cuMemAllocPitch_v2 gives a row of 1000 bytes */
static void probe_pitch(struct df *d)
{
    const char *name = "cuMemAllocPitch.pitch.1000";
    CUdeviceptr p;
    size_t pitch = 0;
    NEED(d, cuMemAllocPitch_v2, ONE(name));
    CUresult rc = d->cuMemAllocPitch_v2(&p, &pitch, 1000, 16, 4);
    if (rc != CUDA_SUCCESS) {
        fact_error(d, name, "cuMemAllocPitch_v2(1000 B, 16 rows, 4-byte elements)", rc);
        return;
    }
    d->cuMemFree_v2(p);
    fact_num(name, (long long)pitch, "cuMemAllocPitch_v2 of 1000 B by 16 rows, 4-byte elements");
}

/* c. what ALLOCS arrays of one shape take, each; and whether the driver gives a plain
 * (not deferred-mapping) array's memory requirements */
static void probe_arrays(struct df *d, const char *tag, size_t w, size_t h, CUarray_format fmt)
{
    char name[64], req_name[80];
    const char *const names[] = {name, req_name, NULL};
    CUarray a[ALLOCS];
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    CUresult rc = CUDA_SUCCESS, req_rc = CUDA_SUCCESS;
    int n = 0;
    snprintf(name, sizeof(name), "cuArrayCreate.taken.%s", tag);
    snprintf(req_name, sizeof(req_name), "cuArrayGetMemoryRequirements.result.%s", tag);
    NEED(d, cuArrayCreate_v2, names);
    NEED(d, cuArrayDestroy, names);
    CUDA_ARRAY_DESCRIPTOR desc = {w, h, fmt, 1};
    long long before = free_now(d, name), after = -1;
    if (before < 0)
        return;
    while (n < ALLOCS && (rc = d->cuArrayCreate_v2(&a[n], &desc)) == CUDA_SUCCESS)
        n++;
    memset(&req, 0, sizeof(req));
    if (rc == CUDA_SUCCESS) {
        after = free_now(d, name);
        if (d->cuArrayGetMemoryRequirements)
            req_rc = d->cuArrayGetMemoryRequirements(&req, a[0], d->dev);
    }
    for (int i = 0; i < n; i++)
        d->cuArrayDestroy(a[i]);
    if (rc != CUDA_SUCCESS) {
        fact_error(d, name, "cuArrayCreate_v2", rc);
        return;
    }
    if (after < 0)
        return;
    fact_num(name, (before - after) / ALLOCS,
             "free memory fell %lld B over %d cuArrayCreate_v2 of %zu x %zu, format 0x%x, "
             "1 channel; per array", before - after, ALLOCS, w, h, (unsigned)fmt);
    if (!d->cuArrayGetMemoryRequirements)
        fact(req_name, "unsupported", "the driver library has no cuArrayGetMemoryRequirements");
    else
        fact_code(d, req_name, req_rc, "on one of those arrays (made without deferred mapping): "
                  "size %zu, alignment %zu", req.size, req.alignment);
}

/* d. what cuMemFree_v2 answers for a pointer freed already and for an address never given */
static void probe_free_codes(struct df *d)
{
    const char *twice = "cuMemFree.result.freed_twice", *never = "cuMemFree.result.never_allocated";
    CUdeviceptr p;
    CUresult rc = d->cuMemAlloc_v2(&p, MIB);
    if (rc == CUDA_SUCCESS && (rc = d->cuMemFree_v2(p)) != CUDA_SUCCESS) {
        fact_error(d, twice, "cuMemFree_v2 of a live 1 MiB allocation", rc);
        fact_error(d, never, "cuMemFree_v2 of a live 1 MiB allocation", rc);
        return;
    }
    if (rc != CUDA_SUCCESS) {
        fact_error(d, twice, "cuMemAlloc_v2(1 MiB)", rc);
        fact_error(d, never, "cuMemAlloc_v2(1 MiB)", rc);
        return;
    }
    fact_code(d, twice, d->cuMemFree_v2(p), "cuMemFree_v2 of a 1 MiB allocation's pointer, "
              "freed already (0x%llx)", (unsigned long long)p);
    CUdeviceptr far = p + (1ULL << 40);
    fact_code(d, never, d->cuMemFree_v2(far), "cuMemFree_v2 of 0x%llx, 1 TiB past that "
              "pointer, which nothing allocated", (unsigned long long)far);
}

/* A device-memory handle's properties; handle types as asked. */
static CUmemAllocationProp vmm_prop(const struct df *d, CUmemAllocationHandleType types)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = types;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = d->dev;
    return prop;
}

/* 32 granules of prop's allocation granularity; 0 after an error fact for name. */
static size_t vmm_size(struct df *d, const CUmemAllocationProp *prop, const char *name)
{
    size_t gran = 0;
    CUresult rc = d->cuMemGetAllocationGranularity(&gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (rc != CUDA_SUCCESS || gran == 0) {
        fact_error(d, name, "cuMemGetAllocationGranularity", rc);
        return 0;
    }
    return 32 * gran;
}

/* The state of probe_retain, for its one cleanup path. */
struct vmm_state {
    CUdeviceptr va;
    size_t size;
    CUmemGenericAllocationHandle created, retained;
    int have_created, have_retained, mapped;
};

static void vmm_undo(struct df *d, struct vmm_state *s)
{
    if (s->mapped)
        d->cuMemUnmap(s->va, s->size);
    if (s->have_created)
        d->cuMemRelease(s->created);
    if (s->have_retained)
        d->cuMemRelease(s->retained);
    if (s->va)
        d->cuMemAddressFree(s->va, s->size);
}

#define VMM_STEP(d, name, call, what)                                                         \
    do {                                                                                      \
        CUresult rc_ = (call);                                                                \
        if (rc_ != CUDA_SUCCESS) {                                                            \
            fact_error(d, name, what, rc_);                                                   \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)

/* e. cuMemRetainAllocationHandle at a mapped address: the create's handle again? And the
 * memory held at each step: create, map, retain, the create's release, unmap (the retain's
 * reference left), the retain's release. */
static void probe_retain(struct df *d)
{
    const char *same = "vmm.retain.same_handle";
    const char *const names[] = {"vmm.held.after_create", "vmm.held.after_map", same,
                                 "vmm.held.after_retain", "vmm.held.after_release_created",
                                 "vmm.held.after_unmap", "vmm.held.after_release_retained", NULL};
    struct vmm_state s;
    memset(&s, 0, sizeof(s));
    NEED(d, cuMemCreate, names);
    NEED(d, cuMemRelease, names);
    NEED(d, cuMemRetainAllocationHandle, names);
    NEED(d, cuMemAddressReserve, names);
    NEED(d, cuMemAddressFree, names);
    NEED(d, cuMemMap, names);
    NEED(d, cuMemUnmap, names);
    NEED(d, cuMemSetAccess, names);
    NEED(d, cuMemGetAllocationGranularity, names);
    CUmemAllocationProp prop = vmm_prop(d, CU_MEM_HANDLE_TYPE_NONE);
    if (!(s.size = vmm_size(d, &prop, same)))
        return;
    CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    long long base = free_now(d, same);
    if (base < 0)
        return;
    VMM_STEP(d, same, d->cuMemAddressReserve(&s.va, s.size, 0, 0, 0), "cuMemAddressReserve");
    VMM_STEP(d, same, d->cuMemCreate(&s.created, s.size, &prop, 0), "cuMemCreate");
    s.have_created = 1;
    if (fact_held(d, base, "vmm.held.after_create", "a %zu B handle made", s.size) < 0)
        goto out;
    VMM_STEP(d, same, d->cuMemMap(s.va, s.size, 0, s.created, 0), "cuMemMap");
    s.mapped = 1;
    VMM_STEP(d, same, d->cuMemSetAccess(s.va, s.size, &access, 1), "cuMemSetAccess");
    if (fact_held(d, base, "vmm.held.after_map", "mapped and made accessible") < 0)
        goto out;
    VMM_STEP(d, same, d->cuMemRetainAllocationHandle(&s.retained, (void *)(uintptr_t)s.va),
             "cuMemRetainAllocationHandle");
    s.have_retained = 1;
    fact(same, s.retained == s.created ? "yes" : "no",
         "cuMemCreate gave 0x%llx, cuMemRetainAllocationHandle at the mapped address 0x%llx",
         (unsigned long long)s.created, (unsigned long long)s.retained);
    if (fact_held(d, base, "vmm.held.after_retain", "the handle retained") < 0)
        goto out;
    s.have_created = 0;
    VMM_STEP(d, same, d->cuMemRelease(s.created), "cuMemRelease of the create's handle");
    if (fact_held(d, base, "vmm.held.after_release_created",
                  "the create's handle released, still mapped and retained") < 0)
        goto out;
    s.mapped = 0;
    VMM_STEP(d, same, d->cuMemUnmap(s.va, s.size), "cuMemUnmap");
    if (fact_held(d, base, "vmm.held.after_unmap", "unmapped: the retain's reference is left") < 0)
        goto out;
    s.have_retained = 0;
    VMM_STEP(d, same, d->cuMemRelease(s.retained), "cuMemRelease of the retained handle");
    fact_held(d, base, "vmm.held.after_release_retained",
              "the retain's release, the last reference: 0 when freed");
out:
    vmm_undo(d, &s);
}

/* f. a handle exported to a file descriptor and imported again in this process, the original
 * released: is the memory still held, and does NVML count it for this process? */
static void probe_share(struct df *d)
{
    const char *same = "share.import.same_handle";
    const char *const names[] = {"share.held.after_create", same, "share.held.after_import",
                                 "share.nvml.after_import", "share.held.after_release_original",
                                 "share.nvml.after_release_original",
                                 "share.held.after_release_import", "share.held.after_close",
                                 NULL};
    struct vmm_state s; /* created: the original; retained: the imported handle */
    int fd = -1, posix = 1;
    memset(&s, 0, sizeof(s));
    NEED(d, cuMemExportToShareableHandle, names);
    NEED(d, cuMemImportFromShareableHandle, names);
    NEED(d, cuMemCreate, names);
    NEED(d, cuMemRelease, names);
    NEED(d, cuMemGetAllocationGranularity, names);
    if (d->cuDeviceGetAttribute &&
        d->cuDeviceGetAttribute(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                d->dev) == CUDA_SUCCESS && !posix) {
        fact_unsupported(names, "the GPU exports no handle to a file descriptor");
        return;
    }
    CUmemAllocationProp prop = vmm_prop(d, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (!(s.size = vmm_size(d, &prop, same)))
        return;
    struct nv_used nv0 = nvml_self_used(d);
    long long base = free_now(d, same);
    if (base < 0)
        return;
    VMM_STEP(d, same, d->cuMemCreate(&s.created, s.size, &prop, 0), "cuMemCreate (POSIX fd)");
    s.have_created = 1;
    if (fact_held(d, base, "share.held.after_create", "a %zu B exportable handle", s.size) < 0)
        goto out;
    VMM_STEP(d, same, d->cuMemExportToShareableHandle(&fd, s.created,
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             "cuMemExportToShareableHandle");
    VMM_STEP(d, same, d->cuMemImportFromShareableHandle(&s.retained, (void *)(uintptr_t)fd,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             "cuMemImportFromShareableHandle");
    s.have_retained = 1;
    fact(same, s.retained == s.created ? "yes" : "no", "cuMemCreate gave 0x%llx, the import 0x%llx",
         (unsigned long long)s.created, (unsigned long long)s.retained);
    if (fact_held(d, base, "share.held.after_import", "exported and imported") < 0)
        goto out;
    fact_nvml(d, "share.nvml.after_import", nvml_self_used(d), &nv0,
              "NVML's usedGpuMemory for this process, less before the create");
    s.have_created = 0;
    VMM_STEP(d, same, d->cuMemRelease(s.created), "cuMemRelease of the original");
    if (fact_held(d, base, "share.held.after_release_original",
                  "the original released, the import's handle left") < 0)
        goto out;
    fact_nvml(d, "share.nvml.after_release_original", nvml_self_used(d), &nv0,
              "NVML's usedGpuMemory for this process, less before the create, with only the "
              "import left");
    s.have_retained = 0;
    VMM_STEP(d, same, d->cuMemRelease(s.retained), "cuMemRelease of the import");
    if (fact_held(d, base, "share.held.after_release_import",
                  "the import released too, the exported file descriptor still open") < 0)
        goto out;
    close(fd); /* does an open descriptor hold the memory with no handle left? */
    fd = -1;
    fact_held(d, base, "share.held.after_close",
              "the exported file descriptor closed: 0 when freed");
out:
    if (fd >= 0)
        close(fd);
    vmm_undo(d, &s);
}

/* g. what cuCtxSetLimit takes at the call: a 4 KiB stack, a 256 MiB heap; then what setting
 * the defaults back gives back */
static void probe_limits(struct df *d)
{
    const char *stack = "cuCtxSetLimit.taken.stack_4096", *heap = "cuCtxSetLimit.taken.heap_256MiB";
    const char *const names[] = {stack, heap, "cuCtxSetLimit.given_back.defaults", NULL};
    size_t stack0 = 1024, heap0 = 8 * MIB; /* CUDA's defaults, where cuCtxGetLimit is missing */
    NEED(d, cuCtxSetLimit, names);
    if (d->cuCtxGetLimit) {
        d->cuCtxGetLimit(&stack0, CU_LIMIT_STACK_SIZE);
        d->cuCtxGetLimit(&heap0, CU_LIMIT_MALLOC_HEAP_SIZE);
    }
    long long base = free_now(d, stack);
    if (base < 0)
        return;
    CUresult rc = d->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096);
    if (rc != CUDA_SUCCESS)
        fact_error(d, stack, "cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096)", rc);
    else if (fact_held(d, base, stack, "free memory's drop at the call; the stack was %zu B",
                       stack0) < 0)
        return;
    long long mid = free_now(d, heap);
    if (mid < 0)
        return;
    if ((rc = d->cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 256 * MIB)) != CUDA_SUCCESS)
        fact_error(d, heap, "cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 256 MiB)", rc);
    else if (fact_held(d, mid, heap, "free memory's drop at the call; the heap was %zu B "
                       "(no kernel launched yet)", heap0) < 0)
        return;
    long long high = free_now(d, "cuCtxSetLimit.given_back.defaults");
    if (high < 0)
        return;
    d->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, stack0);
    d->cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, heap0);
    long long now = free_now(d, "cuCtxSetLimit.given_back.defaults");
    if (now >= 0)
        fact_num("cuCtxSetLimit.given_back.defaults", now - high,
                 "free memory's rise when both limits are set back to %zu B and %zu B", stack0,
                 heap0);
}

/* i. a managed pool placed on no device (CUDA 13): does the driver take it? */
static void probe_managed_pool(struct df *d)
{
    const char *name = "cuMemPoolCreate.result.managed_nowhere";
    CUmemPoolProps props;
    CUmemoryPool pool = NULL;
    NEED(d, cuMemPoolCreate, ONE(name));
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_NONE;
    props.location.id = 0;
    CUresult rc = d->cuMemPoolCreate(&pool, &props);
    fact_code(d, name, rc, "cuMemPoolCreate with allocType MANAGED (2), location type NONE (0)");
    if (rc == CUDA_SUCCESS && d->cuMemPoolDestroy)
        d->cuMemPoolDestroy(pool);
}

/* i2. managed memory and NVML: libcarve counts cuMemAllocManaged's size at the call and
 * takes context memory as NVML's usage of the process less what it counted; whether NVML's
 * usedGpuMemory includes managed memory, before and after a kernel touches it on the GPU,
 * decides whether that difference is right (users report that it does not include it). */
static void probe_managed_nvml(struct df *d)
{
    const char *const names[] = {"managed.nvml.after_alloc", "managed.held.after_touch",
                                 "managed.nvml.after_touch", NULL};
    const size_t bytes = 256 * MIB;
    NEED(d, cuMemAllocManaged, names);
    NEED(d, cuMemsetD8_v2, names);
    long long base = free_now(d, names[0]);
    if (base < 0)
        return;
    struct nv_used nv0 = nvml_self_used(d);
    CUdeviceptr p = 0;
    CUresult rc = d->cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
    if (rc != CUDA_SUCCESS) {
        for (int i = 0; names[i]; i++)
            fact_error(d, names[i], "cuMemAllocManaged of 256 MiB", rc);
        return;
    }
    fact_nvml(d, names[0], nvml_self_used(d), &nv0,
              "NVML's usedGpuMemory of this process after cuMemAllocManaged of 256 MiB, "
              "untouched, less before it");
    rc = d->cuMemsetD8_v2(p, 1, bytes);
    if (rc != CUDA_SUCCESS) {
        fact_error(d, names[1], "cuMemsetD8_v2 over the managed 256 MiB", rc);
        fact_error(d, names[2], "cuMemsetD8_v2 over the managed 256 MiB", rc);
    } else if (fact_held(d, base, names[1], "cuMemGetInfo's free memory down by, once a "
                         "memset on the GPU touched all 256 MiB") == 0) {
        fact_nvml(d, names[2], nvml_self_used(d), &nv0,
                  "NVML's usedGpuMemory of this process once the memset touched it, less before "
                  "the allocation");
    }
    d->cuMemFree_v2(p);
}

/* j. the API before CUDA 3.2: are cuMemAlloc and cuArrayCreate (no _v2) exported, and what
 * does cuMemAlloc of 1 MiB answer? */
static void probe_v1(struct df *d)
{
    const char *alloc = "cuMemAlloc_v1.result.1MiB";
    fact("cuMemAlloc_v1.exported", d->cuMemAlloc_v1 ? "yes" : "no",
         "dlsym(libcuda.so.1, \"cuMemAlloc\"): 32-bit size and pointer");
    fact("cuArrayCreate_v1.exported", d->cuArrayCreate_v1 ? "yes" : "no",
         "dlsym(libcuda.so.1, \"cuArrayCreate\"): 32-bit width and height");
    if (!d->cuMemAlloc_v1) {
        fact(alloc, "unsupported", "the driver library has no cuMemAlloc");
        return;
    }
    CUdeviceptr_v1 p = 0;
    long long base = free_now(d, alloc);
    if (base < 0)
        return;
    CUresult rc = d->cuMemAlloc_v1(&p, (unsigned int)MIB);
    long long now = free_now(d, alloc);
    if (rc == CUDA_SUCCESS) {
        if (d->cuMemFree_v1)
            d->cuMemFree_v1(p);
        else
            d->cuMemFree_v2(p);
    }
    fact_code(d, alloc, rc, "cuMemAlloc(&CUdeviceptr_v1, 1 MiB); pointer 0x%x, free memory fell "
              "%lld B", p, now < 0 ? -1 : base - now);
}

/* libcarve's guard of the board's mappings (common/sigbus_guard.c) is put in place at its
 * first hooked call, before cuInit, and is lost to a handler installed after it: this one
 * stands in for it, and the fact says whether the driver (or NVML) left it there from cuInit
 * through every probe. A fault it gets is fatal, as without it. */
static void stand_in(int sig, siginfo_t *info, void *ctx)
{
    signal(sig, SIG_DFL);
}

static void probe_signals(void)
{
    struct sigaction now;
    sigaction(SIGBUS, NULL, &now);
    bool kept = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == stand_in;
    Dl_info who = {0};
    if (!kept && (now.sa_flags & SA_SIGINFO))
        dladdr((void *)now.sa_sigaction, &who);
    fact("signal.sigbus_kept", kept ? "yes" : "no",
         "a SIGBUS handler installed before cuInit, still there after every probe%s%s",
         kept ? "" : "; now: ", kept ? "" : who.dli_fname ? who.dli_fname : "another");
}

int main(void)
{
    static const size_t sizes[] = {1, 512, 4096, MIB, MIB + 1, 2 * MIB + 1, 20 * MIB + 1};
    /* small sizes, each just past a step it might have: 4096 of them, or 256 MiB's worth */
    static const size_t small[] = {1, 513, 4097, 65537, 262145, 524289};
    struct sigaction guard = {.sa_sigaction = stand_in, .sa_flags = SA_SIGINFO};
    sigemptyset(&guard.sa_mask);
    sigaction(SIGBUS, &guard, NULL);
    struct df d;
    int ret = df_open(&d);
    if (ret != 0)
        goto out;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        probe_alloc(&d, "cuMemAlloc.taken", sizes[i], ALLOCS);
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        probe_alloc(&d, "cuMemAlloc.step", small[i],
                    small[i] < 65536 ? 4096 : (int)(256 * MIB / small[i]));
    probe_pitch(&d);
    probe_arrays(&d, "1x1_u8", 1, 1, CU_AD_FORMAT_UNSIGNED_INT8);
    probe_arrays(&d, "1000x1000_f32", 1000, 1000, CU_AD_FORMAT_FLOAT);
    probe_free_codes(&d);
    probe_retain(&d);
    probe_share(&d);
    probe_limits(&d);
    probe_managed_pool(&d);
    probe_managed_nvml(&d);
    probe_v1(&d);
    probe_signals();
    ret = d.errors ? 1 : 0;
    printf("# driver_facts: %d error%s\n", d.errors, d.errors == 1 ? "" : "s");
out:
    df_close(&d);
    return ret;
}
