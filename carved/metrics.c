/* metrics.c - the node snapshot as Prometheus text (exposition format 0.0.4): the per-GPU
 * gauges under the names NVIDIA's DCGM exporter uses, so existing dashboards and alerts read
 * them unchanged, and carve's own per-slice and node metrics under carve_. The snapshot is
 * read, never trusted: a missing or mistyped field drops that one sample, nothing more. */
#include "carved.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an append-only text buffer; a failed allocation is remembered, checked once ---- */

struct buf {
    char *p;
    size_t len, cap;
    bool oom;
};

static bool buf_reserve(struct buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void buf_put(struct buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_puts(struct buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        buf_put(b, small, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A label value, escaped as the format asks: backslash, double quote and newline. */
static void buf_put_label_value(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\': buf_puts(b, "\\\\"); break;
        case '"': buf_puts(b, "\\\""); break;
        case '\n': buf_puts(b, "\\n"); break;
        default: buf_put(b, s, 1);
        }
    }
}

/* ---- sample values: JSON integers stay exact (byte counts pass 2^53), reals round-trip ---- */

struct sample {
    bool is_int;
    bool derived; /* computed here (a ratio): 15 digits, so 0.1/100 is 0.001 */
    json_int_t i;
    double d;
};

static void buf_put_sample(struct buf *b, const struct sample *v)
{
    if (v->is_int) {
        buf_printf(b, "%" JSON_INTEGER_FORMAT, v->i);
        return;
    }
    if (isnan(v->d)) {
        buf_puts(b, "NaN");
        return;
    }
    if (isinf(v->d)) {
        buf_puts(b, v->d > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* a value from the snapshot: the shortest of %.15g..%.17g that reads back as the same
     * double (0.285, not 0.28499999999999998) */
    char s[40];
    for (int prec = 15; prec <= (v->derived ? 15 : 17); prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v->d);
        if (strtod(s, NULL) == v->d)
            break;
    }
    buf_puts(b, s);
}

/* ---- reading the snapshot defensively ---- */

static const char *str_field(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static bool number_field(const json_t *o, const char *key, struct sample *out)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) {
        *out = (struct sample){.is_int = true, .i = json_integer_value(v)};
        return true;
    }
    if (json_is_real(v)) {
        *out = (struct sample){.d = json_real_value(v)};
        return true;
    }
    return false;
}

static double sample_double(const struct sample *v)
{
    return v->is_int ? (double)v->i : v->d;
}

/* ---- the metric families: name, type, help, whose they are, and how a value is read ---- */

enum scope {
    SCOPE_DCGM,   /* one sample per GPU, DCGM's labels: gpu, UUID, pci_bus_id (when known),
                     device, modelName, Hostname, in dcgm-exporter's order */
    SCOPE_GPU,    /* one per GPU, carve's labels: gpu, UUID, Hostname */
    SCOPE_DEVICE, /* one per (slice, GPU it spans): slice, gpu, UUID, Hostname */
    SCOPE_SLICE,  /* one per slice: slice, Hostname */
    SCOPE_NODE,   /* one per node: Hostname */
};

struct family;
/* obj: the GPU, the slice's device entry, the slice or the snapshot, as the scope says. */
typedef bool (*getter)(const struct family *f, const json_t *obj, const json_t *snap,
                       struct sample *out);

struct family {
    const char *name;
    const char *type;
    const char *help;
    enum scope scope;
    getter get;
    const char *field;
};

/* the field as it is */
static bool get_number(const struct family *f, const json_t *obj, const json_t *snap,
                       struct sample *out)
{
    return number_field(obj, f->field, out);
}

/* a byte count in whole MiB, as DCGM reports frame-buffer memory */
static bool get_mib(const struct family *f, const json_t *obj, const json_t *snap,
                    struct sample *out)
{
    if (!number_field(obj, f->field, out) || sample_double(out) < 0)
        return false;
    if (out->is_int)
        out->i >>= 20;
    else
        out->d = (double)(uint64_t)(out->d / 1048576.0); /* whole MiB; no libm needed */
    return true;
}

static bool get_fb_free(const struct family *f, const json_t *obj, const json_t *snap,
                        struct sample *out)
{
    const json_t *total = json_object_get(obj, "memory_total");
    const json_t *used = json_object_get(obj, "memory_used");
    if (!json_is_integer(total) || !json_is_integer(used))
        return false;
    json_int_t t = json_integer_value(total), u = json_integer_value(used);
    *out = (struct sample){.is_int = true, .i = t > u && u >= 0 ? (t - u) >> 20 : 0};
    return true;
}

/* a percentage field as a 0..1 ratio */
static bool get_ratio(const struct family *f, const json_t *obj, const json_t *snap,
                      struct sample *out)
{
    if (!number_field(obj, f->field, out))
        return false;
    *out = (struct sample){.derived = true, .d = sample_double(out) / 100.0};
    return true;
}

/* The share a slice asks for, "30%" / "30" / "12.5%" with an optional trailing '+', as a
 * ratio; "" (unpaced) is 0. Anything else drops the sample. */
static bool get_target(const struct family *f, const json_t *obj, const json_t *snap,
                       struct sample *out)
{
    const char *s = json_string_value(json_object_get(obj, f->field));
    if (!s)
        return false;
    if (!*s) {
        *out = (struct sample){.d = 0};
        return true;
    }
    char *end;
    double pct = strtod(s, &end);
    if (end == s)
        return false;
    if (*end == '%')
        end++;
    if (*end == '+')
        end++;
    if (*end || !(pct > 0 && pct <= 100))
        return false;
    *out = (struct sample){.derived = true, .d = pct / 100.0};
    return true;
}

/* an hours field in seconds, the base unit Prometheus names metrics in */
static bool get_hours_as_seconds(const struct family *f, const json_t *obj, const json_t *snap,
                                 struct sample *out)
{
    if (!number_field(obj, f->field, out))
        return false;
    *out = (struct sample){.derived = true, .d = sample_double(out) * 3600.0};
    return true;
}

static bool get_bool(const struct family *f, const json_t *obj, const json_t *snap,
                     struct sample *out)
{
    const json_t *v = json_object_get(obj, f->field);
    if (!json_is_boolean(v))
        return false;
    *out = (struct sample){.is_int = true, .i = json_is_true(v)};
    return true;
}

/* the length of an array field */
static bool get_count(const struct family *f, const json_t *obj, const json_t *snap,
                      struct sample *out)
{
    const json_t *v = json_object_get(obj, f->field);
    if (!json_is_array(v))
        return false;
    *out = (struct sample){.is_int = true, .i = (json_int_t)json_array_size(v)};
    return true;
}

/* escapes seen in this snapshot on this GPU */
static bool get_gpu_escapes(const struct family *f, const json_t *gpu, const json_t *snap,
                            struct sample *out)
{
    const json_t *escapes = json_object_get(snap, "escapes");
    if (!json_is_array(escapes))
        return false;
    json_int_t index = json_integer_value(json_object_get(gpu, "index"));
    json_int_t n = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(escapes, i, e) {
        const json_t *g = json_object_get(e, "gpu");
        if (json_is_integer(g) && json_integer_value(g) == index)
            n++;
    }
    *out = (struct sample){.is_int = true, .i = n};
    return true;
}

/* a field of the snapshot's "totals" */
static bool get_total(const struct family *f, const json_t *snap, const json_t *unused,
                      struct sample *out)
{
    return number_field(json_object_get(snap, "totals"), f->field, out);
}

static const struct family families[] = {
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     SCOPE_DCGM, get_mib, "memory_used"},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     SCOPE_DCGM, get_fb_free, NULL},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
     SCOPE_DCGM, get_number, "utilization"},
    {"carve_gpu_processes", "gauge", "Processes using the GPU, in slices or not.",
     SCOPE_GPU, get_count, "processes"},
    {"carve_gpu_lost", "gauge",
     "1 while NVML says the GPU is lost (fallen off the bus): nothing of it is read.",
     SCOPE_GPU, get_bool, "lost"},
    /* not carve_escapes: beside the counter carve_escapes_total, an OpenMetrics reader
     * takes that name for the counter's family too */
    {"carve_gpu_escapes", "gauge",
     "Processes using the GPU outside any slice now (escapes), per GPU.",
     SCOPE_GPU, get_gpu_escapes, NULL},
    {"carve_slice_memory_cap_bytes", "gauge",
     "Memory cap of the slice on the GPU in bytes (0 = no cap).",
     SCOPE_DEVICE, get_number, "memory_cap"},
    {"carve_slice_memory_used_bytes", "gauge", "Memory the slice holds on the GPU in bytes.",
     SCOPE_DEVICE, get_number, "memory_used"},
    {"carve_slice_memory_peak_bytes", "gauge",
     "Most memory the slice has held on the GPU in bytes.",
     SCOPE_DEVICE, get_number, "memory_peak"},
    {"carve_slice_oom_denials_total", "counter",
     "Allocations refused because they would pass the slice's memory cap.",
     SCOPE_DEVICE, get_number, "oom_denials"},
    {"carve_slice_compute_share_ratio", "gauge",
     "Share of the GPU's time the slice's processes ran kernels over the last poll "
     "interval, as NVML measures it (0..1).",
     SCOPE_DEVICE, get_ratio, "compute_share"},
    {"carve_slice_compute_target_ratio", "gauge",
     "Share of the GPU's time the slice is given (0..1; 0 = unpaced).",
     SCOPE_DEVICE, get_target, "compute"},
    {"carve_slice_held_seconds_total", "counter",
     "Time the slice's launches were held back by the compute limiter, in seconds.",
     SCOPE_DEVICE, get_number, "held_seconds_total"},
    {"carve_slice_launches_total", "counter",
     "Kernel launches the compute limiter charged in the slice (none while it does not "
     "limit it: no compute share, or a guarantee with the GPU to itself).",
     SCOPE_DEVICE, get_number, "launches_total"},
    {"carve_slice_idle_seconds", "gauge",
     "Time the slice has held memory without launching a kernel, in seconds.",
     SCOPE_SLICE, get_number, "idle_seconds"},
    {"carve_slice_idle", "gauge", "1 if the slice is flagged idle, else 0.",
     SCOPE_SLICE, get_bool, "idle"},
    {"carve_slice_idle_gpu_seconds_total", "counter",
     "GPU-seconds the slice has held memory idle: stretches of idle_after or more, from their "
     "start, on each GPU (divide by 3600 for GPU-hours).",
     SCOPE_SLICE, get_hours_as_seconds, "idle_gpu_hours"},
    {"carve_slice_processes", "gauge", "Processes running in the slice.",
     SCOPE_SLICE, get_count, "processes"},
    {"carve_slice_gpus_gone", "gauge",
     "GPUs the slice was made for that the node no longer has (by UUID; see carved's log).",
     SCOPE_SLICE, get_count, "gpus_gone"},
    {"carve_slices", "gauge", "Slices on the node.", SCOPE_NODE, get_count, "slices"},
    {"carve_config_slices_waiting", "gauge",
     "Slices of carved's config not made yet, for want of room: a guarantee that does not fit "
     "beside the slices held, or no free place (carve slice list says why).",
     SCOPE_NODE, get_count, "config_waiting"},
    {"carve_escapes_total", "counter",
     "Processes seen using a GPU outside any slice or past their slice's cap (kept across restarts of carved).",
     SCOPE_NODE, get_total, "escapes"},
    {"carve_escapes_killed_total", "counter",
     "Escaped processes carved has killed (kept across its restarts).",
     SCOPE_NODE, get_total, "escapes_killed"},
    {"carve_idle_reclaims_total", "counter",
     "Idle slices whose memory carved has reclaimed (kept across its restarts).",
     SCOPE_NODE, get_total, "idle_reclaims"},
    {"carve_snapshot_timestamp_seconds", "gauge",
     "When carved took the snapshot these metrics come from (Unix time, seconds).",
     SCOPE_NODE, get_number, "time"},
};

