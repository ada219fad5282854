/* graphmem.c - graph memory: what CUDA graphs' allocation nodes take from a device counts
 * against the slice as what the device's graph memory reserves, as pool.c counts a pool.
 *
 * The driver maps an executable graph's allocations when the graph is uploaded or first
 * launched, and keeps that memory reserved across launches and after the graph is gone
 * (until cuDeviceGraphMemTrim). So an executable graph's allocation nodes are read when it
 * is instantiated (their bytes, per device) and kept in a lock-free map; a launch or upload
 * of such a graph first admits the most the reservation can grow (those bytes less what is
 * reserved and unused), and a launch uploads the graph before it, so that the driver maps
 * its memory before any of its work is queued: growth the slice cannot take then refuses
 * the launch with CUDA_ERROR_OUT_OF_MEMORY, and the memory is trimmed back. A launch of a
 * graph without allocation nodes pays one relaxed load for all this, and takes no lock. */
#include "libcarve.h"

#include "allocmap.h"

#include <pthread.h>
#include <stdlib.h>

#define GRAPH_MAX_CU 64    /* CUDA ordinals whose graph memory is followed */
#define NEED_MAX_DEVS 16   /* devices one graph allocates on */
#define CHILD_DEPTH_MAX 16 /* nesting of child graphs walked */

/* What one executable graph's allocation nodes add up to, per device. The driver reuses the
 * memory of an allocation the graph frees for a later one, so what it maps lies between
 * `floor` (its largest allocation, or all those it leaves live, whichever is more) and
 * `bytes` (all of them). */
struct graph_need {
    _Atomic bool uploaded; /* once: its memory was mapped and counted */
    int n;
    struct {
        CUdevice cu;
        uint64_t bytes;
        uint64_t floor;
    } dev[NEED_MAX_DEVS];
};

/* One launch's or upload's admission, device by device. */
struct graph_admission {
    int n;
    int failed; /* the device that did not fit, when one did not */
    struct {
        struct carve_dev d;
        uint64_t bytes; /* the graph's allocations there */
        uint64_t floor; /* the least of them it maps */
        uint64_t admitted;
        uint64_t requested; /* what did not fit, for the OOM line */
    } dev[NEED_MAX_DEVS];
};

/* Graph memory changes one at a time in the process: an upload and the launch after it, a
 * settling, a trim, a refresh. A trim between one thread's upload and its launch would unmap
 * that graph and the launch map it again, uncounted; a reserve read by one thread and a
 * charge moved by another would count memory twice or not at all. Taken only for graphs
 * with allocation nodes, and by a refresh while graph memory is counted; the thread that
 * holds it takes it again freely (admission refreshes). */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int graph_lock_depth;

static void graph_lock_take(void)
{
    if (graph_lock_depth++ == 0)
        pthread_mutex_lock(&graph_lock);
}

static void graph_lock_drop(void)
{
    if (--graph_lock_depth == 0)
        pthread_mutex_unlock(&graph_lock);
}

_Atomic int carve__graph_execs; /* executable graphs in the map */
static struct carve_allocmap needs; /* CUgraphExec -> struct graph_need * */
static _Atomic uint64_t charged[GRAPH_MAX_CU]; /* bytes counted for each device's graph memory */

void carve__graph_reset(void)
{
    /* a fork child: another thread of the parent may have held it */
    pthread_mutex_init(&graph_lock, NULL);
    graph_lock_depth = 0;
    for (int i = 0; i < GRAPH_MAX_CU; i++)
        atomic_store(&charged[i], 0);
    atomic_store(&carve__graph_execs, 0);
    carve_allocmap_reset(&needs); /* the needs themselves are the parent's: left alone */
}

bool carve__capturing(CUstream stream)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return R.cuStreamIsCapturing && R.cuStreamIsCapturing(stream, &cs) == CUDA_SUCCESS &&
           cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

static bool graph_attr(CUdevice cu, CUgraphMem_attribute attr, uint64_t *value)
{
    cuuint64_t v = 0;
    if (!R.cuDeviceGetGraphMemAttribute ||
        R.cuDeviceGetGraphMemAttribute(cu, attr, &v) != CUDA_SUCCESS)
        return false;
    *value = v;
    return true;
}

/* ---- instantiation: what a graph's allocation nodes add up to ---- */

/* The allocation and free nodes met on a walk, to tell the allocations the graph frees. */
struct walk {
    struct walk_alloc {
        CUdeviceptr ptr;
        CUdevice cu;
        uint64_t bytes;
    } *allocs;
    CUdeviceptr *freed;
    size_t nallocs, nfreed, allocs_cap, freed_cap;
    bool lost; /* out of memory: some node is not in the lists */
};

