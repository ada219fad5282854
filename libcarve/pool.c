/* pool.c - the stream-ordered allocator: what a memory pool reserves is what counts.
 *
 * Each pool the process allocates from has an entry with `charged`, the bytes counted for
 * it. An allocation admits its request, calls the driver, reads the pool's
 * RESERVED_MEM_CURRENT and moves `charged` up to it (surplus admission given back, any
 * growth beyond the admission admitted too, or the allocation is undone). Reserved memory
 * shrinks only by trims, destroys and the driver's own release at sync points; trims,
 * destroys and every denial re-read the pools and give back what they no longer hold.
 *
 * A pool destroyed while allocations from it are outstanding lives on in the driver until
 * they are freed: its entry keeps what the pool still reserved until the last of them is
 * freed (each pool allocation is recorded with its entry), and only then is it given back
 * and the entry reused for another pool. */
#include "libcarve.h"

#include "allocmap.h"

#define MAX_POOLS 256u

struct pool {
    _Atomic(uintptr_t) handle; /* 0: free entry; a destroyed pool's entry, once empty, is
                                * taken over by another pool */
    _Atomic int sdev;              /* the slice device its memory is on; -1: not counted */
    _Atomic int cu;                /* its device's CUDA ordinal */
    _Atomic bool live;
    _Atomic uint64_t charged;
    _Atomic uint64_t outstanding; /* bytes allocated from it here and not yet freed */
};

static struct pool pools[MAX_POOLS];
/* pool allocations: pointer -> entry index (top byte) and bytes */
static struct carve_allocmap pool_ptrs;
/* pools made while every entry was taken: handle -> slice device + 1 (top byte, 0: not
 * counted) and CUDA ordinal, so that their allocations count on their own device too */
static struct carve_allocmap pool_devs;

void carve__pools_reset(void)
{
    for (unsigned i = 0; i < MAX_POOLS; i++) {
        atomic_store(&pools[i].handle, 0);
        atomic_store(&pools[i].live, false);
        atomic_store(&pools[i].charged, 0);
        atomic_store(&pools[i].outstanding, 0);
    }
    carve_allocmap_reset(&pool_ptrs);
    carve_allocmap_reset(&pool_devs);
}

static unsigned pool_hash(uintptr_t h)
{
    uint64_t k = (uint64_t)h * UINT64_C(0x9e3779b97f4a7c15);
    return (unsigned)(k >> 56) % MAX_POOLS;
}

/* A destroyed pool's entry that nothing refers to any more. */
static bool pool_entry_empty(struct pool *e)
{
    return !atomic_load(&e->live) && atomic_load(&e->outstanding) == 0 &&
           atomic_load(&e->charged) == 0;
}

/* The entry of pool h, added with home as its device when home is given (in a free entry,
 * or one a destroyed pool left empty); NULL when absent or the table is full. */
static struct pool *pool_entry(CUmemoryPool pool, const struct carve_dev *home)
{
    bool create = home != NULL;
    uintptr_t h = (uintptr_t)pool;
    unsigned i = pool_hash(h);
    struct pool *empty = NULL;
    uintptr_t empty_was = 0;
    for (unsigned n = 0; n <= MAX_POOLS; n++, i = (i + 1) % MAX_POOLS) {
        uintptr_t cur = n < MAX_POOLS ? atomic_load(&pools[i].handle) : 0;
        if (cur == 0 && create && empty) {
            /* h is not in the table: take over the empty entry met on the way */
            if (!atomic_compare_exchange_strong(&empty->handle, &empty_was, h))
                return pool_entry(pool, home);
            i = (unsigned)(empty - pools);
            cur = h;
        } else if (cur == 0) {
            if (!create || n == MAX_POOLS)
                return NULL;
            if (!atomic_compare_exchange_strong(&pools[i].handle, &cur, h) && cur != h)
                continue;
            cur = h;
        } else if (cur != h && create && !empty && pool_entry_empty(&pools[i])) {
            empty = &pools[i];
            empty_was = cur;
        }
        if (cur == h) {
            if (create && !atomic_load(&pools[i].live)) {
                atomic_store(&pools[i].sdev, home->sdev);
                atomic_store(&pools[i].cu, home->cu);
                atomic_store(&pools[i].live, true);
            }
            return &pools[i];
        }
    }
    return NULL;
}

