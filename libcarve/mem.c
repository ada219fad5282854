/* mem.c - wrappers of the counted allocation calls and their frees: device pointers
 * (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged), physical allocations
 * (cuMemCreate/cuMemRelease) and CUDA arrays.
 *
 * Every counted allocation is admitted before the real call, given back if the call fails,
 * and recorded with what it counted, so that its free gives back exactly that. */
#include "libcarve.h"

#include "allocmap.h"

#include <sched.h>

#define PITCH_ALIGN 512u

/* From an admitted amount to the real one: releases the surplus, or admits the shortfall. */
static CUresult settle(const struct carve_dev *d, uint64_t admitted, uint64_t actual)
{
    if (actual <= admitted) {
        carve__release(d->sdev, admitted - actual);
        return CUDA_SUCCESS;
    }
    CUresult r = carve__admit(d, actual - admitted);
    if (r != CUDA_SUCCESS)
        carve__release(d->sdev, admitted);
    return r;
}

/* Admits what the driver takes for bytes (carve/driver_pages.h: counted at the size asked,
 * a tenant allocating 1 MiB and 1 byte at a time held twice its cap), calls the driver
 * (managed when flags >= 0), records what was counted. The caller has run carve__init
 * (which resolves the real pointers). */
static CUresult ptr_alloc_counted(CUdeviceptr *dptr, size_t bytes, int managed_flags)
{
    struct carve_dev d;
    bool managed = managed_flags >= 0;
    if (managed ? !R.cuMemAllocManaged : !R.cuMemAlloc_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    bool count = carve__dev_current(&d) && dptr && bytes != 0;
    uint64_t taken = carve_driver_takes(bytes);
    CUresult r = count ? carve__admit(&d, taken) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    r = managed ? R.cuMemAllocManaged(dptr, bytes, (unsigned int)managed_flags)
                : R.cuMemAlloc_v2(dptr, bytes);
    if (!count)
        return r;
    if (r != CUDA_SUCCESS)
        carve__release(d.sdev, taken);
    else
        carve__record(managed ? CARVE_KIND_MANAGED : CARVE_KIND_PTR, *dptr, d.sdev, taken);
    return r;
}

CARVE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CARVE_MEM_CALL();
    carve__init(); /* before the real pointer is read: this may be the first call we see */
    return ptr_alloc_counted(dptr, bytesize, -1);
}

CARVE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CARVE_MEM_CALL();
    carve__init(); /* before the real pointer is read */
    if (flags > INT32_MAX) /* no valid flag is that large: let the driver refuse it */
        return R.cuMemAllocManaged ? R.cuMemAllocManaged(dptr, bytesize, flags)
                                   : CUDA_ERROR_NOT_INITIALIZED;
    return ptr_alloc_counted(dptr, bytesize, (int)flags);
}

CARVE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    CARVE_MEM_CALL();
    struct carve_dev d;
    uint64_t bound = ((uint64_t)WidthInBytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (!carve__dev_current(&d) || !dptr || !pPitch || WidthInBytes == 0 || Height == 0)
        return R.cuMemAllocPitch_v2 ? R.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height,
                                                           ElementSizeBytes)
                                    : CUDA_ERROR_NOT_INITIALIZED;
    /* a size past 64 bits (the rounding or the product) fits no cap: never pass it on
     * uncounted, where a driver's own arithmetic could wrap it to something small */
    if (bound < WidthInBytes || bound > UINT64_MAX / Height)
        bound = UINT64_MAX;
    else
        bound = carve_driver_takes(bound * Height);
    CUresult r = carve__admit(&d, bound);
    if (r != CUDA_SUCCESS)
        return r;
    r = R.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, bound);
        return r;
    }
    uint64_t actual = carve_driver_takes((uint64_t)*pPitch * Height);
    r = settle(&d, bound, actual);
    if (r != CUDA_SUCCESS) {
        R.cuMemFree_v2(*dptr);
        return r;
    }
    carve__record(CARVE_KIND_PTR, *dptr, d.sdev, actual);
    return CUDA_SUCCESS;
}

/* Removes the record first (the driver may hand the address out again as soon as it is
 * freed), frees, and puts the record back if the free failed with the memory still there
 * (carve__free_done). A key without a record is freed by free_unrecorded when given, else by
 * do_free. */
