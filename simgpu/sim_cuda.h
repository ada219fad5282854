/* sim_cuda.h - what the files of the simulated driver API (libcuda.so.1) share: the visible
 * devices and the lock, contexts and streams, allocation records, and the few calls between
 * memory, execution and graphs.
 *
 * Prefix sim_cuda__ for everything shared; nothing here is exported (-fvisibility=hidden),
 * only the entry points marked API. Calls between entry points go to these functions (and
 * -Bsymbolic keeps the few direct ones inside the library), never out through exported
 * names, so an interposer in front of this library sees each application call once. */
#ifndef CARVE_SIM_CUDA_H
#define CARVE_SIM_CUDA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "carve/cuda_abi.h"
#include "simdev.h"

#define API __attribute__((visibility("default")))
#define GRANULARITY (2ULL << 20)

/* ---- sim_cuda.c: devices and contexts ---- */
extern int sim_cuda__initialized;
extern int sim_cuda__visible[SIM_MAX_DEVICES];        /* ordinal -> physical index */
extern unsigned sim_cuda__visible_gi[SIM_MAX_DEVICES]; /* ordinal -> MIG GPU instance ID */
extern uint64_t sim_cuda__mig_memory; /* the MIG device's memory, when one is visible */
extern int sim_cuda__nvisible;
/* held over cuInit, the primary contexts, the records, the pools and graph memory */
extern pthread_mutex_t sim_cuda__lock;

#define NEED_INIT()                      \
    do {                                 \
        if (!sim_cuda__initialized)      \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

#define NEED_CTX(c)                                \
    CUcontext c = sim_cuda__current();             \
    do {                                           \
        if (!sim_cuda__initialized)                \
            return CUDA_ERROR_NOT_INITIALIZED;     \
        if (!c)                                    \
            return CUDA_ERROR_INVALID_CONTEXT;     \
    } while (0)

struct CUstream_st {
    struct CUctx_st *ctx;
    _Atomic uint64_t tail; /* the mark of its last kernel (simdev.h), 0: none */
    bool capturing;
    struct CUgraph_st *graph;
};

struct CUctx_st {
    CUdevice dev; /* ordinal */
    int phys;
    bool primary;
    int refs;
    _Atomic uint64_t last_mark; /* of the kernel of its streams that ends last */
    uint64_t limits_bytes; /* what its stack and heap limits take (cuCtxSetLimit); lock held */
    uint64_t limit[3];     /* CU_LIMIT_STACK_SIZE, _PRINTF_FIFO_SIZE, _MALLOC_HEAP_SIZE */
    struct CUstream_st null_stream;
    /* nonzero while the context lives, a new number each time it is made; 0 once it is
     * destroyed, or (a primary context) released for the last time or reset. Its events keep
     * the number they were made under, and are dead once it changes (sim_exec.c). */
    _Atomic uint64_t life;
    struct CUctx_st *next_free; /* destroyed: kept for the next cuCtxCreate, never freed */
};

bool sim_cuda__valid_dev(CUdevice d);
/* The calling thread's current context, or NULL. */
CUcontext sim_cuda__current(void);
/* Sleeps until t_ns, a time on sim_now_ns's clock. */
void sim_cuda__sleep_until(uint64_t t_ns);

/* ---- sim_mem.c: allocation records ---- */
enum rec_kind { REC_MEM, REC_MANAGED, REC_HOST, REC_POOL, REC_HANDLE, REC_RESERVE, REC_ARRAY,
                REC_MIPMAP, REC_MODULE, REC_MAPPING, REC_GRAPH };

struct CUmemPoolHandle_st;
struct graph_alloc;
struct small_page;

struct rec {
    uint64_t key;
    uint64_t size;   /* bytes of the mapping / allocation */
    uint64_t charge; /* bytes of device memory counted */
    int phys;
    enum rec_kind kind;
    struct CUmemPoolHandle_st *pool;
    struct rec *handle; /* REC_MAPPING: the handle mapped there */
    int maps;           /* REC_HANDLE: mappings of it; lock held */
    int refs;           /* REC_HANDLE: its cuMemCreate and retains not yet released; lock held */
    bool released;      /* REC_HANDLE: every reference released while mapped (out of the
                         * table), freed at its last unmap */
    bool loaded_lazily; /* REC_MODULE: its lazy memory taken (CARVE_SIM_LAZY_MEMORY) */
    struct graph_alloc *galloc; /* REC_GRAPH: the allocation node's memory */
    struct small_page *page;    /* REC_MEM up to 1 MiB: the page it was packed into */
    struct rec *next;
};

struct rec *sim_cuda__rec_add(enum rec_kind kind, uint64_t key, uint64_t size, uint64_t charge,
                              int phys);
struct rec *sim_cuda__rec_take(uint64_t key, unsigned mask);
struct rec *sim_cuda__rec_take_locked(uint64_t key, unsigned mask);
struct rec *sim_cuda__rec_find_locked(uint64_t key, unsigned mask);
/* Frees r: its mapping (for the kinds that have one) and its charge with it. */
void sim_cuda__rec_free(struct rec *r);
/* A fresh key for a record that has no address (a handle, an array, a module). */
uint64_t sim_cuda__new_handle(void);
CUresult sim_cuda__alloc_device(CUdeviceptr *dptr, uint64_t size, uint64_t charge, int phys,
                                enum rec_kind kind, struct rec **out);
/* The physical index of a visible device's location; -1 for anything else. */
int sim_cuda__phys_of_location(const CUmemLocation *loc);

/* ---- sim_pool.c: the stream-ordered allocator ---- */
/* At a synchronisation: pools on phys give back what they hold past their threshold. */
void sim_cuda__pools_sync(int phys);

/* ---- sim_exec.c: streams and the kernel timeline ---- */
/* The stream s names in c: its null stream for NULL and the legacy and per-thread handles. */
struct CUstream_st *sim_cuda__stream_of(CUstream s, CUcontext c);
/* Runs a kernel of ns on s's device timeline after what s has queued. */
void sim_cuda__enqueue(struct CUstream_st *s, uint64_t ns);
/* Sleeps until the kernel of a mark on phys has ended. */
void sim_cuda__wait_mark(int phys, uint64_t mark);

/* ---- sim_graph.c: graphs and graph memory ---- */
/* A graph is a list of nodes run in order (the sim keeps no dependency edges): kernels, and
 * the allocation and free nodes of graph memory. */
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

/* Appends a copy of node to g; out, when not NULL, names the copy. */
CUresult sim_cuda__graph_append(struct CUgraph_st *g, struct CUgraphNode_st node,
                                CUgraphNode *out);
void sim_cuda__graph_free(struct CUgraph_st *g);
/* cuMemAllocAsync and cuMemFreeAsync on a capturing stream: nodes of its graph. */
CUresult sim_cuda__graph_capture_alloc(struct CUstream_st *s, CUdeviceptr *dptr, uint64_t bytes,
                                       int phys);
CUresult sim_cuda__graph_capture_free(struct CUstream_st *s, CUdeviceptr dptr);
CUresult sim_cuda__graph_alloc_free(CUdeviceptr dptr);
/* cuMemFree of any device allocation, a pool's (stream-ordered) included: the driver accepts
 * those too, synchronously (sim_pool.c). */
CUresult sim_cuda__free_now(CUdeviceptr dptr);

#endif
