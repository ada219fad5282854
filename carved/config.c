/* config.c - carved's config file: one table declares every setting with its type, default
 * and bounds, and the parser reads "KEY = VALUE" lines and [slice NAME] sections against it,
 * stopping at the first wrong line with "FILE:LINE: what is wrong (what is accepted)". */
#include "carved.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "compute.h"
#include "size.h"
#include "slice.h"

#define CONF_LINE_MAX 8192      /* the longest line, with its NUL */
#define CONF_FILE_MAX (1 << 20) /* the largest file carved_config_load reads */
#define CONF_WHY_MAX 768        /* one error's text after "FILE:LINE: " */
#define CONF_CLIP 60            /* values quoted in messages are cut to this many bytes */
#define CONF_ID_MAX 4294967294u /* uid_t and gid_t: (uid_t)-1 means "no id" */
#define DAY_MS (24ULL * 3600 * 1000)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(sizeof(uid_t) == sizeof(uint32_t) && sizeof(gid_t) == sizeof(uint32_t),
               "uid_t and gid_t are stored as 32-bit ids");

enum conf_scope { CONF_NODE, CONF_SLICE };

struct conf_word {
    const char *word;
    int value;
};

struct conf_key;
/* Checks v and stores it in the field k names in base (a struct carved_config for node keys,
 * a struct carved_slice_conf for slice keys); or leaves it and returns -EINVAL with why. */
typedef int conf_parse_fn(const struct conf_key *k, const char *v, void *base, char *why,
                          size_t whylen);

struct conf_key {
    const char *name;
    enum conf_scope scope;
    conf_parse_fn *parse;
    size_t offset;                 /* the field, in base */
    size_t size;                   /* its size: a string's capacity, an id array's bytes */
    size_t count;                  /* id lists: the offset of the int counting them */
    const char *def;               /* the default as the file would write it; NULL: zero */
    const char *min, *max;         /* durations: the bounds, written as in the file */
    uint64_t unit;                 /* durations: ms per stored unit (1: ms, 1000: s) */
    const struct conf_word *words; /* enums and booleans: the accepted words */
};

static conf_parse_fn parse_socket, parse_abspath, parse_listen, parse_duration, parse_enum,
    parse_bool, parse_users, parse_groups, parse_memory, parse_compute, parse_priority,
    parse_gpus;

static const struct conf_word idle_words[] = {
    {"report", CARVED_POLICY_REPORT}, {"reclaim", CARVED_POLICY_RECLAIM}, {NULL, 0}};
static const struct conf_word escape_words[] = {
    {"report", CARVED_POLICY_REPORT}, {"kill", CARVED_POLICY_KILL}, {NULL, 0}};
static const struct conf_word bool_words[] = {
    {"yes", 1}, {"no", 0}, {"true", 1}, {"false", 0},
    {"on", 1},  {"off", 0}, {"1", 1},   {"0", 0},     {NULL, 0}};

#define NODE(f) .scope = CONF_NODE, .offset = offsetof(struct carved_config, f), \
                .size = sizeof(((struct carved_config *)0)->f)
#define SLICE(f) .scope = CONF_SLICE, .offset = offsetof(struct carved_slice_conf, f), \
                 .size = sizeof(((struct carved_slice_conf *)0)->f)

