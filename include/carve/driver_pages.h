/* driver_pages.h - what the CUDA driver takes for a plain allocation, as measured on a GPU:
 * libcarve counts it, the simulated GPU takes it. */
#ifndef CARVE_DRIVER_PAGES_H
#define CARVE_DRIVER_PAGES_H

#include <stdint.h>

/* Driver 580 on an H200 (docs/results/2026-11-28-driver-facts-nvidia-h200.md): cuMemAlloc_v2
 * past 1 MiB takes whole 2 MiB pages (1 MiB and 1 byte took 2 MiB, 2 MiB and 1 byte 4 MiB,
 * 20 MiB and 1 byte 22 MiB; a 1000 x 1000 float array 4 MiB); allocations up to 1 MiB share
 * 2 MiB pages (64 of 1 byte, of 512 bytes or of 4 KiB took one page, 64 of 1 MiB 32 pages),
 * taken here in CARVE_SMALL_ALLOC_ALIGN steps. */
#define CARVE_LARGE_PAGE (UINT64_C(2) << 20)
#define CARVE_SMALL_ALLOC_ALIGN UINT64_C(512)

static inline uint64_t carve_driver_takes(uint64_t bytes)
{
    uint64_t step = bytes > CARVE_LARGE_PAGE / 2 ? CARVE_LARGE_PAGE : CARVE_SMALL_ALLOC_ALIGN;
    uint64_t taken = (bytes + step - 1) & ~(step - 1);
    return taken < bytes ? UINT64_MAX : taken; /* past 64 bits: fits no cap */
}

#endif
