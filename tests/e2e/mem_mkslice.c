/* mem_mkslice.c - makes or removes a slice for mem_slice.sh when `carve run` is not built.
 *
 *   mem_mkslice create MEMSPEC   (MEMSPEC: SIZE, or IDX=SIZE,IDX=SIZE by NVML index)
 *   mem_mkslice remove NAME
 *
 * create prints the shm name to put in CARVE_SLICE. Device UUIDs come from the (simulated)
 * NVML, in physical order. NOTE: written before common/slice.h existed; the two calls
 * marked ADAPT follow the brief's names and must be matched to the header. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "size.h"
#include "slice.h"

static int parse_uuid(const char *t, unsigned char out[16])
{
    if (strncmp(t, "GPU-", 4) != 0)
        return -1;
    t += 4;
    for (int i = 0; i < 16; i++) {
        unsigned v;
        if (*t == '-')
            t++;
        if (sscanf(t, "%2x", &v) != 1)
            return -1;
        out[i] = (unsigned char)v;
        t += 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mem_mkslice create MEMSPEC | remove NAME\n");
        return 2;
    }
    if (strcmp(argv[1], "remove") == 0)
        return carve_slice_remove(argv[2]) == 0 ? 0 : 1; /* ADAPT */
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    __typeof__(&nvmlInit_v2) init = h ? (__typeof__(init))dlsym(h, "nvmlInit_v2") : NULL;
    __typeof__(&nvmlDeviceGetCount_v2) count = h ? (__typeof__(count))dlsym(h, "nvmlDeviceGetCount_v2") : NULL;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) byidx = h ? (__typeof__(byidx))dlsym(h, "nvmlDeviceGetHandleByIndex_v2") : NULL;
    __typeof__(&nvmlDeviceGetUUID) getuuid = h ? (__typeof__(getuuid))dlsym(h, "nvmlDeviceGetUUID") : NULL;
    unsigned int n = 0;
    if (!init || !count || !byidx || !getuuid || init() != NVML_SUCCESS || count(&n) != NVML_SUCCESS) {
        fprintf(stderr, "mem_mkslice: no NVML (set LD_LIBRARY_PATH to the simulated GPU)\n");
        return 1;
    }
    unsigned char uuids[CARVE_SLICE_MAX_DEVICES][16];
    uint64_t caps[CARVE_SLICE_MAX_DEVICES] = {0};
    for (unsigned int i = 0; i < n && i < CARVE_SLICE_MAX_DEVICES; i++) {
        nvmlDevice_t d;
        char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        if (byidx(i, &d) != NVML_SUCCESS || getuuid(d, text, sizeof(text)) != NVML_SUCCESS ||
            parse_uuid(text, uuids[i]) != 0)
            return 1;
    }
    char *spec = strdup(argv[2]);
    for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        uint64_t bytes;
        unsigned idx = 0;
        if (eq) {
            *eq = '\0';
            idx = (unsigned)atoi(tok);
        }
        if (carve_parse_size(eq ? eq + 1 : tok, &bytes) != 0 || idx >= n) /* ADAPT */
            return 1;
        if (eq)
            caps[idx] = bytes;
        else
            for (unsigned i = 0; i < n; i++)
                caps[i] = bytes;
    }
    char name[128];
    if (carve_slice_create("mem-e2e", n, uuids, caps, name, sizeof(name)) != 0) /* ADAPT */
        return 1;
    printf("%s\n", name);
    return 0;
}
