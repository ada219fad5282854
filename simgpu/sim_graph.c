/* sim_graph.c - the simulated driver's graphs: their nodes, executable graphs and their
 * launches, and the graph memory of allocation and free nodes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "carve/cuda_abi.h"
#include "sim_cuda.h"
#include "simdev.h"

/* Graph memory is modelled on what NVIDIA's programming guide describes: an allocation
 * node's address is fixed when the node is made; physical memory comes from the device's
 * graph memory, which is mapped for an executable graph at its upload or first launch (its
 * peak: the most of its allocations live at once) and stays reserved after the graph is
 * destroyed, until cuDeviceGraphMemTrim gives back what no graph and no live allocation
 * holds. An allocation not freed inside its graph lives on after the launch, until a free
 * node, cuMemFreeAsync or cuMemFree; relaunching a graph whose allocations are still live
 * is an error unless it was instantiated to free them on launch. Lock held throughout. */

struct CUgraphExec_st {
    struct CUgraphNode_st *nodes; /* copies; allocations referenced, not copied */
    size_t n;
    unsigned long long flags;
    struct CUgraph_st *graph;
    uint64_t peak[SIM_MAX_DEVICES]; /* most graph memory live at once while it runs */
    bool mapped;                    /* its peak is backed by the device's graph memory */
};

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
    struct rec *r = sim_cuda__rec_take_locked(a->rec->key, 1u << REC_GRAPH);
    if (r)
        sim_cuda__rec_free(r);
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

CUresult sim_cuda__graph_append(struct CUgraph_st *g, struct CUgraphNode_st node,
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
        pthread_mutex_lock(&sim_cuda__lock);
        copy->alloc->refs++;
        pthread_mutex_unlock(&sim_cuda__lock);
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
    CUresult r = sim_cuda__alloc_device(dptr, bytes, 0, phys, REC_GRAPH, &a->rec);
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
    r = sim_cuda__graph_append(
        g, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_MEM_ALLOC, NULL, 0, a}, node);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&sim_cuda__lock);
        galloc_release_if_unused_locked(a);
        pthread_mutex_unlock(&sim_cuda__lock);
    }
    return r;
}

static CUresult add_free_node(struct CUgraph_st *g, CUgraphNode *node, CUdeviceptr dptr)
{
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *r = sim_cuda__rec_find_locked(dptr, 1u << REC_GRAPH);
    struct graph_alloc *a = r ? r->galloc : NULL;
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_cuda__graph_append(
        g, (struct CUgraphNode_st){CU_GRAPH_NODE_TYPE_MEM_FREE, NULL, 0, a}, node);
}

CUresult sim_cuda__graph_capture_alloc(struct CUstream_st *s, CUdeviceptr *dptr, uint64_t bytes,
                                       int phys)
{
    CUdevice dev = 0;
    for (int i = 0; i < sim_cuda__nvisible; i++)
        if (sim_cuda__visible[i] == phys)
            dev = i;
    return add_alloc_node(s->graph, NULL, dptr, bytes, phys, dev);
}

CUresult sim_cuda__graph_capture_free(struct CUstream_st *s, CUdeviceptr dptr)
{
    CUresult r = add_free_node(s->graph, NULL, dptr);
    return r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : r;
}

/* cuMemFree or cuMemFreeAsync of a graph allocation outside any graph. */
CUresult sim_cuda__graph_alloc_free(CUdeviceptr dptr)
{
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *r = sim_cuda__rec_find_locked(dptr, 1u << REC_GRAPH);
    bool live = r && r->galloc->live;
    if (live) {
        galloc_free_locked(r->galloc);
        galloc_release_if_unused_locked(r->galloc);
    }
    pthread_mutex_unlock(&sim_cuda__lock);
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
    int phys = sim_cuda__phys_of_location(&p->poolProps.location);
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
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    int phys = sim_cuda__visible[dev];
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
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
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    int phys = sim_cuda__visible[dev];
    pthread_mutex_lock(&sim_cuda__lock);
    for (struct exec_link *l = execs; l; l = l->next)
        if (l->e->peak[phys] && !exec_holds_live(l->e))
            exec_unmap_locked(l->e);
    uint64_t keep = graph_mem[phys].mapped + graph_mem[phys].orphan;
    if (graph_mem[phys].reserved > keep) {
        sim_give(phys, graph_mem[phys].reserved - keep);
        graph_mem[phys].reserved = keep;
    }
    pthread_mutex_unlock(&sim_cuda__lock);
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
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    *pe = e;
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{
    return instantiate(pe, g, flags);
}

static CUresult instantiate_logged(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node,
                                   char *log, size_t log_size)
{
    CUresult r = instantiate(pe, g, 0);
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = '\0';
    return r;
}

API CUresult cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node, char *log,
                                size_t log_size)
{
    return instantiate_logged(pe, g, err_node, log, log_size);
}

API CUresult cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node,
                                   char *log, size_t log_size)
{
    return instantiate_logged(pe, g, err_node, log, log_size);
}

static CUresult upload(CUgraphExec e)
{
    pthread_mutex_lock(&sim_cuda__lock);
    CUresult r = exec_map_locked(e);
    pthread_mutex_unlock(&sim_cuda__lock);
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
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    return r;
}

static CUresult graph_launch(CUgraphExec e, CUstream hs)
{
    NEED_CTX(c);
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = sim_cuda__stream_of(hs, c);
    if (s->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUresult r = graph_launch_memory(e);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < e->n; i++)
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_KERNEL)
            sim_cuda__enqueue(s, e->nodes[i].ns);
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
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    free(e->nodes);
    free(e);
    return CUDA_SUCCESS;
}

void sim_cuda__graph_free(struct CUgraph_st *g)
{
    pthread_mutex_lock(&sim_cuda__lock);
    if (g->exec)
        g->exec->graph = NULL;
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->alloc)
            galloc_unref_locked(g->nodes[i]->alloc);
        free(g->nodes[i]);
    }
    pthread_mutex_unlock(&sim_cuda__lock);
    free(g->nodes);
    free(g);
}

API CUresult cuGraphDestroy(CUgraph g)
{
    NEED_INIT();
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    sim_cuda__graph_free(g);
    return CUDA_SUCCESS;
}
