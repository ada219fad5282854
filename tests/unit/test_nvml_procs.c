/* test_nvml_procs.c - a running-process list read in any layout: 24-byte entries, the
 * 32-byte ones of the first R535 drivers' _v3, told apart by which symbols the library has,
 * and the unversioned lists' 16; filtering keeps whole entries in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvml_procs.h"

/* the layout of the first R535 drivers */
struct wide_entry {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
};

static void test_stride_rule(void **state)
{
    (void)state;
    assert_int_equal(sizeof(struct wide_entry), 32);
    assert_int_equal(sizeof(nvmlProcessInfo_t), 24);
    assert_int_equal(carve_nvml_v3_stride(false, false), 24); /* before confidential computing */
    assert_int_equal(carve_nvml_v3_stride(true, false), 32);  /* R535 at first */
    assert_int_equal(carve_nvml_v3_stride(true, true), 24);   /* later R535 on */
    assert_int_equal(carve_nvml_v3_stride(false, true), 24);
}

static void test_wide_entries(void **state)
{
    (void)state;
    struct wide_entry list[3] = {
        {11, 100, ~0u, ~0u, 7}, {22, 200, ~0u, ~0u, 8}, {33, 300, 1, 0, 9}};
    for (unsigned i = 0; i < 3; i++) {
        nvmlProcessInfo_t p = carve_nvml_proc_at(list, sizeof(list[0]), i);
        assert_int_equal(p.pid, list[i].pid);
        assert_int_equal(p.usedGpuMemory, list[i].usedGpuMemory);
        assert_int_equal(p.gpuInstanceId, list[i].gpuInstanceId);
    }
    /* read with the wrong stride, the second pid is made of other bytes */
    assert_int_not_equal(carve_nvml_proc_at(list, sizeof(nvmlProcessInfo_t), 1).pid, 22);
    unsigned int keep[] = {33, 11};
    assert_int_equal(carve_nvml_keep_procs(list, sizeof(list[0]), 3, keep, 2), 2);
    assert_int_equal(list[0].pid, 11);
    assert_int_equal(list[0].usedGpuCcProtectedMemory, 7);
    assert_int_equal(list[1].pid, 33);
    assert_int_equal(list[1].usedGpuMemory, 300);
    assert_int_equal(list[1].usedGpuCcProtectedMemory, 9);
}

static void test_narrow_entries(void **state)
{
    (void)state;
    nvmlProcessInfo_t list[4] = {{5, 50, 0, 0}, {6, 60, 0, 0}, {7, 70, 0, 0}, {8, 80, 0, 0}};
    unsigned int keep[] = {8, 6, 99};
    assert_int_equal(carve_nvml_keep_procs(list, sizeof(list[0]), 4, keep, 3), 2);
    assert_int_equal(list[0].pid, 6);
    assert_int_equal(list[0].usedGpuMemory, 60);
    assert_int_equal(list[1].pid, 8);
    assert_int_equal(list[1].usedGpuMemory, 80);
    assert_int_equal(carve_nvml_keep_procs(list, sizeof(list[0]), 2, keep, 0), 0);
}

/* The unversioned lists' 16-byte entries, in a buffer exactly as long as the list (on the heap,
 * so that the sanitizer build sees a read past its end). */
static void test_v1_entries(void **state)
{
    (void)state;
    assert_int_equal(sizeof(nvmlProcessInfo_v1_t), 16);
    nvmlProcessInfo_v1_t *list = malloc(3 * sizeof(*list));
    assert_non_null(list);
    list[0] = (nvmlProcessInfo_v1_t){41, 410};
    list[1] = (nvmlProcessInfo_v1_t){42, 420};
    list[2] = (nvmlProcessInfo_v1_t){43, 430};
    unsigned int keep[] = {43, 41};
    assert_int_equal(carve_nvml_keep_procs(list, sizeof(list[0]), 3, keep, 2), 2);
    assert_int_equal(list[0].pid, 41);
    assert_int_equal(list[0].usedGpuMemory, 410);
    assert_int_equal(list[1].pid, 43);
    assert_int_equal(list[1].usedGpuMemory, 430);
    free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stride_rule),
        cmocka_unit_test(test_wide_entries),
        cmocka_unit_test(test_narrow_entries),
        cmocka_unit_test(test_v1_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
