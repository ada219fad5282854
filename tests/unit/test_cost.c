/* test_cost.c - the GPU economics calculator: the seed article's worked example to the cent
 * (10 A100 at $3.50/h, 4 tenants at 25%, time-slicing: $0.95, $3.50, -73%, 180 GPU-hours a
 * day, suitable), each mechanism's limits, the hardware gate and the GPU models it knows,
 * oversubscription, bad input,
 * and a set-up measured from a carved snapshot (tests/unit/fixtures/carved-state.json). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cost.h"

static const struct cost_input article = {.gpus = 10, .price = 3.50, .tenants = 4,
                                          .utilisation = 0.25, .gpu = "A100"};

/* What the article's calculator shows: money to the cent, percent and hours whole. */
static void assert_shown(double value, const char *fmt, const char *want)
{
    char buf[32];
    snprintf(buf, sizeof(buf), fmt, value);
    if (strcmp(buf, want) != 0)
        fail_msg("shown as %s, the article shows %s (%.6f)", buf, want, value);
}

static void test_article_example(void **state)
{
    char err[256];
    struct cost_result r;
    assert_int_equal(cost_check(&article, err, sizeof(err)), 0);
    cost_compute(&article, COST_TIMESLICE, &r);
    assert_shown(r.cost_per_workload_hour, "$%.2f", "$0.95");
    assert_shown(r.baseline_per_hour, "$%.2f", "$3.50");
    assert_shown(r.savings_pct, "%.0f%%", "-73%");
    assert_shown(r.recovered_gpu_hours_day, "%.0f", "180");
    assert_true(r.suitable);
    assert_non_null(strstr(r.verdict, "Time-slicing \u2014 suitable for this configuration"));
    assert_non_null(strstr(r.verdict, "Avoid for online inference (high P99 jitter)"));
    /* and the exact values behind them */
    assert_true(r.cost_per_workload_hour > 3.5 / 3.68 - 1e-9 &&
                r.cost_per_workload_hour < 3.5 / 3.68 + 1e-9);
    assert_true(r.recovered_gpu_hours_day > 180 - 1e-9 && r.recovered_gpu_hours_day < 180 + 1e-9);
    /* GPUs are whole: 10 workloads 4 to a GPU need 3 (they showed 2.5) */
    assert_true(r.gpus_needed == 3);
}

static void test_mechanisms(void **state)
{
    struct cost_result r;
    assert_int_equal(cost_mech_find("time-slicing"), COST_TIMESLICE);
    assert_int_equal(cost_mech_find("timeslice"), COST_TIMESLICE); /* carve run --mode's name */
    assert_int_equal(cost_mech_find("vgpu"), -1);
    cost_compute(&article, COST_MPS, &r); /* no switching loss */
    assert_shown(r.cost_per_workload_hour, "$%.2f", "$0.88");
    assert_true(r.suitable);
    /* MIG: a tenant busy 25% needs 2 of 7 compute slices, so 3 fit, not 4 */
    cost_compute(&article, COST_MIG, &r);
    assert_int_equal((int)r.tenants_hosted, 3);
    assert_shown(r.cost_per_workload_hour, "$%.2f", "$1.17");
    assert_shown(r.recovered_gpu_hours_day, "%.0f", "160");
    assert_non_null(strstr(r.verdict, "fits only 3 of 4"));
    assert_false(r.suitable); /* a mechanism that leaves a tenant out does not suit */
    /* one tenant alone: the baseline, nothing recovered */
    struct cost_input one = article;
    one.tenants = 1;
    cost_compute(&one, COST_TIMESLICE, &r);
    assert_shown(r.cost_per_workload_hour, "$%.2f", "$3.50");
    assert_shown(r.recovered_gpu_hours_day, "%.0f", "0");
    /* MPS takes 48 clients at most */
    struct cost_input many = article;
    many.tenants = 64;
    many.utilisation = 0.01;
    cost_compute(&many, COST_MPS, &r);
    assert_int_equal((int)r.tenants_hosted, 48);
    cost_compute(&many, COST_CARVE, &r);
    assert_int_equal((int)r.tenants_hosted, 64);
}

