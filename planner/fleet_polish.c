/* fleet_polish.c - a local search over a shared mechanism's plan on a fleet of several models:
 * tenants moved, or swapped in pairs, between GPUs of the same sharing group wherever that
 * leaves the fuller GPUs fuller, until some GPUs empty and are given back.
 *
 * The packers fill one GPU at a time and never look back, and where memory and compute both
 * bind on a GPU they leave a little of each GPU unused: on the reviewer's 3,000 workloads of
 * 1-45 GiB and 1-60% (r.csv) on A100 + L4, MPS's L4s held 20 or 21 GiB of the 22 an L4 holds
 * of whole GiB on a third of them, and 45 of its A100s held a 45 and a 30 GiB workload whose
 * compute added up to 100% and left 5 GiB that no one could use. Each GPU being short by a GiB
 * or two, no GPU empties by moving one tenant (fleet_repack.c's last pass). A move or a swap
 * that makes the sum over the GPUs of price x (fill of memory squared + POLISH_COMPUTE x fill
 * of compute squared) larger takes memory from the emptier GPU to the fuller one; repeated,
 * the room gathers on a few GPUs, which empty (the usual local search of bin packing, with
 * the sum of squared loads as its measure: it only grows, and a plan has finitely many
 * states, so it ends). A little weight on compute keeps compute moving too, where a GPU whose
 * memory is spent takes a tenant of the same memory and more compute for one of less, which
 * lets the other GPU take more memory later (0.1 did best on r.csv in a prototype: MPS $11.20
 * cheaper, $8.00 with memory alone, $5.60 with compute weighed as memory).
 *
 * Each GPU in turn receives: the tenants of other GPUs that fit its room, then, for each of
 * its tenants, one of another GPU larger by at most its room. The group's tenants sorted by
 * memory give those candidates by a binary search, so a GPU full to its last GiB looks at the
 * tenants of its tenants' sizes only (visiting every pair of GPUs instead cost 0.4 s on r.csv,
 * most of it on such pairs). In a later pass a GPU passes over the candidates on GPUs that,
 * like itself, did not change since it last looked. At most POLISH_WORK candidates a group:
 * on r.csv the groups look at 0.9-7.5 million (64 ms for time-slicing, MPS and carve together
 * on the 2-core VM); groups of 20,000 notebooks of a few sizes would look at hundreds of
 * millions, and stop at the budget with what they gained by then. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"
#include "fleet_report.h"

#define POLISH_MOST 4096      /* GPUs of a group at most (each has a row of places) */
#define POLISH_PASSES 8       /* passes at most; r.csv's groups settle in 3-8 */
#define POLISH_COMPUTE 0.1    /* the weight of compute's fill beside memory's */
#define POLISH_WORK 8000000ul /* candidates a group looks at, at most (about 50 ms) */

enum { POLISH_NONE = 254 };

/* One group's GPUs (local numbers) and tenants (local numbers, by memory ascending). */
struct polish {
    size_t n, nt, most;
    uint32_t *gpu;              /* per local GPU: its index in g */
    uint64_t *mem, *comp;       /* per local GPU: memory (MiB) and compute (bp) used */
    uint64_t *mem_cap;          /* per local GPU: its pool's memory */
    uint32_t *count;            /* per local GPU: tenants */
    double *per_mib2, *per_bp2; /* per local GPU: the measure of a MiB squared, a bp's */
    uint64_t *changed;          /* per local GPU: the clock when its tenants last changed, */
    uint64_t *looked;           /* and when it last looked for candidates */
    uint32_t *row;              /* per local GPU, `most' places: its tenants */
    uint64_t *t_mem;            /* per tenant: memory, ascending */
    uint32_t *t_comp, *t_index; /* per tenant: compute, and the workload */
    uint32_t *where, *pos;      /* per tenant: its local GPU, and its place in that row */
    uint64_t compute_cap, slots, clock; /* clock: ticks at each look and change */
    unsigned long work;                 /* candidates looked at */
};

