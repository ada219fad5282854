/* fleet_mig.c - the planner's MIG packing: each workload gets the smallest MIG profile that
 * holds it (planner/mig.h's table), and profiles are placed on GPUs as the hardware allows
 * (memory slices at the profile's allowed starts, 7 compute slices, a most-per-GPU count).
 *
 * GPUs are grouped by their state (which memory slices are taken, compute slices used,
 * instances of each profile): a workload goes to the fullest state that still admits its
 * profile, so each placement scans the few distinct states, not the GPUs. Workloads larger
 * than every profile, and every workload when the fleet has no MIG-capable pool, get whole
 * GPUs: MIG is per pool, and a T4, L4 or V100 cannot be partitioned. */
#include <errno.h>
#include <math.h> /* INFINITY only: the carve command does not link libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

#if defined(__has_include)
#if __has_include("mig.h")
#define FLEET_HAVE_MIG 1
#include "mig.h"
#endif
#endif

#ifndef FLEET_HAVE_MIG

int fleet_pack_mig(const struct fleet *f, const struct fleet_workloads *ws,
                   const uint8_t *possible, const struct fleet_options *o, struct fleet_plan *p)
{
    p->mech = FLEET_MIG;
    p->available = false;
    snprintf(p->note, sizeof(p->note), "this build has no MIG profile table (planner/mig.h)");
    return 0;
}

#else

#define MIG_MAX_PROFILES 24

struct mig_state {
    uint8_t pool;
    uint8_t mask;    /* memory slices taken */
    uint8_t compute; /* compute slices used */
    uint8_t held_slices;
    uint8_t counts[MIG_MAX_PROFILES];
};

struct state_bucket {
    struct mig_state s;
    uint32_t *gpus; /* GPUs (plan indices) in this state */
    size_t n, cap;
};

struct mig_packer {
    const struct fleet *f;
    const struct mig_model *models[FLEET_MAX_POOLS]; /* NULL: the pool is not MIG-capable */
    struct state_bucket *b;
    size_t nb, capb;
    struct fleet_gpu_use *use;
    size_t ngpu, capgpu;
};

static unsigned profile_index(const struct mig_model *m, const struct mig_profile *pr)
{
    return (unsigned)(pr - m->profiles);
}

/* The first allowed start at which pr fits in s, or -1. */
static int admit(const struct mig_model *m, const struct mig_state *s, const struct mig_profile *pr)
{
    unsigned pi = profile_index(m, pr);
    if (pi >= MIG_MAX_PROFILES || s->counts[pi] >= pr->max_count ||
        s->compute + pr->compute_slices > m->compute_slices)
        return -1;
    unsigned need = ((1u << pr->memory_slices) - 1);
    for (unsigned start = 0; start + pr->memory_slices <= m->memory_slices && start < 8; start++) {
        if (!(pr->start_mask & (1u << start)))
            continue;
        if (!((s->mask >> start) & need))
            return (int)start;
    }
    return -1;
}

static struct state_bucket *bucket_for(struct mig_packer *k, const struct mig_state *s)
{
    for (size_t i = 0; i < k->nb; i++)
        if (memcmp(&k->b[i].s, s, sizeof(*s)) == 0)
            return &k->b[i];
    if (k->nb == k->capb) {
        size_t cap = k->capb ? k->capb * 2 : 64;
        struct state_bucket *bigger = realloc(k->b, cap * sizeof(*bigger));
        if (!bigger)
            return NULL;
        k->b = bigger;
        k->capb = cap;
    }
    struct state_bucket *b = &k->b[k->nb++];
    memset(b, 0, sizeof(*b));
    b->s = *s;
    return b;
}

static int bucket_push(struct state_bucket *b, uint32_t gpu)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        uint32_t *bigger = realloc(b->gpus, cap * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        b->gpus = bigger;
        b->cap = cap;
    }
    b->gpus[b->n++] = gpu;
    return 0;
}

