/* fleet_repack.c - a repair of a shared mechanism's plan on a fleet of several models: the
 * GPUs of a dear pool whose tenants a cheaper pool's GPUs would each hold are packed again
 * onto that cheaper pool, and the new GPUs take their place when they cost less.
 *
 * The packing follows the cost bound's fractional solution, and what it rounds goes to the
 * pool cheapest per workload still to place, judged at their average: on L4:4000 + T4:2000
 * compute-heavy lists left 60 L4s ($0.80) holding only workloads of at most 16 GiB, which
 * T4s ($0.35, the same share of a GPU's compute) hold for less.
 *
 * A last pass (empty_gpus) takes the least filled shared GPUs and moves their tenants into
 * the room other GPUs of the same group have left, giving back each GPU it empties: on
 * L4 + T4, 35 workloads left two T4s at 5 GiB/5% and 7 GiB/25% that one T4 holds ($9.60 ->
 * $9.25, the optimum an integer program proved). Last, a local search (fleet_polish.c) moves
 * and swaps tenants between GPUs of a group until the room they leave gathers and GPUs empty. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define REPACK_ROUNDS 3

/* What a pair of pools (dear, cheap) repacks: the dear pool's GPUs all of whose tenants fit
 * the cheap pool's GPU, and the plan of their workloads on the cheap pool alone. */
struct repack {
    const struct fleet *f;
    const struct fleet_workloads *ws;
    int mech;
    const struct mech_rules *r;
    uint64_t max_mem;
    struct fleet_plan *p;
    struct fleet_gpu_list *g;
    uint32_t *tenant_gpu;  /* per workload: its GPU in g (the plan's gpu_of, or ours) */
    bool *moving;          /* per GPU of g: its tenants are repacked */
    struct sort_key *keys; /* per workload */
};

static uint64_t left_of(const struct fleet *f, const struct fleet_plan *p, size_t k)
{
    if (f->pools[k].count == FLEET_UNLIMITED)
        return FLEET_UNLIMITED;
    return p->gpus_by_pool[k] < f->pools[k].count ? f->pools[k].count - p->gpus_by_pool[k] : 0;
}

/* Marks the GPUs of pool dear whose tenants all fit a GPU of pool cheap; how many. */
static size_t mark(struct repack *s, size_t dear, size_t cheap)
{
    uint64_t room = s->f->pools[cheap].memory_mib;
    for (size_t gi = 0; gi < s->g->n; gi++)
        s->moving[gi] = s->g->use[gi].pool == dear;
    for (size_t i = 0; i < s->ws->n; i++) {
        uint32_t gi = s->tenant_gpu[i];
        if (gi != UINT32_MAX && s->moving[gi] && s->ws->w[i].memory_mib > room)
            s->moving[gi] = false;
    }
    size_t n = 0;
    for (size_t gi = 0; gi < s->g->n; gi++)
        n += s->moving[gi];
    return n;
}

/* The marked GPUs' workloads packed on pool cheap alone, into t and tg (t.gpu_of per
 * workload, as the plan's). 0 (t.shortage set when the pool lacks GPUs for them), or
 * -ENOMEM. */
static int pack_on(struct repack *s, size_t cheap, struct fleet_plan *t, struct fleet_gpu_list *tg)
{
    struct pool_choice pc;
    int8_t share_packer[2][FLEET_MAX_POOLS + 1];
    memset(share_packer, -1, sizeof(share_packer));
    fleet_pool_choice_init(s->f, NULL, share_packer, &pc);
    for (size_t k = 0; k < s->f->npools; k++)
        pc.left[k] = k == cheap ? left_of(s->f, s->p, k) : 0;
    pc.only = (int)cheap;
    int ret = 0;
    for (int grp = -1; grp < FLEET_GROUPS && !ret; grp++) {
        size_t n = 0;
        for (size_t i = 0; i < s->ws->n; i++) {
            uint32_t gi = s->tenant_gpu[i];
            if (gi == UINT32_MAX || !s->moving[gi])
                continue;
            const struct fleet_workload *w = &s->ws->w[i];
            int in = fleet_group_of(s->mech, w, s->r);
            if ((grp < 0) != (in == GROUP_ALONE) || (grp >= 0 && in != grp))
                continue;
            uint64_t key = w->memory_mib * FLEET_BP_FULL / s->max_mem + w->compute_bp;
            s->keys[n++] = fleet_sort_key(s->ws, i, key);
        }
        if (grp < 0) { /* each alone on a GPU of its own */
            for (size_t k = 0; k < n && !ret; k++) {
                const struct fleet_workload *w = &s->ws->w[s->keys[k].index];
                long gi = fleet_gpu_open(s->f, tg, t, pc.left, (int)cheap);
                if (gi < 0)
                    ret = -ENOMEM;
                else {
                    fleet_gpu_add(&tg->use[gi], w->memory_mib, w->compute_bp, w->memory_mib);
                    t->gpu_of[s->keys[k].index] = (uint32_t)gi;
                    t->alone++;
                    t->placed++;
                }
            }
            continue;
        }
        fleet_sort_keys(s->keys, n);
        packer_fn *pack = fleet_pack_group;
        ret = fleet_choose_packer(s->f, s->ws, s->keys, n, s->r, &pc, &pack);
        if (!ret)
            ret = pack(s->f, s->ws, s->keys, n, s->r, &pc, t, tg);
    }
    return ret;
}

