/* test_allocmap.c - libcarve's lock-free allocation map: growth by chained tables,
 * tombstones, reserved keys, and threads inserting and removing at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "allocmap.h"

#define MANY 200000u

static void test_grow_and_remove(void **state)
{
    (void)state;
    struct carve_allocmap m;
    memset(&m, 0, sizeof(m));
    for (uint64_t k = 1; k <= MANY; k++)
        assert_int_equal(carve_allocmap_insert(&m, k * 4096, k), 0);
    assert_int_equal(carve_allocmap_count(&m), MANY);
    uint64_t v;
    for (uint64_t k = 1; k <= MANY; k++) {
        assert_true(carve_allocmap_find(&m, k * 4096, &v));
        assert_int_equal(v, k);
    }
    for (uint64_t k = 1; k <= MANY; k += 2) {
        assert_true(carve_allocmap_remove(&m, k * 4096, &v));
        assert_int_equal(v, k);
        assert_false(carve_allocmap_remove(&m, k * 4096, &v));
    }
    assert_int_equal(carve_allocmap_count(&m), MANY / 2);
    for (uint64_t k = 1; k <= MANY; k += 2) /* tombstones are reused */
        assert_int_equal(carve_allocmap_insert(&m, k * 4096 + 1, k), 0);
    for (uint64_t k = 2; k <= MANY; k += 2)
        assert_true(carve_allocmap_find(&m, k * 4096, &v) && v == k);
    /* has_value sees live keys in every table, not removed ones */
    assert_true(carve_allocmap_has_value(&m, MANY));
    assert_true(carve_allocmap_has_value(&m, 2));
    assert_false(carve_allocmap_has_value(&m, MANY + 1));
    assert_true(carve_allocmap_remove(&m, 2 * 4096, &v));
    assert_false(carve_allocmap_has_value(&m, 2));
    assert_int_equal(carve_allocmap_insert(&m, 0, 1), -22);
    assert_int_equal(carve_allocmap_insert(&m, UINT64_MAX, 1), -22);
    carve_allocmap_reset(&m);
    assert_int_equal(carve_allocmap_count(&m), 0);
}

static struct carve_allocmap shared;

/* A key noted twice (a map refused because its address is mapped) loses only the pair
 * undone, wherever the two landed: the older note, met first, stays. */
static void test_remove_pair(void **state)
{
    (void)state;
    struct carve_allocmap m;
    memset(&m, 0, sizeof(m));
    uint64_t v;
    assert_int_equal(carve_allocmap_insert(&m, 0x7000, 1), 0);
    assert_true(carve_allocmap_remove(&m, 0x7000, &v)); /* a tombstone where it was */
    assert_int_equal(carve_allocmap_insert(&m, 0x7000, 11), 0);
    assert_int_equal(carve_allocmap_insert(&m, 0x7000, 22), 0);
    assert_false(carve_allocmap_remove_pair(&m, 0x7000, 33));
    assert_true(carve_allocmap_remove_pair(&m, 0x7000, 22));
    assert_false(carve_allocmap_remove_pair(&m, 0x7000, 22));
    assert_true(carve_allocmap_find(&m, 0x7000, &v));
    assert_int_equal(v, 11);
    assert_int_equal(carve_allocmap_count(&m), 1);
    assert_false(carve_allocmap_remove_pair(&m, 0, 0)); /* reserved key */
    carve_allocmap_reset(&m);
}

static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 40, bad = 0, v;
    for (int round = 0; round < 20; round++) {
        for (uint64_t k = 1; k <= 5000; k++)
            bad += carve_allocmap_insert(&shared, base + k, k) != 0;
        for (uint64_t k = 1; k <= 5000; k++)
            bad += !carve_allocmap_remove(&shared, base + k, &v) || v != k;
    }
    return (void *)(uintptr_t)bad;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[8];
    for (uintptr_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, churn, (void *)(i + 1));
    for (int i = 0; i < 8; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        assert_int_equal((uintptr_t)bad, 0);
    }
    assert_int_equal(carve_allocmap_count(&shared), 0);
    carve_allocmap_reset(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_remove),
        cmocka_unit_test(test_remove_pair),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
