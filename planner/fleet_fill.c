/* fleet_fill.c - packing a sharing group one GPU at a time, each step taking the workload that
 * leaves the least room.
 *
 * When memory and compute both bind on a GPU (workloads of a fifth of a small GPU in each),
 * first-fit decreasing leaves the GPUs 87-93% full. Filling one GPU at a time instead, each
 * step taking the workload that leaves the least room (the smallest sum of the squares of
 * what is left in each dimension, as shares of the GPU), gets within about 2% of the volume
 * bound there. To find that workload quickly the group is kept in a grid of cells by memory
 * and compute, with a bitmap of the non-empty cells of each memory column: a step looks at
 * the fullest cell that fits in each column, and stops at the first column that cannot beat
 * the best found. A few hundred operations a workload.
 *
 * Taking the fullest fit at each step can leave a room that nothing fills (workloads of
 * 10-30% compute that add up to 93% leave 7%, which none fills: 4-10% of the GPU left on a
 * fifth of the L4s of a compute-heavy list). So when a GPU closes with room in both
 * dimensions, its last workload is given back and the best pair for the room it had is looked
 * for (fill_pair: about a hundred candidates, each with its best second); the pair replaces
 * it if it leaves less room. On limited small GPUs whose shortfall goes to GPUs at three times
 * the price this took compute-heavy plans from 5.3% above the cost bound to 1.0%
 * (docs/results/2026-11-23-plan-bench-mixed.md).
 *
 * A limited large pool (H100:3000 beside L4s) has to hold every workload that no smaller GPU
 * holds; filled by the least room alone, its GPUs took workloads an L4 could have held and
 * left the large ones beyond the fleet. So while those outnumber its GPUs left, a GPU of it
 * takes them first (only_here), then anything.
 *
 * Where the tenant places bind (16 time-sliced replicas on an H100 or A100), each step keeps
 * room for the places still free at the average workload left (leave_room_for_places), so
 * that a GPU ends full in places and memory together: time-slicing on small notebooks went
 * from 0.5% to 0.0% above the GPU bound on H100s alone, 3.4% to 2.7% on A100 + L4 + T4.
 *
 * A limited pool's share of a group split by bands (fleet_choose.c) is what its GPUs
 * should hold to the last MiB, and what they cannot hold goes to smaller GPUs, one to a GPU
 * where it is large. Its GPUs are filled exactly (fill_exact: a subset sum over the
 * workloads' memory in 1/1024 of the largest GPU, per count), most of them to within 0.5% of
 * their memory. */
#include <errno.h>
#include <math.h> /* INFINITY only: the carve command does not link libm */
#include <stdlib.h>
#include <string.h>

#include "fleet_pack.h"

#define FILL_GRID 64
#define FILL_CELL_SCAN 8 /* workloads of a cell on the border of the room tried for a fit */
#define FILL_FULL 200    /* a GPU with less than 1/200 of it left in a dimension is full */

/* A workload of the grid, with what a scan for a fit reads, so that it reads nothing else
 * (a cache miss per workload tried on long lists). Memory fits 32 bits (sort_key). */
struct fill_entry {
    uint32_t mem;
    uint32_t comp;
    uint32_t k;     /* its position in keys */
    uint32_t taken; /* as taken[k] */
};

struct fill_grid {
    uint64_t mem_lo, mem_step;   /* column a: memory in [mem_lo + a*mem_step, + mem_step) */
    uint64_t comp_lo, comp_step; /* row b: compute likewise */
    uint64_t bits[FILL_GRID];    /* bit b of column a: cell (a, b) has workloads left */
    uint32_t *start;             /* FILL_GRID^2 + 1: each cell's first entry in order */
    uint32_t *next;              /* each cell's first entry not yet taken */
    struct fill_entry *entry;    /* the workloads by cell, largest first in a cell */
    uint8_t *taken;              /* per position in keys (fill_mark) */
    uint32_t *entry_of;          /* per position in keys: its entry */
    uint32_t *gpu_at;            /* per position in keys: the GPU it is on, or UINT32_MAX */
    size_t first_gpu;            /* the first GPU this packing opened */
    unsigned swaps;              /* swap_in's scans so far */
    uint64_t sizes[FLEET_MAX_POOLS]; /* the pools' memory sizes, distinct, ascending */
    uint64_t above[FLEET_MAX_POOLS]; /* workloads left above each size */
    size_t nsizes;
    struct exact_buckets *ex;        /* for fill_exact, or NULL */
};

/* The workloads of a group by memory in units of unit MiB, rounded up (bucket b holds those of
 * (b-1)*unit+1 .. b*unit MiB), for the exact fill of a limited pool's GPUs (fill_exact). */
#define EXACT_UNITS 1024 /* units in the largest GPU */
#define EXACT_WORDS (EXACT_UNITS / 64 + 1)
#define EXACT_MOST 16    /* a GPU that would hold more of the workloads left is filled greedily */
struct exact_buckets {
    uint64_t unit;
    uint32_t start[EXACT_UNITS + 2]; /* each bucket's first entry in order */
    uint32_t next[EXACT_UNITS + 1];  /* its first entry not yet taken */
    uint32_t left[EXACT_UNITS + 1];  /* its workloads not yet taken */
    uint32_t *order;                 /* positions in keys, by bucket; largest key first */
    double debt;                     /* workloads the GPUs so far took fewer than wanted */
    uint64_t (*reach)[EXACT_MOST + 1][EXACT_WORDS]; /* per bucket tried: before it, per count,
                                                       the fills reachable */
};

