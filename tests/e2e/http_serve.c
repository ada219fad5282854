/* http_serve.c - carved's HTTP side alone, for tests/e2e/dashboard.sh: serves a snapshot read
 * from a file on HOST:PORT until SIGTERM or SIGINT.
 *
 *   http_serve [--hold] [--tick MS] [--then SNAPSHOT2.json [--after N]] HOST:PORT SNAPSHOT.json
 *
 * --hold: publish nothing until SIGUSR1 (so /metrics and /api/state answer 503 until then).
 * --tick MS: every MS milliseconds publish a new snapshot, its "time" one second on and each
 *            slice's compute_share moved a little, so the dashboard's charts have a history
 *            (the first snapshot published is the file's, as it is).
 * --then FILE2: on SIGUSR2, FILE2 becomes the snapshot served from then on (the node
 *            changed: slices made, memory used, an escape gone), so a test sees the page follow.
 * --after N: with --then and --tick, FILE2 is served once /api/state has served N snapshots
 *            (the page has polled N times), without a signal; and the clock moves on at
 *            most one tick per MS and only after a poll, so the snapshots' time advances no
 *            faster than the page polls: what the page sees (states, and the charts, which
 *            keep five minutes of the snapshots' time) does not depend on how fast the
 *            machine is.
 * Prints "ready" on stdout once it listens; exits 1 with carved's message if it cannot. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carved.h"

static void usage(void)
{
    fprintf(stderr, "usage: http_serve [--hold] [--tick MS] [--then SNAPSHOT2.json [--after N]] "
                    "HOST:PORT SNAPSHOT.json\n");
    exit(2);
}

/* the base snapshot with its clock moved on by `tick' seconds and shares that wander */
static json_t *ticked(const json_t *base, long tick)
{
    json_t *snap = json_deep_copy(base);
    if (!snap || tick == 0)
        return snap;
    double t = json_number_value(json_object_get(snap, "time"));
    json_object_set_new(snap, "time", json_real(t + (double)tick));
    size_t i, j;
    json_t *slice, *dev;
    json_array_foreach(json_object_get(snap, "slices"), i, slice) {
        json_array_foreach(json_object_get(slice, "devices"), j, dev) {
            double share = json_number_value(json_object_get(dev, "compute_share"));
            if (share <= 0)
                continue;
            share += 6.0 * sin((double)tick / 3.0 + (double)(i * 2 + j));
            json_object_set_new(dev, "compute_share", json_real(share < 0 ? 0 : share));
        }
    }
    return snap;
}

static void publish(const json_t *base, long tick)
{
    json_t *snap = ticked(base, tick);
    if (!snap) {
        fprintf(stderr, "http_serve: out of memory\n");
        exit(1);
    }
    carved_http_publish(snap);
    json_decref(snap);
}

int main(int argc, char **argv)
{
    int hold = 0;
    long tick_ms = 0, after = 0;
    const char *then = NULL;
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (strcmp(argv[a], "--hold") == 0) {
            hold = 1;
        } else if (strcmp(argv[a], "--then") == 0 && a + 1 < argc) {
            then = argv[++a];
        } else if (strcmp(argv[a], "--after") == 0 && a + 1 < argc) {
            after = strtol(argv[++a], NULL, 10);
            if (after <= 0)
                usage();
        } else if (strcmp(argv[a], "--tick") == 0 && a + 1 < argc) {
            tick_ms = strtol(argv[++a], NULL, 10);
            if (tick_ms <= 0)
                usage();
        } else {
            usage();
        }
    }
    if (argc - a != 2)
        usage();
    const char *addr = argv[a], *file = argv[a + 1];

    json_error_t jerr;
    json_t *base = json_load_file(file, 0, &jerr);
    if (!base) {
        fprintf(stderr, "http_serve: %s:%d: %s\n", file, jerr.line, jerr.text);
        return 1;
    }
    json_t *next = then ? json_load_file(then, 0, &jerr) : NULL;
    if (then && !next) {
        fprintf(stderr, "http_serve: %s:%d: %s\n", then, jerr.line, jerr.text);
        json_decref(base);
        return 1;
    }

    /* the signals are taken here, synchronously; the listener's thread inherits the mask */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);

    char err[512];
    if (carved_http_start(addr, err, sizeof(err)) != 0) {
        fprintf(stderr, "http_serve: %s\n", err);
        json_decref(base);
        return 1;
    }
    long tick = 0;
    unsigned long served_at_tick = 0;
    if (!hold)
        publish(base, tick);
    printf("ready\n");
    fflush(stdout);

    for (;;) {
        struct timespec wait = {.tv_sec = tick_ms / 1000, .tv_nsec = tick_ms % 1000 * 1000000};
        int sig = tick_ms ? sigtimedwait(&set, NULL, &wait) : sigwaitinfo(&set, NULL);
        if (sig == SIGTERM || sig == SIGINT) {
            break;
        } else if (sig == SIGUSR1) {
            hold = 0;
            publish(base, tick);
        } else if (next && (sig == SIGUSR2 ||
                            (after && carved_http_state_served() >= (unsigned long)after))) {
            json_decref(base);
            base = next; /* the clock goes on from where it was */
            next = NULL;
            publish(base, ++tick);
        } else if (sig < 0 && errno == EAGAIN && !hold &&
                   (!after || carved_http_state_served() != served_at_tick)) {
            served_at_tick = carved_http_state_served();
            publish(base, ++tick);
        }
    }
    carved_http_stop();
    json_decref(base);
    json_decref(next);
    return 0;
}