static CUresult free_recorded(enum carve_kind kind, uint64_t key, CUresult (*do_free)(uint64_t),
                              CUresult (*free_unrecorded)(uint64_t))
{
    int sdev;
    uint64_t bytes;
    bool had = carve__unrecord(kind, key, &sdev, &bytes);
    CUresult r = had || !free_unrecorded ? do_free(key) : free_unrecorded(key);
    if (had)
        carve__freed(kind, key, sdev, bytes, r);
    return r;
}

static CUresult real_mem_free(uint64_t key)
{
    return R.cuMemFree_v2((CUdeviceptr)key);
}

/* cuMemFree of a stream-ordered allocation: the driver frees it (synchronously), and the
 * pool's outstanding bytes must go down as at cuMemFreeAsync, or a destroyed pool's charge
 * would never come back. */
static CUresult mem_free_unrecorded(uint64_t key)
{
    uint64_t note;
    if (!carve__pool_take((CUdeviceptr)key, &note))
        return R.cuMemFree_v2((CUdeviceptr)key);
    CUresult r = R.cuMemFree_v2((CUdeviceptr)key);
    carve__pool_freed(note, r, (CUdeviceptr)key);
    return r;
}

static CUresult real_mem_release(uint64_t key)
{
    return R.cuMemRelease((CUmemGenericAllocationHandle)key);
}

static CUresult real_array_destroy(uint64_t key)
{
    return R.cuArrayDestroy((CUarray)(uintptr_t)key);
}

static CUresult real_mipmap_destroy(uint64_t key)
{
    return R.cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)key);
}

CARVE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemFree_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    enum carve_kind kind;
    int sdev;
    uint64_t bytes;
    if (!carve__unrecord_ptr(dptr, &kind, &sdev, &bytes))
        return mem_free_unrecorded(dptr);
    CUresult r = real_mem_free(dptr);
    carve__freed(kind, dptr, sdev, bytes, r);
    return r;
}

static void count_start(uint64_t handle); /* the virtual memory part, below */

bool carve__location_is_host(CUmemLocationType type)
{
    return type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

/* On a device, counted there; on the host, not counted; at a location of a type carve does
 * not know (a newer driver's), counted on the current GPU rather than let through. */
CARVE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    CARVE_MEM_CALL();
    struct carve_dev d;
    carve__init();
    if (!R.cuMemCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUmemLocationType where = prop ? prop->location.type : CU_MEM_LOCATION_TYPE_INVALID;
    bool counted = where == CU_MEM_LOCATION_TYPE_DEVICE ? carve__dev_of(prop->location.id, &d)
                   : where == CU_MEM_LOCATION_TYPE_INVALID || carve__location_is_host(where)
                       ? false
                       : carve__dev_current(&d);
    if (!handle || size == 0 || !counted)
        return R.cuMemCreate(handle, size, prop, flags);
    CUresult r = carve__admit(&d, size);
    if (r != CUDA_SUCCESS)
        return r;
    r = R.cuMemCreate(handle, size, prop, flags);
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, size);
        return r;
    }
    carve__record(CARVE_KIND_HANDLE, *handle, d.sdev, size);
    count_start(*handle);
    return r;
}

/* ---- virtual memory: the driver frees a handle's memory when every reference to it is
 * released (its cuMemCreate's, and one for each cuMemRetainAllocationHandle) and it is no
 * longer mapped, whichever comes last. Each counted handle has a count of its mappings and of
 * its retains in map_counts, from its cuMemCreate until it is given back: cuMemMap raises
 * the mappings before the driver maps (a release racing with the map sees it), and lowers
 * them when the driver refuses; cuMemUnmap lowers them once the driver has unmapped. A
 * retain raises the retains once the driver has answered (only then is the handle known);
 * a release after the create's (the handle's record gone already) lowers them. A handle
 * released while mapped or retained (the usual idiom: map, then release at once) moves its
 * record to `released`; whichever side then finds both counts at 0 ends it (one
 * compare-and-swap to COUNT_DEAD) and gives the record back, once, and never early. Every
 * step is a lookup in a lock-free map: a release or an unmap costs the same with 40,000
 * pages mapped as with one (a scan of every mapping's note, until 2026-11-27, cost 62 us a
 * page at 20,000 pages on the simulated GPU).
 *
 * A retain the driver has made but libcarve not yet counted is in retains_in_flight: a
 * thread that would end a count, or finds no retain to lower for a release, waits for it
 * (a release or the last unmap racing with a retain gave the handle back while the retain
 * held it, until 2026-11-27: a tenant looping on it held 29 GB in a 4 GiB slice on the
 * simulated GPU). A release with no retain to match lowers nothing: one count for both,
 * as before, let it take a mapping's place.
 *
 * A count's word is the handle's tag (a hash of it, high half), its retains (16 bits) and
 * its mappings (16 bits): a thread that looked the handle up just before another gave it
 * back, and whose slot another key took meanwhile, finds another tag there and changes
 * nothing. ---- */

