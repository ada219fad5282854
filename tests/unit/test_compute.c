/* test_compute.c - compute shares: parsing "30%"/"30%+" and priorities, formatting them back,
 * the rate policy among the slices of one GPU, and the time windows that policy hands out.
 * Expected numbers are worked out by hand from the policy in compute.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compute.h"

#define YIELD 1000u /* batch_yield_bp used unless a test says otherwise: 10% */

enum { CAP = CARVE_COMPUTE_CAP, GUAR = CARVE_COMPUTE_GUARANTEE };
enum { NORMAL = CARVE_PRIO_NORMAL, LATENCY = CARVE_PRIO_LATENCY, BATCH = CARVE_PRIO_BATCH };

static struct carve_peer peer(uint32_t share_bp, int mode, int prio, bool active)
{
    struct carve_peer p = {{share_bp, (uint8_t)mode, (uint8_t)prio}, active, 0};
    return p;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static void expect_compute(const char *s, uint32_t share_bp, int mode)
{
    struct carve_compute c = {0, 0xee, CARVE_PRIO_NORMAL};
    char err[512] = "";
    int rc = carve_parse_compute(s, &c, err, sizeof(err));
    if (rc != 0)
        fail_msg("`%s' refused (%d): %s", s, rc, err);
    if (c.share_bp != share_bp || c.mode != mode)
        fail_msg("`%s': share_bp %u mode %u, want %u mode %d", s, c.share_bp, c.mode, share_bp,
                 mode);
}

static void expect_bad_compute(const char *s)
{
    struct carve_compute c = {0, 0, 0};
    char err[4096] = "";
    int rc = carve_parse_compute(s, &c, err, sizeof(err));
    if (rc != -EINVAL)
        fail_msg("`%.80s' gave %d (share_bp %u mode %u), want -EINVAL", s, rc, c.share_bp,
                 c.mode);
    if (!err[0])
        fail_msg("`%.80s' refused without a message", s);
    /* a long value is named by its first 64 bytes and `...', so that the reason and the
     * accepted forms still fit the caller's buffer */
    char named[80];
    snprintf(named, sizeof(named), "`%.64s%s'", s, strlen(s) > 64 ? "..." : "");
    if (!strstr(err, named))
        fail_msg("message for `%.80s' does not name it as %s: %s", s, named, err);
    if (!strstr(err, "30%+") || !strstr(err, "100"))
        fail_msg("message for `%.80s' does not give the accepted forms: %s", s, err);
}

static void test_parse_accepts(void **state)
{
    expect_compute("30%", 3000, CAP);
    expect_compute("30", 3000, CAP);
    expect_compute("12.5%", 1250, CAP);
    expect_compute("12.5", 1250, CAP);
    expect_compute("30%+", 3000, GUAR);
    expect_compute("30+", 3000, GUAR);
    expect_compute("12.5%+", 1250, GUAR);
    expect_compute("12.05%", 1205, CAP);
    expect_compute("0.01%", 1, CAP);  /* the smallest share */
    expect_compute("0.01%+", 1, GUAR);
    expect_compute("1%", 100, CAP);
    expect_compute("99.99%", 9999, CAP);
    expect_compute("100%", 10000, CAP); /* the whole GPU */
    expect_compute("100", 10000, CAP);
    expect_compute("100.00%", 10000, CAP);
    expect_compute("100%+", 10000, GUAR);
    expect_compute("7.10%", 710, CAP);
    expect_compute(".5%", 50, CAP); /* carve plan's workload files read the same form */
    expect_compute(".5+", 50, GUAR);
}

static void test_parse_long_numbers(void **state)
{
    char buf[1024];
    /* many leading zeros are still thirty percent */
    memset(buf, '0', 600);
    strcpy(buf + 600, "30%");
    expect_compute(buf, 3000, CAP);
    /* as are many trailing zeros after the point */
    strcpy(buf, "30.");
    memset(buf + 3, '0', 600);
    strcpy(buf + 603, "%+");
    expect_compute(buf, 3000, GUAR);

    /* a huge number is more than 100%, however many digits: no wrap-around to a small one */
    expect_bad_compute("99999999999999999999999999999999999999%");
    expect_bad_compute("18446744073709551646%"); /* 2^64 + 30 */
    expect_bad_compute("18446744073709551616");  /* 2^64 */
    expect_bad_compute("4294967326%");           /* 2^32 + 30 */
    expect_bad_compute("1000%");
    expect_bad_compute("101%");
    buf[0] = '1';
    memset(buf + 1, '0', 800);
    strcpy(buf + 801, "%");
    expect_bad_compute(buf);
    /* precision below a basis point is refused, not rounded, however far out it hides */
    expect_bad_compute("12.345%");
    expect_bad_compute("0.001%");
    strcpy(buf, "30.");
    memset(buf + 3, '0', 600);
    strcpy(buf + 603, "1%");
    expect_bad_compute(buf);
}

static void test_parse_rejects(void **state)
{
    static const char *const bad[] = {
        "0", "0%", "0.00%", "0%+", "0.0", "00000", "100.01%", "100.01%+", "-5%", "-5", "-0.5%",
        "abc", "", "30%%", "30%++", "30++", "30%+%", "+30%", "%", "+", "%+", ".", ".%", "NaN",
        "nan", "nan%", "NAN%+", "inf", "inf%", "INF", "infinity", "-inf%", "1e2", "1e2%",
        "0x1e", "30 %", " 30%", "30% ", "30%\n", "30%+ ", "3 0%", "30,5%", "1.2.3%", "30.5.%",
        "30%a", "30a", "30%-", "--5%", "½%", "30%+\t", "thirty",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_bad_compute(bad[i]);
}

static void test_parse_error_buffers(void **state)
{
    struct carve_compute c = {0, 0, 0};
    /* a short buffer is filled and terminated, never overrun */
    char small[12];
    memset(small, 'x', sizeof(small));
    assert_int_equal(carve_parse_compute("abcdefghijklmnopqrstuvwxyz", &c, small, 8), -EINVAL);
    assert_int_equal(strlen(small), 7);
    assert_int_equal(small[8], 'x');
    assert_int_equal(small[11], 'x');
    /* no buffer at all is allowed */
    assert_int_equal(carve_parse_compute("abc", &c, NULL, 0), -EINVAL);
    assert_int_equal(carve_parse_compute("0%", &c, NULL, 0), -EINVAL);
    char err[256] = "untouched";
    assert_int_equal(carve_parse_compute("abc", &c, err, 0), -EINVAL);
    assert_string_equal(err, "untouched");
    /* no input at all is refused with a message */
    err[0] = '\0';
    assert_int_equal(carve_parse_compute(NULL, &c, err, sizeof(err)), -EINVAL);
    assert_true(err[0] != '\0');
    /* the kinds of refusal are told apart */
    assert_int_equal(carve_parse_compute("0%", &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "zero"));
    assert_int_equal(carve_parse_compute("-5%", &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "negative"));
    assert_int_equal(carve_parse_compute("100.01%", &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "more than 100%"));
}

static void test_parse_priority(void **state)
{
    static const struct {
        const char *s;
        uint8_t want;
    } good[] = {{"normal", CARVE_PRIO_NORMAL}, {"latency", CARVE_PRIO_LATENCY},
                {"batch", CARVE_PRIO_BATCH}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        uint8_t p = 0xee;
        char err[256] = "";
        assert_int_equal(carve_parse_priority(good[i].s, &p, err, sizeof(err)), 0);
        assert_int_equal(p, good[i].want);
        assert_string_equal(carve_priority_name(p), good[i].s);
    }
    static const char *const bad[] = {"", "Latency", "BATCH", "Normal", "high", "low",
                                      "latency ", " batch", "batc", "normal2", "0", "1",
                                      "latency,batch", "realtime"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t p = 0xee;
        char err[256] = "";
        if (carve_parse_priority(bad[i], &p, err, sizeof(err)) != -EINVAL)
            fail_msg("priority `%s' accepted as %u", bad[i], p);
        if (!err[0] || !strstr(err, bad[i]))
            fail_msg("message for priority `%s' does not name it: %s", bad[i], err);
        assert_non_null(strstr(err, "latency"));
        assert_non_null(strstr(err, "batch"));
        assert_non_null(strstr(err, "normal"));
    }
    uint8_t p = 0xee;
    char err[256] = "";
    assert_int_equal(carve_parse_priority(NULL, &p, err, sizeof(err)), -EINVAL);
    assert_true(err[0] != '\0');
    assert_int_equal(carve_parse_priority("fast", &p, NULL, 0), -EINVAL);
    assert_string_equal(carve_priority_name(3), "unknown");
    assert_string_equal(carve_priority_name(255), "unknown");
}

/* ---- formatting ------------------------------------------------------------------------- */

static void expect_format(uint32_t bp, int mode, const char *want)
{
    struct carve_compute c = {bp, (uint8_t)mode, CARVE_PRIO_NORMAL};
    char buf[32];
    memset(buf, 'x', sizeof(buf));
    carve_format_compute(&c, buf, sizeof(buf));
    if (strcmp(buf, want) != 0)
        fail_msg("%u bp mode %d formats as `%s', want `%s'", bp, mode, buf, want);
}

static void test_format(void **state)
{
    expect_format(3000, CAP, "30%");
    expect_format(3000, GUAR, "30%+");
    expect_format(10000, CAP, "100%");
    expect_format(100, GUAR, "1%+");
    expect_format(1, CAP, "0.01%");
    expect_format(1205, CAP, "12.05%");
    expect_format(9999, GUAR, "99.99%+");
    /* a short buffer is cut and terminated */
    struct carve_compute c = {1205, GUAR, 0};
    char buf[8];
    memset(buf, 'x', sizeof(buf));
    carve_format_compute(&c, buf, 4);
    assert_string_equal(buf, "12.");
    assert_int_equal(buf[4], 'x');
}

/* compute.h gives "12.5%+" as an example of what carve_format_compute writes. */
static void test_format_documented_example(void **state)
{
    expect_format(1250, GUAR, "12.5%+");
    expect_format(1250, CAP, "12.5%");
}

static void test_format_round_trip(void **state)
{
    for (uint32_t bp = 1; bp <= CARVE_BP_FULL; bp++)
        for (int mode = CAP; mode <= GUAR; mode++) {
            struct carve_compute c = {bp, (uint8_t)mode, 0}, back = {0, 0, 0};
            char buf[32], err[256] = "";
            carve_format_compute(&c, buf, sizeof(buf));
            if (carve_parse_compute(buf, &back, err, sizeof(err)) != 0)
                fail_msg("%u bp mode %d formats as `%s', refused: %s", bp, mode, buf, err);
            if (back.share_bp != bp || back.mode != mode)
                fail_msg("%u bp mode %d -> `%s' -> %u bp mode %u", bp, mode, buf,
                         back.share_bp, back.mode);
        }
}

/* ---- the rate policy -------------------------------------------------------------------- */

static void expect_rate(const struct carve_peer *peers, int n, int me, uint32_t yield_bp,
                        uint32_t want, bool want_yielding)
{
    struct carve_rate r = carve_compute_rate(peers, n, me, yield_bp);
    if (r.rate_bp != want || r.yielding != want_yielding)
        fail_msg("peer %d of %d: rate %u%s, want %u%s", me, n, r.rate_bp,
                 r.yielding ? " (yielding)" : "", want, want_yielding ? " (yielding)" : "");
}

static void test_rate_cap(void **state)
{
    struct carve_peer one[] = {peer(3000, CAP, NORMAL, true)};
    expect_rate(one, 1, 0, YIELD, 3000, false); /* a cap holds even on an idle GPU */
    one[0].active = false;
    expect_rate(one, 1, 0, YIELD, 3000, false);

    /* nor does a cap grow or shrink with its peers */
    struct carve_peer p[] = {peer(3000, CAP, NORMAL, true), peer(9000, GUAR, NORMAL, true),
                             peer(8000, CAP, NORMAL, true), peer(0, NORMAL, NORMAL, true)};
    expect_rate(p, 4, 0, YIELD, 3000, false);
    expect_rate(p, 4, 2, YIELD, 8000, false);
    p[1].active = p[2].active = false;
    expect_rate(p, 4, 0, YIELD, 3000, false);
}

static void test_rate_guarantee_alone(void **state)
{
    /* with nobody else, a guarantee gets the whole GPU */
    struct carve_peer p[] = {peer(3000, GUAR, NORMAL, true)};
    expect_rate(p, 1, 0, YIELD, 10000, false);
    /* likewise when every peer is idle: inactive peers count for nothing */
    struct carve_peer q[] = {peer(5000, CAP, NORMAL, false), peer(3000, GUAR, NORMAL, true),
                             peer(6000, GUAR, NORMAL, false), peer(0, NORMAL, LATENCY, false)};
    expect_rate(q, 4, 1, YIELD, 10000, false);
    /* and peers with no share take nothing from it */
    struct carve_peer r[] = {peer(0, CAP, NORMAL, true), peer(3000, GUAR, NORMAL, true),
                             peer(0, GUAR, NORMAL, true)};
    expect_rate(r, 3, 1, YIELD, 10000, false);
}

static void test_rate_guarantee_split(void **state)
{
    /* a 30% cap leaves 70%, split 20:30 between the two guarantees: 28% and 42% */
    struct carve_peer p[] = {peer(3000, CAP, NORMAL, true), peer(2000, GUAR, NORMAL, true),
                             peer(3000, GUAR, NORMAL, true)};
    expect_rate(p, 3, 1, YIELD, 2800, false);
    expect_rate(p, 3, 2, YIELD, 4200, false);
    expect_rate(p, 3, 0, YIELD, 3000, false);
    /* the cap goes idle: 100% split 20:30 is 40% and 60% */
    p[0].active = false;
    expect_rate(p, 3, 1, YIELD, 4000, false);
    expect_rate(p, 3, 2, YIELD, 6000, false);
    /* the cap is back and the 30% guarantee idle: the 20% one has all the cap leaves */
    p[0].active = true;
    p[2].active = false;
    expect_rate(p, 3, 1, YIELD, 7000, false);

    /* two caps (20% + 10%) leave 70%, split 10:40:20 among three guarantees */
    struct carve_peer q[] = {peer(1000, GUAR, NORMAL, true), peer(2000, CAP, NORMAL, true),
                             peer(4000, GUAR, NORMAL, true), peer(1000, CAP, BATCH, true),
                             peer(2000, GUAR, LATENCY, true)};
    expect_rate(q, 5, 0, YIELD, 1000, false); /* 7000 * 10/70 */
    expect_rate(q, 5, 2, YIELD, 4000, false); /* 7000 * 40/70 */
    expect_rate(q, 5, 4, YIELD, 2000, false); /* 7000 * 20/70 */
    q[1].active = false; /* only the 10% cap: 9000 split 10:40:20, 5142.86 for the 40% */
    struct carve_rate r = carve_compute_rate(q, 5, 2, YIELD);
    assert_false(r.yielding);
    assert_in_range(r.rate_bp, 5142, 5143);
    /* a single guarantee among caps gets exactly what they leave */
    struct carve_peer s[] = {peer(1000, CAP, NORMAL, true), peer(1000, GUAR, NORMAL, true),
                             peer(2500, CAP, NORMAL, true)};
    expect_rate(s, 3, 1, YIELD, 6500, false);
}

static void test_rate_guarantee_floor_and_ceiling(void **state)
{
    /* a 90% cap leaves 10%: the 30% guarantee still gets its 30% */
    struct carve_peer p[] = {peer(9000, CAP, NORMAL, true), peer(3000, GUAR, NORMAL, true)};
    expect_rate(p, 2, 1, YIELD, 3000, false);
    /* caps adding up to more than the GPU leave nothing, and the guarantee keeps its share */
    struct carve_peer q[] = {peer(6000, CAP, NORMAL, true), peer(7000, CAP, NORMAL, true),
                             peer(1000, GUAR, NORMAL, true)};
    expect_rate(q, 3, 2, YIELD, 1000, false);
    /* 30% left, split 20:40: 10% and 20%, each below its share, so each gets its share */
    struct carve_peer r[] = {peer(7000, CAP, NORMAL, true), peer(2000, GUAR, NORMAL, true),
                             peer(4000, GUAR, NORMAL, true)};
    expect_rate(r, 3, 1, YIELD, 2000, false);
    expect_rate(r, 3, 2, YIELD, 4000, false);
    /* a 100% guarantee beside another: its floor is the whole GPU, and never more */
    struct carve_peer s[] = {peer(10000, GUAR, NORMAL, true), peer(5000, GUAR, NORMAL, true)};
    expect_rate(s, 2, 0, YIELD, 10000, false);
    expect_rate(s, 2, 1, YIELD, 5000, false); /* 10000 * 5000 / 15000 = 3333, floor 5000 */
    struct carve_peer t[] = {peer(10000, GUAR, NORMAL, true)};
    expect_rate(t, 1, 0, YIELD, 10000, false);
    /* the whole GPU is the ceiling however small the denominator */
    struct carve_peer u[] = {peer(1, GUAR, NORMAL, true)};
    expect_rate(u, 1, 0, YIELD, 10000, false);
}

static void test_rate_me_counts_itself(void **state)
{
    /* the asking slice counts itself whether or not it was marked active (it is launching) */
    struct carve_peer p[] = {peer(2000, GUAR, NORMAL, false), peer(3000, GUAR, NORMAL, true),
                             peer(3000, CAP, NORMAL, true)};
    expect_rate(p, 3, 0, YIELD, 2800, false);
    p[0].active = true;
    expect_rate(p, 3, 0, YIELD, 2800, false);
}

static void test_rate_unpaced(void **state)
{
    /* no share and normal priority: unpaced, whoever else is there */
    struct carve_peer p[] = {peer(0, CAP, NORMAL, true), peer(5000, CAP, NORMAL, true),
                             peer(5000, GUAR, NORMAL, true), peer(0, CAP, LATENCY, true)};
    expect_rate(p, 4, 0, YIELD, 10000, false);
    struct carve_peer q[] = {peer(0, GUAR, NORMAL, false)};
    expect_rate(q, 1, 0, YIELD, 10000, false);
    /* a latency slice with no share is not slowed either, even beside a 90% guarantee:
       paced at what it left, it was charged the guarantee's queue in its samples */
    expect_rate(p, 4, 3, YIELD, 10000, false);
    struct carve_peer r[] = {peer(9000, GUAR, NORMAL, true), peer(0, CAP, LATENCY, true)};
    expect_rate(r, 2, 1, YIELD, 10000, false);
}

static void test_rate_batch_yields(void **state)
{
    /* a 30% batch cap beside an active latency slice steps back to the yield rate */
    struct carve_peer p[] = {peer(3000, CAP, BATCH, true), peer(0, CAP, LATENCY, true)};
    expect_rate(p, 2, 0, YIELD, 1000, true);
    expect_rate(p, 2, 1, YIELD, 10000, false); /* the latency slice itself is not slowed */
    expect_rate(p, 2, 0, 2000, 2000, true);
    /* "at most": a batch cap already under the yield rate keeps its own */
    expect_rate(p, 2, 0, 5000, 3000, true);
    /* the latency slice goes idle: no yielding */
    p[1].active = false;
    expect_rate(p, 2, 0, YIELD, 3000, false);

    /* a batch guarantee would get all the latency cap leaves (60%), but yields, down to
       its guarantee (a promise) when the yield rate is below it */
    struct carve_peer q[] = {peer(4000, CAP, LATENCY, true), peer(3000, GUAR, BATCH, true)};
    expect_rate(q, 2, 1, YIELD, 3000, true);
    expect_rate(q, 2, 1, 5000, 5000, true);
    expect_rate(q, 2, 0, YIELD, 4000, false);
    q[0].active = false;
    expect_rate(q, 2, 1, YIELD, 10000, false);

    /* a batch slice with no share is paced at the yield rate while latency work runs */
    struct carve_peer r[] = {peer(0, CAP, BATCH, true), peer(0, CAP, NORMAL, true),
                             peer(2000, GUAR, LATENCY, true)};
    expect_rate(r, 3, 0, 1500, 1500, true);
    r[2].active = false;
    expect_rate(r, 3, 0, 1500, 10000, false);

    /* a batch slice does not yield to another batch slice or to a normal one */
    struct carve_peer s[] = {peer(3000, CAP, BATCH, true), peer(3000, CAP, BATCH, true),
                             peer(3000, CAP, NORMAL, true)};
    expect_rate(s, 3, 0, YIELD, 3000, false);
    /* a latency slice never yields */
    struct carve_peer t[] = {peer(3000, CAP, LATENCY, true), peer(3000, CAP, LATENCY, true)};
    expect_rate(t, 2, 0, YIELD, 3000, false);
}

/* ---- windows ---------------------------------------------------------------------------- */

static void expect_window(const struct carve_peer *peers, int n, int me, uint32_t yield_bp,
                          uint32_t want_off, uint32_t want_width)
{
    uint32_t off = 0xdead, width = 0xbeef;
    if (!carve_compute_window(peers, n, me, yield_bp, &off, &width))
        fail_msg("peer %d of %d: no window, want [%u, +%u)", me, n, want_off, want_width);
    if (off != want_off || width != want_width)
        fail_msg("peer %d of %d: window [%u, +%u), want [%u, +%u)", me, n, off, width,
                 want_off, want_width);
}

static void expect_no_window(const struct carve_peer *peers, int n, int me, uint32_t yield_bp)
{
    uint32_t off = 0xdead, width = 0xbeef;
    if (carve_compute_window(peers, n, me, yield_bp, &off, &width))
        fail_msg("peer %d of %d: window [%u, +%u), want none", me, n, off, width);
}

static void expect_around(const struct carve_peer *peers, int n, int me, int want_before,
                          uint32_t want_idle)
{
    uint32_t off, width, idle = 0xbeef;
    int before = -2;
    if (!carve_compute_window_around(peers, n, me, YIELD, &off, &width, &before, &idle))
        fail_msg("peer %d of %d: no window", me, n);
    if (before != want_before || idle != want_idle)
        fail_msg("peer %d of %d: before %d, idle after %u; want %d, %u", me, n, before, idle,
                 want_before, want_idle);
}

static void test_window_around(void **state)
{
    /* 30% and 70%: each window follows the other, no time left over */
    struct carve_peer p[] = {peer(3000, CAP, NORMAL, true), peer(7000, CAP, NORMAL, true)};
    expect_around(p, 2, 0, 1, 0);
    expect_around(p, 2, 1, 0, 0);
    /* 30% and 30%: the 40% no window covers follows the last one */
    struct carve_peer q[] = {peer(3000, CAP, NORMAL, true), peer(3000, CAP, NORMAL, true)};
    expect_around(q, 2, 0, 1, 0);
    expect_around(q, 2, 1, 0, 4000);
    /* idle and unshared slices take no place: the first window follows the last active one */
    struct carve_peer r[] = {peer(2000, CAP, NORMAL, true), peer(3000, CAP, NORMAL, false),
                             peer(0, CAP, NORMAL, true), peer(1000, CAP, NORMAL, true),
                             peer(1500, CAP, NORMAL, false)};
    expect_around(r, 5, 0, 3, 0);
    expect_around(r, 5, 3, 0, 7000);
    /* caps past 100% shrink to fill the period: nothing is left after the last */
    struct carve_peer s[] = {peer(6000, CAP, NORMAL, true), peer(7000, CAP, NORMAL, true)};
    expect_around(s, 2, 1, 0, 0);
}

static void test_window_alone(void **state)
{
    struct carve_peer one[] = {peer(3000, CAP, NORMAL, true)};
    expect_no_window(one, 1, 0, YIELD);
    /* peers that are idle or have no share do not make a window */
    struct carve_peer p[] = {peer(3000, CAP, NORMAL, false), peer(0, CAP, NORMAL, true),
                             peer(4000, GUAR, NORMAL, true), peer(0, CAP, LATENCY, true),
                             peer(2000, GUAR, BATCH, false)};
    expect_no_window(p, 5, 2, YIELD);
    /* a slice with no share has no window, even among paced ones */
    struct carve_peer q[] = {peer(3000, CAP, NORMAL, true), peer(0, CAP, NORMAL, true),
                             peer(3000, CAP, NORMAL, true)};
    expect_no_window(q, 3, 1, YIELD);
}

static void test_window_board_order(void **state)
{
    /* 20% cap, a guarantee with the 70% the caps leave, a 10% cap: back to back */
    struct carve_peer p[] = {peer(2000, CAP, NORMAL, true), peer(3000, GUAR, NORMAL, true),
                             peer(1000, CAP, NORMAL, true)};
    expect_window(p, 3, 0, YIELD, 0, 2000);
    expect_window(p, 3, 1, YIELD, 2000, 7000);
    expect_window(p, 3, 2, YIELD, 9000, 1000);

    /* two caps that leave part of the period free */
    struct carve_peer q[] = {peer(3000, CAP, NORMAL, true), peer(2000, CAP, NORMAL, true)};
    expect_window(q, 2, 0, YIELD, 0, 3000);
    expect_window(q, 2, 1, YIELD, 3000, 2000);
}

static void test_window_skips_idle_and_unshared(void **state)
{
    /* an idle 30% cap and an unshared slice in between take no room */
    struct carve_peer p[] = {peer(2000, CAP, NORMAL, true), peer(3000, CAP, NORMAL, false),
                             peer(0, CAP, NORMAL, true), peer(1000, CAP, NORMAL, true),
                             peer(1500, CAP, BATCH, true)};
    expect_window(p, 5, 0, YIELD, 0, 2000);
    expect_window(p, 5, 3, YIELD, 2000, 1000);
    expect_window(p, 5, 4, YIELD, 3000, 1500);
    /* the idle one wakes up and takes its place in board order */
    p[1].active = true;
    expect_window(p, 5, 1, YIELD, 2000, 3000);
    expect_window(p, 5, 3, YIELD, 5000, 1000);
    expect_window(p, 5, 4, YIELD, 6000, 1500);
}

static void test_window_yielding_batch(void **state)
{
    /* a 40% latency cap and a 30% batch cap: the batch slice's window is its yield rate */
    struct carve_peer p[] = {peer(3000, CAP, BATCH, true), peer(4000, CAP, LATENCY, true)};
    expect_window(p, 2, 0, YIELD, 0, 1000);
    expect_window(p, 2, 1, YIELD, 1000, 4000);
}

/* within one of n, compared as a proportion */
static void expect_near(uint32_t got, uint64_t num, uint64_t den, const char *what)
{
    uint64_t lo = num / den, hi = (num + den - 1) / den;
    if (got + 1 < lo || got > hi + 1)
        fail_msg("%s: %u, want about %llu/%llu", what, got, (unsigned long long)num,
                 (unsigned long long)den);
}

static void test_window_scaled(void **state)
{
    /* caps of 60% and 70% do not fit a period: 6000:7000 of 10000 */
    struct carve_peer p[] = {peer(6000, CAP, NORMAL, true), peer(7000, CAP, NORMAL, true)};
    uint32_t off0, w0, off1, w1;
    assert_true(carve_compute_window(p, 2, 0, YIELD, &off0, &w0));
    assert_true(carve_compute_window(p, 2, 1, YIELD, &off1, &w1));
    assert_int_equal(off0, 0);
    expect_near(w0, 6000ull * 10000, 13000, "width of the 60% cap");
    expect_near(off1, 6000ull * 10000, 13000, "offset of the 70% cap");
    expect_near(w1, 7000ull * 10000, 13000, "width of the 70% cap");
    assert_true(off0 + w0 <= off1);
    assert_true(off1 + w1 <= CARVE_BP_FULL);

    /* a 60% cap and a 50% guarantee held at its floor: the guarantee keeps its 50%, the cap
     * gets the rest (scaled in proportion with it, 6000:5000, until 2026-11-27: a 60%+
     * guarantee of small kernels beside a busy 50% cap got 49.6% on the simulated GPU) */
    struct carve_peer q[] = {peer(6000, CAP, NORMAL, true), peer(5000, GUAR, NORMAL, true)};
    expect_window(q, 2, 0, YIELD, 0, 5000);
    expect_window(q, 2, 1, YIELD, 5000, 5000);
    /* in either board order, and with caps that fit on their own */
    struct carve_peer g[] = {peer(6000, GUAR, NORMAL, true), peer(3000, CAP, NORMAL, true),
                             peer(3000, CAP, NORMAL, true)};
    expect_window(g, 3, 0, YIELD, 0, 6000);
    expect_window(g, 3, 1, YIELD, 6000, 2000);
    expect_window(g, 3, 2, YIELD, 8000, 2000);
    /* guarantees of 100% leave each cap its basis point, taken from them in proportion */
    struct carve_peer h[] = {peer(5000, GUAR, NORMAL, true), peer(5000, GUAR, NORMAL, true),
                             peer(4000, CAP, NORMAL, true)};
    expect_window(h, 3, 0, YIELD, 0, 4999);
    expect_window(h, 3, 1, YIELD, 4999, 4999);
    expect_window(h, 3, 2, YIELD, 9998, 1);

    /* three full caps: a third each */
    struct carve_peer r[] = {peer(10000, CAP, NORMAL, true), peer(10000, CAP, NORMAL, true),
                             peer(10000, CAP, NORMAL, true)};
    for (int me = 0; me < 3; me++) {
        uint32_t off, w;
        assert_true(carve_compute_window(r, 3, me, YIELD, &off, &w));
        expect_near(off, (uint64_t)me * 10000, 3, "offset of a full cap");
        expect_near(w, 10000, 3, "width of a full cap");
    }
}

/* A tiny share beside shares that add up to more than the period: scaled in proportion alone
 * its window was 0 basis points wide (1 * 10000 / 10001), and the slice never ran while the
 * others were active. Each paced slice keeps at least one basis point, the windows stay apart
 * and in the period, in either board order. */
static void test_window_scaled_tiny(void **state)
{
    (void)state;
    struct carve_peer p[] = {peer(1, CAP, NORMAL, true), peer(10000, CAP, NORMAL, true)};
    expect_window(p, 2, 0, YIELD, 0, 1);
    expect_window(p, 2, 1, YIELD, 1, 9999);
    struct carve_peer q[] = {peer(10000, CAP, NORMAL, true), peer(1, CAP, NORMAL, true)};
    expect_window(q, 2, 0, YIELD, 0, 9999);
    expect_window(q, 2, 1, YIELD, 9999, 1);
    /* two tiny ones among full caps, guarantees too: each keeps its basis point */
    struct carve_peer r[] = {peer(10000, CAP, NORMAL, true), peer(1, CAP, NORMAL, true),
                             peer(10000, CAP, NORMAL, true), peer(1, GUAR, NORMAL, true),
                             peer(9999, CAP, NORMAL, true)};
    uint32_t end = 0;
    for (int me = 0; me < 5; me++) {
        uint32_t off, w;
        assert_true(carve_compute_window(r, 5, me, YIELD, &off, &w));
        if (w < 1 || off < end || (uint64_t)off + w > CARVE_BP_FULL)
            fail_msg("peer %d: window [%u, +%u) after one ending at %u", me, off, w, end);
        end = off + w;
    }
}

/* Many boards, made up by a fixed LCG: every active paced slice gets a window, the windows of
 * a board are in board order and do not overlap, they stay in the period, and when the rates
 * fit they are exactly the rates. */
static uint32_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 33);
}

