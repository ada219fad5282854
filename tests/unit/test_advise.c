/* test_advise.c - the mechanism advisor: one recommendation per archetype and trust, the
 * hardware gate, and each trap case of the seed articles (time-slicing for online inference,
 * MPS or LD_PRELOAD limits for untrusted tenants, MIG on T4/L4/V100, MIG resizing, rigid MIG
 * profiles stranding memory, sharing distributed training, no memory limit under
 * time-slicing), checked both as a named trap and as a refused `--check'. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "advise.h"

static struct adv_result advise(const char *gpu, int arch, int trust, double latency_ms,
                                int check)
{
    struct adv_input in = {.gpu = gpu, .archetype = arch, .trust = trust,
                           .latency_ms = latency_ms, .proposal = check};
    struct adv_result r;
    char err[256] = "";
    if (adv_advise(&in, &r, err, sizeof(err)))
        fail_msg("%s: %s", gpu, err);
    return r;
}

static bool has_trap(const struct adv_result *r, const char *id)
{
    for (size_t i = 0; i < r->ntraps; i++)
        if (strcmp(r->traps[i].id, id) == 0)
            return true;
    return false;
}

static void test_recommendations(void **state)
{
    static const struct {
        const char *gpu;
        int arch, trust;
        double latency;
        int want;
    } cases[] = {
        {"H100", ADV_TRAINING, ADV_TEAM, 0, ADV_WHOLE},
        {"T4", ADV_TRAINING, ADV_UNTRUSTED, 0, ADV_WHOLE},
        {"H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG},
        {"A100-40GB", ADV_NOTEBOOK, ADV_UNTRUSTED, 0, ADV_MIG},
        {"B200", ADV_BATCH, ADV_UNTRUSTED, 0, ADV_MIG},
        {"T4", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_WHOLE},
        {"L4", ADV_NOTEBOOK, ADV_UNTRUSTED, 0, ADV_WHOLE},
        {"H200", ADV_INFERENCE, ADV_TEAM, 50, ADV_MIG},
        {"L4", ADV_INFERENCE, ADV_TEAM, 50, ADV_CARVE},
        {"A10", ADV_INFERENCE, ADV_TEAM, 0, ADV_MPS},
        {"V100", ADV_NOTEBOOK, ADV_TEAM, 0, ADV_CARVE},
        {"T4", ADV_BATCH, ADV_TEAM, 0, ADV_TIMESLICE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct adv_result r = advise(cases[i].gpu, cases[i].arch, cases[i].trust,
                                     cases[i].latency, -1);
        if (r.mech != cases[i].want)
            fail_msg("case %zu (%s %s): %s, want %s", i, cases[i].gpu,
                     adv_archetype_name(cases[i].arch), adv_matrix(r.mech)->name,
                     adv_matrix(cases[i].want)->name);
        assert_true(r.nreasons >= 2);
    }
}

static void test_hardware_gate(void **state)
{
    static const struct {
        const char *gpu;
        int mig; /* 1 has MIG, 0 has none, -1 carve does not know */
    } gpus[] = {{"T4", 0}, {"V100", 0}, {"A10", 0}, {"L4", 0},
                {"L40S", 0}, {"A100", 1}, {"A100-80GB", 1}, {"H100", 1},
                {"H200", 1}, {"B200", 1}, {"NVIDIA GB200", 1},
                {"NVIDIA GH200 480GB", 1}, {"NVIDIA A100-SXM4-40GB", 1},
                {"Tesla T4", 0}, {"NVIDIA L4", 0},
                /* MIG GPUs of NVIDIA's list that carve has no board for: MIG, not "cannot be
                   partitioned" */
                {"H20", 1}, {"NVIDIA H20", 1}, {"A30", 1}, {"NVIDIA A30", 1},
                /* a GPU carve does not know: MIG unknown, not absent; a name that holds a gated
                   family followed by a digit is not that family */
                {"RTX 4090", -1}, {"RTX A1000", -1}, {"NVIDIA RTX A1000 6GB", -1},
                {"RTX A3000", -1}, {"RTX PRO 6000 Blackwell", -1}};
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
        struct adv_result r = advise(gpus[i].gpu, ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
        if (r.mig_capable != (gpus[i].mig == 1) || r.mig_unknown != (gpus[i].mig < 0))
            fail_msg("%s: MIG %d unknown %d, want %d", gpus[i].gpu, r.mig_capable,
                     r.mig_unknown, gpus[i].mig);
        assert_int_equal(has_trap(&r, "mig-gate"), gpus[i].mig == 0);
        assert_int_equal(has_trap(&r, "mig-unknown"), gpus[i].mig < 0);
        assert_int_equal(r.proposal_ok, gpus[i].mig == 1);
        assert_int_equal(r.proposal_unknown, gpus[i].mig < 0);
        /* untrusted tenants get MIG only where it is there for sure */
        assert_int_equal(r.mech, gpus[i].mig == 1 ? ADV_MIG : ADV_WHOLE);
    }
    /* NVML's device names are the boards carve knows */
    static const struct {
        const char *nvml, *board;
    } named[] = {{"NVIDIA A100-SXM4-40GB", "A100-40GB"}, {"NVIDIA A100 80GB PCIe", "A100-80GB"},
                 {"NVIDIA H100 80GB HBM3", "H100-80GB"}, {"NVIDIA H100 NVL", "H100-94GB"},
                 {"NVIDIA H100 PCIe", "H100-80GB"},      {"Tesla T4", "T4-16GB"},
                 {"NVIDIA L40S", "L40S-48GB"},
                 /* boards alike but for their memory: the size in the name says which */
                 {"Tesla V100-SXM2-32GB", "V100-32GB"},  {"Tesla V100-PCIE-16GB", "V100-16GB"}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        struct adv_result r = advise(named[i].nvml, ADV_BATCH, ADV_TEAM, 0, -1);
        if (!r.gpu_known || strcmp(r.gpu, named[i].board) != 0)
            fail_msg("%s: %s (known %d), want %s", named[i].nvml, r.gpu, r.gpu_known,
                     named[i].board);
    }
    struct adv_result r = advise("T4", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
    assert_non_null(strstr(r.proposal_verdict, "mig-gate"));
    assert_non_null(strstr(r.proposal_verdict, "T4-16GB cannot be partitioned"));
    assert_non_null(strstr(r.proposal_verdict, "MIG needs A100, A30, H100, H20, H200 and B200"));
    /* one carve does not know: unknown, and how to find out */
    r = advise("RTX PRO 6000 Blackwell", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
    assert_non_null(strstr(r.proposal_verdict, "carve does not know whether RTX PRO 6000 "
                                               "Blackwell has MIG"));
    assert_non_null(strstr(r.proposal_verdict, "nvidia-smi -q | grep -i mig"));
    assert_null(strstr(r.proposal_verdict, "cannot be partitioned"));
    json_t *j = adv_result_json(&r);
    assert_true(json_is_null(json_object_get(j, "mig_capable")));
    assert_true(json_is_null(json_object_get(json_object_get(j, "check"), "ok")));
    json_decref(j);
    /* MIG without a profile table in carve (H20, A30, B200): said, and no `carve mig plan` */
    static const char *const untabled[] = {"H20", "NVIDIA A30", "B200", "NVIDIA H100 NVL"};
    for (size_t i = 0; i < sizeof(untabled) / sizeof(untabled[0]); i++) {
        r = advise(untabled[i], ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
        if (!strstr(r.reasons[1], "carve has no MIG profile table") ||
            strstr(r.reasons[1], "carve mig plan"))
            fail_msg("%s: %s", untabled[i], r.reasons[1]);
    }
    r = advise("H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
    assert_non_null(strstr(r.reasons[1], "carve mig plan"));
}

static void test_trap_timeslice_online(void **state)
{
    struct adv_result r = advise("L4", ADV_INFERENCE, ADV_TEAM, 50, ADV_TIMESLICE);
    assert_true(has_trap(&r, "timeslice-online"));
    assert_false(r.proposal_ok);
    assert_non_null(strstr(r.proposal_verdict, "50 ms P99 budget"));
    /* the same mechanism is fine for batch work */
    r = advise("L4", ADV_BATCH, ADV_TEAM, 0, ADV_TIMESLICE);
    assert_false(has_trap(&r, "timeslice-online"));
    assert_true(r.proposal_ok);
}

static void test_trap_untrusted(void **state)
{
    struct adv_result r = advise("H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MPS);
    assert_true(has_trap(&r, "mps-untrusted"));
    assert_false(r.proposal_ok);
    r = advise("H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_CARVE);
    assert_true(has_trap(&r, "software-isolation"));
    assert_false(r.proposal_ok);
    assert_non_null(strstr(r.proposal_verdict, "statically linked"));
    r = advise("H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_HAMI);
    assert_false(r.proposal_ok);
    r = advise("H100", ADV_INFERENCE, ADV_UNTRUSTED, 0, ADV_MIG);
    assert_true(r.proposal_ok);
    /* time-slicing isolates less than the mechanisms refused above */
    for (int arch = ADV_INFERENCE; arch < ADV_NARCH; arch++) {
        r = advise("T4", arch, ADV_UNTRUSTED, 0, ADV_TIMESLICE);
        assert_true(has_trap(&r, "timeslice-untrusted"));
        if (r.proposal_ok)
            fail_msg("time-slicing for untrusted %s passed", adv_archetype_name(arch));
    }
    r = advise("T4", ADV_BATCH, ADV_TEAM, 0, ADV_TIMESLICE);
    assert_false(has_trap(&r, "timeslice-untrusted"));
    /* a team's own replicas may share under MPS */
    r = advise("H100", ADV_INFERENCE, ADV_TEAM, 0, ADV_MPS);
    assert_false(has_trap(&r, "mps-untrusted"));
    assert_true(r.proposal_ok);
}

static void test_trap_mps_neighbour(void **state)
{
    struct adv_result r = advise("A10", ADV_INFERENCE, ADV_TEAM, 30, ADV_MPS);
    assert_true(has_trap(&r, "mps-neighbour"));
    assert_int_equal(r.mech, ADV_CARVE);
}

static void test_trap_training(void **state)
{
    for (int m = ADV_TIMESLICE; m < ADV_NMECH; m++) {
        struct adv_result r = advise("H100", ADV_TRAINING, ADV_TEAM, 0, m);
        assert_true(has_trap(&r, "share-training"));
        if (r.proposal_ok)
            fail_msg("sharing training GPUs with %s passed", adv_matrix(m)->name);
    }
    struct adv_result r = advise("H100", ADV_TRAINING, ADV_TEAM, 0, ADV_WHOLE);
    assert_true(r.proposal_ok);
}

static void test_trap_mig_resize_and_rounding(void **state)
{
    struct adv_input in = {.gpu = "H100", .archetype = ADV_INFERENCE, .trust = ADV_TEAM,
                           .latency_ms = 40, .changing = true, .proposal = -1};
    struct adv_result r;
    char err[256];
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_true(has_trap(&r, "mig-resize"));
    assert_int_equal(r.mech, ADV_CARVE); /* a changing mix: not a fixed MIG geometry */
    assert_int_equal(r.alternative, ADV_MIG);
    /* the article's example: 12 GB on an A100-80GB takes a 20 GB instance */
    struct adv_input nb = {.gpu = "A100-80GB", .archetype = ADV_NOTEBOOK, .trust = ADV_UNTRUSTED,
                           .memory_mib = 12 * 1024, .proposal = -1};
    assert_int_equal(adv_advise(&nb, &r, err, sizeof(err)), 0);
    assert_true(has_trap(&r, "mig-rounding"));
    bool named = false;
    for (size_t i = 0; i < r.ntraps; i++)
        named |= strstr(r.traps[i].text, "a 12.0 GiB workload takes a 1g.20gb instance (19.5 GiB)") != NULL;
    assert_true(named);
    /* a workload that fits a profile snugly strands nothing worth a trap */
    nb.memory_mib = 9500;
    assert_int_equal(adv_advise(&nb, &r, err, sizeof(err)), 0);
    assert_false(has_trap(&r, "mig-rounding"));
}

/* A workload no MIG profile holds is not advised onto MIG, and one larger than the GPU itself
 * is refused: no mechanism runs it, and advice would hide that. */
static void test_memory_beyond_profiles(void **state)
{
    struct adv_input in = {.gpu = "A100-40GB", .archetype = ADV_INFERENCE,
                           .trust = ADV_UNTRUSTED, .memory_mib = 39 * 1024 + 512, .proposal = -1};
    struct adv_result r;
    char err[256] = "";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_int_equal(r.mech, ADV_WHOLE);
    assert_non_null(strstr(r.reasons[0], "largest MIG instance (7g.40gb, 39.2 GiB)"));
    /* and MIG, asked about, is refused for it */
    in.proposal = ADV_MIG;
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_true(has_trap(&r, "mig-too-small"));
    assert_false(r.proposal_ok);
    assert_non_null(strstr(r.proposal_verdict, "MIG cannot run it"));
    in.proposal = -1;
    in.memory_mib = 30 * 1024; /* 7g.40gb holds it: MIG as before */
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_int_equal(r.mech, ADV_MIG);
    /* a team's latency-bound service: carve slices, not MIG, when no profile holds it */
    in = (struct adv_input){.gpu = "A100-40GB", .archetype = ADV_INFERENCE, .trust = ADV_TEAM,
                            .latency_ms = 50, .memory_mib = 39 * 1024 + 512, .proposal = -1};
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_int_equal(r.mech, ADV_CARVE);
    in.memory_mib = 200 * 1024;
    in.gpu = "H100";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "204800 MiB (200.0 GiB) does not fit on one H100-80GB (81559 MiB)"));
    in.gpu = "NVIDIA A100-SXM4-40GB"; /* NVML's name: the board's memory */
    in.memory_mib = 60 * 1024;
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "does not fit on one A100-40GB"));
    /* non-MIG boards have NVML's total too, not the nominal size: 16 GiB is more than a T4 */
    in = (struct adv_input){.gpu = "T4", .archetype = ADV_BATCH, .trust = ADV_TEAM,
                            .memory_mib = 16 * 1024, .proposal = -1};
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "does not fit on one T4-16GB (15360 MiB)"));
    in.gpu = "L4";
    in.memory_mib = 23034;
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    in.memory_mib = 23035;
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    in.gpu = "mygpu"; /* a GPU carve does not know: its memory is unknown, nothing to refuse */
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
}

