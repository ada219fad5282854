/* fleet_input.c - reading a workload list (CSV with a header, or JSON) for the planner.
 * Every error names the file, the line, the field and the value, and says what is accepted. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "compute.h"
#include "fleet.h"
#include "size.h"

#define FLEET_MAX_WORKLOADS 2000000u /* after count expansion: 20 times the 100,000 planned in 0.4 s */
#define FLEET_MAX_COUNT 1000000u

enum field { F_NAME, F_MEMORY, F_COMPUTE, F_LATENCY, F_TRUST, F_COUNT, F_NFIELD };
static const char *const field_names[F_NFIELD] = {"name", "memory", "compute", "latency",
                                                  "trust", "count"};

const char *fleet_latency_name(int latency)
{
    static const char *const n[] = {"relaxed", "normal", "strict"};
    return latency >= 0 && latency <= FLEET_LAT_STRICT ? n[latency] : "?";
}

const char *fleet_trust_name(int trust)
{
    return trust == FLEET_UNTRUSTED ? "untrusted" : "trusted";
}

void fleet_workloads_free(struct fleet_workloads *ws)
{
    free(ws->w);
    ws->w = NULL;
    ws->n = ws->cap = 0;
}

int fleet_name_check(const char *s, char *why, size_t len)
{
    bool ascii = true;
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(why, len, "contains a control character (byte %zu)", i + 1);
            return -EINVAL;
        }
        ascii = ascii && c < 0x80;
    }
    json_t *text = ascii ? NULL : json_string(s); /* jansson checks UTF-8 */
    if (!ascii && !text) {
        snprintf(why, len, "is not UTF-8 text");
        return -EINVAL;
    }
    json_decref(text);
    return 0;
}

/* The longest name a workload with a count may have: NAME#1000000 fits FLEET_NAME_MAX. */
#define FLEET_COUNTED_NAME_MAX (FLEET_NAME_MAX - 1 - 8)

