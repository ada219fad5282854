/* sim_mem.c - the simulated driver's allocation records and the memory APIs built on them
 * (cuMemAlloc and kin, host memory, virtual memory management, arrays).
 *
 * Memory is backed by anonymous mappings (device pointer == host address), so copies work. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "carve/cuda_abi.h"
#include "carve/driver_pages.h"
#include "sim_cuda.h"
#include "simdev.h"

#define PITCH_ALIGN 512

/* ---------- allocation records ---------- */

#define REC_BUCKETS 4096
static struct rec *recs[REC_BUCKETS];
static uint64_t next_handle = 0x1000;

static unsigned rec_bucket(uint64_t key)
{
    return (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 52) % REC_BUCKETS;
}

struct rec *sim_cuda__rec_add(enum rec_kind kind, uint64_t key, uint64_t size, uint64_t charge,
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
    pthread_mutex_lock(&sim_cuda__lock);
    unsigned b = rec_bucket(key);
    r->next = recs[b];
    recs[b] = r;
    pthread_mutex_unlock(&sim_cuda__lock);
    return r;
}

/* Unlinks and returns key's record of one of the kinds in mask, or NULL. */
struct rec *sim_cuda__rec_take_locked(uint64_t key, unsigned mask)
{
    struct rec **pp = &recs[rec_bucket(key)], *r;
    for (; (r = *pp); pp = &r->next)
        if (r->key == key && (mask & (1u << r->kind))) {
            *pp = r->next;
            break;
        }
    return r;
}

struct rec *sim_cuda__rec_take(uint64_t key, unsigned mask)
{
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *r = sim_cuda__rec_take_locked(key, mask);
    pthread_mutex_unlock(&sim_cuda__lock);
    return r;
}

/* key's record of one of the kinds in mask, left in place; NULL if none. Lock held. */
struct rec *sim_cuda__rec_find_locked(uint64_t key, unsigned mask)
{
    for (struct rec *r = recs[rec_bucket(key)]; r; r = r->next)
        if (r->key == key && (mask & (1u << r->kind)))
            return r;
    return NULL;
}

uint64_t sim_cuda__new_handle(void)
{
    pthread_mutex_lock(&sim_cuda__lock);
    uint64_t h = next_handle++;
    pthread_mutex_unlock(&sim_cuda__lock);
    return h;
}

