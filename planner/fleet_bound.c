/* fleet_bound.c - the lower bounds a shared mechanism's plan is measured against: GPUs per
 * sharing group (Martello and Toth's L2 bound, in memory and in compute), the most memory a
 * GPU can hold of a list, and the demand of a mechanism's workloads that the cost bound
 * (fleet_lp.c) is solved for. */
#include <errno.h>
#include <math.h> /* INFINITY only: the carve command does not link libm */
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

/* ---- GPUs per sharing group ---- */

static int u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Sorts s (values at most max) largest first: a counting sort when the range is small next
 * to the count, as it is for 100,000 workloads in MiB or basis points; qsort otherwise. */
static void sort_desc(uint64_t *s, size_t n, uint64_t max)
{
    uint32_t *count = max <= (1u << 22) && max / 16 <= n ? calloc(max + 1, sizeof(*count)) : NULL;
    if (!count) {
        qsort(s, n, sizeof(*s), u64_desc);
        return;
    }
    for (size_t i = 0; i < n; i++)
        count[s[i] <= max ? s[i] : max]++;
    size_t k = 0;
    for (uint64_t v = max + 1; v-- > 0;)
        for (uint32_t c = count[v]; c; c--)
            s[k++] = v;
    free(count);
}

/* Martello and Toth's L2 bound for one dimension: for each threshold k, items above cap-k
 * need a bin each, items in (cap/2, cap-k] too, and items in [k, cap/2] fill what those
 * leave. s is sorted in place, largest first. */
static uint64_t bound_l2(uint64_t *s, size_t n, uint64_t cap)
{
    if (!n || !cap)
        return 0;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++)
        top = s[i] > top ? s[i] : top;
    sort_desc(s, n, top);
    uint64_t *prefix = malloc((n + 1) * sizeof(*prefix));
    if (!prefix)
        return 0;
    prefix[0] = 0;
    for (size_t i = 0; i < n; i++)
        prefix[i + 1] = prefix[i] + s[i];
    /* first index with s[i] <= v (s descending) */
#define FIRST_LE(v, lo_, out_) do { size_t lo = (lo_), hi = n; \
        while (lo < hi) { size_t mid = (lo + hi) / 2; if (s[mid] <= (v)) hi = mid; else lo = mid + 1; } \
        (out_) = lo; } while (0)
    size_t half_end; /* items [0, half_end) are > cap/2 */
    FIRST_LE(cap / 2, 0, half_end);
    uint64_t best = half_end;
    /* thresholds k: 0 and each distinct size <= cap/2 */
    for (size_t i = half_end; i <= n; i++) {
        uint64_t k = i < n ? s[i] : 0;
        if (i > half_end && i < n && s[i] == s[i - 1])
            continue;
        size_t j1_end; /* items > cap - k */
        FIRST_LE(cap - k, 0, j1_end);
        if (j1_end > half_end)
            j1_end = half_end;
        size_t j3_end; /* items >= k among those <= cap/2 */
        if (k == 0)
            j3_end = n;
        else
            FIRST_LE(k - 1, half_end, j3_end);
        uint64_t j2n = half_end - j1_end;
        uint64_t j2sum = prefix[half_end] - prefix[j1_end];
        uint64_t j3sum = prefix[j3_end] - prefix[half_end];
        uint64_t room = j2n * cap - j2sum;
        uint64_t extra = j3sum > room ? (j3sum - room + cap - 1) / cap : 0;
        uint64_t l = half_end + extra;
        if (l > best)
            best = l;
        if (i == n)
            break;
    }
#undef FIRST_LE
    free(prefix);
    return best;
}

/* Fekete and Schepers' dual feasible functions u_k, k = 1..FLEET_DFF_K: an item of size x
 * counts as floor((k+1)x/cap) * cap/k (as x where (k+1)x/cap is whole), and no GPU's items
 * count more than cap in all, so the counted total over cap bounds the GPUs. It sees what
 * L2 cannot: 40 workloads busy 25% on a time-sliced GPU (92% usable) need 14 GPUs, three a
 * GPU, where the sizes alone say 11 (k = 3: each counts a third of a GPU). */
#define FLEET_DFF_K 20
static uint64_t bound_dff(const uint64_t *s, size_t n, uint64_t cap)
{
    uint64_t best = 0;
    for (uint64_t k = 1; k <= FLEET_DFF_K && cap; k++) {
        uint64_t total = 0; /* k times the counted sizes */
        for (size_t i = 0; i < n; i++) {
            uint64_t x = s[i] < cap ? s[i] : cap, scaled = (k + 1) * x;
            total += scaled % cap == 0 ? k * x : scaled / cap * cap;
        }
        uint64_t bins = (total + k * cap - 1) / (k * cap);
        best = bins > best ? bins : best;
    }
    return best;
}

