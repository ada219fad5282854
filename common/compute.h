/* compute.h - compute shares: what a slice asks for ("30%" at most, "30%+" at least) and its
 * priority, parsing them, and the policy that turns the shares of the slices active on one
 * GPU into the rate each may use now. Pure functions: the shared state they read lives in
 * slice.c (the slice's own pacing) and board.c (the slices on one GPU). */
#ifndef CARVE_COMPUTE_H
#define CARVE_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CARVE_BP_FULL 10000u /* shares are in basis points: 10000 = the whole GPU */

enum carve_compute_mode {
    CARVE_COMPUTE_CAP = 0,       /* "30%": at most 30% of the GPU's time, even when idle */
    CARVE_COMPUTE_GUARANTEE = 1, /* "30%+": at least 30% when contended, idle time on top */
};

enum carve_priority {
    CARVE_PRIO_NORMAL = 0,
    CARVE_PRIO_LATENCY = 1, /* batch slices on the GPU step back while it is active */
    CARVE_PRIO_BATCH = 2,   /* steps back (keeps a short queue, a lower rate) for latency */
};

struct carve_compute {
    uint32_t share_bp; /* 1..10000; 0 = no share given (not limited) */
    uint8_t mode;      /* enum carve_compute_mode */
    uint8_t priority;  /* enum carve_priority */
};

/* The number that starts "30%", "12.5", ".5": basis points (hundredths of a percent, at most
 * 10000) into *bp and the first byte after the number into *end; NULL, or why it is none
 * ("is not a percentage", "has more precision than 0.01%", "is more than 100%", ...). */
const char *carve_parse_percent_bp(const char *s, uint32_t *bp, const char **end);
/* "30%", "30", "12.5%" (a cap) or the same with a trailing '+' (a guarantee); the share must
 * be in (0, 100]. 0 or -EINVAL with a message naming the input and the accepted forms. */
int carve_parse_compute(const char *s, struct carve_compute *out, char *err, size_t errlen);
/* "latency", "batch", "normal": 0 or -EINVAL with a message. */
int carve_parse_priority(const char *s, uint8_t *out, char *err, size_t errlen);
const char *carve_priority_name(uint8_t priority);
/* "30%", "12.5%+" */
void carve_format_compute(const struct carve_compute *c, char *buf, size_t len);

/* One slice on a GPU as the policy sees it. */
struct carve_peer {
    struct carve_compute compute;
    bool active; /* launched work recently */
    int entry;   /* its place on the board */
};

/* The most peers a window is worked out among: a board's entries (common/board.h). */
#define CARVE_PEERS_MAX 64

struct carve_rate {
    uint32_t rate_bp; /* the share of GPU time this slice may use now; 10000 = unpaced */
    bool yielding;    /* a batch slice making room for an active latency slice */
};

/* The rate for peers[me] among the n slices on its GPU:
 *  - no share: unpaced (a batch slice steps back all the same, below);
 *  - a cap: its share, always;
 *  - a guarantee: what the active caps leave, split among the active guarantees in
 *    proportion to their shares (never below its own share, at most the whole GPU);
 *  - batch priority while a latency slice is active: at most batch_yield_bp, or its
 *    guarantee when that is more. */
struct carve_rate carve_compute_rate(const struct carve_peer *peers, int n, int me,
                                     uint32_t batch_yield_bp);

/* Time division among the paced slices of a GPU: each active slice with a share gets a
 * window of each period as wide as its rate, in board order, so that only one paced slice
 * submits at a time (no time-slicing between them in the driver, and clean cost samples).
 * Sets peers[me]'s window in basis points of the period and returns true; false when me is
 * the only active paced slice (then pacing needs no window), or when there are more than
 * CARVE_PEERS_MAX peers. When the rates add up to more than the whole period, the
 * guarantees keep their rates and the caps are scaled down into what is left, each to at
 * least 1 basis point (the guarantees too, only if they leave the caps less than that). */
bool carve_compute_window(const struct carve_peer *peers, int n, int me, uint32_t batch_yield_bp,
                          uint32_t *offset_bp, uint32_t *width_bp);
/* The same, and around the window: *before, the index in peers of the slice whose window
 * comes just before it (the last window's, for the first), and *idle_after_bp, the time after
 * it that no window covers until the next one begins, in basis points of the period (only the
 * last window has any, when the windows add up to less than the period). */
bool carve_compute_window_around(const struct carve_peer *peers, int n, int me,
                                 uint32_t batch_yield_bp, uint32_t *offset_bp,
                                 uint32_t *width_bp, int *before, uint32_t *idle_after_bp);

#endif
