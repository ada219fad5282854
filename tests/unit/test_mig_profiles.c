/* test_mig_profiles.c - the MIG profile tables: the numbers NVIDIA's MIG user guide gives for
 * each model, lookups by short and NVML name, and the smallest-fitting-profile rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mig.h"

static const struct mig_model *model(const char *name)
{
    const struct mig_model *m = mig_model_find(name);
    if (!m)
        fail_msg("model %s not found", name);
    return m;
}

static const struct mig_profile *profile(const struct mig_model *m, const char *name)
{
    const struct mig_profile *p = mig_profile_find(m, name);
    if (!p)
        fail_msg("%s has no profile %s", m->name, name);
    return p;
}

static void test_models_known(void **state)
{
    size_t n = 0;
    const struct mig_model *all = mig_models(&n);
    assert_int_equal(n, 4);
    const char *want[] = {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(all[i].name, want[i]);
        assert_int_equal(all[i].compute_slices, 7);
        assert_int_equal(all[i].memory_slices, 8);
        assert_true(all[i].nprofiles >= 7);
    }
}

/* every profile's starts lie inside the GPU, its count fits its starts, and the largest one
   takes the whole GPU */
static void test_tables_consistent(void **state)
{
    size_t n = 0;
    const struct mig_model *all = mig_models(&n);
    for (size_t i = 0; i < n; i++) {
        const struct mig_model *m = &all[i];
        unsigned whole = 0;
        for (size_t j = 0; j < m->nprofiles; j++) {
            const struct mig_profile *p = &m->profiles[j];
            unsigned starts = (unsigned)__builtin_popcount(p->start_mask);
            assert_true(p->start_mask != 0);
            for (unsigned s = 0; s < 8; s++)
                if (p->start_mask & (1u << s))
                    assert_true(s + p->memory_slices <= m->memory_slices);
            assert_true(p->max_count >= 1 && p->max_count <= starts);
            assert_true(p->compute_slices <= p->memory_slices);
            assert_true(p->memory_mib <= m->memory_mib);
            /* memory grows with memory slices: a slice is about 1/8 of the GPU, less overhead */
            assert_true(p->memory_mib * 8 / p->memory_slices <= m->memory_mib + 1024);
            assert_true(p->memory_mib * 8 / p->memory_slices >= m->memory_mib * 85 / 100);
            if (p->compute_slices == 7)
                whole++;
        }
        assert_int_equal(whole, 1);
    }
}

/* the guide's rows: name, compute slices, memory slices, max count, start slots */
static void test_guide_rows(void **state)
{
    static const struct {
        const char *model, *name;
        unsigned g, mem, max, starts;
        uint64_t mib;
    } rows[] = {
        {"A100-40GB", "1g.5gb", 1, 1, 7, 0x7F, 4864},
        {"A100-40GB", "1g.5gb+me", 1, 1, 1, 0x7F, 4864},
        {"A100-40GB", "1g.10gb", 1, 2, 4, 0x55, 9856},
        {"A100-40GB", "2g.10gb", 2, 2, 3, 0x15, 9856},
        {"A100-40GB", "3g.20gb", 3, 4, 2, 0x11, 19968},
        {"A100-40GB", "4g.20gb", 4, 4, 1, 0x01, 19968},
        {"A100-40GB", "7g.40gb", 7, 8, 1, 0x01, 40192},
        {"A100-80GB", "1g.10gb", 1, 1, 7, 0x7F, 9728},
        {"A100-80GB", "1g.20gb", 1, 2, 4, 0x55, 19968},
        {"A100-80GB", "3g.40gb", 3, 4, 2, 0x11, 40192},
        {"A100-80GB", "7g.80gb", 7, 8, 1, 0x01, 80896},
        {"H100-80GB", "1g.10gb", 1, 1, 7, 0x7F, 9984},
        {"H100-80GB", "1g.20gb", 1, 2, 4, 0x55, 20096},
        {"H100-80GB", "2g.20gb", 2, 2, 3, 0x15, 20096},
        {"H100-80GB", "3g.40gb", 3, 4, 2, 0x11, 40448},
        {"H100-80GB", "4g.40gb", 4, 4, 1, 0x01, 40448},
        {"H100-80GB", "7g.80gb", 7, 8, 1, 0x01, 81152},
        {"H200-141GB", "1g.18gb", 1, 1, 7, 0x7F, 16384},
        {"H200-141GB", "1g.35gb", 1, 2, 4, 0x55, 33280},
        {"H200-141GB", "2g.35gb", 2, 2, 3, 0x15, 33280},
        {"H200-141GB", "3g.71gb", 3, 4, 2, 0x11, 71424},
        {"H200-141GB", "4g.71gb", 4, 4, 1, 0x01, 71424},
        {"H200-141GB", "7g.141gb", 7, 8, 1, 0x01, 143360},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct mig_profile *p = profile(model(rows[i].model), rows[i].name);
        assert_int_equal(p->compute_slices, rows[i].g);
        assert_int_equal(p->memory_slices, rows[i].mem);
        assert_int_equal(p->max_count, rows[i].max);
        assert_int_equal(p->start_mask, rows[i].starts);
        assert_int_equal(p->memory_mib, rows[i].mib);
    }
}

