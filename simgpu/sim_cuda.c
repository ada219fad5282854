/* sim_cuda.c - the simulated GPU's driver API (libcuda.so.1): devices, contexts, every
 * allocation API carve counts, streams, events, built-in kernels on a shared timeline, stream
 * capture into graphs, and cuGetProcAddress with the real driver's versioning rules.
 *
 * Memory is backed by anonymous mappings (device pointer == host address), so copies work.
 * Calls between entry points go to internal functions, never through exported names, so an
 * interposer in front of this library sees each application call once. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "carve/cuda_abi.h"
#include "entries.h"
#include "sim_mig.h"
#include "sim_mps.h"
#include "simdev.h"
#include "uuid.h"

#define API __attribute__((visibility("default")))
#define GRANULARITY (2ULL << 20)
#define POOL_CHUNK (32ULL << 20)
#define PITCH_ALIGN 512
#define MAX_CTX_STACK 16

/* ---------- devices and CUDA_VISIBLE_DEVICES ---------- */

static int initialized;
static int visible[SIM_MAX_DEVICES]; /* ordinal -> physical index */
static unsigned visible_gi[SIM_MAX_DEVICES]; /* ordinal -> MIG GPU instance ID, 0: whole GPU */
static uint64_t mig_memory; /* the MIG device's memory, when one is visible */
static int nvisible;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int physical_of_entry(const char *e, const struct sim_config *c, unsigned *gi)
{
    char *end;
    struct sim_mig_gi g;
    *gi = 0;
    if (strncmp(e, "MIG-", 4) == 0) { /* a MIG device: its instance, on its GPU */
        if (!c->mig_on || !sim_mig_find_uuid(e, &g) || g.dev >= c->ndev)
            return -1;
        *gi = g.gi;
        const struct mig_profile *p = mig_profile_by_nvml_id(sim_mig_model(), g.nvml_id);
        mig_memory = p ? p->memory_mib << 20 : 0;
        sim_set_mig(g.gi, mig_memory);
        return g.dev;
    }
    if (*e >= '0' && *e <= '9') {
        long v = strtol(e, &end, 10);
        return *end == '\0' && v < c->ndev ? (int)v : -1;
    }
    if (strncmp(e, "GPU-", 4) != 0 || strlen(e) < 5)
        return -1;
    int found = -1;
    for (int i = 0; i < c->ndev; i++)
        if (strncmp(c->uuid[i], e, strlen(e)) == 0) {
            if (found >= 0)
                return -1; /* an ambiguous prefix names no device */
            found = i;
        }
    return found;
}

static void set_visible(void)
{
    const struct sim_config *c = sim_config();
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    nvisible = 0;
    if (!v) {
        for (int i = 0; i < c->ndev; i++)
            visible[nvisible++] = i;
        return;
    }
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && nvisible < SIM_MAX_DEVICES;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned gi;
        int phys = physical_of_entry(tok, c, &gi);
        if (phys < 0)
            break; /* as the driver does: the list ends at the first invalid entry */
        bool dup = false;
        for (int i = 0; i < nvisible; i++)
            dup |= visible[i] == phys;
        if (dup)
            break;
        visible_gi[nvisible] = gi;
        visible[nvisible++] = phys;
        if (gi)
            break; /* as CUDA does: one MIG device per process */
    }
}

API CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!initialized) {
        set_visible();
        sim_mps_note_client();
        initialized = 1;
    }
    pthread_mutex_unlock(&lock);
    return sim_shared() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

#define NEED_INIT()                      \
    do {                                 \
        if (!initialized)                \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

static bool valid_dev(CUdevice d)
{
    return d >= 0 && d < nvisible;
}

API CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult e, const char **str, bool name)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == e) {
            *str = name ? errors[i].name : errors[i].text;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult e, const char **str)
{
    return error_lookup(e, str, false);
}

API CUresult cuGetErrorName(CUresult e, const char **str)
{
    return error_lookup(e, str, true);
}

API CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = nvisible;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    NEED_INIT();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", sim_config()->name);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    NEED_INIT();
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    unsigned char b[16];
    if (carve_uuid_parse(sim_config()->uuid[visible[dev]], b) < 0)
        return CUDA_ERROR_UNKNOWN;
    memcpy(uuid->bytes, b, 16);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    NEED_INIT();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* a MIG device has its instance's memory */
    *bytes = visible_gi[dev] ? mig_memory : sim_config()->memory[visible[dev]];
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    NEED_INIT();
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *pi = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = sim_config()->sms; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x10 + visible[dev]; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev)
{
    NEED_INIT();
    if (!bus || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(bus, (size_t)len, "00000000:%02X:00.0", 0x10 + visible[dev]);
    return CUDA_SUCCESS;
}

/* ---------- contexts ---------- */

struct CUstream_st {
    struct CUctx_st *ctx;
    _Atomic uint64_t tail_ns;
    bool capturing;
    struct CUgraph_st *graph;
};

struct CUctx_st {
    CUdevice dev; /* ordinal */
    int phys;
    bool primary;
    int refs;
    _Atomic uint64_t last_end_ns;
    struct CUstream_st null_stream;
};

static struct CUctx_st primary[SIM_MAX_DEVICES];
static _Thread_local CUcontext ctx_stack[MAX_CTX_STACK];
static _Thread_local int ctx_depth;

static CUcontext current(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

static bool ctx_charge(CUdevice dev)
{
    int phys = visible[dev];
    struct sim_proc *p = sim_self();
    if (!p || !sim_take(phys, sim_config()->ctx_memory))
        return false;
    atomic_fetch_add(&p->contexts[phys], 1);
    atomic_store(&p->mig_gi[phys], visible_gi[dev]);
    return true;
}

static void ctx_uncharge(int phys)
{
    struct sim_proc *p = sim_self();
    sim_give(phys, sim_config()->ctx_memory);
    if (p && atomic_load(&p->contexts[phys]) > 0)
        atomic_fetch_sub(&p->contexts[phys], 1);
}

static void ctx_init(struct CUctx_st *c, CUdevice dev, bool is_primary)
{
    c->dev = dev;
    c->phys = visible[dev];
    c->primary = is_primary;
    c->refs = 1;
    atomic_store(&c->last_end_ns, 0);
    c->null_stream.ctx = c;
    atomic_store(&c->null_stream.tail_ns, 0);
    c->null_stream.capturing = false;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct CUctx_st *c = &primary[dev];
    if (c->refs > 0)
        c->refs++;
    else if (ctx_charge(dev))
        ctx_init(c, dev, true);
    else
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS)
        *pctx = c;
    return r;
}

static CUresult primary_release(CUdevice dev, bool reset)
{
    NEED_INIT();
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    struct CUctx_st *c = &primary[dev];
    CUresult r = CUDA_SUCCESS;
    if (c->refs <= 0)
        r = reset ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    else if (reset || --c->refs == 0) {
        c->refs = 0;
        ctx_uncharge(c->phys);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev, false);
}

API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_release(dev, true);
}