/* Counts workload w in (change 1) or out (-1) of the workloads left above each pool size. */
static void fill_count(struct fill_grid *gr, const struct sort_key *w, int change)
{
    for (size_t j = 0; j < gr->nsizes && w->memory_mib > gr->sizes[j]; j++)
        gr->above[j] += (uint64_t)(int64_t)change;
}

static size_t exact_bucket(const struct exact_buckets *ex, const struct sort_key *w)
{
    return (size_t)((w->memory_mib + ex->unit - 1) / ex->unit);
}

static void exact_take(struct exact_buckets *ex, const uint8_t *taken,
                       const struct sort_key *w)
{
    size_t b = exact_bucket(ex, w);
    ex->left[b]--;
    while (ex->next[b] < ex->start[b + 1] && taken[ex->order[ex->next[b]]])
        ex->next[b]++;
}

static void exact_untake(struct exact_buckets *ex, const struct sort_key *w, size_t k)
{
    size_t b = exact_bucket(ex, w);
    ex->left[b]++;
    for (uint32_t e = ex->start[b]; e < ex->next[b]; e++)
        if (ex->order[e] == k) {
            ex->next[b] = e;
            break;
        }
}

/* The buckets of keys[0..n) for fill_exact; 0 or -ENOMEM. */
static int exact_init(struct fill_grid *gr, const struct fleet *f,
                      const struct fleet_workloads *ws, const struct sort_key *keys, size_t n)
{
    struct exact_buckets *ex = calloc(1, sizeof(*ex));
    gr->ex = ex;
    if (!ex)
        return -ENOMEM;
    ex->unit = (fleet_max_memory(f) + EXACT_UNITS - 1) / EXACT_UNITS;
    ex->order = malloc((n ? n : 1) * sizeof(*ex->order));
    ex->reach = malloc((EXACT_UNITS + 1) * sizeof(*ex->reach));
    if (!ex->order || !ex->reach)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) /* workloads fit the largest GPU: at most EXACT_UNITS */
        ex->start[exact_bucket(ex, &keys[k]) + 1]++;
    for (size_t b = 0; b <= EXACT_UNITS; b++) {
        ex->left[b] = ex->start[b + 1];
        ex->start[b + 1] += ex->start[b];
        ex->next[b] = ex->start[b];
    }
    for (size_t k = 0; k < n; k++)
        ex->order[ex->next[exact_bucket(ex, &keys[k])]++] = (uint32_t)k;
    for (size_t b = 0; b <= EXACT_UNITS; b++)
        ex->next[b] = ex->start[b];
    return 0;
}

static void exact_free(struct exact_buckets *ex)
{
    if (ex) {
        free(ex->order);
        free(ex->reach);
    }
    free(ex);
}

static size_t fill_cell(const struct fill_grid *gr, const struct sort_key *w)
{
    return (size_t)((w->memory_mib - gr->mem_lo) / gr->mem_step) * FILL_GRID +
           (size_t)((w->compute_bp - gr->comp_lo) / gr->comp_step);
}

static int fill_grid_init(struct fill_grid *gr, const struct fleet *f,
                          const struct fleet_workloads *ws, const struct sort_key *keys, size_t n)
{
    memset(gr, 0, sizeof(*gr));
    const size_t cells = FILL_GRID * FILL_GRID;
    gr->start = calloc(cells + 1, sizeof(*gr->start));
    gr->next = calloc(cells, sizeof(*gr->next));
    gr->entry = malloc((n ? n : 1) * sizeof(*gr->entry));
    gr->taken = calloc(n ? n : 1, 1);
    gr->entry_of = malloc((n ? n : 1) * sizeof(*gr->entry_of));
    gr->gpu_at = malloc((n ? n : 1) * sizeof(*gr->gpu_at));
    if (!gr->start || !gr->next || !gr->entry || !gr->taken || !gr->entry_of || !gr->gpu_at)
        return -ENOMEM;
    memset(gr->gpu_at, 0xff, (n ? n : 1) * sizeof(*gr->gpu_at));
    uint64_t mem_hi = 0, comp_hi = 0;
    gr->mem_lo = UINT64_MAX;
    gr->comp_lo = UINT64_MAX;
    for (size_t k = 0; k < n; k++) {
        const struct sort_key *w = &keys[k];
        gr->mem_lo = w->memory_mib < gr->mem_lo ? w->memory_mib : gr->mem_lo;
        gr->comp_lo = w->compute_bp < gr->comp_lo ? w->compute_bp : gr->comp_lo;
        mem_hi = MAX(mem_hi, w->memory_mib);
        comp_hi = MAX(comp_hi, (uint64_t)w->compute_bp);
    }
    gr->mem_step = (mem_hi - gr->mem_lo) / FILL_GRID + 1;
    gr->comp_step = (comp_hi - gr->comp_lo) / FILL_GRID + 1;
    /* a counting sort by cell, stable: keys come largest first */
    for (size_t k = 0; k < n; k++)
        gr->start[fill_cell(gr, &keys[k]) + 1]++;
    for (size_t c = 0; c < cells; c++) {
        gr->start[c + 1] += gr->start[c];
        gr->next[c] = gr->start[c];
    }
    for (size_t k = 0; k < n; k++) {
        const struct sort_key *w = &keys[k];
        gr->entry_of[k] = gr->next[fill_cell(gr, w)]++;
        gr->entry[gr->entry_of[k]] =
            (struct fill_entry){w->memory_mib, w->compute_bp, (uint32_t)k, 0};
    }
    for (size_t c = 0; c < cells; c++) {
        gr->next[c] = gr->start[c];
        if (gr->start[c + 1] > gr->start[c])
            gr->bits[c / FILL_GRID] |= 1ULL << (c % FILL_GRID);
    }
    for (size_t i = 0; i < f->npools; i++)
        fleet_insert_distinct(gr->sizes, &gr->nsizes, f->pools[i].memory_mib);
    for (size_t k = 0; k < n; k++)
        fill_count(gr, &keys[k], 1);
    return 0;
}

