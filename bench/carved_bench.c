/* carved_bench.c - the load generator of bench/carved-bench.sh: many slices made through
 * carved's socket, and many `carve run` start-ups at a set rate, each timed.
 *
 *   carved_bench create SOCKET PREFIX N     N slices PREFIX-0..N-1, one connection each
 *   carved_bench call SOCKET OP             one {"op":OP} request: time and reply bytes
 *   carved_bench delete SOCKET PREFIX N     deletes them again
 *   carved_bench runs RATE COUNT MAXINFLIGHT CMD [ARGS...]
 *                                           starts CMD COUNT times at RATE per second (at
 *                                           most MAXINFLIGHT running), each timed from its
 *                                           spawn to its exit
 *
 * Each prints one line `key=value ...` (counts, errors, seconds, latency percentiles in
 * milliseconds) that the script turns into the results table. Exit status 1 when any
 * request or command failed. Requests are written by hand, replies only searched for
 * "ok":true, so that the driver's own cost stays small beside carved's. */
#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p-th percentile (nearest rank) of n sorted values, in ms */
static double pct(const double *v, int n, double p)
{
    if (n == 0)
        return 0;
    int i = (int)(p / 100.0 * n + 0.999999) - 1;
    return 1000.0 * v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void print_latencies(double *lat, int n)
{
    qsort(lat, (size_t)n, sizeof(*lat), by_value);
    printf(" p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.2f", pct(lat, n, 50), pct(lat, n, 95),
           pct(lat, n, 99), n ? 1000.0 * lat[n - 1] : 0.0);
}

/* One request on a fresh connection, as the carve CLI makes it; the reply's length, or -1.
 * ok says whether carved answered "ok":true. */
static long request(const char *path, const char *line, int *ok)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *ok = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    static char buf[1 << 16];
    long total = 0;
    char first[32] = "";
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            break;
        if (total == 0)
            snprintf(first, sizeof(first), "%.*s", (int)(r < 31 ? r : 31), buf);
        total += r;
        if (buf[r - 1] == '\n')
            break;
    }
    close(fd);
    *ok = strncmp(first, "{\"ok\":true", 10) == 0;
    return total;
}

static int create_or_delete(const char *path, const char *prefix, int n, bool create)
{
    double *lat = calloc((size_t)n, sizeof(*lat));
    int errors = 0;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        char line[256];
        if (create)
            snprintf(line, sizeof(line), "{\"op\":\"create\",\"name\":\"%s-%d\",\"memory\":\"64MiB\"}\n",
                     prefix, i);
        else
            snprintf(line, sizeof(line), "{\"op\":\"delete\",\"name\":\"%s-%d\"}\n", prefix, i);
        double t = now();
        int ok;
        if (request(path, line, &ok) < 0 || !ok) {
            if (errors++ < 3)
                fprintf(stderr, "carved_bench: %s %s-%d failed\n", create ? "create" : "delete",
                        prefix, i);
        }
        lat[i] = now() - t;
    }
    double secs = now() - t0;
    printf("%s n=%d errors=%d seconds=%.3f per_second=%.1f", create ? "create" : "delete", n,
           errors, secs, n / secs);
    print_latencies(lat, n);
    printf("\n");
    free(lat);
    return errors ? 1 : 0;
}

static int call(const char *path, const char *op)
{
    char line[128];
    snprintf(line, sizeof(line), "{\"op\":\"%s\"}\n", op);
    double lat[5];
    long bytes = 0;
    int ok = 0, errors = 0;
    for (int i = 0; i < 5; i++) {
        double t = now();
        bytes = request(path, line, &ok);
        lat[i] = now() - t;
        errors += bytes < 0 || !ok;
    }
    printf("call op=%s bytes=%ld errors=%d", op, bytes, errors);
    print_latencies(lat, 5);
    printf("\n");
    return errors ? 1 : 0;
}

struct child {
    pid_t pid;
    double start;
};

static int runs(double rate, int count, int max_inflight, char **argv)
{
    struct child *kids = calloc((size_t)max_inflight, sizeof(*kids));
    double *lat = calloc((size_t)count, sizeof(*lat));
    int started = 0, done = 0, inflight = 0, errors = 0, late = 0;
    double t0 = now();
    while (done < count) {
        double due = t0 + started / rate;
        double t = now();
        if (started < count && inflight < max_inflight && t >= due) {
            int slot = 0;
            while (kids[slot].pid)
                slot++;
            if (t - due > 0.005)
                late++; /* behind the schedule by more than 5 ms */
            if (posix_spawn(&kids[slot].pid, argv[0], NULL, NULL, argv, environ) != 0) {
                kids[slot].pid = 0;
                errors++;
                done++;
                started++;
                continue;
            }
            kids[slot].start = t;
            started++;
            inflight++;
            continue;
        }
        int status;
        pid_t pid = waitpid(-1, &status, started < count && inflight < max_inflight ? WNOHANG : 0);
        if (pid > 0) {
            for (int i = 0; i < max_inflight; i++)
                if (kids[i].pid == pid) {
                    lat[done++] = now() - kids[i].start;
                    kids[i].pid = 0;
                    inflight--;
                    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        if (errors++ < 3)
                            fprintf(stderr, "carved_bench: a run ended with status %d\n", status);
                    }
                    break;
                }
            continue;
        }
        if (pid < 0 && errno != ECHILD && errno != EINTR)
            break;
        double wait = due - now();
        if (wait > 0.0002)
            wait = 0.0002; /* poll for exits while waiting for the next start */
        if (wait > 0) {
            struct timespec ts = {0, (long)(wait * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    double secs = now() - t0;
    printf("runs asked_rate=%.0f n=%d errors=%d seconds=%.3f achieved_per_second=%.1f "
           "max_inflight=%d late_starts=%d", rate, count, errors, secs, count / secs, max_inflight,
           late);
    print_latencies(lat, done);
    printf("\n");
    free(kids);
    free(lat);
    return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && (strcmp(argv[1], "create") == 0 || strcmp(argv[1], "delete") == 0))
        return create_or_delete(argv[2], argv[3], atoi(argv[4]), argv[1][0] == 'c');
    if (argc == 4 && strcmp(argv[1], "call") == 0)
        return call(argv[2], argv[3]);
    if (argc >= 6 && strcmp(argv[1], "runs") == 0 && atof(argv[2]) > 0 && atoi(argv[3]) > 0 &&
        atoi(argv[4]) > 0)
        return runs(atof(argv[2]), atoi(argv[3]), atoi(argv[4]), argv + 5);
    fprintf(stderr, "usage: carved_bench create|delete SOCKET PREFIX N\n"
                    "       carved_bench call SOCKET OP\n"
                    "       carved_bench runs RATE COUNT MAXINFLIGHT CMD [ARGS...]\n");
    return 2;
}
