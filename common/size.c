/* size.c - byte sizes as people write them, and memory specs, parsed strictly: every error
 * names the input and the forms that are accepted. */
#include "size.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIZE_FORMS "a number with an optional unit: B, K/KiB, M/MiB, G/GiB, T/TiB " \
                   "(1024-based) or KB, MB, GB, TB (1000-based), e.g. 512MiB, 8G, 1.5GiB"

struct unit {
    const char *name;
    uint64_t factor;
};

static const struct unit units[] = {
    {"", 1},
    {"b", 1},
    {"k", 1ULL << 10},   {"kib", 1ULL << 10}, {"kb", 1000ULL},
    {"m", 1ULL << 20},   {"mib", 1ULL << 20}, {"mb", 1000000ULL},
    {"g", 1ULL << 30},   {"gib", 1ULL << 30}, {"gb", 1000000000ULL},
    {"t", 1ULL << 40},   {"tib", 1ULL << 40}, {"tb", 1000000000000ULL},
};

/* A value is quoted in a message up to 64 bytes, then `...': a 100 KB one filled the caller's
 * buffer and cut off what was wrong with it and the forms that are accepted. */
#define QUOTED(s) (s), strlen(s) > 64 ? "..." : ""

static int size_error(char *err, size_t errlen, int code, const char *s, const char *why)
{
    if (err && errlen)
        snprintf(err, errlen, "invalid size `%.64s%s': %s; expected %s", QUOTED(s), why,
                 SIZE_FORMS);
    return code;
}

static const struct unit *find_unit(const char *u)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcasecmp(units[i].name, u) == 0)
            return &units[i];
    return NULL;
}

int carve_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
    if (!s || !*s)
        return size_error(err, errlen, -EINVAL, s ? s : "", "empty");
    if (*s == '-')
        return size_error(err, errlen, -EINVAL, s, "negative");
    for (const char *c = s; *c; c++)
        if (isspace((unsigned char)*c))
            return size_error(err, errlen, -EINVAL, s, "contains a space");
    const char *p = s;
    uint64_t whole = 0;
    int digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return size_error(err, errlen, -ERANGE, s, "too large");
        whole = whole * 10 + d;
    }
    /* the fraction is kept as a numerator over 10^n, n <= 9, to stay exact in integers */
    uint64_t frac = 0, frac_den = 1;
    if (*p == '.') {
        p++;
        int fdigits = 0;
        for (; isdigit((unsigned char)*p); p++, fdigits++)
            if (fdigits < 9) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_den *= 10;
            }
        if (fdigits == 0)
            return size_error(err, errlen, -EINVAL, s, "no digits after the decimal point");
    }
    if (digits == 0)
        return size_error(err, errlen, -EINVAL, s, "no number");
    const struct unit *u = find_unit(p);
    if (!u)
        return size_error(err, errlen, -EINVAL, s, "unknown unit");
    if (frac && u->factor == 1)
        return size_error(err, errlen, -EINVAL, s, "a fraction of a byte");
    if (whole > UINT64_MAX / u->factor)
        return size_error(err, errlen, -ERANGE, s, "too large");
    uint64_t bytes = whole * u->factor;
    /* u->factor <= 2^40 and frac < 10^9 < 2^30: the product fits in 64 bits only after the
     * division below is arranged so; split the factor to stay exact and in range */
    uint64_t frac_bytes = (u->factor / frac_den) * frac +
                          ((u->factor % frac_den) * frac) / frac_den;
    if (bytes > UINT64_MAX - frac_bytes)
        return size_error(err, errlen, -ERANGE, s, "too large");
    bytes += frac_bytes;
    if (bytes == 0)
        return size_error(err, errlen, -EDOM, s, "zero");
    *out = bytes;
    return 0;
}