static void fill_grid_free(struct fill_grid *gr)
{
    exact_free(gr->ex);
    free(gr->start);
    free(gr->next);
    free(gr->entry);
    free(gr->entry_of);
    free(gr->taken);
    free(gr->gpu_at);
}

/* Position k of keys as taken (1) or not (0), in both places that say so. */
static void fill_mark(struct fill_grid *gr, size_t k, uint8_t taken)
{
    gr->taken[k] = taken;
    gr->entry[gr->entry_of[k]].taken = taken;
}

/* Marks position k of keys placed; a cell whose entries are all placed leaves the bitmap. */
static void fill_take(struct fill_grid *gr, const struct sort_key *w, size_t k)
{
    fill_mark(gr, k, 1);
    fill_count(gr, w, -1);
    if (gr->ex)
        exact_take(gr->ex, gr->taken, w);
    size_t c = fill_cell(gr, w);
    while (gr->next[c] < gr->start[c + 1] && gr->taken[gr->entry[gr->next[c]].k])
        gr->next[c]++;
    if (gr->next[c] == gr->start[c + 1])
        gr->bits[c / FILL_GRID] &= ~(1ULL << (c % FILL_GRID));
}

/* Gives position k of keys back (a pair that fills the room better replaces it). */
static void fill_untake(struct fill_grid *gr, const struct sort_key *w, size_t k)
{
    fill_mark(gr, k, 0);
    fill_count(gr, w, 1);
    if (gr->ex)
        exact_untake(gr->ex, w, k);
    size_t c = fill_cell(gr, w);
    for (uint32_t e = gr->start[c]; e < gr->next[c]; e++)
        if (gr->entry[e].k == k) {
            gr->next[c] = e;
            break;
        }
    gr->bits[c / FILL_GRID] |= 1ULL << (c % FILL_GRID);
}

/* What is left of a GPU being filled, and the weights that make each dimension a share. */
struct fill_room {
    uint64_t mem, comp;
    double per_mib, per_bp;
    uint64_t min_mem; /* only workloads of at least this much memory (those no smaller GPU
                         holds, fill_group) */
};

/* The first entry of cell c that fits the room, or NULL: every entry fits in a cell inside
 * the room, only those on its border need trying. */
static const struct fill_entry *fill_fit_in_cell(const struct fill_grid *gr, size_t c,
                                                 const struct fill_room *room)
{
    unsigned tried = 0;
    for (uint32_t e = gr->next[c]; e < gr->start[c + 1] && tried < FILL_CELL_SCAN; e++) {
        const struct fill_entry *x = &gr->entry[e];
        if (x->taken)
            continue;
        if (x->mem <= room->mem && x->comp <= room->comp && x->mem >= room->min_mem)
            return x;
        tried++;
    }
    return NULL;
}

/* The position in keys of the workload that leaves the least room, or -1 if none fits. */
static long fill_best(const struct fill_grid *gr, const struct fleet_workloads *ws,
                      const struct sort_key *keys, const struct fill_room *room)
{
    if (room->mem < gr->mem_lo || room->comp < gr->comp_lo)
        return -1;
    size_t top_col = (size_t)((room->mem - gr->mem_lo) / gr->mem_step);
    size_t top_row = (size_t)((room->comp - gr->comp_lo) / gr->comp_step);
    top_col = top_col < FILL_GRID ? top_col : FILL_GRID - 1;
    uint64_t rows = top_row < FILL_GRID - 1 ? (2ULL << top_row) - 1 : ~0ULL;
    long best = -1;
    double best_left = INFINITY;
    for (size_t a = top_col + 1; a-- > 0;) {
        /* no workload of this column or a lower one leaves less memory than this */
        uint64_t col_top = gr->mem_lo + (a + 1) * gr->mem_step - 1;
        if (col_top < room->min_mem)
            break;
        double mem_left = col_top < room->mem ? (double)(room->mem - col_top) * room->per_mib : 0;
        if (mem_left * mem_left >= best_left)
            break;
        for (uint64_t bits = gr->bits[a] & rows; bits;) {
            size_t b = 63 - (size_t)__builtin_clzll(bits);
            bits &= ~(1ULL << b);
            const struct fill_entry *x = fill_fit_in_cell(gr, a * FILL_GRID + b, room);
            if (!x)
                continue;
            double dm = (double)(room->mem - x->mem) * room->per_mib;
            double dc = (double)(room->comp - x->comp) * room->per_bp;
            if (dm * dm + dc * dc < best_left) {
                best_left = dm * dm + dc * dc;
                best = x->k;
            }
            break; /* lower cells of the column leave more compute */
        }
    }
    return best;
}

