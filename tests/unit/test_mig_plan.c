/* test_mig_plan.c - the MIG request parser and geometry planner: known layouts, impossible
 * requests reported with their reason, least-stranded choices, start-slot rules, and the
 * planner's optimum checked against a brute force that tries every assignment and judges a
 * layout only through mig_layout_valid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mig_plan.h"

static const struct mig_model *model(const char *name)
{
    const struct mig_model *m = mig_model_find(name);
    if (!m)
        fail_msg("model %s not found", name);
    return m;
}

static void parse_all(const char *const *texts, size_t n, struct mig_request *out)
{
    char err[256];
    for (size_t i = 0; i < n; i++)
        if (mig_request_parse(texts[i], &out[i], err, sizeof(err)) < 0)
            fail_msg("%s rejected: %s", texts[i], err);
}

static void plan_texts(const char *mname, const char *const *texts, size_t n,
                       const struct mig_instance *keep, size_t nkeep, struct mig_plan *plan)
{
    struct mig_request req[MIG_MAX_REQUESTS];
    char err[256];
    parse_all(texts, n, req);
    if (mig_plan(model(mname), req, n, keep, nkeep, plan, err, sizeof(err)) < 0)
        fail_msg("plan failed: %s", err);
    /* whatever it chose, kept and placed instances together must be a valid layout */
    struct mig_instance all[2 * MIG_MAX_INSTANCES];
    size_t k = 0;
    for (size_t i = 0; i < nkeep; i++)
        all[k++] = keep[i];
    for (size_t i = 0; i < plan->nplaced; i++)
        all[k++] = plan->placed[i].inst;
    char why[200];
    if (!mig_layout_valid(model(mname), all, k, why, sizeof(why)))
        fail_msg("invalid layout: %s", why);
    assert_int_equal(plan->nplaced + plan->nrefused, n);
}

/* ---------- the parser ---------- */

static void test_parse_accepted(void **state)
{
    static const struct {
        const char *in, *profile;
        uint64_t mib;
        double pct;
    } cases[] = {
        {"3g.40gb", "3g.40gb", 0, 0},       {"MIG 1g.10gb+me", "1g.10gb+me", 0, 0},
        {"7G.80GB", "7g.80gb", 0, 0},       {"8GiB", "", 8192, 0},
        {"512MiB", "", 512, 0},             {"20GB", "", 19074, 0}, /* 2e10 B, rounded up */
        {"30%", "", 0, 30},                 {"20GiB,30%", "", 20480, 30},
        {"12.5%,1G", "", 1024, 12.5},       {"100%", "", 0, 100},
        {"1MiB", "", 1, 0},                 {"1.5GiB", "", 1536, 0},
        {"1048577", "", 2, 0}, /* bytes, rounded up to whole MiB */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mig_request r;
        char err[256] = "";
        if (mig_request_parse(cases[i].in, &r, err, sizeof(err)) < 0)
            fail_msg("%s rejected: %s", cases[i].in, err);
        assert_string_equal(r.profile, cases[i].profile);
        assert_int_equal(r.memory_mib, cases[i].mib);
        assert_true(r.compute_pct == cases[i].pct);
        assert_string_equal(r.text, cases[i].in);
    }
}

static void test_parse_rejected(void **state)
{
    static const struct {
        const char *in, *says;
    } cases[] = {
        {"", "empty"},
        {"8GiB,", "a request is"},
        {",30%", "a request is"},
        {"8GiB,4GiB", "two memory sizes"},
        {"30%,40%", "two shares"},
        {"0%", "more than 0%"},
        {"101%", "at most 100%"},
        {"-5%", "not a share"},
        {"abc", "neither memory nor a share"},
        {"3g.40gb,30%", "neither memory nor a share"},
        {"8GiB,30%,1%", "a request is"},
        {"0", "neither memory nor a share"},
        {"8", "a number without a unit is bytes"}, /* 8 bytes: below the 1 MiB least */
        {"1g.10gb+", "neither memory nor a share"},
        {"nan%", "not a share"},
        {"1e3%", "not a share"},
        {"0123456789012345678901234567890123456789012345678901234567890123456789", "characters"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mig_request r;
        char err[300] = "";
        if (mig_request_parse(cases[i].in, &r, err, sizeof(err)) == 0)
            fail_msg("%s accepted", cases[i].in);
        if (!strstr(err, cases[i].says))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].in, err, cases[i].says);
    }
    struct mig_request r;
    char err[64];
    assert_int_equal(mig_request_parse(NULL, &r, err, sizeof(err)), -1);
}