/* Every setting, once. carved.conf.example documents them in this order. */
static const struct conf_key conf_keys[] = {
    {.name = "socket", NODE(socket_path), .parse = parse_socket,
     .def = "/run/carve/carved.sock"},
    {.name = "state_dir", NODE(state_dir), .parse = parse_abspath, .def = "/var/lib/carve"},
    {.name = "listen", NODE(listen), .parse = parse_listen, .def = "127.0.0.1:9477"},
    {.name = "poll_interval", NODE(poll_ms), .parse = parse_duration, .def = "1s",
     .min = "100ms", .max = "60s", .unit = 1},
    {.name = "idle_after", NODE(idle_after_s), .parse = parse_duration, .def = "30m",
     .min = "10s", .max = "30d", .unit = 1000},
    {.name = "idle_policy", NODE(idle_policy), .parse = parse_enum, .def = "report",
     .words = idle_words},
    {.name = "escape_policy", NODE(escape_policy), .parse = parse_enum, .def = "report",
     .words = escape_words},
    {.name = "allow_user_slices", NODE(allow_user_slices), .parse = parse_bool, .def = "yes",
     .words = bool_words},
    {.name = "admins", NODE(admins), .count = offsetof(struct carved_config, nadmins),
     .parse = parse_users},
    {.name = "admin_groups", NODE(admin_groups),
     .count = offsetof(struct carved_config, nadmin_groups), .parse = parse_groups},

    /* slice keys: unset means no cap, unpaced, normal priority, root and admins only */
    {.name = "memory", SLICE(memory), .parse = parse_memory},
    {.name = "compute", SLICE(compute), .parse = parse_compute},
    {.name = "priority", SLICE(priority), .parse = parse_priority},
    {.name = "users", SLICE(users), .count = offsetof(struct carved_slice_conf, nusers),
     .parse = parse_users},
    {.name = "groups", SLICE(groups), .count = offsetof(struct carved_slice_conf, ngroups),
     .parse = parse_groups},
    {.name = "gpus", SLICE(gpu_refs), .count = offsetof(struct carved_slice_conf, ngpu_refs),
     .parse = parse_gpus},
    /* unset: -1, the node's idle_policy (set by new_slice) */
    {.name = "idle_policy", SLICE(idle_policy), .parse = parse_enum, .words = idle_words},
};

#define NKEYS COUNT(conf_keys)

static int bad(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* s, cut to CONF_CLIP bytes with "..." when longer, for quoting in a message. */
static const char *clip(const char *s, char buf[CONF_CLIP + 4])
{
    size_t n = strlen(s);
    if (n <= CONF_CLIP)
        return s;
    memcpy(buf, s, CONF_CLIP);
    strcpy(buf + CONF_CLIP, "...");
    return buf;
}

static void *field(void *base, const struct conf_key *k)
{
    return (char *)base + k->offset;
}

static int check_length(const struct conf_key *k, const char *v, char *why, size_t whylen)
{
    char q[CONF_CLIP + 4];
    size_t n = strlen(v);
    if (n >= k->size)
        return bad(why, whylen, "`%s' is %zu bytes long; give at most %zu", clip(v, q), n,
                   k->size - 1);
    return 0;
}

static int store_string(const struct conf_key *k, const char *v, void *base, char *why,
                        size_t whylen)
{
    if (check_length(k, v, why, whylen) < 0)
        return -EINVAL;
    memcpy(field(base, k), v, strlen(v) + 1);
    return 0;
}

/* socket: any path shorter than sun_path. */
static int parse_socket(const struct conf_key *k, const char *v, void *base, char *why,
                        size_t whylen)
{
    if (!*v)
        return bad(why, whylen, "no path; give the unix socket's path, at most %zu bytes",
                   k->size - 1);
    return store_string(k, v, base, why, whylen);
}

static int parse_abspath(const struct conf_key *k, const char *v, void *base, char *why,
                         size_t whylen)
{
    char q[CONF_CLIP + 4];
    if (v[0] != '/')
        return bad(why, whylen, "`%s' is not an absolute path; give a directory starting with /",
                   clip(v, q));
    return store_string(k, v, base, why, whylen);
}

/* A host name (labels of letters, digits and '-', dot-separated) or a dotted IPv4 address. */
static bool valid_host(const char *h)
{
    if (strspn(h, "0123456789.") == strlen(h)) {
        struct in_addr a4;
        return inet_pton(AF_INET, h, &a4) == 1;
    }
    if (strlen(h) > 253)
        return false;
    for (const char *label = h;;) {
        size_t n = strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789-");
        if (n == 0 || n > 63 || label[0] == '-' || label[n - 1] == '-')
            return false;
        if (label[n] == '\0')
            return true;
        if (label[n] != '.')
            return false;
        label += n + 1;
    }
}

/* 1-65535, decimal digits only. */
static bool valid_port(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 5 || strspn(p, "0123456789") != n)
        return false;
    unsigned long v = strtoul(p, NULL, 10);
    return v >= 1 && v <= 65535;
}

