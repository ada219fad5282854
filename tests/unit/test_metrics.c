/* test_metrics.c - the Prometheus text carved serves: exact sample lines (names, labels,
 * values) for a hand-written snapshot, HELP and TYPE once per family ahead of its samples,
 * label escaping, and empty or malformed snapshots rendered without a crash. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "carved.h"

#define GiB (1LL << 30)
#define MiB (1LL << 20)

/* two GPUs, a slice on each and one spanning both, an escape, the totals */
static const char *const SNAPSHOT = "{"
    "\"version\": 1, \"node\": \"gpu-node-1\", \"time\": 1763900000.5, \"simulated\": true,"
    "\"gpus\": ["
    "  {\"index\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"NVIDIA H100 80GB HBM3\","
    "   \"pci_bus_id\": \"00000000:18:00.0\", \"device\": \"nvidia3\","
    "   \"memory_total\": 85899345920, \"memory_used\": 10737418240, \"utilization\": 37,"
    "   \"processes\": [{\"pid\": 1}, {\"pid\": 2}, {\"pid\": 456}]},"
    "  {\"index\": 1, \"uuid\": \"GPU-bbbb\", \"name\": \"NVIDIA H100 80GB HBM3\","
    "   \"memory_total\": 85899345920, \"memory_used\": 0, \"utilization\": 0,"
    "   \"processes\": []}"
    "],"
    "\"slices\": ["
    "  {\"name\": \"train\", \"owner\": \"alice\", \"uid\": 1000, \"created\": 1763899000,"
    "   \"origin\": \"config\","
    "   \"devices\": [{\"index\": 0, \"uuid\": \"GPU-aaaa\", \"memory_cap\": 8589934592,"
    "     \"memory_used\": 4294967296, \"memory_peak\": 6442450944, \"oom_denials\": 3,"
    "     \"compute\": \"30%\", \"priority\": \"normal\", \"compute_share\": 28.5,"
    "     \"held_seconds_total\": 1.25, \"launches_total\": 1200}],"
    "   \"processes\": [{\"pid\": 1}, {\"pid\": 2}],"
    "   \"idle\": false, \"idle_seconds\": 12.0, \"idle_gpu_hours\": 0.0,"
    "   \"policy_idle\": \"report\"},"
    "  {\"name\": \"both\", \"owner\": \"bob\", \"uid\": 1001, \"created\": 1763899500,"
    "   \"origin\": \"api\","
    "   \"devices\": ["
    "     {\"index\": 0, \"uuid\": \"GPU-aaaa\", \"memory_cap\": 0, \"memory_used\": 0,"
    "      \"memory_peak\": 0, \"oom_denials\": 0, \"compute\": \"\", \"priority\": \"batch\","
    "      \"compute_share\": 0, \"held_seconds_total\": 0, \"launches_total\": 0},"
    "     {\"index\": 1, \"uuid\": \"GPU-bbbb\", \"memory_cap\": 1152921504606846976,"
    "      \"memory_used\": 1048576, \"memory_peak\": 1048576, \"oom_denials\": 0,"
    "      \"compute\": \"12.5%+\", \"priority\": \"batch\", \"compute_share\": 33.3,"
    "      \"held_seconds_total\": 0.5, \"launches_total\": 7}],"
    "   \"processes\": [],"
    "   \"idle\": true, \"idle_seconds\": 3600.25, \"idle_gpu_hours\": 1.5,"
    "   \"policy_idle\": \"reclaim\"}"
    "],"
    "\"escapes\": [{\"gpu\": 0, \"uuid\": \"GPU-aaaa\", \"pid\": 456, \"user\": \"eve\","
    "  \"command\": \"a.out\", \"used_memory\": 1073741824, \"action\": \"reported\"}],"
    "\"totals\": {\"escapes\": 4, \"escapes_killed\": 1, \"idle_reclaims\": 2,"
    "  \"oom_denials\": 3}"
    "}";

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("test snapshot does not parse: %s at line %d col %d", e.text, e.line,
                 e.column);
    return j;
}