static void fill_place(struct fill_grid *gr, const struct fleet_workloads *ws,
                       const struct sort_key *keys, size_t k, long gi, struct fleet_plan *p,
                       struct fleet_gpu_list *g, struct still_to_place *rest)
{
    const struct sort_key *w = &keys[k];
    gr->gpu_at[k] = (uint32_t)gi;
    fleet_gpu_add(&g->use[gi], w->memory_mib, w->compute_bp, w->memory_mib);
    fleet_still_drop(rest, w->memory_mib, w->compute_bp);
    if (p->gpu_of)
        p->gpu_of[keys[k].index] = (uint32_t)gi;
    p->placed++;
}

/* The weighted room left, as fill_best scores it. */
static double room_left(const struct fill_room *room)
{
    double dm = (double)room->mem * room->per_mib, dc = (double)room->comp * room->per_bp;
    return dm * dm + dc * dc;
}

/* Whether a GPU is as good as full: less than 1/FILL_FULL of it left in some dimension. */
static bool fill_full(const struct fill_room *room, uint64_t gpu_mib, uint32_t compute_cap)
{
    return room->mem * FILL_FULL <= gpu_mib || room->comp * FILL_FULL <= compute_cap;
}

/* Position k of keys taken for GPU gi: out of the grid, onto the GPU, off the room. */
static void take_into(struct fill_grid *gr, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t k, long gi, struct fill_room *room,
                      uint32_t *tenants, struct fleet_plan *p, struct fleet_gpu_list *g,
                      struct still_to_place *rest)
{
    const struct sort_key *w = &keys[k];
    room->mem -= w->memory_mib;
    room->comp -= w->compute_bp;
    ++*tenants;
    fill_take(gr, w, k);
    fill_place(gr, ws, keys, k, gi, p, g, rest);
}

/* fill_place undone (the grid apart). */
static void unplace(struct fill_grid *gr, const struct fleet_workloads *ws,
                    const struct sort_key *keys, size_t k, long gi, struct fleet_plan *p,
                    struct fleet_gpu_list *g, struct still_to_place *rest)
{
    const struct sort_key *w = &keys[k];
    gr->gpu_at[k] = UINT32_MAX;
    struct fleet_gpu_use *u = &g->use[gi];
    u->tenants--;
    u->memory_used_mib -= w->memory_mib;
    u->memory_held_mib -= w->memory_mib;
    u->compute_bp -= w->compute_bp;
    rest->memory_mib += w->memory_mib;
    rest->compute_bp += w->compute_bp;
    rest->count++;
    if (p->gpu_of)
        p->gpu_of[keys[k].index] = UINT32_MAX;
    p->placed--;
}

/* The workload y that, with the best second one z for what y leaves (fill_best), leaves the
 * least room; pair[1] is -1 when nothing fits beside y, pair[0] when nothing fits at all.
 * Returns the room they leave (room_left). The candidates for y: in each memory column the
 * fullest cell that fits (what fill_best weighs) and in each compute row the fullest column,
 * so that a y of less compute, whose room a z then fills, is among them. */
static double fill_pair(struct fill_grid *gr, const struct fleet_workloads *ws,
                        const struct sort_key *keys, const struct fill_room *room, long pair[2])
{
    pair[0] = pair[1] = -1;
    if (room->mem < gr->mem_lo || room->comp < gr->comp_lo)
        return INFINITY;
    size_t top_col = (size_t)((room->mem - gr->mem_lo) / gr->mem_step);
    size_t top_row = (size_t)((room->comp - gr->comp_lo) / gr->comp_step);
    top_col = top_col < FILL_GRID ? top_col : FILL_GRID - 1;
    uint64_t rows = top_row < FILL_GRID - 1 ? (2ULL << top_row) - 1 : ~0ULL, rows_done = 0;
    double best = INFINITY;
    for (size_t a = top_col + 1; a-- > 0 && best > 0;) {
        bool column_done = false;
        for (uint64_t bits = gr->bits[a] & rows; bits && best > 0;) {
            size_t b = 63 - (size_t)__builtin_clzll(bits);
            bits &= ~(1ULL << b);
            if (column_done && (rows_done & (1ULL << b)))
                continue;
            const struct fill_entry *x = fill_fit_in_cell(gr, a * FILL_GRID + b, room);
            if (!x)
                continue;
            long y = x->k;
            column_done = true;
            rows_done |= 1ULL << b;
            struct fill_room after = *room;
            after.mem -= x->mem;
            after.comp -= x->comp;
            fill_mark(gr, (size_t)y, 1); /* not a z of its own */
            long z = fill_best(gr, ws, keys, &after);
            fill_mark(gr, (size_t)y, 0);
            if (z >= 0) {
                after.mem -= keys[z].memory_mib;
                after.comp -= keys[z].compute_bp;
            }
            if (room_left(&after) < best) {
                best = room_left(&after);
                pair[0] = y;
                pair[1] = z;
            }
        }
    }
    return best;
}

/* The GPU being filled: its index in the plan, its room and its tenants. */
struct fill_gpu {
    long gi;
    struct fill_room *room;
    uint32_t *tenants;
};

/* Replaces the last workload taken (position last of keys) by the pair fill_pair finds for
 * the room it had, if that pair leaves less room; whether it did. */
static bool fill_repair(struct fill_grid *gr, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t last, struct fill_gpu *at,
                        struct fleet_plan *p, struct fleet_gpu_list *g,
                        struct still_to_place *rest)
{
    const struct sort_key *v = &keys[last];
    struct fill_room before = *at->room;
    before.mem += v->memory_mib;
    before.comp += v->compute_bp;
    fill_untake(gr, v, last);
    long pair[2];
    if (fill_pair(gr, ws, keys, &before, pair) >= room_left(at->room) - 1e-12) {
        fill_take(gr, v, last);
        return false;
    }
    unplace(gr, ws, keys, last, at->gi, p, g, rest);
    *at->room = before;
    --*at->tenants;
    for (int j = 0; j < 2 && pair[j] >= 0; j++)
        take_into(gr, ws, keys, (size_t)pair[j], at->gi, at->room, at->tenants, p, g, rest);
    return true;
}

