/* mig_geometry.c - the MIG geometry planner: given requests, choose a profile and a start slot
 * for each so that as many as possible fit on one GPU and the least memory is stranded.
 *
 * Why exhaustive search is cheap: a MIG GPU has 8 memory slices and 7 compute slices, and a
 * layout is fully described, for everything still to be placed, by which memory slices are
 * taken (2^8 masks), how many compute slices are taken (0..7) and whether the media engines
 * are taken (a "+me" profile). Counts per profile need no state of their own: in every table
 * a non-media profile's max_count equals its number of start slots, and instances never share
 * memory slices, so disjointness already bounds them (test_mig_profiles checks that property).
 * Dynamic programming over (request, mask, compute, media) therefore covers every assignment
 * of (profile, start) or "not placed" to every request, in at most 64 x 256 x 8 x 2 states of
 * at most 64 choices, and returns an optimum, not a heuristic's guess. The order of merit is
 * in struct value; tests/unit/test_mig_plan.c checks it against a brute force that tries
 * every assignment and judges layouts only through mig_layout_valid. */
#include "mig_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MASK_STATES 256
#define COMPUTE_STATES 8
#define MEDIA_STATES 2
#define MAX_OPTIONS 64

struct option {
    const struct mig_profile *profile;
    unsigned start, mask;
    uint64_t over_mib;
    bool preferred; /* the same profile at the same start as an instance to reuse */
};

/* the value of the best completion of a state, compared in this order: most requests placed,
   least memory stranded, most memory given to the placed requests (between two layouts that
   place as many and strand as little, the one honouring the bigger requests), most preferred
   instances reused, most headroom. Reuse adds up without double counting: instances never
   share slices, so one (profile, start) is used once at most. */
struct value {
    int placed;
    uint64_t stranded;
    uint64_t given;
    int reused;
    uint64_t headroom;
};

struct cell {
    bool done;
    int choice; /* option index, -1: this request is not placed */
    struct value v;
};

struct search {
    const struct mig_model *model;
    const struct mig_request *req;
    size_t n;
    struct option (*opts)[MAX_OPTIONS];
    int *nopts;
    struct cell *memo;
};

static uint64_t slice_mib(const struct mig_model *m)
{
    for (size_t i = 0; i < m->nprofiles; i++)
        if (m->profiles[i].memory_slices == 1 && !m->profiles[i].media)
            return m->profiles[i].memory_mib;
    return m->memory_mib / m->memory_slices;
}

bool mig_request_fits(const struct mig_model *model, const struct mig_request *r,
                      const struct mig_profile *p)
{
    if (r->profile[0])
        return mig_profile_find(model, r->profile) == p;
    if (p->media) /* media engines are asked for by name, never handed out unasked */
        return false;
    return p->memory_mib >= r->memory_mib &&
           mig_profile_compute_pct(model, p) + 1e-6 >= r->compute_pct;
}

/* whether one more instance of p fits beside the layout */
static bool addable(const struct mig_model *model, unsigned used_mask, unsigned used_compute,
                    bool media_used, const struct mig_profile *p)
{
    if ((p->media && media_used) || used_compute + p->compute_slices > model->compute_slices)
        return false;
    for (unsigned s = 0; s < model->memory_slices; s++)
        if ((p->start_mask & (1u << s)) && !(mig_slice_mask(p, s) & used_mask))
            return true;
    return false;
}

uint64_t mig_unreachable_mib(const struct mig_model *model, unsigned used_mask,
                             unsigned used_compute, bool media_used, uint64_t *headroom)
{
    unsigned full = (1u << model->memory_slices) - 1u, coverable = 0;
    uint64_t best = 0;
    for (size_t i = 0; i < model->nprofiles; i++) {
        const struct mig_profile *p = &model->profiles[i];
        if ((p->media && media_used) || used_compute + p->compute_slices > model->compute_slices)
            continue;
        for (unsigned s = 0; s < model->memory_slices; s++) {
            if (!(p->start_mask & (1u << s)))
                continue;
            unsigned mask = mig_slice_mask(p, s);
            if (mask & used_mask)
                continue;
            coverable |= mask;
            if (p->memory_mib > best)
                best = p->memory_mib;
        }
    }
    if (headroom)
        *headroom = best;
    unsigned stranded = full & ~used_mask & ~coverable;
    return (uint64_t)__builtin_popcount(stranded) * slice_mib(model);
}

static bool better(const struct value *a, const struct value *b)
{
    if (a->placed != b->placed)
        return a->placed > b->placed;
    if (a->stranded != b->stranded)
        return a->stranded < b->stranded;
    if (a->given != b->given)
        return a->given > b->given;
    if (a->reused != b->reused)
        return a->reused > b->reused;
    return a->headroom > b->headroom;
}

