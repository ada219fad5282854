/* mem_claim.c - the two sides of an idle slice's reclaim (tests/e2e/carved_reclaim.sh):
 *
 *   carve run --slice S -- mem_claim hold MIB SECONDS [GO]
 *       a tenant: allocates MIB MiB, runs no kernel, and sleeps (an idle slice). With GO:
 *       makes its context, says "context", waits (10 s at most) for the file GO, and says
 *       what cuMemGetInfo gives free before it allocates (tests/e2e/pid_namespaces.sh)
 *   CARVE_SLICE=SHM mem_claim PID
 *       anyone: writes PID (of mem_claim's PID namespace) into a free slot of the slice's
 *       table (mode 0666), holding 1 GiB,
 *       as a tenant that wants carved to kill another user's process would
 *
 * Exit 0, or 1 when the memory or the table could not be had; 2 for bad arguments. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem_common.h"
#include "slice_layout.h"

/* Waits for the file go to exist: 10 s at most. */
static void wait_for(const char *go)
{
    struct stat st;
    for (int i = 0; i < 200 && stat(go, &st) != 0; i++)
        usleep(50000);
}

static int hold(unsigned long mib, unsigned long seconds, const char *go)
{
    struct mem_api a;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    if (mem_api_dlsym(&a) != 0 || a.cuInit(0) != CUDA_SUCCESS ||
        a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        a.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        a.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "mem_claim: no GPU context\n");
        return 1;
    }
    if (go) {
        size_t free_bytes = 0, total = 0;
        printf("context\n");
        fflush(stdout);
        wait_for(go);
        if (a.cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS)
            printf("free %zu MiB of %zu MiB\n", free_bytes >> 20, total >> 20);
    }
    if (a.cuMemAlloc(&p, mib << 20) != CUDA_SUCCESS) {
        fprintf(stderr, "mem_claim: no %lu MiB\n", mib);
        return 1;
    }
    printf("holding %lu MiB\n", mib);
    fflush(stdout);
    sleep((unsigned)seconds);
    return 0;
}

static int claim(long pid)
{
    const char *shm = getenv("CARVE_SLICE");
    int fd = shm ? shm_open(shm, O_RDWR, 0) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct slice_table)) {
        fprintf(stderr, "mem_claim: cannot open the slice table (CARVE_SLICE)\n");
        return 1;
    }
    struct slice_table *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (t == MAP_FAILED)
        return 1;
    struct stat ns; /* the pid is taken for one of our PID namespace, as a tenant's is */
    uint64_t owner = SLOT_OWNER(stat("/proc/self/ns/pid", &ns) == 0 ? ns.st_ino : 0, pid);
    for (uint32_t i = 0; i < CARVE_SLICE_MAX_PROCS; i++) {
        uint64_t free_slot = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&t->slot[i].owner, &free_slot, owner))
            continue;
        atomic_store(&t->slot[i].start_time, 0);
        atomic_store(&t->slot[i].used[0], 1ull << 30);
        uint32_t hw = atomic_load(&t->slots_hw);
        while (hw < i + 1 && !atomic_compare_exchange_weak(&t->slots_hw, &hw, i + 1))
            ;
        printf("slot %u claims pid %ld\n", i, pid);
        return 0;
    }
    fprintf(stderr, "mem_claim: no free slot\n");
    return 1;
}

int main(int argc, char **argv)
{
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "hold") == 0)
        return hold(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10),
                    argc == 5 ? argv[4] : NULL);
    if (argc == 2 && atol(argv[1]) > 0)
        return claim(atol(argv[1]));
    fprintf(stderr, "usage: mem_claim hold MIB SECONDS [GO] | mem_claim PID\n");
    return 2;
}
