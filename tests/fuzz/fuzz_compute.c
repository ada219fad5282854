/* fuzz_compute.c - libFuzzer harness for the compute-share and priority parsers: any input
 * gets a result or an error message, never a crash; accepted shares are in range and print
 * back to themselves. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* An accepted share formats to text that parses back to the same share and mode. */
static void check_round_trip(const struct carve_compute *c)
{
    char buf[32], err[256] = "";
    carve_format_compute(c, buf, sizeof(buf));
    struct carve_compute back = {0, 0, 0};
    if (carve_parse_compute(buf, &back, err, sizeof(err)) != 0)
        abort();
    if (back.share_bp != c->share_bp || back.mode != c->mode)
        abort();
}

static void check_compute(const char *s)
{
    struct carve_compute c = {0, 0, CARVE_PRIO_NORMAL};
    char err[256] = "";
    if (carve_parse_compute(s, &c, err, sizeof(err)) != 0) {
        if (!err[0])
            abort(); /* every refusal says why */
        return;
    }
    if (c.share_bp < 1 || c.share_bp > CARVE_BP_FULL)
        abort(); /* (0, 100%] */
    if (c.mode != CARVE_COMPUTE_CAP && c.mode != CARVE_COMPUTE_GUARANTEE)
        abort();
    if ((c.mode == CARVE_COMPUTE_GUARANTEE) != (strchr(s, '+') != NULL))
        abort(); /* a guarantee is exactly what the '+' asks for */
    check_round_trip(&c);
}

static void check_priority(const char *s)
{
    uint8_t p = 0xee;
    char err[256] = "";
    if (carve_parse_priority(s, &p, err, sizeof(err)) != 0) {
        if (!err[0])
            abort();
        return;
    }
    if (p != CARVE_PRIO_NORMAL && p != CARVE_PRIO_LATENCY && p != CARVE_PRIO_BATCH)
        abort();
    if (strcmp(carve_priority_name(p), s) != 0)
        abort(); /* only the exact names are accepted */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *s = strndup((const char *)data, len); /* the parsers read C strings */
    if (!s)
        return 0;
    check_compute(s);
    check_priority(s);
    free(s);
    return 0;
}