/* to |= from shifted up by s bits (words of each). */
static void reach_shift_or(uint64_t *to, const uint64_t *from, size_t words, size_t s)
{
    size_t by_words = s / 64, by_bits = s % 64;
    for (size_t i = words; i-- > by_words;) {
        uint64_t v = from[i - by_words] << by_bits;
        if (by_bits && i > by_words)
            v |= from[i - by_words - 1] >> (64 - by_bits);
        to[i] |= v;
    }
}

static bool reach_has(const uint64_t *set, size_t m)
{
    return set[m / 64] >> (m % 64) & 1;
}

/* The fullest fill of cap units by exactly c of the buckets tried (-1 if none). */
static long reach_top(const uint64_t *set, size_t cap)
{
    for (size_t m = cap + 1; m-- > 0;)
        if (reach_has(set, m))
            return (long)m;
    return -1;
}

/* The exact fill of a limited pool's GPU (gr->ex): of the workloads left, the set whose
 * memory, rounded up to whole units, fills the most of the GPU's room, found by a subset sum
 * over the units and the count (per count a bit per fill reachable, a shift per workload
 * tried, at most as many of a bucket as fit). The count is the pool's share left over its
 * GPUs left (want; less the opener where it stays), rounded up or down so that the GPUs so
 * far took as many as they should (ex->debt), unless the other count fills more: GPUs that
 * each took the fullest set of any count took the largest workloads first and left the last
 * GPUs of the pool four of the smallest, which filled 80% of them. Among sets of equal fill
 * and count, the one of the workloads only this pool holds (above must units), then of the
 * smallest. Taken if it fits the compute and the places too; whether it was. */
static bool fill_exact(struct fill_grid *gr, const struct fleet_workloads *ws,
                       const struct sort_key *keys, struct fill_gpu *at, uint32_t places,
                       double want, size_t must, struct fleet_plan *p, struct fleet_gpu_list *g,
                       struct still_to_place *rest)
{
    struct exact_buckets *ex = gr->ex;
    size_t cap = (size_t)(at->room->mem / ex->unit), smallest = 1;
    cap = cap < EXACT_UNITS ? cap : EXACT_UNITS;
    while (smallest <= cap && !ex->left[smallest])
        smallest++;
    if (smallest > cap || cap / smallest > EXACT_MOST)
        return false;
    size_t most = cap / smallest < places ? cap / smallest : places;
    size_t words = cap / 64 + 1, npref = 0;
    uint16_t pref[EXACT_UNITS + 1];
    for (size_t b = cap; b > must && b >= smallest; b--)
        if (ex->left[b])
            pref[npref++] = (uint16_t)b;
    for (size_t b = smallest; b <= cap && b <= must; b++)
        if (ex->left[b])
            pref[npref++] = (uint16_t)b;
    uint64_t now[EXACT_MOST + 1][EXACT_WORDS];
    memset(now, 0, sizeof(now));
    now[0][0] = 1;
    for (size_t o = 0; o < npref; o++) {
        size_t b = pref[o], copies = ex->left[b] < cap / b ? ex->left[b] : cap / b;
        memcpy(ex->reach[o], now, sizeof(now));
        for (size_t j = 0; j < copies && j < most; j++)
            for (size_t c = most; c > 0; c--)
                reach_shift_or(now[c], now[c - 1], words, b);
    }
    /* the count: want rounded as the debt says, or the other way if that fills more */
    size_t lo = want < 0 ? 0 : (size_t)want;
    double up = want - (double)lo + ex->debt;
    size_t first = up >= 0.5 ? lo + 1 : lo, second = up >= 0.5 ? lo : lo + 1;
    long fill = -1;
    size_t count = 0;
    for (size_t c = 0; c <= most; c++) { /* the fullest of any count */
        long top = reach_top(now[c], cap);
        if (top > fill) {
            fill = top;
            count = c;
        }
    }
    long slack = (long)cap / 200;
    for (int k = 1; k >= 0; k--) {
        size_t c = k ? second : first; /* first last: it wins a tie */
        long top = c <= most ? reach_top(now[c], cap) : -1;
        if (top >= 0 && top + slack >= fill && (k == 0 || count != first))
            count = c;
    }
    fill = reach_top(now[count], cap);
    if (fill <= 0)
        return false;
    ex->debt += want - (double)count;
    /* back from the last bucket tried: as few of it as the fill allows */
    uint32_t take[EXACT_MOST];
    size_t ntake = 0, m = (size_t)fill, c = count;
    uint64_t comp = 0;
    for (size_t o = npref; o-- > 0 && c;) {
        size_t b = pref[o], j = 0;
        while (j > c || j * b > m || !reach_has(ex->reach[o][c - j], m - j * b))
            j++;
        uint32_t e = ex->next[b];
        for (size_t t = 0; t < j; t++, e++) {
            while (gr->taken[ex->order[e]])
                e++;
            take[ntake++] = ex->order[e];
            comp += keys[ex->order[e]].compute_bp;
        }
        c -= j;
        m -= j * b;
    }
    if (!ntake || ntake > places || comp > at->room->comp)
        return false;
    for (size_t j = 0; j < ntake; j++)
        take_into(gr, ws, keys, take[j], at->gi, at->room, at->tenants, p, g, rest);
    return true;
}