API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    NEED_INIT();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = primary[dev].refs > 0;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    NEED_INIT();
    return valid_dev(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (ctx_depth >= MAX_CTX_STACK)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!ctx_charge(dev)) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx_init(c, dev, false);
    ctx_stack[ctx_depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, dev);
}

API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                            unsigned int flags, CUdevice dev)
{
    return n < 0 || (n > 0 && !params) ? CUDA_ERROR_INVALID_VALUE : ctx_create(pctx, dev);
}

API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                            CUdevice dev)
{
    return ctx_create(pctx, dev);
}

API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    NEED_INIT();
    if (!ctx || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx) {
            memmove(&ctx_stack[i], &ctx_stack[i + 1], sizeof(CUcontext) * (size_t)(ctx_depth - i - 1));
            ctx_depth--;
            i--;
        }
    ctx_uncharge(ctx->phys);
    free(ctx);
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED_INIT();
    if (!ctx) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current();
    return CUDA_SUCCESS;
}

API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    NEED_INIT();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth >= MAX_CTX_STACK)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    NEED_INIT();
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *device)
{
    NEED_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->dev;
    return CUDA_SUCCESS;
}

#define NEED_CTX(c)                                \
    CUcontext c = current();                       \
    do {                                           \
        if (!initialized)                          \
            return CUDA_ERROR_NOT_INITIALIZED;     \
        if (!c)                                    \
            return CUDA_ERROR_INVALID_CONTEXT;     \
    } while (0)

static void sleep_until(uint64_t t_ns)
{
    uint64_t now = sim_now_ns();
    if (t_ns <= now)
        return;
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ULL),
                          .tv_nsec = (long)(t_ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void pools_sync(int phys);
/* graph memory (below, with the graphs) */
struct CUstream_st;
static CUresult graph_alloc_free(CUdeviceptr dptr);
static CUresult graph_capture_alloc(struct CUstream_st *s, CUdeviceptr *dptr, uint64_t bytes,
                                    int phys);
static CUresult graph_capture_free(struct CUstream_st *s, CUdeviceptr dptr);
struct CUgraph_st;
static void graph_free(struct CUgraph_st *g);

API CUresult cuCtxSynchronize(void)
{
    NEED_CTX(c);
    sleep_until(atomic_load(&c->last_end_ns));
    pools_sync(c->phys);
    return CUDA_SUCCESS;
}

/* ---------- allocation records ---------- */

enum rec_kind { REC_MEM, REC_MANAGED, REC_HOST, REC_POOL, REC_HANDLE, REC_RESERVE, REC_ARRAY,
                REC_MIPMAP, REC_MODULE, REC_MAPPING, REC_GRAPH };

struct CUmemPoolHandle_st;
struct graph_alloc;

struct rec {
    uint64_t key;
    uint64_t size;   /* bytes of the mapping / allocation */
    uint64_t charge; /* bytes of device memory counted */
    int phys;
    enum rec_kind kind;
    struct CUmemPoolHandle_st *pool;
    struct rec *handle; /* REC_MAPPING: the handle mapped there */
    int maps;           /* REC_HANDLE: mappings of it; lock held */
    bool released;      /* REC_HANDLE: released while mapped, freed at its last unmap */
    struct graph_alloc *galloc; /* REC_GRAPH: the allocation node's memory */
    struct rec *next;
};

#define REC_BUCKETS 4096
static struct rec *recs[REC_BUCKETS];
static uint64_t next_handle = 0x1000;

static unsigned rec_bucket(uint64_t key)
{
    return (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 52) % REC_BUCKETS;
}

static struct rec *rec_add(enum rec_kind kind, uint64_t key, uint64_t size, uint64_t charge,
                           int phys)
{
    struct rec *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->key = key;
    r->size = size;
    r->charge = charge;
    r->phys = phys;
    r->kind = kind;
    pthread_mutex_lock(&lock);
    unsigned b = rec_bucket(key);
    r->next = recs[b];
    recs[b] = r;
    pthread_mutex_unlock(&lock);
    return r;
}

/* Unlinks and returns key's record of one of the kinds in mask, or NULL. */
static struct rec *rec_take_locked(uint64_t key, unsigned mask)
{
    struct rec **pp = &recs[rec_bucket(key)], *r;
    for (; (r = *pp); pp = &r->next)
        if (r->key == key && (mask & (1u << r->kind))) {
            *pp = r->next;
            break;
        }
    return r;
}

static struct rec *rec_take(uint64_t key, unsigned mask)
{
    pthread_mutex_lock(&lock);
    struct rec *r = rec_take_locked(key, mask);
    pthread_mutex_unlock(&lock);
    return r;
}

/* key's record of one of the kinds in mask, left in place; NULL if none. Lock held. */
static struct rec *rec_find_locked(uint64_t key, unsigned mask)
{
    for (struct rec *r = recs[rec_bucket(key)]; r; r = r->next)
        if (r->key == key && (mask & (1u << r->kind)))
            return r;
    return NULL;
}

static uint64_t new_handle(void)
{
    pthread_mutex_lock(&lock);
    uint64_t h = next_handle++;
    pthread_mutex_unlock(&lock);
    return h;
}

static void *map_backing(uint64_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Device memory of `size` bytes on phys, charged `charge`: the pointer, or 0. */
static CUresult alloc_device(CUdeviceptr *dptr, uint64_t size, uint64_t charge, int phys,
                             enum rec_kind kind, struct rec **out)
{
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (charge && !sim_take(phys, charge))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = map_backing(size);
    struct rec *r = p ? rec_add(kind, (uint64_t)(uintptr_t)p, size, charge, phys) : NULL;
    if (!r) {
        if (p)
            munmap(p, size);
        sim_give(phys, charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    if (out)
        *out = r;
    return CUDA_SUCCESS;
}

static void rec_free(struct rec *r)
{
    if (r->kind == REC_MEM || r->kind == REC_MANAGED || r->kind == REC_HOST ||
        r->kind == REC_POOL || r->kind == REC_RESERVE || r->kind == REC_GRAPH)
        munmap((void *)(uintptr_t)r->key, r->size ? r->size : 1);
    if (r->charge)
        sim_give(r->phys, r->charge);
    free(r);
}

API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    NEED_CTX(c);
    return alloc_device(dptr, bytesize, bytesize, c->phys, REC_MEM, NULL);
}

API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                unsigned int elem)
{
    NEED_CTX(c);
    if (!pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (p < width || p > SIZE_MAX / height) /* a size past 64 bits: never wrapped */
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = alloc_device(dptr, (uint64_t)p * height, (uint64_t)p * height, c->phys,
                              REC_MEM, NULL);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    NEED_CTX(c);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_device(dptr, bytesize, bytesize, c->phys, REC_MANAGED, NULL);
}

API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    NEED_INIT();
    if (dptr == 0)
        return CUDA_SUCCESS;
    struct rec *r = rec_take(dptr, 1u << REC_MEM | 1u << REC_MANAGED);
    if (!r)
        return graph_alloc_free(dptr);
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    NEED_INIT();
    CUresult res = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    for (unsigned b = 0; b < REC_BUCKETS && res != CUDA_SUCCESS; b++)
        for (struct rec *r = recs[b]; r; r = r->next)
            if ((r->kind == REC_MEM || r->kind == REC_MANAGED || r->kind == REC_POOL) &&
                dptr >= r->key && dptr < r->key + r->size) {
                if (pbase)
                    *pbase = r->key;
                if (psize)
                    *psize = r->size;
                res = CUDA_SUCCESS;
                break;
            }
    pthread_mutex_unlock(&lock);
    return res;
}

API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    NEED_CTX(c);
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t t = sim_config()->memory[c->phys], used = sim_device_used(c->phys);
    if (visible_gi[c->dev]) { /* in a MIG instance: its memory, used by its processes */
        t = mig_memory;
        used = sim_instance_used(c->phys, visible_gi[c->dev]);
    }
    *total = t;
    *free_bytes = used < t ? t - used : 0;
    return CUDA_SUCCESS;
}

static CUresult host_alloc(void **pp, size_t bytes)
{
    NEED_CTX(c);
    if (!pp || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr d;
    CUresult r = alloc_device(&d, bytes, 0, c->phys, REC_HOST, NULL);
    if (r == CUDA_SUCCESS)
        *pp = (void *)(uintptr_t)d;
    return r;
}

API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize);
}

