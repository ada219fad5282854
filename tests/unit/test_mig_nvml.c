/* test_mig_nvml.c - planner/mig_nvml.c against the simulated GPU's NVML (its MIG emulation):
 * GPUs and MIG mode, NVML's facts matching carve's tables, creating instances at placements,
 * the driver's refusals (overlap, a slot the profile cannot start at, MIG mode off) reported
 * with nothing left behind, listing in slot order with MIG device UUIDs, destroying. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mig_nvml.h"

static char state_dir[] = "/tmp/carve-test-mig-nvml.XXXXXX";

static struct mig_nvml *open_sim(void)
{
    struct mig_nvml *n = NULL;
    char err[512];
    if (mig_nvml_open(SIM_NVML, &n, err, sizeof(err)) < 0)
        fail_msg("cannot open the simulated NVML: %s", err);
    return n;
}

static const struct mig_profile *h100(const char *name)
{
    return mig_profile_find(mig_model_find("H100-80GB"), name);
}

static int count(struct mig_nvml *n, struct mig_live *live)
{
    char err[512];
    int k = mig_nvml_instances(n, 0, live, MIG_NVML_MAX_LIVE, err, sizeof(err));
    if (k < 0)
        fail_msg("listing failed: %s", err);
    return k;
}

static void test_gpu_and_facts(void **state)
{
    struct mig_nvml *n = open_sim();
    struct mig_gpu g[4];
    char err[512];
    assert_int_equal(mig_nvml_gpus(n, g, 4, err, sizeof(err)), 1);
    assert_int_equal(g[0].mode, 1);
    assert_non_null(g[0].model);
    assert_string_equal(g[0].model->name, "H100-80GB");
    for (size_t i = 0; i < g[0].model->nprofiles; i++) {
        const struct mig_profile *p = &g[0].model->profiles[i];
        struct mig_nvml_facts f;
        if (mig_nvml_facts(n, 0, p, &f, err, sizeof(err)) < 0)
            fail_msg("%s: %s", p->name, err);
        assert_int_equal(f.id, p->nvml_id);
        assert_int_equal(f.start_mask, p->start_mask);
        assert_int_equal(f.memory_slices, p->memory_slices);
        assert_int_equal(f.max_count, p->max_count);
        assert_int_equal(f.memory_mib, p->memory_mib);
    }
    mig_nvml_close(n);
}

static void test_create_list_destroy(void **state)
{
    struct mig_nvml *n = open_sim();
    struct mig_live made, live[MIG_NVML_MAX_LIVE];
    char err[512];
    assert_int_equal(count(n, live), 0);
    if (mig_nvml_create(n, 0, h100("3g.40gb"), 4, &made, err, sizeof(err)) < 0)
        fail_msg("create: %s", err);
    assert_int_equal(made.start, 4);
    assert_int_equal(made.size, 4);
    assert_int_equal(made.ci_id, 0);
    assert_int_equal(strncmp(made.uuid, "MIG-", 4), 0);
    assert_ptr_equal(made.profile, h100("3g.40gb"));
    unsigned gi3 = made.gi_id;
    if (mig_nvml_create(n, 0, h100("1g.10gb"), 0, &made, err, sizeof(err)) < 0)
        fail_msg("create: %s", err);

    /* the driver refuses an overlap, and a slot the profile cannot start at */
    assert_int_equal(mig_nvml_create(n, 0, h100("4g.40gb"), 0, &made, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "creating 4g.40gb at slot 0 on GPU 0: Insufficient Resources"));
    assert_int_equal(mig_nvml_create(n, 0, h100("2g.20gb"), 1, &made, err, sizeof(err)), -1);
    assert_int_equal(count(n, live), 2);

    /* listed in slot order, each with its own MIG device */
    assert_int_equal(live[0].start, 0);
    assert_int_equal(live[1].start, 4);
    assert_ptr_equal(live[0].profile, h100("1g.10gb"));
    assert_int_equal(live[1].gi_id, gi3);
    assert_string_not_equal(live[0].uuid, live[1].uuid);
    assert_int_equal(live[0].npids, 0);

    if (mig_nvml_destroy(n, 0, gi3, err, sizeof(err)) < 0)
        fail_msg("destroy: %s", err);
    assert_int_equal(count(n, live), 1);
    assert_int_equal(mig_nvml_destroy(n, 0, gi3, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "has no GPU instance"));
    assert_int_equal(mig_nvml_destroy(n, 0, live[0].gi_id, err, sizeof(err)), 0);
    assert_int_equal(count(n, live), 0);
    mig_nvml_close(n);
}

static void test_unknown_gpu(void **state)
{
    struct mig_nvml *n = open_sim();
    struct mig_live live[2];
    char err[512];
    assert_int_equal(mig_nvml_instances(n, 3, live, 2, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "GPU 3"));
    mig_nvml_close(n);
    assert_int_equal(mig_nvml_open("/nonexistent/libnvidia-ml.so.1", &n, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot load NVML"));
    assert_null(n);
}

int main(void)
{
    if (!mkdtemp(state_dir))
        return 1;
    char path[128];
    snprintf(path, sizeof(path), "%s/state", state_dir);
    /* read once, on the simulated NVML's first use */
    setenv("CARVE_SIM_STATE", path, 1);
    setenv("CARVE_SIM_MIG", "1", 1);
    setenv("CARVE_SIM_MODEL", "H100-80GB", 1);
    unsetenv("CARVE_SIM_NAME");
    unsetenv("CARVE_SIM_DEVICES");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_and_facts),
        cmocka_unit_test(test_create_list_destroy),
        cmocka_unit_test(test_unknown_gpu),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    char mig[160];
    snprintf(mig, sizeof(mig), "%s.mig", path);
    unlink(mig);
    unlink(path);
    rmdir(state_dir);
    return r;
}
