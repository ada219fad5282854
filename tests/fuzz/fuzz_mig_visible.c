/* fuzz_mig_visible.c - libFuzzer harness for CUDA_VISIBLE_DEVICES as `carve run --mode mig`
 * reads it (planner/mig_visible.c): any input gets a device list or a message, never a
 * crash; an accepted list names at least one GPU or MIG device, each MIG device once and
 * as a whole UUID of path-safe characters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mig_visible.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static const struct mig_gpu gpus[] = {
    {.index = 0, .uuid = "GPU-5a1e0c4a-1000-4e3d-9a7b-c0ffeea00000", .mode = 1},
    {.index = 1, .uuid = "GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001", .mode = 1},
    {.index = 3, .uuid = "GPU-77770000-0000-0000-0000-000000000003", .mode = 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *s = strndup((const char *)data, len); /* the parser reads a C string */
    if (!s)
        return 0;
    static struct mig_visible v;
    char err[512] = "";
    if (mig_visible_parse(s, gpus, 3, &v, err, sizeof(err)) != 0) {
        if (!err[0])
            abort(); /* every refusal says why */
        free(s);
        return 0;
    }
    int named = v.nmig;
    for (int i = 0; i < 3; i++)
        named += v.gpu[i];
    if (named == 0 || v.nmig < 0 || v.nmig > MIG_VISIBLE_MAX)
        abort();
    for (int k = 0; k < v.nmig; k++) {
        if (strncmp(v.mig[k], "MIG-", 4) != 0 || !v.mig[k][4] || strchr(v.mig[k], '/') ||
            !strstr(s, v.mig[k]))
            abort();
        for (int m = 0; m < k; m++)
            if (strcmp(v.mig[m], v.mig[k]) == 0)
                abort();
    }
    free(s);
    return 0;
}