static int append(struct fleet_workloads *ws, const struct fleet_workload *w, uint64_t count)
{
    if (count > 1 && strlen(w->name) > FLEET_COUNTED_NAME_MAX)
        return -ENAMETOOLONG;
    if (ws->n + count > FLEET_MAX_WORKLOADS)
        return -E2BIG;
    if (ws->n + count > ws->cap) {
        size_t cap = ws->cap ? ws->cap : 256;
        while (cap < ws->n + count)
            cap *= 2;
        struct fleet_workload *bigger = realloc(ws->w, cap * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        ws->w = bigger;
        ws->cap = cap;
    }
    for (uint64_t i = 0; i < count; i++) {
        ws->w[ws->n] = *w;
        /* name#1, name#2, ...: whole, as a longer name was refused; count is at most a
           million, and the modulus only shows the compiler that seven digits fit */
        if (count > 1)
            snprintf(ws->w[ws->n].name, FLEET_NAME_MAX, "%.*s#%u", FLEET_COUNTED_NAME_MAX,
                     w->name, (unsigned)(i + 1) % 10000000u);
        ws->n++;
    }
    return 0;
}

/* What append's error r means for workload w of file's line; r. */
static int append_error(int r, const struct fleet_workload *w, const char *file, unsigned line,
                        char *err, size_t errlen)
{
    if (r == -ENAMETOOLONG)
        snprintf(err, errlen, "%s:%u: name `%s' is %zu bytes; with a count it becomes NAME#1 "
                              "to NAME#N, so it may have at most %d", file, line, w->name,
                 strlen(w->name), FLEET_COUNTED_NAME_MAX);
    else
        snprintf(err, errlen, r == -E2BIG ? "%s:%u: more than %u workloads in all"
                                          : "%s:%u: out of memory (%u workloads)",
                 file, line, FLEET_MAX_WORKLOADS);
    return r;
}

/* The value parsers: 0, or -EINVAL with "why" (without the place, which the caller adds). */
static int parse_name(const char *s, struct fleet_workload *w, char *why, size_t len)
{
    size_t n = strlen(s);
    if (n >= FLEET_NAME_MAX) {
        snprintf(why, len, "is %zu characters long (at most %d)", n, FLEET_NAME_MAX - 1);
        return -EINVAL;
    }
    if (fleet_name_check(s, why, len))
        return -EINVAL;
    if (n)
        memcpy(w->name, s, n + 1);
    return 0;
}

static int parse_memory(const char *s, struct fleet_workload *w, char *why, size_t len)
{
    uint64_t bytes;
    char err[200];
    if (!*s) {
        snprintf(why, len, "is empty (every workload needs its memory, e.g. 8GiB)");
        return -EINVAL;
    }
    if (carve_parse_size(s, &bytes, err, sizeof(err)) != 0) {
        snprintf(why, len, "%s", err);
        return -EINVAL;
    }
    if (bytes < (1ULL << 20)) {
        /* a bare number is bytes, and a unit is what was meant; a size with a unit (1MB,
           1000KiB) was meant as written, and is below the least a workload may ask for */
        if (strspn(s, "0123456789.") == strlen(s))
            snprintf(why, len, "is %llu bytes, less than 1 MiB (a number without a unit is "
                               "bytes); give a unit (e.g. 8GiB, 512MiB)",
                     (unsigned long long)bytes);
        else
            snprintf(why, len, "`%s' is %llu bytes, less than the minimum of 1 MiB (1048576 "
                               "bytes)", s, (unsigned long long)bytes);
        return -EINVAL;
    }
    if (bytes > (1ULL << 50)) {
        snprintf(why, len, "is more than 1 PiB");
        return -EINVAL;
    }
    w->memory_mib = (bytes + (1ULL << 20) - 1) >> 20;
    return 0;
}

/* "30%", "30", "12.5%": percent of one GPU, 0 to 100, at most two decimals (the form of
 * carve run --compute, which also takes a guarantee's `+'). */
static int parse_percent(const char *s, uint32_t *bp, char *why, size_t len)
{
    const char *p, *reason = carve_parse_percent_bp(s, bp, &p);
    if (!reason && *p == '%')
        p++;
    if (!reason && *p)
        reason = "is not a percentage";
    if (!reason)
        return 0;
    if (strcmp(reason, "is more than 100%") == 0)
        snprintf(why, len, "%s is more than 100%% of a GPU", s);
    else if (strcmp(reason, "is not a percentage") == 0)
        snprintf(why, len, "`%s' is not a percentage of one GPU (0 to 100, e.g. 30%% or 12.5%%)", s);
    else
        snprintf(why, len, "`%s' %s (a percentage of one GPU: 0 to 100, e.g. 30%% or 12.5%%)", s,
                 reason);
    return -EINVAL;
}

static int parse_compute(const char *s, struct fleet_workload *w, char *why, size_t len)
{
    if (!*s) {
        w->compute_bp = 0;
        return 0;
    }
    return parse_percent(s, &w->compute_bp, why, len);
}

static int parse_latency(const char *s, struct fleet_workload *w, char *why, size_t len)
{
    static const struct {
        const char *word;
        int v;
    } words[] = {{"", FLEET_LAT_NORMAL},        {"normal", FLEET_LAT_NORMAL},
                 {"strict", FLEET_LAT_STRICT},  {"online", FLEET_LAT_STRICT},
                 {"latency", FLEET_LAT_STRICT}, {"relaxed", FLEET_LAT_RELAXED},
                 {"batch", FLEET_LAT_RELAXED},  {"notebook", FLEET_LAT_RELAXED}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(s, words[i].word) == 0) {
            w->latency = (uint8_t)words[i].v;
            return 0;
        }
    snprintf(why, len, "`%s' is not a latency class (strict, normal or relaxed)", s);
    return -EINVAL;
}

static int parse_trust(const char *s, struct fleet_workload *w, char *why, size_t len)
{
    if (!*s || strcasecmp(s, "trusted") == 0 || strcasecmp(s, "team") == 0) {
        w->trust = FLEET_TRUSTED;
        return 0;
    }
    if (strcasecmp(s, "untrusted") == 0 || strcasecmp(s, "tenant") == 0) {
        w->trust = FLEET_UNTRUSTED;
        return 0;
    }
    snprintf(why, len, "`%s' is not a trust level (trusted or untrusted)", s);
    return -EINVAL;
}

static int parse_count(const char *s, uint64_t *count, char *why, size_t len)
{
    char *end;
    if (!*s) {
        *count = 1;
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || errno || v == 0 || v > FLEET_MAX_COUNT) {
        snprintf(why, len, "`%s' is not a whole number from 1 to %u", s, FLEET_MAX_COUNT);
        return -EINVAL;
    }
    *count = v;
    return 0;
}

/* Sets one field of w from its text; *count for the count field. */
static int parse_field(int f, const char *s, struct fleet_workload *w, uint64_t *count,
                       char *why, size_t len)
{
    switch (f) {
    case F_NAME: return parse_name(s, w, why, len);
    case F_MEMORY: return parse_memory(s, w, why, len);
    case F_COMPUTE: return parse_compute(s, w, why, len);
    case F_LATENCY: return parse_latency(s, w, why, len);
    case F_TRUST: return parse_trust(s, w, why, len);
    default: return parse_count(s, count, why, len);
    }
}

static void default_workload(struct fleet_workload *w, uint32_t line, const char *prefix)
{
    memset(w, 0, sizeof(*w));
    w->latency = FLEET_LAT_NORMAL;
    w->trust = FLEET_TRUSTED;
    w->line = line;
    snprintf(w->name, sizeof(w->name), "%s%u", prefix, line);
}

/* ---- CSV ---- */

#define CSV_MAX_COLS 16
#define CSV_FIELD_MAX 256

/* Splits one line (NUL-terminated, no newline) into trimmed fields; a field may be wrapped
 * in double quotes, with "" for a quote inside (RFC 4180, but for a line break inside quotes,
 * which is not supported: one workload a line). Returns the number of fields, or -1 with why,
 * or CSV_OPEN_QUOTE with why when a quote is still open at the end of the line. */
#define CSV_OPEN_QUOTE (-2)
static int csv_split(char *line, char *fields[CSV_MAX_COLS], int *quoted, char *why,
                     size_t len)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (n == CSV_MAX_COLS) {
            snprintf(why, len, "has more than %d fields", CSV_MAX_COLS);
            return -1;
        }
        char *start = p, *end;
        if (*p == '"') {
            start = ++p;
            char *q = start; /* the field's text moves left over each "" */
            for (;;) {
                if (!*p) {
                    snprintf(why, len, "field %d opens a quote that is never closed", n + 1);
                    *quoted = n + 1;
                    return CSV_OPEN_QUOTE;
                }
                if (*p == '"' && p[1] != '"')
                    break;
                if (*p == '"')
                    p++;
                *q++ = *p++;
            }
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p && *p != ',') {
                snprintf(why, len, "field %d has text after its closing quote", n + 1);
                return -1;
            }
            end = q;
        } else {
            while (*p && *p != ',')
                p++;
            end = p;
            while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        }
        char sep = *p;
        *end = '\0';
        fields[n++] = start;
        if (sep != ',')
            break;
        p++;
    }
    return n;
}