static size_t state_index(size_t i, unsigned mask, unsigned compute, unsigned media)
{
    return ((i * MASK_STATES + mask) * COMPUTE_STATES + compute) * MEDIA_STATES + media;
}

static struct value solve(struct search *s, size_t i, unsigned mask, unsigned compute,
                          unsigned media)
{
    if (i == s->n) {
        struct value v = {0, 0, 0, 0, 0};
        v.stranded = mig_unreachable_mib(s->model, mask, compute, media, &v.headroom);
        return v;
    }
    struct cell *c = &s->memo[state_index(i, mask, compute, media)];
    if (c->done)
        return c->v;
    c->choice = -1;
    c->v = solve(s, i + 1, mask, compute, media); /* request i not placed */
    for (int k = 0; k < s->nopts[i]; k++) {
        const struct option *o = &s->opts[i][k];
        if ((o->mask & mask) || compute + o->profile->compute_slices > s->model->compute_slices ||
            (o->profile->media && media))
            continue;
        struct value v = solve(s, i + 1, mask | o->mask, compute + o->profile->compute_slices,
                               media | (o->profile->media ? 1u : 0u));
        v.placed += 1;
        v.stranded += o->over_mib;
        v.given += o->profile->memory_mib;
        v.reused += o->preferred ? 1 : 0;
        if (better(&v, &c->v)) {
            c->v = v;
            c->choice = k;
        }
    }
    c->done = true;
    return c->v;
}

static void format_gib(uint64_t mib, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f GiB", (double)mib / 1024.0);
}

/* why request r has no profile at all on model */
static void explain_no_profile(const struct mig_model *m, const struct mig_request *r,
                               char *why, size_t len)
{
    if (r->profile[0]) {
        char list[160] = "";
        size_t used = 0;
        for (size_t i = 0; i < m->nprofiles && used < sizeof(list); i++)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
                                     m->profiles[i].name);
        snprintf(why, len, "%s has no MIG profile %s (its profiles: %s)", m->name, r->profile,
                 list);
        return;
    }
    const struct mig_profile *largest = &m->profiles[0];
    for (size_t i = 1; i < m->nprofiles; i++)
        if (m->profiles[i].memory_mib > largest->memory_mib)
            largest = &m->profiles[i];
    char want[32], have[32];
    format_gib(r->memory_mib, want, sizeof(want));
    format_gib(largest->memory_mib, have, sizeof(have));
    if (strcmp(want, have) == 0) { /* 81153 MiB and 81152 MiB are both 79.25 GiB */
        snprintf(want, sizeof(want), "%llu MiB", (unsigned long long)r->memory_mib);
        snprintf(have, sizeof(have), "%llu MiB", (unsigned long long)largest->memory_mib);
    }
    snprintf(why, len, "needs %s but the largest MIG instance of %s, %s, has %s: "
             "bigger than any instance of this GPU", want, m->name, largest->name, have);
}

/* The layout a refused request met: what it takes, the kept instances included. */
struct layout_use {
    unsigned mask, compute;
    unsigned count[32];                /* instances per profile (index in the model's table) */
    const struct mig_profile *media;   /* the instance holding the media engines, or NULL */
};

/* Why no candidate profile of a request fits beside the layout. The first reason that holds
 * is named, per profile: the media engines (one +me instance per GPU), the profile's own
 * limit per GPU (4g.40gb: one), the compute slices, and only then the start slots. A second
 * 4g.40gb did read "no free start slot", true but not why. */
/* Append to buf (size bytes, len used so far) what fmt says, cut at the end of buf. */
static size_t append(char *buf, size_t size, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t size, size_t len, const char *fmt, ...)
{
    if (len >= size)
        return len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    return n < 0 ? len : len + (size_t)n;
}

