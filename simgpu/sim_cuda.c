/* sim_cuda.c - the simulated GPU's driver API (libcuda.so.1): its devices (CUDA_VISIBLE_DEVICES
 * and MIG devices), contexts, and cuGetProcAddress with the real driver's versioning rules over
 * the entry points of every file of the library. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carve/cuda_abi.h"
#include "entries.h"
#include "sim_cuda.h"
#include "sim_mig.h"
#include "sim_mps.h"
#include "simdev.h"
#include "uuid.h"

#define MAX_CTX_STACK 16

/* ---------- devices and CUDA_VISIBLE_DEVICES ---------- */

int sim_cuda__initialized;
int sim_cuda__visible[SIM_MAX_DEVICES]; /* ordinal -> physical index */
unsigned sim_cuda__visible_gi[SIM_MAX_DEVICES]; /* ordinal -> MIG GPU instance ID, 0: whole GPU */
uint64_t sim_cuda__mig_memory; /* the MIG device's memory, when one is visible */
int sim_cuda__nvisible;
pthread_mutex_t sim_cuda__lock = PTHREAD_MUTEX_INITIALIZER;

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
        sim_cuda__mig_memory = p ? p->memory_mib << 20 : 0;
        sim_set_mig(g.gi, sim_cuda__mig_memory);
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
    sim_cuda__nvisible = 0;
    if (!v) {
        for (int i = 0; i < c->ndev; i++)
            sim_cuda__visible[sim_cuda__nvisible++] = i;
        return;
    }
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && sim_cuda__nvisible < SIM_MAX_DEVICES;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned gi;
        int phys = physical_of_entry(tok, c, &gi);
        if (phys < 0)
            break; /* as the driver does: the list ends at the first invalid entry */
        bool dup = false;
        for (int i = 0; i < sim_cuda__nvisible; i++)
            dup |= sim_cuda__visible[i] == phys;
        if (dup)
            break;
        sim_cuda__visible_gi[sim_cuda__nvisible] = gi;
        sim_cuda__visible[sim_cuda__nvisible++] = phys;
        if (gi)
            break; /* as CUDA does: one MIG device per process */
    }
}

API CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
    if (!sim_cuda__initialized) {
        set_visible();
        sim_mps_note_client();
        sim_cuda__initialized = 1;
    }
    pthread_mutex_unlock(&sim_cuda__lock);
    return sim_shared() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

bool sim_cuda__valid_dev(CUdevice d)
{
    return d >= 0 && d < sim_cuda__nvisible;
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
    *count = sim_cuda__nvisible;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    NEED_INIT();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", sim_config()->name);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    NEED_INIT();
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    unsigned char b[16];
    if (carve_uuid_parse(sim_config()->uuid[sim_cuda__visible[dev]], b) < 0)
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
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* a MIG device has its instance's memory */
    *bytes = sim_cuda__visible_gi[dev] ? sim_cuda__mig_memory
                                       : sim_config()->memory[sim_cuda__visible[dev]];
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    NEED_INIT();
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *pi = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = sim_config()->sms; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: /* CUDA has no Exclusive_Thread (1) any more */
        *pi = sim_config()->compute_mode == 1 ? CU_COMPUTEMODE_EXCLUSIVE_PROCESS
                                              : sim_config()->compute_mode;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x10 + sim_cuda__visible[dev]; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH: *pi = 1; break;
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
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(bus, (size_t)len, "00000000:%02X:00.0", 0x10 + sim_cuda__visible[dev]);
    return CUDA_SUCCESS;
}

/* ---------- contexts ---------- */

static struct CUctx_st primary[SIM_MAX_DEVICES];
static _Thread_local CUcontext ctx_stack[MAX_CTX_STACK];
static _Thread_local int ctx_depth;
static _Atomic uint64_t ctx_lives;     /* the last context life handed out */
static struct CUctx_st *ctx_free_list; /* destroyed contexts, under sim_cuda__lock */