API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    return host_alloc(pp, bytesize);
}

API CUresult cuMemFreeHost(void *p)
{
    NEED_INIT();
    struct rec *r = rec_take((uint64_t)(uintptr_t)p, 1u << REC_HOST);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    NEED_CTX(c);
    if (bytes)
        memcpy((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    NEED_CTX(c);
    sleep_until(atomic_load(&c->last_end_ns));
    if (bytes)
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n)
{
    NEED_CTX(c);
    if (n)
        memset((void *)(uintptr_t)dst, uc, n);
    return CUDA_SUCCESS;
}

/* ---------- virtual memory management ---------- */

static int phys_of_location(const CUmemLocation *loc)
{
    if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_dev(loc->id))
        return -1;
    return visible[loc->id];
}

API CUresult cuMemGetAllocationGranularity(size_t *gran, const CUmemAllocationProp *prop,
                                           CUmemAllocationGranularity_flags option)
{
    NEED_INIT();
    if (!gran || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *gran = GRANULARITY;
    return CUDA_SUCCESS;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                         const CUmemAllocationProp *prop, unsigned long long flags)
{
    NEED_INIT();
    if (!handle || !prop || size == 0 || size % GRANULARITY != 0 ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int phys = phys_of_location(&prop->location);
    if (phys < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!sim_take(phys, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t h = new_handle();
    if (!rec_add(REC_HANDLE, h, size, size, phys)) {
        sim_give(phys, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = h;
    return CUDA_SUCCESS;
}

/* As on a GPU, a handle released while mapped keeps its memory until its last unmap. */
API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED_INIT();
    struct rec *r = rec_take(handle, 1u << REC_HANDLE);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    bool mapped = r->maps > 0;
    r->released = mapped;
    pthread_mutex_unlock(&lock);
    if (!mapped)
        rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                 CUdeviceptr addr, unsigned long long flags)
{
    NEED_INIT();
    if (!ptr || size == 0 || size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!rec_add(REC_RESERVE, (uint64_t)(uintptr_t)p, size, 0, 0)) {
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    NEED_INIT();
    struct rec *r = rec_take(ptr, 1u << REC_RESERVE);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    NEED_INIT();
    if (!ptr || size == 0 || size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct rec *h = recs[rec_bucket(handle)];
    while (h && !(h->key == handle && h->kind == REC_HANDLE))
        h = h->next;
    if (h)
        h->maps++;
    pthread_mutex_unlock(&lock);
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *m = NULL;
    if (mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0 ||
        !(m = rec_add(REC_MAPPING, ptr, size, 0, h->phys))) {
        pthread_mutex_lock(&lock);
        h->maps--;
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    m->handle = h;
    return CUDA_SUCCESS;
}

/* Unmaps the mappings that start in the range, one after the other; a handle released
 * before goes with its last mapping. */
API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    NEED_INIT();
    for (uint64_t va = ptr; size && va < ptr + size;) {
        struct rec *m = rec_take(va, 1u << REC_MAPPING);
        if (!m)
            break;
        struct rec *h = m->handle;
        pthread_mutex_lock(&lock);
        bool gone = --h->maps == 0 && h->released;
        pthread_mutex_unlock(&lock);
        if (gone)
            rec_free(h);
        va += m->size;
        free(m);
    }
    return mprotect((void *)(uintptr_t)ptr, size, PROT_NONE) == 0 ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                            size_t count)
{
    NEED_INIT();
    return ptr && desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------- stream-ordered allocator ---------- */

struct CUmemPoolHandle_st {
    int phys;
    bool is_default;
    bool live;
    uint64_t used, used_high;
    uint64_t reserved, reserved_high;
    uint64_t threshold;
    struct CUmemPoolHandle_st *next;
};

static struct CUmemPoolHandle_st default_pool[SIM_MAX_DEVICES];
static struct CUmemPoolHandle_st *created_pools;
/* destroyed pools are kept (their allocations may still be freed, and a handle destroyed
 * twice is told apart from a live one); 56 bytes each */
static struct CUmemPoolHandle_st *destroyed_pools;

static struct CUmemPoolHandle_st *default_pool_of(int phys)
{
    struct CUmemPoolHandle_st *p = &default_pool[phys];
    if (!p->live) {
        p->phys = phys;
        p->is_default = true;
        p->live = true;
    }
    return p;
}

static uint64_t round_chunk(uint64_t v)
{
    return (v + POOL_CHUNK - 1) / POOL_CHUNK * POOL_CHUNK;
}

/* Shrinks the pool's reservation to max(keep, used rounded to a chunk). Lock held. */
static void pool_trim_locked(struct CUmemPoolHandle_st *p, uint64_t keep)
{
    uint64_t target = round_chunk(p->used);
    if (keep > target)
        target = round_chunk(keep);
    if (p->reserved > target) {
        sim_give(p->phys, p->reserved - target);
        p->reserved = target;
    }
}

static void pools_sync(int phys)
{
    pthread_mutex_lock(&lock);
    struct CUmemPoolHandle_st *d = &default_pool[phys];
    if (d->live && d->reserved > d->threshold)
        pool_trim_locked(d, d->threshold);
    for (struct CUmemPoolHandle_st *p = created_pools; p; p = p->next)
        if (p->phys == phys && p->reserved > p->threshold)
            pool_trim_locked(p, p->threshold);
    pthread_mutex_unlock(&lock);
}

API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    NEED_INIT();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    *pool = default_pool_of(visible[dev]);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return cuDeviceGetDefaultMemPool(pool, dev);
}

API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    NEED_INIT();
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int phys = phys_of_location(&props->location);
    if (phys < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->phys = phys;
    p->live = true;
    pthread_mutex_lock(&lock);
    p->next = created_pools;
    created_pools = p;
    pthread_mutex_unlock(&lock);
    *pool = p;
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    NEED_INIT();
    if (!pool || pool->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct CUmemPoolHandle_st **pp = &created_pools;
    while (*pp && *pp != pool)
        pp = &(*pp)->next;
    bool found = *pp != NULL;
    if (found) {
        *pp = pool->next;
        pool->next = destroyed_pools;
        destroyed_pools = pool;
        /* memory still allocated from a destroyed pool is given back when it is freed;
         * the reservation beyond it goes now */
        pool->live = false;
        pool_trim_locked(pool, 0);
    }
    pthread_mutex_unlock(&lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    NEED_INIT();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    pool_trim_locked(pool, keep);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    NEED_INIT();
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = pool->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = pool->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = pool->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = pool->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = pool->used_high; break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = 1; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    NEED_INIT();
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        pthread_mutex_lock(&lock);
        pool->threshold = *(cuuint64_t *)value;
        pthread_mutex_unlock(&lock);
    }
    return CUDA_SUCCESS;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
    NEED_CTX(c);
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (s && s->capturing)
        return graph_capture_alloc(s, dptr, bytes, pool ? pool->phys : c->phys);
    pthread_mutex_lock(&lock);
    if (!pool)
        pool = default_pool_of(c->phys);
    uint64_t need = round_chunk(pool->used + bytes);
    if (need > pool->reserved) {
        if (!sim_take(pool->phys, need - pool->reserved)) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pool->reserved = need;
        if (need > pool->reserved_high)
            pool->reserved_high = need;
    }
    pool->used += bytes;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    pthread_mutex_unlock(&lock);
    struct rec *r;
    CUresult res = alloc_device(dptr, bytes, 0, pool->phys, REC_POOL, &r);
    if (res == CUDA_SUCCESS) {
        r->pool = pool;
        return res;
    }
    pthread_mutex_lock(&lock);
    pool->used -= bytes;
    pthread_mutex_unlock(&lock);
    return res;
}

API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    return pool_alloc(dptr, bytes, NULL, s);
}

API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    return pool_alloc(dptr, bytes, NULL, s);
}

API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                     CUstream s)
{
    return pool ? pool_alloc(dptr, bytes, pool, s) : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                          CUstream s)
{
    return pool ? pool_alloc(dptr, bytes, pool, s) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult pool_free(CUdeviceptr dptr, CUstream s)
{
    NEED_INIT();
    if (s && s->capturing)
        return graph_capture_free(s, dptr);
    struct rec *r = rec_take(dptr, 1u << REC_POOL | 1u << REC_MEM | 1u << REC_MANAGED);
    if (!r)
        return graph_alloc_free(dptr);
    if (r->kind == REC_POOL) {
        pthread_mutex_lock(&lock);
        r->pool->used -= r->size;
        if (!r->pool->live) /* destroyed pool: nothing holds its memory any more */
            pool_trim_locked(r->pool, 0);
        pthread_mutex_unlock(&lock);
    }
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    return pool_free(dptr, s);
}

API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    return pool_free(dptr, s);
}

/* ---------- arrays ---------- */

static uint64_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT:
        return 4;
    default: return 0;
    }
}

/* The footprint of one level: rows padded to 512 bytes. */
static uint64_t level_bytes(uint64_t elem, uint64_t w, uint64_t h, uint64_t d)
{
    uint64_t row = (w * elem + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    return row * (h ? h : 1) * (d ? d : 1);
}

static uint64_t round_gran(uint64_t v)
{
    return (v + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
}

static CUresult array_create(uint64_t *handle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                             unsigned levels, enum rec_kind kind)
{
    NEED_CTX(c);
    uint64_t elem = format_bytes(d->Format) * d->NumChannels;
    if (!handle || elem == 0 || d->Width == 0 || levels == 0 ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t total = 0, w = d->Width, h = d->Height, dep = d->Depth;
    for (unsigned l = 0; l < levels; l++) {
        total += level_bytes(elem, w, h, dep);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        dep = dep > 1 ? dep / 2 : dep;
    }
    total = round_gran(total);
    if (!sim_take(c->phys, total))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t key = new_handle();
    if (!rec_add(kind, key, total, total, c->phys)) {
        sim_give(c->phys, total);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = key;
    return CUDA_SUCCESS;
}

API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *a)
{
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = {a->Width, a->Height, 0, a->Format, a->NumChannels, 0};
    return array_create((uint64_t *)pHandle, &d, 1, REC_ARRAY);
}

API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    return d ? array_create((uint64_t *)pHandle, d, 1, REC_ARRAY) : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                    unsigned int levels)
{
    return d ? array_create((uint64_t *)pHandle, d, levels, REC_MIPMAP)
             : CUDA_ERROR_INVALID_VALUE;
}

static CUresult array_destroy(uint64_t key, enum rec_kind kind)
{
    NEED_INIT();
    struct rec *r = rec_take(key, 1u << kind);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuArrayDestroy(CUarray a)
{
    return array_destroy((uint64_t)(uintptr_t)a, REC_ARRAY);
}

API CUresult cuMipmappedArrayDestroy(CUmipmappedArray m)
{
    return array_destroy((uint64_t)(uintptr_t)m, REC_MIPMAP);
}

static CUresult array_requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, uint64_t key,
                                   enum rec_kind kind)
{
    NEED_INIT();
    if (!req)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult res = CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    for (struct rec *r = recs[rec_bucket(key)]; r; r = r->next)
        if (r->key == key && r->kind == kind) {
            memset(req, 0, sizeof(*req));
            req->size = r->size;
            req->alignment = GRANULARITY;
            res = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return res;
}

API CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, CUarray a,
                                          CUdevice dev)
{
    return array_requirements(req, (uint64_t)(uintptr_t)a, REC_ARRAY);
}

API CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req,
                                                   CUmipmappedArray m, CUdevice dev)
{
    return array_requirements(req, (uint64_t)(uintptr_t)m, REC_MIPMAP);
}

/* ---------- modules and built-in kernels ---------- */

enum sim_kernel { KERNEL_SLEEP = 1, KERNEL_EMPTY = 2 };
struct CUfunc_st {
    enum sim_kernel kind;
};
static struct CUfunc_st kernel_sleep = {KERNEL_SLEEP}, kernel_empty = {KERNEL_EMPTY};

static bool image_ok(const void *image)
{
    return image && strncmp(image, CARVE_SIM_KERNEL_IMAGE, strlen(CARVE_SIM_KERNEL_IMAGE)) == 0;
}

static CUresult module_load(uint64_t *handle, const void *image)
{
    NEED_CTX(c);
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (!image_ok(image))
        return CUDA_ERROR_INVALID_IMAGE;
    uint64_t charge = sim_config()->module_memory;
    if (charge && !sim_take(c->phys, charge))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t key = new_handle();
    if (!rec_add(REC_MODULE, key, 0, charge, c->phys)) {
        sim_give(c->phys, charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = key;
    return CUDA_SUCCESS;
}

static CUresult module_load_file(uint64_t *handle, const char *fname)
{
    char buf[64] = {0};
    FILE *f = fname ? fopen(fname, "rb") : NULL;
    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return module_load(handle, buf);
}

API CUresult cuModuleLoad(CUmodule *m, const char *fname)
{
    return module_load_file((uint64_t *)m, fname);
}

API CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    return module_load((uint64_t *)m, image);
}

API CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n,
                                CUjit_option *o, void **v)
{
    return module_load((uint64_t *)m, image);
}

API CUresult cuModuleLoadFatBinary(CUmodule *m, const void *fatCubin)
{
    return module_load((uint64_t *)m, fatCubin);
}

API CUresult cuModuleUnload(CUmodule m)
{
    NEED_INIT();
    struct rec *r = rec_take((uint64_t)(uintptr_t)m, 1u << REC_MODULE);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    NEED_INIT();
    if (!f || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (strcmp(name, "carve_sleep") == 0)
        *f = &kernel_sleep;
    else if (strcmp(name, "carve_empty") == 0)
        *f = &kernel_empty;
    else
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}

API CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                               unsigned int nj, CUlibraryOption *lo, void **lv, unsigned int nl)
{
    return module_load((uint64_t *)lib, code);
}

API CUresult cuLibraryLoadFromFile(CUlibrary *lib, const char *fileName, CUjit_option *jo,
                                   void **jv, unsigned int nj, CUlibraryOption *lo, void **lv,
                                   unsigned int nl)
{
    return module_load_file((uint64_t *)lib, fileName);
}

API CUresult cuLibraryUnload(CUlibrary lib)
{
    return cuModuleUnload((CUmodule)lib);
}

/* ---------- streams, events, launches, graphs ---------- */

/* A graph is a list of nodes run in order (the sim keeps no dependency edges): kernels, and
 * the allocation and free nodes of graph memory. */
struct graph_alloc;

struct CUgraphNode_st {
    CUgraphNodeType type; /* KERNEL, MEM_ALLOC or MEM_FREE */
    struct CUfunc_st *f;
    uint64_t ns;
    struct graph_alloc *alloc; /* MEM_ALLOC, MEM_FREE: the allocation; each holds a ref */
};

struct CUgraph_st {
    struct CUgraphNode_st **nodes;
    size_t n, cap;
    struct CUgraphExec_st *exec; /* with allocation nodes: its one executable graph */
};

struct CUgraphExec_st {
    struct CUgraphNode_st *nodes; /* copies; allocations referenced, not copied */
    size_t n;
    unsigned long long flags;
    struct CUgraph_st *graph;
    uint64_t peak[SIM_MAX_DEVICES]; /* most graph memory live at once while it runs */
    bool mapped;                    /* its peak is backed by the device's graph memory */
};

struct CUevent_st {
    _Atomic uint64_t ts_ns;
    bool recorded;
};

static struct CUstream_st *stream_of(CUstream s, CUcontext c)
{
    return s && s != (CUstream)0x1 && s != (CUstream)0x2 ? s : &c->null_stream;
}

API CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
    NEED_CTX(c);
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = c;
    *ph = s;
    return CUDA_SUCCESS;
}

API CUresult cuStreamDestroy_v2(CUstream s)
{
    NEED_INIT();
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->graph)
        graph_free(s->graph);
    free(s);
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream hs)
{
    NEED_CTX(c);
    struct CUstream_st *s = stream_of(hs, c);
    sleep_until(atomic_load(&s->tail_ns));
    pools_sync(s->ctx->phys);
    return CUDA_SUCCESS;
}

API CUresult cuStreamQuery(CUstream hs)
{
    NEED_CTX(c);
    return sim_now_ns() >= atomic_load(&stream_of(hs, c)->tail_ns) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_NOT_READY;
}

API CUresult cuStreamBeginCapture_v2(CUstream hs, CUstreamCaptureMode mode)
{
    NEED_CTX(c);
    if (!hs)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot capture */
    if (hs->capturing)
        return CUDA_ERROR_INVALID_VALUE;
    hs->graph = calloc(1, sizeof(*hs->graph));
    if (!hs->graph)
        return CUDA_ERROR_OUT_OF_MEMORY;
    hs->capturing = true;
    return CUDA_SUCCESS;
}

API CUresult cuStreamEndCapture(CUstream hs, CUgraph *pg)
{
    NEED_INIT();
    if (!hs || !pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hs->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    hs->capturing = false;
    *pg = hs->graph;
    hs->graph = NULL;
    return CUDA_SUCCESS;
}

API CUresult cuStreamIsCapturing(CUstream hs, CUstreamCaptureStatus *st)
{
    NEED_INIT();
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = hs && hs->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

/* The sim enforces no capture-mode rules; it keeps the per-thread mode so that
 * exchanging it round-trips as it does on the real driver. */
static _Thread_local CUstreamCaptureMode thread_capture_mode;

API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    NEED_INIT();
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static uint64_t kernel_ns(struct CUfunc_st *f, void **params)
{
    if (f->kind == KERNEL_SLEEP && params && params[0])
        return *(unsigned long long *)params[0];
    return 0;
}

static void enqueue(struct CUstream_st *s, uint64_t ns)
{
    uint64_t end = sim_run_kernel(s->ctx->phys, atomic_load(&s->tail_ns), ns);
    atomic_store(&s->tail_ns, end);
    uint64_t last = atomic_load(&s->ctx->last_end_ns);
    while (end > last && !atomic_compare_exchange_weak(&s->ctx->last_end_ns, &last, end))
        ;
}

/* ---------- graphs and graph memory ----------
 *
 * Graph memory is modelled on what NVIDIA's programming guide describes: an allocation
 * node's address is fixed when the node is made; physical memory comes from the device's
 * graph memory, which is mapped for an executable graph at its upload or first launch (its
 * peak: the most of its allocations live at once) and stays reserved after the graph is
 * destroyed, until cuDeviceGraphMemTrim gives back what no graph and no live allocation
 * holds. An allocation not freed inside its graph lives on after the launch, until a free
 * node, cuMemFreeAsync or cuMemFree; relaunching a graph whose allocations are still live
 * is an error unless it was instantiated to free them on launch. Lock held throughout. */

struct graph_alloc {
    struct rec *rec; /* the address range (REC_GRAPH, charged nothing) */
    CUdevice dev;
    bool live;
    bool orphan; /* live, while its executable graph is gone: counted in `orphan` */
    int refs;    /* nodes of graphs and executable graphs that name it */
};

static struct {
    uint64_t used, used_high;         /* bytes of live graph allocations */
    uint64_t reserved, reserved_high; /* device memory taken for graphs */
    uint64_t mapped;                  /* peaks of the mapped executable graphs */
    uint64_t orphan;                  /* live allocations whose graph is gone */
} graph_mem[SIM_MAX_DEVICES];

/* Frees a's address range once no node names it and it is not live. */
static void galloc_release_if_unused_locked(struct graph_alloc *a)
{
    if (a->refs > 0 || a->live)
        return;
    struct rec *r = rec_take_locked(a->rec->key, 1u << REC_GRAPH);
    if (r)
        rec_free(r);
    free(a);
}

static void galloc_unref_locked(struct graph_alloc *a)
{
    a->refs--;
    galloc_release_if_unused_locked(a);
}

static void galloc_free_locked(struct graph_alloc *a)
{
    int phys = a->rec->phys;
    a->live = false;
    graph_mem[phys].used -= a->rec->size;
    if (a->orphan) {
        a->orphan = false;
        graph_mem[phys].orphan -= a->rec->size;
    }
}

/* Grows the device's reservation to what mapped graphs and orphans need. */
static bool graph_reserve_locked(int phys)
{
    uint64_t need = graph_mem[phys].mapped + graph_mem[phys].orphan;
    if (need <= graph_mem[phys].reserved)
        return true;
    if (!sim_take(phys, need - graph_mem[phys].reserved))
        return false;
    graph_mem[phys].reserved = need;
    if (need > graph_mem[phys].reserved_high)
        graph_mem[phys].reserved_high = need;
    return true;
}

static void exec_unmap_locked(struct CUgraphExec_st *e)
{
    if (!e->mapped)
        return;
    for (int d = 0; d < SIM_MAX_DEVICES; d++)
        graph_mem[d].mapped -= e->peak[d];
    e->mapped = false;
}

/* Backs e's peak with graph memory: OUT_OF_MEMORY when the device cannot. */
static CUresult exec_map_locked(struct CUgraphExec_st *e)
{
    if (e->mapped)
        return CUDA_SUCCESS;
    e->mapped = true;
    for (int d = 0; d < SIM_MAX_DEVICES; d++) {
        graph_mem[d].mapped += e->peak[d];
        if (e->peak[d] && !graph_reserve_locked(d)) {
            exec_unmap_locked(e);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult graph_append(struct CUgraph_st *g, struct CUgraphNode_st node,
                             CUgraphNode *out)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct CUgraphNode_st **n = realloc(g->nodes, cap * sizeof(*n));
        if (!n)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->nodes = n;
        g->cap = cap;
    }
    struct CUgraphNode_st *copy = malloc(sizeof(*copy));
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *copy = node;
    if (copy->alloc) {
        pthread_mutex_lock(&lock);
        copy->alloc->refs++;
        pthread_mutex_unlock(&lock);
    }
    g->nodes[g->n++] = copy;
    if (out)
        *out = copy;
    return CUDA_SUCCESS;
}

/* A new allocation node's memory: an address range of bytes on phys, charged nothing yet. */
static CUresult graph_alloc_new(struct graph_alloc **out, CUdeviceptr *dptr, uint64_t bytes,
                                int phys, CUdevice dev)
{
    struct graph_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = alloc_device(dptr, bytes, 0, phys, REC_GRAPH, &a->rec);
    if (r != CUDA_SUCCESS) {
        free(a);
        return r;
    }
    a->rec->galloc = a;
    a->dev = dev;
    *out = a;
    return CUDA_SUCCESS;
}

static CUresult add_alloc_node(struct CUgraph_st *g, CUgraphNode *node, CUdeviceptr *dptr,
                               uint64_t bytes, int phys, CUdevice dev)
{
    struct graph_alloc *a;
    CUresult r = graph_alloc_new(&a, dptr, bytes, phys, dev);
    if (r != CUDA_SUCCESS)
        return r;
    r = graph_append(g, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_MEM_ALLOC, NULL, 0, a}, node);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        galloc_release_if_unused_locked(a);
        pthread_mutex_unlock(&lock);
    }
    return r;
}

static CUresult add_free_node(struct CUgraph_st *g, CUgraphNode *node, CUdeviceptr dptr)
{
    pthread_mutex_lock(&lock);
    struct rec *r = rec_find_locked(dptr, 1u << REC_GRAPH);
    struct graph_alloc *a = r ? r->galloc : NULL;
    pthread_mutex_unlock(&lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    return graph_append(g, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_MEM_FREE, NULL, 0, a},
                        node);
}

static CUresult graph_capture_alloc(struct CUstream_st *s, CUdeviceptr *dptr, uint64_t bytes,
                                    int phys)
{
    CUdevice dev = 0;
    for (int i = 0; i < nvisible; i++)
        if (visible[i] == phys)
            dev = i;
    return add_alloc_node(s->graph, NULL, dptr, bytes, phys, dev);
}

static CUresult graph_capture_free(struct CUstream_st *s, CUdeviceptr dptr)
{
    CUresult r = add_free_node(s->graph, NULL, dptr);
    return r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : r;
}

/* cuMemFree or cuMemFreeAsync of a graph allocation outside any graph. */
static CUresult graph_alloc_free(CUdeviceptr dptr)
{
    pthread_mutex_lock(&lock);
    struct rec *r = rec_find_locked(dptr, 1u << REC_GRAPH);
    bool live = r && r->galloc->live;
    if (live) {
        galloc_free_locked(r->galloc);
        galloc_release_if_unused_locked(r->galloc);
    }
    pthread_mutex_unlock(&lock);
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuGraphCreate(CUgraph *pg, unsigned int flags)
{
    NEED_INIT();
    if (!pg || flags)
        return CUDA_ERROR_INVALID_VALUE;
    *pg = calloc(1, sizeof(**pg));
    return *pg ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

API CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                    size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    NEED_INIT();
    if (!node || !g || !p || p->bytesize == 0 || (ndeps && !deps) ||
        p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int phys = phys_of_location(&p->poolProps.location);
    if (phys < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return add_alloc_node(g, node, &p->dptr, p->bytesize, phys, p->poolProps.location.id);
}

API CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                   size_t ndeps, CUdeviceptr dptr)
{
    NEED_INIT();
    if (!node || !g || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    return add_free_node(g, node, dptr);
}

API CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    NEED_INIT();
    if (!g || !n)
        return CUDA_ERROR_INVALID_VALUE;
    if (!nodes) {
        *n = g->n;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < *n; i++)
        nodes[i] = i < g->n ? g->nodes[i] : NULL;
    if (*n > g->n)
        *n = g->n;
    return CUDA_SUCCESS;
}

API CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    NEED_INIT();
    if (!node || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = node->type;
    return CUDA_SUCCESS;
}

API CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *pg)
{
    NEED_INIT();
    return CUDA_ERROR_INVALID_VALUE; /* the sim makes no child graph nodes */
}

API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    NEED_INIT();
    if (!node || !p || node->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof(*p));
    p->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->poolProps.location.id = node->alloc->dev;
    p->bytesize = node->alloc->rec->size;
    p->dptr = node->alloc->rec->key;
    return CUDA_SUCCESS;
}

API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode node, CUdeviceptr *dptr)
{
    NEED_INIT();
    if (!node || !dptr || node->type != CU_GRAPH_NODE_TYPE_MEM_FREE)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr = node->alloc->rec->key;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    NEED_INIT();
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    int phys = visible[dev];
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = graph_mem[phys].used; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = graph_mem[phys].used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = graph_mem[phys].reserved;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = graph_mem[phys].reserved_high;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Executable graphs, for the trim to find those it may unmap. */
static struct exec_link {
    struct CUgraphExec_st *e;
    struct exec_link *next;
} *execs;

static bool exec_holds_live(const struct CUgraphExec_st *e)
{
    for (size_t i = 0; i < e->n; i++)
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && e->nodes[i].alloc->live)
            return true;
    return false;
}

API CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    NEED_INIT();
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    int phys = visible[dev];
    pthread_mutex_lock(&lock);
    for (struct exec_link *l = execs; l; l = l->next)
        if (l->e->peak[phys] && !exec_holds_live(l->e))
            exec_unmap_locked(l->e);
    uint64_t keep = graph_mem[phys].mapped + graph_mem[phys].orphan;
    if (graph_mem[phys].reserved > keep) {
        sim_give(phys, graph_mem[phys].reserved - keep);
        graph_mem[phys].reserved = keep;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static bool allocated_before(const struct CUgraphExec_st *e, size_t i, struct graph_alloc *a)
{
    while (i-- > 0)
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && e->nodes[i].alloc == a)
            return true;
    return false;
}

/* The most of e's allocations live at once, per device, running its nodes in order. */
static void exec_peaks(struct CUgraphExec_st *e)
{
    uint64_t live[SIM_MAX_DEVICES] = {0};
    for (size_t i = 0; i < e->n; i++) {
        struct graph_alloc *a = e->nodes[i].alloc;
        if (!a)
            continue;
        int d = a->rec->phys;
        uint64_t bytes = (a->rec->size + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            live[d] += bytes;
            if (live[d] > e->peak[d])
                e->peak[d] = live[d];
        } else if (allocated_before(e, i, a)) {
            live[d] -= bytes;
        }
    }
}

static bool graph_has_allocs(const struct CUgraph_st *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            return true;
    return false;
}

static CUresult instantiate(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{
    NEED_INIT();
    if (!pe || !g)
        return CUDA_ERROR_INVALID_VALUE;
    bool allocs = graph_has_allocs(g);
    if (allocs && g->exec)
        return CUDA_ERROR_INVALID_VALUE; /* one executable graph at a time for such a graph */
    struct CUgraphExec_st *e = calloc(1, sizeof(*e));
    struct exec_link *l = malloc(sizeof(*l));
    struct CUgraphNode_st *nodes = g->n ? malloc(g->n * sizeof(*nodes)) : NULL;
    if (!e || !l || (g->n && !nodes)) {
        free(e);
        free(l);
        free(nodes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->nodes = nodes;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < g->n; i++) {
        e->nodes[i] = *g->nodes[i];
        if (e->nodes[i].alloc)
            e->nodes[i].alloc->refs++;
    }
    e->n = g->n;
    e->flags = flags;
    exec_peaks(e);
    if (allocs) {
        e->graph = g;
        g->exec = e;
    }
    l->e = e;
    l->next = execs;
    execs = l;
    pthread_mutex_unlock(&lock);
    *pe = e;
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{
    return instantiate(pe, g, flags);
}

static CUresult upload(CUgraphExec e)
{
    pthread_mutex_lock(&lock);
    CUresult r = exec_map_locked(e);
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult instantiate_with_params(CUgraphExec *pe, CUgraph g,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = instantiate(pe, g, p->flags);
    if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        (r = upload(*pe)) != CUDA_SUCCESS)
        cuGraphExecDestroy(*pe);
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                      : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

API CUresult cuGraphInstantiateWithParams(CUgraphExec *pe, CUgraph g,
                                          CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_with_params(pe, g, p);
}

API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g,
                                               CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_with_params(pe, g, p);
}

API CUresult cuGraphUpload(CUgraphExec e, CUstream s)
{
    NEED_INIT();
    return e ? upload(e) : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream s)
{
    return cuGraphUpload(e, s);
}

/* A launch's effect on graph memory: live allocations checked (or freed, with
 * AUTO_FREE_ON_LAUNCH), the peak mapped, then each node's allocation or free. */
static CUresult graph_launch_memory(struct CUgraphExec_st *e)
{
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < e->n && r == CUDA_SUCCESS; i++)
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && e->nodes[i].alloc->live &&
            !(e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        for (size_t i = 0; i < e->n; i++)
            if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && e->nodes[i].alloc->live)
                galloc_free_locked(e->nodes[i].alloc);
    if (r == CUDA_SUCCESS)
        r = exec_map_locked(e);
    for (size_t i = 0; i < e->n && r == CUDA_SUCCESS; i++) {
        struct graph_alloc *a = e->nodes[i].alloc;
        if (!a)
            continue;
        int d = a->rec->phys;
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            a->live = true;
            graph_mem[d].used += a->rec->size;
            if (graph_mem[d].used > graph_mem[d].used_high)
                graph_mem[d].used_high = graph_mem[d].used;
        } else if (a->live) {
            galloc_free_locked(a);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult graph_launch(CUgraphExec e, CUstream hs)
{
    NEED_CTX(c);
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = stream_of(hs, c);
    if (s->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUresult r = graph_launch_memory(e);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < e->n; i++)
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_KERNEL)
            enqueue(s, e->nodes[i].ns);
    return CUDA_SUCCESS;
}

API CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
    return graph_launch(e, s);
}

API CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
    return graph_launch(e, s);
}

API CUresult cuGraphExecDestroy(CUgraphExec e)
{
    NEED_INIT();
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (struct exec_link **pl = &execs; *pl; pl = &(*pl)->next)
        if ((*pl)->e == e) {
            struct exec_link *l = *pl;
            *pl = l->next;
            free(l);
            break;
        }
    exec_unmap_locked(e);
    if (e->graph)
        e->graph->exec = NULL;
    for (size_t i = 0; i < e->n; i++) {
        struct graph_alloc *a = e->nodes[i].alloc;
        if (a && e->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && a->live && !a->orphan) {
            a->orphan = true; /* its memory stays reserved until it is freed */
            graph_mem[a->rec->phys].orphan += a->rec->size;
        }
        if (a)
            galloc_unref_locked(a);
    }
    pthread_mutex_unlock(&lock);
    free(e->nodes);
    free(e);
    return CUDA_SUCCESS;
}

static void graph_free(struct CUgraph_st *g)
{
    pthread_mutex_lock(&lock);
    if (g->exec)
        g->exec->graph = NULL;
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->alloc)
            galloc_unref_locked(g->nodes[i]->alloc);
        free(g->nodes[i]);
    }
    pthread_mutex_unlock(&lock);
    free(g->nodes);
    free(g);
}

API CUresult cuGraphDestroy(CUgraph g)
{
    NEED_INIT();
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    graph_free(g);
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream hs, void **params)
{
    NEED_CTX(c);
    if (!f || (f->kind != KERNEL_SLEEP && f->kind != KERNEL_EMPTY))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = stream_of(hs, c);
    uint64_t ns = kernel_ns(f, params);
    if (s->capturing)
        return graph_append(s->graph, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_KERNEL, f, ns, NULL},
                            NULL);
    enqueue(s, ns);
    return CUDA_SUCCESS;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                            void **extra)
{
    return launch(f, gx, gy, gz, bx, by, bz, s, params);
}

API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                 CUstream s, void **params, void **extra)
{
    return launch(f, gx, gy, gz, bx, by, bz, s, params);
}

