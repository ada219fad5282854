/* sim_exec.c - the simulated driver's execution: modules holding the built-in kernels,
 * streams on each device's shared kernel timeline, launches (into a graph while a stream
 * captures; also the multi-device and pre-CUDA-4.0 forms), and events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carve/cuda_abi.h"
#include "sim_cuda.h"
#include "simdev.h"

/* ---------- modules and built-in kernels ---------- */

enum sim_kernel { KERNEL_SLEEP = 1, KERNEL_EMPTY = 2 };
struct CUfunc_st {
    enum sim_kernel kind;
    /* what the launch API before CUDA 4.0 sets on a function before launching it (one
     * process-wide copy per kernel: that API is not thread-safe on a real driver either) */
    unsigned block[3];
    _Alignas(8) unsigned char params[64];
    unsigned param_size;
};
static struct CUfunc_st kernel_sleep = {.kind = KERNEL_SLEEP};
static struct CUfunc_st kernel_empty = {.kind = KERNEL_EMPTY};

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
    uint64_t key = sim_cuda__new_handle();
    if (!sim_cuda__rec_add(REC_MODULE, key, 0, charge, c->phys)) {
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
    struct rec *r = sim_cuda__rec_take((uint64_t)(uintptr_t)m, 1u << REC_MODULE);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_cuda__rec_free(r);
    return CUDA_SUCCESS;
}

/* As a driver that loads lazily (CUDA 12.2's default), a module's first function found takes
 * CARVE_SIM_LAZY_MEMORY more (its code and local memory), held until the module's unload. */
static CUresult module_load_lazily(CUmodule m)
{
    uint64_t lazy = sim_config()->lazy_memory;
    if (!lazy)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *r = sim_cuda__rec_find_locked((uint64_t)(uintptr_t)m, 1u << REC_MODULE);
    bool first = r && !r->loaded_lazily;
    int phys = r ? r->phys : 0;
    if (first)
        r->loaded_lazily = true;
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!first)
        return CUDA_SUCCESS;
    if (!sim_take(phys, lazy)) {
        pthread_mutex_lock(&sim_cuda__lock);
        r->loaded_lazily = false;
        pthread_mutex_unlock(&sim_cuda__lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&sim_cuda__lock);
    r->charge += lazy; /* given back with the module */
    pthread_mutex_unlock(&sim_cuda__lock);
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
    return module_load_lazily(m);
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

/* ---------- streams, launches, events ---------- */

struct CUevent_st {
    _Atomic uint64_t mark; /* the end of the work before it (simdev.h) */
    int phys;              /* the device of the stream it was recorded in */
    bool recorded;
    struct CUctx_st *ctx; /* the context it was made in (never freed: sim_cuda.c) */
    uint64_t life;        /* and that context's life it belongs to */
    struct CUevent_st *prev, *next; /* in `events` */
};

/* Every event not destroyed, under sim_cuda__lock: those whose context went are kept (a use
 * of them is told apart, not a use of freed memory), and stay reachable for leak checkers. */
static struct CUevent_st *events;

/* Whether e went with its context (destroyed, or a primary context released for the last
 * time or reset since e was made): a real driver freed it then, and `call` on it would be a
 * use after free there. Said on stderr, and aborted, with CARVE_SIM_STALE_EVENTS=abort. */
static bool event_stale(CUevent e, const char *call)
{
    if (atomic_load(&e->ctx->life) == e->life)
        return false;
    if (sim_config()->stale_events_abort) {
        fprintf(stderr, "carve simulated GPU: %s on an event whose context was destroyed or "
                        "reset (a use after free on a real driver); aborting "
                        "(CARVE_SIM_STALE_EVENTS=abort)\n", call);
        abort();
    }
    return true;
}

struct CUstream_st *sim_cuda__stream_of(CUstream s, CUcontext c)
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
        sim_cuda__graph_free(s->graph);
    free(s);
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream hs)
{
    NEED_CTX(c);
    struct CUstream_st *s = sim_cuda__stream_of(hs, c);
    sim_cuda__wait_mark(s->ctx->phys, atomic_load(&s->tail));
    sim_cuda__pools_sync(s->ctx->phys);
    return CUDA_SUCCESS;
}