static struct carve_allocmap mappings;   /* mapped address -> handle (address | 1: being
                                          * unmapped, see cuMemUnmap) */
static struct carve_allocmap map_sizes;  /* the same keys -> bytes mapped there */
static struct carve_allocmap map_counts; /* counted handle -> tag | retains | mappings */
static struct carve_allocmap released;   /* handle released while mapped -> its record */
static _Atomic unsigned retains_in_flight;

#define COUNT_MASK UINT64_C(0xffffffff)
#define COUNT_DEAD COUNT_MASK /* given back: nothing may be counted any more */
#define ONE_MAPPING UINT64_C(1)
#define ONE_RETAIN (UINT64_C(1) << 16)
#define FIELD_MAX UINT64_C(0xfffe) /* so that a live count is never COUNT_DEAD */

void carve__vmm_reset(void)
{
    carve_allocmap_reset(&mappings);
    carve_allocmap_reset(&map_sizes);
    carve_allocmap_reset(&map_counts);
    carve_allocmap_reset(&released);
    atomic_store(&retains_in_flight, 0);
}

static uint64_t count_tag(uint64_t handle)
{
    return (handle * UINT64_C(0x9e3779b97f4a7c15)) & ~COUNT_MASK;
}

/* The mappings (one ONE_MAPPING) or the retains (ONE_RETAIN) in a count's word. */
static uint64_t count_field(uint64_t v, uint64_t one)
{
    return (v & COUNT_MASK) / one & 0xffff;
}

/* A counted handle's count starts (at its cuMemCreate, before anyone else knows it). Without
 * it (no memory for the note) its mappings are not seen: a release gives it back at once, as
 * when it is not mapped. */
static void count_start(uint64_t handle)
{
    carve_allocmap_insert(&map_counts, handle, count_tag(handle));
}

/* One more mapping or retain (one) of handle: COUNTED, or NO_COUNT when it has none (not
 * counted, or given back), or FULL when it has FIELD_MAX of them already: one more cannot be
 * counted, and must not happen uncounted (65,535 retains and releases gave a mapped handle
 * back while the driver held it, until 2026-11-28). One reading decides: a full count read
 * apart from the increment's could be released in between, and the call go on uncounted. */
enum count_result { COUNTED, NO_COUNT, FULL };
static enum count_result count_up(uint64_t handle, uint64_t one)
{
    _Atomic uint64_t *c = carve_allocmap_value_of(&map_counts, handle);
    uint64_t tag = count_tag(handle), v = c ? atomic_load(c) : 0;
    while (c && (v & ~COUNT_MASK) == tag && (v & COUNT_MASK) != COUNT_DEAD) {
        if (count_field(v, one) >= FIELD_MAX)
            return FULL;
        if (atomic_compare_exchange_weak(c, &v, v + one))
            return COUNTED;
    }
    return NO_COUNT;
}

/* One mapping or retain (one) fewer, when the count is still handle's and has one: true when
 * it had. */
static bool count_down(uint64_t handle, uint64_t one)
{
    _Atomic uint64_t *c = carve_allocmap_value_of(&map_counts, handle);
    uint64_t tag = count_tag(handle), v = c ? atomic_load(c) : 0;
    while (c && (v & ~COUNT_MASK) == tag && (v & COUNT_MASK) != COUNT_DEAD &&
           count_field(v, one) != 0)
        if (atomic_compare_exchange_weak(c, &v, v - one))
            return true;
    return false;
}

/* Until no retain is between the driver's answer and its count (a few microseconds; only
 * while a retain races with this thread's release or unmap). */
static void retains_wait(void)
{
    while (atomic_load(&retains_in_flight))
        sched_yield();
}

/* A release of a retain's reference: lowers the retains, waiting for a retain in flight
 * when there is none yet. */
static void retain_released(uint64_t handle)
{
    while (!count_down(handle, ONE_RETAIN) && atomic_load(&retains_in_flight))
        retains_wait();
}

/* Ends handle's count when it has no mapping and no retain: true when it had none (or had no
 * count), and nothing may count one any more; false while it is mapped or retained, or when
 * another thread ended it first. */