static void test_find_by_nvml_name(void **state)
{
    static const struct {
        const char *nvml, *want;
    } cases[] = {
        {"NVIDIA A100-SXM4-40GB", "A100-40GB"}, {"NVIDIA A100-PCIE-40GB", "A100-40GB"},
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"}, {"NVIDIA A100 80GB PCIe", "A100-80GB"},
        {"NVIDIA H100 80GB HBM3", "H100-80GB"}, {"NVIDIA H100 PCIe", "H100-80GB"},
        {"NVIDIA H200", "H200-141GB"},           {"NVIDIA H200 NVL", "H200-141GB"},
        {"h100-80gb", "H100-80GB"},              {"a100-40gb", "A100-40GB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct mig_model *m = mig_model_find(cases[i].nvml);
        if (!m)
            fail_msg("%s matched no model", cases[i].nvml);
        assert_string_equal(m->name, cases[i].want);
    }
    assert_null(mig_model_find("NVIDIA GeForce RTX 4090"));
    assert_null(mig_model_find("Tesla T4"));
    assert_null(mig_model_find("NVIDIA GH200 480GB")); /* not an H200: other profiles */
    assert_null(mig_model_find("NVIDIA H100 NVL"));     /* 94 GB: other profiles */
    assert_null(mig_model_find(""));
    assert_null(mig_model_find(NULL));
}

static void test_profile_lookup(void **state)
{
    const struct mig_model *h100 = model("H100-80GB");
    assert_ptr_equal(mig_profile_find(h100, "MIG 3g.40gb"), profile(h100, "3g.40gb"));
    assert_ptr_equal(mig_profile_find(h100, "3G.40GB"), profile(h100, "3g.40gb"));
    assert_null(mig_profile_find(h100, "3g.20gb")); /* an A100-40GB name */
    assert_null(mig_profile_find(h100, "8g.90gb"));
    assert_ptr_equal(mig_profile_by_nvml_id(h100, 9), profile(h100, "3g.40gb"));
    assert_ptr_equal(mig_profile_by_nvml_id(h100, 15), profile(h100, "1g.20gb"));
    assert_null(mig_profile_by_nvml_id(h100, 99));
    assert_int_equal(mig_slice_mask(profile(h100, "3g.40gb"), 4), 0xF0);
    assert_int_equal(mig_slice_mask(profile(h100, "1g.10gb"), 6), 0x40);
}

static void test_fit(void **state)
{
    const struct mig_model *h100 = model("H100-80GB");
    const struct mig_model *a40 = model("A100-40GB");
    static const struct {
        const char *model;
        uint64_t mib;
        double pct;
        const char *want; /* NULL: none fits */
    } cases[] = {
        {"H100-80GB", 0, 0, "1g.10gb"},
        {"H100-80GB", 8192, 0, "1g.10gb"},
        {"H100-80GB", 9984, 0, "1g.10gb"},
        {"H100-80GB", 9985, 0, "1g.20gb"},     /* 1 compute slice is enough: not 2g */
        {"H100-80GB", 9985, 20, "2g.20gb"},    /* 20% needs 2 of 7 */
        {"H100-80GB", 9984, 14.2857, "1g.10gb"},
        {"H100-80GB", 9984, 14.3, "2g.20gb"},
        {"H100-80GB", 20480, 0, "3g.40gb"},
        {"H100-80GB", 0, 50, "4g.40gb"},
        {"H100-80GB", 40448, 42.8571, "3g.40gb"},
        {"H100-80GB", 40449, 0, "7g.80gb"},
        {"H100-80GB", 81152, 100, "7g.80gb"},
        {"H100-80GB", 81153, 0, NULL},         /* bigger than the GPU */
        {"H100-80GB", 0, 100.5, NULL},
        {"A100-40GB", 4096, 0, "1g.5gb"},
        {"A100-40GB", 6144, 0, "1g.10gb"},
        {"A100-40GB", 30720, 0, "7g.40gb"},
        {"H200-141GB", 30 * 1024, 0, "1g.35gb"},
        {"H200-141GB", 100 * 1024, 0, "7g.141gb"},
    };
    (void)h100;
    (void)a40;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct mig_profile *p = mig_profile_fit(model(cases[i].model), cases[i].mib,
                                                      cases[i].pct);
        if (!cases[i].want) {
            if (p)
                fail_msg("%s %lu MiB %.2f%%: want none, got %s", cases[i].model,
                         (unsigned long)cases[i].mib, cases[i].pct, p->name);
            continue;
        }
        if (!p || strcmp(p->name, cases[i].want) != 0)
            fail_msg("%s %lu MiB %.2f%%: want %s, got %s", cases[i].model,
                     (unsigned long)cases[i].mib, cases[i].pct, cases[i].want,
                     p ? p->name : "none");
    }
    assert_null(mig_profile_fit(NULL, 1, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_known),      cmocka_unit_test(test_tables_consistent),
        cmocka_unit_test(test_guide_rows),        cmocka_unit_test(test_find_by_nvml_name),
        cmocka_unit_test(test_profile_lookup),    cmocka_unit_test(test_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