int carve_parse_cap(const char *s, uint64_t *out, char *err, size_t errlen)
{
    uint64_t bytes;
    int r = carve_parse_size(s, &bytes, err, errlen);
    if (r < 0)
        return r;
    if (bytes < CARVE_CAP_MIN) {
        /* a bare small number is the likely slip (8 meant as 8 GiB): suggest it with a unit */
        bool bare = strspn(s, "0123456789") == strlen(s) && bytes < 1024;
        if (err && errlen && bare)
            snprintf(err, errlen, "invalid size `%.64s%s': %llu byte%s, less than 1 MiB (a "
                     "number without a unit is bytes); give a unit, e.g. %lluGiB or %lluMiB",
                     QUOTED(s), (unsigned long long)bytes, bytes == 1 ? "" : "s",
                     (unsigned long long)bytes, (unsigned long long)bytes);
        else if (err && errlen)
            snprintf(err, errlen, "invalid size `%.64s%s': %llu bytes, less than 1 MiB, the "
                     "least GPU memory carve takes; e.g. 512MiB, 8GiB", QUOTED(s),
                     (unsigned long long)bytes);
        return -EDOM;
    }
    *out = bytes;
    return 0;
}

void carve_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (i < 5 && bytes >= (1ULL << (10 * (i + 1))))
        i++;
    if (i == 0) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return;
    }
    uint64_t unit = 1ULL << (10 * i);
    if (bytes % unit == 0)
        snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / unit), names[i]);
    else
        snprintf(buf, len, "%.2f %s", (double)bytes / (double)unit, names[i]);
}

static int spec_error(char *err, size_t errlen, const char *s, const char *why)
{
    if (err && errlen)
        snprintf(err, errlen, "invalid memory spec `%.64s%s': %s; expected SIZE (every GPU) or "
                 "IDX=SIZE[,IDX=SIZE...] with IDX 0-%d, e.g. 8GiB or 0=8GiB,1=4GiB", QUOTED(s),
                 why, CARVE_SPEC_MAX_DEVICES - 1);
    return -EINVAL;
}

/* "IDX" of an IDX=SIZE entry: 0-15, decimal digits only. */
static int parse_spec_index(const char *spec, const char *tok, unsigned long *idx, char *err,
                            size_t errlen)
{
    char why[96];
    char *end;
    errno = 0;
    *idx = isdigit((unsigned char)tok[0]) ? strtoul(tok, &end, 10) : 0;
    if (!isdigit((unsigned char)tok[0]) || *end) {
        snprintf(why, sizeof(why), "GPU index `%.16s' is not a number", tok);
        return spec_error(err, errlen, spec, why);
    }
    if (errno || *idx >= CARVE_SPEC_MAX_DEVICES) {
        snprintf(why, sizeof(why), "GPU index `%.16s' is out of range", tok);
        return spec_error(err, errlen, spec, why);
    }
    return 0;
}

static int parse_spec_entry(const char *spec, char *tok, struct carve_memory_spec *out,
                            char *err, size_t errlen)
{
    char *eq = strchr(tok, '=');
    *eq = '\0';
    unsigned long idx;
    int r = parse_spec_index(spec, tok, &idx, err, errlen);
    if (r < 0)
        return r;
    if (out->per_index[idx]) {
        char why[64];
        snprintf(why, sizeof(why), "GPU index %lu is named twice", idx);
        return spec_error(err, errlen, spec, why);
    }
    uint64_t bytes;
    if ((r = carve_parse_cap(eq + 1, &bytes, err, errlen)) < 0)
        return r;
    out->per_index[idx] = bytes;
    out->per_index_count++;
    return 0;
}

int carve_parse_memory_spec(const char *s, struct carve_memory_spec *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*s)
        return spec_error(err, errlen, s ? s : "", "empty");
    if (!strchr(s, '='))
        return carve_parse_cap(s, &out->all, err, errlen);
    char buf[512];
    if (strlen(s) >= sizeof(buf))
        return spec_error(err, errlen, s, "too long");
    strcpy(buf, s);
    char *save = NULL;
    int ntok = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strchr(tok, '='))
            return spec_error(err, errlen, s, "mixes a plain size with IDX=SIZE entries");
        int r = parse_spec_entry(s, tok, out, err, errlen);
        if (r < 0)
            return r;
        ntok++;
    }
    /* strtok_r skips empty fields: ",," or a trailing comma would pass unnoticed */
    size_t commas = 0;
    for (const char *c = s; *c; c++)
        commas += *c == ',';
    if (ntok == 0 || commas != (size_t)ntok - 1)
        return spec_error(err, errlen, s, "an empty entry");
    return 0;
}
