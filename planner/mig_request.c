/* mig_request.c - parsing one MIG request as `carve mig plan`, `carve mig apply` and
 * `carve run --mode mig` take it: a profile by name ("3g.40gb"), memory ("8GiB"), a share of
 * the GPU's SMs ("30%"), or memory and a share ("20GiB,30%"). */
#include "mig_plan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "size.h"

#define FORMS "a request is a MIG profile (3g.40gb), memory (8GiB), a share of the GPU's SMs " \
              "(30%) or memory and a share (20GiB,30%)"

/* "3g.40gb", "1g.10gb+me", "MIG 7g.80gb": digits, g, '.', digits, gb, optional +suffix */
static bool looks_like_profile(const char *s)
{
    if (strncasecmp(s, "MIG ", 4) == 0)
        s += 4;
    if (!isdigit((unsigned char)*s))
        return false;
    while (isdigit((unsigned char)*s))
        s++;
    if (tolower((unsigned char)*s++) != 'g' || *s++ != '.' || !isdigit((unsigned char)*s))
        return false;
    while (isdigit((unsigned char)*s))
        s++;
    if (strncasecmp(s, "gb", 2) != 0)
        return false;
    s += 2;
    if (*s == '\0')
        return true;
    if (*s++ != '+' || !*s)
        return false;
    for (; *s; s++)
        if (!isalpha((unsigned char)*s))
            return false;
    return true;
}

/* "30%", "12.5%": 0 < share <= 100 */
static int parse_share(const char *s, double *out, char *err, size_t errlen, const char *whole)
{
    size_t len = strlen(s);
    if (len < 2 || s[len - 1] != '%')
        return 1; /* not a share at all */
    char num[32];
    if (len - 1 >= sizeof(num)) {
        snprintf(err, errlen, "MIG request \"%s\": \"%s\" is too long for a share", whole, s);
        return -1;
    }
    memcpy(num, s, len - 1);
    num[len - 1] = '\0';
    for (const char *c = num; *c; c++)
        if (!isdigit((unsigned char)*c) && *c != '.') {
            snprintf(err, errlen, "MIG request \"%s\": \"%s\" is not a share like 30%%", whole, s);
            return -1;
        }
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (*end || errno || !(v > 0.0) || v > 100.0 || !isfinite(v)) {
        snprintf(err, errlen, "MIG request \"%s\": the share %s must be more than 0%% and at "
                 "most 100%% of the GPU's SMs", whole, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_part(const char *part, struct mig_request *out, bool *have_mem,
                      bool *have_pct, const char *whole, char *err, size_t errlen)
{
    double pct;
    int r = parse_share(part, &pct, err, errlen, whole);
    if (r < 0)
        return -1;
    if (r == 0) {
        if (*have_pct) {
            snprintf(err, errlen, "MIG request \"%s\": two shares; give one", whole);
            return -1;
        }
        *have_pct = true;
        out->compute_pct = pct;
        return 0;
    }
    uint64_t bytes;
    char serr[200];
    if (carve_parse_cap(part, &bytes, serr, sizeof(serr)) < 0) {
        snprintf(err, errlen, "MIG request \"%s\": \"%s\" is neither memory nor a share (%s); %s",
                 whole, part, serr, FORMS);
        return -1;
    }
    if (*have_mem) {
        snprintf(err, errlen, "MIG request \"%s\": two memory sizes; give one", whole);
        return -1;
    }
    *have_mem = true;
    out->memory_mib = bytes / (1024 * 1024) + (bytes % (1024 * 1024) ? 1 : 0);
    return 0;
}

int mig_request_parse(const char *text, struct mig_request *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!text || !*text) {
        snprintf(err, errlen, "empty MIG request: %s", FORMS);
        return -1;
    }
    size_t len = strlen(text);
    if (len >= MIG_REQUEST_TEXT) {
        snprintf(err, errlen, "MIG request \"%.40s...\" is %zu characters; at most %d", text,
                 len, MIG_REQUEST_TEXT - 1);
        return -1;
    }
    memcpy(out->text, text, len + 1);
    if (looks_like_profile(text)) {
        const char *name = strncasecmp(text, "MIG ", 4) == 0 ? text + 4 : text;
        if (strlen(name) >= sizeof(out->profile)) {
            snprintf(err, errlen, "MIG request \"%s\": profile name too long", text);
            return -1;
        }
        for (size_t i = 0; name[i]; i++)
            out->profile[i] = (char)tolower((unsigned char)name[i]);
        return 0;
    }
    char buf[MIG_REQUEST_TEXT];
    memcpy(buf, text, len + 1);
    char *comma = strchr(buf, ',');
    bool have_mem = false, have_pct = false;
    if (comma) {
        *comma = '\0';
        if (strchr(comma + 1, ',') || !buf[0] || !comma[1]) {
            snprintf(err, errlen, "MIG request \"%s\": %s", text, FORMS);
            return -1;
        }
        if (parse_part(buf, out, &have_mem, &have_pct, text, err, errlen) < 0 ||
            parse_part(comma + 1, out, &have_mem, &have_pct, text, err, errlen) < 0)
            return -1;
        return 0;
    }
    return parse_part(buf, out, &have_mem, &have_pct, text, err, errlen);
}