/* Room for one more element in *arr (n used of *cap); false when none could be had. */
static bool walk_room(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t more = *cap ? *cap * 2 : 64;
    void *grown = realloc(*arr, more * elem);
    if (!grown)
        return false;
    *arr = grown;
    *cap = more;
    return true;
}

static void walk_alloc(struct walk *w, struct graph_need *need,
                       const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    CUdevice cu = p->poolProps.location.id;
    int i = 0;
    while (i < need->n && need->dev[i].cu != cu)
        i++;
    if (i == need->n && need->n < NEED_MAX_DEVS)
        need->dev[need->n++] = (__typeof__(need->dev[0])){cu, 0, 0};
    if (i < need->n) {
        need->dev[i].bytes += p->bytesize;
        if (p->bytesize > need->dev[i].floor) /* the largest, until walk_settle */
            need->dev[i].floor = p->bytesize;
    }
    if (walk_room((void **)&w->allocs, &w->allocs_cap, w->nallocs, sizeof(*w->allocs)))
        w->allocs[w->nallocs++] = (struct walk_alloc){p->dptr, cu, p->bytesize};
    else
        w->lost = true;
}

static void walk_free(struct walk *w, CUgraphNode node)
{
    CUdeviceptr p;
    if (!R.cuGraphMemFreeNodeGetParams || R.cuGraphMemFreeNodeGetParams(node, &p) != CUDA_SUCCESS)
        return; /* taken for a free of memory from outside the graph */
    if (walk_room((void **)&w->freed, &w->freed_cap, w->nfreed, sizeof(*w->freed)))
        w->freed[w->nfreed++] = p;
}