static char *render_text(const char *json)
{
    json_t *snap = load(json);
    char *out = carved_metrics_render(snap);
    json_decref(snap);
    assert_non_null(out);
    return out;
}

/* how many whole lines of text equal line */
static int count_line(const char *text, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        if (l == len && memcmp(p, line, len) == 0)
            n++;
        p += l + (nl ? 1 : 0);
    }
    return n;
}

static void expect_line(const char *text, const char *line)
{
    int n = count_line(text, line);
    if (n != 1)
        fail_msg("line `%s' appears %d times (want 1) in:\n%s", line, n, text);
}

static void expect_no_prefix(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    if (p && (p == text || p[-1] == '\n'))
        fail_msg("unexpected line starting `%s' in:\n%s", prefix, text);
}

/* ---- a small checker of the text format: every line is HELP, TYPE or a sample, a family's
 * HELP and TYPE come once and before its samples, its samples are together ---- */

static bool metric_name(const char **p, char *out, size_t len)
{
    size_t n = 0;
    if (!(isalpha((unsigned char)**p) || **p == '_' || **p == ':'))
        return false;
    while (isalnum((unsigned char)**p) || **p == '_' || **p == ':') {
        if (n + 1 < len)
            out[n++] = **p;
        (*p)++;
    }
    out[n] = '\0';
    return true;
}

static bool labels_ok(const char **p)
{
    if (**p != '{')
        return true;
    (*p)++;
    while (**p != '}') {
        char key[64];
        if (!metric_name(p, key, sizeof(key)) || strchr(key, ':') || *(*p)++ != '=' ||
            *(*p)++ != '"')
            return false;
        while (**p != '"') {
            if (!**p || **p == '\n')
                return false;
            if (**p == '\\') {
                (*p)++;
                if (**p != '\\' && **p != '"' && **p != 'n')
                    return false;
            }
            (*p)++;
        }
        (*p)++;
        if (**p == ',')
            (*p)++;
        else if (**p != '}')
            return false;
    }
    (*p)++;
    return true;
}

static bool value_ok(const char *p)
{
    if (!strcmp(p, "NaN") || !strcmp(p, "+Inf") || !strcmp(p, "-Inf"))
        return true;
    char *end;
    strtod(p, &end);
    return end != p && *end == '\0';
}

#define MAX_FAMILIES 64

static void check_format(const char *text)
{
    char seen_type[MAX_FAMILIES][96], seen_help[MAX_FAMILIES][96], current[96] = "";
    char done[MAX_FAMILIES][96];
    int ntype = 0, nhelp = 0, ndone = 0;
    char *copy = strdup(text), *save = NULL;
    assert_non_null(copy);
    if (*text)
        assert_true(text[strlen(text) - 1] == '\n');
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[96];
        const char *p = line;
        if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
            bool is_type = line[2] == 'T';
            p += 7;
            if (!metric_name(&p, name, sizeof(name)) || *p != ' ')
                fail_msg("bad comment line `%s'", line);
            char (*list)[96] = is_type ? seen_type : seen_help;
            int *n = is_type ? &ntype : &nhelp;
            for (int i = 0; i < *n; i++)
                if (!strcmp(list[i], name))
                    fail_msg("second %s for %s", is_type ? "TYPE" : "HELP", name);
            assert_true(*n < MAX_FAMILIES);
            snprintf(list[(*n)++], 96, "%s", name);
            if (is_type && strcmp(p + 1, "gauge") && strcmp(p + 1, "counter"))
                fail_msg("bad type in `%s'", line);
            if (is_type && strstr(name, "_total") &&
                strcmp(name + strlen(name) - 6, "_total") == 0 && strcmp(p + 1, "counter"))
                fail_msg("%s ends in _total but is not a counter", name);
            continue;
        }
        if (!metric_name(&p, name, sizeof(name)) || !labels_ok(&p) || *p != ' ' ||
            !value_ok(p + 1))
            fail_msg("bad sample line `%s'", line);
        bool typed = false;
        for (int i = 0; i < ntype; i++)
            typed |= !strcmp(seen_type[i], name);
        if (!typed)
            fail_msg("sample `%s' before its TYPE", line);
        if (strcmp(name, current) != 0) {
            for (int i = 0; i < ndone; i++)
                if (!strcmp(done[i], name))
                    fail_msg("samples of %s are not together", name);
            assert_true(ndone < MAX_FAMILIES);
            snprintf(done[ndone++], 96, "%s", name);
            snprintf(current, sizeof(current), "%s", name);
        }
    }
    free(copy);
    assert_int_equal(ntype, nhelp);
}

