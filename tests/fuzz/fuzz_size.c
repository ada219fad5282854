/* fuzz_size.c - libFuzzer harness for the size and memory-spec parsers: any input gets a
 * result or an error message, never a crash, and an accepted size prints. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    memcpy(s, data, len);
    s[len] = '\0';
    uint64_t v;
    char err[256], buf[32];
    if (carve_parse_size(s, &v, err, sizeof(err)) == 0) {
        if (v == 0)
            abort(); /* zero is refused, never returned */
        carve_format_size(v, buf, sizeof(buf));
    }
    struct carve_memory_spec m;
    if (carve_parse_memory_spec(s, &m, err, sizeof(err)) == 0 && m.all == 0 &&
        m.per_index_count == 0)
        abort(); /* an accepted spec caps something */
    free(s);
    return 0;
}
