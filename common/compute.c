/* compute.c - parsing compute shares and priorities, and the rate policy (see compute.h). */
#include "compute.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A value is quoted in a message up to 64 bytes, then `...': a 100 KB one filled the caller's
 * buffer and cut off what was wrong with it and what is accepted. */
#define QUOTED(s) (s), strlen(s) > 64 ? "..." : ""

static int bad_compute(const char *s, const char *why, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "`%.64s%s' %s; give a percentage in (0, 100]: `30%%' for at most "
                 "30%% of the GPU, `30%%+' for at least 30%% (plus idle time)", QUOTED(s), why);
    return -EINVAL;
}

const char *carve_parse_percent_bp(const char *s, uint32_t *bp, const char **end)
{
    const char *p = s;
    uint64_t whole = 0, frac = 0;
    int frac_digits = 0, digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > 1000)
            return "is more than 100%";
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (frac_digits < 2) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_digits++;
            } else if (*p != '0') {
                return "has more precision than 0.01%";
            }
    }
    if (digits == 0)
        return *s == '-' ? "is negative" : "is not a percentage";
    while (frac_digits < 2) {
        frac *= 10;
        frac_digits++;
    }
    uint64_t v = whole * 100 + frac;
    if (v > CARVE_BP_FULL)
        return "is more than 100%";
    *bp = (uint32_t)v;
    *end = p;
    return NULL;
}

int carve_parse_compute(const char *s, struct carve_compute *out, char *err, size_t errlen)
{
    if (!s || !*s)
        return bad_compute(s ? s : "", "is empty", err, errlen);
    uint32_t bp;
    const char *p, *why = carve_parse_percent_bp(s, &bp, &p);
    if (why)
        return bad_compute(s, why, err, errlen);
    if (*p == '%')
        p++;
    uint8_t mode = CARVE_COMPUTE_CAP;
    if (*p == '+') {
        mode = CARVE_COMPUTE_GUARANTEE;
        p++;
    }
    if (*p)
        return bad_compute(s, "is not a percentage", err, errlen);
    if (bp == 0)
        return bad_compute(s, "is zero", err, errlen);
    out->share_bp = bp;
    out->mode = mode;
    return 0;
}

static const char *const priority_names[] = {"normal", "latency", "batch"};

int carve_parse_priority(const char *s, uint8_t *out, char *err, size_t errlen)
{
    for (uint8_t i = 0; i < sizeof(priority_names) / sizeof(priority_names[0]); i++)
        if (s && strcmp(s, priority_names[i]) == 0) {
            *out = i;
            return 0;
        }
    if (err && errlen)
        snprintf(err, errlen, "unknown priority `%.64s%s'; use latency, batch or normal",
                 QUOTED(s ? s : ""));
    return -EINVAL;
}

const char *carve_priority_name(uint8_t priority)
{
    return priority < sizeof(priority_names) / sizeof(priority_names[0])
               ? priority_names[priority] : "unknown";
}

void carve_format_compute(const struct carve_compute *c, char *buf, size_t len)
{
    const char *plus = c->mode == CARVE_COMPUTE_GUARANTEE ? "+" : "";
    if (c->share_bp % 100 == 0)
        snprintf(buf, len, "%u%%%s", c->share_bp / 100, plus);
    else if (c->share_bp % 10 == 0)
        snprintf(buf, len, "%u.%u%%%s", c->share_bp / 100, c->share_bp % 100 / 10, plus);
    else
        snprintf(buf, len, "%u.%02u%%%s", c->share_bp / 100, c->share_bp % 100, plus);
}