static bool pool_reserved(CUmemoryPool pool, uint64_t *reserved)
{
    cuuint64_t v = 0;
    if (!R.cuMemPoolGetAttribute ||
        R.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
        return false;
    *reserved = v;
    return true;
}

/* Gives back what the pool no longer reserves; true when anything was given back. The
 * charge is read before the pool's reserve, and both again when the charge moved: read
 * after, it could hold another thread's growth settled in between, and that growth was
 * given back while the driver held it (a review's finding, 2026-11-29). */
static bool pool_refresh(struct pool *e)
{
    if (!atomic_load(&e->live))
        return false;
    for (;;) {
        uint64_t old = atomic_load(&e->charged), reserved;
        if (!pool_reserved((CUmemoryPool)atomic_load(&e->handle), &reserved) || reserved >= old)
            return false;
        if (atomic_compare_exchange_strong(&e->charged, &old, reserved)) {
            carve__release(atomic_load(&e->sdev), old - reserved);
            return true;
        }
    }
}

bool carve__pools_refresh(void)
{
    bool any = false;
    for (unsigned i = 0; i < MAX_POOLS; i++)
        if (atomic_load(&pools[i].handle))
            any |= pool_refresh(&pools[i]);
    return carve__graph_refresh() || any;
}

bool carve__settle_reserve(_Atomic uint64_t *charged, int sdev, uint64_t reserved,
                           uint64_t admitted)
{
    uint64_t old = atomic_load(charged);
    for (;;) {
        if (reserved <= old) {
            carve__release(sdev, admitted);
            return true;
        }
        uint64_t grow = reserved - old, extra = 0;
        if (grow > admitted) {
            extra = grow - admitted;
            if (!carve__try_admit(sdev, extra)) {
                carve__release(sdev, admitted);
                return false;
            }
        }
        if (atomic_compare_exchange_weak(charged, &old, reserved)) {
            carve__release(sdev, admitted + extra - grow);
            return true;
        }
        carve__release(sdev, extra); /* charged moved under us: look again */
    }
}

void carve__force_reserve(_Atomic uint64_t *charged, int sdev, uint64_t reserved)
{
    uint64_t old = atomic_load(charged);
    while (reserved > old)
        if (atomic_compare_exchange_weak(charged, &old, reserved)) {
            carve__charge_counted(sdev, reserved - old);
            return;
        }
}

/* Admission for a pool allocation: the request, or nothing when the pool already has that
 * much reserved and unused. */
static CUresult pool_admit(const struct carve_dev *d, CUmemoryPool pool, uint64_t bytes,
                           uint64_t *admitted)
{
    *admitted = bytes;
    if (carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    if (carve__pools_refresh() && carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    if (carve__overhead_refresh() && carve__try_admit(d->sdev, bytes))
        return CUDA_SUCCESS;
    uint64_t reserved;
    cuuint64_t used = 0;
    if (pool_reserved(pool, &reserved) &&
        R.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) ==
            CUDA_SUCCESS &&
        reserved >= used && reserved - used >= bytes) {
        *admitted = 0;
        return CUDA_SUCCESS;
    }
    carve__oom_message(d, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Notes an allocation from e, so that its free is seen when e's pool is destroyed before. */
static void pool_track(struct pool *e, CUdeviceptr p, uint64_t bytes)
{
    uint64_t v = (uint64_t)(e - pools) << CARVE_ALLOCMAP_DEV_SHIFT |
                 (bytes & CARVE_ALLOCMAP_BYTES_MAX);
    atomic_fetch_add(&e->outstanding, bytes);
    if (carve_allocmap_insert(&pool_ptrs, p, v) != 0)
        atomic_fetch_sub(&e->outstanding, bytes); /* its free will not be seen */
}

/* A tracked allocation of e was freed: once a destroyed pool has nothing outstanding, the
 * driver has released it and what it was charged goes back. */
static void pool_untrack(struct pool *e, uint64_t bytes)
{
    if (atomic_fetch_sub(&e->outstanding, bytes) == bytes && !atomic_load(&e->live))
        carve__release(atomic_load(&e->sdev), atomic_exchange(&e->charged, 0));
}

/* The CUDA ordinal of the device whose default or current pool this is, or -1 (a pool made
 * by cuMemPoolCreate, or imported). */
static int pool_home(CUmemoryPool pool)
{
    int n = 0;
    if (!R.cuDeviceGetCount || R.cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++) {
        CUmemoryPool p = NULL, q = NULL;
        if ((R.cuDeviceGetMemPool(&p, i) == CUDA_SUCCESS && p == pool) ||
            (R.cuDeviceGetDefaultMemPool &&
             R.cuDeviceGetDefaultMemPool(&q, i) == CUDA_SUCCESS && q == pool))
            return i;
    }
    return -1;
}

/* The device of stream's context: cuMemAllocAsync allocates from the current pool of the
 * stream's device, which need not be the current context's (it took the current context's
 * until 2026-11-29: a stream of an uncapped or another GPU's context went uncounted, a
 * review's finding). The default streams are the current context's. */
static bool stream_dev(CUstream stream, struct carve_dev *d)
{
    CUcontext ctx, ignored;
    /* NULL, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) */
    if ((uintptr_t)stream <= 2 || !R.cuStreamGetCtx ||
        !R.cuCtxPushCurrent_v2 || !R.cuCtxPopCurrent_v2 ||
        R.cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS ||
        R.cuCtxPushCurrent_v2(ctx) != CUDA_SUCCESS)
        return carve__dev_current(d);
    bool found = carve__dev_current(d);
    R.cuCtxPopCurrent_v2(&ignored);
    return found;
}

/* Where an allocation from pool counts: true with d, the slice device its memory is on, and
 * *e, the pool's entry (NULL when more pools are live than the table holds: then the request
 * itself counts); false when it is not counted. A pool decides by itself, whichever device is
 * current (CUDA allocates from a pool on any device): its entry from cuMemPoolCreate, else
 * the device whose default or current pool it is, else its note in pool_devs (one made while
 * the table was full). Only a pool none of these know (imported from another process) counts
 * on the current device. cuMemAllocAsync (*pool NULL) takes the current pool of the stream's
 * device (stream_dev). A pool of a device without a cap gets an entry too, so that the next
 * allocation from it passes at once. */
static bool pool_where(CUmemoryPool *pool, CUstream stream, struct pool **e,
                       struct carve_dev *d)
{
    uint64_t note;
    if (!*pool && (!stream_dev(stream, d) || R.cuDeviceGetMemPool(pool, d->cu) != CUDA_SUCCESS))
        return false;
    *e = pool_entry(*pool, NULL);
    if (*e && atomic_load(&(*e)->live)) {
        d->sdev = atomic_load(&(*e)->sdev);
        d->cu = atomic_load(&(*e)->cu);
        return d->sdev >= 0;
    }
    int home = pool_home(*pool);
    if (home >= 0) {
        if (!carve__dev_of(home, d))
            *d = (struct carve_dev){.cu = home, .sdev = -1};
    } else if (carve_allocmap_find(&pool_devs, (uintptr_t)*pool, &note)) {
        *d = (struct carve_dev){.cu = (CUdevice)(note & CARVE_ALLOCMAP_BYTES_MAX),
                                .sdev = (int)(note >> CARVE_ALLOCMAP_DEV_SHIFT) - 1};
        *e = NULL; /* counted by request from its first allocation: keep it so */
        return d->sdev >= 0;
    } else if (!carve__dev_current(d)) {
        return false;
    }
    *e = pool_entry(*pool, d);
    if (*e) { /* another thread may have added it first */
        d->sdev = atomic_load(&(*e)->sdev);
        d->cu = atomic_load(&(*e)->cu);
    }
    return d->sdev >= 0;
}

typedef CUresult (*async_alloc_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream, void *);

static CUresult alloc_in_pool(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                              CUstream stream, async_alloc_fn call, void *real,
                              CUresult (*free_async)(CUdeviceptr, CUstream))
{
    struct carve_dev d;
    struct pool *e;
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* under capture the driver makes an allocation node, not memory: graphmem.c counts the
     * graph's memory when it is launched */
    if (!carve__active() || !dptr || bytes == 0 || carve__capturing(stream) ||
        !pool_where(&pool, stream, &e, &d))
        return call(dptr, bytes, pool, stream, real);
    if (!e) { /* more live pools than we track: count the request itself, freed as such */
        CUresult r = carve__admit(&d, bytes);
        if (r != CUDA_SUCCESS)
            return r;
        r = call(dptr, bytes, pool, stream, real);
        if (r != CUDA_SUCCESS)
            carve__release(d.sdev, bytes);
        else
            carve__record(CARVE_KIND_PTR, *dptr, d.sdev, bytes);
        return r;
    }
    uint64_t admitted, reserved;
    CUresult r = pool_admit(&d, pool, bytes, &admitted);
    if (r != CUDA_SUCCESS)
        return r;
    r = call(dptr, bytes, pool, stream, real);
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, admitted);
        return r;
    }
    if (!pool_reserved(pool, &reserved)) {
        /* the driver holds it and will not say how much the pool grew: the admission stays
           charged to the pool, and the next refresh that reads the pool settles it (it was
           given back, and the allocation went uncounted) */
        atomic_fetch_add(&e->charged, admitted);
        pool_track(e, *dptr, bytes);
        return CUDA_SUCCESS;
    }
    if (carve__settle_reserve(&e->charged, atomic_load(&e->sdev), reserved, admitted)) {
        pool_track(e, *dptr, bytes);
        return CUDA_SUCCESS;
    }
    /* the pool grew past what the slice can take: undo the allocation */
    free_async(*dptr, stream);
    R.cuStreamSynchronize(stream);
    R.cuMemPoolTrimTo(pool, 0);
    pool_refresh(e);
    carve__oom_message(&d, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult call_alloc_async(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s,
                                 void *real)
{
    (void)pool;
    return ((__typeof__(&cuMemAllocAsync))real)(p, n, s);
}

static CUresult call_alloc_from_pool(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s,
                                     void *real)
{
    return ((__typeof__(&cuMemAllocFromPoolAsync))real)(p, n, pool, s);
}

CARVE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    return alloc_in_pool(dptr, bytesize, NULL, hStream, call_alloc_async,
                         (void *)R.cuMemAllocAsync, R.cuMemFreeAsync);
}

CARVE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                           CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    return alloc_in_pool(dptr, bytesize, NULL, hStream, call_alloc_async,
                         (void *)R.cuMemAllocAsync_ptsz, R.cuMemFreeAsync_ptsz);
}

CARVE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!pool)
        return R.cuMemAllocFromPoolAsync ? R.cuMemAllocFromPoolAsync(dptr, bytesize, pool,
                                                                     hStream)
                                         : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_in_pool(dptr, bytesize, pool, hStream, call_alloc_from_pool,
                         (void *)R.cuMemAllocFromPoolAsync, R.cuMemFreeAsync);
}