static void test_trap_no_memory_limit(void **state)
{
    struct adv_result r = advise("T4", ADV_NOTEBOOK, ADV_TEAM, 0, -1);
    assert_true(has_trap(&r, "no-memory-limit"));
    assert_int_equal(r.alternative, ADV_TIMESLICE);
}

static void test_rejected(void **state)
{
    struct adv_input in = {.gpu = "", .archetype = ADV_BATCH, .proposal = -1};
    struct adv_result r;
    char err[256] = "";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no GPU model"));
    in.gpu = "H100";
    in.latency_ms = -5;
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "latency budget -5 ms"));
    /* a P99 budget is inference's: elsewhere it would be ignored without a word */
    for (int arch = 0; arch < ADV_NARCH; arch++) {
        in.archetype = arch;
        in.latency_ms = 10;
        int rc = adv_advise(&in, &r, err, sizeof(err));
        assert_int_equal(rc, arch == ADV_INFERENCE ? 0 : -EINVAL);
        if (rc)
            assert_non_null(strstr(err, "a P99 budget (--latency 10 ms) is for online inference"));
    }
    in.archetype = ADV_INFERENCE;
    in.latency_ms = 0.4; /* under a millisecond: said as given, not as 0 (none) */
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_non_null(strstr(r.reasons[0], "a 0.4 ms P99 budget"));
    in.archetype = ADV_BATCH;
    /* an unknown GPU's name goes into the JSON as given: not UTF-8, or longer than the 63
     * bytes kept (it was cut, inside a character), is refused rather than dropped */
    in.latency_ms = 0;
    in.gpu = "gpu\xff";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "is not UTF-8 text"));
    in.gpu = "NVIDIA \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
             "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
             "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "longer than 63 bytes"));
    in.gpu = "GB200 \xc3\xa9";
    assert_int_equal(adv_advise(&in, &r, err, sizeof(err)), 0);
    assert_true(r.mig_capable);
    assert_int_equal(adv_archetype_find("serving"), ADV_INFERENCE);
    assert_int_equal(adv_archetype_find("gaming"), -1);
    assert_int_equal(adv_mech_find("time-slicing"), ADV_TIMESLICE);
    assert_int_equal(adv_mech_find("timeslice"), ADV_TIMESLICE); /* carve run --mode's name */
    assert_int_equal(adv_mech_find("vgpu"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recommendations),
        cmocka_unit_test(test_hardware_gate),
        cmocka_unit_test(test_trap_timeslice_online),
        cmocka_unit_test(test_trap_untrusted),
        cmocka_unit_test(test_trap_mps_neighbour),
        cmocka_unit_test(test_trap_training),
        cmocka_unit_test(test_trap_mig_resize_and_rounding),
        cmocka_unit_test(test_memory_beyond_profiles),
        cmocka_unit_test(test_trap_no_memory_limit),
        cmocka_unit_test(test_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
