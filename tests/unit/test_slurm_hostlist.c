/* test_slurm_hostlist.c - Slurm hostlist expressions as gres.conf writes them (slurm/
 * hostlist.c): NodeName= matched against a node's name, File= counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "hostlist.h"

static void test_match_lists_and_ranges(void **state)
{
    (void)state;
    const char *expr = "vm,gpu[01-16,20]";
    assert_true(carve_hostlist_match(expr, "vm"));
    assert_true(carve_hostlist_match(expr, "gpu01"));
    assert_true(carve_hostlist_match(expr, "gpu09"));
    assert_true(carve_hostlist_match(expr, "gpu16"));
    assert_true(carve_hostlist_match(expr, "gpu20"));
    assert_false(carve_hostlist_match(expr, "gpu1")); /* [01-16] is zero-padded */
    assert_false(carve_hostlist_match(expr, "gpu17"));
    assert_false(carve_hostlist_match(expr, "gpu00"));
    assert_false(carve_hostlist_match(expr, "gpu016"));
    assert_false(carve_hostlist_match(expr, "gpu"));
    assert_false(carve_hostlist_match(expr, "vm1"));
    assert_false(carve_hostlist_match(expr, "v"));
    assert_false(carve_hostlist_match(expr, ""));
    assert_false(carve_hostlist_match(expr, NULL));
    assert_false(carve_hostlist_match(NULL, "vm"));
    assert_true(carve_hostlist_match("node[1-16]", "node1"));  /* no padding */
    assert_true(carve_hostlist_match("node[1-16]", "node10"));
    assert_false(carve_hostlist_match("node[1-16]", "node01"));
    assert_true(carve_hostlist_match("n[001-100]", "n042"));
    assert_true(carve_hostlist_match("n[001-100]", "n100"));
    assert_false(carve_hostlist_match("n[001-100]", "n42"));
    assert_true(carve_hostlist_match("n[8-12]", "n9"));
    assert_true(carve_hostlist_match("n[8-12]", "n11"));
    assert_false(carve_hostlist_match("n[8-12]", "n09"));
    assert_true(carve_hostlist_match("n[3]", "n3"));
    assert_true(carve_hostlist_match("plain", "plain"));
    assert_false(carve_hostlist_match("plain", "plainer"));
}

static void test_match_suffixes_and_groups(void **state)
{
    (void)state;
    assert_true(carve_hostlist_match("rack[1-2]-n[01-04]", "rack2-n03"));
    assert_false(carve_hostlist_match("rack[1-2]-n[01-04]", "rack3-n03"));
    assert_false(carve_hostlist_match("rack[1-2]-n[01-04]", "rack2-n05"));
    assert_true(carve_hostlist_match("gpu[1-2]a", "gpu2a"));
    assert_false(carve_hostlist_match("gpu[1-2]a", "gpu2"));
    /* digits after the bracket: the range takes some of the name's digits, not all */
    assert_true(carve_hostlist_match("n[1-2]0", "n10"));
    assert_true(carve_hostlist_match("n[1-9,10-99]5", "n125"));
    assert_true(carve_hostlist_match("all", "anything")); /* ALL, in any case */
    assert_true(carve_hostlist_match("ALL", "n1"));
    /* many groups that each take digits of several lengths: answered at once */
    const char *slow = "[0-9,00-99,000-999][0-9,00-99,000-999][0-9,00-99,000-999]"
                       "[0-9,00-99,000-999][0-9,00-99,000-999][0-9,00-99,000-999]x";
    assert_false(carve_hostlist_match(slow, "000000000000000000000000"));
    assert_true(carve_hostlist_match(slow, "000000x"));
}

static void test_match_malformed(void **state)
{
    (void)state;
    const char *bad[] = {"gpu[01-16", "gpu01-16]", "gpu[16-01]", "gpu[a-b]", "gpu[]",
                         "gpu[1-]", "gpu[-1]", "gpu[[1]]", "gpu[1,,2]", "gpu[1-2-3]",
                         "gpu[1234567890123456789]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(carve_hostlist_match(bad[i], "gpu1"));
        assert_false(carve_hostlist_match(bad[i], "gpu01"));
        assert_int_equal(carve_hostlist_count(bad[i]), -1);
    }
    /* a malformed name beside a good one: the good one still matches; an unclosed bracket
       takes the rest of the expression with it */
    assert_true(carve_hostlist_match("gpu[x],vm", "vm"));
    assert_false(carve_hostlist_match("gpu[1-,vm", "vm"));
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_false(carve_hostlist_match(longname, longname)); /* past any host name */
}

static void test_count(void **state)
{
    (void)state;
    assert_int_equal(carve_hostlist_count("/dev/nvidia0"), 1);
    assert_int_equal(carve_hostlist_count("/dev/nvidia[0-3]"), 4);
    assert_int_equal(carve_hostlist_count("/dev/nvidia[0-1],/dev/nvidia3"), 3);
    assert_int_equal(carve_hostlist_count("/dev/nvidia[0-1,4-5]"), 4);
    assert_int_equal(carve_hostlist_count("r[1-2]n[1-3]"), 6);
    assert_int_equal(carve_hostlist_count(""), 0);
    assert_int_equal(carve_hostlist_count("a,,b"), 2);
    assert_int_equal(carve_hostlist_count("ALL"), -1);
    assert_int_equal(carve_hostlist_count(NULL), -1);
    assert_int_equal(carve_hostlist_count("n[0-999999999]"), CARVE_HOSTLIST_MAX);
    assert_int_equal(carve_hostlist_count("n[0-9999]m[0-9999]"), CARVE_HOSTLIST_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_lists_and_ranges),
        cmocka_unit_test(test_match_suffixes_and_groups),
        cmocka_unit_test(test_match_malformed),
        cmocka_unit_test(test_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