/* How much the measure grows when GPU a's memory and compute grow by dm, dc and GPU b's
 * shrink by as much: (x + d)^2 - x^2 = d (2x + d). */
static double gain(const struct polish *s, size_t a, size_t b, double dm, double dc)
{
    return s->per_mib2[a] * dm * (2.0 * (double)s->mem[a] + dm) +
           s->per_mib2[b] * dm * (dm - 2.0 * (double)s->mem[b]) +
           s->per_bp2[a] * dc * (2.0 * (double)s->comp[a] + dc) +
           s->per_bp2[b] * dc * (dc - 2.0 * (double)s->comp[b]);
}

/* Tenant t of GPU b (where[t]) onto GPU a. */
static void move(struct polish *s, uint32_t t, size_t a)
{
    size_t b = s->where[t];
    uint32_t last = s->row[b * s->most + --s->count[b]];
    s->row[b * s->most + s->pos[t]] = last;
    s->pos[last] = s->pos[t];
    s->pos[t] = s->count[a];
    s->row[a * s->most + s->count[a]++] = t;
    s->where[t] = (uint32_t)a;
    s->mem[a] += s->t_mem[t];
    s->comp[a] += s->t_comp[t];
    s->mem[b] -= s->t_mem[t];
    s->comp[b] -= s->t_comp[t];
    s->changed[a] = s->changed[b] = ++s->clock;
}

/* Tenants x (of GPU a) and y (of GPU b) change places. */
static void swap(struct polish *s, uint32_t x, uint32_t y)
{
    size_t a = s->where[x], b = s->where[y];
    s->row[a * s->most + s->pos[x]] = y;
    s->row[b * s->most + s->pos[y]] = x;
    uint32_t p = s->pos[x];
    s->pos[x] = s->pos[y];
    s->pos[y] = p;
    s->where[x] = (uint32_t)b;
    s->where[y] = (uint32_t)a;
    s->mem[a] = s->mem[a] - s->t_mem[x] + s->t_mem[y];
    s->comp[a] = s->comp[a] - s->t_comp[x] + s->t_comp[y];
    s->mem[b] = s->mem[b] - s->t_mem[y] + s->t_mem[x];
    s->comp[b] = s->comp[b] - s->t_comp[y] + s->t_comp[x];
    s->changed[a] = s->changed[b] = ++s->clock;
}

/* The first tenant of at least mib MiB. */
static size_t first_of(const struct polish *s, uint64_t mib)
{
    size_t lo = 0, hi = s->nt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t_mem[mid] < mib)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether tenant t's GPU is one GPU a need not look at again: neither changed since a last
 * looked (since, 0 on the first pass). */
static bool seen(const struct polish *s, size_t a, uint32_t t, uint64_t since)
{
    return s->changed[a] < since && s->changed[s->where[t]] < since;
}

/* GPU a takes the tenants of others that fit its room where the measure grows; whether any. */
static bool receive_moves(struct polish *s, size_t a, uint64_t since)
{
    bool any = false;
    for (uint32_t t = 0; t < s->nt && s->count[a] < s->slots; t++) {
        if (s->t_mem[t] > s->mem_cap[a] - s->mem[a])
            break;
        s->work++;
        size_t b = s->where[t];
        if (b == a || seen(s, a, t, since) || s->comp[a] + s->t_comp[t] > s->compute_cap ||
            gain(s, a, b, (double)s->t_mem[t], (double)s->t_comp[t]) <= 1e-12)
            continue;
        move(s, t, a);
        any = true;
    }
    return any;
}

/* Each tenant x of GPU a for a larger one of another GPU (in memory by at most a's room, else
 * in compute), where both fit and the measure grows; whether any. */