API CUresult cuStreamQuery(CUstream hs)
{
    NEED_CTX(c);
    struct CUstream_st *s = sim_cuda__stream_of(hs, c);
    bool done;
    sim_mark_end(s->ctx->phys, atomic_load(&s->tail), &done);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
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

API CUresult cuStreamGetCtx(CUstream hs, CUcontext *pctx)
{
    NEED_CTX(c);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = sim_cuda__stream_of(hs, c)->ctx;
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

/* Marks of one device order as their kernels end: times, or tickets of one process's
 * kernels, which run in the order they came (sim_sched.c). */
void sim_cuda__enqueue(struct CUstream_st *s, uint64_t ns)
{
    uint64_t mark = sim_run_kernel(s->ctx->phys, atomic_load(&s->tail), ns);
    atomic_store(&s->tail, mark);
    uint64_t last = atomic_load(&s->ctx->last_mark);
    while (mark > last && !atomic_compare_exchange_weak(&s->ctx->last_mark, &last, mark))
        ;
}

void sim_cuda__wait_mark(int phys, uint64_t mark)
{
    for (;;) {
        bool done;
        uint64_t end = sim_mark_end(phys, mark, &done), now = sim_now_ns();
        if (done)
            return;
        /* a time-sliced kernel's end moves on as other processes queue work: look again */
        sim_cuda__sleep_until(end > now ? end : now + 20000);
    }
}

/* An event's mark, as a time once its kernel has ended: a ticket's slot is taken again
 * later, and the time then lost. */
static uint64_t event_end(CUevent e, bool *done)
{
    uint64_t mark = atomic_load(&e->mark), end = sim_mark_end(e->phys, mark, done);
    if (*done && (mark & SIM_TICKET))
        atomic_compare_exchange_strong(&e->mark, &mark, end);
    return end;
}

static bool kernel_ok(CUfunction f)
{
    return f && (f->kind == KERNEL_SLEEP || f->kind == KERNEL_EMPTY);
}

static bool shape_ok(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz)
{
    return gx && gy && gz && bx && by && bz && (uint64_t)bx * by * bz <= 1024;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream hs, void **params)
{
    NEED_CTX(c);
    if (!kernel_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!shape_ok(gx, gy, gz, bx, by, bz))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = sim_cuda__stream_of(hs, c);
    uint64_t ns = kernel_ns(f, params);
    if (s->capturing)
        return sim_cuda__graph_append(
            s->graph, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_KERNEL, f, ns, NULL}, NULL);
    sim_cuda__enqueue(s, ns);
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

/* Deprecated since CUDA 11.3 and still exported: one kernel on each of several devices, each
 * on a stream of its own (not a default stream), no two on one device. */
API CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int n,
                                                  unsigned int flags)
{
    (void)flags;
    NEED_INIT();
    if (!list || n == 0 || n > SIM_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    bool device_used[SIM_MAX_DEVICES] = {false};
    for (unsigned i = 0; i < n; i++) {
        const CUDA_LAUNCH_PARAMS *p = &list[i];
        struct CUstream_st *s = p->hStream;
        if (!s || s == (CUstream)0x1 || s == (CUstream)0x2)
            return CUDA_ERROR_INVALID_HANDLE;
        if (s->capturing)
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        if (!kernel_ok(p->function))
            return CUDA_ERROR_INVALID_HANDLE;
        if (!shape_ok(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                      p->blockDimZ) ||
            device_used[s->ctx->dev])
            return CUDA_ERROR_INVALID_VALUE;
        device_used[s->ctx->dev] = true;
    }
    for (unsigned i = 0; i < n; i++)
        sim_cuda__enqueue(list[i].hStream, kernel_ns(list[i].function, list[i].kernelParams));
    return CUDA_SUCCESS;
}

/* ---------- the launch API before CUDA 4.0 ---------- */

API CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z)
{
    NEED_INIT();
    if (!kernel_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (x <= 0 || y <= 0 || z <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    f->block[0] = (unsigned)x;
    f->block[1] = (unsigned)y;
    f->block[2] = (unsigned)z;
    return CUDA_SUCCESS;
}

API CUresult cuParamSetSize(CUfunction f, unsigned int bytes)
{
    NEED_INIT();
    if (!kernel_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (bytes > sizeof(f->params))
        return CUDA_ERROR_INVALID_VALUE;
    f->param_size = bytes;
    return CUDA_SUCCESS;
}

API CUresult cuParamSetv(CUfunction f, int offset, void *ptr, unsigned int bytes)
{
    NEED_INIT();
    if (!kernel_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!ptr || offset < 0 || (uint64_t)offset + bytes > sizeof(f->params))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(f->params + offset, ptr, bytes);
    return CUDA_SUCCESS;
}

static CUresult launch_legacy(CUfunction f, int gw, int gh, CUstream hs)
{
    if (!kernel_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (gw <= 0 || gh <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* carve_sleep's duration is the first 8 bytes of the parameters set */
    void *params[] = {f->param_size >= sizeof(unsigned long long) ? f->params : NULL};
    return launch(f, (unsigned)gw, (unsigned)gh, 1, f->block[0], f->block[1], f->block[2], hs,
                  params);
}

API CUresult cuLaunch(CUfunction f)
{
    return launch_legacy(f, 1, 1, NULL);
}

API CUresult cuLaunchGrid(CUfunction f, int gw, int gh)
{
    return launch_legacy(f, gw, gh, NULL);
}

API CUresult cuLaunchGridAsync(CUfunction f, int gw, int gh, CUstream hs)
{
    return launch_legacy(f, gw, gh, hs);
}

API CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
    NEED_CTX(c);
    if (!pe)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = c;
    e->life = atomic_load(&c->life);
    pthread_mutex_lock(&sim_cuda__lock);
    e->next = events;
    if (events)
        events->prev = e;
    events = e;
    pthread_mutex_unlock(&sim_cuda__lock);
    *pe = e;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent e, CUstream hs)
{
    NEED_CTX(c);
    if (!e || event_stale(e, "cuEventRecord"))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *s = sim_cuda__stream_of(hs, c);
    bool done;
    uint64_t tail = atomic_load(&s->tail), end = sim_mark_end(s->ctx->phys, tail, &done);
    e->phys = s->ctx->phys;
    atomic_store(&e->mark, done ? (end > sim_now_ns() ? end : sim_now_ns()) : tail);
    e->recorded = true;
    return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent e)
{
    NEED_INIT();
    if (!e || event_stale(e, "cuEventQuery"))
        return CUDA_ERROR_INVALID_HANDLE;
    bool done;
    event_end(e, &done);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventSynchronize(CUevent e)
{
    NEED_INIT();
    if (!e || event_stale(e, "cuEventSynchronize"))
        return CUDA_ERROR_INVALID_HANDLE;
    sim_cuda__wait_mark(e->phys, atomic_load(&e->mark));
    return CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b, const char *call)
{
    NEED_INIT();
    if (!ms || !a || !b || event_stale(a, call) || event_stale(b, call))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    bool done_a, done_b;
    uint64_t ta = event_end(a, &done_a), tb = event_end(b, &done_b);
    if (!done_a || !done_b)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b, "cuEventElapsedTime");
}

API CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b, "cuEventElapsedTime_v2");
}

API CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_INIT();
    if (!e || event_stale(e, "cuEventDestroy_v2"))
        return CUDA_ERROR_INVALID_HANDLE; /* a stale one went with its context: not again */
    pthread_mutex_lock(&sim_cuda__lock);
    if (e->prev)
        e->prev->next = e->next;
    else
        events = e->next;
    if (e->next)
        e->next->prev = e->prev;
    pthread_mutex_unlock(&sim_cuda__lock);
    free(e);
    return CUDA_SUCCESS;
}