/* Room left in each dimension as a share of the GPU, divided by the fourth power of how
 * scarce that dimension is among the workloads still to place (their total over the GPU's,
 * the two summing to one): the scarce dimension is the one to fill, and the other, with
 * room to spare, barely counts. On the test's lists the fourth power left 1.7% against 2.0%
 * for plain shares and 1.9% for the first power. */
static void fill_weights(struct fill_room *room, const struct still_to_place *rest,
                         uint64_t gpu_mib, uint32_t compute_cap)
{
    double mem = (double)rest->memory_mib / (double)gpu_mib;
    double comp = (double)rest->compute_bp / (double)compute_cap;
    double wm = mem + comp > 0 ? dmax(mem / (mem + comp), 0.01) : 0.5;
    double wc = mem + comp > 0 ? dmax(comp / (mem + comp), 0.01) : 0.5;
    room->per_mib = 1.0 / ((double)gpu_mib * wm * wm * wm * wm);
    room->per_bp = 1.0 / ((double)compute_cap * wc * wc * wc * wc);
}

/* When a limited pool has fewer GPUs left than the workloads still to place that only GPUs
 * of its size or larger hold, some of its GPUs must take two of them or more: a GPU of it
 * then takes those first (the least memory they have, else 0). */
static uint64_t only_here(const struct fleet *f, const struct fill_grid *gr,
                          const struct pool_choice *pc, int pool)
{
    size_t j = 0;
    while (j < gr->nsizes && gr->sizes[j] < f->pools[pool].memory_mib)
        j++;
    if (!j || f->pools[pool].count == FLEET_UNLIMITED || gr->above[j - 1] <= pc->left[pool])
        return 0;
    return gr->sizes[j - 1] + 1;
}

/* Where the tenant places bind (time-slicing's 16 replicas on a large GPU), the least room
 * alone fills a GPU with large workloads and leaves it short of places, then another with
 * small ones and leaves it short of memory. So the workload taken now leaves room for the
 * places still free after it at the average of the workloads still to place: room is capped
 * at that, in each dimension where those places would not fill it. Whether it capped any. */
static bool leave_room_for_places(struct fill_room *room, const struct still_to_place *rest,
                                  uint32_t after)
{
    if (!after || !rest->count)
        return false;
    uint64_t mem = after * (rest->memory_mib / rest->count);
    uint64_t comp = after * (rest->compute_bp / rest->count);
    bool capped = false;
    if (mem < room->mem) {
        room->mem -= mem;
        capped = true;
    }
    if (comp < room->comp) {
        room->comp -= comp;
        capped = true;
    }
    return capped;
}

/* The largest pool size below gpu_mib, or 0. */
static uint64_t smaller_size(const struct fill_grid *gr, uint64_t gpu_mib)
{
    uint64_t below = 0;
    for (size_t j = 0; j < gr->nsizes && gr->sizes[j] < gpu_mib; j++)
        below = gr->sizes[j];
    return below;
}

/* Whether a pool's GPUs are filled exactly (fill_exact): a limited pool beside smaller GPUs,
 * whose GPUs have to hold the workloads only they hold and should hold those the smaller
 * GPUs hold worst. */
static bool exact_worth(const struct fleet *f, int pool)
{
    if (f->pools[pool].count == FLEET_UNLIMITED)
        return false;
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].memory_mib < f->pools[pool].memory_mib)
            return true;
    return false;
}

/* Whether some pool of the fleet is one (pack_by_band_exact is tried only then). */
bool fleet_some_exact_worth(const struct fleet *f)
{
    for (size_t i = 0; i < f->npools; i++)
        if (exact_worth(f, (int)i))
            return true;
    return false;
}

/* A limited pool's GPU (at), opened by position first of keys, filled exactly (fill_exact). A
 * workload that smaller GPUs hold opens the GPU but the fill chooses whether it stays: forced
 * in, the largest of those left (21-23 GiB beside L4s) ended three to a GPU with no room for a
 * fourth. Whether it stayed (if not, it opens the next GPU). */
static bool fill_exactly(struct fill_grid *gr, const struct fleet_workloads *ws,
                         const struct sort_key *keys, size_t first, struct fill_gpu *at,
                         uint64_t gpu_mib, uint32_t slots, uint64_t gpus_left,
                         struct fleet_plan *p, struct fleet_gpu_list *g,
                         struct still_to_place *rest)
{
    const struct sort_key *w = &keys[first];
    size_t must = (size_t)(smaller_size(gr, gpu_mib) / gr->ex->unit);
    bool open_free = w->memory_mib <= smaller_size(gr, gpu_mib);
    if (open_free) {
        unplace(gr, ws, keys, first, at->gi, p, g, rest);
        fill_untake(gr, w, first);
        at->room->mem += w->memory_mib;
        at->room->comp += w->compute_bp;
        *at->tenants = 0;
    }
    double want = (double)(rest->count + !open_free) / (double)(gpus_left + 1) - !open_free;
    if (!fill_exact(gr, ws, keys, at, slots - *at->tenants, want, must, p, g, rest) && open_free)
        take_into(gr, ws, keys, first, at->gi, at->room, at->tenants, p, g, rest);
    return gr->taken[first];
}

/* The rest of GPU at, until its places are taken or nothing fits: the workloads that leave the
 * least room (with room kept for the places still free), those that only a GPU of its size
 * holds first (room->min_mem, only_here). */
