/* clock_step.c - an LD_PRELOAD library that steps a process's wall clock, as NTP or an
 * operator's `date -s` steps the machine's, without touching the machine's: CLOCK_REALTIME
 * (and gettimeofday, time) read the real clock plus the seconds, signed, written in the file
 * CLOCK_STEP_FILE names (none, or no file: no step). CLOCK_MONOTONIC is left alone.
 * carved_reclaim.sh steps carved's clock forward and back. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

/* the build hides symbols by default; these must be seen to stand in for libc's */
#define INTERPOSE __attribute__((visibility("default")))

static long step_seconds(void)
{
    const char *path = getenv("CLOCK_STEP_FILE");
    FILE *f = path ? fopen(path, "re") : NULL;
    long s = 0;
    if (f) {
        if (fscanf(f, "%ld", &s) != 1)
            s = 0;
        fclose(f);
    }
    return s;
}

INTERPOSE int clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
        ts->tv_sec += step_seconds();
    return r;
}

INTERPOSE int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

INTERPOSE time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
