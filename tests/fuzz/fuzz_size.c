/* fuzz_size.c - libFuzzer harness for the size and memory-spec parsers: any input gets a
 * result or an error message, never a crash; accepted values keep the parsers' promises. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* An exact formatted size ("8 GiB", no fraction) parses back, without its space, to itself. */
static void check_round_trip(uint64_t v)
{
    char buf[32], joined[32], err[256];
    carve_format_size(v, buf, sizeof(buf));
    if (strchr(buf, '.') || strstr(buf, "PiB"))
        return;
    char *space = strchr(buf, ' ');
    if (!space)
        abort();
    *space = '\0';
    snprintf(joined, sizeof(joined), "%s%s", buf, space + 1);
    uint64_t back = 0;
    if (carve_parse_size(joined, &back, err, sizeof(err)) != 0 || back != v)
        abort();
}

static void check_spec(const char *s)
{
    struct carve_memory_spec m;
    char err[256];
    if (carve_parse_memory_spec(s, &m, err, sizeof(err)) != 0) {
        if (!err[0])
            abort(); /* every refusal says why */
        return;
    }
    int named = 0;
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++)
        named += m.per_index[i] != 0;
    if (named != m.per_index_count || (m.all == 0) == (named == 0))
        abort(); /* either one size for all, or per-index caps, never both or neither */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *s = strndup((const char *)data, len); /* the parsers read C strings */
    if (!s)
        return 0;
    uint64_t v = 0;
    char err[256] = "";
    if (carve_parse_size(s, &v, err, sizeof(err)) == 0) {
        if (v == 0)
            abort(); /* zero is refused, never returned */
        check_round_trip(v);
    } else if (!err[0]) {
        abort();
    }
    check_spec(s);
    free(s);
    return 0;
}
