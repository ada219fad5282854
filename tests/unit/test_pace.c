/* test_pace.c - a slice's pacing clocks (slice.h): GCRA admission with its tolerance, debts
 * and refunds, taking turns, and the counters, on synthetic clocks so that every number is
 * known in advance; then the same clocks moved by many threads and by another process. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "slice.h"

#define T 1000000000ull /* a synthetic "now": one second after the clock's origin */
#define THREADS 8
#define ROUNDS 20000

static char name[64];

static int make_slice(void **state)
{
    static int seq;
    snprintf(name, sizeof(name), "/carve.test-pace.%d.%d", (int)getpid(), seq++);
    struct carve_slice_spec spec = {.ndev = 2};
    snprintf(spec.name, sizeof(spec.name), "pace");
    for (int d = 0; d < 2; d++) {
        spec.dev[d].uuid[0] = (uint8_t)(0xb0 + d);
        spec.dev[d].index = d;
        spec.dev[d].compute.share_bp = 5000;
        spec.dev[d].board_entry = -1;
    }
    struct carve_slice *s = NULL;
    char err[256] = "";
    if (carve_slice_create(name, &spec, &s, err, sizeof(err)) != 0) {
        print_error("create %s: %s\n", name, err);
        return -1;
    }
    *state = s;
    return 0;
}

static int drop_slice(void **state)
{
    carve_slice_close(*state);
    return carve_slice_unlink(name) == 0 ? 0 : -1;
}

static void expect_clock(struct carve_slice *s, int dev, int64_t want)
{
    int64_t got = carve_slice_pace_clock(s, dev);
    if (got != want)
        fail_msg("dev %d: pace clock at T%+lld, want T%+lld", dev, (long long)(got - (int64_t)T),
                 (long long)(want - (int64_t)T));
}

static void expect_stats(struct carve_slice *s, int dev, uint64_t charged, uint64_t held,
                         uint64_t launches)
{
    struct carve_pace_stats st = carve_slice_pace_stats(s, dev);
    if (st.charged_ns != charged || st.held_ns != held || st.launches != launches)
        fail_msg("dev %d: charged %llu held %llu launches %llu, want %llu %llu %llu", dev,
                 (unsigned long long)st.charged_ns, (unsigned long long)st.held_ns,
                 (unsigned long long)st.launches, (unsigned long long)charged,
                 (unsigned long long)held, (unsigned long long)launches);
}

static void test_fresh(void **state)
{
    struct carve_slice *s = *state;
    for (int d = 0; d < 2; d++) {
        assert_int_equal(carve_slice_pace_clock(s, d), 0);
        assert_int_equal(carve_slice_queue_clock(s, d), 0);
        expect_stats(s, d, 0, 0, 0);
    }
    struct carve_compute c = carve_slice_compute(s, 1);
    assert_int_equal(c.share_bp, 5000);
}

/* At 50%, 1000 ns of GPU time pays for 2000 ns of wall time. */
static void test_pace_admit_and_wait(void **state)
{
    struct carve_slice *s = *state;
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T), 0);
    expect_clock(s, 0, T + 2000);
    expect_stats(s, 0, 1000, 0, 1);
    /* no tolerance: the next launch waits until the clock is paid */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T), 2000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T + 1500), 500);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T + 1999), 1);
    expect_clock(s, 0, T + 2000); /* refusals move nothing */
    expect_stats(s, 0, 1000, 0, 1);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T + 2000), 0);
    expect_clock(s, 0, T + 4000);
    expect_stats(s, 0, 2000, 0, 2);
    /* the other device has its own clock */
    expect_clock(s, 1, 0);
    expect_stats(s, 1, 0, 0, 0);
}

static void test_pace_tolerance(void **state)
{
    struct carve_slice *s = *state;
    /* tau 4000 at 2000 a launch: admitted at T, T+2000 and T+4000 ahead (at most tau) */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 0);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 0);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 0);
    expect_clock(s, 0, T + 6000);
    /* 6000 ahead is 2000 more than tau */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 2000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T + 2000), 0);
    expect_clock(s, 0, T + 8000);
    expect_stats(s, 0, 4000, 0, 4);

    /* one short of tau: T and T+2000 ahead go, T+4000 ahead is 1 ns too far */
    assert_int_equal(carve_slice_pace(s, 1, 1000, 5000, 3999, T), 0);
    assert_int_equal(carve_slice_pace(s, 1, 1000, 5000, 3999, T), 0);
    assert_int_equal(carve_slice_pace(s, 1, 1000, 5000, 3999, T), 1);
    expect_clock(s, 1, T + 4000);
    expect_stats(s, 1, 2000, 0, 2);
}

