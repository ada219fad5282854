/* mem.c - wrappers of the counted allocation calls and their frees: device pointers
 * (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged), physical allocations
 * (cuMemCreate/cuMemRelease) and CUDA arrays.
 *
 * Every counted allocation is admitted before the real call, given back if the call fails,
 * and recorded with what it counted, so that its free gives back exactly that. */
#include "libcarve.h"

#include "allocmap.h"

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

/* Admits bytes, calls the driver (managed when flags >= 0), records what was counted. The
 * caller has run carve__init (which resolves the real pointers). */
static CUresult ptr_alloc_counted(CUdeviceptr *dptr, size_t bytes, int managed_flags)
{
    struct carve_dev d;
    bool managed = managed_flags >= 0;
    if (managed ? !R.cuMemAllocManaged : !R.cuMemAlloc_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    bool count = carve__dev_current(&d) && dptr && bytes != 0;
    CUresult r = count ? carve__admit(&d, bytes) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    r = managed ? R.cuMemAllocManaged(dptr, bytes, (unsigned int)managed_flags)
                : R.cuMemAlloc_v2(dptr, bytes);
    if (!count)
        return r;
    if (r != CUDA_SUCCESS)
        carve__release(d.sdev, bytes);
    else
        carve__record(CARVE_KIND_PTR, *dptr, d.sdev, bytes);
    return r;
}

CARVE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    carve__init(); /* before the real pointer is read: this may be the first call we see */
    return ptr_alloc_counted(dptr, bytesize, -1);
}

CARVE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    carve__init(); /* before the real pointer is read */
    if (flags > INT32_MAX) /* no valid flag is that large: let the driver refuse it */
        return R.cuMemAllocManaged ? R.cuMemAllocManaged(dptr, bytesize, flags)
                                   : CUDA_ERROR_NOT_INITIALIZED;
    return ptr_alloc_counted(dptr, bytesize, (int)flags);
}

CARVE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
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
        bound *= Height;
    CUresult r = carve__admit(&d, bound);
    if (r != CUDA_SUCCESS)
        return r;
    r = R.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        carve__release(d.sdev, bound);
        return r;
    }
    uint64_t actual = (uint64_t)*pPitch * Height;
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
    if (!had)
        return r;
    if (carve__free_done(r))
        carve__release(sdev, bytes);
    else
        carve__record(kind, key, sdev, bytes);
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
    carve__init();
    if (!R.cuMemFree_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_recorded(CARVE_KIND_PTR, dptr, real_mem_free, mem_free_unrecorded);
}

CARVE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    struct carve_dev d;
    carve__init();
    if (!R.cuMemCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!handle || !prop || size == 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !carve__dev_of(prop->location.id, &d))
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
    return r;
}

/* ---- virtual memory: the driver frees a handle's memory when it is released and no
 * longer mapped, whichever comes last. A handle released while mapped (the usual idiom:
 * map, then release at once) moves its record to `released`; the unmap of its last mapping
 * gives it back. Both sides look at the other after their own change (sequentially
 * consistent atomics), and one remove wins: it is given back once, and never early. ---- */

static struct carve_allocmap mappings;  /* mapped address -> handle */
static struct carve_allocmap map_sizes; /* mapped address -> bytes mapped there */
static struct carve_allocmap released;  /* handle released while mapped -> its record */

void carve__vmm_reset(void)
{
    carve_allocmap_reset(&mappings);
    carve_allocmap_reset(&map_sizes);
    carve_allocmap_reset(&released);
}

/* Gives back a released handle's record once nothing maps it. */
static void released_settle(uint64_t handle)
{
    uint64_t v;
    if (!carve_allocmap_has_value(&mappings, handle) &&
        carve_allocmap_remove(&released, handle, &v))
        carve__release((int)(v >> CARVE_ALLOCMAP_DEV_SHIFT), v & CARVE_ALLOCMAP_BYTES_MAX);
}