/* ---- the most a GPU holds ---- */

uint64_t fleet_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

#define HELD_WORK (1u << 12) /* steps of the capacity times distinct sizes, for the search */

/* The largest total of the sizes s[0..n) at most cap, each size taken any number of times:
 * no GPU of capacity cap holds more than that of them, whatever their counts, so a GPU of
 * capacity cap holds exactly the sets of them that one of this capacity holds, and every
 * bound drawn for the smaller capacity bounds the same plans. Workloads in whole GiB on an L4
 * (23034 MiB, as NVML reports it) fill 22528 MiB of it at most: the cost bound of MPS on a
 * compute-heavy list of such workloads had them fill the last 506 MiB of every L4 too. In
 * steps of the sizes' greatest common divisor, then by a search over the totals reachable
 * where that is short (HELD_WORK: searching lists in MiB, 10240 steps or more on any GPU,
 * made the unit tests 8-40% slower and moved none of their bounds; whole GiB, or compute in
 * whole percents, are a few hundred steps); else the capacity rounded down to a whole step. */
static uint64_t most_held(const uint64_t *s, size_t n, uint64_t cap)
{
    uint64_t step = 0;
    for (size_t i = 0; i < n && step != 1; i++)
        if (s[i] && s[i] <= cap)
            step = fleet_gcd(step, s[i]);
    if (!step || cap / step >= HELD_WORK)
        return step ? cap / step * step : cap;
    uint64_t units = cap / step, held = units;
    uint8_t *size = calloc(units + 1, 1); /* per total: a size of the list */
    uint8_t *reach = size ? calloc(units + 1, 1) : NULL;
    uint32_t *sizes = reach ? malloc((n ? n : 1) * sizeof(*sizes)) : NULL;
    size_t nsizes = 0;
    for (size_t i = 0; sizes && i < n; i++)
        if (s[i] && s[i] <= cap && !size[s[i] / step]) {
            size[s[i] / step] = 1;
            nsizes++;
        }
    if (sizes && nsizes <= HELD_WORK / (units + 1)) {
        nsizes = 0;
        for (uint64_t u = 1; u <= units; u++) /* ascending */
            if (size[u])
                sizes[nsizes++] = (uint32_t)u;
        reach[0] = 1;
        for (uint64_t t = 1; t <= units; t++)
            for (size_t j = 0; j < nsizes && sizes[j] <= t && !reach[t]; j++)
                reach[t] = reach[t - sizes[j]];
        while (!reach[held])
            held--;
    }
    free(size);
    free(reach);
    free(sizes);
    return held * step;
}

void fleet_most_held(const struct fleet *f, const struct fleet_workloads *ws,
                     const uint8_t *possible, struct fleet *held)
{
    *held = *f;
    uint64_t *s = malloc((ws->n ? ws->n : 1) * sizeof(*s));
    if (!s)
        return; /* the fleet as it is: a looser bound, still a bound */
    size_t n = 0;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i])
            s[n++] = ws->w[i].memory_mib;
    for (size_t i = 0; i < f->npools; i++)
        held->pools[i].memory_mib = most_held(s, n, f->pools[i].memory_mib);
    free(s);
}

/* The L2 and dual-feasible bounds on memory (against the largest GPU of the fleet) and on
 * compute, each against the most of it a GPU holds of the group (most_held), and the tenant
 * limit. */
uint64_t fleet_group_bound(const struct fleet_workloads *ws, const struct sort_key *keys,
                           size_t n, uint64_t max_mem, const struct mech_rules *r)
{
    if (!n)
        return 0;
    uint64_t *s = malloc(n * sizeof(*s));
    if (!s)
        return 0;
    for (size_t i = 0; i < n; i++)
        s[i] = ws->w[keys[i].index].memory_mib;
    max_mem = most_held(s, n, max_mem);
    uint64_t lb = MAX(bound_l2(s, n, max_mem), bound_dff(s, n, max_mem));
    for (size_t i = 0; i < n; i++)
        s[i] = ws->w[keys[i].index].compute_bp;
    uint64_t compute_cap = most_held(s, n, r->compute_cap);
    uint64_t lc = MAX(bound_l2(s, n, compute_cap), bound_dff(s, n, compute_cap));
    free(s);
    uint64_t ls = (n + r->slots - 1) / r->slots;
    return MAX(lb, MAX(lc, ls));
}