/* A tolerance as large as the clock itself admits everything; it must not wrap around to a
 * horizon in the past (which would hold every launch for ever). */
static void test_pace_huge_tolerance(void **state)
{
    struct carve_slice *s = *state;
    for (int i = 0; i < 5; i++)
        assert_int_equal(carve_slice_pace(s, 0, 1000000, 5000, UINT64_MAX, T), 0);
    assert_int_equal(carve_slice_pace(s, 0, 1000000, 5000, (uint64_t)INT64_MAX, T), 0);
    expect_stats(s, 0, 6000000, 0, 6);
}

static void test_pace_idle_earns_no_credit(void **state)
{
    struct carve_slice *s = *state;
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 0);
    /* a second idle: the clock starts again from now, not from where it stood */
    uint64_t later = T + 1000000000ull;
    int admitted = 0;
    while (carve_slice_pace(s, 0, 1000, 5000, 4000, later) == 0 && admitted < 100)
        admitted++;
    assert_int_equal(admitted, 3); /* a burst of tau's worth, not of the idle second's */
    expect_clock(s, 0, (int64_t)later + 6000);
}

static void test_pace_rates(void **state)
{
    struct carve_slice *s = *state;
    /* the clock moves cost / share: 100% -> 1000, 25% -> 4000, 0.01% -> 10,000,000 */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 10000, 0, T), 0);
    expect_clock(s, 0, T + 1000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 2500, 0, T + 1000), 0);
    expect_clock(s, 0, T + 5000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 1, 0, T + 5000), 0);
    expect_clock(s, 0, T + 5000 + 10000000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 10000, 0, T + 5000), 10000000);
    expect_stats(s, 0, 3000, 0, 3);
    /* free work moves nothing but the launch count */
    assert_int_equal(carve_slice_pace(s, 1, 0, 5000, 0, T), 0);
    assert_int_equal(carve_slice_pace(s, 1, 0, 5000, 0, T), 0);
    expect_clock(s, 1, T);
    expect_stats(s, 1, 0, 0, 2);
}

/* A tenant that launches 500 ns kernels back to back at 25%, waiting as told: after the
 * first burst of tau, the k-th launch goes at T + k * 2000 - tau. */
static void test_pace_sustained(void **state)
{
    struct carve_slice *s = *state;
    const uint64_t tau = 10000, n = 1000;
    uint64_t now = T, held = 0;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t wait;
        while ((wait = carve_slice_pace(s, 0, 500, 2500, tau, now)) != 0) {
            now += wait;
            held += wait;
            carve_slice_note_held(s, 0, wait);
        }
        uint64_t want = k * 2000 <= tau ? T : T + k * 2000 - tau;
        if (now != want)
            fail_msg("launch %llu at T+%llu, want T+%llu", (unsigned long long)k,
                     (unsigned long long)(now - T), (unsigned long long)(want - T));
    }
    expect_clock(s, 0, (int64_t)(T + n * 2000));
    assert_int_equal(held, (n - 1) * 2000 - tau);
    expect_stats(s, 0, n * 500, held, n);
    /* 25% of the time it ran, give or take the burst */
    assert_int_equal(n * 500 * 10000 / (now - T + 2000 + tau), 2500);
}

static void test_pace_debt(void **state)
{
    struct carve_slice *s = *state;
    carve_slice_pace_debt(s, 0, 1000, 5000, T);
    expect_clock(s, 0, T + 2000);
    expect_stats(s, 0, 1000, 0, 0); /* charged, but no launch */
    /* a debt is never refused, however far ahead it puts the clock */
    for (int i = 0; i < 9; i++)
        carve_slice_pace_debt(s, 0, 1000, 5000, T);
    expect_clock(s, 0, T + 20000);
    expect_stats(s, 0, 10000, 0, 0);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T), 16000);
    /* and the slice pays it off in wall time */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 4000, T + 16000), 0);
    expect_clock(s, 0, T + 22000);
    /* a debt after an idle spell starts from now */
    carve_slice_pace_debt(s, 1, 3000, 10000, T + 5000);
    expect_clock(s, 1, T + 5000 + 3000);
    carve_slice_pace_debt(s, 1, 1000, 2000, T + 1000000);
    expect_clock(s, 1, T + 1000000 + 5000);
    expect_stats(s, 1, 4000, 0, 0);
}

