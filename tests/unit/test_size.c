/* test_size.c - size and memory-spec parsing: every accepted form to its exact value, every
 * rejected form to an error that names the input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "compute.h"
#include "gpus.h"
#include "size.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static void test_accepted(void **state)
{
    static const struct {
        const char *in;
        uint64_t want;
    } cases[] = {
        {"512MiB", 512 * MiB}, {"8G", 8 * GiB},          {"8GiB", 8 * GiB},
        {"8gib", 8 * GiB},     {"1.5GiB", 3 * GiB / 2},  {"100MB", 100000000ULL},
        {"4096", 4096},        {"4096B", 4096},          {"2t", 2ULL << 40},
        {"1K", 1024},          {"3kb", 3000},            {"0.5M", 512 * 1024},
        {"16TiB", 16ULL << 40}, {"1.25G", 5 * GiB / 4},
        {"2TB", 2000000000000ULL}, {"1.5KB", 1500}, {"7MIB", 7 * MiB},
        {"18446744073709551615", UINT64_MAX}, {"16777215TiB", 16777215ULL << 40},
        {"1.0", 1},            {"0.001K", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 0;
        char err[256] = "";
        int r = carve_parse_size(cases[i].in, &v, err, sizeof(err));
        if (r != 0)
            fail_msg("%s rejected: %s", cases[i].in, err);
        assert_int_equal(v, cases[i].want);
    }
}

static void test_rejected(void **state)
{
    static const struct {
        const char *in;
        int code;
        const char *why;
    } cases[] = {
        {"8XB", -EINVAL, "unknown unit"},  {"0", -EDOM, "zero"},
        {"0GiB", -EDOM, "zero"},           {"-1", -EINVAL, "negative"},
        {"", -EINVAL, "empty"},            {" 8G", -EINVAL, "space"},
        {"8G ", -EINVAL, "space"},         {"8 G", -EINVAL, "space"},
        {"8\tG", -EINVAL, "space"},        {"8Gx", -EINVAL, "unknown unit"},
        {"8GiBB", -EINVAL, "unknown unit"}, {"1e9", -EINVAL, "unknown unit"},
        {"0x10", -EINVAL, "unknown unit"}, {"+8G", -EINVAL, "no number"},
        {"18446744073709551615K", -ERANGE, "too large"},  {"1.5", -EINVAL, "a fraction of a byte"},
        {".5G", -EINVAL, "no number"},     {"1.G", -EINVAL, "no digits"},
        {"18446744073709551616", -ERANGE, "too large"},
        {"99999999T", -ERANGE, "too large"}, {"G", -EINVAL, "no number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 12345;
        char err[256] = "";
        int r = carve_parse_size(cases[i].in, &v, err, sizeof(err));
        if (r != cases[i].code)
            fail_msg("`%s': got %d, want %d (%s)", cases[i].in, r, cases[i].code, err);
        assert_non_null(strstr(err, cases[i].why));
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "`%s'", cases[i].in);
        assert_non_null(strstr(err, quoted));
        assert_int_equal(v, 12345); /* untouched on error */
    }
}

static void test_format(void **state)
{
    static const struct {
        uint64_t in;
        const char *want;
    } cases[] = {
        {0, "0 B"},          {123, "123 B"},         {1024, "1 KiB"},
        {512 * MiB, "512 MiB"}, {8 * GiB, "8 GiB"}, {3 * GiB / 2, "1.50 GiB"},
        {UINT64_MAX, "16384.00 PiB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        carve_format_size(cases[i].in, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
}

static void test_memory_spec(void **state)
{
    struct carve_memory_spec m;
    char err[256];
    assert_int_equal(carve_parse_memory_spec("8GiB", &m, err, sizeof(err)), 0);
    assert_int_equal(m.all, 8 * GiB);
    assert_int_equal(m.per_index_count, 0);

    assert_int_equal(carve_parse_memory_spec("0=8GiB,1=4G", &m, err, sizeof(err)), 0);
    assert_int_equal(m.all, 0);
    assert_int_equal(m.per_index[0], 8 * GiB);
    assert_int_equal(m.per_index[1], 4 * GiB);
    assert_int_equal(m.per_index[2], 0);
    assert_int_equal(m.per_index_count, 2);

    assert_int_equal(carve_parse_memory_spec("15=1G", &m, err, sizeof(err)), 0);
    assert_int_equal(m.per_index[15], GiB);
    /* 1 MiB is the least a cap may be: a bare `8' is 8 bytes, not a slice anyone can use */
    assert_int_equal(carve_parse_memory_spec("1048576", &m, err, sizeof(err)), 0);
    assert_int_equal(m.all, 1048576);
    assert_int_equal(carve_parse_memory_spec("1MiB", &m, err, sizeof(err)), 0);
    assert_int_equal(m.all, 1048576);

    static const struct {
        const char *in, *why;
    } bad[] = {
        {"0=1G,0=2G", "named twice"}, {"16=1G", "out of range"}, {"0=8G,", "empty entry"},
        {"a=1G", "not a number"},     {"8G,1=1G", "mixes"},       {"0=8XB", "unknown unit"},
        {"", "empty"},                {",0=1G", "empty entry"},   {"0=0", "zero"},
        {"-1=1G", "not a number"},    {"8", "a number without a unit is bytes"},
        {"0=8", "e.g. 8GiB"},         {"0=1G,1=512B", "less than 1 MiB"},
        {"1048575", "less than 1 MiB"},
        {"1 =1G", "not a number"},    {"99999999999999999999=1G", "out of range"},
        {"=1G", "not a number"},      {"0=", "empty"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (carve_parse_memory_spec(bad[i].in, &m, err, sizeof(err)) == 0)
            fail_msg("`%s' accepted", bad[i].in);
        if (!strstr(err, bad[i].why))
            fail_msg("`%s': error `%s' lacks `%s'", bad[i].in, err, bad[i].why);
    }
}

/* A slice's spec from --memory and the GPUs listed: IDX=SIZE caps the GPU of that index, and a
 * GPU whose index no IDX can name (16 and up) gets no cap; its index was read past the end of
 * the per-index table before. */
static void test_spec_build(void **state)
{
    (void)state;
    struct carve_gpu_info gpus[2] = {{.index = 0, .uuid = "GPU-00000000-0000-0000-0000-000000000001",
                                      .total = 80ULL << 30},
                                     {.index = 20, .uuid = "GPU-00000000-0000-0000-0000-000000000002",
                                      .total = 80ULL << 30}};
    struct carve_compute none;
    memset(&none, 0, sizeof(none));
    struct carve_slice_spec spec;
    char err[256] = "";
    assert_int_equal(carve_spec_build(&spec, "t", "0=1GiB", &none, gpus, 2, err, sizeof(err)), 0);
    assert_int_equal(spec.ndev, 2);
    assert_int_equal(spec.dev[0].cap, 1ULL << 30);
    assert_int_equal(spec.dev[1].index, 20);
    assert_int_equal(spec.dev[1].cap, 0);
    assert_int_equal(carve_spec_build(&spec, "t", "2GiB", &none, gpus, 2, err, sizeof(err)), 0);
    assert_int_equal(spec.dev[1].cap, 2ULL << 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_memory_spec),
        cmocka_unit_test(test_spec_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
