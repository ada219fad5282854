/* fleet_mig_repair.c - a local search over a MIG plan: moves between whole GPUs and MIG GPUs
 * that make it cheaper, where the profile-count packing and the rounding of the cost
 * program's fractions leave a MIG GPU nearly empty.
 *
 * Two moves, repeated while either makes the plan cheaper:
 *   fill:  a workload alone on a whole GPU joins a MIG GPU whose layout has room for its
 *          profile, and its whole GPU is given back (on H100:4 + L4:4, five 3g.40gb workloads
 *          were four L4s and an H100 holding one instance, $5.69, where the H100 holds two and
 *          three L4s the rest, $4.89);
 *   empty: a MIG GPU whose instances cost less as whole GPUs of other pools (with GPUs left)
 *          gives them those, and is given back (an H100 at $2.49 holding a 1g.10gb and a
 *          2g.20gb, where two L4s cost $1.60).
 * Both keep the plan within MIG's rules: a workload on an instance of its smallest profile on
 * a GPU of the MIG model, in a layout the hardware allows, or alone on a whole GPU. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "mig.h"

#define LAYOUT_WHOLE UINT64_MAX /* a GPU given whole to one workload */
#define NOBODY UINT32_MAX
#define REPAIR_ROUNDS 4
#define REPAIR_SCANS 20000000ul /* room GPUs looked at by fill, at most, per round */

struct repair {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    const struct fleet_exact_rules *r;
    struct fleet_gpu_list *g;
    struct fleet_plan *p;
    const char **profile_of;
    uint64_t left[FLEET_MAX_POOLS];
    /* per GPU, grown with g: its layout (LAYOUT_WHOLE for a whole GPU) and its first tenant */
    uint64_t *layout;
    uint32_t *head;
    size_t cap;
    uint32_t *next;  /* per workload: the next tenant of its GPU */
    int8_t *profile; /* per workload: its smallest profile, -1 none */
};

static int grow(struct repair *s)
{
    if (s->g->n <= s->cap)
        return 0;
    size_t cap = s->g->n * 2;
    uint64_t *layout = realloc(s->layout, cap * sizeof(*layout));
    if (layout)
        s->layout = layout;
    uint32_t *head = realloc(s->head, cap * sizeof(*head));
    if (head)
        s->head = head;
    if (!layout || !head)
        return -ENOMEM;
    s->cap = cap;
    return 0;
}

static uint64_t plus(uint64_t layout, int q)
{
    unsigned shift = (unsigned)q * FLEET_EXACT_LAYOUT_BITS;
    uint64_t field = (1ULL << FLEET_EXACT_LAYOUT_BITS) - 1;
    return (layout >> shift & field) == field ? 0 : layout + (1ULL << shift);
}

/* Whether GPU gi holds instances (not a whole GPU, not given back). */
static bool mig_gpu(const struct repair *s, size_t gi)
{
    return s->layout[gi] != LAYOUT_WHOLE && s->g->use[gi].tenants &&
           s->r->mig_pool[s->g->use[gi].pool];
}

/* GPU gi is given back: its pool gets it back, or the plan goes that much less beyond the
 * fleet. */
static void give_back(struct repair *s, size_t gi)
{
    uint32_t pool = s->g->use[gi].pool;
    const struct fleet_pool *fp = &s->f->pools[pool];
    if (fp->count != FLEET_UNLIMITED && s->p->gpus_by_pool[pool] > fp->count)
        s->p->shortage--;
    else if (fp->count != FLEET_UNLIMITED)
        s->left[pool]++;
    s->p->gpus_by_pool[pool]--;
    s->p->gpus--;
    s->p->cost_per_hour -= fp->price;
    memset(&s->g->use[gi], 0, sizeof(s->g->use[gi]));
    s->g->use[gi].pool = pool;
    s->head[gi] = NOBODY;
}

static void add_tenant(struct repair *s, size_t gi, uint32_t i, uint64_t held)
{
    const struct fleet_workload *w = &s->ws->w[i];
    struct fleet_gpu_use *u = &s->g->use[gi];
    u->tenants++;
    u->memory_used_mib += w->memory_mib;
    u->memory_held_mib += held;
    u->compute_bp += w->compute_bp;
    s->next[i] = s->head[gi];
    s->head[gi] = i;
    s->p->gpu_of[i] = (uint32_t)gi;
}