static void test_pace_refund(void **state)
{
    struct carve_slice *s = *state;
    for (int i = 0; i < 3; i++)
        assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 1000000, T), 0);
    expect_clock(s, 0, T + 6000);
    /* back by cost / share */
    carve_slice_pace_refund(s, 0, 1000, 5000, T);
    expect_clock(s, 0, T + 4000);
    carve_slice_pace_refund(s, 0, 1000, 10000, T);
    expect_clock(s, 0, T + 3000);
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T), 3000);
    /* never earlier than now */
    carve_slice_pace_refund(s, 0, 1000000, 5000, T + 1000);
    expect_clock(s, 0, T + 1000);
    /* and a clock already behind now is not moved, back or forth */
    carve_slice_pace_refund(s, 0, 1000, 5000, T + 5000);
    expect_clock(s, 0, T + 1000);
    expect_stats(s, 0, 3000, 0, 3); /* a refund is no launch */
    /* a refund on a fresh clock leaves it alone */
    carve_slice_pace_refund(s, 1, 1000, 5000, T);
    expect_clock(s, 1, 0);
    /* refunded time admits sooner */
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T + 1000), 0);
    expect_clock(s, 0, T + 3000);
}

static void test_turn_admit(void **state)
{
    struct carve_slice *s = *state;
    /* 1000 ns at 25%: the queue moves at full speed, the share clock at 25% */
    carve_slice_turn_admit(s, 0, 1000, 2500, T);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 1000);
    expect_clock(s, 0, T + 4000);
    expect_stats(s, 0, 1000, 0, 1);
    /* queued behind the first */
    carve_slice_turn_admit(s, 0, 1000, 2500, T);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 2000);
    expect_clock(s, 0, T + 8000);
    /* now is inside the queue: it still ends after what is queued */
    carve_slice_turn_admit(s, 0, 1000, 2500, T + 1500);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 3000);
    expect_clock(s, 0, T + 12000);
    /* after an idle spell both clocks start from now */
    assert_int_equal(carve_slice_turn_admit(s, 0, 1000, 2500, T + 1000000), T + 1001000);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 1001000);
    expect_clock(s, 0, T + 1004000);
    expect_stats(s, 0, 4000, 0, 4);
    /* a turn is never refused: the share clock may run far ahead of tau */
    for (int i = 0; i < 10; i++)
        carve_slice_turn_admit(s, 1, 1000, 10000, T);
    assert_int_equal(carve_slice_queue_clock(s, 1), T + 10000);
    expect_clock(s, 1, T + 10000);
    expect_stats(s, 1, 10000, 0, 10);
    assert_int_equal(carve_slice_pace(s, 1, 1000, 10000, 2000, T), 8000);
    /* pace does not move the queue */
    assert_int_equal(carve_slice_pace(s, 1, 1000, 10000, 0, T + 10000), 0);
    assert_int_equal(carve_slice_queue_clock(s, 1), T + 10000);
}

static void test_pace_correct(void **state)
{
    struct carve_slice *s = *state;
    carve_slice_turn_admit(s, 0, 1000, 5000, T);
    expect_clock(s, 0, T + 2000);
    /* it cost 500 more: both clocks move on, the share one at the rate */
    carve_slice_pace_correct(s, 0, 500, 5000, T);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 1500);
    expect_clock(s, 0, T + 3000);
    expect_stats(s, 0, 1500, 0, 1);
    /* 800 less: both move back, and the share clock not before now */
    carve_slice_pace_correct(s, 0, -800, 5000, T);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 700);
    expect_clock(s, 0, T + 1400);
    expect_stats(s, 0, 700, 0, 1); /* the time charged is what ran */
    /* a queue already past now has drained: what is queued after it is not moved */
    carve_slice_pace_correct(s, 0, -1000, 5000, T + 1000);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 700);
    expect_clock(s, 0, T + 1000);
    expect_stats(s, 0, 0, 0, 1); /* never below nothing */
    carve_slice_pace_correct(s, 0, 5000, 5000, T + 1000);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 700);
    expect_clock(s, 0, T + 11000);
    /* the next admission starts from now */
    assert_int_equal(carve_slice_turn_admit(s, 0, 100, 5000, T + 1000), T + 1100);
    /* a device never queued on keeps an unset queue clock; nothing on a bad device */
    carve_slice_pace_correct(s, 1, 700, 10000, T);
    assert_int_equal(carve_slice_queue_clock(s, 1), 0);
    expect_clock(s, 1, T + 700);
    carve_slice_pace_correct(s, 99, 700, 10000, T);
    carve_slice_pace_correct(s, -1, 700, 10000, T);
}

