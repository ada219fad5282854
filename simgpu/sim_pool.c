/* sim_pool.c - the simulated driver's stream-ordered allocator: memory pools that reserve
 * device memory in chunks and keep it up to their release threshold, as the driver's do. */
#include <pthread.h>
#include <stdlib.h>

#include "carve/cuda_abi.h"
#include "sim_cuda.h"
#include "simdev.h"

#define POOL_CHUNK (32ULL << 20)

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

void sim_cuda__pools_sync(int phys)
{
    pthread_mutex_lock(&sim_cuda__lock);
    struct CUmemPoolHandle_st *d = &default_pool[phys];
    if (d->live && d->reserved > d->threshold)
        pool_trim_locked(d, d->threshold);
    for (struct CUmemPoolHandle_st *p = created_pools; p; p = p->next)
        if (p->phys == phys && p->reserved > p->threshold)
            pool_trim_locked(p, p->threshold);
    pthread_mutex_unlock(&sim_cuda__lock);
}

API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    NEED_INIT();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_cuda__valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_cuda__lock);
    *pool = default_pool_of(sim_cuda__visible[dev]);
    pthread_mutex_unlock(&sim_cuda__lock);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return cuDeviceGetDefaultMemPool(pool, dev);
}

API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    NEED_INIT();
    if (!pool || !props || (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED &&
                            props->allocType != CU_MEM_ALLOCATION_TYPE_MANAGED))
        return CUDA_ERROR_INVALID_VALUE;
    int phys = sim_cuda__phys_of_location(&props->location);
    /* a managed pool (CUDA 13) placed nowhere or on the host: its pages are where they are
     * touched, here the creating context's GPU */
    CUcontext c = sim_cuda__current();
    if (phys < 0 && props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED &&
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE && c)
        phys = c->phys;
    if (phys < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->phys = phys;
    p->live = true;
    pthread_mutex_lock(&sim_cuda__lock);
    p->next = created_pools;
    created_pools = p;
    pthread_mutex_unlock(&sim_cuda__lock);
    *pool = p;
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    NEED_INIT();
    if (!pool || pool->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    NEED_INIT();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
    pool_trim_locked(pool, keep);
    pthread_mutex_unlock(&sim_cuda__lock);
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    NEED_INIT();
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    return r;
}

API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    NEED_INIT();
    if (!pool || !value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        pthread_mutex_lock(&sim_cuda__lock);
        pool->threshold = *(cuuint64_t *)value;
        pthread_mutex_unlock(&sim_cuda__lock);
    }
    return CUDA_SUCCESS;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
    NEED_CTX(c);
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* cuMemAllocAsync's pool is the one current to the stream's device, which need not be
       the current context's */
    int stream_phys = sim_cuda__stream_of(s, c)->ctx->phys;
    if (s && s->capturing)
        return sim_cuda__graph_capture_alloc(s, dptr, bytes, pool ? pool->phys : stream_phys);
    pthread_mutex_lock(&sim_cuda__lock);
    if (!pool)
        pool = default_pool_of(stream_phys);
    uint64_t need = round_chunk(pool->used + bytes);
    if (need > pool->reserved) {
        if (!sim_take(pool->phys, need - pool->reserved)) {
            pthread_mutex_unlock(&sim_cuda__lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pool->reserved = need;
        if (need > pool->reserved_high)
            pool->reserved_high = need;
    }
    pool->used += bytes;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    pthread_mutex_unlock(&sim_cuda__lock);
    struct rec *r;
    CUresult res = sim_cuda__alloc_device(dptr, bytes, 0, pool->phys, REC_POOL, &r);
    if (res == CUDA_SUCCESS) {
        r->pool = pool;
        return res;
    }
    pthread_mutex_lock(&sim_cuda__lock);
    pool->used -= bytes;
    pthread_mutex_unlock(&sim_cuda__lock);
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
        return sim_cuda__graph_capture_free(s, dptr);
    struct rec *r = sim_cuda__rec_take(dptr, 1u << REC_POOL | 1u << REC_MEM | 1u << REC_MANAGED);
    if (!r)
        return sim_cuda__graph_alloc_free(dptr);
    if (r->kind == REC_POOL) {
        pthread_mutex_lock(&sim_cuda__lock);
        r->pool->used -= r->size;
        if (!r->pool->live) /* destroyed pool: nothing holds its memory any more */
            pool_trim_locked(r->pool, 0);
        pthread_mutex_unlock(&sim_cuda__lock);
    }
    sim_cuda__rec_free(r);
    return CUDA_SUCCESS;
}

CUresult sim_cuda__free_now(CUdeviceptr dptr)
{
    return pool_free(dptr, NULL);
}

API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    return pool_free(dptr, s);
}

API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    return pool_free(dptr, s);
}