static long open_gpu(struct mig_packer *k, struct fleet_plan *p, uint64_t *pool_left, int pool)
{
    if (k->ngpu == k->capgpu) {
        size_t cap = k->capgpu ? k->capgpu * 2 : 1024;
        struct fleet_gpu_use *bigger = realloc(k->use, cap * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        k->use = bigger;
        k->capgpu = cap;
    }
    memset(&k->use[k->ngpu], 0, sizeof(k->use[0]));
    k->use[k->ngpu].pool = (uint32_t)pool;
    if (pool_left[pool])
        pool_left[pool]--;
    else
        p->shortage++;
    p->gpus++;
    p->gpus_by_pool[pool]++;
    p->cost_per_hour += k->f->pools[pool].price;
    return (long)k->ngpu++;
}

struct mig_item {
    const struct mig_profile *pr; /* of the primary MIG model; NULL: a whole GPU */
    uint32_t index;
};

static int by_profile_desc(const void *a, const void *b)
{
    const struct mig_item *x = a, *y = b;
    unsigned xm = x->pr ? x->pr->memory_slices * 8 + x->pr->compute_slices : 1000;
    unsigned ym = y->pr ? y->pr->memory_slices * 8 + y->pr->compute_slices : 1000;
    if (xm != ym)
        return xm < ym ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Places one workload: the fullest GPU state that admits its profile, else a new GPU of the
 * first MIG pool (in order) with GPUs left, else of the first MIG pool. */
static int place(struct mig_packer *k, struct fleet_plan *p, const struct fleet_workload *w,
                 const size_t *order, uint64_t *pool_left, uint32_t widx, const char **profile_of)
{
    double pct = w->compute_bp / 100.0;
    struct state_bucket *best = NULL;
    const struct mig_profile *best_pr = NULL;
    for (size_t i = 0; i < k->nb; i++) {
        struct state_bucket *b = &k->b[i];
        if (!b->n)
            continue;
        const struct mig_model *m = k->models[b->s.pool];
        const struct mig_profile *pr = mig_profile_fit(m, w->memory_mib, pct);
        if (!pr || admit(m, &b->s, pr) < 0)
            continue;
        if (!best || b->s.held_slices > best->s.held_slices) {
            best = b;
            best_pr = pr;
        }
    }
    uint32_t gpu;
    struct mig_state s;
    if (best) {
        gpu = best->gpus[--best->n];
        s = best->s;
    } else {
        int pool = -1;
        for (size_t o = 0; o < k->f->npools && pool < 0; o++)
            if (k->models[order[o]] && pool_left[order[o]] &&
                mig_profile_fit(k->models[order[o]], w->memory_mib, pct))
                pool = (int)order[o];
        for (size_t o = 0; o < k->f->npools && pool < 0; o++)
            if (k->models[order[o]] && mig_profile_fit(k->models[order[o]], w->memory_mib, pct))
                pool = (int)order[o];
        if (pool < 0)
            return 1; /* no MIG pool holds it: the caller gives it a whole GPU */
        long g = open_gpu(k, p, pool_left, pool);
        if (g < 0)
            return -ENOMEM;
        gpu = (uint32_t)g;
        memset(&s, 0, sizeof(s));
        s.pool = (uint8_t)pool;
        best_pr = mig_profile_fit(k->models[pool], w->memory_mib, pct);
    }
    const struct mig_model *m = k->models[s.pool];
    int start = admit(m, &s, best_pr);
    if (start < 0)
        return 1;
    s.mask |= (uint8_t)(((1u << best_pr->memory_slices) - 1) << start);
    s.compute += (uint8_t)best_pr->compute_slices;
    s.held_slices += (uint8_t)best_pr->memory_slices;
    s.counts[profile_index(m, best_pr)]++;
    struct fleet_gpu_use *u = &k->use[gpu];
    u->tenants++;
    u->memory_used_mib += w->memory_mib;
    u->memory_held_mib += best_pr->memory_mib > w->memory_mib ? best_pr->memory_mib : w->memory_mib;
    u->compute_bp += w->compute_bp;
    if (p->gpu_of)
        p->gpu_of[widx] = gpu;
    if (profile_of)
        profile_of[widx] = best_pr->name;
    struct state_bucket *nb = bucket_for(k, &s);
    return nb ? bucket_push(nb, gpu) : -ENOMEM;
}

/* Pool order as in fleet_pack.c: cheapest per MiB first. */
static void order_pools(const struct fleet *f, size_t order[FLEET_MAX_POOLS])
{
    for (size_t i = 0; i < f->npools; i++)
        order[i] = i;
    for (size_t i = 1; i < f->npools; i++)
        for (size_t j = i; j > 0; j--) {
            const struct fleet_pool *a = &f->pools[order[j - 1]], *b = &f->pools[order[j]];
            if (a->price / (double)a->memory_mib <= b->price / (double)b->memory_mib)
                break;
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

int fleet_pack_mig(const struct fleet *f, const struct fleet_workloads *ws,
                   const uint8_t *possible, const struct fleet_options *o, struct fleet_plan *p)
{
    struct mig_packer k = {.f = f};
    size_t order[FLEET_MAX_POOLS];
    uint64_t pool_left[FLEET_MAX_POOLS];
    const struct mig_model *primary = NULL;
    order_pools(f, order);
    for (size_t i = 0; i < f->npools; i++) {
        pool_left[i] = f->pools[i].count;
        k.models[i] = f->pools[i].mig ? mig_model_find(f->pools[i].name) : NULL;
        if (k.models[i] && k.models[i]->nprofiles > MIG_MAX_PROFILES)
            k.models[i] = NULL;
    }
    for (size_t i = 0; i < f->npools && !primary; i++)
        primary = k.models[order[i]];
    p->mech = FLEET_MIG;
    p->available = primary != NULL;
    if (!primary) {
        snprintf(p->note, sizeof(p->note),
                 "no pool of this fleet can be partitioned: MIG needs A100, H100, H200 or B200");
        return 0;
    }
    struct mig_item *items = malloc((ws->n ? ws->n : 1) * sizeof(*items));
    p->profile_of = o->keep_assignment ? calloc(ws->n ? ws->n : 1, sizeof(*p->profile_of)) : NULL;
    if (!items || (o->keep_assignment && !p->profile_of)) {
        free(items);
        return -ENOMEM;
    }
    size_t n = 0;
    uint64_t mem_slices = 0, comp_slices = 0, big_mem = 0, big_comp = 0;
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        const struct fleet_workload *w = &ws->w[i];
        items[n].pr = mig_profile_fit(primary, w->memory_mib, w->compute_bp / 100.0);
        items[n++].index = (uint32_t)i;
    }
    qsort(items, n, sizeof(*items), by_profile_desc);
    int ret = 0;
    for (size_t i = 0; i < n && !ret; i++) {
        const struct fleet_workload *w = &ws->w[items[i].index];
        int r = items[i].pr ? place(&k, p, w, order, pool_left, items[i].index, p->profile_of) : 1;
        if (r < 0) {
            ret = r;
            break;
        }
        if (r == 1) { /* larger than every profile, or no MIG pool holds it: a whole GPU */
            int pool = fleet_pick_pool(f, pool_left, w->memory_mib);
            long g = open_gpu(&k, p, pool_left, pool);
            if (g < 0) {
                ret = -ENOMEM;
                break;
            }
            k.use[g].tenants = 1;
            k.use[g].memory_used_mib = w->memory_mib;
            k.use[g].memory_held_mib = w->memory_mib;
            k.use[g].compute_bp = w->compute_bp;
            if (p->gpu_of)
                p->gpu_of[items[i].index] = (uint32_t)g;
            if (p->profile_of)
                p->profile_of[items[i].index] = "whole";
            p->alone++;
            double cheapest = INFINITY;
            for (size_t q = 0; q < f->npools; q++)
                if (f->pools[q].memory_mib >= w->memory_mib)
                    cheapest = dmin(cheapest, f->pools[q].price);
            p->cost_lower_bound += cheapest;
        } else {
            mem_slices += items[i].pr->memory_slices;
            comp_slices += items[i].pr->compute_slices;
            big_mem += items[i].pr->memory_slices * 2 > primary->memory_slices;
            big_comp += items[i].pr->compute_slices * 2 > primary->compute_slices;
        }
        p->placed++;
    }
    /* bound: lone GPUs, plus the slices the smallest fitting profiles need (no profile
     * choice needs fewer), or one GPU per instance too big to pair in one dimension */
    uint64_t shared = ceil_div(mem_slices, primary->memory_slices);
    if (ceil_div(comp_slices, primary->compute_slices) > shared)
        shared = ceil_div(comp_slices, primary->compute_slices);
    if (big_mem > shared)
        shared = big_mem;
    if (big_comp > shared)
        shared = big_comp;
    p->lower_bound = p->alone + shared;
    double cheapest_mig = INFINITY;
    for (size_t i = 0; i < f->npools; i++)
        if (k.models[i])
            cheapest_mig = dmin(cheapest_mig, f->pools[i].price);
    p->cost_lower_bound += (double)shared * cheapest_mig;
    for (size_t i = 0; i < k.ngpu; i++) {
        uint64_t have = f->pools[k.use[i].pool].memory_mib;
        p->stranded_mib += have > k.use[i].memory_used_mib ? have - k.use[i].memory_used_mib : 0;
        p->rounding_mib += k.use[i].memory_held_mib - k.use[i].memory_used_mib;
    }
    p->use = k.use;
    for (size_t i = 0; i < k.nb; i++)
        free(k.b[i].gpus);
    free(k.b);
    free(items);
    snprintf(p->note, sizeof(p->note),
             "profiles of %s (smallest that holds each workload); %llu on whole GPUs; "
             "%.0f GiB held by profiles beyond what workloads use",
             primary->name, (unsigned long long)p->alone, p->rounding_mib / 1024.0);
    return ret;
}

#endif