CARVE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                   CUmemoryPool pool, CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!pool)
        return R.cuMemAllocFromPoolAsync_ptsz
                   ? R.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream)
                   : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_in_pool(dptr, bytesize, pool, hStream, call_alloc_from_pool,
                         (void *)R.cuMemAllocFromPoolAsync_ptsz, R.cuMemFreeAsync_ptsz);
}

bool carve__pool_take(CUdeviceptr dptr, uint64_t *note)
{
    if (!carve__active() || !carve_allocmap_remove(&pool_ptrs, dptr, note))
        return false;
    /* the last allocation of a destroyed pool: the driver releases the pool with its free */
    struct pool *e = &pools[*note >> CARVE_ALLOCMAP_DEV_SHIFT];
    uint64_t bytes = *note & CARVE_ALLOCMAP_BYTES_MAX;
    if (!atomic_load(&e->live) && atomic_load(&e->outstanding) <= bytes)
        carve__mem_in_flight_add(atomic_load(&e->charged));
    return true;
}

void carve__pool_freed(uint64_t note, CUresult r, CUdeviceptr dptr)
{
    if (!carve__free_done(r))
        carve_allocmap_insert(&pool_ptrs, dptr, note);
    else
        pool_untrack(&pools[note >> CARVE_ALLOCMAP_DEV_SHIFT], note & CARVE_ALLOCMAP_BYTES_MAX);
}