#define LISTEN_FORMS "give HOST:PORT (127.0.0.1:9477, localhost:9477), [IPV6]:PORT " \
                     "([::1]:9477) or off"

/* listen: HOST:PORT, [IPV6]:PORT or off. */
static int parse_listen(const struct conf_key *k, const char *v, void *base, char *why,
                        size_t whylen)
{
    char q[CONF_CLIP + 4], host[256];
    const char *port;
    if (strcmp(v, "off") == 0)
        return store_string(k, v, base, why, whylen);
    if (check_length(k, v, why, whylen) < 0)
        return -EINVAL;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        struct in6_addr a6;
        if (!close || close[1] != ':')
            return bad(why, whylen, "`%s' is not an address and a port; " LISTEN_FORMS,
                       clip(v, q));
        size_t n = (size_t)(close - v - 1);
        memcpy(host, v + 1, n);
        host[n] = '\0';
        if (inet_pton(AF_INET6, host, &a6) != 1)
            return bad(why, whylen, "`%s': `%s' is not an IPv6 address; " LISTEN_FORMS,
                       clip(v, q), host);
        port = close + 2;
    } else {
        const char *colon = strrchr(v, ':');
        if (!colon)
            return bad(why, whylen, "`%s' has no port; " LISTEN_FORMS, clip(v, q));
        size_t n = (size_t)(colon - v);
        if (memchr(v, ':', n))
            return bad(why, whylen, "`%s': an IPv6 address goes in brackets; " LISTEN_FORMS,
                       clip(v, q));
        memcpy(host, v, n);
        host[n] = '\0';
        if (!valid_host(host))
            return bad(why, whylen, "`%s': `%s' is not a host name or IPv4 address; "
                       LISTEN_FORMS, clip(v, q), host);
        port = colon + 1;
    }
    if (!valid_port(port))
        return bad(why, whylen, "`%s': the port must be 1-65535; " LISTEN_FORMS, clip(v, q));
    return store_string(k, v, base, why, whylen);
}

static const struct {
    const char *suffix;
    uint64_t ms;
} duration_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000},
                      {"d", DAY_MS}};

/* "500ms", "30s", "5m", "2h", "1d": a whole number and a unit, to ms. -EINVAL or -ERANGE. */
static int parse_duration_ms(const char *s, uint64_t *ms)
{
    uint64_t n = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10)
            return -ERANGE;
        n = n * 10 + d;
    }
    if (p == s)
        return -EINVAL;
    for (size_t i = 0; i < COUNT(duration_units); i++)
        if (strcmp(p, duration_units[i].suffix) == 0) {
            if (n > UINT64_MAX / duration_units[i].ms)
                return -ERANGE;
            *ms = n * duration_units[i].ms;
            return 0;
        }
    return -EINVAL;
}

static int parse_duration(const struct conf_key *k, const char *v, void *base, char *why,
                          size_t whylen)
{
    char q[CONF_CLIP + 4];
    const char *lo = k->min, *hi = k->max;
    uint64_t ms = 0, min = 0, max = 0;
    parse_duration_ms(lo, &min); /* the table's bounds parse: test_config checks them */
    parse_duration_ms(hi, &max);
    int r = parse_duration_ms(v, &ms);
    if (r == -EINVAL)
        return bad(why, whylen, "`%s' is not a duration; give a whole number and a unit "
                   "(ms, s, m, h or d) from %s to %s, e.g. 500ms, 30s, 5m, 2h", clip(v, q),
                   lo, hi);
    if (r < 0 || ms < min || ms > max)
        return bad(why, whylen, "`%s' is out of range; give a duration from %s to %s",
                   clip(v, q), lo, hi);
    if (ms % k->unit)
        return bad(why, whylen, "`%s' is not a whole number of seconds; give a duration "
                   "from %s to %s", clip(v, q), lo, hi);
    *(uint64_t *)field(base, k) = ms / k->unit;
    return 0;
}