/* ---------- known layouts ---------- */

static const struct mig_placement *placed_for(const struct mig_plan *p, int request)
{
    for (size_t i = 0; i < p->nplaced; i++)
        if (p->placed[i].request == request)
            return &p->placed[i];
    fail_msg("request %d not placed", request);
    return NULL;
}

static void test_two_halves(void **state)
{
    const char *r[] = {"3g.40gb", "3g.40gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 2, NULL, 0, &p);
    assert_int_equal(p.nplaced, 2);
    assert_int_equal(p.stranded_mib, 0);
    assert_int_equal(p.used_mask, 0xFF);
    assert_int_equal(p.used_compute, 6);
    assert_int_not_equal(placed_for(&p, 0)->inst.start, placed_for(&p, 1)->inst.start);
}

/* 4g only starts at 0, so the 3g must go to 4, in either order of the requests */
static void test_start_slot_rules(void **state)
{
    const char *a[] = {"3g.40gb", "4g.40gb"}, *b[] = {"4g.40gb", "3g.40gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", a, 2, NULL, 0, &p);
    assert_int_equal(p.nplaced, 2);
    assert_int_equal(placed_for(&p, 0)->inst.start, 4);
    assert_int_equal(placed_for(&p, 1)->inst.start, 0);
    plan_texts("H100-80GB", b, 2, NULL, 0, &p);
    assert_int_equal(p.nplaced, 2);
    assert_int_equal(placed_for(&p, 0)->inst.start, 0);
    assert_int_equal(placed_for(&p, 1)->inst.start, 4);
    assert_int_equal(p.stranded_mib, 0);
}

/* one 1g instance must not go to slot 6: memory slice 7 would be usable by nothing */
static void test_no_stranding_start(void **state)
{
    const char *r[] = {"1g.10gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 1, NULL, 0, &p);
    assert_int_equal(p.nplaced, 1);
    assert_int_not_equal(placed_for(&p, 0)->inst.start, 6);
    assert_int_equal(p.stranded_mib, 0);
    assert_int_equal(p.headroom_mib, 40448); /* a 3g.40gb still fits */
    assert_string_equal(p.headroom->name, "3g.40gb");
}

static void test_seven_small(void **state)
{
    const char *r[] = {"8GiB", "8GiB", "8GiB", "8GiB", "8GiB", "8GiB", "8GiB", "8GiB"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 8, NULL, 0, &p);
    assert_int_equal(p.nplaced, 7);
    assert_int_equal(p.nrefused, 1);
    assert_non_null(strstr(p.refused[0].why, "does not fit beside"));
    assert_int_equal(p.over_mib, 7 * (9984 - 8192));
    assert_int_equal(p.unreachable_mib, 9984); /* slice 7: no 1g may start there */
    assert_int_equal(p.stranded_mib, 7 * (9984 - 8192) + 9984);
    assert_null(p.headroom); /* 7 compute slices taken: nothing more fits */
}

/* 15 GiB fits 1g.20gb and 2g.20gb alike; four of them fill the GPU either way */
static void test_four_quarters(void **state)
{
    const char *r[] = {"15GiB", "15GiB", "15GiB", "15GiB"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 4, NULL, 0, &p);
    assert_int_equal(p.nplaced, 4);
    assert_int_equal(p.used_mask, 0xFF);
    assert_int_equal(p.stranded_mib, 4 * (20096 - 15360));
}

/* the least-stranded profile: 8 GiB with 20% needs 2 compute slices, so 2g.20gb, not 3g */
static void test_least_stranded_profile(void **state)
{
    const char *r[] = {"8GiB,20%"};
    struct mig_plan p;
    plan_texts("A100-80GB", r, 1, NULL, 0, &p);
    assert_string_equal(placed_for(&p, 0)->inst.profile->name, "2g.20gb");
    assert_int_equal(p.over_mib, 19968 - 8192);
}

/* more compute than 7 slices: two of three fit; the planner keeps the bigger pair */
static void test_compute_limit(void **state)
{
    const char *r[] = {"4g.40gb", "3g.40gb", "1g.10gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 3, NULL, 0, &p);
    assert_int_equal(p.nplaced, 2);
    assert_int_equal(p.nrefused, 1);
    assert_int_equal(p.refused[0].request, 2);
    assert_int_equal(p.stranded_mib, 0);
}

static void test_impossible_reported(void **state)
{
    const char *r[] = {"100GiB", "3g.20gb", "1g.10gb", "200%"};
    struct mig_request req[4];
    char err[256];
    parse_all(r, 3, req);
    assert_int_equal(mig_request_parse(r[3], &req[3], err, sizeof(err)), -1);
    struct mig_plan p;
    assert_int_equal(mig_plan(model("H100-80GB"), req, 3, NULL, 0, &p, err, sizeof(err)), 0);
    assert_int_equal(p.nplaced, 1);
    assert_int_equal(p.nrefused, 2);
    assert_int_equal(p.refused[0].request, 0);
    assert_non_null(strstr(p.refused[0].why, "bigger than any instance"));
    assert_non_null(strstr(p.refused[0].why, "7g.80gb"));
    assert_int_equal(p.refused[1].request, 1);
    assert_non_null(strstr(p.refused[1].why, "no MIG profile 3g.20gb"));
    /* a MiB too big: in MiB, where GiB to two places would show the same size twice */
    const char *just_over[] = {"81153MiB"};
    plan_texts("H100-80GB", just_over, 1, NULL, 0, &p);
    if (!strstr(p.refused[0].why, "needs 81153 MiB but the largest MIG instance of H100-80GB, "
                                  "7g.80gb, has 81152 MiB"))
        fail_msg("%s", p.refused[0].why);
    /* the same name is fine on the GPU that has it */
    assert_int_equal(mig_plan(model("A100-40GB"), &req[1], 1, NULL, 0, &p, err, sizeof(err)), 0);
    assert_int_equal(p.nplaced, 1);
}

static void test_media_once(void **state)
{
    const char *r[] = {"1g.10gb+me", "1g.10gb+me"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 2, NULL, 0, &p);
    assert_int_equal(p.nplaced, 1);
    /* the refusal names the real reason, the media engines, not a start slot (the second
       1g.10gb+me has free slots aplenty) */
    if (!strstr(p.refused[0].why, "1g.10gb+me: one instance per GPU has the media engines "
                                  "(+me), and 1g.10gb+me has them already (1g.10gb is the same "
                                  "without)") || strstr(p.refused[0].why, "start slot"))
        fail_msg("%s", p.refused[0].why);
    /* also beside a kept +me instance, on an A100 */
    const struct mig_model *a = model("A100-80GB");
    struct mig_instance media[] = {{mig_profile_find(a, "1g.10gb+me"), 0}};
    const char *one[] = {"1g.10gb+me"};
    plan_texts("A100-80GB", one, 1, media, 1, &p);
    assert_int_equal(p.nrefused, 1);
    assert_non_null(strstr(p.refused[0].why, "has them already"));
    /* and never given to a request that did not ask for it */
    const char *s[] = {"1GiB"};
    plan_texts("H100-80GB", s, 1, NULL, 0, &p);
    assert_false(placed_for(&p, 0)->inst.profile->media);
}

/* a profile at its limit per GPU: the limit is the reason (4g.40gb: one per GPU) */
static void test_profile_limit(void **state)
{
    const char *r[] = {"4g.40gb", "4g.40gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 2, NULL, 0, &p);
    assert_int_equal(p.nplaced, 1);
    assert_int_equal(p.nrefused, 1);
    if (!strstr(p.refused[0].why, "4g.40gb: at most 1 per GPU, and the layout has 1 already") ||
        strstr(p.refused[0].why, "start slot"))
        fail_msg("%s", p.refused[0].why);
    /* a request several profiles could hold: each one's reason (3g.40gb at its limit of 2,
       the larger ones short of compute slices) */
    const char *q[] = {"3g.40gb", "3g.40gb", "30GiB"};
    plan_texts("H100-80GB", q, 3, NULL, 0, &p);
    assert_int_equal(p.nrefused, 1);
    if (!strstr(p.refused[0].why, "3g.40gb: at most 2 per GPU, and the layout has 2 already") ||
        !strstr(p.refused[0].why, "4g.40gb, 7g.80gb: need 4, 7 compute slices, 1 of 7 free"))
        fail_msg("%s", p.refused[0].why);
    /* a full GPU: every profile that could hold the request is named with its reason (the
       reason was cut, "3g.40gb: ;", and 4g.40gb and 7g.80gb put under start slots) */
    const char *full[12];
    for (size_t i = 0; i < 12; i++)
        full[i] = "5%";
    plan_texts("H100-80GB", full, 12, NULL, 0, &p);
    assert_int_equal(p.nplaced, 7);
    if (!strstr(p.refused[0].why, "1g.10gb: at most 7 per GPU, and the layout has 7 already; "
                                  "1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb: need 1, 2, 3, "
                                  "4, 7 compute slices, 0 of 7 free") ||
        strstr(p.refused[0].why, "start slot"))
        fail_msg("%s", p.refused[0].why);
    /* and when slots are what is missing, it still says so */
    const char *t[] = {"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb", "1g.10gb"};
    plan_texts("H100-80GB", t, 5, NULL, 0, &p);
    assert_int_equal(p.nrefused, 1);
    assert_non_null(strstr(p.refused[0].why, "no free start slot for 1g.10gb (memory slices "
                                             "taken: 8 of 8"));
}

static void test_beside_existing(void **state)
{
    const struct mig_model *h = model("H100-80GB");
    struct mig_instance keep[] = {{mig_profile_find(h, "1g.10gb"), 6}};
    const char *r[] = {"3g.40gb", "3g.40gb"};
    struct mig_plan p;
    plan_texts("H100-80GB", r, 2, keep, 1, &p);
    assert_int_equal(p.nplaced, 1); /* either request; the other is refused */
    assert_int_equal(p.placed[0].inst.start, 0);
    assert_non_null(strstr(p.refused[0].why, "does not fit beside"));
    assert_int_equal(p.unreachable_mib, 9984); /* slice 7, beside the kept 1g at 6 */
    /* a kept layout that is not valid is an error, not a plan */
    struct mig_instance bad[] = {{mig_profile_find(h, "3g.40gb"), 2}};
    char err[256];
    struct mig_request one;
    parse_all(r, 1, &one);
    assert_int_equal(mig_plan(h, &one, 1, bad, 1, &p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot start at memory slice 2"));
}

/* apply --replace: an equally good layout that is already there is kept as it is */
static void test_prefer_existing(void **state)
{
    const struct mig_model *h = model("H100-80GB");
    const char *r[] = {"1g.10gb", "2g.20gb"};
    struct mig_request req[2];
    struct mig_plan p;
    char err[256];
    parse_all(r, 2, req);
    assert_int_equal(mig_plan(h, req, 2, NULL, 0, &p, err, sizeof(err)), 0);
    unsigned plain = placed_for(&p, 0)->inst.start;
    /* elsewhere, and as good: the 1g at 3, the 2g at 4 (nothing stranded either way) */
    struct mig_instance now[] = {{mig_profile_find(h, "1g.10gb"), plain == 3 ? 2 : 3},
                                 {mig_profile_find(h, "2g.20gb"), 4}};
    assert_int_equal(mig_plan_prefer(h, req, 2, NULL, 0, now, 2, &p, err, sizeof(err)), 0);
    assert_int_equal(placed_for(&p, 0)->inst.start, now[0].start);
    assert_int_equal(placed_for(&p, 1)->inst.start, 4);
    assert_int_equal(p.stranded_mib, 0);
    /* but never at the price of stranding memory: a 1g at 6 strands slice 7 */
    struct mig_instance worse[] = {{mig_profile_find(h, "1g.10gb"), 6}};
    assert_int_equal(mig_plan_prefer(h, req, 1, NULL, 0, worse, 1, &p, err, sizeof(err)), 0);
    assert_int_not_equal(placed_for(&p, 0)->inst.start, 6);
}

static void test_layout_valid(void **state)
{
    const struct mig_model *h = model("H100-80GB");
    const struct mig_profile *g1 = mig_profile_find(h, "1g.10gb");
    const struct mig_profile *g4 = mig_profile_find(h, "4g.40gb");
    const struct mig_profile *g3 = mig_profile_find(h, "3g.40gb");
    char why[200];
    struct mig_instance ok[] = {{g4, 0}, {g3, 4}};
    assert_true(mig_layout_valid(h, ok, 2, why, sizeof(why)));
    struct mig_instance overlap[] = {{g4, 0}, {g1, 3}};
    assert_false(mig_layout_valid(h, overlap, 2, why, sizeof(why)));
    assert_non_null(strstr(why, "overlaps"));
    struct mig_instance slot7[] = {{g1, 7}};
    assert_false(mig_layout_valid(h, slot7, 1, why, sizeof(why)));
    struct mig_instance other[] = {{mig_profile_find(model("A100-40GB"), "1g.5gb"), 0}};
    assert_false(mig_layout_valid(h, other, 1, why, sizeof(why)));
    assert_false(mig_layout_valid(h, other, 1, NULL, 0));
}

/* ---------- optimality against a brute force ---------- */

struct bf_value {
    int placed;
    uint64_t stranded, given, headroom;
};

static bool bf_better(const struct bf_value *a, const struct bf_value *b)
{
    if (a->placed != b->placed)
        return a->placed > b->placed;
    if (a->stranded != b->stranded)
        return a->stranded < b->stranded;
    if (a->given != b->given)
        return a->given > b->given;
    return a->headroom > b->headroom;
}

/* judged only through mig_layout_valid: a free slice is unreachable when no single instance
   covering it can be added to the layout */
static void bf_finish(const struct mig_model *m, struct mig_instance *lay, size_t n,
                      uint64_t over, uint64_t given, int placed, struct bf_value *best)
{
    unsigned used = 0;
    for (size_t i = 0; i < n; i++)
        used |= mig_slice_mask(lay[i].profile, lay[i].start);
    unsigned coverable = 0;
    uint64_t headroom = 0;
    for (size_t j = 0; j < m->nprofiles; j++)
        for (unsigned s = 0; s < 8; s++) {
            lay[n] = (struct mig_instance){&m->profiles[j], s};
            if (!mig_layout_valid(m, lay, n + 1, NULL, 0))
                continue;
            coverable |= mig_slice_mask(&m->profiles[j], s);
            if (m->profiles[j].memory_mib > headroom)
                headroom = m->profiles[j].memory_mib;
        }
    uint64_t slice = mig_profile_find(m, m->profiles[0].name)->memory_mib;
    unsigned lost = 0xFFu & ~used & ~coverable;
    struct bf_value v = {placed, over + (uint64_t)__builtin_popcount(lost) * slice, given,
                         headroom};
    if (bf_better(&v, best))
        *best = v;
}

static void bf(const struct mig_model *m, const struct mig_request *req, size_t n, size_t i,
               struct mig_instance *lay, size_t nlay, uint64_t over, uint64_t given, int placed,
               struct bf_value *best)
{
    if (i == n) {
        bf_finish(m, lay, nlay, over, given, placed, best);
        return;
    }
    bf(m, req, n, i + 1, lay, nlay, over, given, placed, best); /* not placed */
    for (size_t j = 0; j < m->nprofiles; j++) {
        const struct mig_profile *p = &m->profiles[j];
        if (!mig_request_fits(m, &req[i], p))
            continue;
        uint64_t asked = req[i].profile[0] ? p->memory_mib : req[i].memory_mib;
        for (unsigned s = 0; s < 8; s++) {
            lay[nlay] = (struct mig_instance){p, s};
            if (!mig_layout_valid(m, lay, nlay + 1, NULL, 0))
                continue;
            bf(m, req, n, i + 1, lay, nlay + 1, over + p->memory_mib - asked,
               given + p->memory_mib, placed + 1, best);
        }
    }
}

static void random_request(const struct mig_model *m, struct mig_request *r, unsigned *seed)
{
    memset(r, 0, sizeof(*r));
    switch (rand_r(seed) % 4) {
    case 0: { /* a profile by name, now and then one the model lacks */
        size_t j = (size_t)rand_r(seed) % (m->nprofiles + 1);
        snprintf(r->profile, sizeof(r->profile), "%s",
                 j < m->nprofiles ? m->profiles[j].name : "5g.50gb");
        break;
    }
    case 1:
        r->memory_mib = (uint64_t)(rand_r(seed) % (int)(m->memory_mib + 8192));
        break;
    case 2:
        r->compute_pct = 1 + rand_r(seed) % 100;
        break;
    default:
        r->memory_mib = (uint64_t)(rand_r(seed) % (int)(m->memory_mib / 2));
        r->compute_pct = 1 + rand_r(seed) % 60;
    }
    snprintf(r->text, sizeof(r->text), "random");
}

static void test_brute_force(void **state)
{
    unsigned seed = 20261123;
    size_t nmodels;
    const struct mig_model *models = mig_models(&nmodels);
    int trials = 0;
    for (int t = 0; t < 400; t++) {
        const struct mig_model *m = &models[t % nmodels];
        size_t n = 1 + (size_t)rand_r(&seed) % (t < 340 ? 3 : 4);
        struct mig_request req[4];
        for (size_t i = 0; i < n; i++)
            random_request(m, &req[i], &seed);
        /* now and then start beside an existing instance */
        struct mig_instance keep[1];
        size_t nkeep = 0;
        if (rand_r(&seed) % 3 == 0) {
            const struct mig_profile *p = &m->profiles[(size_t)rand_r(&seed) % m->nprofiles];
            unsigned s = (unsigned)__builtin_ctz(p->start_mask);
            keep[0] = (struct mig_instance){p, s};
            nkeep = 1;
        }
        struct mig_plan p;
        char err[256];
        if (mig_plan(m, req, n, keep, nkeep, &p, err, sizeof(err)) < 0)
            fail_msg("plan failed: %s", err);
        struct mig_instance lay[MIG_MAX_INSTANCES + 2];
        for (size_t k = 0; k < nkeep; k++)
            lay[k] = keep[k];
        struct bf_value best = {-1, 0, 0, 0};
        bf(m, req, n, 0, lay, nkeep, 0, 0, 0, &best);
        if ((int)p.nplaced != best.placed || p.stranded_mib != best.stranded ||
            p.given_mib != best.given || p.headroom_mib != best.headroom)
            fail_msg("trial %d on %s, %zu requests: planner placed %zu stranded %lu given %lu "
                     "headroom %lu; brute force %d %lu %lu %lu", t, m->name, n, p.nplaced,
                     (unsigned long)p.stranded_mib, (unsigned long)p.given_mib,
                     (unsigned long)p.headroom_mib, best.placed, (unsigned long)best.stranded,
                     (unsigned long)best.given, (unsigned long)best.headroom);
        trials++;
    }
    assert_int_equal(trials, 400);
}

static void test_many_requests(void **state)
{
    /* 64 requests: the most the planner takes; at most 7 instances are ever placed */
    struct mig_request req[MIG_MAX_REQUESTS + 1];
    char err[256];
    for (size_t i = 0; i <= MIG_MAX_REQUESTS; i++)
        assert_int_equal(mig_request_parse("1GiB", &req[i], err, sizeof(err)), 0);
    struct mig_plan p;
    assert_int_equal(mig_plan(model("H200-141GB"), req, MIG_MAX_REQUESTS, NULL, 0, &p, err,
                              sizeof(err)), 0);
    assert_int_equal(p.nplaced, 7);
    assert_int_equal(p.nrefused, MIG_MAX_REQUESTS - 7);
    assert_int_equal(mig_plan(model("H200-141GB"), req, MIG_MAX_REQUESTS + 1, NULL, 0, &p, err,
                              sizeof(err)), -1);
    assert_non_null(strstr(err, "at most 64"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepted),    cmocka_unit_test(test_parse_rejected),
        cmocka_unit_test(test_two_halves),        cmocka_unit_test(test_start_slot_rules),
        cmocka_unit_test(test_no_stranding_start), cmocka_unit_test(test_seven_small),
        cmocka_unit_test(test_four_quarters),     cmocka_unit_test(test_least_stranded_profile),
        cmocka_unit_test(test_compute_limit),     cmocka_unit_test(test_impossible_reported),
        cmocka_unit_test(test_media_once),        cmocka_unit_test(test_profile_limit),
        cmocka_unit_test(test_beside_existing),
        cmocka_unit_test(test_prefer_existing),   cmocka_unit_test(test_layout_valid),
        cmocka_unit_test(test_brute_force),
        cmocka_unit_test(test_many_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