/* Pool memory stays reserved after a stream-ordered free: nothing to give back, unless the
 * pointer came from cuMemAlloc_v2 and friends or cuMemAllocManaged (the driver accepts
 * those too). */
static CUresult free_async(CUdeviceptr dptr, CUstream s, __typeof__(&cuMemFreeAsync) real)
{
    int sdev;
    uint64_t bytes, v;
    enum carve_kind kind;
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* under capture the driver makes a free node of a graph allocation, or refuses a pointer
     * that is not one (INVALID_VALUE, which carve__free_done takes for "freed already"): the
     * allocation's count is left as it is either way (it was given back, and a loop of
     * alloc, capture, free shed the cap; a review's finding, 2026-11-29) */
    if (carve__capturing(s))
        return real(dptr, s);
    if (!carve__unrecord_ptr(dptr, &kind, &sdev, &bytes)) {
        if (!carve__pool_take(dptr, &v))
            return real(dptr, s);
        CUresult r = real(dptr, s);
        carve__pool_freed(v, r, dptr);
        return r;
    }
    CUresult r = real(dptr, s);
    carve__freed(kind, dptr, sdev, bytes, r);
    return r;
}

CARVE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    return free_async(dptr, hStream, R.cuMemFreeAsync);
}

CARVE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    CARVE_MEM_CALL();
    carve__init();
    return free_async(dptr, hStream, R.cuMemFreeAsync_ptsz);
}

