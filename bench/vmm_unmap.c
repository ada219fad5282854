/* vmm_unmap.c - what unmapping and releasing a page costs with many pages mapped: the
 * virtual memory API as PyTorch's expandable segments use it (one handle of the allocation
 * granularity per page, each mapped at its own address; a page is given back by unmapping
 * it and then releasing its handle).
 *
 *   vmm_unmap [PAGES...]        (default 2000 8000 20000)
 *
 * For each count: reserves the address range, creates and maps PAGES handles, then times
 * cuMemUnmap and cuMemRelease of every page, one call at a time on CLOCK_MONOTONIC, and
 * prints one line of the mean per page in microseconds. Run it plain and under `carve run`
 * (with a cap that holds PAGES pages) to see what carve adds. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_load.h"

struct vmm {
    __typeof__(cuMemGetAllocationGranularity) *granularity;
    __typeof__(cuMemCreate) *create;
    __typeof__(cuMemRelease) *release;
    __typeof__(cuMemAddressReserve) *reserve;
    __typeof__(cuMemAddressFree) *address_free;
    __typeof__(cuMemMap) *map;
    __typeof__(cuMemUnmap) *unmap;
};

static int vmm_resolve(struct vmm *v, void *h)
{
    v->granularity = (__typeof__(v->granularity))dlsym(h, "cuMemGetAllocationGranularity");
    v->create = (__typeof__(v->create))dlsym(h, "cuMemCreate");
    v->release = (__typeof__(v->release))dlsym(h, "cuMemRelease");
    v->reserve = (__typeof__(v->reserve))dlsym(h, "cuMemAddressReserve");
    v->address_free = (__typeof__(v->address_free))dlsym(h, "cuMemAddressFree");
    v->map = (__typeof__(v->map))dlsym(h, "cuMemMap");
    v->unmap = (__typeof__(v->unmap))dlsym(h, "cuMemUnmap");
    return v->granularity && v->create && v->release && v->reserve && v->address_free &&
                   v->map && v->unmap
               ? 0
               : -1;
}

/* Maps pages handles of gran bytes, then unmaps and releases each; 0, or -1 on a failure. */
static int run(const struct bcu *cu, const struct vmm *v, const CUmemAllocationProp *prop,
               size_t gran, size_t pages)
{
    CUmemGenericAllocationHandle *h = calloc(pages, sizeof(*h));
    CUdeviceptr base = 0;
    CUresult rc;
    size_t made = 0;
    int ret = -1;
    if (!h)
        return -1;
    if ((rc = v->reserve(&base, pages * gran, 0, 0, 0)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuMemAddressReserve of %zu pages: %s\n", pages, bcu_errname(cu, rc));
        goto out;
    }
    for (; made < pages; made++)
        if ((rc = v->create(&h[made], gran, prop, 0)) != CUDA_SUCCESS ||
            (rc = v->map(base + made * gran, gran, 0, h[made], 0)) != CUDA_SUCCESS) {
            fprintf(stderr, "page %zu of %zu: %s\n", made, pages, bcu_errname(cu, rc));
            goto out;
        }
    uint64_t unmap_ns = 0, release_ns = 0;
    for (size_t i = 0; i < pages; i++) {
        uint64_t t0 = bcu_now_ns();
        rc = v->unmap(base + i * gran, gran);
        uint64_t t1 = bcu_now_ns();
        CUresult rr = v->release(h[i]);
        uint64_t t2 = bcu_now_ns();
        if (rc != CUDA_SUCCESS || rr != CUDA_SUCCESS) {
            fprintf(stderr, "page %zu: unmap %s, release %s\n", i, bcu_errname(cu, rc),
                    bcu_errname(cu, rr));
            made = 0;
            goto out;
        }
        unmap_ns += t1 - t0;
        release_ns += t2 - t1;
    }
    made = 0;
    printf("pages %6zu  unmap %8.2f us/page  release %8.2f us/page\n", pages,
           (double)unmap_ns / (double)pages / 1e3, (double)release_ns / (double)pages / 1e3);
    ret = 0;
out:
    for (size_t i = 0; i < made; i++) {
        v->unmap(base + i * gran, gran);
        v->release(h[i]);
    }
    if (base)
        v->address_free(base, pages * gran);
    free(h);
    return ret;
}

int main(int argc, char **argv)
{
    static const size_t dflt[] = {2000, 8000, 20000};
    struct bcu cu;
    struct vmm v;
    size_t gran = 0;
    if (bcu_open(&cu, 0) != 0)
        return 1;
    if (vmm_resolve(&v, cu.handle) != 0) {
        fprintf(stderr, "vmm_unmap: libcuda.so.1 lacks the virtual memory API\n");
        return 1;
    }
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = cu.dev;
    if (v.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !gran)
        gran = 2u << 20;
    printf("# %s, pages of %zu KiB\n", cu.name, gran >> 10);
    int n = argc > 1 ? argc - 1 : (int)(sizeof(dflt) / sizeof(dflt[0])), failed = 0;
    for (int i = 0; i < n; i++) {
        size_t pages = argc > 1 ? strtoul(argv[i + 1], NULL, 10) : dflt[i];
        if (pages == 0 || run(&cu, &v, &prop, gran, pages) != 0)
            failed = 1;
    }
    bcu_close(&cu);
    return failed;
}