static int csv_header(char **fields, int n, int cols[CSV_MAX_COLS], const char *file,
                      uint32_t line, char *err, size_t errlen)
{
    bool seen[F_NFIELD] = {false};
    for (int i = 0; i < n; i++) {
        cols[i] = -1;
        for (int f = 0; f < F_NFIELD; f++)
            if (strcasecmp(fields[i], field_names[f]) == 0)
                cols[i] = f;
        if (cols[i] < 0) {
            snprintf(err, errlen,
                     "%s:%u: header column %d `%.64s' is not a workload field (name, memory, "
                     "compute, latency, trust, count)",
                     file, line, i + 1, fields[i]);
            return -EINVAL;
        }
        if (seen[cols[i]]) {
            snprintf(err, errlen, "%s:%u: header names column `%s' twice", file, line,
                     field_names[cols[i]]);
            return -EINVAL;
        }
        seen[cols[i]] = true;
    }
    if (!seen[F_MEMORY]) {
        snprintf(err, errlen,
                 "%s:%u: the header has no `memory' column (a CSV workload list starts with a "
                 "header such as name,memory,compute,latency,trust)",
                 file, line);
        return -EINVAL;
    }
    return 0;
}

static int parse_csv(const char *text, size_t len, const char *file, struct fleet_workloads *out,
                     char *err, size_t errlen)
{
    int cols[CSV_MAX_COLS], ncols = 0;
    char buf[CSV_MAX_COLS * CSV_FIELD_MAX];
    uint32_t line = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
        line++;
        const char *start = text + pos;
        pos += ll + (nl ? 1 : 0);
        if (ll && start[ll - 1] == '\r')
            ll--;
        if (memchr(start, '\r', ll)) { /* old Mac files end their lines with CR alone: the whole file is one line */
            snprintf(err, errlen, "%s:%u: a carriage return (CR) not followed by a line feed: "
                                  "lines that end in CR alone (old Mac files) are not read; save "
                                  "the file with LF or CRLF line ends (e.g. tr '\\r' '\\n')",
                     file, line);
            return -EINVAL;
        }
        if (ll >= sizeof(buf)) {
            snprintf(err, errlen, "%s:%u: line is %zu bytes long (at most %zu)", file, line, ll,
                     sizeof(buf) - 1);
            return -EINVAL;
        }
        if (memchr(start, '\0', ll)) {
            snprintf(err, errlen, "%s:%u: line contains a NUL byte (is this a text file?)", file, line);
            return -EINVAL;
        }
        memcpy(buf, start, ll);
        buf[ll] = '\0';
        const char *first = buf + strspn(buf, " \t");
        if (!*first || *first == '#')
            continue;
        char *fields[CSV_MAX_COLS], why[256];
        int quoted = 0;
        int n = csv_split(buf, fields, &quoted, why, sizeof(why));
        if (n == CSV_OPEN_QUOTE && nl && memchr(nl, '"', len - pos + 1)) {
            /* a quote a later line closes: a quoted field with a line break in it */
            snprintf(err, errlen, "%s:%u: the quote of field %d is not closed on this line: a "
                                  "line break inside a quoted field is not supported (RFC 4180 "
                                  "allows one; carve reads one workload a line): put the field "
                                  "on one line", file, line, quoted);
            return -EINVAL;
        }
        if (n < 0) {
            snprintf(err, errlen, "%s:%u: %s", file, line, why);
            return -EINVAL;
        }
        if (!ncols) {
            if (csv_header(fields, n, cols, file, line, err, errlen))
                return -EINVAL;
            ncols = n;
            continue;
        }
        if (n != ncols) {
            snprintf(err, errlen, "%s:%u: %d field%s, but the header has %d columns", file, line,
                     n, n == 1 ? "" : "s", ncols);
            return -EINVAL;
        }
        struct fleet_workload w;
        uint64_t count = 1;
        default_workload(&w, line, "line");
        for (int i = 0; i < n; i++) {
            if (parse_field(cols[i], fields[i], &w, &count, why, sizeof(why))) {
                snprintf(err, errlen, "%s:%u: field `%s' (column %d): %s", file, line,
                         field_names[cols[i]], i + 1, why);
                return -EINVAL;
            }
        }
        int r = append(out, &w, count);
        if (r)
            return append_error(r, &w, file, line, err, errlen);
    }
    if (!ncols) {
        snprintf(err, errlen, "%s: no header line and no workloads (expected a header such as "
                              "name,memory,compute,latency,trust)", file);
        return -EINVAL;
    }
    return 0;
}