static void test_note_launcher(void **state)
{
    struct carve_slice *s = *state;
    assert_int_equal(carve_slice_shared_until(s, 0), 0);
    /* one process, however often: never shared */
    for (int i = 0; i < 3; i++)
        carve_slice_note_launcher(s, 0, 100, T + (uint64_t)i, 1000);
    assert_int_equal(carve_slice_shared_until(s, 0), 0);
    /* another process launches: shared for hold_ns from then, and each change moves it on */
    carve_slice_note_launcher(s, 0, 200, T + 10, 1000);
    assert_int_equal(carve_slice_shared_until(s, 0), T + 1010);
    carve_slice_note_launcher(s, 0, 200, T + 500, 1000);
    assert_int_equal(carve_slice_shared_until(s, 0), T + 1010);
    carve_slice_note_launcher(s, 0, 100, T + 600, 1000);
    assert_int_equal(carve_slice_shared_until(s, 0), T + 1600);
    /* per GPU; nothing on a bad one */
    assert_int_equal(carve_slice_shared_until(s, 1), 0);
    carve_slice_note_launcher(s, 99, 100, T, 1000);
    assert_int_equal(carve_slice_shared_until(s, 99), 0);
}

static void test_note_held_and_stats(void **state)
{
    struct carve_slice *s = *state;
    carve_slice_note_held(s, 0, 100);
    carve_slice_note_held(s, 0, 250);
    carve_slice_note_held(s, 1, 7);
    expect_stats(s, 0, 0, 350, 0);
    expect_stats(s, 1, 0, 7, 0);
    expect_clock(s, 0, 0); /* holding is only counted */
    assert_int_equal(carve_slice_pace(s, 0, 10, 10000, 0, T), 0);
    carve_slice_turn_admit(s, 0, 20, 10000, T);
    carve_slice_pace_debt(s, 0, 30, 10000, T);
    expect_stats(s, 0, 60, 350, 2);
    expect_stats(s, 1, 0, 7, 0);
}

static void test_bad_device(void **state)
{
    struct carve_slice *s = *state;
    static const int bad[] = {-1, 2, CARVE_SLICE_MAX_DEVICES, 1000};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int d = bad[i];
        carve_slice_pace(s, d, 1000, 5000, 0, T);
        carve_slice_pace_debt(s, d, 1000, 5000, T);
        carve_slice_pace_refund(s, d, 1000, 5000, T);
        carve_slice_turn_admit(s, d, 1000, 5000, T);
        carve_slice_note_held(s, d, 1000);
        carve_slice_pace_stats(s, d);
        carve_slice_pace_clock(s, d);
        carve_slice_queue_clock(s, d);
    }
    for (int d = 0; d < 2; d++) { /* the real devices saw none of it */
        expect_clock(s, d, 0);
        assert_int_equal(carve_slice_queue_clock(s, d), 0);
        expect_stats(s, d, 0, 0, 0);
    }
}

struct worker {
    struct carve_slice *s;
    int kind; /* 0: pace with a wide tolerance, 1: turn_admit, 2: pace with a narrow one */
    uint64_t admitted;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (w->kind == 0)
            w->admitted += carve_slice_pace(w->s, 0, 100, 5000, 1000000000000ull, T) == 0;
        else if (w->kind == 1)
            carve_slice_turn_admit(w->s, 0, 100, 5000, T);
        else
            w->admitted += carve_slice_pace(w->s, 1, 100, 10000, 1000, T) == 0;
    }
    return NULL;
}

static void run_workers(struct carve_slice *s, const int *kinds, struct worker *w)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){s, kinds[i], 0};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
}