/* Workload i (alone on whole GPU from) as an instance on MIG GPU to. */
static void move_to_instance(struct repair *s, uint32_t i, size_t from, size_t to)
{
    const struct mig_profile *pr = &s->r->mig->profiles[s->profile[i]];
    uint64_t mem = s->ws->w[i].memory_mib;
    give_back(s, from);
    add_tenant(s, to, i, pr->memory_mib > mem ? pr->memory_mib : mem);
    s->layout[to] = plus(s->layout[to], s->profile[i]);
    s->profile_of[i] = pr->name;
    s->p->alone--;
}

/* The profiles one more instance of which GPU gi's layout takes, as bits. */
static unsigned room(const struct repair *s, size_t gi)
{
    unsigned bits = 0;
    for (size_t q = 0; q < s->r->mig->nprofiles && q < 16; q++) {
        uint64_t more = plus(s->layout[gi], (int)q);
        if (more && fleet_exact_layout_fits(s->r, more))
            bits |= 1u << q;
    }
    return bits;
}

/* fill: each workload alone on a whole GPU joins a MIG GPU with room for its profile, the
 * dearest whole GPUs first. Returns the moves made, or -ENOMEM. */
static long fill(struct repair *s)
{
    size_t *rooms = malloc((s->g->n ? s->g->n : 1) * sizeof(*rooms));
    unsigned *bits = malloc((s->g->n ? s->g->n : 1) * sizeof(*bits));
    uint32_t *cand = malloc((s->g->n ? s->g->n : 1) * sizeof(*cand));
    long moves = 0;
    if (!rooms || !bits || !cand) {
        moves = -ENOMEM;
        goto out;
    }
    size_t nroom = 0, ncand = 0;
    for (size_t gi = 0; gi < s->g->n; gi++)
        if (mig_gpu(s, gi) && (bits[nroom] = room(s, gi)))
            rooms[nroom++] = gi;
    /* the whole GPUs of workloads that have a profile, the dearest pools' first */
    bool done[FLEET_MAX_POOLS] = {false};
    for (size_t round = 0; round < s->f->npools && nroom; round++) {
        int pool = -1;
        for (size_t k = 0; k < s->f->npools; k++)
            if (!done[k] && (pool < 0 || s->f->pools[k].price > s->f->pools[pool].price))
                pool = (int)k;
        done[pool] = true;
        for (size_t gi = 0; gi < s->g->n; gi++) {
            uint32_t i = s->head[gi];
            if (s->g->use[gi].pool == (uint32_t)pool && s->layout[gi] == LAYOUT_WHOLE &&
                i != NOBODY && s->profile[i] >= 0)
                cand[ncand++] = (uint32_t)gi;
        }
    }
    size_t scans = 0;
    for (size_t c = 0; c < ncand && nroom && scans < REPAIR_SCANS; c++) {
        size_t from = cand[c];
        uint32_t i = s->head[from];
        for (size_t k = 0; k < nroom; k++, scans++) {
            if (!(bits[k] & (1u << s->profile[i])))
                continue;
            move_to_instance(s, i, from, rooms[k]);
            moves++;
            if (!(bits[k] = room(s, rooms[k]))) {
                rooms[k] = rooms[--nroom];
                bits[k] = bits[nroom];
            }
            break;
        }
    }
out:
    free(rooms);
    free(bits);
    free(cand);
    return moves;
}

/* The cheapest pool not of the MIG model with a GPU left (in left) that holds memory_mib, or
 * -1. */
static int whole_pool(const struct repair *s, const uint64_t *left, uint64_t memory_mib)
{
    int pool = -1;
    for (size_t k = 0; k < s->f->npools; k++)
        if (!s->r->mig_pool[k] && left[k] && s->f->pools[k].memory_mib >= memory_mib &&
            (pool < 0 || s->f->pools[k].price < s->f->pools[pool].price))
            pool = (int)k;
    return pool;
}

/* empty: MIG GPU gi's instances onto whole GPUs of other pools, if they have GPUs left for
 * all of them and that costs less (or takes the plan less beyond the fleet). 1 moved, 0 not,
 * or -ENOMEM. */