/* ---- the tests ---- */

static void test_dcgm_gpu_lines(void **state)
{
    char *t = render_text(SNAPSHOT);
    check_format(t);
    expect_line(t, "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).");
    expect_line(t, "# TYPE DCGM_FI_DEV_FB_USED gauge");
    expect_line(t, "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:18:00.0\","
                   "device=\"nvidia3\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\"} 10240");
    expect_line(t, "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\","
                   "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\"} 0");
    expect_line(t, "# TYPE DCGM_FI_DEV_FB_FREE gauge");
    expect_line(t, "DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:18:00.0\","
                   "device=\"nvidia3\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\"} 71680");
    expect_line(t, "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\","
                   "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\"} 81920");
    expect_line(t, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge");
    expect_line(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:18:00.0\","
                   "device=\"nvidia3\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\"} 37");
    expect_line(t, "carve_gpu_processes{gpu=\"0\",UUID=\"GPU-aaaa\",Hostname=\"gpu-node-1\"} 3");
    expect_line(t, "carve_gpu_processes{gpu=\"1\",UUID=\"GPU-bbbb\",Hostname=\"gpu-node-1\"} 0");
    expect_line(t, "# TYPE carve_gpu_escapes gauge");
    expect_line(t, "carve_gpu_escapes{gpu=\"0\",UUID=\"GPU-aaaa\",Hostname=\"gpu-node-1\"} 1");
    expect_line(t, "carve_gpu_escapes{gpu=\"1\",UUID=\"GPU-bbbb\",Hostname=\"gpu-node-1\"} 0");
    free(t);
}

static void test_slice_lines(void **state)
{
    char *t = render_text(SNAPSHOT);
    const char *train = "{slice=\"train\",gpu=\"0\",UUID=\"GPU-aaaa\",Hostname=\"gpu-node-1\"}";
    const char *both0 = "{slice=\"both\",gpu=\"0\",UUID=\"GPU-aaaa\",Hostname=\"gpu-node-1\"}";
    const char *both1 = "{slice=\"both\",gpu=\"1\",UUID=\"GPU-bbbb\",Hostname=\"gpu-node-1\"}";
    static const struct {
        const char *name, *which, *value;
    } want[] = {
        {"carve_slice_memory_cap_bytes", "train", "8589934592"},
        {"carve_slice_memory_cap_bytes", "both0", "0"},
        {"carve_slice_memory_cap_bytes", "both1", "1152921504606846976"}, /* 2^60, exact */
        {"carve_slice_memory_used_bytes", "train", "4294967296"},
        {"carve_slice_memory_used_bytes", "both1", "1048576"},
        {"carve_slice_memory_peak_bytes", "train", "6442450944"},
        {"carve_slice_oom_denials_total", "train", "3"},
        {"carve_slice_oom_denials_total", "both1", "0"},
        {"carve_slice_compute_share_ratio", "train", "0.285"},
        {"carve_slice_compute_share_ratio", "both0", "0"},
        {"carve_slice_compute_share_ratio", "both1", "0.333"}, /* not 0.33299999999999996 */
        {"carve_slice_compute_target_ratio", "train", "0.3"},
        {"carve_slice_compute_target_ratio", "both0", "0"},
        {"carve_slice_compute_target_ratio", "both1", "0.125"},
        {"carve_slice_held_seconds_total", "train", "1.25"},
        {"carve_slice_held_seconds_total", "both1", "0.5"},
        {"carve_slice_launches_total", "train", "1200"},
        {"carve_slice_launches_total", "both1", "7"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *labels = !strcmp(want[i].which, "train") ? train
                             : !strcmp(want[i].which, "both0") ? both0 : both1;
        char line[512];
        snprintf(line, sizeof(line), "%s%s %s", want[i].name, labels, want[i].value);
        expect_line(t, line);
    }
    expect_line(t, "# TYPE carve_slice_memory_cap_bytes gauge");
    expect_line(t, "# TYPE carve_slice_oom_denials_total counter");
    expect_line(t, "# TYPE carve_slice_held_seconds_total counter");
    expect_line(t, "# TYPE carve_slice_launches_total counter");
    expect_line(t, "# TYPE carve_slice_compute_share_ratio gauge");
    expect_line(t, "carve_slice_idle_seconds{slice=\"train\",Hostname=\"gpu-node-1\"} 12");
    expect_line(t, "carve_slice_idle_seconds{slice=\"both\",Hostname=\"gpu-node-1\"} 3600.25");
    expect_line(t, "carve_slice_idle{slice=\"train\",Hostname=\"gpu-node-1\"} 0");
    expect_line(t, "carve_slice_idle{slice=\"both\",Hostname=\"gpu-node-1\"} 1");
    expect_line(t, "# TYPE carve_slice_idle_gpu_seconds_total counter");
    expect_line(t, "carve_slice_idle_gpu_seconds_total{slice=\"both\",Hostname=\"gpu-node-1\"} 5400");
    expect_line(t, "carve_slice_processes{slice=\"train\",Hostname=\"gpu-node-1\"} 2");
    expect_line(t, "carve_slice_processes{slice=\"both\",Hostname=\"gpu-node-1\"} 0");
    free(t);
}

static void test_node_lines(void **state)
{
    char *t = render_text(SNAPSHOT);
    expect_line(t, "# HELP carve_slices Slices on the node.");
    expect_line(t, "# TYPE carve_slices gauge");
    expect_line(t, "carve_slices{Hostname=\"gpu-node-1\"} 2");
    expect_line(t, "# TYPE carve_escapes_total counter");
    expect_line(t, "carve_escapes_total{Hostname=\"gpu-node-1\"} 4");
    expect_line(t, "carve_escapes_killed_total{Hostname=\"gpu-node-1\"} 1");
    expect_line(t, "carve_idle_reclaims_total{Hostname=\"gpu-node-1\"} 2");
    expect_line(t, "# TYPE carve_snapshot_timestamp_seconds gauge");
    expect_line(t, "carve_snapshot_timestamp_seconds{Hostname=\"gpu-node-1\"} 1763900000.5");
    free(t);
}

/* the config's sections that wait for room, counted; none when the snapshot has no list */
static void test_config_waiting(void **state)
{
    json_t *snap = load(SNAPSHOT);
    json_object_set_new(snap, "config_waiting",
                        json_pack("[{s:s,s:i,s:s},{s:s,s:i,s:s}]", "name", "a", "line", 3, "why",
                                  "GPU 0: full", "name", "b", "line", 9, "why", "no place"));
    char *t = carved_metrics_render(snap);
    assert_non_null(t);
    check_format(t);
    expect_line(t, "# TYPE carve_config_slices_waiting gauge");
    expect_line(t, "carve_config_slices_waiting{Hostname=\"gpu-node-1\"} 2");
    free(t);
    json_object_set_new(snap, "config_waiting", json_array());
    t = carved_metrics_render(snap);
    expect_line(t, "carve_config_slices_waiting{Hostname=\"gpu-node-1\"} 0");
    free(t);
    json_decref(snap);
}

/* label values escaped; and a GPU whose used memory passes its total */
static void test_escaping(void **state)
{
    json_t *snap = load(SNAPSHOT);
    json_object_set_new(snap, "node", json_string("host\"with\\odd\nname"));
    json_t *slice = json_array_get(json_object_get(snap, "slices"), 0);
    json_object_set_new(slice, "name", json_string("a\"b\\c\nd"));
    json_t *gpu = json_array_get(json_object_get(snap, "gpus"), 0);
    json_object_set_new(gpu, "name", json_string("Model \"X\""));
    /* used above total (a racing read): free is 0, not negative nor huge */
    json_t *gpu1 = json_array_get(json_object_get(snap, "gpus"), 1);
    json_object_set_new(gpu1, "memory_used", json_integer(85899345920LL + MiB));
    char *t = carved_metrics_render(snap);
    json_decref(snap);
    assert_non_null(t);
    check_format(t);
    expect_line(t, "carve_slice_idle{slice=\"a\\\"b\\\\c\\nd\","
                   "Hostname=\"host\\\"with\\\\odd\\nname\"} 0");
    expect_line(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:18:00.0\","
                   "device=\"nvidia3\",modelName=\"Model \\\"X\\\"\",Hostname=\"host\\\"with\\\\odd\\nname\"} 37");
    expect_line(t, "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\","
                   "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"host\\\"with\\\\odd\\nname\"} 0");
    free(t);
}

static void test_empty(void **state)
{
    char *t = render_text("{}");
    assert_string_equal(t, "");
    free(t);

    t = carved_metrics_render(NULL);
    assert_non_null(t);
    assert_string_equal(t, "");
    free(t);

    /* a node with no GPUs and no slices: only the node families */
    t = render_text("{\"version\": 1, \"node\": \"n\", \"time\": 5, \"simulated\": false,"
                    " \"gpus\": [], \"slices\": [], \"escapes\": [],"
                    " \"totals\": {\"escapes\": 0, \"escapes_killed\": 0, \"idle_reclaims\": 0,"
                    " \"oom_denials\": 0}}");
    check_format(t);
    assert_string_equal(t,
        "# HELP carve_slices Slices on the node.\n"
        "# TYPE carve_slices gauge\n"
        "carve_slices{Hostname=\"n\"} 0\n"
        "# HELP carve_escapes_total Processes seen using a GPU outside any slice or past their "
        "slice's cap (kept across restarts of carved).\n"
        "# TYPE carve_escapes_total counter\n"
        "carve_escapes_total{Hostname=\"n\"} 0\n"
        "# HELP carve_escapes_killed_total Escaped processes carved has killed (kept across its "
        "restarts).\n"
        "# TYPE carve_escapes_killed_total counter\n"
        "carve_escapes_killed_total{Hostname=\"n\"} 0\n"
        "# HELP carve_idle_reclaims_total Idle slices whose memory carved has reclaimed (kept "
        "across its restarts).\n"
        "# TYPE carve_idle_reclaims_total counter\n"
        "carve_idle_reclaims_total{Hostname=\"n\"} 0\n"
        "# HELP carve_snapshot_timestamp_seconds When carved took the snapshot these metrics "
        "come from (Unix time, seconds).\n"
        "# TYPE carve_snapshot_timestamp_seconds gauge\n"
        "carve_snapshot_timestamp_seconds{Hostname=\"n\"} 5\n");
    free(t);
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "[]", "\"snapshot\"", "42", "null", "true",
        "{\"gpus\": \"x\", \"slices\": 7, \"escapes\": {}, \"totals\": [], \"node\": 5,"
        " \"time\": \"now\"}",
        "{\"gpus\": [1, null, [], {\"index\": \"0\"}, {\"index\": 1.5},"
        "  {\"index\": 2, \"uuid\": 7, \"name\": [], \"memory_total\": \"big\","
        "   \"memory_used\": -5, \"utilization\": null, \"processes\": {}}],"
        " \"slices\": [1, \"s\", {\"name\": 5}, {\"name\": \"nodev\", \"devices\": \"no\"},"
        "  {\"name\": \"odd\", \"idle\": \"yes\", \"idle_seconds\": \"long\", \"processes\": 3,"
        "   \"devices\": [5, {\"index\": \"0\"}, {\"index\": 0, \"memory_used\": \"big\","
        "    \"compute\": \"abc\", \"compute_share\": \"x\", \"memory_cap\": -1}]}],"
        " \"escapes\": [1, {\"gpu\": \"0\"}, null], \"totals\": {\"escapes\": \"many\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = render_text(bad[i]);
        check_format(t);
        free(t);
    }
    char *t = render_text(bad[6]);
    /* GPU 2 is kept (an integer index), its mistyped fields dropped */
    expect_line(t, "carve_gpu_escapes{gpu=\"2\",UUID=\"\",Hostname=\"\"} 0");
    expect_no_prefix(t, "DCGM_FI_DEV_FB_USED{");
    expect_no_prefix(t, "DCGM_FI_DEV_FB_FREE{");
    expect_no_prefix(t, "DCGM_FI_DEV_GPU_UTIL{");
    expect_no_prefix(t, "carve_gpu_processes{");
    expect_no_prefix(t, "# TYPE DCGM_FI_DEV_FB_USED"); /* no samples, no header */
    /* slice "odd" on GPU 0: the negative cap is passed as is, the rest dropped */
    expect_line(t, "carve_slice_memory_cap_bytes{slice=\"odd\",gpu=\"0\",UUID=\"\","
                   "Hostname=\"\"} -1");
    expect_no_prefix(t, "carve_slice_memory_used_bytes{");
    expect_no_prefix(t, "carve_slice_compute_target_ratio{");
    expect_no_prefix(t, "carve_slice_compute_share_ratio{");
    expect_no_prefix(t, "carve_slice_idle{");
    expect_no_prefix(t, "carve_slice_idle_seconds{");
    expect_no_prefix(t, "carve_slice_processes{");
    expect_no_prefix(t, "carve_escapes_total{");
    expect_line(t, "carve_slices{Hostname=\"\"} 5");
    free(t);
}

/* a compute text the daemon should never write drops the target, nothing else */
static void test_compute_targets(void **state)
{
    static const struct {
        const char *compute, *want; /* NULL: no line */
    } cases[] = {
        {"30%", "0.3"}, {"30%+", "0.3"}, {"30", "0.3"}, {"12.5%", "0.125"}, {"100%", "1"},
        {"", "0"}, {"0%", NULL}, {"101%", NULL}, {"30%%", NULL}, {"abc", NULL},
        {"-5%", NULL}, {"30% ", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *snap = load(SNAPSHOT);
        json_t *slice = json_array_get(json_object_get(snap, "slices"), 0);
        json_t *dev = json_array_get(json_object_get(slice, "devices"), 0);
        json_object_set_new(dev, "compute", json_string(cases[i].compute));
        char *t = carved_metrics_render(snap);
        json_decref(snap);
        assert_non_null(t);
        const char *prefix = "carve_slice_compute_target_ratio{slice=\"train\",gpu=\"0\","
                             "UUID=\"GPU-aaaa\",Hostname=\"gpu-node-1\"} ";
        char line[256];
        snprintf(line, sizeof(line), "%s%s", prefix, cases[i].want ? cases[i].want : "");
        if (cases[i].want)
            expect_line(t, line);
        else
            expect_no_prefix(t, prefix);
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dcgm_gpu_lines),
        cmocka_unit_test(test_slice_lines),
        cmocka_unit_test(test_node_lines),
        cmocka_unit_test(test_config_waiting),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_compute_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