/* The marked GPUs leave g (the others keep their order) and the plan; to[gi]: where GPU gi
 * is now, UINT32_MAX for one that left. The GPUs left. */
static size_t drop_marked(struct repack *s, const bool *marked, uint32_t *to)
{
    size_t n = 0;
    for (size_t gi = 0; gi < s->g->n; gi++) {
        to[gi] = marked[gi] ? UINT32_MAX : (uint32_t)n;
        if (!marked[gi]) {
            s->g->use[n++] = s->g->use[gi];
            continue;
        }
        uint32_t pool = s->g->use[gi].pool;
        s->p->gpus_by_pool[pool]--;
        s->p->gpus--;
        s->p->cost_per_hour -= s->f->pools[pool].price;
    }
    s->g->n = n;
    return n;
}

/* The marked GPUs leave g, t's GPUs join it at the end. 0, or -ENOMEM. */
static int take(struct repack *s, const struct fleet_plan *t, const struct fleet_gpu_list *tg)
{
    uint32_t *to = malloc((s->g->n ? s->g->n : 1) * sizeof(*to));
    if (!to)
        return -ENOMEM;
    size_t n = drop_marked(s, s->moving, to);
    uint64_t left[FLEET_MAX_POOLS];
    for (size_t k = 0; k < s->f->npools; k++)
        left[k] = left_of(s->f, s->p, k);
    for (size_t j = 0; j < tg->n; j++) {
        long gi = fleet_gpu_open(s->f, s->g, s->p, left, (int)tg->use[j].pool);
        if (gi < 0) {
            free(to);
            return -ENOMEM;
        }
        s->g->use[gi] = tg->use[j];
    }
    for (size_t i = 0; i < s->ws->n; i++) {
        uint32_t gi = s->tenant_gpu[i];
        if (gi == UINT32_MAX)
            continue;
        s->tenant_gpu[i] = to[gi] != UINT32_MAX ? to[gi] : (uint32_t)(n + t->gpu_of[i]);
    }
    free(to);
    return 0;
}

/* Whether the marked GPUs' workloads may fit the GPUs pool cheap has left and cost less there:
 * the GPUs their memory, compute and places need at least, and one for each lone workload.
 * Packing them costs dry runs (on the benchmark's 100,000 workloads onto H100 + L4 + T4, 1.1 s
 * where the T4s had no room for them). */
static bool worth_packing(const struct repack *s, size_t dear, size_t cheap, size_t marked)
{
    uint64_t memory = 0, compute = 0, shared = 0, alone = 0;
    for (size_t i = 0; i < s->ws->n; i++) {
        uint32_t gi = s->tenant_gpu[i];
        if (gi == UINT32_MAX || !s->moving[gi])
            continue;
        const struct fleet_workload *w = &s->ws->w[i];
        if (fleet_group_of(s->mech, w, s->r) == GROUP_ALONE) {
            alone++;
            continue;
        }
        memory += w->memory_mib;
        compute += w->compute_bp;
        shared++;
    }
    uint64_t cap = s->f->pools[cheap].memory_mib, need = (memory + cap - 1) / cap;
    need = MAX(need, (compute + s->r->compute_cap - 1) / s->r->compute_cap);
    need = MAX(need, (shared + s->r->slots - 1) / s->r->slots) + alone;
    return need <= left_of(s->f, s->p, cheap) &&
           (double)need * s->f->pools[cheap].price < (double)marked * s->f->pools[dear].price - 1e-9;
}

/* Pool dear's GPUs that pool cheap would hold, repacked there when that costs less. 1 taken,
 * 0 not, or -ENOMEM. */
