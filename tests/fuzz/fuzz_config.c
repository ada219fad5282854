/* fuzz_config.c - libFuzzer harness for carved's config parser: any bytes get a config or a
 * "FILE:LINE: why" message, never a crash; an accepted config keeps the parser's promises
 * (names valid and unique, counts in bounds, every kept spec parses again). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carved.h"
#include "compute.h"
#include "size.h"

#define FILE_NAME "fuzz.conf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static struct carved_config conf; /* ~200 KiB: not on the stack */

static void check_string(const char *s, size_t cap)
{
    if (!memchr(s, '\0', cap))
        abort(); /* every kept string ends within its field */
}

static void check_slice(const struct carved_config *c, int i)
{
    const struct carved_slice_conf *s = &c->slices[i];
    check_string(s->name, sizeof(s->name));
    size_t n = strlen(s->name);
    if (n == 0 || strspn(s->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789._-") != n)
        abort();
    if (strcmp(s->name, ".") == 0 || strcmp(s->name, "..") == 0)
        abort();
    for (int j = 0; j < i; j++)
        if (strcmp(c->slices[j].name, s->name) == 0 || c->slices[j].line >= s->line)
            abort(); /* unique, and in the order of the file */
    check_string(s->memory, sizeof(s->memory));
    check_string(s->compute, sizeof(s->compute));
    check_string(s->priority, sizeof(s->priority));
    struct carve_memory_spec m;
    struct carve_compute cc;
    uint8_t prio;
    if ((s->memory[0] && carve_parse_memory_spec(s->memory, &m, NULL, 0) != 0) ||
        (s->compute[0] && carve_parse_compute(s->compute, &cc, NULL, 0) != 0) ||
        (s->priority[0] && carve_parse_priority(s->priority, &prio, NULL, 0) != 0))
        abort(); /* kept only when the CLI's parsers accept it */
    if (s->nusers < 0 || s->nusers > CARVED_MAX_IDS || s->ngroups < 0 ||
        s->ngroups > CARVED_MAX_IDS)
        abort();
    if (s->idle_policy != -1 && s->idle_policy != CARVED_POLICY_REPORT &&
        s->idle_policy != CARVED_POLICY_RECLAIM)
        abort();
    if (s->line < 1)
        abort();
}

static void check_config(const struct carved_config *c)
{
    if (c->nslices < 0 || c->nslices > CARVED_MAX_CONF_SLICES)
        abort();
    check_string(c->socket_path, sizeof(c->socket_path));
    check_string(c->state_dir, sizeof(c->state_dir));
    check_string(c->listen, sizeof(c->listen));
    if (!c->socket_path[0] || c->state_dir[0] != '/' || !c->listen[0])
        abort();
    if (c->poll_ms < 100 || c->poll_ms > 60000 || c->idle_after_s < 10 ||
        c->idle_after_s > 30 * 86400)
        abort();
    if (c->idle_policy != CARVED_POLICY_REPORT && c->idle_policy != CARVED_POLICY_RECLAIM)
        abort();
    if (c->escape_policy != CARVED_POLICY_REPORT && c->escape_policy != CARVED_POLICY_KILL)
        abort();
    if (c->nadmins < 0 || c->nadmins > CARVED_MAX_IDS || c->nadmin_groups < 0 ||
        c->nadmin_groups > CARVED_MAX_IDS)
        abort();
    for (int i = 0; i < c->nslices; i++)
        check_slice(c, i);
}

/* "fuzz.conf:LINE: why", with a line number >= 1 and a reason. */
static void check_error(const char *err)
{
    size_t n = strlen(FILE_NAME);
    if (strncmp(err, FILE_NAME ":", n + 1) != 0)
        abort();
    const char *p = err + n + 1;
    if (!isdigit((unsigned char)*p) || *p == '0')
        abort();
    while (isdigit((unsigned char)*p))
        p++;
    if (p[0] != ':' || p[1] != ' ' || !p[2])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char err[1024] = "junk";
    int r = carved_config_parse((const char *)data, len, FILE_NAME, &conf, err, sizeof(err));
    if (r == 0) {
        if (err[0])
            abort(); /* cleared on success */
        check_config(&conf);
    } else if (r == -EINVAL) {
        check_error(err);
    } else {
        abort(); /* parse answers 0 or -EINVAL only */
    }
    /* a short message buffer gets a cut copy of the same message; none at all is fine */
    char tiny[8];
    memset(tiny, 'x', sizeof(tiny));
    if (carved_config_parse((const char *)data, len, FILE_NAME, &conf, tiny, 6) != r)
        abort();
    if (r != 0 && (strlen(tiny) != 5 || strncmp(tiny, err, 5) != 0))
        abort();
    if (tiny[6] != 'x' || tiny[7] != 'x')
        abort(); /* nothing written past errlen */
    if (carved_config_parse((const char *)data, len, FILE_NAME, &conf, NULL, 0) != r)
        abort();
    return 0;
}