/* MIG hands out real profiles: a tenant busy 60% or 80% of the GPU needs more than 4 of its 7
   compute slices, and no GPU has a 5g or 6g profile, so it takes the 7g, one per GPU. A
   mechanism that hosts fewer tenants than asked for does not suit, whichever it is. */
static void test_mig_profiles_and_suits(void **state)
{
    static const struct {
        double u;
        const char *gpu, *profile;
        int hosted;
    } cases[] = {
        {0.60, "A100", "a 7g profile (7 of 7", 1}, {0.80, "H100", "a 7g profile (7 of 7", 1},
        {0.60, "B200", "a 7g profile (7 of 7", 1}, {0.50, "H200", "a 4g profile (4 of 7", 1},
        {0.40, "A100-80GB", "a 3g profile (3 of 7", 2}, {0.10, "A100", "a 1g profile (1 of 7", 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cost_input in = article;
        struct cost_result r;
        in.tenants = 2;
        in.utilisation = cases[i].u;
        in.gpu = cases[i].gpu;
        cost_compute(&in, COST_MIG, &r);
        if ((int)r.tenants_hosted != cases[i].hosted ||
            (cases[i].hosted < 2 && !strstr(r.verdict, cases[i].profile)))
            fail_msg("%s at %.0f%%: hosted %.0f, want %d: %s", cases[i].gpu, cases[i].u * 100,
                     r.tenants_hosted, cases[i].hosted, r.verdict);
        if (r.suitable != (cases[i].hosted == 2))
            fail_msg("%s at %.0f%%: suitable %d: %s", cases[i].gpu, cases[i].u * 100,
                     r.suitable, r.verdict);
    }
    /* 2 tenants at 60%: every mechanism hosts one of them, and none suits */
    struct cost_input two = article;
    two.tenants = 2;
    two.utilisation = 0.60;
    for (int mech = 0; mech < COST_NMECH; mech++) {
        struct cost_result r;
        cost_compute(&two, mech, &r);
        assert_int_equal((int)r.tenants_hosted, 1);
        if (r.suitable)
            fail_msg("%s suits 2 tenants at 60%%: %s", cost_mech(mech)->name, r.verdict);
    }
    /* MPS's 48 clients leave 2 of 50 out: not suitable either */
    struct cost_input many = article;
    many.tenants = 50;
    many.utilisation = 0.01;
    struct cost_result r;
    cost_compute(&many, COST_MPS, &r);
    assert_false(r.suitable);
    assert_non_null(strstr(r.verdict, "fits only 48 of 50"));
}

/* 3 GPUs of one workload each, time-slicing 4 to a GPU: 1 GPU, not "0.8 of 3"; the JSON
   says the same whole number */
static void test_gpus_needed_whole(void **state)
{
    static const struct {
        double gpus, tenants;
        int want;
    } cases[] = {{3, 4, 1}, {10, 4, 3}, {8, 4, 2}, {1, 64, 1}, {10000000, 3, 3333334}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cost_input in = article;
        struct cost_result r;
        in.gpus = cases[i].gpus;
        in.tenants = cases[i].tenants;
        in.utilisation = 0.01;
        cost_compute(&in, COST_TIMESLICE, &r);
        if (r.gpus_needed != cases[i].want)
            fail_msg("%.0f GPUs, %.0f to a GPU: %.10g GPUs needed, want %d", cases[i].gpus,
                     cases[i].tenants, r.gpus_needed, cases[i].want);
        json_t *j = cost_result_json(&r);
        json_t *n = json_object_get(j, "gpus_needed");
        if (!json_is_integer(n) || json_integer_value(n) != cases[i].want)
            fail_msg("JSON gpus_needed %.10g, want %d", json_number_value(n), cases[i].want);
        json_decref(j);
    }
}

static void test_gate_and_oversubscription(void **state)
{
    struct cost_result r;
    struct cost_input t4 = article;
    t4.gpu = "Tesla T4";
    cost_compute(&t4, COST_MIG, &r);
    assert_false(r.suitable);
    assert_non_null(strstr(r.verdict, "not available on Tesla T4"));
    /* and no figures: a saving on a GPU without MIG would read as one it could have. The
       JSON keeps the keys (null) and says why */
    json_t *j = cost_result_json(&r);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "available")));
    assert_true(json_is_null(json_object_get(j, "savings_pct")));
    assert_true(json_is_null(json_object_get(j, "cost_per_workload_hour")));
    assert_true(json_is_null(json_object_get(j, "tenants_hosted")));
    assert_true(json_is_null(json_object_get(j, "gpu_hours_recovered_per_day")));
    const char *why = json_string_value(json_object_get(j, "unavailable_reason"));
    if (!why || !strstr(why, "Tesla T4 has no MIG"))
        fail_msg("unavailable_reason: %s", why ? why : "(none)");
    json_decref(j);
    cost_compute(&t4, COST_TIMESLICE, &r);
    assert_true(r.suitable);
    j = cost_result_json(&r);
    assert_true(json_is_true(json_object_get(j, "available")));
    json_decref(j);
    struct cost_input busy = article;
    busy.utilisation = 0.40; /* 4 x 40% = 160% of a GPU */
    cost_compute(&busy, COST_TIMESLICE, &r);
    assert_false(r.suitable);
    assert_non_null(strstr(r.verdict, "ask for 160% of one GPU"));
    /* the figures are for the 2 that fit a GPU, not the 4 asked for: packing 2 busy 40%
       each recovers 10 x 24 x (1 - 1/2) GPU-hours a day, at $3.50 / (2 x 0.92) */
    assert_non_null(strstr(r.verdict, "The figures are for the 2 per GPU that fit"));
    assert_int_equal((int)r.tenants_hosted, 2);
    assert_shown(r.recovered_gpu_hours_day, "%.0f", "120");
    assert_shown(r.cost_per_workload_hour, "%.2f", "1.90");
    /* tenants that each fill a GPU save nothing (they showed -73% and 0 GPU-hours back) */
    busy.utilisation = 1.0;
    for (int mech = 0; mech < COST_NMECH; mech++) {
        cost_compute(&busy, mech, &r);
        assert_int_equal((int)r.tenants_hosted, 1);
        assert_shown(r.savings_pct, "%.0f", "0");
        assert_shown(r.recovered_gpu_hours_day, "%.0f", "0");
    }
}