CUcontext sim_cuda__current(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

/* CUDA_SUCCESS, or why the device gives this process no context: its compute mode (as a
 * GPU's: Prohibited, or Exclusive_Process held by another process) or its memory. */
static CUresult ctx_charge(CUdevice dev)
{
    int phys = sim_cuda__visible[dev];
    struct sim_proc *p = sim_self();
    int mode = sim_config()->compute_mode;
    if (mode == CU_COMPUTEMODE_PROHIBITED ||
        ((mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS || mode == 1) &&
         sim_device_held_by_other(phys)))
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (!p || !sim_take(phys, sim_config()->ctx_memory))
        return CUDA_ERROR_OUT_OF_MEMORY;
    atomic_fetch_add(&p->contexts[phys], 1);
    atomic_store(&p->mig_gi[phys], sim_cuda__visible_gi[dev]);
    return CUDA_SUCCESS;
}

static void ctx_uncharge(struct CUctx_st *c)
{
    struct sim_proc *p = sim_self();
    int phys = c->phys;
    sim_give(phys, sim_config()->ctx_memory + c->limits_bytes);
    c->limits_bytes = 0;
    if (p && atomic_load(&p->contexts[phys]) > 0)
        atomic_fetch_sub(&p->contexts[phys], 1);
}

static void ctx_init(struct CUctx_st *c, CUdevice dev, bool is_primary)
{
    c->dev = dev;
    c->phys = sim_cuda__visible[dev];
    c->primary = is_primary;
    c->refs = 1;
    c->limits_bytes = 0;
    c->limit[CU_LIMIT_STACK_SIZE] = 1024;
    c->limit[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    c->limit[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    atomic_store(&c->last_mark, 0);
    c->null_stream.ctx = c;
    atomic_store(&c->null_stream.tail, 0);
    c->null_stream.capturing = false;
    c->null_stream.graph = NULL;
    atomic_store(&c->life, atomic_fetch_add(&ctx_lives, 1) + 1);
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_cuda__lock);
    struct CUctx_st *c = &primary[dev];
    if (c->refs > 0)
        c->refs++;
    else if ((r = ctx_charge(dev)) == CUDA_SUCCESS)
        ctx_init(c, dev, true);
    pthread_mutex_unlock(&sim_cuda__lock);
    if (r == CUDA_SUCCESS)
        *pctx = c;
    return r;
}

static CUresult primary_release(CUdevice dev, bool reset)
{
    NEED_INIT();
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_cuda__lock);
    struct CUctx_st *c = &primary[dev];
    CUresult r = CUDA_SUCCESS;
    if (c->refs <= 0)
        r = reset ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    else if (reset || --c->refs == 0) {
        c->refs = 0;
        atomic_store(&c->life, 0); /* its events go with it */
        ctx_uncharge(c);
    }
    pthread_mutex_unlock(&sim_cuda__lock);
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
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = primary[dev].refs > 0;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    NEED_INIT();
    return sim_cuda__valid_dev(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (ctx_depth >= MAX_CTX_STACK)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* a destroyed context's memory is used again (its handle too, as a driver's may be):
     * never freed, so that its dead events can still tell that it went */
    pthread_mutex_lock(&sim_cuda__lock);
    struct CUctx_st *c = ctx_free_list;
    if (c)
        ctx_free_list = c->next_free;
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!c && !(c = calloc(1, sizeof(*c))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = ctx_charge(dev);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&sim_cuda__lock);
        c->next_free = ctx_free_list;
        ctx_free_list = c;
        pthread_mutex_unlock(&sim_cuda__lock);
        return r;
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

/* A green context: a context of the whole simulated GPU (the sim has no SM partitions), made
 * without being made current; desc is not read. */
API CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                              unsigned int flags)
{
    CUcontext c;
    if (!phCtx || !(flags & CU_GREEN_CTX_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_create(&c, dev);
    if (r != CUDA_SUCCESS)
        return r;
    ctx_depth--; /* made current by ctx_create */
    *phCtx = (CUgreenCtx)c;
    return CUDA_SUCCESS;
}

API CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    NEED_INIT();
    if (!pContext || !hCtx)
        return CUDA_ERROR_INVALID_VALUE;
    *pContext = (CUcontext)hCtx;
    return CUDA_SUCCESS;
}

static CUresult ctx_destroy(CUcontext ctx);

/* (not through cuCtxDestroy_v2, which libcarve wraps: the wrapper would run twice) */
API CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    return ctx_destroy((CUcontext)hCtx);
}

API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    NEED_INIT();
    if (!ctx || ctx->primary || !atomic_load(&ctx->life))
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx) {
            memmove(&ctx_stack[i], &ctx_stack[i + 1], sizeof(CUcontext) * (size_t)(ctx_depth - i - 1));
            ctx_depth--;
            i--;
        }
    pthread_mutex_lock(&sim_cuda__lock);
    ctx_uncharge(ctx); /* its limits' memory is read under the lock */
    atomic_store(&ctx->life, 0); /* its events go with it */
    ctx->next_free = ctx_free_list;
    ctx_free_list = ctx;
    pthread_mutex_unlock(&sim_cuda__lock);
    return CUDA_SUCCESS;
}

/* The memory the current context's limits take, as a GPU's driver takes it when they are
 * set: a stack for each thread the GPU holds at once (2048 per SM), and the heap, beyond
 * what the context starts with (its defaults are in CARVE_SIM_CTX_MEMORY). */
static uint64_t limits_bytes(const struct CUctx_st *c)
{
    uint64_t stack = c->limit[CU_LIMIT_STACK_SIZE], heap = c->limit[CU_LIMIT_MALLOC_HEAP_SIZE];
    stack = stack > 1024 ? (stack - 1024) * 2048 * (uint64_t)sim_config()->sms : 0;
    return stack + (heap > (8 << 20) ? heap - (8 << 20) : 0);
}

API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    NEED_CTX(c);
    if (limit < CU_LIMIT_STACK_SIZE || limit > CU_LIMIT_MALLOC_HEAP_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
    uint64_t old = c->limit[limit], before = c->limits_bytes;
    c->limit[limit] = value;
    uint64_t after = limits_bytes(c);
    bool ok = after <= before || sim_take(c->phys, after - before);
    if (ok && after < before)
        sim_give(c->phys, before - after);
    if (ok)
        c->limits_bytes = after;
    else
        c->limit[limit] = old;
    pthread_mutex_unlock(&sim_cuda__lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
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
    *pctx = sim_cuda__current();
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
    CUcontext c = sim_cuda__current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->dev;
    return CUDA_SUCCESS;
}

void sim_cuda__sleep_until(uint64_t t_ns)
{
    uint64_t now = sim_now_ns();
    if (t_ns <= now)
        return;
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ULL),
                          .tv_nsec = (long)(t_ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

API CUresult cuCtxSynchronize(void)
{
    NEED_CTX(c);
    sim_cuda__wait_mark(c->phys, atomic_load(&c->last_mark));
    sim_cuda__pools_sync(c->phys);
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