static bool receive_swaps(struct polish *s, size_t a, uint64_t since)
{
    bool any = false;
    for (uint32_t i = 0; i < s->count[a]; i++) {
        uint32_t x = s->row[a * s->most + i];
        uint64_t top = s->t_mem[x] + (s->mem_cap[a] - s->mem[a]);
        for (size_t y = first_of(s, s->t_mem[x]); y < s->nt && s->t_mem[y] <= top; y++) {
            s->work++;
            size_t b = s->where[y];
            int64_t dc = (int64_t)s->t_comp[y] - (int64_t)s->t_comp[x];
            double dm = (double)(s->t_mem[y] - s->t_mem[x]);
            if (b == a || (dm == 0 && dc <= 0) || seen(s, a, (uint32_t)y, since) ||
                (int64_t)s->comp[a] + dc > (int64_t)s->compute_cap ||
                (int64_t)s->comp[b] - dc > (int64_t)s->compute_cap ||
                gain(s, a, b, dm, (double)dc) <= 1e-12)
                continue;
            swap(s, x, (uint32_t)y);
            any = true;
            break; /* place i holds y now, which is looked at no further */
        }
    }
    return any;
}

/* The local search over the group's GPUs, until a pass changes nothing, POLISH_PASSES passes
 * or POLISH_WORK candidates; whether anything changed. */
static bool polish_group(struct polish *s)
{
    bool changed = false, again = true;
    for (int pass = 0; pass < POLISH_PASSES && again; pass++) {
        again = false;
        for (size_t a = 0; a < s->n && s->work < POLISH_WORK; a++) {
            uint64_t since = pass ? s->looked[a] : 0;
            s->looked[a] = ++s->clock;
            again |= receive_moves(s, a, since);
            again |= receive_swaps(s, a, since);
        }
        changed |= again;
    }
    return changed;
}