static bool count_end(uint64_t handle)
{
    _Atomic uint64_t *c = carve_allocmap_value_of(&map_counts, handle);
    uint64_t idle = count_tag(handle), v;
    if (!c)
        return true;
    retains_wait();
    if (!atomic_compare_exchange_strong(c, &idle, idle | COUNT_DEAD))
        return false;
    carve_allocmap_remove(&map_counts, handle, &v);
    return true;
}

static void give_back(uint64_t record)
{
    carve__release((int)(record >> CARVE_ALLOCMAP_DEV_SHIFT), record & CARVE_ALLOCMAP_BYTES_MAX);
}

/* Gives back a released handle's record once nothing maps it. */
static void released_settle(uint64_t handle)
{
    uint64_t v;
    if (carve_allocmap_find(&released, handle, &v) && count_end(handle) &&
        carve_allocmap_remove(&released, handle, &v))
        give_back(v);
}

CARVE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CARVE_MEM_CALL();
    int sdev;
    uint64_t bytes;
    carve__init();
    if (!R.cuMemRelease)
        return CUDA_ERROR_NOT_INITIALIZED;
    bool had = carve__unrecord(CARVE_KIND_HANDLE, handle, &sdev, &bytes);
    uint64_t rec;
    if (!had && carve_allocmap_find(&released, handle, &rec)) /* a retain's, maybe its last */
        carve__mem_in_flight_add(rec & CARVE_ALLOCMAP_BYTES_MAX);
    CUresult r = real_mem_release(handle);
    if (!had) {
        /* a handle's references are alike: once its record has gone with the first
         * release, each further one is a retain's */
        if (r == CUDA_SUCCESS && carve_allocmap_value_of(&map_counts, handle)) {
            retain_released(handle);
            released_settle(handle);
        }
        return r;
    }
    if (r != CUDA_SUCCESS) {
        carve__record(CARVE_KIND_HANDLE, handle, sdev, bytes);
        return r;
    }
    uint64_t v = (uint64_t)sdev << CARVE_ALLOCMAP_DEV_SHIFT | bytes;
    if (count_end(handle) || carve_allocmap_insert(&released, handle, v) != 0) {
        give_back(v); /* not mapped (or no memory to wait for its unmap) */
        return r;
    }
    released_settle(handle); /* its last unmap may have come since we looked */
    return r;
}

CARVE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemMap)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* counted before the call: a release racing with it must see the mapping */
    enum count_result up = carve__active() && size ? count_up(handle, ONE_MAPPING) : NO_COUNT;
    if (up == FULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bool counted = up == COUNTED;
    CUresult r = R.cuMemMap(ptr, size, offset, handle, flags);
    if (!counted)
        return r;
    if (r != CUDA_SUCCESS) {
        count_down(handle, ONE_MAPPING);
        /* a release of handle on another thread meanwhile saw the count and left the
         * give-back to its last unmap, which never comes for a map that was refused */
        released_settle(handle);
        return r;
    }
    /* noted once mapped: nothing else can map these addresses until they are unmapped, so
     * the note is the only one there (a driver maps aligned addresses only: bit 0 is free).
     * Without memory for it the mapping stays counted until the process ends. */
    if (carve_allocmap_insert(&mappings, ptr, handle) == 0)
        carve_allocmap_insert(&map_sizes, ptr, size);
    return r;
}

/* A retain is one more reference to a mapped handle: the driver keeps the handle, and its
 * memory, until a cuMemRelease for it as well. Counted once the driver has answered, as only
 * then is the handle known; meanwhile it is in flight, and no count is ended nor a retain's
 * release lost (above). The handle was given back at the unmap after its create's release,
 * until 2026-11-27: a tenant could hold its whole cap that way, again and again. */
CARVE_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                  void *addr)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemRetainAllocationHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!carve__active())
        return R.cuMemRetainAllocationHandle(handle, addr);
    atomic_fetch_add(&retains_in_flight, 1);
    CUresult r = R.cuMemRetainAllocationHandle(handle, addr);
    if (r == CUDA_SUCCESS && handle && count_up(*handle, ONE_RETAIN) == FULL) {
        R.cuMemRelease(*handle); /* the driver's reference goes with the refusal */
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    atomic_fetch_sub(&retains_in_flight, 1);
    return r;
}