static void explain_no_room(const struct mig_model *m, const struct option *opts, int nopts,
                            const struct layout_use *u, char *why, size_t len)
{
    /* each candidate profile under the first limit it meets; the ones short of compute
       slices together, so that a full GPU's reason names every profile */
    char limits[512] = "", names[160] = "", needs[64] = "", slots[160] = "";
    size_t nl = 0, nn = 0, nd = 0, ns = 0;
    unsigned short_of_compute = 0;
    const struct mig_profile *last = NULL;
    for (int k = 0; k < nopts; k++) {
        const struct mig_profile *p = opts[k].profile;
        if (p == last)
            continue;
        last = p;
        unsigned have = u->count[p - m->profiles];
        if (p->media && u->media)
            nl = append(limits, sizeof(limits), nl, "%s%s: one instance per GPU has the media "
                        "engines (+me), and %s has them already (%.*s is the same without)",
                        nl ? "; " : "", p->name, u->media->name, (int)strcspn(p->name, "+"),
                        p->name);
        else if (have >= p->max_count)
            nl = append(limits, sizeof(limits), nl, "%s%s: at most %u per GPU, and the layout "
                        "has %u already", nl ? "; " : "", p->name, p->max_count, have);
        else if (u->compute + p->compute_slices > m->compute_slices) {
            nn = append(names, sizeof(names), nn, "%s%s", nn ? ", " : "", p->name);
            nd = append(needs, sizeof(needs), nd, "%s%u", nd ? ", " : "", p->compute_slices);
            short_of_compute++;
        } else
            ns = append(slots, sizeof(slots), ns, "%s%s", ns ? ", " : "", p->name);
    }
    if (short_of_compute)
        nl = append(limits, sizeof(limits), nl, "%s%s: %s %s compute slice%s, %u of %u free",
                    nl ? "; " : "", names, short_of_compute > 1 ? "need" : "needs", needs,
                    short_of_compute == 1 && strcmp(needs, "1") == 0 ? "" : "s",
                    m->compute_slices - u->compute, m->compute_slices);
    if (!ns)
        snprintf(why, len, "does not fit beside the other instances: %s", limits);
    else
        snprintf(why, len, "does not fit beside the other instances: %s%sno free start slot "
                 "for %s (memory slices taken: %u of %u, compute slices taken: %u of %u)",
                 limits, nl ? "; " : "", slots, (unsigned)__builtin_popcount(u->mask),
                 m->memory_slices, u->compute, m->compute_slices);
}

static void build_options(const struct mig_model *m, const struct mig_request *r,
                          const struct mig_instance *prefer, size_t nprefer,
                          struct option *opts, int *nopts)
{
    *nopts = 0;
    for (size_t j = 0; j < m->nprofiles; j++) {
        const struct mig_profile *p = &m->profiles[j];
        if (!mig_request_fits(m, r, p))
            continue;
        /* a profile asked for by name gives exactly what was asked */
        uint64_t asked = r->profile[0] ? p->memory_mib : r->memory_mib;
        uint64_t over = p->memory_mib - (asked < p->memory_mib ? asked : p->memory_mib);
        for (unsigned st = 0; st < m->memory_slices && *nopts < MAX_OPTIONS; st++) {
            if (!(p->start_mask & (1u << st)))
                continue;
            bool preferred = false;
            for (size_t k = 0; k < nprefer; k++)
                preferred |= prefer[k].profile == p && prefer[k].start == st;
            opts[(*nopts)++] = (struct option){p, st, mig_slice_mask(p, st), over, preferred};
        }
    }
}

int mig_plan(const struct mig_model *model, const struct mig_request *req, size_t n,
             const struct mig_instance *keep, size_t nkeep, struct mig_plan *plan, char *err,
             size_t errlen)
{
    return mig_plan_prefer(model, req, n, keep, nkeep, NULL, 0, plan, err, errlen);
}