static const struct conf_word *find_word(const struct conf_word *w, const char *v)
{
    for (; w->word; w++)
        if (strcasecmp(w->word, v) == 0)
            return w;
    return NULL;
}

/* "`x' is not ...; use a, b or c" */
static int bad_word(const struct conf_key *k, const char *v, const char *what, char *why,
                    size_t whylen)
{
    char q[CONF_CLIP + 4], list[160] = "";
    size_t used = 0;
    for (const struct conf_word *w = k->words; w->word && used < sizeof(list); w++) {
        const char *sep = w == k->words ? "" : w[1].word ? ", " : " or ";
        int n = snprintf(list + used, sizeof(list) - used, "%s%s", sep, w->word);
        used += n > 0 ? (size_t)n : 0;
    }
    return bad(why, whylen, "`%s' is not %s; use %s", clip(v, q), what, list);
}

static int parse_enum(const struct conf_key *k, const char *v, void *base, char *why,
                      size_t whylen)
{
    const struct conf_word *w = find_word(k->words, v);
    if (!w)
        return bad_word(k, v, "a policy", why, whylen);
    *(int *)field(base, k) = w->value;
    return 0;
}

static int parse_bool(const struct conf_key *k, const char *v, void *base, char *why,
                      size_t whylen)
{
    const struct conf_word *w = find_word(k->words, v);
    if (!w)
        return bad_word(k, v, "yes or no", why, whylen);
    *(bool *)field(base, k) = w->value != 0;
    return 0;
}

/* A user's or group's id from the system's databases: 0, -ENOENT (no such name) or -errno. */
static int lookup_id(const char *name, bool group, uint32_t *id)
{
    size_t cap = 1024;
    char *buf = NULL;
    int ret = -ENOENT;
    for (;;) {
        char *grown = realloc(buf, cap);
        if (!grown) {
            ret = -ENOMEM;
            goto out;
        }
        buf = grown;
        int r;
        if (group) {
            struct group g, *res = NULL;
            r = getgrnam_r(name, &g, buf, cap, &res);
            if (r == 0 && res) {
                *id = res->gr_gid;
                ret = 0;
                goto out;
            }
        } else {
            struct passwd pw, *res = NULL;
            r = getpwnam_r(name, &pw, buf, cap, &res);
            if (r == 0 && res) {
                *id = res->pw_uid;
                ret = 0;
                goto out;
            }
        }
        if (r == ERANGE && cap < CONF_FILE_MAX) {
            cap *= 2;
            continue;
        }
        /* not found reads as 0 or, from some NSS modules, one of these */
        ret = (r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM) ? -ENOENT : -r;
        goto out;
    }
out:
    free(buf);
    return ret;
}

/* One entry of a users/groups list: a decimal id 0-4294967294 or a name. */
static int parse_id(const char *tok, bool group, uint32_t *id, char *why, size_t whylen)
{
    const char *what = group ? "group" : "user", *idname = group ? "gid" : "uid";
    char q[CONF_CLIP + 4];
    if (strspn(tok, "0123456789") == strlen(tok)) {
        errno = 0;
        unsigned long long v = strtoull(tok, NULL, 10);
        if (errno || v > CONF_ID_MAX)
            return bad(why, whylen, "%s `%s' is out of range; give 0-%u", idname, clip(tok, q),
                       CONF_ID_MAX);
        *id = (uint32_t)v;
        return 0;
    }
    int r = lookup_id(tok, group, id);
    if (r == -ENOENT)
        return bad(why, whylen, "unknown %s `%s'; give %s names or numeric %ss, separated by "
                   "commas", what, clip(tok, q), what, idname);
    if (r < 0)
        return bad(why, whylen, "cannot look up %s `%s': %s", what, clip(tok, q),
                   strerror(-r));
    return 0;
}