/* A pool's memory is on the device its properties name, whichever device allocates from
 * it: noted here, since a pool cannot be asked where it is. Pinned host pools are not
 * counted. A managed pool (CUDA 13) placed on no device, or a pool placed where carve knows
 * no location type, is noted nowhere: its allocations count on the current GPU, as
 * cuMemAllocManaged's do (such a pool was taken for a host pool until 2026-11-27, and its
 * memory, which moves to the GPU that touches it, went uncounted). */
CARVE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemPoolCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuMemPoolCreate(pool, props);
    if (r != CUDA_SUCCESS || !carve__active() || !pool || !props)
        return r;
    struct carve_dev d = {.cu = props->location.id, .sdev = -1};
    bool on_device = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (!on_device && (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED ||
                       !carve__location_is_host(props->location.type)))
        return r;
    if (!on_device || !carve__dev_of(props->location.id, &d))
        d.sdev = -1;
    if (!pool_entry(*pool, &d)) /* not counted (sdev -1) is worth noting too */
        carve_allocmap_insert(&pool_devs, (uintptr_t)*pool,
                              (uint64_t)(d.sdev + 1) << CARVE_ALLOCMAP_DEV_SHIFT |
                                  (uint64_t)(d.sdev >= 0 ? d.cu : 0));
    return r;
}

CARVE_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemPoolTrimTo)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuMemPoolTrimTo(pool, minBytesToKeep);
    struct pool *e = carve__active() ? pool_entry(pool, NULL) : NULL;
    if (r == CUDA_SUCCESS && e)
        pool_refresh(e);
    return r;
}

CARVE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemPoolDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct pool *e = carve__active() ? pool_entry(pool, NULL) : NULL;
    uint64_t reserved = 0;
    if (e && atomic_load(&e->outstanding)) {
        /* the driver keeps what is still allocated until it is freed: charge what the
         * pool holds once its unused memory is gone */
        R.cuMemPoolTrimTo(pool, 0);
        if (!pool_reserved(pool, &reserved))
            reserved = atomic_load(&e->charged);
    }
    if (e) /* what the driver releases with the pool, before the count gives it back */
        carve__mem_in_flight_add(atomic_load(&e->charged));
    CUresult r = R.cuMemPoolDestroy(pool);
    uint64_t note;
    if (r == CUDA_SUCCESS && !e && carve__active())
        carve_allocmap_remove(&pool_devs, (uintptr_t)pool, &note);
    if (r != CUDA_SUCCESS || !e || !atomic_exchange(&e->live, false))
        return r;
    int sdev = atomic_load(&e->sdev);
    uint64_t old = atomic_load(&e->charged);
    while (old > reserved && !atomic_compare_exchange_weak(&e->charged, &old, reserved))
        ;
    if (old > reserved)
        carve__release(sdev, old - reserved);
    if (atomic_load(&e->outstanding) == 0) /* its last allocation was freed meanwhile */
        carve__release(sdev, atomic_exchange(&e->charged, 0));
    return r;
}