static void fill_gpu_rest(struct fill_grid *gr, const struct fleet_workloads *ws,
                          const struct sort_key *keys, struct fill_gpu *at, uint64_t gpu_mib,
                          const struct mech_rules *r, struct fleet_plan *p,
                          struct fleet_gpu_list *g, struct still_to_place *rest)
{
    long last = -1;
    bool repaired = false;
    while (*at->tenants < r->slots) {
        long k = -1;
        struct fill_room step = *at->room;
        if (leave_room_for_places(&step, rest, r->slots - *at->tenants - 1))
            k = fill_best(gr, ws, keys, &step);
        if (k < 0)
            k = fill_best(gr, ws, keys, at->room);
        if (k >= 0) {
            take_into(gr, ws, keys, (size_t)k, at->gi, at->room, at->tenants, p, g, rest);
            last = k;
            continue;
        }
        if (at->room->min_mem) { /* then any workload */
            at->room->min_mem = 0;
            continue;
        }
        /* the GPU closes with room in both dimensions: once a GPU, a pair in place of the
           last workload may fill it better, and then more may follow */
        if (repaired || last < 0 || fill_full(at->room, gpu_mib, r->compute_cap))
            break;
        repaired = true;
        if (!fill_repair(gr, ws, keys, (size_t)last, at, p, g, rest))
            break;
    }
}

/* Workload w (position k of keys, taken) has no GPU of pc->only's share left, and no pool
 * with GPUs left holds it: deferred, it would go beyond the fleet. Instead it takes the place
 * of one or two workloads of the share's GPUs that a pool with GPUs left does hold, which go
 * to the next share in its stead: the fewest, then the least memory, that make room for it.
 * The exact fill of a limited H100 pool beside L4s prefers the workloads only it holds among
 * equally full sets, but nothing makes its last GPUs hold all of them: on a memory-heavy list
 * one of 23054 MiB (20 MiB over an L4) was left over, beyond the fleet, and the split lost to
 * a plan 4.2% above the cost bound. Its GPUs were full to 0.5%, so no single workload an L4
 * holds made room for it on any: two do. A scan of the share's GPUs per such workload, at
 * most SWAP_MOST a packing, and none after one that finds no room (the share overflows).
 * Whether w took a place. */
#define SWAP_MOST 16
static bool swap_in(struct fill_grid *gr, const struct fleet *f, const struct fleet_workloads *ws,
                    const struct sort_key *keys, size_t n, size_t k, const struct mech_rules *r,
                    struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g,
                    struct still_to_place *rest)
{
    const struct sort_key *w = &keys[k];
    uint64_t held_elsewhere = 0; /* the largest GPU of a pool with GPUs left */
    for (size_t i = 0; i < f->npools; i++)
        if (pc->left[i])
            held_elsewhere = MAX(held_elsewhere, f->pools[i].memory_mib);
    if (pc->only < 0 || w->memory_mib <= held_elsewhere || gr->swaps >= SWAP_MOST ||
        g->n <= gr->first_gpu)
        return false;
    gr->swaps++;
    const uint64_t gpu_mib = f->pools[pc->only].memory_mib;
    size_t ngpus = g->n - gr->first_gpu;
    uint32_t *head = malloc(ngpus * sizeof(*head)), *link = malloc(n * sizeof(*link));
    if (!head || !link) {
        free(head);
        free(link);
        return false; /* deferred, as without the swap */
    }
    memset(head, 0xff, ngpus * sizeof(*head));
    for (size_t e = 0; e < n; e++) /* each GPU's workloads that may leave it */
        if (gr->gpu_at[e] != UINT32_MAX && keys[e].memory_mib <= held_elsewhere) {
            link[e] = head[gr->gpu_at[e] - gr->first_gpu];
            head[gr->gpu_at[e] - gr->first_gpu] = (uint32_t)e;
        }
    /* best: the GPU and the workloads leaving it (UINT32_MAX: none), their count and memory */
    uint32_t best_gpu = UINT32_MAX, best_out[2] = {UINT32_MAX, UINT32_MAX};
    uint64_t best_count = 3, best_mib = 0;
    for (size_t j = 0; j < ngpus && best_count; j++) {
        const struct fleet_gpu_use *u = &g->use[gr->first_gpu + j];
        uint64_t free_mib = gpu_mib - u->memory_used_mib, free_bp = r->compute_cap - u->compute_bp;
        if (u->pool != (uint32_t)pc->only)
            continue;
        if (free_mib >= w->memory_mib && free_bp >= w->compute_bp && u->tenants < r->slots) {
            best_gpu = (uint32_t)(gr->first_gpu + j);
            best_out[0] = best_out[1] = UINT32_MAX;
            best_count = 0;
            break;
        }
        /* no pair can make room where the two largest cannot, in memory and in compute: on
           GPUs of many small workloads the pairs' scan took 95% of a plan of 100,000 (14 s,
           0.6 s without the swap), and once one workload makes room, no pair is better */
        uint64_t top_mib[2] = {0, 0}, top_bp[2] = {0, 0};
        for (uint32_t e = head[j]; e != UINT32_MAX; e = link[e]) {
            const struct sort_key *v = &keys[e];
            if (v->memory_mib > top_mib[0]) {
                top_mib[1] = top_mib[0];
                top_mib[0] = v->memory_mib;
            } else if (v->memory_mib > top_mib[1]) {
                top_mib[1] = v->memory_mib;
            }
            if (v->compute_bp > top_bp[0]) {
                top_bp[1] = top_bp[0];
                top_bp[0] = v->compute_bp;
            } else if (v->compute_bp > top_bp[1]) {
                top_bp[1] = v->compute_bp;
            }
        }
        bool pairs = best_count > 1 && free_mib + top_mib[0] + top_mib[1] >= w->memory_mib &&
                     free_bp + top_bp[0] + top_bp[1] >= w->compute_bp;
        for (uint32_t e1 = head[j]; e1 != UINT32_MAX; e1 = link[e1])
            for (uint32_t e2 = e1;; e2 = link[e2]) { /* e2 == e1: e1 alone */
                if (e2 != e1 && !pairs)
                    break;
                const struct sort_key *v1 = &keys[e1];
                const struct sort_key *v2 = e2 == e1 ? NULL : &keys[e2];
                uint64_t count = v2 ? 2 : 1;
                uint64_t mib = v1->memory_mib + (v2 ? v2->memory_mib : 0);
                uint64_t bp = v1->compute_bp + (v2 ? v2->compute_bp : 0);
                if (count <= best_count && free_mib + mib >= w->memory_mib &&
                    free_bp + bp >= w->compute_bp &&
                    (count < best_count || mib < best_mib)) {
                    best_gpu = (uint32_t)(gr->first_gpu + j);
                    best_out[0] = e1;
                    best_out[1] = v2 ? e2 : UINT32_MAX;
                    best_count = count;
                    best_mib = mib;
                }
                if (link[e2] == UINT32_MAX)
                    break;
            }
    }
    free(head);
    free(link);
    if (best_gpu == UINT32_MAX) {
        gr->swaps = SWAP_MOST; /* the share overflows: the rest is deferred without a scan */
        return false;
    }
    for (int j = 0; j < 2; j++)
        if (best_out[j] != UINT32_MAX) {
            const struct sort_key out = keys[best_out[j]];
            unplace(gr, ws, keys, best_out[j], best_gpu, p, g, rest);
            fleet_defer_to_next_share(pc, rest, out);
        }
    fill_place(gr, ws, keys, k, best_gpu, p, g, rest);
    return true;
}