static int try_pair(struct repack *s, size_t dear, size_t cheap)
{
    size_t marked = mark(s, dear, cheap);
    if (!marked || !worth_packing(s, dear, cheap, marked))
        return 0;
    struct fleet_plan t;
    struct fleet_gpu_list tg = {0};
    memset(&t, 0, sizeof(t));
    t.gpu_of = malloc((s->ws->n ? s->ws->n : 1) * sizeof(*t.gpu_of));
    int ret = t.gpu_of ? pack_on(s, cheap, &t, &tg) : -ENOMEM;
    double before = (double)marked * s->f->pools[dear].price;
    if (!ret && !t.shortage && t.cost_per_hour < before - 1e-9)
        ret = take(s, &t, &tg) ? -ENOMEM : 1;
    free(t.gpu_of);
    free(tg.use);
    return ret;
}

/* ---- GPUs emptied into the room of others ----
 * The packing's pools are packed share by share, and a share's last GPUs may each be left
 * nearly empty: on 35 workloads on L4 + T4 carve left two T4s holding 5 and 7 GiB (5% and
 * 25%), $9.60 where the optimum (an exact search) is $9.25. The least filled GPUs of a
 * sharing group give each tenant to the GPU of the same group, any pool, with the least
 * memory room left that holds it (memory, compute, places); a GPU all of whose tenants find
 * room is given back. Only a few GPUs are tried, so it costs O(EMPTY_TRIES x GPUs). */

#define EMPTY_TRIES 32
enum { GROUP_NONE = 254 };

static double fill_of(const struct repack *s, const struct fleet_gpu_use *u)
{
    return dmax((double)u->memory_used_mib / (double)s->f->pools[u->pool].memory_mib,
                (double)u->compute_bp / (double)s->r->compute_cap);
}

/* The GPU of group grp, other than from and not given back, with the least memory room left
 * that holds w; -1 if none. */
static long room_for(const struct repack *s, const uint8_t *grp, const bool *gone, size_t from,
                     int gw, const struct fleet_workload *w)
{
    long best = -1;
    uint64_t best_room = UINT64_MAX;
    for (size_t gi = 0; gi < s->g->n; gi++) {
        const struct fleet_gpu_use *u = &s->g->use[gi];
        if (gi == from || gone[gi] || grp[gi] != gw || u->tenants + 1 > s->r->slots ||
            u->compute_bp + w->compute_bp > s->r->compute_cap)
            continue;
        uint64_t mem = s->f->pools[u->pool].memory_mib;
        if (u->memory_used_mib + w->memory_mib > mem)
            continue;
        uint64_t room = mem - u->memory_used_mib - w->memory_mib;
        if (room < best_room) {
            best_room = room;
            best = (long)gi;
        }
    }
    return best;
}

/* GPU c's tenants (list[0..n)) moved into other GPUs' room, or none of them. */
static bool empty_one(struct repack *s, const uint8_t *grp, const bool *gone, size_t c,
                      const uint32_t *list, size_t n, uint32_t *to)
{
    size_t k;
    for (k = 0; k < n; k++) {
        const struct fleet_workload *w = &s->ws->w[list[k]];
        long gi = room_for(s, grp, gone, c, grp[c], w);
        if (gi < 0)
            break;
        fleet_gpu_add(&s->g->use[gi], w->memory_mib, w->compute_bp, w->memory_mib);
        to[k] = (uint32_t)gi;
    }
    if (k == n)
        return true;
    while (k-- > 0) { /* undone */
        struct fleet_gpu_use *u = &s->g->use[to[k]];
        const struct fleet_workload *w = &s->ws->w[list[k]];
        u->tenants--;
        u->memory_used_mib -= w->memory_mib;
        u->memory_held_mib -= w->memory_mib;
        u->compute_bp -= w->compute_bp;
    }
    return false;
}

struct by_fill {
    double fill;
    uint32_t gpu;
};

