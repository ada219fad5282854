/* test_mig_visible.c - CUDA_VISIBLE_DEVICES as `carve run --mode mig` reads it
 * (planner/mig_visible.c): GPU indices, UUIDs and unique prefixes, MIG device UUIDs, lists
 * of them, and each form of bad value refused with a message that names it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mig_visible.h"

/* NVML indices 0, 1, 3 (a GPU the node hides, or a gap in the numbering) */
static const struct mig_gpu gpus[] = {
    {.index = 0, .uuid = "GPU-5a1e0c4a-1000-4e3d-9a7b-c0ffeea00000", .mode = 1},
    {.index = 1, .uuid = "GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001", .mode = 1},
    {.index = 3, .uuid = "GPU-77770000-0000-0000-0000-000000000003", .mode = 0},
};
#define NGPU 3

#define MIG_A "MIG-6984cedb-0e2b-5a38-a6e9-7ad7c5d0cf8b"
#define MIG_B "MIG-c8689c4d-23f1-5f2c-80c2-6a07db7a393d"

/* want: "1.0." style, '1' for each GPU position named */
static void expect_gpus(const char *visible, const char *want, int nmig)
{
    struct mig_visible v;
    char err[512] = "", got[NGPU + 1];
    if (mig_visible_parse(visible, gpus, NGPU, &v, err, sizeof(err)) != 0)
        fail_msg("CUDA_VISIBLE_DEVICES=%s refused: %s", visible, err);
    for (int i = 0; i < NGPU; i++)
        got[i] = v.gpu[i] ? '1' : '.';
    got[NGPU] = '\0';
    if (strcmp(got, want) != 0 || v.nmig != nmig)
        fail_msg("CUDA_VISIBLE_DEVICES=%s: GPUs %s and %d MIG devices, want %s and %d",
                 visible, got, v.nmig, want, nmig);
}

static void expect_refused(const char *visible, const char *fragment)
{
    struct mig_visible v;
    char err[512] = "";
    int r = mig_visible_parse(visible, gpus, NGPU, &v, err, sizeof(err));
    if (r != -EINVAL || !strstr(err, fragment))
        fail_msg("CUDA_VISIBLE_DEVICES=%s: %d `%s', want -EINVAL saying `%s'", visible, r, err,
                 fragment);
}

static void test_gpus(void **state)
{
    expect_gpus("0", "1..", 0);
    expect_gpus("1", ".1.", 0);
    expect_gpus("3", "..1", 0); /* by NVML's index, not the position in the list */
    expect_gpus("1,0", "11.", 0);
    expect_gpus("1,1", ".1.", 0);
    expect_gpus("GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001", ".1.", 0);
    expect_gpus("GPU-5a1e0c4a-1001", ".1.", 0); /* a unique prefix, as CUDA takes it */
    expect_gpus("GPU-7777,0", "1.1", 0);
}

static void test_mig_devices(void **state)
{
    struct mig_visible v;
    char err[256];
    expect_gpus(MIG_A, "...", 1);
    assert_int_equal(mig_visible_parse(MIG_A "," MIG_B ",1," MIG_A, gpus, NGPU, &v, err,
                                       sizeof(err)), 0);
    assert_int_equal(v.nmig, 2); /* a repeated one once */
    assert_string_equal(v.mig[0], MIG_A);
    assert_string_equal(v.mig[1], MIG_B);
    assert_true(v.gpu[1]);
    assert_true(mig_visible_names(&v, MIG_B));
    assert_false(mig_visible_names(&v, "MIG-6984cedb"));
}

static void test_refused(void **state)
{
    expect_refused("", "CUDA_VISIBLE_DEVICES is empty, which hides every GPU");
    expect_refused("0,,1", "CUDA_VISIBLE_DEVICES=0,,1 has an empty entry");
    expect_refused("0,", "has an empty entry");
    expect_refused(",0", "has an empty entry");
    expect_refused("2", "CUDA_VISIBLE_DEVICES=2 names GPU 2, which this machine does not have");
    expect_refused("99999999999999999999", "names GPU 99999999999999999999, which");
    expect_refused("-1", "`-1' is not a GPU index as nvidia-smi numbers them");
    expect_refused("1a", "`1a' is not a GPU index");
    expect_refused(" 0", "` 0' is not");
    expect_refused("0, 1", "` 1' is not");
    expect_refused("nvidia0", "`nvidia0' is not");
    expect_refused("GPU-", "`GPU-' names no GPU of this machine");
    expect_refused("GPU-ffff", "`GPU-ffff' names no GPU of this machine");
    expect_refused("GPU-5a1e0c4a", "`GPU-5a1e0c4a' matches 2 GPUs: give more of the UUID");
    expect_refused("MIG-", "`MIG-' is not");
    expect_refused("MIG-GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001/1/0",
                   "is the MIG-GPU-UUID/GI/CI form of drivers before R470");
    expect_refused("MIG-../../x", "is not");
    expect_refused("0,MIG-a b", "`MIG-a b' is not");
    char many[MIG_VISIBLE_MAX * 12 + 32] = "";
    size_t used = 0;
    for (int i = 0; i <= MIG_VISIBLE_MAX; i++)
        used += (size_t)snprintf(many + used, sizeof(many) - used, "%sMIG-%d", i ? "," : "", i);
    expect_refused(many, "names more than 64 MIG devices");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_mig_devices),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