/* ---- writing one family ---- */

struct label {
    const char *key;
    const char *value;
};

struct emitter {
    struct buf *b;
    const struct family *f;
    const json_t *snap;
    const char *host;
    bool header_done; /* HELP and TYPE go out once, before the family's first sample */
};

static void emit(struct emitter *e, const json_t *obj, const struct label *labels, int n)
{
    struct sample v;
    if (!e->f->get(e->f, obj, e->snap, &v))
        return;
    struct buf *b = e->b;
    if (!e->header_done) {
        buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", e->f->name, e->f->help, e->f->name,
                   e->f->type);
        e->header_done = true;
    }
    buf_puts(b, e->f->name);
    for (int i = 0; i < n; i++) {
        buf_printf(b, "%s%s=\"", i ? "," : "{", labels[i].key);
        buf_put_label_value(b, labels[i].value);
        buf_puts(b, "\"");
    }
    buf_puts(b, n ? "} " : " ");
    buf_put_sample(b, &v);
    buf_puts(b, "\n");
}

/* A GPU's index as label text; false (skip it) if it has none. */
static bool index_label(const json_t *o, char *out, size_t len)
{
    const json_t *v = json_object_get(o, "index");
    if (!json_is_integer(v))
        return false;
    snprintf(out, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return true;
}

static void emit_gpus(struct emitter *e)
{
    size_t i;
    const json_t *gpu;
    json_array_foreach(json_object_get(e->snap, "gpus"), i, gpu) {
        char index[32];
        if (!index_label(gpu, index, sizeof(index)))
            continue;
        /* a GPU carved does not watch (not in its list since its start): whether it is lost,
           and nothing else, which would read as none used, idle and no escape */
        if (json_is_true(json_object_get(gpu, "unlisted")) &&
            (!e->f->field || strcmp(e->f->field, "lost") != 0))
            continue;
        if (e->f->scope == SCOPE_DCGM) {
            /* a lost GPU's memory and utilisation read as none: free and idle it is not */
            if (json_is_true(json_object_get(gpu, "lost")))
                continue;
            /* device is /dev/nvidiaN; a snapshot from before carved read it: the index */
            char device[48];
            const char *dv = str_field(gpu, "device"), *pci = str_field(gpu, "pci_bus_id");
            if (*dv)
                snprintf(device, sizeof(device), "%s", dv);
            else
                snprintf(device, sizeof(device), "nvidia%s", index);
            struct label l[6] = {{"gpu", index}, {"UUID", str_field(gpu, "uuid")}};
            int n = 2;
            if (*pci)
                l[n++] = (struct label){"pci_bus_id", pci};
            l[n++] = (struct label){"device", device};
            l[n++] = (struct label){"modelName", str_field(gpu, "name")};
            l[n++] = (struct label){"Hostname", e->host};
            emit(e, gpu, l, n);
        } else {
            struct label l[] = {{"gpu", index}, {"UUID", str_field(gpu, "uuid")},
                                {"Hostname", e->host}};
            emit(e, gpu, l, 3);
        }
    }
}

static void emit_slices(struct emitter *e)
{
    size_t i, j;
    const json_t *slice, *dev;
    json_array_foreach(json_object_get(e->snap, "slices"), i, slice) {
        const char *name = json_string_value(json_object_get(slice, "name"));
        if (!name)
            continue;
        if (e->f->scope == SCOPE_SLICE) {
            struct label l[] = {{"slice", name}, {"Hostname", e->host}};
            emit(e, slice, l, 2);
            continue;
        }
        json_array_foreach(json_object_get(slice, "devices"), j, dev) {
            char index[32];
            if (!index_label(dev, index, sizeof(index)))
                continue;
            struct label l[] = {{"slice", name}, {"gpu", index},
                                {"UUID", str_field(dev, "uuid")}, {"Hostname", e->host}};
            emit(e, dev, l, 4);
        }
    }
}

char *carved_metrics_render(const json_t *snap)
{
    struct buf b = {0};
    const char *host = str_field(snap, "node");
    buf_reserve(&b, 0); /* "" for an empty snapshot, never NULL but on out of memory */
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        struct emitter e = {.b = &b, .f = &families[i], .snap = snap, .host = host};
        switch (families[i].scope) {
        case SCOPE_DCGM:
        case SCOPE_GPU:
            emit_gpus(&e);
            break;
        case SCOPE_DEVICE:
        case SCOPE_SLICE:
            emit_slices(&e);
            break;
        case SCOPE_NODE: {
            struct label l[] = {{"Hostname", host}};
            emit(&e, snap, l, 1);
            break;
        }
        }
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    return b.p;
}