static int cmp_fill(const void *a, const void *b)
{
    const struct by_fill *x = a, *y = b;
    if (x->fill != y->fill)
        return x->fill < y->fill ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

/* The GPUs given back leave g (the others keep their order) and the plan. */
static void drop_gone(struct repack *s, const bool *gone, uint32_t *to)
{
    drop_marked(s, gone, to);
    for (size_t i = 0; i < s->ws->n; i++)
        if (s->tenant_gpu[i] != UINT32_MAX)
            s->tenant_gpu[i] = to[s->tenant_gpu[i]];
}

static int empty_gpus(struct repack *s)
{
    size_t ng = s->g->n, nw = s->ws->n;
    uint8_t *grp = malloc(ng ? ng : 1);
    bool *gone = calloc(ng ? ng : 1, sizeof(*gone)), *took = calloc(ng ? ng : 1, sizeof(*took));
    uint32_t *start = calloc(ng + 1, sizeof(*start)), *list = malloc((nw ? nw : 1) * 4);
    uint32_t *to = malloc((MAX(ng, nw) ? MAX(ng, nw) : 1) * sizeof(*to)); /* GPUs or tenants */
    struct by_fill *order = malloc((ng ? ng : 1) * sizeof(*order));
    int ret = -ENOMEM;
    if (!grp || !gone || !took || !start || !list || !to || !order)
        goto out;
    memset(grp, GROUP_NONE, ng);
    for (size_t i = 0; i < nw; i++) { /* each GPU's group, and its tenants listed by GPU */
        uint32_t gi = s->tenant_gpu[i];
        if (gi == UINT32_MAX)
            continue;
        int in = fleet_group_of(s->mech, &s->ws->w[i], s->r);
        grp[gi] = grp[gi] == GROUP_NONE || grp[gi] == in ? (uint8_t)in : GROUP_ALONE;
        start[gi + 1]++;
    }
    for (size_t gi = 0; gi < ng; gi++)
        start[gi + 1] += start[gi];
    memcpy(to, start, ng * sizeof(*to));
    for (size_t i = 0; i < nw; i++)
        if (s->tenant_gpu[i] != UINT32_MAX)
            list[to[s->tenant_gpu[i]]++] = (uint32_t)i;
    size_t nc = 0;
    for (size_t gi = 0; gi < ng; gi++)
        if (grp[gi] != GROUP_ALONE && grp[gi] != GROUP_NONE)
            order[nc++] = (struct by_fill){fill_of(s, &s->g->use[gi]), (uint32_t)gi};
    qsort(order, nc, sizeof(*order), cmp_fill);
    size_t given = 0;
    for (size_t k = 0; k < nc && k < EMPTY_TRIES; k++) {
        uint32_t c = order[k].gpu;
        if (took[c]) /* its list lacks what it took */
            continue;
        if (!empty_one(s, grp, gone, c, list + start[c], start[c + 1] - start[c], to))
            continue;
        for (uint32_t j = start[c]; j < start[c + 1]; j++) {
            s->tenant_gpu[list[j]] = to[j - start[c]];
            took[to[j - start[c]]] = true;
        }
        gone[c] = true;
        given++;
    }
    if (given)
        drop_gone(s, gone, to);
    ret = 0;
out:
    free(grp);
    free(gone);
    free(took);
    free(start);
    free(list);
    free(to);
    free(order);
    return ret;
}

/* The local search of fleet_polish.c, and the GPUs it empties given back. */
static int polish(struct repack *s)
{
    bool *emptied = malloc((s->g->n ? s->g->n : 1) * sizeof(*emptied));
    uint32_t *to = malloc((s->g->n ? s->g->n : 1) * sizeof(*to));
    int ret = -ENOMEM;
    if (emptied && to)
        ret = fleet_polish(s->f, s->ws, s->mech, s->r, s->tenant_gpu, s->g, emptied);
    if (ret > 0)
        drop_gone(s, emptied, to);
    free(emptied);
    free(to);
    return ret < 0 ? ret : 0;
}

int fleet_repack_cheaper(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                         const struct mech_rules *r, struct fleet_plan *p,
                         struct fleet_gpu_list *g)
{
    if (f->npools < 2 || p->shortage)
        return 0;
    struct repack s = {.f = f, .ws = ws, .mech = mech, .r = r, .max_mem = fleet_max_memory(f),
                       .p = p, .g = g, .tenant_gpu = p->gpu_of};
    int ret = -ENOMEM;
    s.keys = malloc((ws->n ? ws->n : 1) * sizeof(*s.keys));
    if (!s.keys)
        goto out;
    /* again while a pair is taken: what moved to a middle pool may move on */
    int taken = 1;
    ret = 0;
    for (int round = 0; round < REPACK_ROUNDS && taken && !ret; round++) {
        taken = 0;
        for (size_t dear = 0; dear < f->npools && !ret; dear++)
            for (size_t cheap = 0; cheap < f->npools && !ret; cheap++) {
                if (f->pools[cheap].price >= f->pools[dear].price || !left_of(f, p, cheap))
                    continue;
                bool *moving = realloc(s.moving, (g->n ? g->n : 1) * sizeof(*s.moving));
                if (!moving) {
                    ret = -ENOMEM;
                    break;
                }
                s.moving = moving;
                ret = try_pair(&s, dear, cheap);
                taken += ret > 0;
                ret = ret < 0 ? ret : 0;
            }
    }
    if (!ret)
        ret = empty_gpus(&s);
    if (!ret)
        ret = polish(&s);
out:
    free(s.moving);
    free(s.keys);
    return ret;
}