CARVE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    int sdev;
    uint64_t bytes;
    carve__init();
    if (!R.cuMemRelease)
        return CUDA_ERROR_NOT_INITIALIZED;
    bool had = carve__unrecord(CARVE_KIND_HANDLE, handle, &sdev, &bytes);
    CUresult r = real_mem_release(handle);
    if (!had)
        return r;
    if (r != CUDA_SUCCESS) {
        carve__record(CARVE_KIND_HANDLE, handle, sdev, bytes);
        return r;
    }
    uint64_t v = (uint64_t)sdev << CARVE_ALLOCMAP_DEV_SHIFT | bytes;
    if (!carve_allocmap_has_value(&mappings, handle) ||
        carve_allocmap_insert(&released, handle, v) != 0) {
        carve__release(sdev, bytes);
        return r;
    }
    released_settle(handle); /* its last unmap may have come since we looked */
    return r;
}

CARVE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    carve__init();
    if (!R.cuMemMap)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* noted before the call: a release racing with it must see the mapping */
    bool noted = carve__active() && size && carve_allocmap_insert(&map_sizes, ptr, size) == 0;
    if (noted && carve_allocmap_insert(&mappings, ptr, handle) != 0) {
        carve_allocmap_remove_pair(&map_sizes, ptr, size);
        noted = false;
    }
    CUresult r = R.cuMemMap(ptr, size, offset, handle, flags);
    /* undo our note and only ours: a map refused because ptr is mapped already has noted
     * ptr twice, and removing by address alone could take the live mapping's note, after
     * which its handle's release would be given back while the driver still holds it */
    if (r != CUDA_SUCCESS && noted) {
        carve_allocmap_remove_pair(&mappings, ptr, handle);
        carve_allocmap_remove_pair(&map_sizes, ptr, size);
        /* a release of handle on another thread meanwhile saw our note and left the give-back
         * to its last unmap, which never comes for a map that was refused */
        released_settle(handle);
    }
    return r;
}

CARVE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    carve__init();
    if (!R.cuMemUnmap)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuMemUnmap(ptr, size);
    if (r != CUDA_SUCCESS || !carve__active())
        return r;
    /* the range is whole mappings, one after the other */
    for (uint64_t va = ptr, handle, len; va - ptr < size; va += len) {
        if (!carve_allocmap_remove(&mappings, va, &handle))
            break;
        if (!carve_allocmap_remove(&map_sizes, va, &len) || len == 0)
            len = size;
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

static uint64_t array_estimate(size_t w, size_t h, size_t depth, CUarray_format f,
                               unsigned int channels)
{
    uint64_t n = format_bytes(f) * (channels ? channels : 1);
    size_t dims[3] = {w, h ? h : 1, depth ? depth : 1};
    for (int i = 0; i < 3; i++) {
        if (dims[i] && n > UINT64_MAX / dims[i])
            return UINT64_MAX / 4;
        n *= dims[i];
    }
    return n;
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
    uint64_t actual = req_r == CUDA_SUCCESS && req->size ? req->size : estimate;
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
    carve__init();
    if (!R.cuArrayCreate_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct array_call c = {pHandle, desc, NULL};
    if (!pHandle || !desc)
        return array_call_real(&c);
    return array_create_counted(
        &c, array_estimate(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels));
}

CARVE_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    carve__init();
    if (!R.cuArray3DCreate_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct array_call c = {pHandle, NULL, desc};
    if (!pHandle || !desc)
        return array_call_real(&c);
    return array_create_counted(&c, array_estimate(desc->Width, desc->Height, desc->Depth,
                                                   desc->Format, desc->NumChannels));
}

CARVE_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                             const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                             unsigned int numMipmapLevels)
{
    struct carve_dev d;
    bool counted;
    carve__init();
    if (!R.cuMipmappedArrayCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pHandle || !desc)
        return R.cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels);
    /* every level is at most half the one before: twice the base level bounds the chain */
    uint64_t base = array_estimate(desc->Width, desc->Height, desc->Depth, desc->Format,
                                   desc->NumChannels);
    uint64_t est = numMipmapLevels < 2 ? base : base > UINT64_MAX / 2 ? UINT64_MAX / 2 : 2 * base;
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
    carve__init();
    if (!R.cuArrayDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_recorded(CARVE_KIND_ARRAY, (uint64_t)(uintptr_t)hArray,
                         real_array_destroy, NULL);
}

CARVE_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    carve__init();
    if (!R.cuMipmappedArrayDestroy)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_recorded(CARVE_KIND_MIPMAP, (uint64_t)(uintptr_t)hMipmappedArray,
                         real_mipmap_destroy, NULL);
}