/* ---- what the cost bound needs ---- */

void fleet_insert_distinct(uint64_t *list, size_t *n, uint64_t v)
{
    size_t k = 0;
    while (k < *n && list[k] < v)
        k++;
    if (k < *n && list[k] == v)
        return;
    memmove(&list[k + 1], &list[k], (*n - k) * sizeof(uint64_t));
    list[k] = v;
    (*n)++;
}

/* Fleets of more pools than this leave the bands' counts out of the cost bound: with up to
 * ten cuts a pool there would be up to 64 bands x 16 pools x 2 groups of count and memory
 * columns, and the dense simplex would take longer than the packing. */
#define FLEET_COUNTED_POOLS 6

/* The pair limits of a pool of capacity C: the smallest workload of the list (a workload above
 * C less that shares with nothing), a quarter, a third and half of the GPU; each at least 2
 * (a limit of 1 would say no more than the memory) and at most half of C. */
static void pair_limits(uint64_t capacity, uint64_t min_mib, uint64_t *limit, size_t *n)
{
    uint64_t from = min_mib < capacity / 2 ? min_mib : capacity / 2, span = capacity / 2 - from;
    const uint64_t candidates[] = {min_mib, capacity / 4, capacity / 3, capacity / 2,
                                   from + span / 4, from + span / 2, from + span * 3 / 4};
    *n = 0;
    for (size_t c = 0; c < sizeof(candidates) / sizeof(candidates[0]); c++) {
        bool seen = false;
        for (size_t j = 0; j < *n; j++)
            seen |= limit[j] == candidates[c];
        if (!seen && candidates[c] >= 2 && candidates[c] * 2 <= capacity)
            limit[(*n)++] = candidates[c];
    }
}

/* Workload classes: the pools' memory sizes, distinct and ascending; a workload's class is
 * the smallest size that holds it. Bands: the same sizes and, when counted, their halves and
 * for each pair limit k a cut below k and at C - k, so that a band is on one side of each. */
static void size_classes(const struct fleet *f, uint64_t min_mib, struct fleet_demand *d)
{
    d->nclass = d->nband = 0;
    d->counted = f->npools <= FLEET_COUNTED_POOLS;
    for (size_t i = 0; i < f->npools; i++) {
        uint64_t capacity = f->pools[i].memory_mib;
        fleet_insert_distinct(d->class_mib, &d->nclass, capacity);
        fleet_insert_distinct(d->band_mib, &d->nband, capacity);
        if (!d->counted)
            continue;
        fleet_insert_distinct(d->band_mib, &d->nband, capacity / 2);
        pair_limits(capacity, min_mib, d->pair_limit[i], &d->npair_limit[i]);
        for (size_t j = 0; j < d->npair_limit[i]; j++) {
            fleet_insert_distinct(d->band_mib, &d->nband, d->pair_limit[i][j] - 1);
            fleet_insert_distinct(d->band_mib, &d->nband, capacity - d->pair_limit[i][j]);
        }
    }
}

size_t fleet_class_of(const struct fleet_demand *d, uint64_t memory_mib)
{
    size_t k = 0;
    while (k + 1 < d->nclass && d->class_mib[k] < memory_mib)
        k++;
    return k;
}

size_t fleet_band_of(const struct fleet_demand *d, uint64_t memory_mib)
{
    size_t b = 0;
    while (b + 1 < d->nband && d->band_mib[b] < memory_mib)
        b++;
    return b;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* One band of a group, from its workloads' memory mem[0..n) sorted largest first: the count,
 * the memory, and at FLEET_TANGENTS counts t (evenly spaced from 0) the memory of the t
 * largest and t smallest and of the workload next to them. */
static void band_demand(const uint64_t *mem, size_t n, struct fleet_band_demand *bd)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += mem[i];
    bd->count = (double)n;
    bd->memory_mib = (double)total;
    uint64_t largest = 0, smallest = 0;
    size_t done = 0;
    for (size_t t = 0; t < FLEET_TANGENTS; t++) {
        size_t at = n * t / FLEET_TANGENTS;
        for (; done < at; done++) {
            largest += mem[done];
            smallest += mem[n - 1 - done];
        }
        bd->at[t] = (double)at;
        bd->largest_mib[t] = (double)largest;
        bd->next_largest_mib[t] = (double)mem[at];
        bd->smallest_mib[t] = (double)smallest;
        bd->next_smallest_mib[t] = (double)mem[n - 1 - at];
    }
}

