/* mem_dlsym.c - the memory walk with every entry point found by dlopen + dlsym. */
#include <stdio.h>

#include "mem_common.h"

int main(void)
{
    struct mem_api api;
    if (mem_api_dlsym(&api) != 0)
        return 1;
    int failed = mem_walk(&api, "dlsym");
    printf("mem_dlsym: %d failed\n", failed);
    return failed ? 1 : 0;
}