static void test_window_property(void **state)
{
    uint64_t seed = 42;
    for (int round = 0; round < 5000; round++) {
        struct carve_peer p[8];
        int n = 1 + (int)(lcg(&seed) % 8);
        for (int i = 0; i < n; i++) {
            /* some tiny shares (0.01% to 0.05%), to be scaled beside the big ones */
            uint32_t kind = lcg(&seed) % 8;
            uint32_t share = kind < 2 ? 0 : kind == 2 ? 1 + lcg(&seed) % 5 : 1 + lcg(&seed) % 6000;
            p[i] = peer(share, (int)(lcg(&seed) % 2), (int)(lcg(&seed) % 3),
                        lcg(&seed) % 4 != 0);
        }
        uint32_t yield = lcg(&seed) % 3000;
        uint64_t rates = 0, guaranteed = 0, caps = 0;
        int paced = 0;
        for (int i = 0; i < n; i++)
            if (p[i].active && p[i].compute.share_bp) {
                struct carve_rate r = carve_compute_rate(p, n, i, yield);
                assert_true(r.rate_bp >= 1 && r.rate_bp <= CARVE_BP_FULL);
                rates += r.rate_bp;
                paced++;
                if (p[i].compute.mode == CAP)
                    caps++;
                else
                    guaranteed += r.rate_bp;
            }
        uint32_t end = 0, used = 0;
        for (int i = 0; i < n; i++) {
            uint32_t off = 0, w = 0;
            bool has = carve_compute_window(p, n, i, yield, &off, &w);
            if (!p[i].active || !p[i].compute.share_bp || paced < 2) {
                if (has && p[i].active)
                    fail_msg("round %d: peer %d has a window [%u, +%u) it should not", round,
                             i, off, w);
                continue;
            }
            if (!has || w == 0)
                fail_msg("round %d: peer %d of %d paced has no window (%d, width %u)", round,
                         i, paced, has, w);
            if (off < end)
                fail_msg("round %d: peer %d's window [%u, +%u) overlaps one ending at %u",
                         round, i, off, w, end);
            if ((uint64_t)off + w > CARVE_BP_FULL)
                fail_msg("round %d: peer %d's window [%u, +%u) leaves the period", round, i,
                         off, w);
            /* guarantees that leave each cap a basis point keep their rates */
            if (p[i].compute.mode != CAP && guaranteed + caps <= CARVE_BP_FULL &&
                w != carve_compute_rate(p, n, i, yield).rate_bp)
                fail_msg("round %d: guarantee %d's window is %u wide, its rate %u", round, i, w,
                         carve_compute_rate(p, n, i, yield).rate_bp);
            if (rates <= CARVE_BP_FULL) {
                uint32_t rate = carve_compute_rate(p, n, i, yield).rate_bp;
                if (w != rate || off != used)
                    fail_msg("round %d: peer %d's window [%u, +%u), want [%u, +%u)", round, i,
                             off, w, used, rate);
            }
            end = off + w;
            used += w;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts),
        cmocka_unit_test(test_parse_long_numbers),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_error_buffers),
        cmocka_unit_test(test_parse_priority),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_documented_example),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_rate_cap),
        cmocka_unit_test(test_rate_guarantee_alone),
        cmocka_unit_test(test_rate_guarantee_split),
        cmocka_unit_test(test_rate_guarantee_floor_and_ceiling),
        cmocka_unit_test(test_rate_me_counts_itself),
        cmocka_unit_test(test_rate_unpaced),
        cmocka_unit_test(test_rate_batch_yields),
        cmocka_unit_test(test_window_alone),
        cmocka_unit_test(test_window_board_order),
        cmocka_unit_test(test_window_skips_idle_and_unshared),
        cmocka_unit_test(test_window_yielding_batch),
        cmocka_unit_test(test_window_scaled),
        cmocka_unit_test(test_window_scaled_tiny),
        cmocka_unit_test(test_window_property),
        cmocka_unit_test(test_window_around),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