static int empty(struct repair *s, size_t gi)
{
    uint64_t left[FLEET_MAX_POOLS];
    memcpy(left, s->left, sizeof(left));
    double cost = 0;
    for (uint32_t i = s->head[gi]; i != NOBODY; i = s->next[i]) {
        int k = whole_pool(s, left, s->ws->w[i].memory_mib);
        if (k < 0)
            return 0;
        if (left[k] != FLEET_UNLIMITED)
            left[k]--;
        cost += s->f->pools[k].price;
    }
    uint32_t pool = s->g->use[gi].pool;
    bool beyond = s->f->pools[pool].count != FLEET_UNLIMITED &&
                  s->p->gpus_by_pool[pool] > s->f->pools[pool].count;
    if (!beyond && cost >= s->f->pools[pool].price - 1e-9)
        return 0;
    uint32_t i = s->head[gi];
    size_t tenants = s->g->use[gi].tenants;
    give_back(s, gi);
    while (i != NOBODY) {
        uint32_t after = s->next[i];
        int k = whole_pool(s, s->left, s->ws->w[i].memory_mib);
        long to = fleet_gpu_open(s->f, s->g, s->p, s->left, k);
        if (to < 0 || grow(s))
            return -ENOMEM;
        s->layout[to] = LAYOUT_WHOLE;
        s->head[to] = NOBODY;
        add_tenant(s, (size_t)to, i, s->ws->w[i].memory_mib);
        s->profile_of[i] = "whole";
        i = after;
    }
    s->p->alone += tenants;
    return 1;
}

/* empty, on each MIG GPU, the fewest tenants first. Returns the moves made, or -ENOMEM. */
static long empty_all(struct repair *s)
{
    long moves = 0;
    size_t n = s->g->n;
    for (uint32_t tenants = 1; tenants <= 7; tenants++)
        for (size_t gi = 0; gi < n; gi++) {
            if (!mig_gpu(s, gi) || s->g->use[gi].tenants != tenants)
                continue;
            int ret = empty(s, gi);
            if (ret < 0)
                return ret;
            moves += ret;
        }
    return moves;
}

/* The GPUs given back leave the list; the others keep their order. 0, or -ENOMEM. */
static int compact(struct repair *s)
{
    uint32_t *to = malloc((s->g->n ? s->g->n : 1) * sizeof(*to));
    if (!to)
        return -ENOMEM;
    size_t n = 0;
    for (size_t gi = 0; gi < s->g->n; gi++) {
        to[gi] = s->g->use[gi].tenants ? (uint32_t)n : NOBODY;
        if (s->g->use[gi].tenants)
            s->g->use[n++] = s->g->use[gi];
    }
    for (size_t i = 0; i < s->ws->n; i++)
        if (s->p->gpu_of[i] != NOBODY)
            s->p->gpu_of[i] = to[s->p->gpu_of[i]];
    s->g->n = n;
    free(to);
    return 0;
}

int fleet_mig_repair(const struct fleet *f, const struct fleet_workloads *ws,
                     const struct fleet_exact_rules *r, struct fleet_gpu_list *g,
                     struct fleet_plan *p)
{
    struct repair s = {.f = f, .ws = ws, .r = r, .g = g, .p = p, .profile_of = p->profile_of};
    int ret = -ENOMEM;
    s.next = malloc((ws->n ? ws->n : 1) * sizeof(*s.next));
    s.profile = malloc(ws->n ? ws->n : 1);
    if (!s.next || !s.profile || grow(&s))
        goto out;
    for (size_t k = 0; k < f->npools; k++)
        s.left[k] = f->pools[k].count == FLEET_UNLIMITED ? FLEET_UNLIMITED
                    : p->gpus_by_pool[k] < f->pools[k].count
                        ? f->pools[k].count - p->gpus_by_pool[k]
                        : 0;
    for (size_t gi = 0; gi < g->n; gi++) {
        s.layout[gi] = 0;
        s.head[gi] = NOBODY;
    }
    for (size_t i = 0; i < ws->n; i++) {
        s.profile[i] = -1;
        uint32_t gi = p->gpu_of[i];
        if (gi == NOBODY)
            continue;
        const struct fleet_workload *w = &ws->w[i];
        const struct mig_profile *pr = mig_profile_fit(r->mig, w->memory_mib, w->compute_bp / 100.0);
        if (pr && pr - r->mig->profiles < 16)
            s.profile[i] = (int8_t)(pr - r->mig->profiles);
        s.next[i] = s.head[gi];
        s.head[gi] = (uint32_t)i;
        if (strcmp(p->profile_of[i], "whole") == 0 || s.profile[i] < 0)
            s.layout[gi] = LAYOUT_WHOLE;
        else if (s.layout[gi] != LAYOUT_WHOLE)
            s.layout[gi] = plus(s.layout[gi], s.profile[i]);
    }
    ret = 0;
    for (int round = 0; round < REPAIR_ROUNDS; round++) {
        long filled = fill(&s);
        long emptied = filled < 0 ? filled : empty_all(&s);
        if (filled < 0 || emptied < 0) {
            ret = -ENOMEM;
            break;
        }
        if (!filled && !emptied)
            break;
    }
    if (!ret)
        ret = compact(&s);
out:
    free(s.layout);
    free(s.head);
    free(s.next);
    free(s.profile);
    return ret;
}
