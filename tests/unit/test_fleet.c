/* test_fleet.c - the fleet planner: fleet specs and workload lists (accepted forms, errors that
 * name the line, field and number), workloads no GPU can hold, every plan obeying its
 * mechanism's rules, lower bounds that never exceed the optimum (checked by exhaustive search
 * on small lists), and packing within 2% of the bound on large lists. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet.h"
#include "fleet_pack.h"
#include "../../bench/plan_synth.h"
#include "fleet_report.h"
#include "mig.h"

/* Under AddressSanitizer (about three times slower) the longest tests plan fewer lists; the
 * gcc and clang builds plan them all. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* ---- fleet specs ---- */

static void test_spec_accepted(void **state)
{
    struct fleet f;
    char err[256] = "";
    if (fleet_parse_spec("H100-80GB:100@2.49,l4:40@$0.80,mygpu/48GiB:8@1.10,H200@0", &f, err,
                         sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_int_equal(f.npools, 4);
    assert_string_equal(f.pools[0].name, "H100-80GB");
    assert_int_equal(f.pools[0].count, 100);
    assert_true(f.pools[0].price > 2.489 && f.pools[0].price < 2.491);
    assert_true(f.pools[0].mig);
    assert_int_equal(f.pools[0].memory_mib, mig_model_find("H100-80GB")->memory_mib);
    assert_string_equal(f.pools[1].name, "L4-24GB");
    assert_false(f.pools[1].mig);
    assert_int_equal(f.pools[1].memory_mib, 23034); /* NVML's total, not the nominal 24576 */
    assert_string_equal(f.pools[2].name, "mygpu");
    assert_int_equal(f.pools[2].memory_mib, 48 * 1024);
    assert_false(f.pools[2].mig);
    assert_string_equal(f.pools[3].name, "H200-141GB");
    assert_int_equal(f.pools[3].count, FLEET_UNLIMITED);
    assert_true(f.pools[3].price == 0);
    /* no prices at all: a fleet planned without costs */
    if (fleet_parse_spec("H200,L4:3", &f, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_true(f.pools[0].price == 0 && f.pools[1].price == 0);
}

static void test_spec_rejected(void **state)
{
    static const struct {
        const char *in, *why;
    } cases[] = {
        {"", "empty"},
        {"H100-80GB:0@2", "COUNT 0 is out of range"},
        {"H100-80GB:ten", "COUNT `ten' is not a whole number"},
        {"H100-80GB:-3", "COUNT `-3'"},
        {"H100-80GB@-1", "PRICE `-1'"},
        {"H100-80GB@abc", "PRICE `abc'"},
        {"H100-80GB@1e3", "PRICE `1e3'"},
        {"Z9000", "unknown GPU model `Z9000'"},
        {"A100:4", "ambiguous GPU model `A100'"},
        {"mygpu/12XB", "unknown unit"},
        {"/8GiB", "needs a name"},
        {"H100-80GB,h100-80gb", "names H100-80GB twice"},
        {"H100-80GB,,L4", "empty pool"},
        {"H100-80GB, L4", "contains a space"},
        /* a pool without a price beside priced ones was planned as free */
        {"T4:5@0.35,L4:3", "pool L4-24GB has no price while T4-16GB has one ($0.35/h): it "
                           "would be planned as free. Give it its price per GPU-hour "
                           "(L4-24GB:3@PRICE; @0"},
        {"H200,L4@0.80", "pool H200-141GB has no price while L4-24GB has one ($0.80/h)"},
        {"mygpu/48GiB:2,T4@0", "pool mygpu has no price while T4-16GB has one ($0.00/h)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fleet f;
        char err[256] = "";
        if (fleet_parse_spec(cases[i].in, &f, err, sizeof(err)) == 0)
            fail_msg("`%s' accepted", cases[i].in);
        if (!strstr(err, cases[i].why))
            fail_msg("`%s': message `%s' lacks `%s'", cases[i].in, err, cases[i].why);
    }
}

/* ---- workload lists ---- */

static int parse(const char *text, struct fleet_workloads *ws, char *err, size_t len)
{
    memset(ws, 0, sizeof(*ws));
    return fleet_parse_workloads(text, strlen(text), "w.csv", ws, err, len);
}

static void test_csv_accepted(void **state)
{
    struct fleet_workloads ws;
    char err[512] = "";
    const char *text = "# comment\n"
                       "name, memory ,compute,latency,trust,count\r\n"
                       "\n"
                       "chat,16GiB,30%,strict,trusted,2\n"
                       "\"nb, 1\",512MiB,12.5,relaxed,untrusted,1\n"
                       ",1.5G,,,,\n"
                       "\"say \"\"hi\"\"\" , 1G,,,,\n"; /* RFC 4180: "" is a quote */
    if (parse(text, &ws, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_int_equal(ws.n, 5);
    assert_string_equal(ws.w[4].name, "say \"hi\"");
    fleet_workloads_free(&ws);
    /* 55 bytes with a count: whole, and two such names differing at the end are two */
    const char *long_names = "name,memory,count\n"
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX,8G,2\n"
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaY,8G,1000000\n";
    if (parse(long_names, &ws, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_int_equal(ws.n, 1000002);
    assert_string_equal(ws.w[1].name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX#2");
    assert_string_equal(ws.w[1000001].name,
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaY#1000000");
    fleet_workloads_free(&ws);
    if (parse(text, &ws, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_string_equal(ws.w[0].name, "chat#1");
    assert_string_equal(ws.w[1].name, "chat#2");
    assert_int_equal(ws.w[0].memory_mib, 16384);
    assert_int_equal(ws.w[0].compute_bp, 3000);
    assert_int_equal(ws.w[0].latency, FLEET_LAT_STRICT);
    assert_int_equal(ws.w[0].line, 4);
    assert_string_equal(ws.w[2].name, "nb, 1");
    assert_int_equal(ws.w[2].memory_mib, 512);
    assert_int_equal(ws.w[2].compute_bp, 1250);
    assert_int_equal(ws.w[2].trust, FLEET_UNTRUSTED);
    assert_string_equal(ws.w[3].name, "line6");
    assert_int_equal(ws.w[3].memory_mib, 1536);
    assert_int_equal(ws.w[3].compute_bp, 0);
    assert_int_equal(ws.w[3].latency, FLEET_LAT_NORMAL);
    fleet_workloads_free(&ws);
}

static void test_json_accepted(void **state)
{
    struct fleet_workloads ws = {0};
    char err[512] = "";
    const char *text = "{\"workloads\": [\n"
                       "  {\"name\": \"a\", \"memory\": \"8GiB\", \"compute\": 30},\n"
                       "  {\"memory\": \"2GiB\", \"compute\": \"5%\", \"latency\": \"batch\",\n"
                       "   \"count\": 3}\n"
                       "]}\n";
    if (fleet_parse_workloads(text, strlen(text), "w.json", &ws, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_int_equal(ws.n, 4);
    assert_int_equal(ws.w[0].compute_bp, 3000);
    assert_int_equal(ws.w[0].line, 2);
    assert_int_equal(ws.w[1].line, 3);
    assert_int_equal(ws.w[1].latency, FLEET_LAT_RELAXED);
    assert_string_equal(ws.w[3].name, "workload2#3");
    fleet_workloads_free(&ws);
}

static void test_workloads_rejected(void **state)
{
    static const struct {
        const char *in, *why;
    } cases[] = {
        {"name,memory\na,8XB\n", "w.csv:2: field `memory' (column 2): invalid size `8XB'"},
        {"name,memory\na,8GiB\nb,\n", "w.csv:3: field `memory' (column 2): is empty"},
        {"name,memory\na,4096\n", "w.csv:2: field `memory' (column 2): is 4096 bytes, less than "
                                  "1 MiB (a number without a unit is bytes); give a unit"},
        /* a unit given: the minimum, not "give a unit" */
        {"name,memory\na,1MB\n", "w.csv:2: field `memory' (column 2): `1MB' is 1000000 bytes, "
                                 "less than the minimum of 1 MiB (1048576 bytes)"},
        {"name,memory\na,1000KiB\n", "`1000KiB' is 1024000 bytes, less than the minimum of 1 MiB"},
        {"name,memory,compute\na,8G,130%\n", "w.csv:2: field `compute' (column 3): 130% is more"},
        {"name,memory,compute\na,8G,lots\n", "field `compute' (column 3): `lots' is not a percentage"},
        {"memory,latency\n8G,fast\n", "w.csv:2: field `latency' (column 2): `fast' is not a latency"},
        {"memory,trust\n8G,maybe\n", "`maybe' is not a trust level"},
        {"memory,count\n8G,0\n", "field `count' (column 2): `0' is not a whole number"},
        {"name,memory\na,8G,extra\n", "w.csv:2: 3 fields, but the header has 2 columns"},
        {"name,size\n", "w.csv:1: header column 2 `size' is not a workload field"},
        {"name,compute\n", "the header has no `memory' column"},
        {"memory,memory\n", "names column `memory' twice"},
        {"memory\n\"8G\n", "w.csv:2: field 1 opens a quote that is never closed"},
        {"name,memory\n\"a\"\"\",8G\n\"b\"\",8G\n", "w.csv:3: field 1 opens a quote that is never"},
        {"name,memory\n\"a\"b,8G\n", "w.csv:2: field 1 has text after its closing quote"},
        /* a line break inside quotes (RFC 4180 has them) is not supported, and said so; it was
           "a quote that is never closed", which the next line does */
        {"name,memory\n\"multi\nline\",8GiB\n", "w.csv:2: the quote of field 1 is not closed on "
                                             "this line: a line break inside a quoted field is "
                                             "not supported"},
        {"name,memory\na,8G\nb,\"8\nG\"\n", "w.csv:3: the quote of field 2 is not closed"},
        /* CR alone ends the lines of old Mac files: it read one line, header column 2
           `memory\ra' */
        {"name,memory\ra,1GiB\rb,2GiB\r", "w.csv:1: a carriage return (CR) not followed by a "
                                          "line feed: lines that end in CR alone (old Mac "
                                          "files) are not read"},
        {"name,memory\r\na,1GiB\rb,2GiB\r\n", "w.csv:2: a carriage return (CR) not followed"},
        /* a name is a workload's own: --assign says where each one went by it */
        {"name,memory\nx,1G\ny,1G\nx,2G\n", "w.csv:4: workload name `x' is the name of the "
                                              "workload on line 2 too"},
        {"name,memory,count\na#1,8G,1\na,8G,2\n", "w.csv:3: workload name `a#1' is the name of "
                                                  "the workload on line 2 too; give each "
                                                  "workload a name of its own (--assign and "
                                                  "--json say where each one went by its name); "
                                                  "a line with a count of N names its workloads "
                                                  "NAME#1 to NAME#N"},
        {"[\n{\"name\": \"j\", \"memory\": \"8G\"},\n{\"name\": \"j\", \"memory\": \"8G\"}]",
         "w.csv:3: workload name `j' is the name of the workload on line 2 too"},
        /* a name with a count keeps every byte before #N: two that differ late stay two
           (cut to 40 bytes, they became one name twice) */
        {"name,memory,count\n"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,8G,2\n",
         "w.csv:2: name `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is 56 bytes; "
         "with a count it becomes NAME#1 to NAME#N, so it may have at most 55"},
        {"", "no header line"},
        {"[{\"memory\": \"8G\"}, {\"memory\": 8}]", "w.csv:1: workload 2: field `memory': must be a size string"},
        {"[\n{\"memory\": \"8G\"},\n{\"name\": \"x\"}\n]", "w.csv:3: workload 2 has no `memory'"},
        {"[\n{\"memory\": \"8G\", \"gpu\": 1}]", "w.csv:2: workload 1: `gpu' is not a workload field"},
        {"[{\"memory\": \"8G\"}", "not valid JSON"},
        {"{\"jobs\": []}", "one key, \"workloads\""},
        /* an element that is not an object has a line of its own, and the objects after it
           keep theirs */
        {"[\n{\"memory\": \"8G\"},\n5,\n{\"memory\": \"8G\"}\n]", "w.csv:3: workload 2 is not an object"},
        {"[\n[{\"memory\": \"8G\"}],\n\"x\",\n{\"memory\": \"lots\"}]", "w.csv:2: workload 1 is not an object"},
        {"{\"workloads\": [\n{\"name\": \"{,[\\\"\", \"memory\": \"8G\"},\n{\"memory\": \"8G\"}, {\"memory\": \"lots\"}]}",
         "w.csv:3: workload 3: field `memory'"},
        {"[\n\"a\",\n{\"memory\": \"8G\", \"count\": 2.5}]", "w.csv:2: workload 1 is not an object"},
        {"[{\"memory\": \"8G\", \"count\": 2.5}]", "field `count': `2.5' is not a whole number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fleet_workloads ws;
        char err[512] = "";
        int r = parse(cases[i].in, &ws, err, sizeof(err));
        fleet_workloads_free(&ws);
        if (r == 0)
            fail_msg("case %zu accepted", i);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu: message `%s' lacks `%s'", i, err, cases[i].why);
    }
}

/* ---- plans ---- */

static struct fleet fleet_of(const char *spec)
{
    struct fleet f;
    char err[256];
    if (fleet_parse_spec(spec, &f, err, sizeof(err)))
        fail_msg("%s: %s", spec, err);
    return f;
}

static void add(struct fleet_workloads *ws, uint64_t mib, uint32_t bp, int lat, int trust)
{
    if (ws->n == ws->cap) {
        ws->cap = ws->cap ? ws->cap * 2 : 64;
        ws->w = realloc(ws->w, ws->cap * sizeof(*ws->w));
        assert_non_null(ws->w);
    }
    struct fleet_workload *w = &ws->w[ws->n];
    memset(w, 0, sizeof(*w));
    snprintf(w->name, sizeof(w->name), "w%zu", ws->n);
    w->memory_mib = mib;
    w->compute_bp = bp;
    w->latency = (uint8_t)lat;
    w->trust = (uint8_t)trust;
    w->line = (uint32_t)ws->n + 2;
    ws->n++;
}

/* Every plan places each possible workload once, within each GPU's memory, compute and tenant
 * limits, and keeps the groups its mechanism must keep apart. */
static void check_rules(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct fleet_result *r, const struct fleet_options *o)
{
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        if (!p->available)
            continue;
        assert_true(p->gpus >= p->lower_bound);
        assert_int_equal(p->placed, ws->n - r->nimpossible);
        uint64_t *mem = calloc(p->gpus + 1, sizeof(*mem));
        uint64_t *comp = calloc(p->gpus + 1, sizeof(*comp));
        uint32_t *n = calloc(p->gpus + 1, sizeof(*n));
        uint32_t *lat = calloc(p->gpus + 1, sizeof(*lat)); /* bit per latency class */
        bool *untrusted = calloc(p->gpus + 1, sizeof(*untrusted));
        for (size_t i = 0; i < ws->n; i++) {
            uint32_t g = p->gpu_of[i];
            bool impossible = false;
            for (size_t k = 0; k < r->nimpossible; k++)
                impossible |= r->impossible[k].index == i;
            if (impossible) {
                assert_int_equal(g, UINT32_MAX);
                continue;
            }
            if (g >= p->gpus)
                fail_msg("%s: workload %zu not placed (%u)", fleet_mech_name(m), i, g);
            mem[g] += ws->w[i].memory_mib;
            comp[g] += ws->w[i].compute_bp;
            n[g]++;
            lat[g] |= 1u << ws->w[i].latency;
            untrusted[g] |= ws->w[i].trust == FLEET_UNTRUSTED;
        }
        for (uint64_t g = 0; g < p->gpus; g++) {
            const struct fleet_pool *pool = &f->pools[p->use[g].pool];
            if (n[g] == 0)
                fail_msg("%s: GPU %llu is empty", fleet_mech_name(m), (unsigned long long)g);
            if (mem[g] > pool->memory_mib)
                fail_msg("%s: GPU %llu holds %llu MiB of %llu", fleet_mech_name(m),
                         (unsigned long long)g, (unsigned long long)mem[g],
                         (unsigned long long)pool->memory_mib);
            if (n[g] > 1) {
                uint64_t cap = m == FLEET_TIMESLICE ? o->timeslice_compute_bp : FLEET_BP_FULL;
                assert_true(comp[g] <= cap);
                if (m != FLEET_MIG)
                    assert_false(untrusted[g]);
                if (m == FLEET_TIMESLICE) {
                    assert_true(n[g] <= o->timeslice_replicas);
                    assert_false(lat[g] & (1u << FLEET_LAT_STRICT));
                }
                if (m == FLEET_MPS) {
                    assert_true(n[g] <= o->mps_clients);
                    assert_true(lat[g] == (1u << FLEET_LAT_STRICT) ||
                                !(lat[g] & (1u << FLEET_LAT_STRICT)));
                }
                if (m == FLEET_CARVE)
                    assert_true(n[g] <= o->carve_slices);
                if (m == FLEET_MIG)
                    assert_true(n[g] <= 7);
            }
            assert_int_equal(p->use[g].memory_used_mib, mem[g]);
            assert_int_equal(p->use[g].tenants, n[g]);
            if (m != FLEET_MIG)
                assert_int_equal(p->use[g].compute_bp, comp[g]);
        }
        /* the counts the plan reports are those of its GPUs (the searches and repairs that
           replace a plan make them again) */
        uint64_t by_pool[FLEET_MAX_POOLS] = {0}, beyond = 0;
        double cost = 0;
        for (uint64_t g = 0; g < p->gpus; g++) {
            by_pool[p->use[g].pool]++;
            cost += f->pools[p->use[g].pool].price;
        }
        for (size_t q = 0; q < f->npools; q++) {
            assert_int_equal(p->gpus_by_pool[q], by_pool[q]);
            if (f->pools[q].count != FLEET_UNLIMITED && by_pool[q] > f->pools[q].count)
                beyond += by_pool[q] - f->pools[q].count;
        }
        assert_int_equal(p->shortage, beyond);
        if (cost > p->cost_per_hour + 1e-6 || cost < p->cost_per_hour - 1e-6)
            fail_msg("%s: the GPUs cost $%.6f/h, the plan says $%.6f/h", fleet_mech_name(m), cost,
                     p->cost_per_hour);
        if (m == FLEET_WHOLE)
            assert_int_equal(p->gpus, ws->n - r->nimpossible);
        free(mem);
        free(comp);
        free(n);
        free(lat);
        free(untrusted);
    }
}

/* Equal costs summed in another order differ by float noise: the table showed MIG saving
   "-0.00" a hour, "-0%", where the JSON said 0.0. */
static void test_report_no_negative_zero(void **state)
{
    struct fleet f = fleet_of("H100-80GB:30@0.7,L4:30@0.3");
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 3; i++) {
        add(&ws, 70 * 1024, 9000, FLEET_LAT_RELAXED, FLEET_TRUSTED);
        add(&ws, 20 * 1024, 9000, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    }
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    fleet_report_text(out, &f, &ws, &r);
    fclose(out);
    if (strstr(text, "-0.00") || strstr(text, " -0%"))
        fail_msg("a negative zero in:\n%s", text);
    free(text);
    fleet_result_free(&r);
    free(ws.w);
}

static void test_exact_small(void **state)
{
    struct fleet f = fleet_of("H100-80GB:10@2.00");
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 8; i++) /* 8 x 39 GiB: two per GPU */
        add(&ws, 39 * 1024, 4000, FLEET_LAT_NORMAL, FLEET_TRUSTED);
    for (int i = 0; i < 7; i++) /* 7 x 9 GiB, 10%: one 1g.10gb each, 7 on a GPU under MIG */
        add(&ws, 9 * 1024, 1000, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    check_rules(&f, &ws, &r, &o);
    assert_int_equal(r.plans[FLEET_WHOLE].gpus, 15);
    assert_true(r.plans[FLEET_WHOLE].cost_per_hour > 29.99 && r.plans[FLEET_WHOLE].cost_per_hour < 30.01);
    assert_int_equal(r.plans[FLEET_CARVE].gpus, 5);  /* 4 pairs, 7 small on one */
    assert_int_equal(r.plans[FLEET_CARVE].lower_bound, 5);
    assert_int_equal(r.plans[FLEET_MPS].gpus, 5);
    /* MIG: 39 GiB takes 3g.40gb (two per GPU), 9 GiB takes 1g.10gb (seven per GPU) */
    assert_int_equal(r.plans[FLEET_MIG].gpus, 5);
    assert_int_equal(r.plans[FLEET_MIG].lower_bound, 5);
    assert_string_equal(r.plans[FLEET_MIG].profile_of[0], "3g.40gb");
    assert_string_equal(r.plans[FLEET_MIG].profile_of[8], "1g.10gb");
    assert_int_equal(r.plans[FLEET_MIG].rounding_mib,
                     8 * (40448 - 39 * 1024) + 7 * (9984 - 9 * 1024));
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

static void test_rules_and_impossible(void **state)
{
    struct fleet f = fleet_of("L4:4@0.80,H100-80GB:2@2.49");
    struct fleet_workloads ws = {0};
    add(&ws, 200 * 1024, 5000, FLEET_LAT_NORMAL, FLEET_TRUSTED); /* no GPU holds it */
    add(&ws, 60 * 1024, 5000, FLEET_LAT_NORMAL, FLEET_TRUSTED);  /* only an H100 */
    for (int i = 0; i < 6; i++)
        add(&ws, 4 * 1024, 1000, FLEET_LAT_STRICT, FLEET_TRUSTED);
    for (int i = 0; i < 6; i++)
        add(&ws, 4 * 1024, 1000, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    add(&ws, 4 * 1024, 1000, FLEET_LAT_RELAXED, FLEET_UNTRUSTED);
    add(&ws, 4 * 1024, 1000, FLEET_LAT_RELAXED, FLEET_UNTRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    assert_int_equal(r.nimpossible, 1);
    assert_int_equal(r.impossible[0].index, 0);
    assert_non_null(strstr(r.impossible[0].why, "needs 204800 MiB"));
    assert_non_null(strstr(r.impossible[0].why, "H100-80GB, has"));
    check_rules(&f, &ws, &r, &o);
    /* the 60 GiB workload is on an H100 in every plan */
    for (int m = 0; m < FLEET_NMECH; m++)
        assert_string_equal(f.pools[r.plans[m].use[r.plans[m].gpu_of[1]].pool].name, "H100-80GB");
    assert_int_equal(r.plans[FLEET_CARVE].alone, 2);
    assert_int_equal(r.plans[FLEET_TIMESLICE].alone, 8);
    /* MIG: the 60 GiB one and seven 1g.10gb fill the two H100s; the six other 1g.10gb go
       beyond the fleet on one more H100 (MIG is per pool), which leaves the L4s idle: as far
       beyond the fleet as four on whole L4s and two on the H100 ($10.67), and $3.20 less */
    assert_int_equal(r.plans[FLEET_MIG].alone, 0);
    assert_int_equal(r.plans[FLEET_MIG].gpus_by_pool[0], 0);
    assert_int_equal(r.plans[FLEET_MIG].gpus_by_pool[1], 3);
    assert_int_equal(r.plans[FLEET_MIG].shortage, 1);
    /* whole GPUs need 15; the fleet has 6 */
    assert_int_equal(r.plans[FLEET_WHOLE].gpus, 15);
    assert_int_equal(r.plans[FLEET_WHOLE].shortage, 9);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* Lone workloads on a fleet too small for them: the large ones keep the large GPUs whatever
 * the list's order, so the plan (and the baseline every saving is measured against) does not
 * depend on it. Listed small first, the 8 GiB ones used to take the H100s once the L4 was
 * gone, and the 30 GiB tenants went beyond the fleet on H100s: $15.74 instead of $10.67. */
static void test_lone_order(void **state)
{
    struct fleet f = fleet_of("H100-80GB:3@2.49,L4:1@0.80");
    struct fleet_options o;
    fleet_options_defaults(&o);
    for (int small_first = 0; small_first < 2; small_first++) {
        struct fleet_workloads ws = {0};
        for (int i = 0; i < 7; i++) {
            bool small = small_first ? i < 4 : i >= 3;
            add(&ws, small ? 8 * 1024 : 30 * 1024, 1000, FLEET_LAT_NORMAL,
                small ? FLEET_TRUSTED : FLEET_UNTRUSTED);
        }
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        const struct fleet_plan *p = &r.plans[FLEET_WHOLE];
        assert_int_equal(p->gpus_by_pool[0], 3); /* H100s: the three tenants */
        assert_int_equal(p->gpus_by_pool[1], 4); /* L4s: the four small ones, three beyond */
        assert_int_equal(p->shortage, 3);
        if (p->cost_per_hour > p->cost_lower_bound + 0.005)
            fail_msg("small first %d: $%.2f/h, bound $%.2f/h", small_first, p->cost_per_hour,
                     p->cost_lower_bound);
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
}

static void test_no_mig_pool(void **state)
{
    struct fleet f = fleet_of("T4:10@0.35");
    struct fleet_workloads ws = {0};
    add(&ws, 4096, 1000, FLEET_LAT_NORMAL, FLEET_TRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    assert_false(r.plans[FLEET_MIG].available);
    assert_non_null(strstr(r.plans[FLEET_MIG].note, "A100, H100, H200 or B200"));
    assert_true(r.plans[FLEET_CARVE].available);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* Two untrusted 1 GiB workloads and trusted ones of 39 and 20 GiB on H100-80GB:1 +
 * A100-40GB:2: every mechanism that shares fits them in the fleet's three GPUs (the trusted
 * two share the H100, the tenants take an A100 each; under MIG the two 1 GiB ones take
 * 1g.5gb on one A100, 39 GiB the other, 20 GiB the H100). MPS, carve and MIG used to buy a
 * fourth GPU ($6.09 against $4.89): the cost bound's solution gave a 1 GiB tenant the H100,
 * or (MIG) a whole H100 to a 1 GiB workload; without prices carve bought a second H100.
 * MIG does better: two GPUs hold the four, 3g.40gb (20 GiB) and two 1g.10gb on the H100 and
 * 39 GiB alone on an A100 ($3.69), once the H100 is the MIG model (each MIG model of the fleet
 * is planned now; the A100, cheapest per MiB, was the only one before, at $4.89), and without
 * prices the search that proves a short list's plan the cheapest finds it too. */
static void test_beyond_mixed(void **state)
{
    static const char *const specs[] = {"H100-80GB:1@2.49,A100-40GB:2@1.2",
                                        "H100-80GB:1,A100-40GB:2"};
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
        struct fleet f = fleet_of(specs[s]);
        struct fleet_workloads ws = {0};
        add(&ws, 1024, 0, FLEET_LAT_NORMAL, FLEET_UNTRUSTED);
        add(&ws, 1024, 0, FLEET_LAT_NORMAL, FLEET_UNTRUSTED);
        add(&ws, 39 * 1024, 0, FLEET_LAT_NORMAL, FLEET_TRUSTED);
        add(&ws, 20 * 1024, 0, FLEET_LAT_NORMAL, FLEET_TRUSTED);
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        int wrong = 0;
        for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
            const struct fleet_plan *p = &r.plans[m];
            bool priced = f.pools[0].priced;
            uint64_t need = m == FLEET_MIG ? 2 : 3;
            double cost = m == FLEET_MIG ? 3.69 : 4.89;
            if (p->shortage || p->gpus != need || p->gpus_by_pool[0] != 1 ||
                (priced && (p->cost_per_hour < cost - 0.005 || p->cost_per_hour > cost + 0.005))) {
                print_message("%s on %s: %llu GPUs (%llu H100), %llu beyond the fleet, $%.2f/h; "
                              "the fleet's %llu hold it (priced: $%.2f/h)\n", fleet_mech_name(m), specs[s],
                              (unsigned long long)p->gpus, (unsigned long long)p->gpus_by_pool[0],
                              (unsigned long long)p->shortage, p->cost_per_hour,
                              (unsigned long long)need, cost);
                wrong++;
            }
            assert_true(p->cost_per_hour >= p->cost_lower_bound - 1e-6);
        }
        assert_int_equal(wrong, 0);
        /* whole GPUs need four: one beyond */
        assert_int_equal(r.plans[FLEET_WHOLE].gpus, 4);
        assert_int_equal(r.plans[FLEET_WHOLE].shortage, 1);
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
}

/* ---- bounds against the optimum, packing against the bound ---- */

static uint64_t rng_state = 88172645463325252ULL;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* The fewest GPUs of capacity (cap_mem, cap_comp) for items, by trying every partition. */
static int best;
static void search(const struct fleet_workloads *ws, size_t i, uint64_t *mem, uint64_t *comp,
                   int bins, uint64_t cap_mem, uint64_t cap_comp)
{
    if (bins >= best)
        return;
    if (i == ws->n) {
        best = bins;
        return;
    }
    for (int b = 0; b <= bins; b++) {
        if (mem[b] + ws->w[i].memory_mib > cap_mem || comp[b] + ws->w[i].compute_bp > cap_comp)
            continue;
        mem[b] += ws->w[i].memory_mib;
        comp[b] += ws->w[i].compute_bp;
        search(ws, i + 1, mem, comp, b == bins ? bins + 1 : bins, cap_mem, cap_comp);
        mem[b] -= ws->w[i].memory_mib;
        comp[b] -= ws->w[i].compute_bp;
    }
}

/* Workloads alike: the sizes' sum says 40 x 25% need 11 time-sliced GPUs (92% each), but
 * three fit a GPU, so 14; the dual-feasible bound sees it (the plan read "gap 27.3%"). */
static void test_bound_whole_counts(void **state)
{
    struct fleet f = fleet_of("A100-40GB:10@3.50");
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 40; i++)
        add(&ws, 1024, 2500, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    assert_int_equal(r.plans[FLEET_TIMESLICE].gpus, 14);
    assert_int_equal(r.plans[FLEET_TIMESLICE].lower_bound, 14);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
    /* and in memory: 7 x 30 GiB on 80 GiB GPUs hold two each, 4 GPUs (the sum says 3) */
    f = fleet_of("mygpu/80GiB@1.00");
    for (int i = 0; i < 7; i++)
        add(&ws, 30 * 1024, 0, FLEET_LAT_NORMAL, FLEET_TRUSTED);
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    assert_int_equal(r.plans[FLEET_CARVE].gpus, 4);
    assert_int_equal(r.plans[FLEET_CARVE].lower_bound, 4);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* The bounds count the memory a GPU can hold of the list, not all of it: 67 workloads of 1 GiB
 * fill an L4 (23034 MiB) to 22 GiB at most, so they need 4 L4s where the memory alone says 3
 * (67 GiB over 22.49), and an A100 beside the L4s costs more than a fourth L4. Sizes of 5000
 * and 7000 MiB fill a 16 GiB GPU to 15000 at most (three of 5000): 46,000 MiB of them need 4.
 * The bounds were 3 GPUs and $2.40 before (and MPS on the compute-heavy list of
 * test_mixed_compute_heavy 2.9% and 4.1% above the cost bound, 2.4% with it). */
static void test_bound_held_memory(void **state)
{
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 67; i++)
        add(&ws, 1024, 100, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    static const char *const specs[] = {"L4:10@0.80", "L4@0.80,A100-80GB@3.50"};
    for (size_t k = 0; k < 2; k++) {
        struct fleet f = fleet_of(specs[k]);
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        for (int m = FLEET_MPS; m < FLEET_NMECH; m++) { /* time-slicing: 16 to a GPU */
            if (m == FLEET_MIG)
                continue;
            const struct fleet_plan *p = &r.plans[m];
            if (!k)
                assert_int_equal(p->lower_bound, 4);
            assert_true(p->cost_lower_bound > 3.20 - 1e-6);
            assert_true(p->cost_per_hour < 3.20 + 1e-6);
        }
        fleet_result_free(&r);
    }
    fleet_workloads_free(&ws);
    struct fleet f = fleet_of("mygpu/16GiB:10@1.00");
    for (int i = 0; i < 8; i++)
        add(&ws, i < 5 ? 5000 : 7000, 100, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    assert_int_equal(r.plans[FLEET_CARVE].lower_bound, 4);
    assert_int_equal(r.plans[FLEET_CARVE].gpus, 4);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* The cost bound by the sets of sizes each GPU holds (fleet_pattern.c): 20 workloads of 6 GiB
 * and 2 of 3 GiB fill a T4 (15 GiB) only as 6 + 6 + 3, twice; the other 16 go two to a T4
 * (and three to an L4, which costs more): 10 T4s, $3.50, where the memory alone says 9 ($3.15,
 * the bound before: no workload is above half a T4, or above any of its pair limits). */
static void test_bound_patterns(void **state)
{
    struct fleet f = fleet_of("L4@0.80,T4@0.35");
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 22; i++)
        add(&ws, (i < 20 ? 6 : 3) * 1024, 100, FLEET_LAT_RELAXED, FLEET_TRUSTED);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
        if (m == FLEET_MIG)
            continue;
        assert_true(r.plans[m].cost_lower_bound > 3.50 - 1e-6);
        assert_true(r.plans[m].cost_per_hour < 3.50 + 1e-6);
    }
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* A short list's plan, proved the cheapest by trying every plan within the fleet
 * (fleet_exact.c): 22 workloads of 1-20 GiB and 2-58% on L4 + T4 (a reviewer's list). The
 * fractional cost bounds say $6.45 for MPS and carve slices, $7.50 for time-slicing; the
 * plans cost $6.80 and $7.85, and no plan is cheaper, so the bound is now the plan's cost (the
 * gap read 5.4% and 4.7%). Without prices, on L4s alone, the GPUs are the bound. */
static void test_short_list_proved(void **state)
{
    static const struct {
        unsigned gib, pct;
        int latency;
    } list[] = {
        {2, 2, FLEET_LAT_RELAXED},   {14, 34, FLEET_LAT_NORMAL},  {5, 18, FLEET_LAT_NORMAL},
        {20, 58, FLEET_LAT_STRICT},  {20, 27, FLEET_LAT_STRICT},  {14, 23, FLEET_LAT_STRICT},
        {1, 38, FLEET_LAT_NORMAL},   {5, 48, FLEET_LAT_NORMAL},   {10, 37, FLEET_LAT_NORMAL},
        {10, 37, FLEET_LAT_STRICT},  {3, 46, FLEET_LAT_NORMAL},   {20, 44, FLEET_LAT_RELAXED},
        {3, 35, FLEET_LAT_NORMAL},   {5, 38, FLEET_LAT_STRICT},   {14, 3, FLEET_LAT_RELAXED},
        {7, 53, FLEET_LAT_RELAXED},  {10, 58, FLEET_LAT_NORMAL},  {20, 36, FLEET_LAT_STRICT},
        {2, 40, FLEET_LAT_STRICT},   {20, 16, FLEET_LAT_NORMAL},  {2, 25, FLEET_LAT_STRICT},
        {1, 4, FLEET_LAT_RELAXED},
    };
    struct fleet_workloads ws = {0};
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
        add(&ws, list[i].gib * 1024ull, list[i].pct * 100, list[i].latency, FLEET_TRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet f = fleet_of("L4@0.80,T4@0.35");
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    check_rules(&f, &ws, &r, &o);
    static const double cost[FLEET_NMECH] = {[FLEET_TIMESLICE] = 7.85, [FLEET_MPS] = 6.80,
                                             [FLEET_CARVE] = 6.80};
    for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r.plans[m];
        if (m == FLEET_MIG)
            continue;
        assert_true(p->proved_cheapest);
        assert_true(p->cost_per_hour > cost[m] - 1e-6 && p->cost_per_hour < cost[m] + 1e-6);
        /* the bound is the plan's cost less FLEET_EXACT_PER_GPU a workload */
        assert_true(p->cost_lower_bound > cost[m] - 1e-4 && p->cost_lower_bound < cost[m] + 1e-6);
    }
    fleet_result_free(&r);
    f = fleet_of("L4");
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++)
        if (m != FLEET_MIG)
            assert_int_equal(r.plans[m].lower_bound, r.plans[m].gpus);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* A workload of a list written out in a test: GiB, percent, latency class, untrusted. */
struct listed {
    unsigned gib, pct;
    int latency, untrusted;
};

static void add_listed(struct fleet_workloads *ws, const struct listed *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        add(ws, list[i].gib * 1024ull, list[i].pct * 100, list[i].latency,
            list[i].untrusted ? FLEET_UNTRUSTED : FLEET_TRUSTED);
}

/* The list planned on fleet spec with the default options (assignments kept), every plan
   checked against the rules. */
/* Every mechanism's plan of ws on f, with its assignment, each GPU within the rules. */
static void plan_checked(const struct fleet *f, const struct fleet_workloads *ws,
                         struct fleet_result *r)
{
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    assert_int_equal(fleet_plan_all(f, ws, &o, r), 0);
    check_rules(f, ws, r, &o);
}

static void plan_listed(const char *spec, const struct listed *list, size_t n,
                        struct fleet_result *r)
{
    struct fleet f = fleet_of(spec);
    struct fleet_workloads ws = {0};
    add_listed(&ws, list, n);
    plan_checked(&f, &ws, r);
    fleet_workloads_free(&ws);
}

/* What a written-out list's plan must come to: within the fleet spec, mechanism mech's plan
   costs cost (to a millionth), at most max_gap_pct above its bound, proved the cheapest where
   proved says so. */
struct listed_case {
    const char *spec;
    const struct listed *list;
    size_t n;
    int mech;
    double cost, max_gap_pct;
    bool proved;
};

static void check_listed(const struct listed_case *c)
{
    struct fleet f = fleet_of(c->spec);
    struct fleet_result r;
    plan_listed(c->spec, c->list, c->n, &r);
    const struct fleet_plan *p = &r.plans[c->mech];
    double off = p->cost_per_hour - c->cost;
    if (p->shortage || off > 1e-6 || off < -1e-6 || fleet_plan_gap(&f, p) > c->max_gap_pct ||
        (c->proved && !p->proved_cheapest))
        fail_msg("%s on %s: $%.2f against a bound of $%.4f, %llu beyond, proved %d (expected "
                 "$%.2f, within %g%%, proved %d)",
                 fleet_mech_name(c->mech), c->spec, p->cost_per_hour, p->cost_lower_bound,
                 (unsigned long long)p->shortage, p->proved_cheapest, c->cost, c->max_gap_pct,
                 c->proved);
    fleet_result_free(&r);
}

/* Two lists of 30 on H100-80GB + A100-40GB, where one A100 is 7-9% of a plan and only a
 * proof brings the gap under 2%. MPS on the first: its plan ($16.80) was 7.7% above its bound,
 * the proof search cut short at a million steps (55 million to the end) because MPS's groups
 * were searched as one; group by group it ends in 181,000 steps. Carve on the second: $13.20
 * against $12.05, the sets' bound; the whole purchases that cost at least that and that the
 * cost bound's program allows all cost $13.20 (fleet_cost_bound_whole's floor). */
static void test_two_pools_proved(void **state)
{
    static const struct listed first[] = {
        {11, 43, FLEET_LAT_STRICT, 0},  {34, 34, FLEET_LAT_RELAXED, 0}, {18, 54, FLEET_LAT_NORMAL, 0},
        {6, 58, FLEET_LAT_NORMAL, 0},   {17, 20, FLEET_LAT_NORMAL, 0},  {14, 40, FLEET_LAT_NORMAL, 0},
        {8, 56, FLEET_LAT_NORMAL, 0},   {4, 6, FLEET_LAT_STRICT, 0},    {12, 11, FLEET_LAT_RELAXED, 0},
        {22, 6, FLEET_LAT_RELAXED, 0},  {22, 4, FLEET_LAT_STRICT, 0},   {6, 14, FLEET_LAT_STRICT, 0},
        {37, 31, FLEET_LAT_NORMAL, 0},  {28, 37, FLEET_LAT_STRICT, 0},  {33, 58, FLEET_LAT_RELAXED, 1},
        {1, 21, FLEET_LAT_NORMAL, 0},   {2, 31, FLEET_LAT_STRICT, 0},   {35, 29, FLEET_LAT_NORMAL, 0},
        {4, 51, FLEET_LAT_STRICT, 0},   {4, 54, FLEET_LAT_RELAXED, 0},  {29, 42, FLEET_LAT_RELAXED, 0},
        {15, 52, FLEET_LAT_RELAXED, 0}, {6, 12, FLEET_LAT_RELAXED, 0},  {2, 53, FLEET_LAT_NORMAL, 0},
        {20, 29, FLEET_LAT_RELAXED, 0}, {11, 22, FLEET_LAT_NORMAL, 0},  {12, 2, FLEET_LAT_RELAXED, 0},
        {5, 4, FLEET_LAT_NORMAL, 1},    {15, 41, FLEET_LAT_NORMAL, 0},  {9, 43, FLEET_LAT_STRICT, 0},
    }, second[] = {
        {12, 11, FLEET_LAT_RELAXED, 0}, {13, 19, FLEET_LAT_RELAXED, 0}, {17, 35, FLEET_LAT_RELAXED, 0},
        {6, 48, FLEET_LAT_NORMAL, 0},   {3, 52, FLEET_LAT_STRICT, 0},   {15, 58, FLEET_LAT_RELAXED, 0},
        {17, 10, FLEET_LAT_NORMAL, 0},  {3, 16, FLEET_LAT_RELAXED, 1},  {7, 33, FLEET_LAT_NORMAL, 0},
        {13, 9, FLEET_LAT_STRICT, 0},   {16, 41, FLEET_LAT_NORMAL, 0},  {15, 43, FLEET_LAT_NORMAL, 0},
        {16, 41, FLEET_LAT_RELAXED, 0}, {17, 44, FLEET_LAT_STRICT, 0},  {20, 38, FLEET_LAT_RELAXED, 0},
        {12, 34, FLEET_LAT_STRICT, 0},  {6, 20, FLEET_LAT_STRICT, 0},   {13, 47, FLEET_LAT_NORMAL, 0},
        {6, 14, FLEET_LAT_NORMAL, 0},   {8, 34, FLEET_LAT_NORMAL, 0},   {18, 15, FLEET_LAT_STRICT, 1},
        {5, 8, FLEET_LAT_STRICT, 0},    {18, 21, FLEET_LAT_NORMAL, 0},  {8, 28, FLEET_LAT_STRICT, 0},
        {7, 2, FLEET_LAT_NORMAL, 0},    {15, 37, FLEET_LAT_STRICT, 0},  {6, 11, FLEET_LAT_RELAXED, 0},
        {16, 9, FLEET_LAT_STRICT, 0},   {6, 42, FLEET_LAT_NORMAL, 0},   {6, 5, FLEET_LAT_RELAXED, 0},
    };
    /* the bound within $0.0001 of the plan */
    check_listed(&(struct listed_case){"H100-80GB@2.49,A100-40GB@1.20", first, 30, FLEET_MPS,
                                       16.80, 1e-4 / 16.80 * 100, true});
    check_listed(&(struct listed_case){"H100-80GB@2.49,A100-40GB@1.20", second, 30, FLEET_CARVE,
                                       13.20, 1e-4 / 13.20 * 100, false});
}

/* The search for a plan within 2% of the bound (search_toward_bound), carve on two lists of 30.
 * On H100-80GB:3 + A100-40GB:4 + L4 + T4: $15.82, 2.9% above its bound, the search for any
 * cheaper plan cut short; the search toward the bound found $15.52, and the plan made within
 * the whole-GPU search's least range (fleet_colgen.c) now $15.47, the bound. On H100-80GB + A100-40GB
 * the 28 that share fill an H100 and ten A100s to 89% of their memory and 91% of their compute
 * ($16.89, the bound): most memory first, the search did not find that in its million steps and
 * the plan stayed $18.09 (7.1%); its second order, by memory and compute together (each a
 * share of the largest GPU), finds it. */
static void test_toward_bound(void **state)
{
    static const struct listed counted[] = {
        {14, 26, FLEET_LAT_STRICT, 0},  {17, 37, FLEET_LAT_NORMAL, 0},  {2, 9, FLEET_LAT_NORMAL, 0},
        {25, 42, FLEET_LAT_NORMAL, 0},  {28, 41, FLEET_LAT_STRICT, 0},  {5, 31, FLEET_LAT_RELAXED, 0},
        {8, 12, FLEET_LAT_NORMAL, 0},   {20, 40, FLEET_LAT_STRICT, 1},  {12, 27, FLEET_LAT_RELAXED, 0},
        {18, 22, FLEET_LAT_STRICT, 0},  {1, 18, FLEET_LAT_NORMAL, 0},   {30, 21, FLEET_LAT_STRICT, 0},
        {14, 48, FLEET_LAT_STRICT, 0},  {15, 41, FLEET_LAT_RELAXED, 0}, {33, 35, FLEET_LAT_NORMAL, 1},
        {7, 38, FLEET_LAT_NORMAL, 0},   {9, 53, FLEET_LAT_NORMAL, 1},   {37, 46, FLEET_LAT_NORMAL, 0},
        {15, 5, FLEET_LAT_RELAXED, 0},  {17, 24, FLEET_LAT_NORMAL, 0},  {30, 41, FLEET_LAT_RELAXED, 0},
        {20, 16, FLEET_LAT_RELAXED, 0}, {37, 5, FLEET_LAT_STRICT, 0},   {16, 38, FLEET_LAT_RELAXED, 0},
        {24, 40, FLEET_LAT_RELAXED, 0}, {9, 34, FLEET_LAT_STRICT, 1},   {2, 28, FLEET_LAT_RELAXED, 0},
        {2, 14, FLEET_LAT_RELAXED, 0},  {13, 40, FLEET_LAT_RELAXED, 0}, {18, 9, FLEET_LAT_STRICT, 0},
    }, by_size[] = {
        {14, 31, FLEET_LAT_NORMAL, 0},  {18, 49, FLEET_LAT_STRICT, 0},  {9, 55, FLEET_LAT_NORMAL, 0},
        {7, 60, FLEET_LAT_STRICT, 0},   {24, 8, FLEET_LAT_STRICT, 0},   {13, 10, FLEET_LAT_NORMAL, 0},
        {28, 28, FLEET_LAT_STRICT, 1},  {10, 52, FLEET_LAT_NORMAL, 0},  {26, 47, FLEET_LAT_RELAXED, 0},
        {15, 37, FLEET_LAT_STRICT, 0},  {7, 52, FLEET_LAT_RELAXED, 0},  {10, 52, FLEET_LAT_NORMAL, 0},
        {17, 29, FLEET_LAT_NORMAL, 1},  {19, 3, FLEET_LAT_NORMAL, 0},   {4, 44, FLEET_LAT_RELAXED, 0},
        {1, 15, FLEET_LAT_NORMAL, 0},   {20, 19, FLEET_LAT_NORMAL, 0},  {12, 57, FLEET_LAT_RELAXED, 0},
        {8, 59, FLEET_LAT_NORMAL, 0},   {14, 46, FLEET_LAT_NORMAL, 0},  {19, 43, FLEET_LAT_NORMAL, 0},
        {10, 5, FLEET_LAT_RELAXED, 0},  {26, 16, FLEET_LAT_NORMAL, 0},  {16, 6, FLEET_LAT_STRICT, 0},
        {17, 37, FLEET_LAT_RELAXED, 0}, {19, 22, FLEET_LAT_STRICT, 0},  {29, 56, FLEET_LAT_RELAXED, 0},
        {2, 58, FLEET_LAT_RELAXED, 0},  {43, 11, FLEET_LAT_RELAXED, 0}, {14, 47, FLEET_LAT_STRICT, 0},
    };
    check_listed(&(struct listed_case){"H100-80GB:3@2.49,A100-40GB:4@1.20,L4@0.80,T4@0.35",
                                       counted, 30, FLEET_CARVE, 15.47, 2.0, false});
    check_listed(&(struct listed_case){"H100-80GB@2.49,A100-40GB@1.20", by_size, 30,
                                       FLEET_CARVE, 16.89, 2.0, false});
}

/* MIG's bounds on short lists. On H100-80GB + A100-40GB, 25 workloads: $15.60, 13 A100s,
 * against the program's fractional purchase, $14.55 (12.1 A100s: 7.2%); with a whole number of
 * GPUs of each pool (fleet_cover_bound_whole), $15.60. On H100-80GB:2 + A100-40GB:1 + L4, 8
 * workloads: $9.38 on the H100s, and no plan on the A100 fits the fleet; that model's bound
 * with the counts lifted ($8.89, 5.5% below) is not one on plans within the fleet, and no
 * longer counts. */
static void test_mig_whole_bound(void **state)
{
    static const struct listed first[] = {
        {27, 18, FLEET_LAT_STRICT, 0}, {13, 35, FLEET_LAT_RELAXED, 0}, {6, 9, FLEET_LAT_NORMAL, 0},
        {6, 1, FLEET_LAT_NORMAL, 0},   {13, 5, FLEET_LAT_STRICT, 0},   {2, 6, FLEET_LAT_RELAXED, 0},
        {1, 19, FLEET_LAT_NORMAL, 0},  {3, 50, FLEET_LAT_NORMAL, 0},   {7, 53, FLEET_LAT_RELAXED, 0},
        {11, 1, FLEET_LAT_NORMAL, 0},  {14, 44, FLEET_LAT_RELAXED, 0}, {16, 34, FLEET_LAT_RELAXED, 0},
        {6, 47, FLEET_LAT_STRICT, 0},  {6, 22, FLEET_LAT_NORMAL, 0},   {15, 25, FLEET_LAT_RELAXED, 0},
        {38, 6, FLEET_LAT_RELAXED, 0}, {8, 26, FLEET_LAT_RELAXED, 0},  {2, 41, FLEET_LAT_NORMAL, 0},
        {8, 35, FLEET_LAT_NORMAL, 0},  {35, 29, FLEET_LAT_NORMAL, 0},  {9, 30, FLEET_LAT_STRICT, 1},
        {9, 28, FLEET_LAT_RELAXED, 0}, {5, 33, FLEET_LAT_NORMAL, 0},   {1, 51, FLEET_LAT_RELAXED, 0},
        {13, 2, FLEET_LAT_NORMAL, 0},
    }, second[] = {
        {39, 51, FLEET_LAT_NORMAL, 0},  {8, 27, FLEET_LAT_RELAXED, 0}, {30, 16, FLEET_LAT_RELAXED, 0},
        {39, 13, FLEET_LAT_STRICT, 1},  {60, 1, FLEET_LAT_STRICT, 0},  {16, 42, FLEET_LAT_RELAXED, 0},
        {20, 43, FLEET_LAT_NORMAL, 0},  {10, 45, FLEET_LAT_RELAXED, 0},
    };
    check_listed(&(struct listed_case){"H100-80GB@2.49,A100-40GB@1.20", first, 25, FLEET_MIG,
                                       15.60, 1e-6, true});
    check_listed(&(struct listed_case){"H100-80GB:2@2.49,A100-40GB:1@1.20,L4@0.80", second, 8,
                                       FLEET_MIG, 9.38, 1e-6, true});
}

/* The GPUs a plan has beyond the fleet are those of its GPUs above each pool's count. MPS on
 * these 7 workloads on big:1 + mid:2 + small:2 said 2 beyond with 1 big, 2 mid and 3 small:
 * packed again with the pools' GPUs held back for the strict group (hold_back), the other
 * group's GPUs opened past what it had left were counted beyond, and the strict group did not
 * take all that was held for it (found by test_cost_bound_below_optimum run for 8,000 rounds). */
static void test_beyond_counted(void **state)
{
    static const struct {
        uint64_t mib;
        uint32_t bp;
        int lat, trust;
    } list[] = {
        {1028, 880, FLEET_LAT_NORMAL, FLEET_UNTRUSTED}, {5963, 6321, FLEET_LAT_NORMAL, FLEET_UNTRUSTED},
        {3765, 4634, FLEET_LAT_STRICT, FLEET_TRUSTED},  {4524, 153, FLEET_LAT_NORMAL, FLEET_TRUSTED},
        {3248, 5481, FLEET_LAT_NORMAL, FLEET_UNTRUSTED}, {7172, 6437, FLEET_LAT_NORMAL, FLEET_TRUSTED},
        {8408, 4911, FLEET_LAT_STRICT, FLEET_TRUSTED},
    };
    struct fleet f = fleet_of("big/16GiB:1@1.70,mid/10GiB:2@1.00,small/6GiB:2@0.45");
    struct fleet_workloads ws = {0};
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
        add(&ws, list[i].mib, list[i].bp, list[i].lat, list[i].trust);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    check_rules(&f, &ws, &r, &o); /* each plan's shortage against its GPUs */
    assert_int_equal(r.plans[FLEET_MPS].shortage, 1);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* Whole GPUs in the sets' program (fleet_colgen.c): its solution buys fractions of a pool's GPUs
 * where every plan buys whole ones, and the bound and the plans made from the solution took
 * them as they were. Two lists of 30 on H100-80GB:3 + A100-40GB:4 + L4 + T4. The first:
 * time-slicing $12.95 against $12.62 (2.6%), carve $11.54 against $11.19 (3.2%); by the search
 * over whole numbers of GPUs per pool and per pool and kind, and a plan made within its least
 * range, $12.65 and $11.24, each its bound. The second: carve $13.89 against $13.36 (4.0%), now
 * $13.58, its bound. */
static void test_whole_pools(void **state)
{
    static const struct listed first[] = {
        {14, 3, FLEET_LAT_NORMAL, 0},   {16, 26, FLEET_LAT_NORMAL, 0},  {12, 38, FLEET_LAT_STRICT, 0},
        {10, 9, FLEET_LAT_STRICT, 0},   {9, 59, FLEET_LAT_RELAXED, 0},  {20, 58, FLEET_LAT_STRICT, 0},
        {3, 58, FLEET_LAT_RELAXED, 0},  {18, 7, FLEET_LAT_NORMAL, 0},   {20, 41, FLEET_LAT_STRICT, 0},
        {16, 29, FLEET_LAT_RELAXED, 0}, {18, 59, FLEET_LAT_STRICT, 1},  {13, 46, FLEET_LAT_RELAXED, 0},
        {20, 32, FLEET_LAT_NORMAL, 0},  {11, 46, FLEET_LAT_STRICT, 0},  {19, 15, FLEET_LAT_STRICT, 0},
        {5, 52, FLEET_LAT_RELAXED, 0},  {3, 21, FLEET_LAT_RELAXED, 0},  {16, 7, FLEET_LAT_NORMAL, 0},
        {4, 36, FLEET_LAT_NORMAL, 0},   {18, 14, FLEET_LAT_RELAXED, 0}, {10, 29, FLEET_LAT_STRICT, 0},
        {13, 21, FLEET_LAT_RELAXED, 0}, {6, 13, FLEET_LAT_STRICT, 1},   {9, 31, FLEET_LAT_STRICT, 1},
        {5, 57, FLEET_LAT_STRICT, 0},   {3, 58, FLEET_LAT_RELAXED, 0},  {18, 44, FLEET_LAT_NORMAL, 0},
        {17, 18, FLEET_LAT_RELAXED, 0}, {7, 58, FLEET_LAT_RELAXED, 0},  {14, 38, FLEET_LAT_NORMAL, 0},
    }, second[] = {
        {6, 46, FLEET_LAT_NORMAL, 0},   {4, 35, FLEET_LAT_STRICT, 1},   {2, 43, FLEET_LAT_RELAXED, 0},
        {10, 54, FLEET_LAT_STRICT, 0},  {23, 24, FLEET_LAT_RELAXED, 0}, {13, 30, FLEET_LAT_RELAXED, 0},
        {13, 11, FLEET_LAT_RELAXED, 0}, {39, 26, FLEET_LAT_STRICT, 0},  {7, 11, FLEET_LAT_STRICT, 0},
        {29, 52, FLEET_LAT_RELAXED, 0}, {20, 36, FLEET_LAT_STRICT, 0},  {17, 46, FLEET_LAT_NORMAL, 0},
        {11, 35, FLEET_LAT_NORMAL, 0},  {2, 53, FLEET_LAT_STRICT, 0},   {9, 16, FLEET_LAT_RELAXED, 0},
        {17, 52, FLEET_LAT_NORMAL, 0},  {4, 44, FLEET_LAT_RELAXED, 0},  {18, 46, FLEET_LAT_RELAXED, 0},
        {39, 57, FLEET_LAT_STRICT, 0},  {7, 42, FLEET_LAT_RELAXED, 0},  {15, 1, FLEET_LAT_RELAXED, 0},
        {34, 8, FLEET_LAT_RELAXED, 0},  {7, 26, FLEET_LAT_RELAXED, 0},  {16, 60, FLEET_LAT_RELAXED, 1},
        {2, 52, FLEET_LAT_NORMAL, 0},   {13, 60, FLEET_LAT_STRICT, 0},  {14, 42, FLEET_LAT_STRICT, 0},
        {26, 3, FLEET_LAT_RELAXED, 0},  {15, 34, FLEET_LAT_STRICT, 0},  {14, 10, FLEET_LAT_STRICT, 0},
    };
    const char *fleet = "H100-80GB:3@2.49,A100-40GB:4@1.20,L4@0.80,T4@0.35";
    /* the bound within $0.0001 of the plan */
    check_listed(&(struct listed_case){fleet, first, 30, FLEET_TIMESLICE, 12.65, 1e-4 / 12.65 * 100,
                                       false});
    check_listed(&(struct listed_case){fleet, first, 30, FLEET_CARVE, 11.24, 1e-4 / 11.24 * 100,
                                       false});
    check_listed(&(struct listed_case){fleet, second, 30, FLEET_CARVE, 13.58, 1e-4 / 13.58 * 100,
                                       false});
}

/* A reviewer's list of 37 on big:5 + mid:6 + small: in the whole-GPU search a node held a
 * pool's GPUs to lo = hi, whose two limits' prices rose together to near the artificial
 * columns' cost, and a pool's price plus them fell below zero by rounding: the empty set was
 * kept as a column, and __builtin_ctzll(0) read past the workloads (a crash). Planned here
 * under every mechanism's rules; carve's plan is its bound. */
static void test_whole_pools_empty_set(void **state)
{
    static const unsigned list[][4] = { /* MiB, basis points, latency, untrusted */
        {2258, 4649, 1, 0}, {2328, 2296, 1, 1}, {1038, 2605, 2, 0}, {7475, 5739, 1, 0},
        {9667, 634, 1, 0},  {1957, 2445, 2, 0}, {4493, 4373, 1, 0}, {10735, 13, 1, 0},
        {9828, 1218, 1, 0}, {3357, 4534, 1, 0}, {2880, 1536, 2, 0}, {6878, 2942, 1, 0},
        {2689, 3580, 1, 0}, {7960, 1102, 1, 0}, {3413, 5181, 1, 0}, {5332, 1117, 2, 0},
        {3671, 4574, 2, 0}, {7990, 6654, 1, 0}, {4900, 1832, 1, 0}, {3679, 127, 2, 0},
        {2575, 2437, 1, 1}, {3773, 2448, 1, 0}, {6134, 3048, 1, 0}, {3160, 2136, 2, 0},
        {2789, 4227, 2, 0}, {1106, 5960, 1, 0}, {6498, 2920, 1, 0}, {845, 1361, 1, 0},
        {849, 5397, 2, 0},  {5833, 2148, 1, 0}, {5077, 6233, 1, 0}, {2692, 1332, 2, 0},
        {3846, 677, 2, 1},  {1522, 1307, 1, 0}, {4039, 1618, 1, 0}, {3817, 6192, 2, 0},
        {9949, 4647, 1, 0},
    };
    struct fleet f = fleet_of("big/20GiB:5@1.30,mid/12GiB:6@0.85,small/6GiB@0.45");
    struct fleet_workloads ws = {0};
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
        add(&ws, list[i][0], list[i][1], (int)list[i][2],
            list[i][3] ? FLEET_UNTRUSTED : FLEET_TRUSTED);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    check_rules(&f, &ws, &r, &o);
    const struct fleet_plan *p = &r.plans[FLEET_CARVE];
    assert_int_equal(p->shortage, 0);
    assert_true(p->cost_per_hour < 12.10 + 1e-6 && fleet_plan_gap(&f, p) < 1e-4);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* Lists past 64 workloads: the sets' program takes up to 256 (COLGEN_MAX, a set of four
 * 64-bit words). 80 workloads on A100-80GB + L4 + T4: time-slicing $54.55 against $53.00
 * (2.9%), MPS $45.50 against $43.60 (4.4%), carve $44.40 against $42.60 (4.2%) when its sets
 * were 64-bit masks and it gave no bound past 64; now $54.10, $44.95 and $43.05, each its bound. */
static void test_past_64(void **state)
{
    static const struct listed list[] = {
        {10, 9, FLEET_LAT_STRICT, 0},   {20, 30, FLEET_LAT_STRICT, 0},  {2, 3, FLEET_LAT_NORMAL, 0},
        {2, 47, FLEET_LAT_RELAXED, 0},  {14, 14, FLEET_LAT_RELAXED, 0}, {10, 56, FLEET_LAT_NORMAL, 0},
        {2, 39, FLEET_LAT_STRICT, 0},   {19, 20, FLEET_LAT_RELAXED, 1}, {39, 22, FLEET_LAT_NORMAL, 1},
        {13, 28, FLEET_LAT_RELAXED, 1}, {20, 24, FLEET_LAT_NORMAL, 0},  {16, 57, FLEET_LAT_STRICT, 0},
        {15, 47, FLEET_LAT_STRICT, 0},  {16, 60, FLEET_LAT_STRICT, 0},  {12, 2, FLEET_LAT_RELAXED, 0},
        {27, 36, FLEET_LAT_RELAXED, 0}, {2, 27, FLEET_LAT_RELAXED, 0},  {3, 44, FLEET_LAT_NORMAL, 0},
        {15, 36, FLEET_LAT_NORMAL, 0},  {31, 57, FLEET_LAT_NORMAL, 0},  {27, 25, FLEET_LAT_NORMAL, 0},
        {20, 45, FLEET_LAT_RELAXED, 0}, {2, 15, FLEET_LAT_NORMAL, 0},   {1, 8, FLEET_LAT_RELAXED, 0},
        {11, 32, FLEET_LAT_RELAXED, 1}, {6, 48, FLEET_LAT_NORMAL, 0},   {22, 60, FLEET_LAT_RELAXED, 0},
        {22, 55, FLEET_LAT_NORMAL, 0},  {2, 50, FLEET_LAT_STRICT, 0},   {7, 52, FLEET_LAT_NORMAL, 0},
        {3, 60, FLEET_LAT_RELAXED, 0},  {3, 45, FLEET_LAT_RELAXED, 0},  {12, 13, FLEET_LAT_NORMAL, 0},
        {10, 4, FLEET_LAT_NORMAL, 0},   {39, 52, FLEET_LAT_STRICT, 0},  {1, 1, FLEET_LAT_STRICT, 0},
        {16, 50, FLEET_LAT_RELAXED, 0}, {6, 17, FLEET_LAT_RELAXED, 0},  {20, 58, FLEET_LAT_NORMAL, 0},
        {33, 48, FLEET_LAT_RELAXED, 0}, {3, 4, FLEET_LAT_STRICT, 0},    {25, 9, FLEET_LAT_STRICT, 0},
        {6, 10, FLEET_LAT_NORMAL, 0},   {13, 30, FLEET_LAT_STRICT, 0},  {12, 59, FLEET_LAT_STRICT, 0},
        {5, 32, FLEET_LAT_NORMAL, 0},   {13, 5, FLEET_LAT_RELAXED, 0},  {16, 2, FLEET_LAT_NORMAL, 0},
        {15, 20, FLEET_LAT_NORMAL, 0},  {17, 57, FLEET_LAT_RELAXED, 1}, {36, 5, FLEET_LAT_RELAXED, 0},
        {7, 46, FLEET_LAT_NORMAL, 0},   {20, 22, FLEET_LAT_STRICT, 0},  {8, 49, FLEET_LAT_STRICT, 0},
        {6, 52, FLEET_LAT_RELAXED, 0},  {18, 51, FLEET_LAT_RELAXED, 0}, {22, 22, FLEET_LAT_RELAXED, 0},
        {26, 31, FLEET_LAT_RELAXED, 0}, {38, 52, FLEET_LAT_STRICT, 0},  {1, 43, FLEET_LAT_RELAXED, 0},
        {1, 28, FLEET_LAT_RELAXED, 0},  {6, 14, FLEET_LAT_NORMAL, 1},   {19, 52, FLEET_LAT_STRICT, 0},
        {5, 1, FLEET_LAT_STRICT, 0},    {9, 37, FLEET_LAT_RELAXED, 0},  {3, 54, FLEET_LAT_NORMAL, 0},
        {1, 37, FLEET_LAT_RELAXED, 0},  {20, 17, FLEET_LAT_STRICT, 0},  {14, 40, FLEET_LAT_STRICT, 0},
        {18, 55, FLEET_LAT_NORMAL, 0},  {13, 57, FLEET_LAT_RELAXED, 0}, {16, 24, FLEET_LAT_RELAXED, 0},
        {8, 36, FLEET_LAT_NORMAL, 0},   {5, 54, FLEET_LAT_RELAXED, 0},  {6, 35, FLEET_LAT_NORMAL, 0},
        {24, 38, FLEET_LAT_NORMAL, 0},  {2, 47, FLEET_LAT_STRICT, 0},   {38, 53, FLEET_LAT_STRICT, 0},
        {32, 28, FLEET_LAT_RELAXED, 0}, {13, 57, FLEET_LAT_RELAXED, 0},
    };
    const char *fleet = "A100-80GB@3.50,L4@0.80,T4@0.35";
    size_t n = sizeof(list) / sizeof(list[0]);
    assert_int_equal(n, 80);
    check_listed(&(struct listed_case){fleet, list, n, FLEET_TIMESLICE, 54.10, 1e-4 / 54.10 * 100,
                                       false});
    check_listed(&(struct listed_case){fleet, list, n, FLEET_MPS, 44.95, 1e-4 / 44.95 * 100, false});
    check_listed(&(struct listed_case){fleet, list, n, FLEET_CARVE, 43.05, 1e-4 / 43.05 * 100, false});
}

/* n workloads drawn as bench/plan_sweep.py draws them (1-20 GiB, a third up to 45, 0-512 MiB
 * more, 1-60%, a quarter strict, a third untrusted), by a generator of the test's own. */
static void add_drawn(struct fleet_workloads *ws, uint64_t seed, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t draw[6];
        for (size_t d = 0; d < 6; d++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            draw[d] = (uint32_t)(seed >> 16);
        }
        uint64_t gib = draw[0] % 3 == 0 ? 1 + draw[1] % 45 : 1 + draw[1] % 20;
        static const uint64_t extra[] = {0, 0, 256, 512};
        static const int latency[] = {FLEET_LAT_STRICT, FLEET_LAT_NORMAL, FLEET_LAT_NORMAL,
                                      FLEET_LAT_RELAXED};
        add(ws, gib * 1024 + extra[draw[2] % 4], (1 + draw[3] % 60) * 100, latency[draw[4] % 4],
            draw[5] % 3 == 0 ? FLEET_UNTRUSTED : FLEET_TRUSTED);
    }
}

/* The plans of ws on spec under mechs, each within 2% of its bound and of the fleet; kept in
 * *kept (NULL: freed). */
static void check_within_two(const char *spec, const struct fleet_workloads *ws,
                             const int *mechs, size_t nmechs, const char *what,
                             struct fleet_result *kept)
{
    struct fleet f = fleet_of(spec);
    struct fleet_result r;
    plan_checked(&f, ws, &r);
    for (size_t m = 0; m < nmechs; m++) {
        const struct fleet_plan *p = &r.plans[mechs[m]];
        print_message("%s, %s, %s: $%.2f against $%.2f, %.2f%%\n", what, spec,
                      fleet_mech_name(mechs[m]), p->cost_per_hour, p->cost_lower_bound,
                      fleet_plan_gap(&f, p));
        if (p->shortage || p->placed != ws->n || fleet_plan_gap(&f, p) > 2.0)
            fail_msg("%s: %s on %s: $%.2f against a bound of $%.2f (%.2f%%), %llu beyond", what,
                     fleet_mech_name(mechs[m]), spec, p->cost_per_hour, p->cost_lower_bound,
                     fleet_plan_gap(&f, p), (unsigned long long)p->shortage);
    }
    if (kept)
        *kept = r;
    else
        fleet_result_free(&r);
}

/* Past 256 workloads the sets' program plans parts of the plan again (fleet_parts.c). A list
 * of 300 drawn as plan_sweep.py draws them, on a large GPU beside L4s and T4s: four of the
 * packers' six plans were 2.11-2.65% above their bounds, and every one is now within 2%, each
 * GPU within the mechanism's rules (check_rules). */
static void test_parts(void **state)
{
    (void)state;
    static const int mechs[] = {FLEET_TIMESLICE, FLEET_MPS, FLEET_CARVE};
    struct fleet_workloads ws = {0};
    add_drawn(&ws, 1, 300);
    check_within_two("A100-80GB@3.50,L4@0.80,T4@0.35", &ws, mechs, 3, "parts", NULL);
    if (!SANITIZED) /* 19 s of the suite's 77 s under ASan with both: the rules, checked once */
        check_within_two("H100-80GB@2.49,L4@0.80,T4@0.35", &ws, mechs, 3, "parts", NULL);
    fleet_workloads_free(&ws);
}

/* A mechanism's lone workloads and each of its sharing groups are planned apart
 * (plan_by_parts in fleet_pack.c), and the sets' program prices a GPU's sets by a table
 * (knapsack_dp in fleet_colgen.c). A list of 120 drawn as plan_sweep.py draws them on A100-80GB +
 * L4 + T4: MPS $84.20 against $82.03 (2.64%) and carve $83.05 (1.76%) as one list, before;
 * $82.45 and $81.70 now, each its bound. */
static void test_by_parts(void **state)
{
    (void)state;
    static const int mechs[] = {FLEET_TIMESLICE, FLEET_MPS, FLEET_CARVE};
    struct fleet_workloads ws = {0};
    add_drawn(&ws, 8, 120);
    struct fleet_result r;
    check_within_two("A100-80GB@3.50,L4@0.80,T4@0.35", &ws, mechs, 3, "by parts", &r);
    assert_true(fabs(r.plans[FLEET_MPS].cost_per_hour - 82.45) < 1e-6);
    assert_non_null(strstr(r.plans[FLEET_MPS].note, "planned apart"));
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

/* A dive of the sets' program on a list of 250 solves a program of up to 250 rows afresh at
 * each step: with the budget of the program's rounds every dive of MPS ran out, and the
 * packing's plan stayed, 6.02% above its bound (carve 1.90%); with a budget that grows with the
 * square of the list's length, 1.24% and 1.49% (COLGEN_WORK in fleet_colgen.c). */
static void test_dive_budget(void **state)
{
    (void)state;
    static const int mechs[] = {FLEET_MPS, FLEET_CARVE};
    if (SANITIZED) /* 10 s of the suite under ASan, for gaps: the plain builds check them */
        skip();
    struct fleet_workloads ws = {0};
    add_drawn(&ws, 12, 250);
    check_within_two("H100-80GB@2.49,L4@0.80,T4@0.35", &ws, mechs, 2, "dives", NULL);
    fleet_workloads_free(&ws);
}

/* fleet_simplex.c, the sets' program's solver: an optimum, the duals that price it, a column
 * added to the solved program (the next solve starts from the last basis), and a program the
 * columns cannot meet. Rows: two workloads to cover (>= 1 each), at most 1.5 GPUs in all. */
static void test_simplex(void **state)
{
    const bool at_least[] = {true, true, false};
    const double rhs[] = {1, 1, 1.5};
    struct fleet_simplex *s = fleet_simplex_new(3, at_least, rhs, 4, 1000);
    assert_non_null(s);
    const size_t first[] = {0, 2}, second[] = {1, 2}, both[] = {0, 1, 2};
    assert_int_equal(fleet_simplex_add(s, first, 2, 2.0, NULL), 0);
    assert_int_equal(fleet_simplex_add(s, second, 2, 3.0, NULL), 1);
    assert_int_equal(fleet_simplex_add(s, both, 3, 4.0, NULL), 2);
    double work = 0, x[4], duals[3];
    assert_int_equal(fleet_simplex_solve(s, &work, 1e9), FLEET_SIMPLEX_OPTIMAL);
    assert_true(work > 0);
    fleet_simplex_values(s, x);
    /* both alone cost 5 and buy 2 GPUs, more than 1.5: one GPU that holds both, 4 */
    assert_true(fabs(x[2] - 1) < 1e-9 && x[0] < 1e-9 && x[1] < 1e-9);
    assert_false(fleet_simplex_artificial(s));
    fleet_simplex_duals(s, duals);
    assert_true(fabs(duals[0] + duals[1] + duals[2] - 4) < 1e-9); /* the column in the basis */
    assert_true(duals[0] - 1e-9 <= 2 - duals[2] && duals[1] - 1e-9 <= 3 - duals[2]);
    assert_true(duals[2] <= 1e-9);
    /* a cheaper GPU that holds both: the solve goes on from the basis */
    assert_int_equal(fleet_simplex_add(s, both, 3, 3.5, NULL), 3);
    assert_int_equal(fleet_simplex_solve(s, &work, 1e9), FLEET_SIMPLEX_OPTIMAL);
    fleet_simplex_values(s, x);
    assert_true(fabs(x[3] - 1) < 1e-9 && x[2] < 1e-9);
    assert_int_equal(fleet_simplex_add(s, both, 3, 1.0, NULL), -1); /* no room */
    fleet_simplex_free(s);

    /* at least 2 GPUs of a pool that has one column, itself at most 1: no solution */
    const bool need[] = {true, false};
    const double two[] = {2, 1};
    s = fleet_simplex_new(2, need, two, 1, 1000);
    assert_non_null(s);
    const size_t rows[] = {0, 1};
    assert_int_equal(fleet_simplex_add(s, rows, 2, 1.0, NULL), 0);
    assert_int_equal(fleet_simplex_solve(s, NULL, 0), FLEET_SIMPLEX_OPTIMAL);
    assert_true(fleet_simplex_artificial(s));
    fleet_simplex_free(s);
}

/* Lists of a few dozen workloads: the bound by the sets each GPU holds (fleet_colgen.c). Random
 * lists of 25-60 workloads of 1-20 GiB (a third up to 45) and 1-60% on A100 + L4 + T4, mixed
 * latency classes, one in ten untrusted: the fractional bounds left time-slicing, MPS and carve
 * 2-14% above them. On these 12 lists the gaps were 2.94%, 5.60% and 3.80% on average (9.41%,
 * 13.71% and 7.06% at most) without it; 2.04%, 3.85% and 3.03% (7.86%, 10.59%, 5.44%) with its
 * bound; 0.69%, 2.15% and 1.68% (2.47%, 6.42%, 3.94%) with the plans its solution leads to too;
 * 0.59%, 1.82% and 1.33% (2.47%, 6.79%, 3.50%) with the local search of fleet_polish.c as well;
 * 0.16%, 1.53% and 0.98% (1.12%, 5.14%, 3.50%) with the proof search on lists of up to 64;
 * 0.11%, 0.84% and 0.93% (1.12%, 5.14%, 2.82%) with that search group by group;
 * 0.00% for all three (at most too) with whole GPUs per pool and kind in the sets' program
 * (0.11%, 0.84% and 0.80% without them, the solver changed).
 * Those plans keep the mechanisms' rules (check_rules). */
static void test_dozens_bound(void **state)
{
    struct fleet f = fleet_of("A100-80GB@3.50,L4@0.80,T4@0.35");
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    double worst[FLEET_NMECH] = {0}, sum[FLEET_NMECH] = {0};
    int lists = SANITIZED ? 4 : 12; /* 9 s under ASan: there the rules are checked, not gaps */
    for (int l = 0; l < lists; l++) {
        struct fleet_workloads ws = {0};
        size_t n = 25 + rng() % 36;
        for (size_t i = 0; i < n; i++) {
            /* one draw per statement: the same lists whatever order a compiler evaluates
               arguments in */
            uint64_t most = rng() % 3 == 0 ? 45 : 20;
            uint64_t gib = 1 + rng() % most;
            uint32_t bp = 100 * (uint32_t)(1 + rng() % 60);
            int lat = rng() % 3 == 0 ? FLEET_LAT_STRICT : FLEET_LAT_NORMAL;
            int trust = rng() % 10 == 0 ? FLEET_UNTRUSTED : FLEET_TRUSTED;
            add(&ws, gib * 1024, bp, lat, trust);
        }
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
            if (m == FLEET_MIG)
                continue;
            double gap = fleet_plan_gap(&f, &r.plans[m]);
            worst[m] = gap > worst[m] ? gap : worst[m];
            sum[m] += gap;
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
    for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++)
        if (m != FLEET_MIG)
            print_message("dozens, %s: gap %.2f%% on average, %.2f%% at most\n",
                          fleet_mech_name(m), sum[m] / lists, worst[m]);
    if (SANITIZED)
        return;
    assert_true(sum[FLEET_TIMESLICE] / lists < 0.1);
    assert_true(sum[FLEET_MPS] / lists < 0.1);
    assert_true(sum[FLEET_CARVE] / lists < 0.1);
}

static void test_bound_below_optimum(void **state)
{
    struct fleet f = fleet_of("mygpu/10GiB@1.00");
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    int optimal = 0;
    for (int round = 0; round < 300; round++) {
        struct fleet_workloads ws = {0};
        size_t n = 3 + rng() % 7;
        for (size_t i = 0; i < n; i++)
            add(&ws, 1024 + rng() % (7 * 1024), rng() % 6000, FLEET_LAT_NORMAL, FLEET_TRUSTED);
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        uint64_t mem[16] = {0}, comp[16] = {0};
        best = 1000;
        search(&ws, 0, mem, comp, 0, 10 * 1024, FLEET_BP_FULL);
        const struct fleet_plan *p = &r.plans[FLEET_CARVE];
        if (p->lower_bound > (uint64_t)best || p->gpus < (uint64_t)best)
            fail_msg("round %d: bound %llu, optimum %d, packing %llu", round,
                     (unsigned long long)p->lower_bound, best, (unsigned long long)p->gpus);
        optimal += p->gpus == (uint64_t)best;
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
    /* small lists get a few orders tried: the packing is almost always the optimum */
    print_message("carve slices: optimal on %d of 300 small lists\n", optimal);
    if (optimal < 297)
        fail_msg("optimal on only %d of 300 small lists", optimal);
}

/* The cheapest plan on a fleet of several priced models, by trying every assignment: workload
 * i goes alone (kind -1) or shares only with its own kind, on a GPU of a pool with one left
 * (or of any pool when counts are lifted). */
struct mixed_search {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const int *kind;
    uint32_t compute_cap, slots;
    bool limited;
    int pool[16], bin_kind[16];
    uint64_t mem[16], comp[16], tenants[16], used[FLEET_MAX_POOLS];
    double best;
};

static void search_cost(struct mixed_search *s, size_t i, int bins, double cost)
{
    if (cost >= s->best - 1e-9)
        return;
    if (i == s->ws->n) {
        s->best = cost;
        return;
    }
    const struct fleet_workload *w = &s->ws->w[i];
    for (int b = 0; b < bins && s->kind[i] >= 0; b++) {
        if (s->bin_kind[b] != s->kind[i] || s->tenants[b] == s->slots ||
            s->mem[b] + w->memory_mib > s->f->pools[s->pool[b]].memory_mib ||
            s->comp[b] + w->compute_bp > s->compute_cap)
            continue;
        s->mem[b] += w->memory_mib, s->comp[b] += w->compute_bp, s->tenants[b]++;
        search_cost(s, i + 1, bins, cost);
        s->mem[b] -= w->memory_mib, s->comp[b] -= w->compute_bp, s->tenants[b]--;
    }
    for (size_t q = 0; q < s->f->npools; q++) {
        const struct fleet_pool *pool = &s->f->pools[q];
        if ((s->limited && s->used[q] == pool->count) || pool->memory_mib < w->memory_mib ||
            (s->kind[i] >= 0 && w->compute_bp > s->compute_cap))
            continue;
        s->pool[bins] = (int)q, s->bin_kind[bins] = s->kind[i], s->used[q]++;
        s->mem[bins] = w->memory_mib, s->comp[bins] = w->compute_bp, s->tenants[bins] = 1;
        search_cost(s, i + 1, bins + 1, cost + pool->price);
        s->used[q]--;
    }
}

/* The rules of mech as the planner states them: which workloads are alone, which share. */
static int kind_under(int mech, const struct fleet_workload *w, const struct fleet_options *o)
{
    if (mech == FLEET_WHOLE || w->trust == FLEET_UNTRUSTED)
        return -1;
    if (mech == FLEET_TIMESLICE)
        return w->latency == FLEET_LAT_STRICT || w->compute_bp > o->timeslice_compute_bp ? -1 : 0;
    if (mech == FLEET_MPS)
        return w->latency == FLEET_LAT_STRICT ? 1 : 0;
    return 0;
}

/* Mixed fleets: the cost bound of a plan within the fleet never exceeds the cheapest plan on
 * the fleet, which that plan never beats; the bound of a plan beyond the fleet never exceeds
 * the cheapest plan buying GPUs of these models, beyond the counts. Small GPUs, tight counts and some lone workloads, so that the bound's
 * classes, counts and lone workloads are all exercised. */
static void test_cost_bound_below_optimum(void **state)
{
    /* the fourth: memory-heavy lists, most workloads over half of the small GPUs (one to a
       GPU) and many pairs that cannot share one, which the bound's bands and pair limits see */
    static const char *const specs[] = {"big/10GiB:2@1.00,small/6GiB:3@0.50",
                                        "big/16GiB:1@1.70,mid/10GiB:2@1.00,small/6GiB:2@0.45",
                                        "big/12GiB@1.20,small/5GiB:1@0.30",
                                        "big/24GiB@1.00,small/10GiB:4@0.35"};
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    int checked = 0, optimal = 0, tight = 0;
    uint64_t saved_rng = 0;
    for (int round = 0; round < 320; round++) {
        size_t spec = round < 240 ? (size_t)round % 3 : 3;
        if (round == 240) /* the lists after this test stay as they were measured */
            saved_rng = rng_state;
        struct fleet f = fleet_of(specs[spec]);
        struct fleet_workloads ws = {0};
        size_t n = 3 + rng() % 5;
        for (size_t i = 0; i < n; i++)
            add(&ws, spec == 3 ? 4 * 1024 + rng() % (16 * 1024) : 512 + rng() % (9 * 1024),
                rng() % 7000,
                rng() % 3 == 0 ? FLEET_LAT_STRICT : FLEET_LAT_NORMAL,
                rng() % 6 == 0 ? FLEET_UNTRUSTED : FLEET_TRUSTED);
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        for (int m = 0; m < FLEET_NMECH; m++) {
            const struct fleet_plan *p = &r.plans[m];
            if (m == FLEET_MIG || r.nimpossible)
                continue;
            int kind[16];
            for (size_t i = 0; i < n; i++)
                kind[i] = kind_under(m, &ws.w[i], &o);
            struct mixed_search s = {.f = &f, .ws = &ws, .kind = kind, .limited = true,
                                     .best = 1e18};
            s.compute_cap = m == FLEET_TIMESLICE ? o.timeslice_compute_bp : FLEET_BP_FULL;
            s.slots = m == FLEET_TIMESLICE ? o.timeslice_replicas
                      : m == FLEET_MPS     ? o.mps_clients
                                           : o.carve_slices;
            /* a plan within the fleet against the cheapest on the fleet; one beyond it
               against the cheapest of all */
            s.limited = !p->shortage;
            search_cost(&s, 0, 0, 0);
            bool fits = !p->shortage;
            if (p->cost_lower_bound > s.best + 1e-9)
                fail_msg("round %d, %s on %s: cost bound %.4f above the optimum %.4f", round,
                         fleet_mech_name(m), specs[spec], p->cost_lower_bound, s.best);
            if (fits && p->cost_per_hour < s.best - 1e-9)
                fail_msg("round %d, %s: plan %.4f below the optimum %.4f", round,
                         fleet_mech_name(m), p->cost_per_hour, s.best);
            checked++;
            optimal += p->cost_per_hour < s.best + 1e-9;
            tight += p->cost_lower_bound > s.best - 1e-4; /* a proof leaves 1e-6 a workload */
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
    rng_state = saved_rng;
    print_message("mixed fleets: %d plans checked against the optimum; %d of them optimal; "
                  "the bound is the optimum for %d\n", checked, optimal, tight);
    /* the bound with whole GPUs (fleet_cost_bound_whole): 1207 of 1280 when measured, 1211
       later; the fractional bound alone, 942. With the search that proves a short list's plan
       the cheapest (fleet_exact.c) 1275, and 1225 plans optimal (1192 before): the search
       found cheaper ones too (clang's build: 1273 and 1214) */
    if (tight < 1260 || optimal < 1205)
        fail_msg("the cost bound is the optimum for only %d of %d plans (1275 when measured), "
                 "and %d plans optimal (1225)", tight, checked, optimal);
}

/* Whether a GPU of model m can hold count[q] instances of each profile q: the count limits,
 * the compute slices, and a start for each instance (tried in every way). */
static bool place_instances(const struct mig_model *m, uint8_t *left, unsigned taken, size_t q,
                            unsigned min_start)
{
    while (q < m->nprofiles && !left[q])
        q++, min_start = 0;
    if (q == m->nprofiles)
        return true;
    const struct mig_profile *pr = &m->profiles[q];
    for (unsigned start = min_start; start + pr->memory_slices <= m->memory_slices; start++) {
        unsigned bits = mig_slice_mask(pr, start);
        if (!(pr->start_mask & (1u << start)) || (taken & bits))
            continue;
        left[q]--;
        bool ok = place_instances(m, left, taken | bits, q, start + 1);
        left[q]++;
        if (ok)
            return true;
    }
    return false;
}

static bool layout_fits(const struct mig_model *m, const uint8_t *count)
{
    unsigned compute = 0;
    uint8_t left[8];
    for (size_t q = 0; q < m->nprofiles; q++) {
        if (count[q] > m->profiles[q].max_count)
            return false;
        compute += count[q] * m->profiles[q].compute_slices;
        left[q] = count[q];
    }
    return compute <= m->compute_slices && place_instances(m, left, 0, 0, 0);
}

/* The cheapest MIG plan on a mixed fleet, by trying every assignment: workload i takes its
 * smallest profile on a GPU of the MIG model, or a whole GPU of another pool that holds it (one
 * larger than every profile: a whole GPU of any pool). */
struct mig_search {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const struct mig_model *m;
    bool is_mig[FLEET_MAX_POOLS], limited;
    int profile[16]; /* per workload, -1: larger than every profile */
    bool mig_gpu[16];
    uint8_t count[16][8];
    uint64_t used[FLEET_MAX_POOLS];
    double best;
};

static void search_mig(struct mig_search *s, size_t i, int gpus, double cost)
{
    if (cost >= s->best - 1e-9)
        return;
    if (i == s->ws->n) {
        s->best = cost;
        return;
    }
    int q = s->profile[i];
    for (int b = 0; b < gpus && q >= 0; b++) {
        if (!s->mig_gpu[b])
            continue;
        s->count[b][q]++;
        if (layout_fits(s->m, s->count[b]))
            search_mig(s, i + 1, gpus, cost);
        s->count[b][q]--;
    }
    for (size_t k = 0; k < s->f->npools; k++) {
        const struct fleet_pool *pool = &s->f->pools[k];
        if ((s->limited && s->used[k] == pool->count) || pool->memory_mib < s->ws->w[i].memory_mib)
            continue;
        memset(s->count[gpus], 0, sizeof(s->count[gpus]));
        s->mig_gpu[gpus] = q >= 0 && s->is_mig[k];
        if (s->mig_gpu[gpus])
            s->count[gpus][q] = 1;
        s->used[k]++;
        search_mig(s, i + 1, gpus + 1, cost + pool->price);
        s->used[k]--;
    }
}

/* The cheapest MIG plan of ws on f: a plan partitions GPUs of one MIG model, any of the
 * fleet's (fleet_mig.c plans each); within the fleet's counts, or beyond them (!limited). */
static double mig_optimum(const struct fleet *f, const struct fleet_workloads *ws, bool limited)
{
    double cheapest = 1e18;
    for (size_t q = 0; q < f->npools; q++) {
        const struct mig_model *m = f->pools[q].mig ? mig_model_find(f->pools[q].name) : NULL;
        if (!m)
            continue;
        struct mig_search s = {.f = f, .ws = ws, .m = m, .limited = limited, .best = cheapest};
        for (size_t i = 0; i < ws->n; i++) {
            const struct mig_profile *pr =
                mig_profile_fit(m, ws->w[i].memory_mib, ws->w[i].compute_bp / 100.0);
            s.profile[i] = pr ? (int)(pr - m->profiles) : -1;
        }
        for (size_t k = 0; k < f->npools; k++)
            s.is_mig[k] = f->pools[k].mig && mig_model_find(f->pools[k].name) == m;
        search_mig(&s, 0, 0, 0);
        cheapest = s.best;
    }
    return cheapest;
}

/* MIG on small mixed fleets: its cost bound never exceeds the cheapest plan found by
 * exhaustive search (on the fleet for a plan within it, beyond the counts for one beyond it),
 * which the plan never beats. The MIG model is the one fleet_mig.c picks (the cheapest MIG
 * pool per MiB): an A100-40GB beside an H100 that then takes whole workloads. */
static void test_mig_cost_bound_below_optimum(void **state)
{
    static const char *const specs[] = {"H100-80GB:2@2.49,L4:2@0.80,T4:2@0.35",
                                        "A100-40GB:1@1.10,T4:3@0.35",
                                        "H100-80GB:1@2.49,A100-40GB:2@1.20,L4:1@0.80"};
    uint64_t saved = rng_state; /* the tests after this one draw what they drew before */
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    int checked = 0, optimal = 0, reached = 0;
    for (int round = 0; round < 240; round++) {
        struct fleet f = fleet_of(specs[round % 3]);
        struct fleet_workloads ws = {0};
        size_t n = 3 + rng() % 4;
        for (size_t i = 0; i < n; i++) {
            uint64_t mib = rng() % 3 == 0 ? 16384 + rng() % (30 * 1024) : 512 + rng() % (12 * 1024);
            add(&ws, mib, rng() % 6000, FLEET_LAT_NORMAL,
                rng() % 4 == 0 ? FLEET_UNTRUSTED : FLEET_TRUSTED);
        }
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        const struct fleet_plan *p = &r.plans[FLEET_MIG];
        if (!r.nimpossible) {
            double optimum = mig_optimum(&f, &ws, !p->shortage);
            if (p->cost_lower_bound > optimum + 1e-9)
                fail_msg("round %d, mig on %s: cost bound %.4f above the optimum %.4f", round,
                         specs[round % 3], p->cost_lower_bound, optimum);
            if (!p->shortage && p->cost_per_hour < optimum - 1e-9)
                fail_msg("round %d, mig on %s: plan %.4f below the optimum %.4f", round,
                         specs[round % 3], p->cost_per_hour, optimum);
            checked++;
            optimal += p->cost_per_hour < optimum + 1e-9;
            reached += p->cost_lower_bound > optimum - 1e-4;
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
    rng_state = saved;
    print_message("mig on mixed fleets: %d plans checked against the optimum; %d of them "
                  "optimal; the bound reaches the optimum on %d\n", checked, optimal, reached);
    /* with whole GPUs of each pool in the bound, and the models without plans within the
       fleet left out of it: 217 of 218 (191 before) */
    assert_true(reached * 100 >= checked * 95);
}

/* The tests that seed the generator leave it as it was, failed or not, so that the lists of
 * the tests after them stay as they were measured. */
static uint64_t rng_kept;

static int rng_keep(void **state)
{
    rng_kept = rng_state;
    return 0;
}

static int rng_give_back(void **state)
{
    rng_state = rng_kept;
    return 0;
}

/* fleet_plan_all plans the mechanisms on threads of their own (fleet_options.threads), and a
 * group is not packed again by the packer that won its dry runs (fleet_kept_pack): the plans
 * are the same, to the workload and the bit, as one after another and as with each group
 * packed again (fleet_options.repack_groups). Random lists of 40, 300 and 1000 on fleets of
 * one to three models, with and without counts, so that the bounds' programs, the splits, the
 * sets' program and the searches all run beside each other. Two comparators that sorted through a
 * file-scope pointer (fleet_colgen.c, fleet_mig.c) made this crash. */
static bool same_use(const struct fleet_gpu_use *a, const struct fleet_gpu_use *b)
{
    return a->pool == b->pool && a->tenants == b->tenants &&
           a->memory_used_mib == b->memory_used_mib && a->memory_held_mib == b->memory_held_mib &&
           a->compute_bp == b->compute_bp;
}

static void same_plan(const struct fleet_plan *a, const struct fleet_plan *b, size_t n,
                      const char *what)
{
    if (a->available != b->available || a->gpus != b->gpus || a->shortage != b->shortage ||
        a->lower_bound != b->lower_bound || a->placed != b->placed || a->alone != b->alone ||
        a->stranded_mib != b->stranded_mib || a->proved_cheapest != b->proved_cheapest ||
        memcmp(&a->cost_per_hour, &b->cost_per_hour, sizeof(double)) ||
        memcmp(&a->cost_lower_bound, &b->cost_lower_bound, sizeof(double)) ||
        memcmp(a->gpus_by_pool, b->gpus_by_pool, sizeof(a->gpus_by_pool)) ||
        strcmp(a->note, b->note))
        fail_msg("%s, %s: %llu GPUs $%.6f/h (bound $%.6f) against %llu GPUs $%.6f/h "
                 "(bound $%.6f)", what, fleet_mech_name(a->mech), (unsigned long long)a->gpus,
                 a->cost_per_hour, a->cost_lower_bound, (unsigned long long)b->gpus,
                 b->cost_per_hour, b->cost_lower_bound);
    if (!a->available)
        return;
    bool same = !memcmp(a->gpu_of, b->gpu_of, n * sizeof(*a->gpu_of));
    for (uint64_t g = 0; g < a->gpus && same; g++)
        same = same_use(&a->use[g], &b->use[g]);
    if (!same)
        fail_msg("%s, %s: the same counts, another assignment", what, fleet_mech_name(a->mech));
    for (size_t i = 0; a->profile_of && i < n; i++)
        if ((a->profile_of[i] == NULL) != (b->profile_of[i] == NULL) ||
            (a->profile_of[i] && strcmp(a->profile_of[i], b->profile_of[i])))
            fail_msg("%s: workload %zu's MIG profile differs", what, i);
}

/* First-fit decreasing puts each workload on the first GPU opened that has room for its memory,
 * its compute and a tenant place (fleet_pack_group's tree, with its pruning by one GPU's two
 * shares added up): the same GPUs, workload by workload, as a scan of every GPU in turn. */
static void test_first_fit_leftmost(void **state)
{
    (void)state;
    static const struct {
        const char *fleet;
        struct mech_rules rules;
        uint64_t mem_lo, mem_hi;
        uint32_t bp_lo, bp_hi;
    } cases[] = {
        {"H100-80GB", {10000, 64}, 512, 30000, 50, 4000},
        {"H100-80GB", {9200, 16}, 1024, 12000, 100, 1500},
        {"L4", {10000, 48}, 256, 8000, 300, 6000},
        {"T4", {10000, 64}, 100, 15000, 1, 9000},
    };
    uint64_t seed = 12345;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct fleet f;
        char err[256];
        assert_int_equal(fleet_parse_spec(cases[c].fleet, &f, err, sizeof(err)), 0);
        enum { N = 3000 };
        struct fleet_workloads ws = {calloc(N, sizeof(struct fleet_workload)), N, N};
        struct sort_key *keys = calloc(N, sizeof(*keys));
        assert_non_null(ws.w);
        assert_non_null(keys);
        uint64_t mem_span = cases[c].mem_hi - cases[c].mem_lo + 1;
        uint32_t bp_span = cases[c].bp_hi - cases[c].bp_lo + 1;
        for (size_t i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            ws.w[i].memory_mib = cases[c].mem_lo + (seed >> 33) % mem_span;
            ws.w[i].compute_bp = cases[c].bp_lo + (uint32_t)((seed >> 13) % bp_span);
            keys[i] = fleet_sort_key(&ws, i,
                                     ws.w[i].memory_mib * FLEET_BP_FULL / f.pools[0].memory_mib +
                                         ws.w[i].compute_bp);
        }
        fleet_sort_keys(keys, N);
        struct pool_choice pc = {.only = -1};
        pc.left[0] = UINT64_MAX;
        pc.budget[0] = 1e12;
        struct fleet_plan p = {0};
        struct fleet_gpu_list g = {0};
        p.gpu_of = malloc(N * sizeof(*p.gpu_of));
        assert_non_null(p.gpu_of);
        assert_int_equal(fleet_pack_group(&f, &ws, keys, N, &cases[c].rules, &pc, &p, &g), 0);
        assert_int_equal(p.placed, N);
        /* the scan: every GPU's room, the first that fits */
        uint64_t *mem = calloc(N, sizeof(*mem));
        uint32_t *bp = calloc(N, sizeof(*bp)), *tenants = calloc(N, sizeof(*tenants));
        assert_true(mem && bp && tenants);
        size_t open = 0;
        for (size_t k = 0; k < N; k++) {
            const struct fleet_workload *w = &ws.w[keys[k].index];
            size_t gi = 0;
            while (gi < open && (mem[gi] < w->memory_mib || bp[gi] < w->compute_bp ||
                                 tenants[gi] == cases[c].rules.slots))
                gi++;
            if (gi == open) {
                mem[open] = f.pools[0].memory_mib;
                bp[open] = cases[c].rules.compute_cap;
                open++;
            }
            mem[gi] -= w->memory_mib;
            bp[gi] -= w->compute_bp;
            tenants[gi]++;
            if (p.gpu_of[keys[k].index] != gi)
                fail_msg("%s, workload %zu of %d (%llu MiB, %u bp): GPU %u, the scan's %zu",
                         cases[c].fleet, k, N, (unsigned long long)w->memory_mib, w->compute_bp,
                         p.gpu_of[keys[k].index], gi);
        }
        assert_int_equal(p.gpus, open);
        free(mem);
        free(bp);
        free(tenants);
        free(p.gpu_of);
        free(g.use);
        free(keys);
        free(ws.w);
    }
}

static void test_threads_same_plans(void **state)
{
    static const char *const fleets[] = {
        "H100-80GB@2.49", "A100-80GB@3.50,L4@0.80,T4@0.35", "H100-80GB:30@2.49,L4:60@0.80",
        "L4@0.80,T4@0.35", "A100-40GB:8,H100-80GB:4",
    };
    /* the longer lists took 25 of this suite's 85 s under ASan alone (265 s beside three
       other suites in CI); the plain builds plan them. A list of 1,000 on A100 + L4 + T4 took
       4.5 s a plan on one thread since its parts are planned apart (2026-11-29), and is left
       out: the lists of 300 take the same paths (past the sets' program, parts apart). */
    static const size_t sizes[] = {40, 300};
    const size_t nsizes = SANITIZED ? 1 : 2;
    rng_state = 0x9E3779B97F4A7C15ULL; /* rng_keep restores the generator after */
    struct fleet_options one, five, repacked;
    fleet_options_defaults(&one);
    one.keep_assignment = true;
    five = one;
    one.threads = 1;
    five.threads = FLEET_NMECH;
    repacked = one;
    repacked.repack_groups = true;
    int compared = 0;
    for (size_t fi = 0; fi < sizeof(fleets) / sizeof(fleets[0]); fi++)
        for (size_t si = 0; si < nsizes; si++) {
            struct fleet f = fleet_of(fleets[fi]);
            struct fleet_workloads ws = {0};
            for (size_t i = 0; i < sizes[si]; i++)
                add(&ws, 1024 * (1 + rng() % (rng() % 3 ? 20 : 45)) + 256 * (rng() % 4),
                    100 * (1 + rng() % 60), (int)(rng() % 3), rng() % 4 ? FLEET_TRUSTED
                                                                         : FLEET_UNTRUSTED);
            struct fleet_result a, b, c;
            assert_int_equal(fleet_plan_all(&f, &ws, &one, &a), 0);
            assert_int_equal(fleet_plan_all(&f, &ws, &five, &b), 0);
            assert_int_equal(fleet_plan_all(&f, &ws, &repacked, &c), 0);
            check_rules(&f, &ws, &b, &five);
            char what[128];
            for (int m = 0; m < FLEET_NMECH; m++, compared++) {
                snprintf(what, sizeof(what), "%zu workloads on %s, one thread and five", ws.n,
                         fleets[fi]);
                same_plan(&a.plans[m], &b.plans[m], ws.n, what);
                snprintf(what, sizeof(what), "%zu workloads on %s, kept and packed again", ws.n,
                         fleets[fi]);
                same_plan(&a.plans[m], &c.plans[m], ws.n, what);
            }
            fleet_result_free(&a);
            fleet_result_free(&b);
            fleet_result_free(&c);
            fleet_workloads_free(&ws);
        }
    printf("threads: %d plans the same on one thread, on five, and with each group packed "
           "again\n", compared);
}

/* Whether an exhaustive search finds a plan of ws within the fleet under mech's rules. */
static bool fits_within(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                        const struct fleet_options *o)
{
    if (mech == FLEET_MIG)
        return mig_optimum(f, ws, true) < 1e17;
    int kind[16];
    for (size_t i = 0; i < ws->n; i++)
        kind[i] = kind_under(mech, &ws->w[i], o);
    struct mixed_search s = {.f = f, .ws = ws, .kind = kind, .limited = true, .best = 1e18};
    s.compute_cap = mech == FLEET_TIMESLICE ? o->timeslice_compute_bp : FLEET_BP_FULL;
    s.slots = mech == FLEET_TIMESLICE ? o->timeslice_replicas
              : mech == FLEET_MPS     ? o->mps_clients
                                      : o->carve_slices;
    search_cost(&s, 0, 0, 0);
    return s.best < 1e17;
}

/* Small random lists on small fleets of several models (tight counts, priced or not): whenever
 * an exhaustive search finds a plan within the fleet under a mechanism's rules, MIG included,
 * the planner's plan is within the fleet too. Before fleet_exact.c, 3-5% of these plans went
 * beyond the fleet when one within it existed (the cost bound's solution gave a large GPU to a
 * small lone workload, and the packers have no way back). */
static const char *const tight_fleets[] = {
    "H100-80GB:1@2.49,A100-40GB:2@1.20",         "H100-80GB:1,A100-40GB:2",
    "L4:1@0.80,T4:2@0.35,H100-80GB:1@2.49",      "A100-40GB:1@1.10,A100-80GB:1@1.90,L4:2@0.70",
    "H100-80GB:2@2.49,L4:3@0.80",                "A100-40GB:2@1.50,T4:3@0.35,L4:2@0.80",
    "L4:2@0.80,T4:4@0.35",                       "L4:2,T4:3,H100-80GB:1",
};

static void test_within_fleet_when_possible(void **state)
{
    static const uint64_t edges[] = {4864, 8192, 9984, 16384, 20096, 24576, 40448};
    static const uint32_t computes[] = {0, 500, 1000, 2500, 3000, 5000, 6000, 9200, 10000};
    rng_state = 0x2545F4914F6CDD1DULL; /* rng_keep restores the generator after */
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    const size_t nfleets = sizeof(tight_fleets) / sizeof(tight_fleets[0]);
    int checked = 0, within = 0, beyond = 0;
    for (int round = 0; round < (SANITIZED ? 200 : 800); round++) {
        struct fleet f = fleet_of(tight_fleets[round % nfleets]);
        struct fleet_workloads ws = {0};
        size_t n = 2 + rng() % 5;
        for (size_t i = 0; i < n; i++) {
            /* drawn one at a time: the order of a call's arguments is the compiler's */
            uint32_t pick = rng() % 4;
            uint64_t mib = pick == 3 ? edges[rng() % 7]
                                     : 1 + rng() % (pick ? 8192u * pick : 24576u);
            uint32_t bp = computes[rng() % 9], lat = rng() % 8, untrusted = rng() % 4 == 0;
            add(&ws, mib, bp,
                lat < 2 ? FLEET_LAT_STRICT : lat < 5 ? FLEET_LAT_NORMAL : FLEET_LAT_RELAXED,
                untrusted ? FLEET_UNTRUSTED : FLEET_TRUSTED);
        }
        struct fleet_result r;
        assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
        check_rules(&f, &ws, &r, &o);
        for (int m = 0; m < FLEET_NMECH && !r.nimpossible; m++) {
            const struct fleet_plan *p = &r.plans[m];
            if (!p->available)
                continue;
            checked++;
            if (!fits_within(&f, &ws, m, &o))
                continue;
            within++;
            if (p->shortage && !beyond++)
                print_message("round %d, %s on %s: %llu GPUs beyond the fleet, though a plan "
                              "within it exists\n", round, fleet_mech_name(m),
                              tight_fleets[round % nfleets], (unsigned long long)p->shortage);
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
    print_message("tight mixed fleets: %d plans, %d of which fit the fleet by exhaustive search; "
                  "%d of those beyond it\n", checked, within, beyond);
    assert_int_equal(beyond, 0);
}

/* Lists of 7-24 workloads built from a plan within the fleet (each GPU filled with one to
 * four trusted workloads, 60-100% of its memory and at most 90% of compute, or with one
 * untrusted one): time-slicing, MPS and carve fit every one in the fleet. Too long for an
 * exhaustive search in the test, they were built to fit. */
static void test_within_fleet_planted(void **state)
{
    static const char *const models[] = {"H100-80GB", "A100-40GB", "L4", "T4", "A100-80GB"};
    static const double prices[] = {2.49, 1.20, 0.80, 0.35, 1.90};
    rng_state = 0x9E3779B97F4A7C15ULL; /* rng_keep restores the generator after */
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    int lists = 0, beyond = 0;
    while (lists < (SANITIZED ? 40 : 120)) {
        char spec[128];
        size_t a = rng() % 5, b = (a + 1 + rng() % 4) % 5;
        uint32_t count_a = 1 + rng() % 4, count_b = 1 + rng() % 4;
        snprintf(spec, sizeof(spec), "%s:%u@%.2f,%s:%u@%.2f", models[a], count_a, prices[a],
                 models[b], count_b, prices[b]);
        struct fleet f = fleet_of(spec);
        struct fleet_workloads ws = {0};
        for (size_t q = 0; q < f.npools; q++)
            for (uint64_t g = 0; g < f.pools[q].count; g++) {
                uint64_t gpu = f.pools[q].memory_mib;
                if (rng() % 5 == 0) {
                    uint64_t mib = 256 + rng() % (gpu - 256);
                    add(&ws, mib, rng() % 6000, FLEET_LAT_RELAXED, FLEET_UNTRUSTED);
                    continue;
                }
                uint32_t parts = 1 + rng() % 4, comp = 2000 + rng() % 7000;
                uint64_t mem = gpu * (60 + rng() % 41) / 100;
                for (uint32_t k = 0; k < parts; k++)
                    add(&ws, mem / parts, comp / parts,
                        rng() % 2 ? FLEET_LAT_NORMAL : FLEET_LAT_RELAXED, FLEET_TRUSTED);
            }
        if (ws.n >= 7 && ws.n <= 24) {
            lists++;
            struct fleet_result r;
            assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
            check_rules(&f, &ws, &r, &o);
            for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++)
                if (m != FLEET_MIG && r.plans[m].shortage && !beyond++)
                    print_message("%s on %s, %zu workloads built to fit: %llu GPUs beyond the "
                                  "fleet\n", fleet_mech_name(m), spec, ws.n,
                                  (unsigned long long)r.plans[m].shortage);
            fleet_result_free(&r);
        }
        fleet_workloads_free(&ws);
    }
    print_message("planted lists: %d lists, %d plans beyond the fleet\n", lists, beyond);
    assert_int_equal(beyond, 0);
}

/* The shapes of the large lists: memory and compute ranges; 30% strict, 30% normal, 40%
 * relaxed, 2% untrusted. */
static const struct {
    const char *what;
    uint32_t mem_lo, mem_hi, bp_lo, bp_hi;
} shapes[] = {
    {"small notebooks", 1024, 8192, 100, 800},
    {"memory-heavy", 8192, 30000, 100, 1000},
    {"compute-heavy", 1024, 6000, 1000, 3000},
    {"mixed", 1024, 40000, 100, 4000},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* 20,000 workloads of shape s planned on f (with assignments, checked against the rules). */
static void plan_shape(const struct fleet *f, size_t s, struct fleet_workloads *ws,
                       struct fleet_result *r)
{
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    memset(ws, 0, sizeof(*ws));
    for (int i = 0; i < 20000; i++) {
        uint32_t kind = rng() % 100;
        add(ws, shapes[s].mem_lo + rng() % (shapes[s].mem_hi - shapes[s].mem_lo),
            shapes[s].bp_lo + rng() % (shapes[s].bp_hi - shapes[s].bp_lo),
            kind < 30 ? FLEET_LAT_STRICT : kind < 60 ? FLEET_LAT_NORMAL : FLEET_LAT_RELAXED,
            kind < 2 ? FLEET_UNTRUSTED : FLEET_TRUSTED);
    }
    assert_int_equal(fleet_plan_all(f, ws, &o, r), 0);
    check_rules(f, ws, r, &o);
}

/* MIG: a workload may always take a whole GPU (of a model MIG does not partition, or a 7g
 * profile), so the MIG plan never costs more than whole GPUs, and more GPUs of a pool never
 * make it dearer. The cost program's fractions, rounded, bought an H100 ($2.49) for a 1g.10gb
 * and a 2g.20gb that two L4s ($1.60) hold: $8.09 against whole GPUs' $7.20; with a fourth L4,
 * five 3g.40gb workloads took four L4s and an H100 holding one of them ($5.69) where three L4s
 * and an H100 holding two cost $4.89. On 200 random lists of 3 to 20 workloads, 37 plans cost
 * more than whole GPUs, one of them 117% above the cost bound. */
static double mig_cost(const char *spec, const struct fleet_workloads *ws, double *whole)
{
    struct fleet f = fleet_of(spec);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, ws, &o, &r), 0);
    check_rules(&f, ws, &r, &o);
    double cost = r.plans[FLEET_MIG].cost_per_hour;
    if (whole)
        *whole = r.plans[FLEET_WHOLE].cost_per_hour;
    if (r.plans[FLEET_MIG].shortage || r.plans[FLEET_WHOLE].shortage)
        cost = -1;
    fleet_result_free(&r);
    return cost;
}

static void test_mig_never_dearer(void **state)
{
    struct fleet_workloads ws;
    char err[256];
    assert_int_equal(parse("name,memory,compute,latency,trust\n"
                           "w0,1GiB,3%,strict,trusted\nw1,8GiB,41%,relaxed,trusted\n"
                           "w2,14GiB,31%,normal,trusted\nw3,10GiB,46%,strict,trusted\n"
                           "w4,14GiB,36%,relaxed,trusted\nw5,10GiB,49%,relaxed,trusted\n"
                           "w6,1GiB,38%,normal,untrusted\nw7,1GiB,22%,strict,trusted\n"
                           "w8,14GiB,43%,normal,trusted\n",
                           &ws, err, sizeof(err)), 0);
    double whole, mig = mig_cost("H100-80GB@2.49,L4@0.8", &ws, &whole);
    if (mig > whole + 1e-9)
        fail_msg("MIG $%.2f/h above whole GPUs' $%.2f/h", mig, whole);
    fleet_workloads_free(&ws);

    assert_int_equal(parse("name,memory,compute,latency,trust,count\n"
                           "w,8GiB,30,strict,trusted,3\nu,20GiB,10,relaxed,untrusted,2\n",
                           &ws, err, sizeof(err)), 0);
    double three = mig_cost("H100-80GB:4@2.49,L4:3@0.8", &ws, NULL);
    double four = mig_cost("H100-80GB:4@2.49,L4:4@0.8", &ws, NULL);
    if (four > three + 1e-9)
        fail_msg("MIG on a fourth L4: $%.2f/h, on three $%.2f/h", four, three);
    fleet_workloads_free(&ws);

    rng_state = 0xD1B54A32D192ED03ULL; /* rng_keep restores the generator after */
    int dearer = 0, rounds = SANITIZED ? 60 : 200;
    for (int round = 0; round < rounds; round++) {
        memset(&ws, 0, sizeof(ws));
        int n = 3 + (int)(rng() % 18);
        for (int i = 0; i < n; i++)
            add(&ws, (1 + rng() % 20) * 1024, 100 * (1 + rng() % 50), (int)(rng() % 3),
                rng() % 8 ? FLEET_TRUSTED : FLEET_UNTRUSTED);
        mig = mig_cost("H100-80GB@2.49,L4@0.8", &ws, &whole);
        if (mig > whole + 1e-9 && !dearer++)
            print_message("round %d: MIG $%.2f/h, whole GPUs $%.2f/h\n", round, mig, whole);
        fleet_workloads_free(&ws);
    }
    if (dearer)
        fail_msg("MIG dearer than whole GPUs on %d of %d lists", dearer, rounds);
}

/* Every plan under stricter rules is one under looser rules: a time-sliced GPU is an MPS and a
 * carve GPU, an MPS GPU a carve GPU, a whole GPU each any plan. So carve slices never cost
 * more than MPS, MPS than time-slicing, any than whole GPUs. On L4 + T4 carve's packing took
 * $6.55 for a list that MPS packed for $6.45 (4 of the first 25 random seeds). */
static void check_looser(const struct fleet *f, const struct fleet_workloads *ws, const char *what)
{
    static const int chain[][2] = {{FLEET_WHOLE, FLEET_TIMESLICE}, {FLEET_TIMESLICE, FLEET_MPS},
                                   {FLEET_MPS, FLEET_CARVE}, {FLEET_WHOLE, FLEET_MIG}};
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true;
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(f, ws, &o, &r), 0);
    check_rules(f, ws, &r, &o);
    for (size_t k = 0; k < sizeof(chain) / sizeof(chain[0]); k++) {
        const struct fleet_plan *a = &r.plans[chain[k][0]], *b = &r.plans[chain[k][1]];
        if (!b->available || a->shortage != b->shortage)
            continue;
        if (b->cost_per_hour > a->cost_per_hour + 1e-9)
            fail_msg("%s: %s $%.2f/h above %s's $%.2f/h", what, fleet_mech_name(b->mech),
                     b->cost_per_hour, fleet_mech_name(a->mech), a->cost_per_hour);
    }
    fleet_result_free(&r);
}

static void test_looser_never_dearer(void **state)
{
    struct fleet_workloads ws;
    char err[256];
    assert_int_equal(parse("name,memory,compute,latency,trust\n"
                           "w0,2GiB,2%,relaxed,trusted\n"
                           "w1,14GiB,34%,normal,trusted\n"
                           "w2,5GiB,18%,normal,trusted\n"
                           "w3,20GiB,58%,strict,trusted\n"
                           "w4,20GiB,27%,strict,trusted\n"
                           "w5,14GiB,23%,strict,trusted\n"
                           "w6,1GiB,38%,normal,trusted\n"
                           "w7,5GiB,48%,normal,trusted\n"
                           "w8,10GiB,37%,normal,trusted\n"
                           "w9,10GiB,37%,strict,trusted\n"
                           "w10,3GiB,46%,normal,trusted\n"
                           "w11,20GiB,44%,relaxed,trusted\n"
                           "w12,3GiB,35%,normal,trusted\n"
                           "w13,5GiB,38%,strict,trusted\n"
                           "w14,14GiB,3%,relaxed,trusted\n"
                           "w15,7GiB,53%,relaxed,trusted\n"
                           "w16,10GiB,58%,normal,trusted\n"
                           "w17,20GiB,36%,strict,trusted\n"
                           "w18,2GiB,40%,strict,trusted\n"
                           "w19,20GiB,16%,normal,trusted\n"
                           "w20,2GiB,25%,strict,trusted\n"
                           "w21,1GiB,4%,relaxed,trusted\n",
                           &ws, err, sizeof(err)), 0);
    struct fleet f = fleet_of("L4@0.8,T4@0.35");
    check_looser(&f, &ws, "22 workloads on L4 + T4");
    fleet_workloads_free(&ws);
    rng_state = 0x94D049BB133111EBULL; /* rng_keep restores the generator after */
    static const char *const fleets[] = {"L4@0.8,T4@0.35", "H100-80GB@2.49,L4@0.8",
                                         "A100-80GB:4@3.5,L4:6@0.8,T4:4@0.35"};
    for (int round = 0; round < (SANITIZED ? 50 : 150); round++) { /* 16 s under ASan */
        memset(&ws, 0, sizeof(ws));
        int n = 5 + (int)(rng() % 21);
        for (int i = 0; i < n; i++)
            add(&ws, (1 + rng() % 20) * 1024, 100 * (1 + rng() % 60), (int)(rng() % 3),
                rng() % 10 ? FLEET_TRUSTED : FLEET_UNTRUSTED);
        char what[64];
        snprintf(what, sizeof(what), "round %d on %s", round, fleets[round % 3]);
        f = fleet_of(fleets[round % 3]);
        check_looser(&f, &ws, what);
        fleet_workloads_free(&ws);
    }
}

/* The generator as plan_shape leaves it (three draws a workload), without the planning: the
 * lists drawn after are the same. */
static void skip_shape(void)
{
    for (int i = 0; i < 3 * 20000; i++)
        rng();
}

/* Large lists of several shapes: every plan within 2% of its lower bound. */
static void test_large_within_two_percent(void **state)
{
    struct fleet f = fleet_of("H100-80GB:2000@2.49");
    for (size_t s = 0; s < NSHAPES; s++) {
        struct fleet_workloads ws;
        struct fleet_result r;
        plan_shape(&f, s, &ws, &r);
        for (int m = 0; m < FLEET_NMECH; m++) {
            const struct fleet_plan *p = &r.plans[m];
            double gap = 100.0 * ((double)p->gpus - (double)p->lower_bound) / (double)p->lower_bound;
            print_message("%-15s %-13s %6llu GPUs, bound %6llu, gap %.2f%%\n", shapes[s].what,
                          fleet_mech_name(m), (unsigned long long)p->gpus,
                          (unsigned long long)p->lower_bound, gap);
            if (gap > 2.0)
                fail_msg("%s, %s: %llu GPUs, bound %llu: gap %.2f%% > 2%%", shapes[s].what,
                         fleet_mech_name(m), (unsigned long long)p->gpus,
                         (unsigned long long)p->lower_bound, gap);
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
}

/* Small GPUs where memory and compute both bind: compute-heavy workloads (a fifth of a T4 in
 * each) on one T4 pool, where first-fit decreasing alone was 6-7% above the bound and filling
 * one GPU at a time brings it under 2%. */
static void test_small_gpus_within_two_percent(void **state)
{
    static const char *const small_fleets[] = {"T4:10000@0.35", "L4:10000@0.80"};
    for (size_t fl = 0; fl < sizeof(small_fleets) / sizeof(small_fleets[0]); fl++) {
        struct fleet f = fleet_of(small_fleets[fl]);
        struct fleet_workloads ws;
        struct fleet_result r;
        plan_shape(&f, 2, &ws, &r);
        for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
            const struct fleet_plan *p = &r.plans[m];
            if (!p->available)
                continue;
            double gap = 100.0 * ((double)p->gpus - (double)p->lower_bound) / (double)p->lower_bound;
            double ceiling = 2.0; /* MPS and carve on an L4 were 2.1-2.3% before a pair
                                     could replace a GPU's last workload, 0.4% since */
            print_message("%s compute-heavy %-13s %6llu GPUs, bound %6llu, gap %.2f%%\n",
                          small_fleets[fl], fleet_mech_name(m), (unsigned long long)p->gpus,
                          (unsigned long long)p->lower_bound, gap);
            if (gap > ceiling)
                fail_msg("%s, %s: gap %.2f%% > %.1f%%", small_fleets[fl], fleet_mech_name(m), gap,
                         ceiling);
        }
        fleet_result_free(&r);
        fleet_workloads_free(&ws);
    }
}

/* Mixed fleets: the large shapes on three fleets of several priced models, every plan within
 * the fleet within 2% of its cost bound. (Memory-heavy carve slices and time-slicing on
 * H100:3000 + L4 were above it, at 4.7-4.8% and 1.9-2.0%, until the limited H100s' GPUs were
 * filled exactly, pack_by_band_exact: docs/results/2026-11-23-plan-bench-mixed.md.) */
/* Under AddressSanitizer, where this test took half of this file's 16 s, shape s is planned
 * on fleet s % 3 only: every fleet and every shape, whole (a shorter list is a different test:
 * 5,000 of each were 3.3% above the bound), in a third of the time. The gcc and clang builds
 * plan all twelve. */
#define MIXED_SOME SANITIZED
static const char *const mixed_fleets[] = {
    "H100-80GB@2.49,L4:4000@0.80",
    "A100-80GB@1.80,L4:4000@0.80,T4:3000@0.35",
    "H100-80GB:3000@2.49,L4@0.80",
};

static void test_mixed_within_two_percent(void **state)
{
    for (size_t fl = 0; fl < sizeof(mixed_fleets) / sizeof(mixed_fleets[0]); fl++) {
        struct fleet f = fleet_of(mixed_fleets[fl]);
        for (size_t s = 0; s < NSHAPES; s++) {
            if (MIXED_SOME && s % 3 != fl) {
                skip_shape();
                continue;
            }
            struct fleet_workloads ws;
            struct fleet_result r;
            plan_shape(&f, s, &ws, &r);
            for (int m = 0; m < FLEET_NMECH; m++) {
                const struct fleet_plan *p = &r.plans[m];
                assert_true(p->cost_per_hour >= p->cost_lower_bound - 1e-6 || p->shortage);
                /* memory-heavy on H100:3000 + L4: the L4s, unlimited, hold every workload of
                   at most 23034 MiB and the bound's program fits the rest in the H100s, so MPS
                   and carve have a plan within the fleet. MPS went beyond it by 10 H100s (2
                   with clang's lists) from when the L4 took NVML's 23034 MiB until the group
                   packed first was held back from the H100s the other group needs
                   (fleet_pack.c, hold_back). */
                if (fl == 2 && s == 1 && (m == FLEET_MPS || m == FLEET_CARVE) && p->shortage)
                    fail_msg("%s, %s, %s: beyond the fleet by %llu GPUs", mixed_fleets[fl],
                             shapes[s].what, fleet_mech_name(m),
                             (unsigned long long)p->shortage);
                if (p->shortage) {
                    print_message("%s %-15s %-13s beyond the fleet by %llu GPUs\n",
                                  mixed_fleets[fl], shapes[s].what, fleet_mech_name(m),
                                  (unsigned long long)p->shortage);
                    continue;
                }
                double gap = 100.0 * (p->cost_per_hour - p->cost_lower_bound) / p->cost_lower_bound;
                print_message("%s %-15s %-13s $%.2f/h, bound $%.2f: gap %.2f%%\n",
                              mixed_fleets[fl], shapes[s].what, fleet_mech_name(m),
                              p->cost_per_hour, p->cost_lower_bound, gap);
                /* memory-heavy carve on H100:3000 + L4 was 4.2% (4.55% with clang's lists)
                   from when the L4 took NVML's 23034 MiB for the nominal 24576 until a
                   workload only an H100 holds could swap into the exact split's H100s
                   (fleet_fill.c, swap_in): 1.75% (1.77%) */
                if (gap > 2.0)
                    fail_msg("%s, %s, %s: gap %.2f%% > 2%%", mixed_fleets[fl], shapes[s].what,
                             fleet_mech_name(m), gap);
            }
            fleet_result_free(&r);
            fleet_workloads_free(&ws);
        }
    }
}

/* ws planned on spec: every shared plan within the fleet (MIG aside) at most ceiling percent
 * above its cost bound; what names the list in what it prints. */
static void check_mixed_gaps(const struct fleet_workloads *ws, const char *spec, const char *what,
                             double ceiling)
{
    struct fleet f = fleet_of(spec);
    struct fleet_options o;
    fleet_options_defaults(&o);
    o.keep_assignment = true; /* the local search moves tenants: each GPU still within limits */
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, ws, &o, &r), 0);
    check_rules(&f, ws, &r, &o);
    for (int m = FLEET_TIMESLICE; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r.plans[m];
        if (!p->available || m == FLEET_MIG || p->shortage)
            continue;
        double gap = 100.0 * (p->cost_per_hour - p->cost_lower_bound) / p->cost_lower_bound;
        print_message("%s %s %-13s $%.2f/h, bound $%.2f: gap %.2f%%\n", spec, what,
                      fleet_mech_name(m), p->cost_per_hour, p->cost_lower_bound, gap);
        if (gap > ceiling)
            fail_msg("%s, %s: gap %.2f%% > %.1f%%", spec, fleet_mech_name(m), gap, ceiling);
    }
    fleet_result_free(&r);
}

/* Compute-heavy random lists (1-60% of a GPU each, 1-20 GiB, a tenth untrusted) on mixed
 * fleets of small GPUs, where the packing's pools followed the bound's fractions and the
 * cheapest pool per workload at the group's average: MPS on L4:4000 + T4:2000 was 5.0% above
 * the cost bound (60 L4s held only workloads a T4 holds for less), carve on A100 + L4 3.6%.
 * Then 2.8% and 2.2% at most, 2.9% and 4.1% since the L4 has NVML's 23034 MiB, which these
 * workloads of whole GiB fill to 22528 at most: with the bound on that (fleet_most_held),
 * 2.4% on both (2.0% and 1.6% with clang's lists). On A100 + L4 the order largest first
 * weighed memory against the A100's, which no plan buys here: 1.6% (0.9%) in the L4's
 * (fleet_pack.c, group_scale), 1.2% with the A100's sets of sizes in the bound
 * (fleet_pattern.c). On L4 + T4 the bound's program filled each T4 with whatever
 * was left, where only so many 1 GiB workloads fill beside the 14s: by the sets of sizes each
 * GPU holds (fleet_pattern.c), 1.0% (1.3%); 0.7% (0.9%) with the smallest GPUs opened first. */
static void test_mixed_compute_heavy(void **state)
{
    static const uint64_t sizes[] = {1, 2, 3, 5, 7, 10, 14, 20};
    static const struct {
        const char *spec;
        double ceiling;
    } fleets[] = {{"L4:4000@0.8,T4:2000@0.35", 1.1}, {"A100-80GB@3.5,L4@0.8", 1.4}};
    rng_state = 0xBF58476D1CE4E5B9ULL; /* rng_keep restores the generator after */
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 2500; i++)
        add(&ws, sizes[rng() % 8] * 1024, 100 * (1 + rng() % 60), (int)(rng() % 3),
            rng() % 10 ? FLEET_TRUSTED : FLEET_UNTRUSTED);
    for (size_t fl = 0; fl < sizeof(fleets) / sizeof(fleets[0]); fl++)
        check_mixed_gaps(&ws, fleets[fl].spec, "compute-heavy", fleets[fl].ceiling);
    fleet_workloads_free(&ws);
}

/* The same kind of list with workloads of 30 and 45 GiB too, which only an A100 holds, on three
 * pools: the budgets' GPUs were opened largest first, so small workloads of much compute opened
 * A100s ($3.50 for the compute a T4 has at $0.35) and the 30s and 45s then needed more of them:
 * MPS and carve 6.1% above the cost bound here, MPS 4.2% on A100 + L4. A group more than 1%
 * above its solution is also packed with the smallest GPU opened first: 2.8% and 2.0% at most
 * (time-slicing 3.4% -> 1.6%). And the bound by the sets of sizes each GPU holds took the
 * A100's from too many sets to its sets of the largest sizes, the rest in bulk (45 + 30 GiB
 * leave 5, which no 20 fills): 1.3% and 1.9%. The packers leave most L4s a GiB or two short of
 * the 22 they hold and A100s with 5 GiB no one uses beside a 45 and a 30 whose compute fills
 * them; the local search of fleet_polish.c gathers that room until GPUs empty: MPS on A100 + L4
 * 1.93% -> 1.31%, carve 1.54% -> 1.05% (the reviewer's r.csv, a list of this kind: MPS 2.03% ->
 * 1.32%). Under AddressSanitizer the three pools only. */
static void test_mixed_three_pools(void **state)
{
    static const uint64_t sizes[] = {1, 2, 3, 5, 7, 10, 14, 20, 30, 45};
    static const struct {
        const char *spec;
        double ceiling;
    } fleets[] = {{"A100-80GB:3000@3.5,L4:4000@0.8,T4:2000@0.35", 1.6},
                  {"A100-80GB@3.5,L4@0.8", 1.6}};
    rng_state = 0x94D049BB133111EBULL; /* rng_keep restores the generator after */
    struct fleet_workloads ws = {0};
    for (int i = 0; i < 3000; i++) {
        uint64_t mib = sizes[rng() % 10] * 1024;
        uint32_t bp = 100 * (1 + rng() % 60);
        int lat = (int)(rng() % 3);
        add(&ws, mib, bp, lat, rng() % 10 ? FLEET_TRUSTED : FLEET_UNTRUSTED);
    }
    for (size_t fl = 0; fl < (MIXED_SOME ? 1 : sizeof(fleets) / sizeof(fleets[0])); fl++)
        check_mixed_gaps(&ws, fleets[fl].spec, "up to 45 GiB", fleets[fl].ceiling);
    fleet_workloads_free(&ws);
}

/* n workloads of the benchmark's list (bench/plan_synth.h) from seed. */
static struct fleet_workloads synth_list(uint64_t seed, size_t n)
{
    struct fleet_workloads ws = {0};
    plan_synth_seed(seed);
    for (size_t i = 0; i < n; i++) {
        struct fleet_workload w;
        plan_synth(&w, i);
        add(&ws, w.memory_mib, w.compute_bp, w.latency, w.trust);
    }
    return ws;
}

/* The benchmark's list (bench/plan_synth.h), 5,000 workloads on a twentieth of its fleet. MPS's
 * cost bound program read as having no purchase within the pools' counts, though the plan is
 * one (the simplex drifted, in rounding, to a basis that reads as singular), so the bound
 * lifted the counts: $778.49, 36.8% below the plan, where CBC solves the program at $1057.45.
 * Read so, it is solved again with the prices perturbed (fleet_lp.c, LP_PERTURB): 0.73%. */
static void test_bound_degenerate(void **state)
{
    struct fleet_workloads ws = synth_list(1, 5000);
    check_mixed_gaps(&ws, "H100-80GB:300@2.49,L4:400@0.80,T4:100@0.35", "benchmark's", 1.0);
    fleet_workloads_free(&ws);
}

/* A branch of the whole-GPU bound's search that the simplex read as having no purchase in it,
 * though it has one (the same drift as above), was dropped: on 200 of the benchmark's
 * workloads (seed 3) on H100:60 + L4:200 + T4:60 the time-slicing bound was $42.71, above a
 * plan of $42.52 that CBC found and a review checked (8 H100s, 2 L4s and 16 T4s for the 156
 * workloads that share, a T4 for each of the other 44). Such a branch is read once more with
 * the prices perturbed, and dropped only if it still has no solution: $42.43. */
static void test_bound_branch_misread(void **state)
{
    struct fleet_workloads ws = synth_list(3, 200);
    struct fleet f = fleet_of("H100-80GB:60@2.49,L4:200@0.80,T4:60@0.35");
    struct fleet_options o;
    fleet_options_defaults(&o);
    struct fleet_result r;
    assert_int_equal(fleet_plan_all(&f, &ws, &o, &r), 0);
    double bound = r.plans[FLEET_TIMESLICE].cost_lower_bound;
    if (!(bound <= 42.52))
        fail_msg("time-slicing's cost bound $%.2f is above a plan of $42.52", bound);
    fleet_result_free(&r);
    fleet_workloads_free(&ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_accepted),
        cmocka_unit_test(test_spec_rejected),
        cmocka_unit_test(test_csv_accepted),
        cmocka_unit_test(test_json_accepted),
        cmocka_unit_test(test_workloads_rejected),
        cmocka_unit_test(test_report_no_negative_zero),
        cmocka_unit_test_setup_teardown(test_threads_same_plans, rng_keep, rng_give_back),
        cmocka_unit_test(test_exact_small),
        cmocka_unit_test(test_rules_and_impossible),
        cmocka_unit_test(test_lone_order),
        cmocka_unit_test(test_no_mig_pool),
        cmocka_unit_test(test_beyond_mixed),
        cmocka_unit_test_setup_teardown(test_within_fleet_when_possible, rng_keep, rng_give_back),
        cmocka_unit_test_setup_teardown(test_within_fleet_planted, rng_keep, rng_give_back),
        cmocka_unit_test_setup_teardown(test_mig_never_dearer, rng_keep, rng_give_back),
        cmocka_unit_test_setup_teardown(test_looser_never_dearer, rng_keep, rng_give_back),
        cmocka_unit_test_setup_teardown(test_mixed_compute_heavy, rng_keep, rng_give_back),
        cmocka_unit_test_setup_teardown(test_mixed_three_pools, rng_keep, rng_give_back),
        cmocka_unit_test(test_bound_whole_counts),
        cmocka_unit_test(test_bound_held_memory),
        cmocka_unit_test(test_bound_patterns),
        cmocka_unit_test(test_bound_degenerate),
        cmocka_unit_test(test_bound_branch_misread),
        cmocka_unit_test(test_bound_below_optimum),
        cmocka_unit_test(test_large_within_two_percent),
        cmocka_unit_test(test_cost_bound_below_optimum),
        cmocka_unit_test(test_short_list_proved),
        cmocka_unit_test(test_two_pools_proved),
        cmocka_unit_test(test_toward_bound),
        cmocka_unit_test(test_mig_whole_bound),
        cmocka_unit_test(test_whole_pools),
        cmocka_unit_test(test_whole_pools_empty_set),
        cmocka_unit_test(test_beyond_counted),
        cmocka_unit_test(test_past_64),
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_dive_budget),
        cmocka_unit_test(test_by_parts),
        cmocka_unit_test(test_simplex),
        cmocka_unit_test(test_first_fit_leftmost),
        cmocka_unit_test_setup_teardown(test_dozens_bound, rng_keep, rng_give_back),
        cmocka_unit_test(test_mixed_within_two_percent),
        cmocka_unit_test(test_mig_cost_bound_below_optimum), /* restores the generator */
        cmocka_unit_test(test_small_gpus_within_two_percent), /* last: the lists above stay as measured */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
