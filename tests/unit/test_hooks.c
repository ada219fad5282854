/* test_hooks.c - the tables generated from libcarve/hooks.def are consistent: every hook
 * has an exported wrapper, names are unique, and every entry (hooked or only called)
 * resolves in the simulated libcuda.so.1 / libnvidia-ml.so.1 to a function that is not
 * our wrapper; the cuGetProcAddress and dlsym answers map real pointers to wrappers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>

#include "libcarve.h"
#include "uuid.h"

static const struct {
    const char *name;
    void **real;
} all_reals[] = {
#define CARVE_HOOK(lib, name) {#name, (void **)&carve__real.name},
#define CARVE_REAL(lib, name) {#name, (void **)&carve__real.name},
#include "hooks.def"
};

static void test_wrappers_and_names(void **state)
{
    (void)state;
    assert_true(carve__nhooks > 0);
    for (size_t i = 0; i < carve__nhooks; i++) {
        assert_non_null(carve__hooks[i].wrapper);
        assert_non_null(carve__hooks[i].real);
        assert_ptr_equal(carve__hook_by_name(carve__hooks[i].name), &carve__hooks[i]);
        for (size_t j = i + 1; j < carve__nhooks; j++)
            assert_string_not_equal(carve__hooks[i].name, carve__hooks[j].name);
    }
    assert_null(carve__hook_by_name("cuNotAFunction"));
    assert_null(carve__hook_by_name("malloc"));
}

static void test_every_entry_resolves(void **state)
{
    (void)state;
    carve__init();
    for (size_t i = 0; i < sizeof(all_reals) / sizeof(all_reals[0]); i++) {
        if (!*all_reals[i].real)
            fail_msg("%s does not resolve in the simulated driver/NVML", all_reals[i].name);
        for (size_t j = i + 1; j < sizeof(all_reals) / sizeof(all_reals[0]); j++)
            assert_string_not_equal(all_reals[i].name, all_reals[j].name);
    }
    for (size_t i = 0; i < carve__nhooks; i++)
        assert_ptr_not_equal(*carve__hooks[i].real, carve__hooks[i].wrapper);
}

static void test_pointer_mapping(void **state)
{
    (void)state;
    carve__init();
    for (size_t i = 0; i < carve__nhooks; i++)
        assert_ptr_equal(carve__wrap_pointer(*carve__hooks[i].real), carve__hooks[i].wrapper);
    assert_ptr_equal(carve__wrap_pointer((void *)R.cuCtxGetDevice), (void *)R.cuCtxGetDevice);
    assert_null(carve__wrap_pointer(NULL));
}

static void test_resolution_paths(void **state)
{
    (void)state;
    carve__init();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    /* dlsym answers a hooked name with the wrapper, an unhooked one with the real symbol */
    assert_ptr_equal(dlsym(h, "cuMemAlloc_v2"), (void *)&cuMemAlloc_v2);
    assert_ptr_equal(dlsym(h, "cuCtxGetDevice"), (void *)R.cuCtxGetDevice);
    assert_null(dlsym(h, "cuNotAFunction"));
    /* cuGetProcAddress_v2: base names, versioned answers, and itself */
    void *p = NULL;
    CUdriverProcAddressQueryResult qr;
    assert_int_equal(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuMemAlloc_v2);
    assert_int_equal(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuGetProcAddress_v2);
    assert_int_equal(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuGetProcAddress);
    assert_int_equal(cuGetProcAddress_v2("cuMemAllocAsync", &p, 12000,
                                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &qr),
                     CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuMemAllocAsync_ptsz);
    /* each ABI of cuCtxCreate gets the wrapper of its own prototype */
    assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &p, 3020, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuCtxCreate_v2);
    assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &p, 12000, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuCtxCreate_v3);
    assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &p, 12080, 0, &qr), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)&cuCtxCreate_v4);
}

/* A driver symbol we do not wrap is handed out as it is, never a wrapper chosen by name:
 * an unlisted ABI version of a hooked name would otherwise get another prototype's. */
static void test_unwrapped_symbol_kept(void **state)
{
    (void)state;
    carve__init();
    void *unwrapped = (void *)R.cuCtxGetDevice;
    assert_ptr_equal(carve__gpa_answer("cuMemAlloc", 12000, 0, unwrapped), unwrapped);
    assert_ptr_equal(carve__gpa_answer("cuCtxCreate", 12000, 0, unwrapped), unwrapped);
}

static void test_uuid_parse(void **state)
{
    (void)state;
    unsigned char u[16];
    assert_int_equal(carve_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeeff", u), 0);
    assert_int_equal(u[0], 0x00);
    assert_int_equal(u[4], 0x44);
    assert_int_equal(u[15], 0xff);
    assert_int_equal(carve_uuid_parse("MIG-00112233-4455-6677-8899-aabbccddeeff", u), -1);
    assert_int_equal(carve_uuid_parse("GPU-0011", u), -1);
    /* the comparison carved and the Slurm plugin find GPUs by */
    assert_int_equal(carve_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeeff", u), 0);
    assert_true(carve_uuid_is("GPU-00112233-4455-6677-8899-AABBCCDDEEFF", u));
    assert_false(carve_uuid_is("GPU-00112233-4455-6677-8899-aabbccddeefe", u));
    assert_false(carve_uuid_is("GPU-0011", u));
}

/* A driver whose cuGetProcAddress hands out internal addresses still gets our wrappers. */
static void test_answer_by_name(void **state)
{
    (void)state;
    void *internal = (void *)0x1234;
    assert_ptr_equal(carve__gpa_answer("cuMemAlloc", 12000, 0, internal),
                     carve__hook_by_name("cuMemAlloc_v2")->wrapper);
    assert_ptr_equal(carve__gpa_answer("cuLaunchKernel", 12000,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, internal),
                     carve__hook_by_name("cuLaunchKernel_ptsz")->wrapper);
    /* no per-thread variant before CUDA 7.0 (cudaTypedefs.h: PFN_cuLaunchKernel_v7000_ptsz) */
    assert_ptr_equal(carve__gpa_answer("cuLaunchKernel", 6050,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, internal),
                     carve__hook_by_name("cuLaunchKernel")->wrapper);
    assert_ptr_equal(carve__gpa_answer("cuGetProcAddress", 11030, 0, internal),
                     carve__hook_by_name("cuGetProcAddress")->wrapper);
    assert_ptr_equal(carve__gpa_answer("cuCtxCreate", 12050, 0, internal),
                     carve__hook_by_name("cuCtxCreate_v4")->wrapper);
    assert_ptr_equal(carve__gpa_answer("cuDeviceGet", 12000, 0, internal), internal);
    assert_ptr_equal(carve__gpa_answer("cuMemAllocAsync", 11000, 0, internal), internal);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrappers_and_names),
        cmocka_unit_test(test_every_entry_resolves),
        cmocka_unit_test(test_pointer_mapping),
        cmocka_unit_test(test_resolution_paths),
        cmocka_unit_test(test_uuid_parse),
        cmocka_unit_test(test_answer_by_name),
        cmocka_unit_test(test_unwrapped_symbol_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