int mig_plan_prefer(const struct mig_model *model, const struct mig_request *req, size_t n,
                    const struct mig_instance *keep, size_t nkeep,
                    const struct mig_instance *prefer, size_t nprefer, struct mig_plan *plan,
                    char *err, size_t errlen)
{
    int ret = -1;
    struct search s = {model, req, n, NULL, NULL, NULL};
    memset(plan, 0, sizeof(*plan));
    if (!model || (n && !req) || n > MIG_MAX_REQUESTS) {
        snprintf(err, errlen, "%zu MIG requests: at most %d can be planned at once", n,
                 MIG_MAX_REQUESTS);
        return -1;
    }
    if (model->memory_slices > 8 || model->compute_slices >= COMPUTE_STATES) {
        snprintf(err, errlen, "%s: the planner handles at most 8 memory and 7 compute slices",
                 model->name);
        return -1;
    }
    char why[200];
    if (!mig_layout_valid(model, keep, nkeep, why, sizeof(why))) {
        snprintf(err, errlen, "the instances already on the GPU are not a valid layout: %s", why);
        return -1;
    }
    unsigned mask0 = 0, compute0 = 0, media0 = 0;
    for (size_t k = 0; k < nkeep; k++) {
        mask0 |= mig_slice_mask(keep[k].profile, keep[k].start);
        compute0 += keep[k].profile->compute_slices;
        media0 |= keep[k].profile->media ? 1u : 0u;
    }
    s.opts = calloc(n ? n : 1, sizeof(*s.opts));
    s.nopts = calloc(n ? n : 1, sizeof(*s.nopts));
    s.memo = calloc(state_index(n ? n : 1, 0, 0, 0), sizeof(*s.memo));
    if (!s.opts || !s.nopts || !s.memo) {
        snprintf(err, errlen, "out of memory planning %zu MIG requests", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        build_options(model, &req[i], prefer, nprefer, s.opts[i], &s.nopts[i]);

    struct value best = solve(&s, 0, mask0, compute0, media0);
    unsigned mask = mask0, compute = compute0, media = media0;
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &s.memo[state_index(i, mask, compute, media)];
        if (c->choice < 0)
            continue;
        const struct option *o = &s.opts[i][c->choice];
        plan->placed[plan->nplaced++] = (struct mig_placement){(int)i, {o->profile, o->start}};
        plan->over_mib += o->over_mib;
        plan->given_mib += o->profile->memory_mib;
        mask |= o->mask;
        compute += o->profile->compute_slices;
        media |= o->profile->media ? 1u : 0u;
    }
    struct layout_use use = {.mask = mask, .compute = compute};
    for (size_t k = 0; k < nkeep + plan->nplaced; k++) {
        const struct mig_profile *p = k < nkeep ? keep[k].profile
                                                : plan->placed[k - nkeep].inst.profile;
        if ((size_t)(p - model->profiles) < sizeof(use.count) / sizeof(use.count[0]))
            use.count[p - model->profiles]++;
        if (p->media)
            use.media = p;
    }
    for (size_t i = 0; i < n; i++) {
        bool placed = false;
        for (size_t k = 0; k < plan->nplaced; k++)
            placed |= plan->placed[k].request == (int)i;
        if (placed)
            continue;
        struct mig_refusal *r = &plan->refused[plan->nrefused++];
        r->request = (int)i;
        if (s.nopts[i] == 0)
            explain_no_profile(model, &req[i], r->why, sizeof(r->why));
        else
            explain_no_room(model, s.opts[i], s.nopts[i], &use, r->why, sizeof(r->why));
    }
    plan->used_mask = mask;
    plan->used_compute = compute;
    plan->unreachable_mib = mig_unreachable_mib(model, mask, compute, media, &plan->headroom_mib);
    plan->stranded_mib = plan->over_mib + plan->unreachable_mib;
    for (size_t j = 0; j < model->nprofiles; j++) {
        const struct mig_profile *p = &model->profiles[j];
        if (p->memory_mib == plan->headroom_mib && addable(model, mask, compute, media, p) &&
            (!plan->headroom || p->compute_slices > plan->headroom->compute_slices))
            plan->headroom = p;
    }
    if (plan->stranded_mib != best.stranded || (int)plan->nplaced != best.placed) {
        snprintf(err, errlen, "internal error: the MIG plan's walk disagrees with its search");
        goto out;
    }
    ret = 0;
out:
    free(s.opts);
    free(s.nopts);
    free(s.memo);
    return ret;
}

static bool owned_by(const struct mig_model *model, const struct mig_profile *p)
{
    return p >= model->profiles && p < model->profiles + model->nprofiles;
}

bool mig_layout_valid(const struct mig_model *model, const struct mig_instance *inst, size_t n,
                      char *why, size_t whylen)
{
    char dummy[8];
    unsigned mask = 0, compute = 0, media = 0;
    unsigned count[32] = {0};
    if (!why) {
        why = dummy;
        whylen = sizeof(dummy);
    }
    for (size_t i = 0; i < n; i++) {
        const struct mig_profile *p = inst[i].profile;
        if (!p || !owned_by(model, p) || model->nprofiles > 32) {
            snprintf(why, whylen, "instance %zu: not a profile of %s", i, model->name);
            return false;
        }
        if (inst[i].start >= model->memory_slices || !(p->start_mask & (1u << inst[i].start))) {
            snprintf(why, whylen, "%s cannot start at memory slice %u", p->name, inst[i].start);
            return false;
        }
        unsigned m = mig_slice_mask(p, inst[i].start);
        if (m & mask) {
            snprintf(why, whylen, "%s at slice %u overlaps another instance", p->name,
                     inst[i].start);
            return false;
        }
        mask |= m;
        compute += p->compute_slices;
        media += p->media ? 1u : 0u;
        if (++count[p - model->profiles] > p->max_count) {
            snprintf(why, whylen, "more than %u instance%s of %s", p->max_count,
                     p->max_count == 1 ? "" : "s", p->name);
            return false;
        }
    }
    if (compute > model->compute_slices) {
        snprintf(why, whylen, "%u compute slices, more than the %u of %s", compute,
                 model->compute_slices, model->name);
        return false;
    }
    if (media > 1) {
        snprintf(why, whylen, "%u instances with media extensions; at most one", media);
        return false;
    }
    return true;
}