static CUresult launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params)
{
    if (!cfg)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX,
                  cfg->blockDimY, cfg->blockDimZ, cfg->hStream, params);
}

API CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params,
                              void **extra)
{
    return launch_ex(cfg, f, params);
}

API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *cfg, CUfunction f, void **params,
                                   void **extra)
{
    return launch_ex(cfg, f, params);
}

API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                       CUstream s, void **params)
{
    return launch(f, gx, gy, gz, bx, by, bz, s, params);
}

API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                            unsigned shm, CUstream s, void **params)
{
    return launch(f, gx, gy, gz, bx, by, bz, s, params);
}

API CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
    NEED_CTX(c);
    if (!pe)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pe = e;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent e, CUstream hs)
{
    NEED_CTX(c);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = sim_now_ns(), tail = atomic_load(&stream_of(hs, c)->tail_ns);
    atomic_store(&e->ts_ns, tail > now ? tail : now);
    e->recorded = true;
    return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent e)
{
    NEED_INIT();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    return sim_now_ns() >= atomic_load(&e->ts_ns) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventSynchronize(CUevent e)
{
    NEED_INIT();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    sleep_until(atomic_load(&e->ts_ns));
    return CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    NEED_INIT();
    if (!ms || !a || !b)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t ta = atomic_load(&a->ts_ns), tb = atomic_load(&b->ts_ns);
    if (sim_now_ns() < (ta > tb ? ta : tb))
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b);
}

API CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b);
}

API CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_INIT();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    return CUDA_SUCCESS;
}

/* ---------- cuGetProcAddress ---------- */

/* The functions of include/carve/driver_entries.def, in its order. */
static void *const entry_fn[] = {
#define CARVE_ENTRY(name, base, ver, flags) (void *)&name,
#include "carve/driver_entries.def"
};

static CUresult proc_lookup(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    bool found_name;
    int i = carve_entry_find(symbol, ver,
                             (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
                             &found_name);
    if (i < 0) {
        *pfn = NULL;
        if (status)
            *status = found_name ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                 : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = entry_fn[i];
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

API CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    return proc_lookup(symbol, pfn, ver, flags, NULL);
}

API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *status)
{
    return proc_lookup(symbol, pfn, ver, flags, status);
}