/* Moves the notes of the mappings in [ptr, ptr + size) from key `from` to `to` (each address,
 * or it | 1), one mapping after the other; returns how many were moved. Taken for an unmap
 * (to | 1), a handle released while mapped goes with its last unmap, in the driver first:
 * its bytes are in flight until the unmap returns. */
static unsigned notes_move(CUdeviceptr ptr, size_t size, uint64_t from_bit, uint64_t to_bit)
{
    unsigned n = 0;
    for (uint64_t va = ptr, handle, len, rec; va - ptr < size; va += len, n++) {
        if (!carve_allocmap_remove(&mappings, va | from_bit, &handle))
            break;
        carve_allocmap_insert(&mappings, va | to_bit, handle);
        if (to_bit && carve_allocmap_find(&released, handle, &rec))
            carve__mem_in_flight_add(rec & CARVE_ALLOCMAP_BYTES_MAX);
        if (!carve_allocmap_remove(&map_sizes, va | from_bit, &len) || len == 0)
            len = size; /* the rest of the range */
        else
            carve_allocmap_insert(&map_sizes, va | to_bit, len);
    }
    return n;
}

CARVE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMemUnmap)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!carve__active())
        return R.cuMemUnmap(ptr, size);
    /* the range is whole mappings, one after the other. Their notes are taken before the
     * driver unmaps, while nothing else can map these addresses, and kept at address | 1:
     * once they are unmapped another thread may map them again and note its own mapping at
     * the address, which taking the notes by address afterwards could have taken instead
     * (that handle's release was then given back while it was still mapped, until
     * 2026-11-27). */
    if (!notes_move(ptr, size, 0, 1))
        return R.cuMemUnmap(ptr, size);
    CUresult r = R.cuMemUnmap(ptr, size);
    if (r != CUDA_SUCCESS) {
        notes_move(ptr, size, 1, 0); /* mapped still: the notes go back */
        return r;
    }
    for (uint64_t va = ptr, handle, len; va - ptr < size; va += len) {
        if (!carve_allocmap_remove(&mappings, va | 1, &handle))
            break;
        if (!carve_allocmap_remove(&map_sizes, va | 1, &len) || len == 0)
            len = size;
        count_down(handle, ONE_MAPPING);
        released_settle(handle);
    }
    return r;
}

/* ---- CUDA arrays: admit an estimate from the descriptor, then settle on what the driver
 * says the array needs (when it says: cuArrayGetMemoryRequirements may refuse). ---- */

static uint64_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    default:
        return 4; /* 32-bit formats; the upper bound for the rest */
    }
}

/* The bytes of `levels` levels from w x h x depth down, each half the one before in every
 * dimension above 1 (depth too, unless it counts layers or cube faces: flags), rows padded
 * to 512 bytes, as the driver takes them (its pages): driver 580 does not tell an array's
 * size (cuArrayGetMemoryRequirements refuses one made without deferred mapping). */
