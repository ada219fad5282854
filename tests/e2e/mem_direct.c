/* mem_direct.c - the memory walk with the driver API linked directly (-lcuda): calls go
 * through the exported wrappers LD_PRELOAD puts first. */
#include <stdio.h>

#include "mem_common.h"

int main(void)
{
    struct mem_api api = {
#define MEM_API_DIRECT(base, name) .base = name,
        MEM_API(MEM_API_DIRECT)
    };
    int failed = mem_walk(&api, "direct");
    printf("mem_direct: %d failed\n", failed);
    return failed ? 1 : 0;
}