static int by_memory(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y; /* memory, then the workload */
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Group k's GPUs (grp) and their tenants into s; false where the search does not run. The
 * arrays per tenant are those of the whole list, per GPU those of the whole plan. */
static bool gather(struct polish *s, const struct fleet *f, const struct fleet_workloads *ws,
                   const struct mech_rules *r, const uint32_t *tenant_gpu,
                   const struct fleet_gpu_list *g, const uint8_t *grp, int k, uint32_t *local,
                   uint64_t (*order)[2])
{
    size_t n = 0, nt = 0;
    for (size_t gi = 0; gi < g->n; gi++)
        if (grp[gi] == k) {
            local[gi] = (uint32_t)n;
            s->gpu[n++] = (uint32_t)gi;
        }
    if (n < 2 || n > POLISH_MOST)
        return false;
    for (size_t i = 0; i < ws->n; i++)
        if (tenant_gpu[i] != UINT32_MAX && grp[tenant_gpu[i]] == k) {
            order[nt][0] = ws->w[i].memory_mib;
            order[nt++][1] = i;
        }
    qsort(order, nt, sizeof(*order), by_memory);
    s->n = n;
    s->nt = nt;
    s->most = nt < r->slots ? nt : r->slots;
    size_t places = n * s->most;
    uint32_t *row = realloc(s->row, (places ? places : 1) * sizeof(*row));
    if (!row) /* the plan as it is */
        return false;
    s->row = row;
    s->compute_cap = r->compute_cap;
    s->slots = r->slots;
    bool in_cost = fleet_gap_in_cost(f);
    for (size_t a = 0; a < n; a++) {
        const struct fleet_gpu_use *u = &g->use[s->gpu[a]];
        double weight = in_cost ? f->pools[u->pool].price : 1.0;
        double mib = (double)f->pools[u->pool].memory_mib, bp = (double)r->compute_cap;
        s->mem[a] = s->comp[a] = s->count[a] = 0;
        s->mem_cap[a] = f->pools[u->pool].memory_mib;
        s->per_mib2[a] = weight / (mib * mib);
        s->per_bp2[a] = weight * POLISH_COMPUTE / (bp * bp);
        s->changed[a] = 0;
    }
    for (uint32_t t = 0; t < nt; t++) {
        const struct fleet_workload *w = &ws->w[order[t][1]];
        size_t a = local[tenant_gpu[order[t][1]]];
        s->t_mem[t] = w->memory_mib;
        s->t_comp[t] = w->compute_bp;
        s->t_index[t] = (uint32_t)order[t][1];
        s->where[t] = (uint32_t)a;
        s->pos[t] = s->count[a];
        s->row[a * s->most + s->count[a]++] = t;
        s->mem[a] += w->memory_mib;
        s->comp[a] += w->compute_bp;
    }
    s->clock = 0;
    s->work = 0;
    return true;
}

/* The search's GPUs back into g and tenant_gpu. */
static void scatter(const struct polish *s, uint32_t *tenant_gpu, struct fleet_gpu_list *g)
{
    for (size_t a = 0; a < s->n; a++) {
        struct fleet_gpu_use *u = &g->use[s->gpu[a]];
        u->tenants = s->count[a];
        u->memory_used_mib = u->memory_held_mib = s->mem[a];
        u->compute_bp = (uint32_t)s->comp[a];
    }
    for (size_t t = 0; t < s->nt; t++)
        tenant_gpu[s->t_index[t]] = s->gpu[s->where[t]];
}

int fleet_polish(const struct fleet *f, const struct fleet_workloads *ws, int mech,
                 const struct mech_rules *r, uint32_t *tenant_gpu, struct fleet_gpu_list *g,
                 bool *emptied)
{
    size_t ng = g->n ? g->n : 1, nw = ws->n ? ws->n : 1, given = 0;
    struct polish s;
    memset(&s, 0, sizeof(s));
    uint8_t *grp = malloc(ng);
    uint32_t *local = malloc(ng * sizeof(*local));
    uint64_t(*order)[2] = malloc(nw * sizeof(*order));
    s.gpu = malloc(ng * sizeof(*s.gpu));
    s.mem = malloc(ng * sizeof(*s.mem));
    s.comp = malloc(ng * sizeof(*s.comp));
    s.mem_cap = malloc(ng * sizeof(*s.mem_cap));
    s.count = malloc(ng * sizeof(*s.count));
    s.per_mib2 = malloc(ng * sizeof(*s.per_mib2));
    s.per_bp2 = malloc(ng * sizeof(*s.per_bp2));
    s.changed = malloc(ng * sizeof(*s.changed));
    s.looked = malloc(ng * sizeof(*s.looked));
    s.t_mem = malloc(nw * sizeof(*s.t_mem));
    s.t_comp = malloc(nw * sizeof(*s.t_comp));
    s.t_index = malloc(nw * sizeof(*s.t_index));
    s.where = malloc(nw * sizeof(*s.where));
    s.pos = malloc(nw * sizeof(*s.pos));
    int ret = -ENOMEM;
    if (!grp || !local || !order || !s.gpu || !s.mem || !s.comp || !s.mem_cap || !s.count ||
        !s.per_mib2 || !s.per_bp2 || !s.changed || !s.looked || !s.t_mem || !s.t_comp ||
        !s.t_index || !s.where || !s.pos)
        goto out;
    memset(grp, POLISH_NONE, g->n);
    for (size_t i = 0; i < ws->n; i++) { /* each GPU's group */
        uint32_t gi = tenant_gpu[i];
        if (gi == UINT32_MAX)
            continue;
        int in = fleet_group_of(mech, &ws->w[i], r);
        grp[gi] = grp[gi] == POLISH_NONE || grp[gi] == in ? (uint8_t)in : GROUP_ALONE;
    }
    for (int k = 0; k < FLEET_GROUPS; k++)
        if (gather(&s, f, ws, r, tenant_gpu, g, grp, k, local, order) && polish_group(&s))
            scatter(&s, tenant_gpu, g);
    for (size_t gi = 0; gi < g->n; gi++) {
        emptied[gi] = grp[gi] < FLEET_GROUPS && !g->use[gi].tenants;
        given += emptied[gi];
    }
    ret = (int)given;
out:
    free(grp);
    free(local);
    free(order);
    free(s.gpu);
    free(s.mem);
    free(s.comp);
    free(s.mem_cap);
    free(s.count);
    free(s.per_mib2);
    free(s.per_bp2);
    free(s.changed);
    free(s.looked);
    free(s.row);
    free(s.t_mem);
    free(s.t_comp);
    free(s.t_index);
    free(s.where);
    free(s.pos);
    return ret;
}