/* ---- JSON ---- */

/* The line on which each element of the workload array starts, in order, so that JSON errors
 * name a line like CSV errors do. depth is the nesting of the array's elements (1 for a bare
 * array, 2 for {"workloads": [...]}). Every element counts, not only objects: an element that
 * is not an object is itself an error, and naming the line of a later object for it (and then
 * line 1 for the objects after it) would send the reader to the wrong place. */
static uint32_t *element_lines(const char *text, size_t len, int depth, size_t want)
{
    uint32_t *lines = calloc(want ? want : 1, sizeof(*lines));
    if (!lines)
        return NULL;
    uint32_t line = 1;
    int d = 0;
    bool in_string = false, element_next = false;
    size_t found = 0;
    for (size_t i = 0; i < len && found < want; i++) {
        char c = text[i];
        if (c == '\n')
            line++;
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        /* the first byte of an element: after the array's `[' or a `,' at its level */
        if (d == depth && element_next && !isspace((unsigned char)c) && c != ']') {
            lines[found++] = line;
            element_next = false;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[') {
            d++;
            element_next = d == depth && c == '[';
        } else if (c == '}' || c == ']')
            d--;
        else if (c == ',' && d == depth)
            element_next = true;
    }
    return lines;
}

/* A JSON value as the text the CSV parsers read; numbers are allowed for compute/count. */
static int json_field_text(int f, json_t *v, char *buf, size_t len, char *why, size_t wlen)
{
    if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
        if (strlen(json_string_value(v)) >= len) {
            snprintf(why, wlen, "is longer than %zu characters", len - 1);
            return -EINVAL;
        }
        return 0;
    }
    if (json_is_integer(v) && (f == F_COMPUTE || f == F_COUNT)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        return 0;
    }
    if (json_is_real(v) && (f == F_COMPUTE || f == F_COUNT)) {
        /* as written (to 15 digits), so that 12.345 is refused as it is in a CSV, and a count
           of 2.5 is told it is not a whole number rather than not a number */
        snprintf(buf, len, "%.15g", json_real_value(v));
        return 0;
    }
    snprintf(why, wlen, "%s", f == F_MEMORY ? "must be a size string such as \"8GiB\""
                              : f == F_COMPUTE || f == F_COUNT ? "must be a number or a string"
                                                                 : "must be a string");
    return -EINVAL;
}

