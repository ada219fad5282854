/* driver_pages.h - what the CUDA driver takes for a plain allocation, as measured on a GPU:
 * libcarve counts it, the simulated GPU takes it. */
#ifndef CARVE_DRIVER_PAGES_H
#define CARVE_DRIVER_PAGES_H

#include <stdbool.h>
#include <stdint.h>

/* Driver 580 on an H200 (docs/results/2026-11-28-driver-facts-nvidia-h200.md and the second
 * lease's docs/results/2026-11-28-driver-facts-steps-nvidia-h200.md), cuMemAlloc_v2:
 *  - past 1 MiB, whole 2 MiB pages: 1 MiB and 1 byte took 2 MiB, 2 MiB and 1 byte 4 MiB,
 *    20 MiB and 1 byte 22 MiB (a 1000 x 1000 float array 4 MiB);
 *  - up to 1 MiB, the size in 512-byte steps, packed into 2 MiB pages that no allocation
 *    straddles: 4096 allocations of 1 byte took one page, of 513 bytes two, of 4097 bytes
 *    ten (455 to a page), of 256 KiB and 1 byte 147 pages for 1023 (7 to a page), of 512 KiB
 *    and 1 byte 171 for 511 (3 to a page). Each is counted as its part of such a page: the
 *    page over how many of its size fit in one (512 KiB and 1 byte: 699051 bytes). */
#define CARVE_LARGE_PAGE (UINT64_C(2) << 20)
#define CARVE_SMALL_ALLOC_ALIGN UINT64_C(512)

/* Whether an allocation of bytes shares its pages with others (what it is counted, from
 * carve_driver_takes, answers the same: at most 1 MiB too). */
static inline bool carve_driver_packs(uint64_t bytes)
{
    return bytes <= CARVE_LARGE_PAGE / 2;
}

/* The slot a packed allocation takes in its page. */
static inline uint64_t carve_driver_step(uint64_t bytes)
{
    return (bytes + CARVE_SMALL_ALLOC_ALIGN - 1) & ~(CARVE_SMALL_ALLOC_ALIGN - 1);
}

static inline uint64_t carve_driver_takes(uint64_t bytes)
{
    if (!carve_driver_packs(bytes)) {
        uint64_t taken = (bytes + CARVE_LARGE_PAGE - 1) & ~(CARVE_LARGE_PAGE - 1);
        return taken < bytes ? UINT64_MAX : taken; /* past 64 bits: fits no cap */
    }
    uint64_t step = carve_driver_step(bytes);
    if (step == 0)
        return 0;
    uint64_t per_page = CARVE_LARGE_PAGE / step;
    return (CARVE_LARGE_PAGE + per_page - 1) / per_page;
}

#endif