static void need_walk(CUgraph graph, struct graph_need *need, struct walk *w, int depth)
{
    size_t n = 0;
    if (depth > CHILD_DEPTH_MAX || !R.cuGraphGetNodes || !R.cuGraphNodeGetType ||
        R.cuGraphGetNodes(graph, NULL, &n) != CUDA_SUCCESS || n == 0)
        return;
    CUgraphNode *nodes = malloc(n * sizeof(*nodes));
    if (!nodes || R.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) {
        free(nodes);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType type;
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        CUgraph child;
        if (R.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
            continue;
        if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && R.cuGraphMemAllocNodeGetParams &&
            R.cuGraphMemAllocNodeGetParams(nodes[i], &p) == CUDA_SUCCESS &&
            p.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
            walk_alloc(w, need, &p);
        else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            walk_free(w, nodes[i]);
        else if (type == CU_GRAPH_NODE_TYPE_GRAPH && R.cuGraphChildGraphNodeGetGraph &&
                 R.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS)
            need_walk(child, need, w, depth + 1);
    }
    free(nodes);
}

static int ptr_cmp(const void *a, const void *b)
{
    CUdeviceptr x = *(const CUdeviceptr *)a, y = *(const CUdeviceptr *)b;
    return (x > y) - (x < y);
}

/* Each device's floor: its largest allocation, or those the graph does not free if more. */
static void walk_settle(struct walk *w, struct graph_need *need)
{
    uint64_t kept[NEED_MAX_DEVS] = {0};
    if (w->nfreed) /* freed is NULL when the graph frees nothing: qsort's pointer must not be */
        qsort(w->freed, w->nfreed, sizeof(*w->freed), ptr_cmp);
    for (size_t k = 0; k < w->nallocs; k++) {
        const struct walk_alloc *al = &w->allocs[k];
        if (w->nfreed && bsearch(&al->ptr, w->freed, w->nfreed, sizeof(*w->freed), ptr_cmp))
            continue;
        for (int i = 0; i < need->n; i++)
            if (need->dev[i].cu == al->cu)
                kept[i] += al->bytes;
    }
    for (int i = 0; i < need->n; i++) {
        if (w->lost) /* not every allocation seen: none is taken as freed */
            kept[i] = need->dev[i].bytes;
        if (kept[i] > need->dev[i].floor)
            need->dev[i].floor = kept[i];
    }
    free(w->allocs);
    free(w->freed);
}

/* Notes exec, just made from graph, when its allocation nodes take memory on a device of
 * the slice. */
static struct graph_need *need_of(CUgraphExec exec);

/* Drops what is noted of exec: destroyed, or a handle the driver hands out again after it
 * freed the graph without cuGraphExecDestroy (its context destroyed or reset). */
static void forget_exec(CUgraphExec exec)
{
    uint64_t v;
    if (!atomic_load_explicit(&carve__graph_execs, memory_order_relaxed) || !need_of(exec))
        return;
    graph_lock_take(); /* not while a launch of it reads its need */
    if (carve_allocmap_remove(&needs, (uint64_t)(uintptr_t)exec, &v)) {
        free((void *)(uintptr_t)v);
        atomic_fetch_sub(&carve__graph_execs, 1);
    }
    graph_lock_drop();
}

static void note_exec(CUgraphExec exec, CUgraph graph)
{
    forget_exec(exec); /* a new graph at a stale one's address */
    struct graph_need walked = {0};
    struct walk w = {0};
    need_walk(graph, &walked, &w, 0);
    walk_settle(&w, &walked);
    struct carve_dev d;
    struct graph_need *need = NULL;
    for (int i = 0; i < walked.n; i++)
        if (walked.dev[i].bytes && carve__dev_of(walked.dev[i].cu, &d)) {
            need = malloc(sizeof(*need));
            break;
        }
    if (!need)
        return;
    *need = walked;
    if (carve_allocmap_insert(&needs, (uint64_t)(uintptr_t)exec, (uint64_t)(uintptr_t)need) !=
        0) {
        free(need); /* not followed: its launches are not counted (see docs/memory.md) */
        return;
    }
    atomic_fetch_add(&carve__graph_execs, 1);
}

static struct graph_need *need_of(CUgraphExec exec)
{
    uint64_t v;
    return carve_allocmap_find(&needs, (uint64_t)(uintptr_t)exec, &v)
               ? (struct graph_need *)(uintptr_t)v
               : NULL;
}

/* ---- admission ---- */

/* Gives back what the device's graph memory no longer reserves. */
static bool refresh_one(CUdevice cu)
{
    struct carve_dev d;
    uint64_t reserved;
    bool gave = false;
    if (atomic_load(&charged[cu]) == 0 || !carve__dev_of(cu, &d))
        return false;
    graph_lock_take();
    uint64_t old = atomic_load(&charged[cu]);
    if (graph_attr(cu, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) && reserved < old) {
        atomic_store(&charged[cu], reserved);
        carve__release(d.sdev, old - reserved);
        gave = true;
    }
    graph_lock_drop();
    return gave;
}

bool carve__graph_refresh(void)
{
    bool any = false;
    for (CUdevice cu = 0; cu < GRAPH_MAX_CU; cu++)
        if (atomic_load_explicit(&charged[cu], memory_order_relaxed))
            any |= refresh_one(cu);
    return any;
}

/* The devices of need that the slice caps, each admitted nothing yet. */
static void admission_init(struct graph_admission *a, const struct graph_need *need)
{
    a->n = 0;
    a->failed = -1;
    for (int i = 0; i < need->n; i++) {
        struct carve_dev d;
        if (carve__dev_of(need->dev[i].cu, &d) && d.cu < GRAPH_MAX_CU) {
            a->dev[a->n].d = d;
            a->dev[a->n].bytes = need->dev[i].bytes;
            a->dev[a->n].floor = need->dev[i].floor;
            a->dev[a->n].requested = need->dev[i].bytes;
            a->dev[a->n++].admitted = 0;
        }
    }
}

static bool admit_some(int sdev, uint64_t bytes)
{
    return bytes == 0 || carve__try_admit(sdev, bytes) ||
           (carve__pools_refresh() && carve__try_admit(sdev, bytes)) ||
           (carve__overhead_refresh() && carve__try_admit(sdev, bytes));
}

static uint64_t less(uint64_t x, uint64_t y)
{
    return x > y ? x - y : 0;
}

/* Admits, on each device, the most its graph memory can grow: the graph's bytes less what
 * is reserved and unused, or, when the slice cannot take that, its floor less the same (the
 * graph may reuse the memory it frees; the settling after the call admits the rest or
 * refuses). OUT_OF_MEMORY (nothing admitted; a->failed: the device) when not even the floor
 * fits, unless `lenient`: then that device is admitted nothing and its settling decides. (A
 * graph mapped before may need nothing new though its own live allocations count as used:
 * a relaunch with AUTO_FREE_ON_LAUNCH.) */
static CUresult admit_need(struct graph_admission *a, const struct graph_need *need,
                           bool lenient)
{
    admission_init(a, need);
    for (int i = 0; i < a->n; i++) {
        const struct carve_dev *d = &a->dev[i].d;
        uint64_t reserved = 0, used = 0, unused = 0;
        if (graph_attr(d->cu, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) &&
            graph_attr(d->cu, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used))
            unused = less(reserved, used);
        uint64_t most = less(a->dev[i].bytes, unused), least = less(a->dev[i].floor, unused);
        if (admit_some(d->sdev, most)) {
            a->dev[i].admitted = most;
        } else if (least < most && admit_some(d->sdev, least)) {
            a->dev[i].admitted = least;
        } else if (!lenient) {
            for (int j = 0; j < i; j++)
                carve__release(a->dev[j].d.sdev, a->dev[j].admitted);
            a->failed = i;
            a->dev[i].requested = least;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    return CUDA_SUCCESS;
}

/* carve's line for the device that did not fit. */
static void admission_oom_message(const struct graph_admission *a)
{
    if (a->failed >= 0)
        carve__oom_message(&a->dev[a->failed].d, a->dev[a->failed].requested);
}

/* After the driver call: each device's charge moves to what its graph memory reserves, the
 * admission paying for growth first. Growth past the slice is, with `undo` (an upload:
 * nothing was queued), trimmed back, and OUT_OF_MEMORY returned; else (a launch went
 * through) counted all the same, since the driver holds it. */
static CUresult settle_all(struct graph_admission *a, CUresult called, bool undo)
{
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < a->n; i++) {
        CUdevice cu = a->dev[i].d.cu;
        int sdev = a->dev[i].d.sdev;
        uint64_t reserved;
        if (called != CUDA_SUCCESS) {
            carve__release(sdev, a->dev[i].admitted);
            continue;
        }
        if (!graph_attr(cu, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved)) {
            /* the driver went ahead and will not say what it reserves: the admission stays
               charged, settled by the next refresh that reads it (it was given back) */
            atomic_fetch_add(&charged[cu], a->dev[i].admitted);
            continue;
        }
        if (carve__settle_reserve(&charged[cu], sdev, reserved, a->dev[i].admitted))
            continue;
        if (!undo) {
            carve__force_reserve(&charged[cu], sdev, reserved);
            continue;
        }
        a->dev[i].requested = less(reserved, atomic_load(&charged[cu]));
        if (R.cuDeviceGraphMemTrim)
            R.cuDeviceGraphMemTrim(cu);
        refresh_one(cu);
        a->failed = i;
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

/* An upload of exec with its memory admitted. Memory that other graphs keep mapped may be
 * why it does not fit: then, once, the devices' graph memory is trimmed and it is tried
 * again (the driver maps those graphs again at their next launch). */
static CUresult upload_admitted(CUgraphExec exec, CUstream stream, struct graph_need *need,
                                carve_graph_call upload)
{
    struct graph_admission a;
    for (int attempt = 0;; attempt++) {
        CUresult r = admit_need(&a, need, atomic_load(&need->uploaded));
        if (r != CUDA_SUCCESS)
            break;
        CUresult called = upload(exec, stream);
        r = settle_all(&a, called, true);
        if (called == CUDA_SUCCESS && r == CUDA_SUCCESS)
            atomic_store(&need->uploaded, true);
        if (called != CUDA_SUCCESS || r == CUDA_SUCCESS)
            return called;
        if (attempt == 1)
            break;
    }
    admission_oom_message(&a);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult carve__graph_launch(CUgraphExec exec, CUstream stream, carve_graph_call launch,
                             carve_graph_call upload)
{
    CARVE_MEM_CALL();
    carve__note_ran();
    /* launched into a capture, it becomes a node of another graph: nothing is mapped now */
    bool counted = need_of(exec) && !carve__capturing(stream);
    bool paced = atomic_load_explicit(&carve__pacing, memory_order_relaxed);
    struct carve_launch L;
    if (paced) /* held before the lock, not with it */
        carve__launch_begin(&L, (uint64_t)(uintptr_t)exec, stream);
    if (counted)
        graph_lock_take();
    struct graph_need *need = counted ? need_of(exec) : NULL; /* destroyed meanwhile? */
    struct graph_admission a = {0};
    CUresult r = CUDA_SUCCESS;
    if (need && upload) /* map its memory while nothing of it is queued */
        r = upload_admitted(exec, stream, need, upload);
    else if (need && (r = admit_need(&a, need, false)) != CUDA_SUCCESS)
        admission_oom_message(&a);
    if (r == CUDA_SUCCESS) {
        r = launch(exec, stream);
        if (need && upload) /* uploaded and settled: the launch itself should grow nothing */
            admission_init(&a, need);
        if (need)
            settle_all(&a, r, false); /* whatever it grew is counted */
    }
    if (counted)
        graph_lock_drop();
    if (paced)
        carve__launch_end(&L, r);
    return r;
}

static CUresult graph_upload(CUgraphExec exec, CUstream stream, carve_graph_call upload)
{
    if (!need_of(exec) || carve__capturing(stream))
        return upload(exec, stream);
    graph_lock_take();
    struct graph_need *need = need_of(exec);
    CUresult r = need ? upload_admitted(exec, stream, need, upload) : upload(exec, stream);
    graph_lock_drop();
    return r;
}

/* ---- the wrappers ---- */

static CUresult instantiated(CUresult r, CUgraphExec *exec, CUgraph graph)
{
    if (r == CUDA_SUCCESS && carve__active())
        note_exec(*exec, graph);
    return r;
}

CARVE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                                  unsigned long long flags)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuGraphInstantiateWithFlags)
        return CUDA_ERROR_NOT_INITIALIZED;
    return instantiated(R.cuGraphInstantiateWithFlags(exec, graph, flags), exec, graph);
}

/* What the runtimes of CUDA 10 and 11 call (cudaGraphInstantiate), which programs built with
 * them still reach on today's driver; both have one signature. */
static CUresult instantiate_logged(__typeof__(&cuGraphInstantiate_v2) real, CUgraphExec *exec,
                                   CUgraph graph, CUgraphNode *err_node, char *log,
                                   size_t log_size)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    return instantiated(real(exec, graph, err_node, log, log_size), exec, graph);
}

CARVE_EXPORT CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *err_node,
                                         char *log, size_t log_size)
{
    CARVE_MEM_CALL();
    carve__init();
    return instantiate_logged(R.cuGraphInstantiate, exec, graph, err_node, log, log_size);
}