static void test_threads(void **state)
{
    struct carve_slice *s = *state;
    /* every step is counted once: half the threads pace, half take turns, all at once */
    static const int mixed[THREADS] = {0, 1, 0, 1, 0, 1, 0, 1};
    struct worker w[THREADS];
    run_workers(s, mixed, w);
    uint64_t n = (uint64_t)THREADS * ROUNDS;
    for (int i = 0; i < THREADS; i++)
        if (w[i].kind == 0)
            assert_int_equal(w[i].admitted, ROUNDS);
    expect_clock(s, 0, (int64_t)(T + n * 200));
    assert_int_equal(carve_slice_queue_clock(s, 0), T + n / 2 * 100);
    expect_stats(s, 0, n * 100, 0, n);

    /* at one instant, a tolerance of 1000 admits exactly 11 launches of 100, no more */
    static const int narrow[THREADS] = {2, 2, 2, 2, 2, 2, 2, 2};
    run_workers(s, narrow, w);
    uint64_t admitted = 0;
    for (int i = 0; i < THREADS; i++)
        admitted += w[i].admitted;
    assert_int_equal(admitted, 11);
    expect_clock(s, 1, T + 1100);
    expect_stats(s, 1, 1100, 0, 11);
}

static void test_across_processes(void **state)
{
    struct carve_slice *s = *state;
    assert_int_equal(carve_slice_pace(s, 0, 1000, 5000, 0, T), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct carve_slice *c = NULL;
        char err[256];
        if (carve_slice_open(name, &c, err, sizeof(err)) != 0)
            _exit(10);
        if (carve_slice_pace_clock(c, 0) != (int64_t)T + 2000)
            _exit(11); /* the parent's launch is seen */
        if (carve_slice_pace(c, 0, 1000, 5000, 0, T) != 2000)
            _exit(12);
        carve_slice_turn_admit(c, 0, 1000, 5000, T + 2000);
        carve_slice_note_held(c, 0, 2000);
        carve_slice_close(c);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    expect_clock(s, 0, T + 4000);
    assert_int_equal(carve_slice_queue_clock(s, 0), T + 3000);
    expect_stats(s, 0, 2000, 2000, 2);
}

/* Work so costly that its wall time does not fit the clock still moves the clock ahead (it
 * saturates): the slice waits, rather than the clock wrapping round into the past. Run in a
 * child, so that a sanitizer stopping at the overflow fails this test alone. */
static int huge_cost(struct carve_slice *s)
{
    if (carve_slice_pace(s, 0, UINT64_MAX, 1, 0, T) != 0)
        return 10;
    if (carve_slice_pace_clock(s, 0) <= (int64_t)T)
        return 11; /* the clock went back */
    if (carve_slice_pace(s, 0, 1000, 5000, 0, T + 1000) == 0)
        return 12; /* and the next launch went at once */
    carve_slice_pace_debt(s, 1, UINT64_MAX / 2, 3, T);
    if (carve_slice_pace_clock(s, 1) <= (int64_t)T)
        return 13;
    carve_slice_turn_admit(s, 1, UINT64_MAX, 10000, T);
    if (carve_slice_queue_clock(s, 1) <= (int64_t)T)
        return 14;
    if (carve_slice_pace_clock(s, 1) <= (int64_t)T)
        return 15;
    return 0;
}

static void test_pace_huge_cost(void **state)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(huge_cost(*state));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("huge cost: child %s %d (10-15: a check failed, 1: a sanitizer stopped it)",
                 WIFEXITED(status) ? "exited" : "killed by signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

#define PACE_TEST(f) cmocka_unit_test_setup_teardown(f, make_slice, drop_slice)

int main(void)
{
    const struct CMUnitTest tests[] = {
        PACE_TEST(test_fresh),
        PACE_TEST(test_pace_admit_and_wait),
        PACE_TEST(test_pace_tolerance),
        PACE_TEST(test_pace_huge_tolerance),
        PACE_TEST(test_pace_idle_earns_no_credit),
        PACE_TEST(test_pace_rates),
        PACE_TEST(test_pace_sustained),
        PACE_TEST(test_pace_debt),
        PACE_TEST(test_pace_refund),
        PACE_TEST(test_turn_admit),
        PACE_TEST(test_pace_correct),
        PACE_TEST(test_note_launcher),
        PACE_TEST(test_note_held_and_stats),
        PACE_TEST(test_bad_device),
        PACE_TEST(test_threads),
        PACE_TEST(test_across_processes),
        PACE_TEST(test_pace_huge_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
