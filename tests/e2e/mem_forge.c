/* mem_forge.c - a tenant that cheats: it fills its slice to the cap, then zeroes the usage
 * counters in the slice's table (which tenants can write), so that libcarve admits more,
 * and holds what it got. carved must see it from NVML (tests/e2e/carved.sh).
 *
 *   carve run --slice S -- mem_forge EXTRA_MIB HOLD_SECONDS
 *
 * Prints "forged: holding N MiB" once it holds the memory; exit 0, or 1 when the forgery
 * could not be made (no slice, no memory beyond the cap). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem_common.h"
#include "slice_layout.h"

#define CHUNK (64ull << 20)

static void zero_counters(struct slice_table *t)
{
    for (uint32_t i = 0; i < CARVE_SLICE_MAX_PROCS; i++)
        for (int d = 0; d < CARVE_SLICE_MAX_DEVICES; d++)
            atomic_store(&t->slot[i].used[d], 0);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mem_forge EXTRA_MIB HOLD_SECONDS\n");
        return 2;
    }
    unsigned long extra = strtoul(argv[1], NULL, 10), hold = strtoul(argv[2], NULL, 10);
    const char *shm = getenv("CARVE_SLICE");
    struct mem_api a;
    CUdevice dev;
    CUcontext ctx;
    if (!shm || mem_api_dlsym(&a) != 0 || a.cuInit(0) != CUDA_SUCCESS ||
        a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "mem_forge: no slice (CARVE_SLICE) or no GPU context\n");
        return 1;
    }
    int fd = shm_open(shm, O_RDWR, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct slice_table)) {
        perror("mem_forge: the slice table");
        return 1;
    }
    struct slice_table *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED)
        return 1;
    CUdeviceptr p;
    unsigned long honest = 0, forged = 0;
    while (a.cuMemAlloc(&p, CHUNK) == CUDA_SUCCESS) /* up to the cap, honestly */
        honest += CHUNK >> 20;
    while (forged < extra) {
        zero_counters(t);
        if (a.cuMemAlloc(&p, CHUNK) != CUDA_SUCCESS)
            break;
        forged += CHUNK >> 20;
    }
    zero_counters(t);
    printf("forged: holding %lu MiB (%lu MiB within the cap, %lu beyond)\n", honest + forged,
           honest, forged);
    fflush(stdout);
    sleep((unsigned)hold);
    return forged > 0 ? 0 : 1;
}