CARVE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph,
                                            CUgraphNode *err_node, char *log, size_t log_size)
{
    CARVE_MEM_CALL();
    carve__init();
    return instantiate_logged(R.cuGraphInstantiate_v2, exec, graph, err_node, log, log_size);
}

/* With CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the driver would upload inside the call, before
 * the graph is known here: instantiate without it, then upload through the admission. */
static CUresult instantiate_with_params(CUgraphExec *exec, CUgraph graph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                        __typeof__(&cuGraphInstantiateWithParams) real,
                                        carve_graph_call upload)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!params || !exec || !carve__active())
        return real(exec, graph, params);
    bool upload_now = (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) && upload;
    CUDA_GRAPH_INSTANTIATE_PARAMS mine = *params;
    if (upload_now)
        mine.flags &= ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    CUresult r = real(exec, graph, &mine);
    params->hErrNode_out = mine.hErrNode_out;
    params->result_out = mine.result_out;
    if (r != CUDA_SUCCESS)
        return r;
    note_exec(*exec, graph);
    if (upload_now && (r = graph_upload(*exec, params->hUploadStream, upload)) !=
                          CUDA_SUCCESS) {
        cuGraphExecDestroy(*exec);
        *exec = NULL;
        params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    }
    return r;
}

CARVE_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    CARVE_MEM_CALL();
    carve__init(); /* before the real pointers are read */
    return instantiate_with_params(exec, graph, params, R.cuGraphInstantiateWithParams,
                                   R.cuGraphUpload);
}

CARVE_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph graph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    CARVE_MEM_CALL();
    carve__init();
    return instantiate_with_params(exec, graph, params, R.cuGraphInstantiateWithParams_ptsz,
                                   R.cuGraphUpload_ptsz);
}

CARVE_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream stream)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuGraphUpload)
        return CUDA_ERROR_NOT_INITIALIZED;
    return graph_upload(exec, stream, R.cuGraphUpload);
}

CARVE_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream stream)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuGraphUpload_ptsz)
        return CUDA_ERROR_NOT_INITIALIZED;
    return graph_upload(exec, stream, R.cuGraphUpload_ptsz);
}

CARVE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuGraphExecDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    forget_exec(exec);
    /* its memory stays reserved for other graphs until a trim: nothing to give back yet */
    return R.cuGraphExecDestroy(exec);
}

CARVE_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuDeviceGraphMemTrim)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* not between another thread's upload and its launch */
    graph_lock_take();
    CUresult r = R.cuDeviceGraphMemTrim(device);
    if (r == CUDA_SUCCESS && device >= 0 && device < GRAPH_MAX_CU)
        refresh_one(device);
    graph_lock_drop();
    return r;
}