/* The group (keys, largest first) packed one GPU at a time: the largest workload left opens
 * a GPU of the pool fleet_choose_pool gives, and the workloads that leave the least room fill
 * it. */
static int fill_group(const struct fleet *f, const struct fleet_workloads *ws,
                      const struct sort_key *keys, size_t n, const struct mech_rules *r,
                      struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g,
                      bool weigh_by_rest)
{
    struct fill_grid gr;
    int ret = fill_grid_init(&gr, f, ws, keys, n);
    if (!ret && pc->exact && pc->only >= 0 && exact_worth(f, pc->only))
        ret = exact_init(&gr, f, ws, keys, n);
    struct still_to_place rest = fleet_still_all(ws, keys, n);
    const struct still_to_place whole_group = rest;
    gr.first_gpu = g->n;
    for (size_t first = 0; !ret && first < n; first++) {
        if (gr.taken[first])
            continue;
        const struct sort_key *w = &keys[first];
        int pool = fleet_choose_pool(f, pc, &rest, r->compute_cap, r->slots, w->memory_mib);
        if (pool < 0) {
            fill_take(&gr, w, first);
            if (!swap_in(&gr, f, ws, keys, n, first, r, pc, p, g, &rest))
                fleet_defer_to_next_share(pc, &rest, keys[first]);
            continue;
        }
        long gi = fleet_gpu_open(f, g, p, pc->left, pool);
        if (gi < 0) {
            ret = -ENOMEM;
            break;
        }
        uint64_t gpu_mib = f->pools[pool].memory_mib;
        struct fill_room room = {f->pools[pool].memory_mib - w->memory_mib,
                                 r->compute_cap - w->compute_bp, 0, 0, 0}; /* none above cap */
        fill_weights(&room, weigh_by_rest ? &rest : &whole_group, f->pools[pool].memory_mib,
                     r->compute_cap);
        fill_take(&gr, w, first);
        fill_place(&gr, ws, keys, first, gi, p, g, &rest);
        room.min_mem = only_here(f, &gr, pc, pool);
        uint32_t tenants = 1;
        struct fill_gpu at = {gi, &room, &tenants};
        if (gr.ex && pool == pc->only &&
            !fill_exactly(&gr, ws, keys, first, &at, gpu_mib, r->slots, pc->left[pool], p, g,
                          &rest))
            first--; /* it opens the next GPU */
        fill_gpu_rest(&gr, ws, keys, &at, gpu_mib, r, p, g, &rest);
    }
    fill_grid_free(&gr);
    return ret;
}

/* Which dimension is scarce can be judged once for the whole group or afresh for each GPU by
 * the workloads still to place; neither wins on every list (the second did better on L4s and
 * mixed fleets, the first on T4s), so both are tried. */
int fleet_fill_by_group(const struct fleet *f, const struct fleet_workloads *ws,
                        const struct sort_key *keys, size_t n, const struct mech_rules *r,
                        struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    return fill_group(f, ws, keys, n, r, pc, p, g, false);
}

int fleet_fill_by_rest(const struct fleet *f, const struct fleet_workloads *ws,
                       const struct sort_key *keys, size_t n, const struct mech_rules *r,
                       struct pool_choice *pc, struct fleet_plan *p, struct fleet_gpu_list *g)
{
    return fill_group(f, ws, keys, n, r, pc, p, g, true);
}