/* "alice, 1001, bob": at most the field's capacity; stored only when every entry is good. */
static int parse_ids(const struct conf_key *k, const char *v, void *base, bool group,
                     char *why, size_t whylen)
{
    const char *what = group ? "group" : "user", *idname = group ? "gid" : "uid";
    int cap = (int)(k->size / sizeof(uint32_t)), n = 0;
    uint32_t ids[CARVED_MAX_IDS];
    char q[CONF_CLIP + 4], tok[CONF_LINE_MAX];
    for (const char *p = v;;) {
        const char *start = p, *end = p + strcspn(p, ",");
        p = end;
        while (start < end && isspace((unsigned char)*start))
            start++;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        if (end == start)
            return bad(why, whylen, "`%s' has an empty entry; give %s names or numeric %ss, "
                       "separated by commas", clip(v, q), what, idname);
        if (n == cap || n == CARVED_MAX_IDS)
            return bad(why, whylen, "more than %d %ss; name at most %d", n, what, n);
        memcpy(tok, start, (size_t)(end - start));
        tok[end - start] = '\0';
        if (parse_id(tok, group, &ids[n], why, whylen) < 0)
            return -EINVAL;
        n++;
        if (*p == '\0')
            break;
        p++;
    }
    memcpy(field(base, k), ids, (size_t)n * sizeof(ids[0]));
    *(int *)((char *)base + k->count) = n;
    return 0;
}

static int parse_users(const struct conf_key *k, const char *v, void *base, char *why,
                       size_t whylen)
{
    return parse_ids(k, v, base, false, why, whylen);
}

static int parse_groups(const struct conf_key *k, const char *v, void *base, char *why,
                        size_t whylen)
{
    return parse_ids(k, v, base, true, why, whylen);
}

/* memory, compute, priority: checked by the CLI's parsers, kept as written. */
static int parse_memory(const struct conf_key *k, const char *v, void *base, char *why,
                        size_t whylen)
{
    struct carve_memory_spec m;
    if (check_length(k, v, why, whylen) < 0 || carve_parse_memory_spec(v, &m, why, whylen) < 0)
        return -EINVAL;
    return store_string(k, v, base, why, whylen);
}

static int parse_compute(const struct conf_key *k, const char *v, void *base, char *why,
                         size_t whylen)
{
    struct carve_compute cc;
    if (check_length(k, v, why, whylen) < 0 || carve_parse_compute(v, &cc, why, whylen) < 0)
        return -EINVAL;
    return store_string(k, v, base, why, whylen);
}

static int parse_priority(const struct conf_key *k, const char *v, void *base, char *why,
                          size_t whylen)
{
    uint8_t prio;
    if (check_length(k, v, why, whylen) < 0 || carve_parse_priority(v, &prio, why, whylen) < 0)
        return -EINVAL;
    return store_string(k, v, base, why, whylen);
}

/* Indices or UUIDs: which GPUs they are, carved learns from NVML when it starts. */
static int parse_gpus(const struct conf_key *k, const char *v, void *base, char *why,
                      size_t whylen)
{
    struct carve_gpu_ref refs[CARVE_SLICE_MAX_DEVICES];
    int n = carve_gpu_refs_parse(v, refs, (int)(k->size / sizeof(refs[0])), why, whylen);
    if (n < 0)
        return n;
    memcpy(field(base, k), refs, (size_t)n * sizeof(refs[0]));
    *(int *)((char *)base + k->count) = n;
    return 0;
}

void carved_config_defaults(struct carved_config *c)
{
    char why[CONF_WHY_MAX];
    memset(c, 0, sizeof(*c));
    /* the table's defaults always parse: test_config checks each against the header's */
    for (size_t i = 0; i < NKEYS; i++)
        if (conf_keys[i].scope == CONF_NODE && conf_keys[i].def)
            conf_keys[i].parse(&conf_keys[i], conf_keys[i].def, c, why, sizeof(why));
}

