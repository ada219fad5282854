/* pace.c - compute shares: every launch of a slice with compute settings is charged its
 * estimated GPU time against the slice's pacing clock (common/slice.c, GCRA), and waits when
 * the slice is ahead of its share.
 *
 * The GPU time of a launch is not known when it is made, so it is learned: now and then a
 * launch is bracketed by two events on its stream, and the elapsed time between them is a
 * sample for that kernel (function and grid) or graph. The events are a pair kept for the
 * context they were made in, and forgotten when that context goes (contexts that go, below). Contention only ever lengthens a
 * sample (the stream waits while another context runs), so the estimate is the minimum of a
 * window of samples. Launches of a kernel not measured yet are charged a typical cost, and
 * the difference is charged as debt when the first sample arrives.
 *
 * The minimum undercharges a kernel whose work varies from launch to launch (its loop count
 * an argument): a 30% cap of 0.5 ms kernels, every 8th running 20 ms, used the whole GPU. A
 * sample taken while no other slice could run (a clean one) that is far above the minimum
 * marks the key as varying: then every launch of it is sampled, charged the running mean of
 * its samples, and charged (or given back) the difference once a clean sample of it is in,
 * so that the books match the GPU's. Samples of other keys come at random intervals around
 * one in SAMPLE_EVERY, so that a pattern in step with the interval cannot hide from them.
 *
 * The rate a slice may use comes from the board of its GPU (common/board.c): a cap is fixed,
 * a guarantee takes what active caps leave in proportion to the active guarantees, and a
 * batch slice steps back while a latency slice is active (down to its guarantee at most).
 * It is refreshed every few milliseconds, not per launch.
 *
 * A launch that is not held costs: the context's device, the stream's capture status, the
 * clock (vDSO), a hash lookup and one compare-and-swap on the slice's clock. */
#include "libcarve.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "board.h"
#include "slice.h"

#define MAX_CU 64
#define EST_SLOTS 4096u        /* kernels and graphs with an estimate, per process */
#define EST_PROBE 16u
#define WINDOW 8u              /* samples per minimum window */
#define SHUT_WINDOW 32u        /* samples from turns' edges per window that may raise */
#define SAMPLE_EVERY 64u       /* launches of a key between samples, once warm (on average) */
#define SAMPLE_SPAN_NS 50000000ull /* ... or fewer: a sample in this much of its work at least */
#define WARM_SAMPLES 64u       /* until a key has these, its samples come 8 launches apart on
                                  average, not 64: a long run one launch in 8 is found in the
                                  first second (one key in three took 2-3 s, at 100% of the GPU) */
#define VARY_FLOOR_NS 50000u   /* a clean sample this far above the minimum, and half of it
                                  again, marks a key varying */
enum { VARY_NO, VARY_SUSPECT, VARY_YES };
/* how a sample was clean when launched: no other slice launched lately, or all that did take
 * turns and it ran in its window; it is clean when in only if that is still so. CLEAN_SHUT:
 * all take turns, and it did not run inside its window behind its own work (a turn's first
 * launch, or one that runs over): on a GPU that time-slices it can run beside another
 * slice's work that ran over, stretched, while that slice's books say it was done */
enum { CLEAN_NOT, CLEAN_ALONE, CLEAN_TURN, CLEAN_SHUT };
/* what a sample says when it is in: SAMPLE_CLEAN its key's cost; SAMPLE_MURKY that cost, or
 * more where other work ran beside it unseen (a neighbour that takes no turns, another
 * stream); SAMPLE_SHUT as much or more, from a turn's edge: it lowers an estimate, and raises
 * it only when a whole window of such samples says so (shut_window) */
enum { SAMPLE_MURKY, SAMPLE_CLEAN, SAMPLE_SHUT };
#define CALM_FIRST 64u         /* clean samples within it that end a key's varying, at first */
#define CALM_MAX 8192u         /* ... doubled each time the key is marked again, up to this */
#define PAIRS 64               /* event pairs for samples in flight */
/* A varying key's samples in flight, at most: the other keys keep pairs to sample with. Not
 * fewer: a launch left unsampled is not squared, and which are is not random (a program
 * waits on its long kernels): at 16, a 70% cap of varying kernels got 65-67%. */
#define VARY_IN_FLIGHT (PAIRS * 3 / 4)
#define POLL_NS 200000ull      /* how often samples in flight are looked at */
#define REFRESH_NS 2000000ull  /* how often the rate is recomputed from the board */
#define REATTACH_NS 1000000000ull /* how often a board that was cut is mapped again */
#define SLEEP_MAX_NS 2000000ull
#define DEFAULT_TYPICAL_NS 20000u
#define LEARN_WAIT_NS 100000000ull /* the longest a launch waits for its key's first sample */
#define LEARN_AHEAD 2u            /* launches of an unmeasured key that go before one waits */

#define CLOSE_YIELDS 64       /* a context's close yields to a poller at its pair this often */
#define CLOSE_WAITS 20000      /* then sleeps CLOSE_WAIT_NS as often, at most (a second) */
#define CLOSE_WAIT_NS 50000ull

/* A pair is owned by whoever moved it to BUSY or POLLED (a launch sampling, a poller, a
 * context's close): only the owner touches its events, and an owner that finds `gone` set
 * forgets them (pair_forget) instead. */
enum { PAIR_FREE, PAIR_BUSY, PAIR_PENDING, PAIR_POLLED };
_Static_assert(PAIRS <= 64, "struct carve_pace_close has one bit a pair");

struct est {
    _Atomic uint64_t key;     /* 0: empty */
    _Atomic uint32_t est_ns;  /* 0: no sample yet */
    _Atomic uint32_t win_min;      /* of the window's samples but SAMPLE_SHUT, 0: none yet */
    _Atomic uint32_t win_n;
    _Atomic uint32_t shut_min;     /* of the samples from turns' edges since shut_n was 0 */
    _Atomic uint32_t shut_n;
    _Atomic uint32_t shut_chase;   /* all of them so far would raise it: sample every launch */
    _Atomic uint32_t samples;
    _Atomic uint32_t since_sample;
    _Atomic uint32_t gap;          /* launches from the last sample to the next, 0: the next */
    _Atomic uint32_t sampling;     /* samples in flight (one at most unless it varies) */
    _Atomic uint32_t varies;       /* VARY_SUSPECT: sampled at every launch; VARY_YES: and charged
                                      mean_ns */
    _Atomic uint32_t mean_ns;      /* running mean of its samples (clean ones, and any while
                                      it varies), 0: none yet */
    _Atomic uint32_t calm_n;       /* clean samples since one marked it varying */
    _Atomic uint32_t calm_need;    /* how many end its varying, 0: CALM_FIRST */
    _Atomic uint32_t murky_n;      /* samples not clean in a row, while a suspect */
    _Atomic uint64_t pending_n;    /* launches charged a typical cost before the first sample */
    _Atomic uint64_t pending_ns;   /* what they were charged */
    _Atomic uint64_t charged_n;    /* launches charged the current estimate */
    _Atomic uint32_t learn_waited; /* a launch has waited for the first sample (once a key) */
    _Atomic int sdev;
};

struct carve_pace_pair {
    _Atomic int state;
    _Atomic(CUcontext) ctx; /* the context its events were made in, NULL: none (yet) */
    _Atomic CUdevice dev;   /* that context's device */
    _Atomic int gone;       /* that context is gone, and its events with it */
    CUevent start, end;
    struct est *est;
    uint32_t charged_ns; /* a varying key's launch: what it was charged, to be squared */
    uint8_t clean;       /* CLEAN_*: no other slice could run while it ran */
};