static int parse_json_workload(json_t *o, uint32_t line, size_t idx, const char *file,
                               struct fleet_workloads *out, char *err, size_t errlen)
{
    struct fleet_workload w;
    uint64_t count = 1;
    char why[256], text[CSV_FIELD_MAX];
    default_workload(&w, line, "workload");
    snprintf(w.name, sizeof(w.name), "workload%zu", idx + 1);
    if (!json_is_object(o)) {
        snprintf(err, errlen, "%s:%u: workload %zu is not an object", file, line, idx + 1);
        return -EINVAL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int f = -1;
        for (int i = 0; i < F_NFIELD; i++)
            if (strcmp(key, field_names[i]) == 0)
                f = i;
        if (f < 0) {
            snprintf(err, errlen, "%s:%u: workload %zu: `%.64s' is not a workload field (name, "
                                  "memory, compute, latency, trust, count)", file, line, idx + 1, key);
            return -EINVAL;
        }
        if (json_field_text(f, v, text, sizeof(text), why, sizeof(why)) ||
            parse_field(f, text, &w, &count, why, sizeof(why))) {
            snprintf(err, errlen, "%s:%u: workload %zu: field `%s': %s", file, line, idx + 1,
                     key, why);
            return -EINVAL;
        }
    }
    if (!json_object_get(o, "memory")) {
        snprintf(err, errlen, "%s:%u: workload %zu has no `memory' (e.g. \"memory\": \"8GiB\")",
                 file, line, idx + 1);
        return -EINVAL;
    }
    int r = append(out, &w, count);
    return r ? append_error(r, &w, file, line, err, errlen) : 0;
}

static int parse_json(const char *text, size_t len, const char *file, struct fleet_workloads *out,
                      char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", file, jerr.line, jerr.column, jerr.text);
        return -EINVAL;
    }
    int depth = 1, ret = 0;
    json_t *list = root;
    if (json_is_object(root)) {
        list = json_object_get(root, "workloads");
        if (json_object_size(root) != 1 || !list) {
            snprintf(err, errlen, "%s: a JSON workload list is an array, or an object with one "
                                  "key, \"workloads\", holding the array", file);
            json_decref(root);
            return -EINVAL;
        }
        depth = 2;
    }
    if (!json_is_array(list)) {
        snprintf(err, errlen, "%s: expected an array of workloads", file);
        json_decref(root);
        return -EINVAL;
    }
    size_t n = json_array_size(list);
    uint32_t *lines = element_lines(text, len, depth, n);
    if (!lines) {
        json_decref(root);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n && !ret; i++)
        ret = parse_json_workload(json_array_get(list, i), lines[i] ? lines[i] : 1, i, file, out,
                                  err, errlen);
    free(lines);
    json_decref(root);
    return ret;
}

static int by_name(const void *a, const void *b, void *workloads)
{
    const struct fleet_workload *w = workloads;
    return strcmp(w[*(const size_t *)a].name, w[*(const size_t *)b].name);
}

/* Every workload's name is its own: --assign and --json say where each one went by it. */
static int check_unique_names(const struct fleet_workloads *ws, const char *file, char *err,
                              size_t errlen)
{
    if (ws->n < 2)
        return 0;
    size_t *order = malloc(ws->n * sizeof(*order));
    if (!order) {
        snprintf(err, errlen, "%s: out of memory", file);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ws->n; i++)
        order[i] = i;
    qsort_r(order, ws->n, sizeof(*order), by_name, ws->w);
    const struct fleet_workload *first = NULL, *again = NULL;
    for (size_t i = 1; i < ws->n; i++) {
        const struct fleet_workload *a = &ws->w[order[i - 1]], *b = &ws->w[order[i]];
        if (strcmp(a->name, b->name) == 0 && (!again || (a->line > b->line ? a : b)->line <
                                                            again->line)) {
            first = a->line <= b->line ? a : b;
            again = first == a ? b : a;
        }
    }
    free(order);
    if (!again)
        return 0;
    snprintf(err, errlen, "%s:%u: workload name `%s' is the name of the workload on line %u "
                          "too; give each workload a name of its own (--assign and --json say "
                          "where each one went by its name)%s",
             file, again->line, again->name, first->line,
             strchr(again->name, '#') ? "; a line with a count of N names its workloads "
                                        "NAME#1 to NAME#N" : "");
    return -EINVAL;
}

int fleet_parse_workloads(const char *text, size_t len, const char *file,
                          struct fleet_workloads *out, char *err, size_t errlen)
{
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* a UTF-8 byte-order mark */
        text += 3;
        len -= 3;
    }
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    int ret = i < len && (text[i] == '[' || text[i] == '{')
                  ? parse_json(text, len, file, out, err, errlen)
                  : parse_csv(text, len, file, out, err, errlen);
    return ret ? ret : check_unique_names(out, file, err, errlen);
}