struct conf_parser {
    const char *file;
    int line;
    struct carved_config *c;
    struct carved_slice_conf *slice; /* the section being read; NULL before the first */
    int seen[NKEYS];                 /* the line each key of this section was set on */
    char *err;
    size_t errlen;
};

static int fail(struct conf_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(struct conf_parser *p, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        int n = snprintf(p->err, p->errlen, "%s:%d: ", p->file, p->line);
        if (n >= 0 && (size_t)n < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -EINVAL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* '#' starts a comment at the start of a line or after a space or tab. */
static void strip_comment(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
}

/* "[slice NAME]", already trimmed and stripped of its comment. */
static int open_section(struct conf_parser *p, char *s)
{
    char q[CONF_CLIP + 4];
    size_t n = strlen(s);
    if (s[n - 1] != ']')
        return fail(p, "`%s' is not a section header; expected [slice NAME]", clip(s, q));
    s[n - 1] = '\0';
    char *in = trim(s + 1);
    if (strncmp(in, "slice", 5) != 0 || (in[5] && !isspace((unsigned char)in[5])))
        return fail(p, "unknown section `[%s]'; the only section is [slice NAME]", clip(in, q));
    char *name = trim(in + 5);
    if (!carve_slice_name_ok(name))
        return fail(p, "invalid slice name `%s'; use 1-%d letters, digits, `.', `_' or `-' "
                    "(not `.' or `..')", clip(name, q), CARVED_NAME_MAX - 1);
    struct carved_config *c = p->c;
    for (int i = 0; i < c->nslices; i++)
        if (strcmp(c->slices[i].name, name) == 0)
            return fail(p, "slice `%s' is already declared on line %d", name,
                        c->slices[i].line);
    if (c->nslices >= CARVED_MAX_CONF_SLICES)
        return fail(p, "more than %d slices; declare at most %d", CARVED_MAX_CONF_SLICES,
                    CARVED_MAX_CONF_SLICES);
    struct carved_slice_conf *sl = &c->slices[c->nslices++];
    memset(sl, 0, sizeof(*sl));
    strcpy(sl->name, name);
    sl->idle_policy = -1;
    sl->line = p->line;
    p->slice = sl;
    memset(p->seen, 0, sizeof(p->seen));
    return 0;
}

static const struct conf_key *find_key(const char *name, enum conf_scope scope)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (conf_keys[i].scope == scope && strcmp(conf_keys[i].name, name) == 0)
            return &conf_keys[i];
    return NULL;
}

/* Levenshtein distance for "did you mean"; SIZE_MAX for long strings. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[33];
    if (la > 32 || lb > 32)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int unknown_key(struct conf_parser *p, const char *key, enum conf_scope scope)
{
    char q[CONF_CLIP + 4], known[256] = "", hint[64] = "";
    size_t used = 0, best = 3;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = distance(key, conf_keys[i].name);
        if (d < best) {
            best = d;
            snprintf(hint, sizeof(hint), " (did you mean `%s'?)", conf_keys[i].name);
        }
        if (conf_keys[i].scope != scope || used >= sizeof(known))
            continue;
        int n = snprintf(known + used, sizeof(known) - used, "%s%s", used ? ", " : "",
                         conf_keys[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
    return fail(p, "unknown key `%s'%s; the %s keys are %s", clip(key, q), hint,
                scope == CONF_NODE ? "node" : "slice", known);
}

static int set_key(struct conf_parser *p, const char *key, const char *value)
{
    enum conf_scope scope = p->slice ? CONF_SLICE : CONF_NODE;
    const struct conf_key *k = find_key(key, scope);
    if (!k && find_key(key, scope == CONF_NODE ? CONF_SLICE : CONF_NODE))
        return fail(p, scope == CONF_NODE
                           ? "`%s' is a slice setting; put it in a [slice NAME] section"
                           : "`%s' is a node setting; put it before the first [slice NAME] "
                             "section", key);
    if (!k)
        return unknown_key(p, key, scope);
    size_t i = (size_t)(k - conf_keys);
    if (p->seen[i])
        return fail(p, "`%s' is set twice (first on line %d); set it once per section", key,
                    p->seen[i]);
    char why[CONF_WHY_MAX] = "";
    void *base = p->slice ? (void *)p->slice : (void *)p->c;
    if (k->parse(k, value, base, why, sizeof(why)) < 0)
        return fail(p, "%s: %s", key, why);
    p->seen[i] = p->line;
    return 0;
}

static int parse_line(struct conf_parser *p, const char *text, size_t len)
{
    char q[CONF_CLIP + 4], buf[CONF_LINE_MAX];
    if (len >= sizeof(buf))
        return fail(p, "the line is longer than %d bytes", CONF_LINE_MAX - 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        bool crlf = ch == '\r' && i == len - 1;
        if ((ch < 0x20 && ch != '\t' && !crlf) || ch == 0x7f)
            return fail(p, "control character 0x%02x in column %zu; lines hold text, tabs "
                        "and a CR-LF end only", ch, i + 1);
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    strip_comment(buf);
    char *s = trim(buf);
    if (!*s)
        return 0;
    if (*s == '[')
        return open_section(p, s);
    char *eq = strchr(s, '=');
    if (!eq)
        return fail(p, "`%s' has no `='; expected KEY = VALUE or [slice NAME]", clip(s, q));
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    if (!*key)
        return fail(p, "no key before `='; expected KEY = VALUE");
    return set_key(p, key, value);
}

int carved_config_parse(const char *text, size_t len, const char *file, struct carved_config *c,
                        char *err, size_t errlen)
{
    struct conf_parser p = {.file = file ? file : "(config)", .c = c, .err = err,
                            .errlen = errlen};
    carved_config_defaults(c);
    if (err && errlen)
        err[0] = '\0';
    if (!text)
        len = 0;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* a UTF-8 byte order mark */
        text += 3;
        len -= 3;
    }
    while (len > 0) {
        if (p.line == INT_MAX)
            return fail(&p, "too many lines");
        p.line++;
        const char *nl = memchr(text, '\n', len);
        size_t n = nl ? (size_t)(nl - text) : len;
        int r = parse_line(&p, text, n);
        if (r < 0)
            return r;
        n += nl != NULL;
        text += n;
        len -= n;
    }
    return 0;
}