static void *map_backing(uint64_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Device memory of `size` bytes on phys, charged `charge`: the pointer, or 0. */
CUresult sim_cuda__alloc_device(CUdeviceptr *dptr, uint64_t size, uint64_t charge, int phys,
                                enum rec_kind kind, struct rec **out)
{
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (charge && !sim_take(phys, charge))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = map_backing(size);
    struct rec *r = p ? sim_cuda__rec_add(kind, (uint64_t)(uintptr_t)p, size, charge, phys) : NULL;
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

/* ---------- small allocations: packed into 2 MiB pages, as driver 580 does ----------
 * (carve/driver_pages.h): cuMemAlloc_v2 of up to 1 MiB takes a slot of its size in 512-byte
 * steps in a page of such slots, and the page, whole, holds its 2 MiB of the device until its
 * last slot is freed. */

struct small_page {
    uint64_t base, step; /* its 2 MiB of backing, the size of its slots */
    int phys;
    unsigned slots, used, hint; /* hint: where to look for a free slot first */
    unsigned char taken[CARVE_LARGE_PAGE / CARVE_SMALL_ALLOC_ALIGN];
    struct small_page *next;
};
static struct small_page *small_pages; /* under sim_cuda__lock */

/* A free slot of pg, taken; 0 when none. Lock held. */
static uint64_t take_slot_locked(struct small_page *pg)
{
    for (unsigned n = 0, i = pg->hint; n < pg->slots && pg->used < pg->slots; n++) {
        if (!pg->taken[i]) {
            pg->taken[i] = 1;
            pg->used++;
            pg->hint = (i + 1) % pg->slots;
            return pg->base + i * pg->step;
        }
        i = (i + 1) % pg->slots;
    }
    return 0;
}

/* A slot of step bytes on phys, in a page with room or a new one: its address (*out its
 * page), or 0 when the device has no room for a new page. */
static uint64_t small_slot(int phys, uint64_t step, struct small_page **out)
{
    uint64_t addr = 0;
    pthread_mutex_lock(&sim_cuda__lock);
    for (struct small_page *pg = small_pages; pg && !addr; pg = pg->next)
        if (pg->phys == phys && pg->step == step && (addr = take_slot_locked(pg)))
            *out = pg;
    pthread_mutex_unlock(&sim_cuda__lock);
    if (addr)
        return addr;
    void *base = mmap(NULL, CARVE_LARGE_PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct small_page *pg = base == MAP_FAILED ? NULL : calloc(1, sizeof(*pg));
    if (!pg || !sim_take(phys, CARVE_LARGE_PAGE)) {
        if (base != MAP_FAILED)
            munmap(base, CARVE_LARGE_PAGE);
        free(pg);
        return 0;
    }
    *pg = (struct small_page){.base = (uint64_t)(uintptr_t)base, .step = step, .phys = phys,
                              .slots = (unsigned)(CARVE_LARGE_PAGE / step)};
    pthread_mutex_lock(&sim_cuda__lock);
    addr = take_slot_locked(pg); /* before it is listed: a listed page has a slot taken */
    pg->next = small_pages;
    small_pages = pg;
    pthread_mutex_unlock(&sim_cuda__lock);
    *out = pg;
    return addr;
}

/* Frees a slot; its page goes, and gives its memory back, with its last slot. */
static void small_free(struct small_page *pg, uint64_t addr)
{
    bool empty;
    pthread_mutex_lock(&sim_cuda__lock);
    pg->taken[(addr - pg->base) / pg->step] = 0;
    empty = --pg->used == 0;
    if (empty) {
        struct small_page **pp = &small_pages;
        while (*pp != pg)
            pp = &(*pp)->next;
        *pp = pg->next;
    }
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!empty)
        return;
    munmap((void *)(uintptr_t)pg->base, CARVE_LARGE_PAGE);
    sim_give(pg->phys, CARVE_LARGE_PAGE);
    free(pg);
}

/* cuMemAlloc_v2 and the pitched allocation: up to 1 MiB a slot in a page, else whole pages. */
static CUresult alloc_plain(CUdeviceptr *dptr, uint64_t size, int phys)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!carve_driver_packs(size))
        return sim_cuda__alloc_device(dptr, size, carve_driver_takes(size), phys, REC_MEM, NULL);
    struct small_page *pg = NULL;
    uint64_t step = carve_driver_step(size);
    uint64_t addr = small_slot(phys, step, &pg);
    if (!addr)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct rec *r = sim_cuda__rec_add(REC_MEM, addr, size, 0, phys);
    if (!r) {
        small_free(pg, addr);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->page = pg;
    *dptr = (CUdeviceptr)addr;
    return CUDA_SUCCESS;
}

void sim_cuda__rec_free(struct rec *r)
{
    if (r->page)
        small_free(r->page, r->key);
    else if (r->kind == REC_MEM || r->kind == REC_MANAGED || r->kind == REC_HOST ||
             r->kind == REC_POOL || r->kind == REC_RESERVE || r->kind == REC_GRAPH)
        munmap((void *)(uintptr_t)r->key, r->size ? r->size : 1);
    if (r->charge)
        sim_give(r->phys, r->charge);
    if (r->kind == REC_MANAGED)
        sim_unlisted(r->phys, r->charge, false);
    free(r);
}

API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    NEED_CTX(c);
    if (sim_config()->alloc_delay_us)
        usleep(sim_config()->alloc_delay_us);
    return alloc_plain(dptr, bytesize, c->phys);
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
    CUresult r = alloc_plain(dptr, (uint64_t)p * height, c->phys);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    NEED_CTX(c);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t taken = carve_driver_takes(bytesize);
    CUresult r = sim_cuda__alloc_device(dptr, bytesize, taken, c->phys, REC_MANAGED, NULL);
    if (r == CUDA_SUCCESS)
        sim_unlisted(c->phys, taken, true);
    return r;
}

API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    NEED_INIT();
    if (dptr == 0)
        return CUDA_SUCCESS;
    if (sim_config()->free_delay_us)
        usleep(sim_config()->free_delay_us);
    return sim_cuda__free_now(dptr);
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    NEED_INIT();
    CUresult res = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&sim_cuda__lock);
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
    pthread_mutex_unlock(&sim_cuda__lock);
    return res;
}

