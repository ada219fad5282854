/* hostlist.c - matching and counting Slurm hostlist expressions (hostlist.h). Nothing is
 * expanded: a name is matched against the expression directly, so "n[1-1000000]" costs no
 * more than "n1". */
#include "hostlist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DIGITS_MAX 18 /* a bound of up to 18 digits fits in 64 bits */
#define GROUPS_MAX 8  /* bracket groups in one name: Slurm's own use a few */

/* A bound of 1-18 digits at *p, moved past: its value and length, or -1. */
static int read_bound(const char **p, const char *end, unsigned long long *value)
{
    size_t n = 0;
    *value = 0;
    while (*p < end && **p >= '0' && **p <= '9' && n < DIGITS_MAX + 1) {
        *value = *value * 10 + (unsigned)(**p - '0');
        (*p)++;
        n++;
    }
    return n >= 1 && n <= DIGITS_MAX ? (int)n : -1;
}

/* Walks the ranges between brackets, [r, end): "01-16,20". For each range calls fn (when
 * given) with its bounds and the width of the lower one. Returns how many numbers they
 * hold (at most CARVE_HOSTLIST_MAX), or -1 when one is malformed. */
static long walk_ranges(const char *r, const char *end,
                        bool (*fn)(unsigned long long lo, unsigned long long hi, int width,
                                   const void *arg),
                        const void *arg, bool *found)
{
    long total = 0;
    for (;;) {
        unsigned long long lo, hi;
        int width = read_bound(&r, end, &lo);
        if (width < 0)
            return -1;
        hi = lo;
        if (r < end && *r == '-') {
            r++;
            if (read_bound(&r, end, &hi) < 0 || hi < lo)
                return -1;
        }
        if (r < end && *r != ',')
            return -1;
        unsigned long long n = hi - lo + 1;
        total = n >= (unsigned long long)CARVE_HOSTLIST_MAX || total + (long)n > CARVE_HOSTLIST_MAX
                    ? CARVE_HOSTLIST_MAX
                    : total + (long)n;
        if (fn && found && fn(lo, hi, width, arg))
            *found = true;
        if (r == end)
            return total;
        r++; /* past the comma */
    }
}

static int digits_of(unsigned long long v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* The digits a name has where a bracket stands: their value and how many. */
struct number {
    unsigned long long value;
    int len;
};

/* Whether the number is in [lo, hi] written as Slurm writes it: zero-padded to width. */
static bool number_in(unsigned long long lo, unsigned long long hi, int width, const void *arg)
{
    const struct number *num = arg;
    int written = digits_of(num->value) > width ? digits_of(num->value) : width;
    return num->value >= lo && num->value <= hi && num->len == written;
}

#define NAME_MAX_LEN 255 /* a node name is a host name: 64 at most on Linux */

/* One name against one host expression: where it ends, the name, and the places (bracket
 * group, offset in the name) already found not to match, so that groups that each take
 * digits of several lengths ([1-9,01-99]) are tried once a place, not once a path. */
struct matching {
    const char *end;
    const char *name;
    bool failed[GROUPS_MAX + 1][NAME_MAX_LEN + 1];
};

/* Whether the name from at matches the expression from e, e being after groups brackets. */
static bool match_from(struct matching *m, const char *e, size_t at, int groups)
{
    if (m->failed[groups][at])
        return false;
    const char *name = m->name + at;
    while (e < m->end && *e != '[') {
        if (*e == ']' || *e != *name)
            return false;
        e++;
        name++;
    }
    if (e == m->end)
        return *name == '\0';
    const char *close = memchr(e, ']', (size_t)(m->end - e));
    if (!close || groups >= GROUPS_MAX || memchr(e + 1, '[', (size_t)(close - e - 1)) ||
        walk_ranges(e + 1, close, NULL, NULL, NULL) < 0)
        return false;
    size_t run = strspn(name, "0123456789");
    struct number num = {0, 0};
    for (size_t k = 1; k <= run && k <= DIGITS_MAX; k++) {
        num.value = num.value * 10 + (unsigned)(name[k - 1] - '0');
        num.len = (int)k;
        bool in = false;
        walk_ranges(e + 1, close, number_in, &num, &in);
        if (in && match_from(m, close + 1, (size_t)(name + k - m->name), groups + 1))
            return true;
    }
    m->failed[groups][at] = true;
    return false;
}

/* How many names the one host expression [e, end) stands for, or -1. */
static long count_one(const char *e, const char *end)
{
    long total = 1;
    int groups = 0;
    while (e < end) {
        if (*e == ']')
            return -1;
        if (*e != '[') {
            e++;
            continue;
        }
        const char *close = memchr(e, ']', (size_t)(end - e));
        long n;
        if (!close || ++groups > GROUPS_MAX || memchr(e + 1, '[', (size_t)(close - e - 1)) ||
            (n = walk_ranges(e + 1, close, NULL, NULL, NULL)) < 0)
            return -1;
        total = n > 0 && total > CARVE_HOSTLIST_MAX / n ? CARVE_HOSTLIST_MAX : total * n;
        e = close + 1;
    }
    return total;
}

/* The end of the host expression that starts at e: the next comma outside brackets. */
static const char *item_end(const char *e)
{
    bool in = false;
    for (; *e; e++) {
        if (*e == '[')
            in = true;
        else if (*e == ']')
            in = false;
        else if (*e == ',' && !in)
            break;
    }
    return e;
}

static bool is_all(const char *expr)
{
    return strcasecmp(expr, "ALL") == 0;
}

bool carve_hostlist_match(const char *expr, const char *name)
{
    if (!expr || !name || !*name || strlen(name) > NAME_MAX_LEN)
        return false;
    if (is_all(expr))
        return true;
    struct matching m = {.name = name};
    for (const char *e = expr; *e;) {
        const char *end = item_end(e);
        m.end = end;
        memset(m.failed, 0, sizeof(m.failed));
        if (end > e && match_from(&m, e, 0, 0))
            return true;
        e = *end ? end + 1 : end;
    }
    return false;
}

long carve_hostlist_count(const char *expr)
{
    if (!expr || is_all(expr))
        return -1;
    long total = 0;
    for (const char *e = expr; *e;) {
        const char *end = item_end(e);
        long n = end > e ? count_one(e, end) : 0;
        if (n < 0)
            return -1;
        total = total > CARVE_HOSTLIST_MAX - n ? CARVE_HOSTLIST_MAX : total + n;
        e = *end ? end + 1 : end;
    }
    return total;
}