int carved_config_load(const char *path, struct carved_config *c, char *err, size_t errlen)
{
    int ret, fd = -1;
    size_t len = 0;
    char *text = NULL;
    carved_config_defaults(c);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        ret = -errno;
        goto failed;
    }
    if (!(text = malloc(CONF_FILE_MAX + 1))) {
        ret = -ENOMEM;
        goto failed;
    }
    for (;;) {
        ssize_t n = read(fd, text + len, CONF_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ret = -errno;
            goto failed;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > CONF_FILE_MAX) {
            ret = -EFBIG;
            if (err && errlen)
                snprintf(err, errlen, "%s: larger than %d bytes; is it a config file?", path,
                         CONF_FILE_MAX);
            goto out;
        }
    }
    ret = carved_config_parse(text, len, path, c, err, errlen);
    goto out;
failed:
    if (err && errlen)
        /* a path of 100 KB filled err and cut off why: it is quoted up to 200 bytes */
        snprintf(err, errlen, "%.200s%s: cannot read: %s", path, strlen(path) > 200 ? "..." : "",
                 strerror(-ret));
out:
    if (fd >= 0)
        close(fd);
    free(text);
    return ret;
}

int carved_config_set(struct carved_config *c, const char *key, const char *value, char *err,
                      size_t errlen)
{
    const struct conf_key *k = find_key(key, CONF_NODE);
    char why[CONF_WHY_MAX] = "";
    if (!k)
        return bad(err, errlen, "unknown key `%s'", key);
    if (k->parse(k, value, c, why, sizeof(why)) < 0)
        return bad(err, errlen, "%s", why);
    return 0;
}