struct carve_rate carve_compute_rate(const struct carve_peer *peers, int n, int me,
                                     uint32_t batch_yield_bp)
{
    struct carve_rate r = {CARVE_BP_FULL, false};
    if (me < 0 || me >= n)
        return r;
    const struct carve_compute *mine = &peers[me].compute;
    uint64_t caps = 0, guarantees = 0;
    bool latency_active = false;
    for (int i = 0; i < n; i++) {
        const struct carve_compute *c = &peers[i].compute;
        if (i != me && !peers[i].active)
            continue;
        if (i != me && c->priority == CARVE_PRIO_LATENCY)
            latency_active = true;
        if (c->share_bp == 0)
            continue;
        if (c->mode == CARVE_COMPUTE_CAP) {
            if (i != me)
                caps += c->share_bp;
        } else {
            guarantees += c->share_bp;
        }
    }
    if (mine->share_bp && mine->mode == CARVE_COMPUTE_CAP) {
        r.rate_bp = mine->share_bp;
    } else if (mine->share_bp) {
        uint64_t spare = caps < CARVE_BP_FULL ? CARVE_BP_FULL - caps : 0;
        uint64_t rate = guarantees ? spare * mine->share_bp / guarantees : CARVE_BP_FULL;
        if (rate < mine->share_bp)
            rate = mine->share_bp;
        r.rate_bp = rate > CARVE_BP_FULL ? CARVE_BP_FULL : (uint32_t)rate;
    }
    if (mine->priority == CARVE_PRIO_BATCH && latency_active) {
        /* down to the yield rate, but not below a guarantee: it is a promise */
        uint32_t floor = mine->share_bp && mine->mode == CARVE_COMPUTE_GUARANTEE
                             ? mine->share_bp : 0;
        uint32_t yield_to = batch_yield_bp > floor ? batch_yield_bp : floor;
        r.yielding = true;
        if (yield_to && r.rate_bp > yield_to)
            r.rate_bp = yield_to;
    }
    return r;
}

/* A paced slice's width of a budget of the period when the rates of its group of paced
 * slices add up to total (n of them), more than the budget: each keeps one basis point and
 * the rest of the budget is split in proportion to what each asked beyond it. Scaled in
 * proportion alone, a 0.01% cap beside a 100% one had 1 * 10000 / 10001 = 0: a window of no
 * width, in which it never ran while the other was active. The widths add up to at most the
 * budget. */
static uint64_t window_scaled(uint64_t rate, uint64_t total, uint64_t n, uint64_t budget)
{
    return 1 + (rate - 1) * (budget - n) / (total - n);
}

bool carve_compute_window_around(const struct carve_peer *peers, int n, int me,
                                 uint32_t batch_yield_bp, uint32_t *offset_bp,
                                 uint32_t *width_bp, int *before, uint32_t *idle_after_bp)
{
    if (me < 0 || me >= n || n > CARVE_PEERS_MAX || peers[me].compute.share_bp == 0)
        return false;
    /* the paced slices' rates, in two groups: guarantees, then caps */
    uint64_t rate[CARVE_PEERS_MAX], total[2] = {0, 0}, count[2] = {0, 0}, ahead = 0, mine = 0;
    int paced = 0, last_before = -1, last = -1;
    for (int j = 0; j < n; j++) {
        rate[j] = 0;
        if (peers[j].compute.share_bp == 0 || (j != me && !peers[j].active))
            continue;
        rate[j] = carve_compute_rate(peers, n, j, batch_yield_bp).rate_bp;
        int cap = peers[j].compute.mode == CARVE_COMPUTE_CAP;
        total[cap] += rate[j];
        count[cap]++;
        if (j < me)
            last_before = j;
        last = j;
        paced++;
    }
    if (paced < 2)
        return false;
    /* caps are not checked against each other or against the guarantees: past the period,
     * the guarantees keep their rates (what admission promised them, as long as each cap
     * keeps a basis point) and the caps share what is left */
    uint64_t budget[2];
    budget[0] = total[0] < CARVE_BP_FULL - count[1] ? total[0] : CARVE_BP_FULL - count[1];
    budget[1] = CARVE_BP_FULL - budget[0];
    for (int j = 0; j <= me; j++) {
        if (rate[j] == 0)
            continue;
        int cap = peers[j].compute.mode == CARVE_COMPUTE_CAP;
        uint64_t w = rate[j];
        if (total[cap] > budget[cap])
            w = window_scaled(w, total[cap], count[cap], budget[cap]);
        if (j < me)
            ahead += w;
        else
            mine = w;
    }
    uint64_t all = total[0] + total[1];
    *offset_bp = (uint32_t)ahead;
    *width_bp = (uint32_t)mine;
    *before = last_before >= 0 ? last_before : last; /* the first window follows the last */
    *idle_after_bp = last == me && all < CARVE_BP_FULL ? (uint32_t)(CARVE_BP_FULL - all) : 0;
    return true;
}

bool carve_compute_window(const struct carve_peer *peers, int n, int me, uint32_t batch_yield_bp,
                          uint32_t *offset_bp, uint32_t *width_bp)
{
    int before;
    uint32_t idle;
    return carve_compute_window_around(peers, n, me, batch_yield_bp, offset_bp, width_bp,
                                       &before, &idle);
}