struct pace_dev {
    struct carve_board *board;
    int entry;
    struct carve_compute compute;
    _Atomic uint32_t rate_bp;
    _Atomic uint32_t yielding;
    _Atomic uint32_t window;   /* 1 while taking turns with other paced slices */
    _Atomic uint32_t win_off;  /* its window within each period, basis points */
    _Atomic uint32_t win_width;
    _Atomic uint32_t win_idle;   /* the time after it that no window covers, basis points */
    _Atomic uint32_t contended;  /* other slices launched recently: 1 all take turns, 2 not */
    _Atomic uintptr_t last_stream;  /* the stream of this process's last paced launch here */
    _Atomic uint64_t streams_until; /* until then another stream of it launched here too */
    _Atomic int win_before;      /* the board entry whose window comes before it, -1: none */
    _Atomic uint64_t next_refresh;
    _Atomic uint64_t next_reattach; /* after its board was cut: when to map it again */
    _Atomic uint32_t reattached;    /* how many times it was mapped again so */
    _Atomic uint64_t late_start; /* the window late_ns is for (its start), 0: none yet */
    _Atomic uint64_t late_ns;    /* how long the others' work ran into that window */
    _Atomic uint64_t turn_open;  /* the window (its start) of this process's last admission */
};

static struct {
    struct carve_slice *slice;
    _Atomic int sdev_of[MAX_CU]; /* -2 unknown, -1 not paced */
    struct pace_dev dev[CARVE_SLICE_MAX_DEVICES];
    struct est est[EST_SLOTS];
    struct carve_pace_pair pair[PAIRS];
    _Atomic(CUcontext) primary[MAX_CU]; /* each device's primary context, as last retained */
    _Atomic uint32_t typical_ns;
    _Atomic uint64_t next_poll;
    int32_t launcher_id;
    uint64_t tau_ns, yield_tau_ns, active_ns, period_ns, handover_ns, wake_early_ns;
    uint32_t batch_yield_bp;
} P;

_Atomic int carve__pacing;
_Atomic(_Atomic uint32_t *) carve__ran;

uint64_t carve__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t env_us(const char *name, uint64_t dflt_us)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return dflt_us * 1000;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end)
        return dflt_us * 1000;
    /* an experiment's tunable past an hour means "forever"; it must not wrap to a small one */
    return x > 3600000000ull ? 3600000000000ull : x * 1000;
}

void carve__pace_setup(struct carve_slice *slice, int slot)
{
    /* a fork child's: the parent's boards, mapped again below (their guard places would be
       taken for good, two a GPU at each generation of forks) */
    for (int d = 0; d < CARVE_SLICE_MAX_DEVICES; d++)
        carve_board_close(P.dev[d].board);
    memset(&P, 0, sizeof(P));
    for (int i = 0; i < MAX_CU; i++)
        atomic_store(&P.sdev_of[i], -2);
    atomic_store(&P.typical_ns, DEFAULT_TYPICAL_NS);
    /* the process's slot in the slice (set up again in a fork child): not its pid, which
     * two processes in containers of their own can share (each container's first is 1) */
    P.launcher_id = slot + 1;
    atomic_store(&carve__pacing, 0);
    atomic_store(&carve__ran, slice ? carve_slice_ran_flag(slice) : NULL);
    if (!slice)
        return;
    /* tunables for experiments; the defaults are documented in docs/compute.md */
    P.tau_ns = env_us("CARVE_PACE_AHEAD_US", 20000);
    P.yield_tau_ns = env_us("CARVE_PACE_YIELD_AHEAD_US", 0);
    P.active_ns = env_us("CARVE_PACE_ACTIVE_US", 100000);
    P.period_ns = env_us("CARVE_PACE_PERIOD_US", 50000);
    if (P.period_ns == 0)
        P.period_ns = 50000000;
    P.handover_ns = env_us("CARVE_PACE_HANDOVER_US", 300);
    P.wake_early_ns = env_us("CARVE_PACE_WAKE_EARLY_US", 200);
    /* 90%: held to 80% of the GPU's time, a batch tenant cannot keep 80% of what it does
       alone (the target beside a latency tenant); on an H200 it kept 79.1% so, and 82.9%
       at 90% with the latency p99 1.00x solo (10 s runs, 2026-11-28) */
    const char *y = getenv("CARVE_BATCH_YIELD");
    struct carve_compute yc = {9000, 0, 0};
    if (y && *y)
        carve_parse_compute(y, &yc, NULL, 0);
    P.batch_yield_bp = yc.share_bp;
    P.slice = slice;
    bool any = false;
    for (int d = 0; d < carve_slice_ndev(slice); d++) {
        struct pace_dev *pd = &P.dev[d];
        pd->compute = carve_slice_compute(slice, d);
        pd->entry = carve_slice_board_entry(slice, d);
        atomic_store(&pd->rate_bp, pd->compute.share_bp && pd->compute.mode == CARVE_COMPUTE_CAP
                                       ? pd->compute.share_bp : CARVE_BP_FULL);
        if (pd->compute.share_bp == 0 && pd->compute.priority == CARVE_PRIO_NORMAL)
            continue;
        any = true;
        uint8_t uuid[16];
        if (pd->entry >= 0 && carve_slice_dev_uuid(slice, d, uuid) == 0 &&
            carve_board_open(uuid, &pd->board) < 0)
            pd->board = NULL;
    }
    atomic_store(&carve__pacing, any);
}

/* CARVE_PACE_DEBUG=1: the estimates, on stderr at exit (for tuning, not a stable format). */
__attribute__((destructor)) static void pace_debug(void)
{
    const char *d = getenv("CARVE_PACE_DEBUG");
    if (!d || strcmp(d, "1") != 0 || !P.slice)
        return;
    for (uint32_t i = 0; i < EST_SLOTS; i++)
        if (atomic_load(&P.est[i].key))
            fprintf(stderr, "carve pace: key %016llx est %u ns, %u samples; mean %u ns%s\n",
                    (unsigned long long)atomic_load(&P.est[i].key), atomic_load(&P.est[i].est_ns),
                    atomic_load(&P.est[i].samples), atomic_load(&P.est[i].mean_ns),
                    (const char *[]){"", ", suspect", ", varies"}[atomic_load(&P.est[i].varies)]);
    for (int s = 0; s < carve_slice_ndev(P.slice); s++)
        if (atomic_load(&P.dev[s].reattached) || carve_board_cut(P.dev[s].board))
            fprintf(stderr, "carve pace: device %d: board cut, mapped again %u times%s\n", s,
                    atomic_load(&P.dev[s].reattached),
                    carve_board_cut(P.dev[s].board) ? ", cut now" : "");
}

