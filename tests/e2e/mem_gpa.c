/* mem_gpa.c - the memory walk resolved the way the CUDA runtime does it: dlsym finds
 * cuGetProcAddress_v2, that is asked for "cuGetProcAddress" at version 12000, and every
 * other entry point comes from the returned pointer by its base name. */
#include <dlfcn.h>
#include <stdio.h>

#include "mem_common.h"

int main(void)
{
    struct mem_api api;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(&cuGetProcAddress_v2) gpa0 = h ? dlsym(h, "cuGetProcAddress_v2") : NULL, gpa;
    CUdriverProcAddressQueryResult qr;
    if (!gpa0 || gpa0("cuGetProcAddress", (void **)&gpa, 12000, 0, &qr) != CUDA_SUCCESS) {
        printf("FAIL - cannot resolve cuGetProcAddress through cuGetProcAddress_v2\n");
        return 1;
    }
    int failed = 0;
#define MEM_API_GPA(base, name)                                                     \
    if (gpa(#base, (void **)&api.base, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &qr) !=  \
            CUDA_SUCCESS || !api.base)                                              \
        failed += mem_check(0, "cuGetProcAddress_v2(\"%s\", 12000) resolves", #base);
    MEM_API(MEM_API_GPA)
    if (failed)
        return 1;
    failed = mem_walk(&api, "cuGetProcAddress");
    printf("mem_gpa: %d failed\n", failed);
    return failed ? 1 : 0;
}
