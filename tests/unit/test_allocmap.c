/* test_allocmap.c - libcarve's lock-free allocation map: growth by chained tables,
 * tombstones, reserved keys, value words changed in place, and threads inserting, removing
 * and counting at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
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
    /* value_of finds live keys in every table, not removed ones, and its word is the value */
    _Atomic uint64_t *w = carve_allocmap_value_of(&m, (uint64_t)MANY * 4096);
    assert_non_null(w);
    atomic_fetch_add(w, 5);
    assert_true(carve_allocmap_find(&m, (uint64_t)MANY * 4096, &v) && v == MANY + 5);
    assert_non_null(carve_allocmap_value_of(&m, 2 * 4096));
    assert_null(carve_allocmap_value_of(&m, 3 * 4096)); /* removed above */
    assert_null(carve_allocmap_value_of(&m, 0));
    assert_true(carve_allocmap_remove(&m, 2 * 4096, &v));
    assert_null(carve_allocmap_value_of(&m, 2 * 4096));
    assert_int_equal(carve_allocmap_insert(&m, 0, 1), -22);
    assert_int_equal(carve_allocmap_insert(&m, UINT64_MAX, 1), -22);
    carve_allocmap_reset(&m);
    assert_int_equal(carve_allocmap_count(&m), 0);
}

static struct carve_allocmap shared;

/* Threads counting on keys' value words at once (libcarve's mapping counts): every change
 * lands, on the key it was meant for. */
static struct carve_allocmap counts;

static void *count_up_down(void *arg)
{
    uint64_t key = ((uintptr_t)arg % 4 + 1) * 4096;
    for (int i = 0; i < 100000; i++) {
        _Atomic uint64_t *w = carve_allocmap_value_of(&counts, key);
        atomic_fetch_add(w, 3);
        atomic_fetch_sub(w, 1);
    }
    return NULL;
}

static void test_value_of_threads(void **state)
{
    (void)state;
    pthread_t t[8];
    uint64_t v;
    for (uint64_t k = 1; k <= 4; k++)
        assert_int_equal(carve_allocmap_insert(&counts, k * 4096, k << 32), 0);
    for (uintptr_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, count_up_down, (void *)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (uint64_t k = 1; k <= 4; k++) {
        assert_true(carve_allocmap_find(&counts, k * 4096, &v));
        assert_int_equal(v, (k << 32) + 2 * 2 * 100000);
    }
    carve_allocmap_reset(&counts);
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
        cmocka_unit_test(test_value_of_threads),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