/* The slice device a CUDA ordinal paces on, or -1. */
static int sdev_of(CUdevice cu)
{
    if (cu < 0 || cu >= MAX_CU)
        return -1;
    int s = atomic_load_explicit(&P.sdev_of[cu], memory_order_relaxed);
    if (s != -2)
        return s;
    CUuuid u;
    if (!R.cuDeviceGetUuid_v2 || R.cuDeviceGetUuid_v2(&u, cu) != CUDA_SUCCESS)
        return -1;
    s = carve_slice_find_uuid(P.slice, (const uint8_t *)u.bytes);
    if (s >= 0 && P.dev[s].compute.share_bp == 0 &&
        P.dev[s].compute.priority == CARVE_PRIO_NORMAL)
        s = -1;
    atomic_store_explicit(&P.sdev_of[cu], s, memory_order_relaxed);
    return s;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

/* The estimate entry for key, created if need be; NULL when the table is full there. */
static struct est *est_of(uint64_t key, int sdev)
{
    key |= 1; /* never 0, the empty mark */
    uint64_t h = mix(key);
    for (uint32_t i = 0; i < EST_PROBE; i++) {
        struct est *e = &P.est[(h + i) & (EST_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == key)
            return e;
        if (k == 0) {
            uint64_t empty = 0;
            if (atomic_compare_exchange_strong(&e->key, &empty, key)) {
                atomic_store(&e->sdev, sdev);
                return e;
            }
            if (empty == key)
                return e;
        }
    }
    return NULL;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Runs f with this thread's capture mode relaxed: the event calls below are "potentially
 * unsafe" during another thread's global-mode capture and would invalidate it otherwise. */
static CUstreamCaptureMode relax(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (R.cuThreadExchangeStreamCaptureMode)
        R.cuThreadExchangeStreamCaptureMode(&m);
    return m;
}

static void unrelax(CUstreamCaptureMode m)
{
    if (R.cuThreadExchangeStreamCaptureMode)
        R.cuThreadExchangeStreamCaptureMode(&m);
}

/* A running average: s moves *avg an eighth of the way to it (0: none yet, s is the first). */
static void move_eighth(_Atomic uint32_t *avg, uint32_t s)
{
    uint32_t a = atomic_load(avg);
    atomic_store(avg, a ? (uint32_t)(((uint64_t)a * 7 + s) / 8) : s);
}

/* Whether sample s is long against the minimum estimate est: a sign of varying work. */
static bool sample_long(uint32_t s, uint32_t est)
{
    return est && (uint64_t)s > (uint64_t)est + est / 2 && s - est > VARY_FLOOR_NS;
}

/* The run of calm clean samples that clears a suspect or a varying key (a suspect that a
 * turn's edge made has left it as it was, 0 the first time). */
static uint32_t calm_needed(struct est *e)
{
    uint32_t need = atomic_load(&e->calm_need);
    return need ? need : CALM_FIRST;
}

/* After a varying key's launch was squared on sdev while taking turns: the board's note of
 * where the slice's queue ends follows the queue clock, later or earlier. The slice whose
 * window comes next starts its turn when that work runs out; the note left where the
 * launches' means put it, the next slice started while the work still ran (on a GPU that
 * time-slices, each slice's samples then counted the other's work) or after the GPU had
 * idled: a 30% slice of varying kernels beside a 70% one got 22.5-24.1% (simulated GPU with
 * 2 ms time slices, 2026-11-29; 23.6-23.8% on the H200, 2026-11-28). */
static void queue_corrected(int sdev)
{
    struct pace_dev *pd = &P.dev[sdev];
    if (!pd->board || !atomic_load_explicit(&pd->window, memory_order_relaxed))
        return;
    /* an end already past is set as it is, not raised to now: a slice that polls while the
       others run would otherwise push their windows' starts on (window_late) */
    int64_t q = carve_slice_queue_clock(P.slice, sdev);
    if (q > 0)
        carve_board_set_queue(pd->board, pd->entry, (uint64_t)q);
}

/* A clean sample s of e, whose minimum estimate was est before it: the running mean, whether
 * the key varies, and for a launch charged as a varying key's, the difference between what it
 * cost and what it was charged. A long sample makes the key a suspect, sampled at every
 * launch; a second before a run of calm ones makes it varying (one sample that a neighbour
 * lengthened unseen, as slices that start together do, must not). A key stops varying after
 * a run of calm clean samples, a longer run each time it is marked again: a cheap kernel
 * that contended samples marked goes back to the minimum soon, one that is long one launch
 * in a hundred stays marked. */
static void take_clean(struct est *e, uint32_t s, uint32_t est, uint32_t charged)
{
    move_eighth(&e->mean_ns, s);
    uint32_t was = atomic_load(&e->varies);
    if (sample_long(s, est)) {
        atomic_store(&e->calm_n, 0);
        if (was == VARY_NO) {
            uint32_t need = atomic_load(&e->calm_need);
            atomic_store(&e->calm_need, !need ? CALM_FIRST
                                        : need < CALM_MAX / 2 ? need * 2 : CALM_MAX);
        }
        atomic_store(&e->varies, was == VARY_NO ? VARY_SUSPECT : VARY_YES);
    } else if (was != VARY_NO && atomic_fetch_add(&e->calm_n, 1) + 1 >= calm_needed(e)) {
        atomic_store(&e->varies, VARY_NO);
    }
    int sdev = atomic_load(&e->sdev);
    if (charged && sdev >= 0) {
        carve_slice_pace_correct(P.slice, sdev, (int64_t)s - (int64_t)charged,
                                 atomic_load(&P.dev[sdev].rate_bp), carve__now_ns());
        queue_corrected(sdev);
    }
}

/* Raises e's estimate est to m, up to up at most. The launches charged so far were charged
 * est: a later fall to a shorter sample gives back what was charged above it, and those
 * were not (with them counted, a raise that fell back at once forgave each of thousands of
 * launches the whole raise). */
static void raise_est(struct est *e, uint32_t est, uint32_t m, uint64_t up)
{
    uint32_t to = m < up ? m : (uint32_t)(up < UINT32_MAX ? up : UINT32_MAX);
    atomic_store(&e->est_ns, to);
    if (to != est)
        atomic_store(&e->charged_n, 0);
}

/* A sample s from a turn's edge, into the window that raises an estimate from such samples
 * alone: a slice that runs one kernel a turn (kernels longer than half its window) has no
 * other, and a kernel that got longer kept its old estimate for good (a 30% cap of 10 ms
 * kernels that became 20 ms took 60% of the GPU, with or without time slices). Such a
 * sample can be lengthened by the work of the slice before (its last kernel run over), so
 * the estimate goes up only when every sample of a long window is above it by an eighth,
 * by half at most; a raise that a neighbour's overrun caused falls back at the first
 * shorter sample (take_sample: down at once). */
static void shut_window(struct est *e, uint32_t s)
{
    uint32_t n = atomic_fetch_add(&e->shut_n, 1);
    uint32_t m = n == 0 ? 0 : atomic_load(&e->shut_min);
    if (m == 0 || s < m)
        atomic_store(&e->shut_min, m = s);
    uint32_t est = atomic_load(&e->est_ns);
    bool high = est && atomic_load(&e->varies) != VARY_YES && m > (uint64_t)est + est / 8;
    /* while every sample so far would raise it, every launch is sampled: one launch a turn
       sampled one in 64 would fill the window in minutes */
    atomic_store(&e->shut_chase, high && n + 1 < SHUT_WINDOW);
    if (n + 1 < SHUT_WINDOW)
        return;
    atomic_store(&e->shut_n, 0);
    if (high)
        raise_est(e, est, m, (uint64_t)est + est / 2);
}

/* A sample that is not from a turn's edge ends the edge samples' window: the key has others
 * (take_sample), or runs alone, and a chase left set would sample every launch for good. */
static void shut_window_end(struct est *e)
{
    atomic_store(&e->shut_n, 0);
    atomic_store(&e->shut_chase, 0);
}

static void take_sample(struct est *e, uint64_t ns, int kind, uint32_t launch_charged)
{
    uint32_t s = ns > UINT32_MAX ? UINT32_MAX : (ns ? (uint32_t)ns : 1);
    uint32_t varies = atomic_load(&e->varies), est0 = atomic_load(&e->est_ns);
    if (kind == SAMPLE_CLEAN) {
        atomic_store(&e->murky_n, 0);
        take_clean(e, s, atomic_load(&e->est_ns), launch_charged);
    } else if (kind == SAMPLE_SHUT && varies != VARY_YES && sample_long(s, est0)) {
        /* long at a turn's edge: a suspect, sampled at every launch, so that the turns'
           middles say soon whether it varies (only they mark it). Without it, four 25% caps
           of varying kernels were found later, and had seconds of 41% and 7% after the first */
        atomic_store(&e->murky_n, 0);
        atomic_store(&e->varies, VARY_SUSPECT);
    } else if (varies == VARY_SUSPECT && atomic_fetch_add(&e->murky_n, 1) + 1 >= CALM_FIRST) {
        /* a suspect that no clean sample confirms (a neighbour that takes no turns came) is
           dropped: sampled at every launch for good, it held pairs the others need */
        atomic_store(&e->varies, VARY_NO);
        atomic_store(&e->murky_n, 0);
    } else if (varies != VARY_NO && kind == SAMPLE_MURKY) {
        /* a varying key's mean follows its samples that are not clean too, lengthened as
           they may be (a neighbour that takes no turns runs): left as it was, it stayed high
           after the work got cheaper; going back to the minimum let such a neighbour's
           arrival lift a 30% cap of varying kernels to 99-101%. Its launches are squared
           by clean samples only, and only they mark or clear it. Not those from a turn's
           edge: the clean samples of the turns' middles keep the mean, and with these it
           came out 1.0-1.3 ms for 0.94 ms of work (every 8th 0.5 ms kernel 4 ms long), and
           a 30% cap of them got 25.8%, four 25% caps 22-23.7% (simulated GPU, 2026-11-29) */
        move_eighth(&e->mean_ns, s);
    }
    uint32_t n = atomic_fetch_add(&e->win_n, 1);
    if (n == 0)
        atomic_store(&e->win_min, 0);
    uint32_t m = atomic_load(&e->win_min);
    if (kind != SAMPLE_SHUT && (m == 0 || s < m))
        atomic_store(&e->win_min, s);
    bool first = atomic_fetch_add(&e->samples, 1) == 0;
    uint32_t est = atomic_load(&e->est_ns);
    if (est == 0 || s < est) {
        atomic_store(&e->est_ns, s); /* down at once: a shorter run is closer to the truth */
        /* and what the longer estimate overcharged is given back: while slices learn, an
         * early sample that waited behind another slice would otherwise starve this one */
        uint64_t n_old = atomic_exchange(&e->charged_n, 0);
        int sdev = atomic_load(&e->sdev);
        if (est && n_old && sdev >= 0 && !atomic_load(&e->varies))
            carve_slice_pace_refund(P.slice, sdev, (uint64_t)(est - s) * n_old,
                                    atomic_load(&P.dev[sdev].rate_bp), carve__now_ns());
    } else if (n + 1 >= WINDOW && (m = atomic_load(&e->win_min)) != 0) {
        /* up slowly, by a quarter per window at most: a whole window can be contended. Not
           by samples from a turn's edge: on a GPU that time-slices, four 25% slices of 10 ms
           kernels, one kernel a turn, learned up to 12.5 ms from them (their samples 12-37 ms;
           simulated GPU, CARVE_SIM_TIMESLICE_US=2000, 2026-11-29) */
        raise_est(e, est, m, (uint64_t)est + est / 4);
    }
    if (n + 1 >= WINDOW)
        atomic_store(&e->win_n, 0);
    if (kind == SAMPLE_SHUT)
        shut_window(e, s);
    else
        shut_window_end(e);
    /* a typical cost for kernels not measured yet: a slow average of first estimates */
    move_eighth(&P.typical_ns, s);
    if (first) {
        uint64_t n_pending = atomic_exchange(&e->pending_n, 0);
        uint64_t charged = atomic_exchange(&e->pending_ns, 0);
        uint64_t owed = n_pending * atomic_load(&e->est_ns);
        int sdev = atomic_load(&e->sdev);
        if (owed > charged && sdev >= 0)
            carve_slice_pace_debt(P.slice, sdev, owed - charged,
                                  atomic_load(&P.dev[sdev].rate_bp), carve__now_ns());
    }
}

/* Forgets the events of an owned pair whose context is gone: they went with it and are never
 * touched again (a real driver may have handed their memory to anything by now). The pair is
 * made anew in the next context that claims it; a sample in flight is lost, and its key may
 * be sampled again. */
static void pair_forget(struct carve_pace_pair *p, bool in_flight)
{
    if (in_flight && p->est)
        atomic_fetch_sub(&p->est->sampling, 1);
    p->start = p->end = NULL;
    p->est = NULL;
    atomic_store(&p->ctx, NULL);
    atomic_store(&p->gone, 0);
}

static void refresh_rate(int sdev, uint64_t now);

/* Notes a paced launch into stream: this process's other streams, or the slice's other
 * processes, launching beside it lengthen its samples as another slice's work would. A load
 * of each when nothing changed. */
static void note_launcher(int sdev, CUstream stream, uint64_t now)
{
    /* a default stream's handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) names each
     * thread's own under _ptsz: told apart by the thread (the legacy one, shared, is then
     * taken for several: its samples are not counted, which errs on the safe side) */
    static _Thread_local char thread_mark;
    uintptr_t tag = (uintptr_t)stream < 4096 ? (uintptr_t)&thread_mark ^ (uintptr_t)stream
                                             : (uintptr_t)stream;
    struct pace_dev *pd = &P.dev[sdev];
    uintptr_t was = atomic_load_explicit(&pd->last_stream, memory_order_relaxed);
    if (was != tag) {
        atomic_store_explicit(&pd->last_stream, tag, memory_order_relaxed);
        if (was)
            atomic_store_explicit(&pd->streams_until, now + P.active_ns, memory_order_relaxed);
    }
    carve_slice_note_launcher(P.slice, sdev, P.launcher_id, now, P.active_ns);
}

/* Whether only this stream of this process launched lately on the slice's GPU sdev. */
static bool one_launcher(int sdev, uint64_t now)
{
    return now >= atomic_load_explicit(&P.dev[sdev].streams_until, memory_order_relaxed) &&
           now >= carve_slice_shared_until(P.slice, sdev);
}

/* What a sample launched so (how: CLEAN_*) says when it is in (SAMPLE_*): clean or from a
 * turn's edge only if no slice, stream or process came to run beside it meanwhile (slices that
 * start together see each other only after their first launches, when each one's were
 * lengthened by the others'). */
static int sample_kind(struct est *e, int how)
{
    int sdev = atomic_load(&e->sdev);
    if (sdev < 0 || how == CLEAN_NOT)
        return SAMPLE_MURKY;
    struct pace_dev *pd = &P.dev[sdev];
    uint64_t now = carve__now_ns();
    if (!one_launcher(sdev, now))
        return SAMPLE_MURKY;
    refresh_rate(sdev, now); /* the last may be from before a long wait */
    uint32_t contended = atomic_load_explicit(&pd->contended, memory_order_relaxed);
    if (how == CLEAN_ALONE)
        return contended == 0 ? SAMPLE_CLEAN : SAMPLE_MURKY;
    if (contended != 1 || !atomic_load_explicit(&pd->window, memory_order_relaxed))
        return SAMPLE_MURKY;
    return how == CLEAN_TURN ? SAMPLE_CLEAN : SAMPLE_SHUT;
}

static uint32_t next_gap(struct est *e, uint64_t now);

static void poll_samples(uint64_t now)
{
    uint64_t next = atomic_load_explicit(&P.next_poll, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong(&P.next_poll, &next, now + POLL_NS))
        return;
    CUstreamCaptureMode m = relax();
    for (int i = 0; i < PAIRS; i++) {
        struct carve_pace_pair *p = &P.pair[i];
        int want = PAIR_PENDING;
        if (atomic_load(&p->state) != PAIR_PENDING ||
            !atomic_compare_exchange_strong(&p->state, &want, PAIR_POLLED))
            continue;
        if (atomic_load(&p->gone)) {
            pair_forget(p, true);
            atomic_store(&p->state, PAIR_FREE);
            continue;
        }
        CUresult q = R.cuEventQuery(p->end);
        if (q == CUDA_ERROR_NOT_READY) {
            atomic_store(&p->state, PAIR_PENDING);
            continue;
        }
        float ms = 0;
        CUresult r = q == CUDA_SUCCESS && R.cuEventElapsedTime_v2
                         ? R.cuEventElapsedTime_v2(&ms, p->start, p->end)
                         : (q == CUDA_SUCCESS && R.cuEventElapsedTime
                                ? R.cuEventElapsedTime(&ms, p->start, p->end)
                                : CUDA_ERROR_INVALID_VALUE);
        if (r == CUDA_SUCCESS && ms >= 0)
            take_sample(p->est, (uint64_t)((double)ms * 1e6), sample_kind(p->est, p->clean),
                        p->charged_ns);
        /* the gap to the next sample counts from here: counted from when this one began, it
           had passed by now behind a queue deeper than it, and the next sample was always
           the launch the program makes as this one's kernel completes, in step with it */
        atomic_store(&p->est->since_sample, 0);
        atomic_store_explicit(&p->est->gap, next_gap(p->est, now), memory_order_relaxed);
        atomic_fetch_sub(&p->est->sampling, 1);
        atomic_store(&p->state, PAIR_FREE);
    }
    unrelax(m);
}

/* A free event pair of the current context (ctx, on device cu), or NULL: one made in it
 * before, else one not made yet (or whose context is gone), made now. */
static struct carve_pace_pair *claim_pair(CUcontext ctx, CUdevice cu)
{
    for (int i = 0; i < PAIRS; i++) {
        struct carve_pace_pair *p = &P.pair[i];
        CUcontext bound = atomic_load(&p->ctx);
        int want = PAIR_FREE;
        if (atomic_load(&p->state) != PAIR_FREE ||
            (bound && bound != ctx && !atomic_load(&p->gone)) ||
            !atomic_compare_exchange_strong(&p->state, &want, PAIR_BUSY))
            continue;
        if (atomic_load(&p->gone))
            pair_forget(p, false);
        bound = atomic_load(&p->ctx);
        if (bound == ctx)
            return p;
        if (!bound) { /* first use, or its context went: make its events in this one */
            if (R.cuEventCreate(&p->start, 0) == CUDA_SUCCESS) {
                if (R.cuEventCreate(&p->end, 0) == CUDA_SUCCESS) {
                    atomic_store(&p->dev, cu);
                    atomic_store(&p->ctx, ctx);
                    return p;
                }
                R.cuEventDestroy_v2(p->start);
            }
            p->start = NULL;
            atomic_store(&p->state, PAIR_FREE);
            return NULL;
        }
        atomic_store(&p->state, PAIR_FREE); /* taken for another context meanwhile */
    }
    return NULL;
}

/* ---- contexts that go ----
 *
 * A pair's events live and die with the context they were made in. Before a call that may
 * destroy a context, its pairs that are free or pending are taken (a poller at one is waited
 * for: it is at their events), so that nothing touches their events while the driver destroys
 * them; after it, they are forgotten if the context went, else put back. A pair a launch holds
 * (sampling in that very context, as the context goes) is marked gone, and forgotten by
 * whoever has it next. Never on a launch's path: only context calls wait or scan. */

/* Whether pair p is of the context c is about to close. */
static bool closes(const struct carve_pace_close *c, struct carve_pace_pair *p)
{
    CUcontext bound = atomic_load(&p->ctx);
    return bound && (c->ctx ? bound == c->ctx : atomic_load(&p->dev) == c->dev);
}

void carve__pace_closing(struct carve_pace_close *c, CUcontext ctx, CUdevice dev)
{
    c->ctx = ctx;
    c->dev = dev;
    c->taken = c->pending = 0;
    if (!atomic_load(&carve__pacing))
        return;
    if (!ctx && (dev < 0 || dev >= MAX_CU))
        return; /* no context named */
    if (!ctx) /* a primary context: its handle as retained, else every pair of its device */
        c->ctx = atomic_load(&P.primary[dev]);
    for (int i = 0; i < PAIRS; i++) {
        struct carve_pace_pair *p = &P.pair[i];
        for (int tries = 0; closes(c, p); tries++) {
            int s = atomic_load(&p->state);
            if ((s == PAIR_FREE || s == PAIR_PENDING) &&
                atomic_compare_exchange_strong(&p->state, &s, PAIR_BUSY)) {
                if (!closes(c, p)) { /* forgotten and made again elsewhere meanwhile */
                    atomic_store(&p->state, s);
                    break;
                }
                c->taken |= 1ull << i;
                if (s == PAIR_PENDING)
                    c->pending |= 1ull << i;
                break;
            }
            if (s == PAIR_BUSY || tries >= CLOSE_YIELDS + CLOSE_WAITS)
                break; /* a launch's (or a stuck poller's): marked gone afterwards */
            if (s == PAIR_POLLED) {
                if (tries < CLOSE_YIELDS)
                    sched_yield();
                else
                    sleep_ns(CLOSE_WAIT_NS);
            }
        }
    }
}

void carve__pace_closed(struct carve_pace_close *c, bool gone)
{
    if (!atomic_load(&carve__pacing))
        return;
    for (int i = 0; i < PAIRS; i++) {
        struct carve_pace_pair *p = &P.pair[i];
        uint64_t bit = 1ull << i;
        if (c->taken & bit) {
            if (gone)
                pair_forget(p, c->pending & bit);
            atomic_store(&p->state, !gone && (c->pending & bit) ? PAIR_PENDING : PAIR_FREE);
            continue;
        }
        if (!gone || !closes(c, p))
            continue;
        atomic_store(&p->gone, 1);
        int s = atomic_load(&p->state);
        if ((s == PAIR_FREE || s == PAIR_PENDING) &&
            atomic_compare_exchange_strong(&p->state, &s, PAIR_BUSY)) {
            if (atomic_load(&p->gone))
                pair_forget(p, s == PAIR_PENDING);
            atomic_store(&p->state, s == PAIR_PENDING && atomic_load(&p->ctx) ? s : PAIR_FREE);
        }
    }
}

void carve__pace_made(CUcontext ctx, CUdevice dev, bool primary, bool fresh)
{
    if (!ctx || !atomic_load(&carve__pacing))
        return;
    if (primary && dev >= 0 && dev < MAX_CU)
        atomic_store(&P.primary[dev], ctx);
    if (!fresh)
        return;
    /* a context went that this handle named before, unseen (an entry point not wrapped, or a
     * release racing with this retain): its pairs' events are gone too */
    struct carve_pace_close c = {.ctx = ctx, .dev = dev};
    carve__pace_closed(&c, true);
}

static bool same_compute(const struct carve_compute *a, const struct carve_compute *b)
{
    return a->share_bp == b->share_bp && a->mode == b->mode && a->priority == b->priority;
}

static void refresh_rate(int sdev, uint64_t now)
{
    struct pace_dev *pd = &P.dev[sdev];
    uint64_t next = atomic_load_explicit(&pd->next_refresh, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong(&pd->next_refresh, &next,
                                                      now + REFRESH_NS))
        return;
    if (!pd->board)
        return; /* alone: a cap is its share, a guarantee or a priority has no one to meet */
    if (carve_board_cut(pd->board) &&
        now >= atomic_load_explicit(&pd->next_reattach, memory_order_relaxed)) {
        /* somebody truncated the board's objects: a few system calls, once a second at most
           while they stay cut */
        atomic_store_explicit(&pd->next_reattach, now + REATTACH_NS, memory_order_relaxed);
        if (carve_board_reattach(pd->board) == 0)
            atomic_fetch_add_explicit(&pd->reattached, 1, memory_order_relaxed);
    }
    struct carve_peer peers[CARVE_BOARD_ENTRIES + 1]; /* + itself, when not on the board */
    int me;
    int n = carve_board_peers(pd->board, pd->entry, now, P.active_ns, peers,
                              CARVE_BOARD_ENTRIES, &me);
    if (me >= 0 && !same_compute(&peers[me].compute, &pd->compute))
        me = -1; /* another slice's settings in its place: the board was cut and made anew */
    if (me < 0) {
        /* its entry is not on the board (cut short, or cleared by another user of a board of
           `carve run` alone): among the others with its own settings, and a cap is kept (it
           ran at 100%) */
        peers[n] = (struct carve_peer){.compute = pd->compute, .active = true, .entry = -1};
        me = n++;
    }
    struct carve_rate r = carve_compute_rate(peers, n, me, P.batch_yield_bp);
    uint32_t contended = 0;
    for (int i = 0; i < n; i++)
        if (i != me && peers[i].active)
            contended = peers[i].compute.share_bp ? (contended ? contended : 1) : 2;
    uint32_t off = 0, width = 0, idle = 0;
    int before = -1;
    bool window = carve_compute_window_around(peers, n, me, P.batch_yield_bp, &off, &width,
                                              &before, &idle);
    /* rates past the period shrink every window: the share clock runs at the window's
     * width, or a slice charged at its full rate is never ahead of it, and its long kernels
     * run into the others' windows every period */
    if (window && width < r.rate_bp)
        r.rate_bp = width;
    atomic_store_explicit(&pd->rate_bp, r.rate_bp, memory_order_relaxed);
    atomic_store_explicit(&pd->yielding, r.yielding, memory_order_relaxed);
    atomic_store_explicit(&pd->win_off, off, memory_order_relaxed);
    atomic_store_explicit(&pd->win_width, width, memory_order_relaxed);
    atomic_store_explicit(&pd->win_idle, idle, memory_order_relaxed);
    atomic_store_explicit(&pd->win_before, window ? peers[before].entry : -1,
                          memory_order_relaxed);
    atomic_store_explicit(&pd->window, window, memory_order_relaxed);
    atomic_store_explicit(&pd->contended, contended, memory_order_relaxed);
}

/* How far past its last launch a slice's queue end on the board is believed (board.h): two
 * periods. A slice's queue reaches past its launch by the rest of its window and one kernel;
 * one that reaches further (a 90% slice's kernel of about 55 ms) is taken for a forged end,
 * and the slice after it starts its window on time, queued behind it (docs/compute.md). */
static uint64_t queue_horizon(void)
{
    return 2 * P.period_ns;
}

/* How long the work the other slices queued before a window (its start) ran into it, up to
 * the window's width: their last kernel that ran over its own window, which their share
 * clocks charge them for. Looked up on the board once per window and process. */
static uint64_t window_late(struct pace_dev *pd, uint64_t now, uint64_t start, uint64_t width)
{
    if (atomic_load_explicit(&pd->late_start, memory_order_relaxed) == start)
        return atomic_load_explicit(&pd->late_ns, memory_order_relaxed);
    uint64_t busy =
        pd->board ? carve_board_busy_until(pd->board, pd->entry, now, queue_horizon()) : 0;
    uint64_t late = busy > start ? (busy - start < width ? busy - start : width) : 0;
    atomic_store_explicit(&pd->late_ns, late, memory_order_relaxed);
    atomic_store_explicit(&pd->late_start, start, memory_order_relaxed);
    return late;
}

/* How far a window's end moves on by late (of width): into the time after it that no window
 * covers, not into the next slice's window, where both slices would submit at once (a 70%
 * slice of small kernels queued behind the 30% slice of big ones there and got 62-64%); the
 * time lost is given back by window_given. Unless the others' work took more than half the
 * window: then by all of it, as a queue end forged on the board would otherwise leave the
 * slice no window at all (the part past the unmoved end goes only while it is behind). */
static uint64_t window_moved(struct pace_dev *pd, uint64_t late, uint64_t width, uint64_t period)
{
    if (!late || late > width / 2)
        return late;
    uint64_t idle = atomic_load_explicit(&pd->win_idle, memory_order_relaxed) * period /
                    CARVE_BP_FULL;
    return late < idle ? late : idle;
}

/* Whether work of cost may go before the slice's next window (at next): the slice whose window
 * comes before it, held in its own window ahead of its share, noted that it leaves the rest of
 * it unused, from its queue's end until some time after now. The work starts at that queue's
 * end at the earliest (*floor) and must end by that time, or by the slice's own window end when
 * the time given reaches its window. Else *wait: how long until the given time opens, or 0. */
static bool window_given(struct pace_dev *pd, uint64_t now, uint64_t next, uint64_t width,
                         int64_t q, uint64_t cost, uint64_t *floor, uint64_t *wait)
{
    uint64_t from, until = carve_board_given(
        pd->board, atomic_load_explicit(&pd->win_before, memory_order_relaxed), now,
        queue_horizon(), &from);
    *wait = 0;
    if (until <= now || from >= until)
        return false;
    if (from > now + P.handover_ns) { /* it is still running its work: go when that runs out */
        *wait = from - P.handover_ns - now;
        return false;
    }
    *floor = from > now ? from : now;
    uint64_t queued = q > (int64_t)*floor ? (uint64_t)q : *floor;
    return queued + cost <= (until < next ? until : next + width);
}

/* Waits wait ns from now for a turn: sleeps to P.wake_early_ns before its end, and spins
 * the rest. A timer's wake-up comes late by its slack and the scheduler's latency, and the
 * GPU idles for as long at every hand-over: 100-140 us on a 2-vCPU VM, 0.9% of its time
 * over two hand-overs in a period of 50 ms (2026-11-28). The spin costs each slice taking
 * turns up to that margin of one CPU per wait. */
static void wait_turn(uint64_t now, uint64_t wait)
{
    if (wait > P.wake_early_ns) {
        uint64_t nap = wait - P.wake_early_ns;
        sleep_ns(nap < SLEEP_MAX_NS ? nap : SLEEP_MAX_NS);
        return; /* the caller looks again: the window may have moved meanwhile */
    }
    while (carve__now_ns() - now < wait)
        sched_yield();
}

/* Whether work is still queued on stream; asked with the capture mode relaxed (relax). */
static bool stream_busy(CUstream stream)
{
    if (!R.cuStreamQuery)
        return false;
    CUstreamCaptureMode m = relax();
    bool busy = R.cuStreamQuery(stream) == CUDA_ERROR_NOT_READY;
    unrelax(m);
    return busy;
}

static void turn_admit(struct pace_dev *pd, int sdev, uint64_t cost, uint64_t floor,
                       uint64_t now)
{
    int64_t queue_end = carve_slice_turn_admit(
        P.slice, sdev, cost, atomic_load_explicit(&pd->rate_bp, memory_order_relaxed), floor);
    carve_board_note_queue(pd->board, pd->entry, (uint64_t)queue_end, now, queue_horizon());
}

/* Time division: admits work of cost ns when it can finish inside this slice's window of the
 * current period (its queue included), else waits for the window; a sampled launch that
 * starts a turn waits for the work the other slices queued before it to run out. A kernel
 * longer than the whole window goes while the slice is behind its share: it runs over, and
 * the share clock charges the overrun to the next windows. A window that such an overrun
 * ran into moves on by as much, so that the slice after it still gets its width: without
 * that, small kernels beside big ones lost the overrun every time (30% got 22%). The overrun
 * is paid back where the overrunning slice, ahead of its share, leaves part of its window
 * unused: the slice after it may start its window early, while it is behind its share.
 * Returns what a sample of the launch would be (CLEAN_*): clean when it fits in the window,
 * queued behind the slice's own work in this turn; else from the turn's edge (CLEAN_SHUT):
 * the turn's first launch, one that runs past the window, one made with the slice's queue
 * empty, one in time another slice left. A turn's first launch can meet the last kernel of
 * the slice before (a hand-over comes up to its lead early, and their queue ends are what
 * they were charged, not what ran), a launch that overruns the window can meet the next
 * slice's first ones, and one made with nothing of its own queued starts its sample before
 * another's overrun ends: each lengthens a sample. */
static int take_turn(int sdev, uint64_t cost, bool sampled, bool varies, CUstream stream,
                     uint64_t now)
{
    struct pace_dev *pd = &P.dev[sdev];
    uint64_t held = 0;
    int clean = CLEAN_NOT;
    for (;;) {
        uint64_t period = P.period_ns;
        uint64_t off = atomic_load_explicit(&pd->win_off, memory_order_relaxed) * period /
                       CARVE_BP_FULL;
        uint64_t width = atomic_load_explicit(&pd->win_width, memory_order_relaxed) * period /
                         CARVE_BP_FULL;
        /* a window narrower than a wake-up and a launch (a tiny share beside big ones: one
         * basis point of 50 ms is 5 us) is missed by every sleep that ends in it: it is the
         * hand-over lead wide, running into the next window by the difference */
        if (width < P.handover_ns)
            width = P.handover_ns;
        uint64_t start = now - now % period + off, late = 0;
        /* the last period's window, moved on past this period's start (or widened past it),
         * may be open still */
        uint64_t prev = start - period;
        uint64_t prev_moved =
            atomic_load_explicit(&pd->late_start, memory_order_relaxed) == prev
                ? window_moved(pd, atomic_load_explicit(&pd->late_ns, memory_order_relaxed),
                               width, period)
                : 0;
        if (now < start && start >= period && now < prev + width + prev_moved)
            start = prev;
        if (now >= start)
            late = window_late(pd, now, start, width);
        uint64_t end = start + width + window_moved(pd, late, width, period), wait, early = 0;
        uint64_t given_floor;
        int64_t q = carve_slice_queue_clock(P.slice, sdev);
        int64_t share = carve_slice_pace_clock(P.slice, sdev);
        /* the slice's work starts no earlier than the others' that ran into its window */
        uint64_t floor = now > start + late ? now : start + late;
        uint64_t queued_until = q > (int64_t)floor ? (uint64_t)q : floor;
        /* in the window: work that ends inside it goes; work that would run over goes only
         * while the slice is behind its share, so that overruns even out over the periods;
         * so does all work past the window's unmoved end (a moved window must not let a
         * forged queue end on the board double a slice's time) */
        bool owed = share - (int64_t)now <= (int64_t)period; /* a period of lead, as GCRA's tau */
        bool fits = queued_until + cost <= end && (now < start + width || owed);
        /* a turn's first launch that is to be sampled waits for the work of the slices before
         * it to run out, less the hand-over lead (what a wake-up and a launch take): queued
         * behind theirs, its sample would count their work too. Other launches go at once,
         * since a wait leaves the GPU idle for a wake-up's time; so does one whose hand-over
         * would come after its window (a long kernel ahead, or a queue end a tenant forged). */
        bool behind_own = q > (int64_t)now;
        uint64_t busy =
            !sampled || behind_own || !pd->board
                ? 0 : carve_board_busy_until(pd->board, pd->entry, now, queue_horizon());
        uint64_t handed_over = busy > P.handover_ns ? busy - P.handover_ns : 0;
        bool may = now >= start && now < end && queued_until < end && (fits || owed);
        if (may && (handed_over <= now || handed_over >= end)) {
            /* behind its own work: the others' that ran into the window ran before that.
               Asked of the stream too, as the queue clock is what the launches were charged:
               a program that launches when its earlier work completes does so right after
               its long kernels, with the clock already behind, so that the long ones of a
               key not yet known to vary would hardly ever count */
            /* a load, and a store once a window: no read-modify-write on every launch */
            bool opened = atomic_load_explicit(&pd->turn_open, memory_order_relaxed) == start;
            if (!opened)
                atomic_store_explicit(&pd->turn_open, start, memory_order_relaxed);
            clean = !sampled ? CLEAN_NOT
                    : fits && queued_until + cost <= end && opened &&
                              (behind_own || stream_busy(stream))
                        ? CLEAN_TURN
                        : CLEAN_SHUT;
            turn_admit(pd, sdev, cost, floor, now);
            break;
        }
        /* outside its window, behind its share: the time the slice before it left unused
         * (a forged note gives no slice more than its share over time, as above) */
        if (!may && owed && (now < start || now >= end) && pd->board &&
            window_given(pd, now, now < start ? start : start + period, width, q, cost,
                         &given_floor, &early)) {
            turn_admit(pd, sdev, cost, given_floor, now);
            clean = sampled ? CLEAN_SHUT : CLEAN_NOT;
            break;
        }
        if (may) {
            wait = handed_over - now;
        } else if (now < start) {
            wait = start - now;
        } else if (now < end && queued_until < end) {
            /* held for its share: the rest of the window, up to when the slice may go again,
             * is the next slice's to start early in */
            wait = (uint64_t)(share - (int64_t)now - (int64_t)period) < end - now
                       ? (uint64_t)(share - (int64_t)now - (int64_t)period) : end - now;
            carve_board_note_given(pd->board, pd->entry, now + wait);
        } else {
            wait = start + period - now;
        }
        if (early && early < wait)
            wait = early;
        if (!atomic_load_explicit(&pd->window, memory_order_relaxed) || wait == 0)
            break; /* alone again (refresh below): pace as usual from the next launch */
        wait_turn(now, wait);
        uint64_t t = carve__now_ns();
        held += t - now;
        now = t;
        /* a varying key's launch held: squares the samples that came back meanwhile, and the
           board's queue end with them (queue_corrected), before the next slice's turn begins.
           A slice held for its next window launches nothing, and its samples were looked at
           only when it launched again, after the hand-over (a 30% slice of varying kernels
           beside a 70% one, on a GPU that time-slices, got 23.1-24.6% with the board set but
           without this). Not for other keys: their samples square nothing, and taken sooner
           they moved a 30% slice whose 10 ms kernels grew to 14 ms to 34% in one run of three */
        if (varies)
            poll_samples(now);
        refresh_rate(sdev, now);
        if (pd->board)
            carve_board_note_launch(pd->board, pd->entry, now);
    }
    if (held)
        carve_slice_note_held(P.slice, sdev, held);
    return clean;
}

/* Whether a launch of e, the since-th since its last sample (or since it came back), is to
 * be sampled: every one while it varies or its turns' edges chase a raise (shut_window),
 * else after its gap (next_gap; the first launch). */
static bool wants_sample(struct est *e, uint32_t since)
{
    uint32_t gap = atomic_load_explicit(&e->gap, memory_order_relaxed);
    return atomic_load_explicit(&e->varies, memory_order_relaxed) ||
           atomic_load_explicit(&e->shut_chase, memory_order_relaxed) ||
           since + 1 >= (gap ? gap : 1);
}

/* Whether the launch about to be made of e will be sampled: a varying key's while it has
 * room in flight, another's when no sample of it is in flight. */
static bool will_sample(struct est *e)
{
    uint32_t in_flight = atomic_load_explicit(&e->sampling, memory_order_relaxed);
    return (atomic_load_explicit(&e->varies, memory_order_relaxed) ? in_flight < VARY_IN_FLIGHT
                                                                   : !in_flight) &&
           wants_sample(e, atomic_load_explicit(&e->since_sample, memory_order_relaxed));
}

/* Takes a sample in flight for a launch of e: up to VARY_IN_FLIGHT for a varying key (the
 * other keys keep pairs to sample with), else one. */
static bool start_sampling(struct est *e)
{
    if (atomic_load_explicit(&e->varies, memory_order_relaxed)) {
        if (atomic_fetch_add(&e->sampling, 1) < VARY_IN_FLIGHT)
            return true;
        atomic_fetch_sub(&e->sampling, 1);
        return false;
    }
    uint32_t idle = 0;
    return atomic_compare_exchange_strong(&e->sampling, &idle, 1);
}

/* The launches until e's next sample, counted from when the last one began and again from
 * when it came back: SAMPLE_EVERY on average (8 until the key is warm, 1 or 2 until it has
 * its first window), or fewer for a long kernel, one in SAMPLE_SPAN_NS of its work at
 * least (a slice of 10 ms kernels taking turns launches about 20 a second: one sample in 64
 * launches came every 3 s, and work that grew waited that long to be seen); drawn from half
 * that to one and a half times it, so that work that is long every 8th or 64th launch is not
 * always missed. Never simply the next launch: a program that launches when the work it
 * queued 16 launches ago completes had its samples all 16 launches apart, in step with such
 * a pattern. */
static uint32_t next_gap(struct est *e, uint64_t now)
{
    uint64_t r = mix(now ^ atomic_load_explicit(&e->key, memory_order_relaxed));
    uint32_t samples = atomic_load_explicit(&e->samples, memory_order_relaxed);
    uint32_t every = samples < WINDOW ? 2 : samples < WARM_SAMPLES ? SAMPLE_EVERY / 8
                                                                   : SAMPLE_EVERY;
    uint32_t est = atomic_load_explicit(&e->est_ns, memory_order_relaxed);
    uint32_t span = est ? (uint32_t)(SAMPLE_SPAN_NS / est) : every;
    if (span < every)
        every = span > 2 ? span : 2;
    return every / 2 + (uint32_t)(r % every);
}

/* The run-ahead a paced launch of cost is allowed: CARVE_PACE_AHEAD_US; while yielding to a
 * latency slice, CARVE_PACE_YIELD_AHEAD_US (0), but at least 8 such launches' worth, up to
 * YIELD_SMALL_NS. With no lead at all every small kernel slept on its own, and a timer's
 * wake-up takes longer than such a kernel: a 60% guarantee of 20 us kernels got 5-12%. A big
 * kernel's lead is the 200 us, a fraction of its own length: its queue stays short. */
#define YIELD_SMALL_NS 200000ull
static uint64_t lead(bool yielding, uint64_t cost)
{
    if (!yielding)
        return P.tau_ns;
    uint64_t small = cost * 8 < YIELD_SMALL_NS ? cost * 8 : YIELD_SMALL_NS;
    return P.yield_tau_ns > small ? P.yield_tau_ns : small;
}

/* Once LEARN_AHEAD launches of a key are out unmeasured, the next waits for the first one's
 * sample (up to LEARN_WAIT_NS), once per key: charged the typical cost meanwhile, a loop of
 * 10 ms kernels would queue a second of work at 20 us each before the first sample came
 * back, and the debt for it would then hold the slice for seconds. A key launched a few
 * times only (a new shape per decode step) never waits. The slice stays on the board and its
 * rate fresh meanwhile: a latency slice waiting here must not look idle to its peers. */
static bool must_learn(struct est *e)
{
    uint32_t no = 0;
    return atomic_load_explicit(&e->est_ns, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&e->sampling, memory_order_relaxed) &&
           atomic_load_explicit(&e->pending_n, memory_order_relaxed) >= LEARN_AHEAD &&
           atomic_load_explicit(&e->learn_waited, memory_order_relaxed) == 0 &&
           atomic_compare_exchange_strong(&e->learn_waited, &no, 1);
}

static uint64_t learn_first(struct est *e, int sdev, uint64_t now)
{
    struct pace_dev *pd = &P.dev[sdev];
    uint64_t start = now;
    while (atomic_load_explicit(&e->est_ns, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&e->sampling, memory_order_relaxed) &&
           now - start < LEARN_WAIT_NS) {
        sleep_ns(POLL_NS); /* the samples' own poll interval: each round looks at them */
        now = carve__now_ns();
        poll_samples(now);
        refresh_rate(sdev, now);
        if (pd->board)
            carve_board_note_launch(pd->board, pd->entry, now);
    }
    if (now > start)
        carve_slice_note_held(P.slice, sdev, now - start);
    return now;
}

void carve__launch_begin(struct carve_launch *L, uint64_t key, CUstream stream)
{
    L->pair = NULL;
    CUdevice cu;
    if (!P.slice || !R.cuCtxGetDevice || R.cuCtxGetDevice(&cu) != CUDA_SUCCESS)
        return;
    int sdev = sdev_of(cu);
    if (sdev < 0)
        return;
    if (carve__capturing(stream))
        return; /* recorded into a graph, not run: its graph's launches are what count */
    struct pace_dev *pd = &P.dev[sdev];
    uint64_t now = carve__now_ns();
    if (pd->board)
        carve_board_note_launch(pd->board, pd->entry, now);
    /* a latency (or normal) slice without a share is never held, only seen: paced at what
     * the guarantees beside it leave, without turns, its samples counted the guarantee's
     * queue and its requests took 35 times as long in a third of the runs (2026-11-27) */
    if (pd->compute.share_bp == 0 && pd->compute.priority != CARVE_PRIO_BATCH)
        return;
    refresh_rate(sdev, now);
    note_launcher(sdev, stream, now);
    poll_samples(now);
    uint32_t rate = atomic_load_explicit(&pd->rate_bp, memory_order_relaxed);
    bool yielding = atomic_load_explicit(&pd->yielding, memory_order_relaxed);
    struct est *e = est_of(key, sdev);
    bool turns = atomic_load_explicit(&pd->window, memory_order_relaxed);
    if (e && (turns || rate < CARVE_BP_FULL || yielding) && must_learn(e)) {
        now = learn_first(e, sdev, now);
        rate = atomic_load_explicit(&pd->rate_bp, memory_order_relaxed);
        yielding = atomic_load_explicit(&pd->yielding, memory_order_relaxed);
        turns = atomic_load_explicit(&pd->window, memory_order_relaxed);
    }
    uint32_t cost = e ? atomic_load_explicit(&e->est_ns, memory_order_relaxed) : 0;
    bool varies = cost && atomic_load_explicit(&e->varies, memory_order_relaxed) == VARY_YES;
    if (varies) {
        uint32_t mean = atomic_load_explicit(&e->mean_ns, memory_order_relaxed);
        cost = mean > cost ? mean : cost;
    } else if (cost)
        atomic_fetch_add_explicit(&e->charged_n, 1, memory_order_relaxed);
    else {
        cost = atomic_load_explicit(&P.typical_ns, memory_order_relaxed);
        if (e) {
            atomic_fetch_add(&e->pending_n, 1);
            atomic_fetch_add(&e->pending_ns, cost);
        }
    }
    int turn_clean = CLEAN_NOT;
    if (turns) {
        turn_clean = take_turn(sdev, cost, e && will_sample(e), varies, stream, now);
    } else if (rate < CARVE_BP_FULL || yielding) {
        uint64_t tau = lead(yielding, cost), held = 0, wait;
        while ((wait = carve_slice_pace(P.slice, sdev, cost, rate, tau, now)) != 0) {
            /* sleep past the limit by half the lead allowed, up to 1 ms: the launches that
             * follow then go through together instead of each sleeping a few microseconds,
             * which the kernel's timer would stretch into idle gaps */
            wait += tau / 2 < 1000000 ? tau / 2 : 1000000;
            sleep_ns(wait < SLEEP_MAX_NS ? wait : SLEEP_MAX_NS);
            uint64_t t = carve__now_ns();
            held += t - now;
            now = t;
            refresh_rate(sdev, now); /* the latency slice may have gone quiet meanwhile */
            rate = atomic_load_explicit(&pd->rate_bp, memory_order_relaxed);
            yielding = atomic_load_explicit(&pd->yielding, memory_order_relaxed);
            tau = lead(yielding, cost);
            if (pd->board)
                carve_board_note_launch(pd->board, pd->entry, now);
            if (rate >= CARVE_BP_FULL && !yielding)
                break; /* not paced any more: what it was charged at a low rate is not owed */
        }
        if (held)
            carve_slice_note_held(P.slice, sdev, held);
    }
    if (!e)
        return;
    uint32_t since = atomic_fetch_add_explicit(&e->since_sample, 1, memory_order_relaxed);
    if (!wants_sample(e, since) || !start_sampling(e))
        return;
    CUcontext ctx;
    if (!R.cuCtxGetCurrent || R.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx ||
        !(L->pair = claim_pair(ctx, cu)) ||
        R.cuEventRecord(L->pair->start, stream) != CUDA_SUCCESS) {
        if (L->pair)
            atomic_store(&L->pair->state, PAIR_FREE);
        L->pair = NULL;
        atomic_fetch_sub(&e->sampling, 1);
        return;
    }
    atomic_store(&e->since_sample, 0);
    atomic_store_explicit(&e->gap, next_gap(e, now), memory_order_relaxed);
    L->pair->est = e;
    L->pair->charged_ns = varies ? cost : 0;
    /* no other slice could run beside it: alone, or taking turns with slices that all take
     * turns, inside its window (take_turn); and nothing else of this slice either */
    uint32_t contended = atomic_load_explicit(&pd->contended, memory_order_relaxed);
    L->pair->clean = !one_launcher(sdev, now) ? CLEAN_NOT
                     : contended == 0         ? CLEAN_ALONE
                     : contended == 1 && turns && !yielding ? turn_clean
                                                             : CLEAN_NOT;
    L->stream = stream;
}

void carve__launch_end(struct carve_launch *L, CUresult launched)
{
    struct carve_pace_pair *p = L->pair;
    if (!p)
        return;
    if (atomic_load(&p->gone)) { /* its context went while this launch was made in it */
        pair_forget(p, true);
    } else if (launched == CUDA_SUCCESS && R.cuEventRecord(p->end, L->stream) == CUDA_SUCCESS) {
        atomic_store(&p->state, PAIR_PENDING);
        return;
    } else {
        atomic_fetch_sub(&p->est->sampling, 1);
    }
    atomic_store(&p->state, PAIR_FREE);
}