API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    NEED_CTX(c);
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t t = sim_config()->memory[c->phys], used = sim_device_used(c->phys);
    if (sim_cuda__visible_gi[c->dev]) { /* in a MIG instance: its memory, used by its processes */
        t = sim_cuda__mig_memory;
        used = sim_instance_used(c->phys, sim_cuda__visible_gi[c->dev]);
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
    CUresult r = sim_cuda__alloc_device(&d, bytes, 0, c->phys, REC_HOST, NULL);
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
    struct rec *r = sim_cuda__rec_take((uint64_t)(uintptr_t)p, 1u << REC_HOST);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    sim_cuda__rec_free(r);
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
    sim_cuda__wait_mark(c->phys, atomic_load(&c->last_mark));
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

int sim_cuda__phys_of_location(const CUmemLocation *loc)
{
    if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE || !sim_cuda__valid_dev(loc->id))
        return -1;
    return sim_cuda__visible[loc->id];
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
    int phys = sim_cuda__phys_of_location(&prop->location);
    if (phys < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!sim_take(phys, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t h = sim_cuda__new_handle();
    struct rec *r = sim_cuda__rec_add(REC_HANDLE, h, size, size, phys);
    if (!r) {
        sim_give(phys, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&sim_cuda__lock);
    r->refs = 1;
    pthread_mutex_unlock(&sim_cuda__lock);
    *handle = h;
    return CUDA_SUCCESS;
}

/* As on a GPU, a handle lives until a release for its cuMemCreate and for each retain, and
 * its memory until its last unmap after that. */
API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED_INIT();
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *r = sim_cuda__rec_find_locked(handle, 1u << REC_HANDLE);
    bool last = r && --r->refs == 0, gone = last && r->maps == 0;
    if (last) {
        sim_cuda__rec_take_locked(handle, 1u << REC_HANDLE);
        r->released = !gone;
    }
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    if (gone)
        sim_cuda__rec_free(r);
    return CUDA_SUCCESS;
}

/* The handle mapped at addr (anywhere in the mapping), with one more reference: one released
 * already, alive for its mappings, is a handle again. */
API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    NEED_INIT();
    uint64_t va = (uint64_t)(uintptr_t)addr;
    struct rec *h = NULL;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
    for (unsigned b = 0; !h && b < REC_BUCKETS; b++)
        for (struct rec *m = recs[b]; !h && m; m = m->next)
            if (m->kind == REC_MAPPING && m->key <= va && va - m->key < m->size)
                h = m->handle;
    if (h && h->released) {
        h->released = false;
        unsigned b = rec_bucket(h->key);
        h->next = recs[b];
        recs[b] = h;
    }
    if (h) {
        h->refs++;
        *handle = h->key;
    }
    pthread_mutex_unlock(&sim_cuda__lock);
    if (h && sim_config()->retain_delay_us)
        usleep(sim_config()->retain_delay_us);
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
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
    if (!sim_cuda__rec_add(REC_RESERVE, (uint64_t)(uintptr_t)p, size, 0, 0)) {
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    NEED_INIT();
    struct rec *r = sim_cuda__rec_take(ptr, 1u << REC_RESERVE);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    sim_cuda__rec_free(r);
    return CUDA_SUCCESS;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    NEED_INIT();
    if (!ptr || size == 0 || size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_config()->map_delay_us)
        usleep(sim_config()->map_delay_us);
    pthread_mutex_lock(&sim_cuda__lock);
    struct rec *h = recs[rec_bucket(handle)];
    while (h && !(h->key == handle && h->kind == REC_HANDLE))
        h = h->next;
    /* as on a GPU, a range that is mapped already cannot be mapped again */
    for (unsigned b = 0; h && b < REC_BUCKETS; b++)
        for (struct rec *m = recs[b]; h && m; m = m->next)
            if (m->kind == REC_MAPPING && m->key < ptr + size && ptr < m->key + m->size)
                h = NULL;
    if (h)
        h->maps++;
    pthread_mutex_unlock(&sim_cuda__lock);
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *m = NULL;
    if (mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0 ||
        !(m = sim_cuda__rec_add(REC_MAPPING, ptr, size, 0, h->phys))) {
        pthread_mutex_lock(&sim_cuda__lock);
        h->maps--;
        pthread_mutex_unlock(&sim_cuda__lock);
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
        struct rec *m = sim_cuda__rec_take(va, 1u << REC_MAPPING);
        if (!m)
            break;
        struct rec *h = m->handle;
        pthread_mutex_lock(&sim_cuda__lock);
        bool gone = --h->maps == 0 && h->released;
        pthread_mutex_unlock(&sim_cuda__lock);
        if (gone)
            sim_cuda__rec_free(h);
        va += m->size;
        free(m);
    }
    if (mprotect((void *)(uintptr_t)ptr, size, PROT_NONE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_config()->unmap_delay_us)
        usleep(sim_config()->unmap_delay_us);
    return CUDA_SUCCESS;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                            size_t count)
{
    NEED_INIT();
    return ptr && desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
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
        if (!(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP))) /* else: layers */
            dep = dep > 1 ? dep / 2 : dep;
    }
    total = carve_driver_takes(total);
    if (!sim_take(c->phys, total))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t key = sim_cuda__new_handle();
    if (!sim_cuda__rec_add(kind, key, total, total, c->phys)) {
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
    struct rec *r = sim_cuda__rec_take(key, 1u << kind);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_cuda__rec_free(r);
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

/* Driver 580 refuses the question for an array made without deferred mapping
 * (docs/results/2026-11-28-driver-facts-nvidia-h200.md), and this driver makes no other. */
static CUresult array_requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, uint64_t key,
                                   enum rec_kind kind)
{
    NEED_INIT();
    if (!req)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_cuda__lock);
    bool known = sim_cuda__rec_find_locked(key, 1u << kind) != NULL;
    pthread_mutex_unlock(&sim_cuda__lock);
    return known ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
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