/* The model decides MIG's gate only; carve knows it by family, board or NVML's name, and
   refuses a name it does not know rather than take it for a GPU without MIG. */
static void test_gpu_models(void **state)
{
    static const struct {
        const char *name;
        int mig; /* cost_gpu_mig: 1, 0, -1 unknown */
    } cases[] = {
        {"A100", 1}, {"h100", 1}, {"H100-80GB", 1}, {"NVIDIA H100 80GB HBM3", 1},
        {"NVIDIA A100-SXM4-80GB", 1}, {"NVIDIA H100 NVL", 1}, {"B200", 1}, {"H200", 1},
        {"L4", 0}, {"Tesla T4", 0}, {"NVIDIA L40S", 0}, {"V100-32GB", 0}, {"A10", 0},
        /* names that only contain a family: not that GPU */
        {"foo", -1}, {"H20", -1}, {"NVIDIA H20", -1}, {"RTX A1000", -1}, {"GH200", -1},
        {"A1000", -1}, {"", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        if (cost_gpu_mig(cases[i].name) != cases[i].mig)
            fail_msg("%s: MIG %d, want %d", cases[i].name, cost_gpu_mig(cases[i].name),
                     cases[i].mig);
        assert_int_equal(cost_gpu_check(cases[i].name, err, sizeof(err)),
                         cases[i].mig < 0 ? -EINVAL : 0);
        if (cases[i].mig < 0 && !strstr(err, "is not one carve knows: T4, V100, A10, L4, L40S, "
                                              "A100, H100, H200, B200"))
            fail_msg("%s: %s", cases[i].name, err);
    }
    /* a model carved measured and carve does not know: MIG unavailable, and why */
    struct cost_input h20 = article;
    h20.gpu = "NVIDIA H20";
    struct cost_result r;
    cost_compute(&h20, COST_MIG, &r);
    assert_false(r.available);
    assert_non_null(strstr(r.unavailable_reason, "carve does not know whether NVIDIA H20 has MIG"));
    cost_compute(&h20, COST_MPS, &r);
    assert_true(r.available);
}

static void test_rejected(void **state)
{
    static const struct {
        struct cost_input in;
        const char *why;
    } cases[] = {
        {{0, 3.5, 4, 0.25, NULL}, "GPUs 0 is not a whole number"},
        {{2.5, 3.5, 4, 0.25, NULL}, "GPUs 2.5"},
        {{10, -1, 4, 0.25, NULL}, "price -1"},
        {{10, 3.5, 0, 0.25, NULL}, "tenants per GPU 0"},
        {{10, 3.5, 65, 0.25, NULL}, "tenants per GPU 65"},
        {{10, 3.5, 4, 0, NULL}, "utilisation 0%"},
        {{10, 3.5, 4, 1.5, NULL}, "utilisation 150%"},
        /* just beyond a limit: the number as given, not rounded onto the limit by %g */
        {{10, 3.5, 4, 1.000001, NULL}, "utilisation 100.0001%"},
        {{10000000.5, 3.5, 4, 0.25, NULL}, "GPUs 10000000.5 is not"},
        {{10, 3.5, 1.0000001, 0.25, NULL}, "tenants per GPU 1.0000001 is not"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        assert_int_equal(cost_check(&cases[i].in, err, sizeof(err)), -EINVAL);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu: `%s' lacks `%s'", i, err, cases[i].why);
    }
}

static void test_from_snapshot(void **state)
{
    json_error_t jerr;
    json_t *snap = json_load_file(COST_FIXTURE, 0, &jerr);
    if (!snap)
        fail_msg("%s: %s", COST_FIXTURE, jerr.text);
    struct cost_measured m;
    char err[256] = "";
    if (cost_from_snapshot(snap, &m, err, sizeof(err)))
        fail_msg("%s", err);
    /* 3 slices with processes (the empty one does not count) on 2 GPUs; shares 20, 30, 10 */
    assert_int_equal(m.ntenants, 3);
    assert_true(m.gpus == 2);
    assert_true(m.tenants > 1.5 - 1e-9 && m.tenants < 1.5 + 1e-9);
    assert_true(m.utilisation > 0.20 - 1e-9 && m.utilisation < 0.20 + 1e-9);
    assert_string_equal(m.gpu, "NVIDIA H100 80GB HBM3");
    /* a name longer than m.gpu is cut before a character, not inside it (the JSON needs UTF-8):
     * 12 bytes, then two-byte characters, so byte 63 is the first half of one */
    json_t *gpu0 = json_array_get(json_object_get(snap, "gpus"), 0), *name = json_object_get(gpu0, "name");
    json_incref(name);
    char longname[128] = "NVIDIA H100 ";
    for (int i = 0; i < 40; i++)
        strcat(longname, "\xc3\xa9");
    json_object_set_new(gpu0, "name", json_string(longname));
    assert_int_equal(cost_from_snapshot(snap, &m, err, sizeof(err)), 0);
    assert_int_equal(strlen(m.gpu), 12 + 2 * 25);
    json_t *utf8 = json_string(m.gpu);
    assert_non_null(utf8);
    json_decref(utf8);
    json_object_set_new(gpu0, "name", name);
    /* without slices: the processes' SM utilisation */
    json_object_set_new(snap, "slices", json_array());
    assert_int_equal(cost_from_snapshot(snap, &m, err, sizeof(err)), 0);
    assert_int_equal(m.ntenants, 3);
    assert_non_null(strstr(m.source, "SM utilisation"));
    /* nothing running: an error that says so */
    json_array_clear(json_object_get(json_array_get(json_object_get(snap, "gpus"), 0), "processes"));
    json_array_clear(json_object_get(json_array_get(json_object_get(snap, "gpus"), 1), "processes"));
    assert_int_equal(cost_from_snapshot(snap, &m, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no process on any of its 2 GPUs"));
    json_object_set_new(snap, "version", json_integer(7));
    assert_int_equal(cost_from_snapshot(snap, &m, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "version 7"));
    json_decref(snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_article_example),
        cmocka_unit_test(test_mechanisms),
        cmocka_unit_test(test_mig_profiles_and_suits),
        cmocka_unit_test(test_gpus_needed_whole),
        cmocka_unit_test(test_gate_and_oversubscription),
        cmocka_unit_test(test_gpu_models),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_from_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