static uint64_t array_estimate(size_t w, size_t h, size_t depth, CUarray_format f,
                               unsigned int channels, unsigned int levels, unsigned int flags)
{
    uint64_t elem = format_bytes(f) * (channels ? channels : 1), total = 0;
    uint64_t dims[3] = {w ? w : 1, h ? h : 1, depth ? depth : 1};
    bool layers = flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    unsigned int n_levels = levels ? levels : 1;
    for (unsigned int l = 0; l < n_levels; l++) {
        if (dims[0] > (UINT64_MAX / 4 - PITCH_ALIGN) / elem)
            return UINT64_MAX / 4;
        uint64_t n = (dims[0] * elem + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
        for (int i = 1; i < 3; i++) {
            if (n > UINT64_MAX / 4 / dims[i])
                return UINT64_MAX / 4;
            n *= dims[i];
        }
        if (n > UINT64_MAX / 4 - total)
            return UINT64_MAX / 4;
        total += n;
        if (dims[0] == 1 && dims[1] == 1 && (layers || dims[2] == 1)) { /* the rest: as this */
            uint64_t rest = n_levels - l - 1;
            total = rest > (UINT64_MAX / 4 - total) / n ? UINT64_MAX / 4 : total + rest * n;
            break;
        }
        for (int i = 0; i < (layers ? 2 : 3); i++)
            dims[i] = dims[i] > 1 ? dims[i] / 2 : 1;
    }
    return carve_driver_takes(total);
}

static CUresult array_admit(struct carve_dev *d, uint64_t estimate, bool *counted)
{
    *counted = carve__dev_current(d) && estimate > 0;
    return *counted ? carve__admit(d, estimate) : CUDA_SUCCESS;
}

/* After a successful create: settle to the driver's number, record, or undo on denial. */
static CUresult array_settle(struct carve_dev *d, enum carve_kind kind, uint64_t key,
                             uint64_t estimate, CUresult req_r,
                             const CUDA_ARRAY_MEMORY_REQUIREMENTS *req)
{
    uint64_t actual =
        req_r == CUDA_SUCCESS && req->size ? carve_driver_takes(req->size) : estimate;
    CUresult r = settle(d, estimate, actual);
    if (r != CUDA_SUCCESS) {
        if (kind == CARVE_KIND_ARRAY)
            real_array_destroy(key);
        else
            real_mipmap_destroy(key);
        return r;
    }
    carve__record(kind, key, d->sdev, actual);
    return CUDA_SUCCESS;
}

static CUresult array_created(struct carve_dev *d, CUarray a, uint64_t estimate)
{
    CUDA_ARRAY_MEMORY_REQUIREMENTS req = {0};
    CUresult rr = R.cuArrayGetMemoryRequirements
                      ? R.cuArrayGetMemoryRequirements(&req, a, d->cu)
                      : CUDA_ERROR_NOT_SUPPORTED;
    return array_settle(d, CARVE_KIND_ARRAY, (uint64_t)(uintptr_t)a, estimate, rr, &req);
}

/* The driver call that creates an array, with its arguments: 2D and 3D share the rest. */
struct array_call {
    CUarray *handle;
    const CUDA_ARRAY_DESCRIPTOR *desc2;
    const CUDA_ARRAY3D_DESCRIPTOR *desc3;
};

static CUresult array_call_real(const struct array_call *c)
{
    return c->desc2 ? R.cuArrayCreate_v2(c->handle, c->desc2)
                    : R.cuArray3DCreate_v2(c->handle, c->desc3);
}

/* Admits the estimate, creates, and settles to what the driver says the array takes. */
static CUresult array_create_counted(const struct array_call *c, uint64_t est)
{
    struct carve_dev d;
    bool counted;
    CUresult r = array_admit(&d, est, &counted);
    if (r != CUDA_SUCCESS)
        return r;
    r = array_call_real(c);
    if (!counted)
        return r;
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, est);
        return r;
    }
    return array_created(&d, *c->handle, est);
}

CARVE_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuArrayCreate_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct array_call c = {pHandle, desc, NULL};
    if (!pHandle || !desc)
        return array_call_real(&c);
    return array_create_counted(
        &c, array_estimate(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels, 1, 0));
}

CARVE_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuArray3DCreate_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct array_call c = {pHandle, NULL, desc};
    if (!pHandle || !desc)
        return array_call_real(&c);
    return array_create_counted(&c, array_estimate(desc->Width, desc->Height, desc->Depth,
                                                   desc->Format, desc->NumChannels, 1,
                                                   desc->Flags));
}

CARVE_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                             const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                             unsigned int numMipmapLevels)
{
    CARVE_MEM_CALL();
    struct carve_dev d;
    bool counted;
    carve__init();
    if (!R.cuMipmappedArrayCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pHandle || !desc)
        return R.cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels);
    uint64_t est = array_estimate(desc->Width, desc->Height, desc->Depth, desc->Format,
                                  desc->NumChannels, numMipmapLevels, desc->Flags);
    CUresult r = array_admit(&d, est, &counted);
    if (r != CUDA_SUCCESS)
        return r;
    r = R.cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels);
    if (!counted)
        return r;
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, est);
        return r;
    }
    CUDA_ARRAY_MEMORY_REQUIREMENTS req = {0};
    CUresult rr = R.cuMipmappedArrayGetMemoryRequirements
                      ? R.cuMipmappedArrayGetMemoryRequirements(&req, *pHandle, d.cu)
                      : CUDA_ERROR_NOT_SUPPORTED;
    return array_settle(&d, CARVE_KIND_MIPMAP, (uint64_t)(uintptr_t)*pHandle, est, rr, &req);
}

CARVE_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuArrayDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_recorded(CARVE_KIND_ARRAY, (uint64_t)(uintptr_t)hArray,
                         real_array_destroy, NULL);
}

CARVE_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CARVE_MEM_CALL();
    carve__init();
    if (!R.cuMipmappedArrayDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_recorded(CARVE_KIND_MIPMAP, (uint64_t)(uintptr_t)hMipmappedArray,
                         real_mipmap_destroy, NULL);
}