/* The bands of one sharing group; mem is scratch for the whole list. */
static void group_bands(const struct fleet_workloads *ws, const uint8_t *possible, int mech,
                        const struct mech_rules *r, int grp, uint64_t *mem,
                        struct fleet_demand *d)
{
    size_t n = 0;
    uint64_t top = 0;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i] && fleet_group_of(mech, &ws->w[i], r) == grp) {
            mem[n++] = ws->w[i].memory_mib;
            top = MAX(top, ws->w[i].memory_mib);
        }
    sort_desc(mem, n, top);
    /* largest first, so each band is one run, the top band first */
    for (size_t lo = 0; lo < n;) {
        size_t b = fleet_band_of(d, mem[lo]), hi = lo;
        while (hi < n && fleet_band_of(d, mem[hi]) == b)
            hi++;
        band_demand(&mem[lo], hi - lo, &d->band[grp][b]);
        lo = hi;
    }
}

/* What the cost bound needs of one mechanism's workloads: per sharing group its bands, and
 * per class (and larger) the GPUs they need at least (compute, tenant places, workloads too
 * big in memory or compute to pair with each other on any GPU, and for the whole group its L2
 * bound, group_gpus); per class the lone workloads. 0, or -ENOMEM. */
int fleet_demand_of(const struct fleet *f, const struct fleet_workloads *ws,
                    const uint8_t *possible, int mech, const struct mech_rules *r,
                    const uint64_t group_gpus[FLEET_GROUPS], struct fleet_demand *d)
{
    uint64_t max_mem = fleet_max_memory(f);
    uint64_t comp[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}}, count[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    uint64_t big_mem[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    uint64_t big_comp[FLEET_GROUPS][FLEET_MAX_POOLS] = {{0}};
    memset(d, 0, sizeof(*d));
    uint64_t min_mib = max_mem;
    for (size_t i = 0; i < ws->n; i++)
        if (possible[i])
            min_mib = ws->w[i].memory_mib < min_mib ? ws->w[i].memory_mib : min_mib;
    size_classes(f, min_mib, d);
    d->slots = r->slots;
    uint64_t *mem = malloc((ws->n ? ws->n : 1) * sizeof(*mem));
    if (!mem)
        return -ENOMEM;
    for (int grp = 0; grp < FLEET_GROUPS; grp++)
        group_bands(ws, possible, mech, r, grp, mem, d);
    free(mem);
    for (size_t i = 0; i < ws->n; i++) {
        if (!possible[i])
            continue;
        const struct fleet_workload *w = &ws->w[i];
        int grp = fleet_group_of(mech, w, r);
        size_t k = fleet_class_of(d, w->memory_mib);
        if (grp == GROUP_ALONE) {
            d->lone[k]++;
            continue;
        }
        comp[grp][k] += w->compute_bp;
        count[grp][k]++;
        big_mem[grp][k] += w->memory_mib * 2 > max_mem;
        big_comp[grp][k] += (uint64_t)w->compute_bp * 2 > r->compute_cap;
    }
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        for (size_t k = d->nclass; k-- > 0;) {
            if (k + 1 < d->nclass) { /* class k and larger */
                comp[g][k] += comp[g][k + 1];
                count[g][k] += count[g][k + 1];
                big_mem[g][k] += big_mem[g][k + 1];
                big_comp[g][k] += big_comp[g][k + 1];
            }
            uint64_t need = MAX(ceil_div(comp[g][k], r->compute_cap), ceil_div(count[g][k], r->slots));
            need = MAX(need, MAX(big_mem[g][k], big_comp[g][k]));
            if (k == 0)
                need = MAX(need, group_gpus[g]);
            d->gpus[g][k] = (double)need;
        }
    return 0;
}

/* Each lone workload on the cheapest GPU that holds it, each group's GPUs at the lowest price,
 * the pools' counts aside. */
double fleet_plain_cost_bound(const struct fleet *f, const struct fleet_demand *d)
{
    double cost = 0, lowest = INFINITY;
    for (size_t i = 0; i < f->npools; i++)
        lowest = dmin(lowest, f->pools[i].price);
    for (size_t k = 0; k < d->nclass; k++) {
        double cheapest = INFINITY;
        for (size_t i = 0; i < f->npools; i++)
            if (f->pools[i].memory_mib >= d->class_mib[k])
                cheapest = dmin(cheapest, f->pools[i].price);
        cost += d->lone[k] ? (double)d->lone[k] * cheapest : 0;
    }
    for (size_t g = 0; g < FLEET_GROUPS; g++)
        cost += d->gpus[g][0] * lowest;
    return cost;
}
