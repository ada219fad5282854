/* mps_daemon.c - one GPU's MPS control daemon: started, asked, stopped and left by carve run
 * and by a Slurm job step's end; see mps_daemon.h. */
#include "mps_daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mps.h"
#include "proc.h"

extern char **environ;

#define CONTROL_TIMEOUT_MS 20000 /* one nvidia-cuda-mps-control command */
#define START_WAIT_MS 10000      /* for a started daemon's pipe to appear */
#define STOP_WAIT_MS 10000       /* for a daemon told to quit to be gone */
#define TERM_GRACE_MS 1000       /* SIGTERM to SIGKILL, where nothing is run (a step's end) */
#define KILL_WAIT_MS 1000        /* for what SIGKILL ends to be gone */
#define START_SLACK_S 2          /* a daemon's start and its pid file's time, on two clocks */
#define MAX_SERVERS 16           /* MPS servers of one daemon that are stopped with it */
#define MPS_COMM "nvidia-cuda-mps" /* the driver's programs' names as the kernel cuts them */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Adds text to the message in err, after what is there ("; " between). */
static void add_message(char *err, size_t errlen, const char *text)
{
    size_t used = strlen(err);
    if (!*text || used + 3 >= errlen)
        return;
    snprintf(err + used, errlen - used, "%s%s", used ? "; " : "", text);
}

void carve_mps_daemon_init(struct carve_mps_daemon *d, const char *dir, const char *uuid,
                           const char *control, bool may_exec)
{
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    snprintf(d->pipe, sizeof(d->pipe), "%s/pipe", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/log", d->dir);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    snprintf(d->control, sizeof(d->control), "%s", control ? control : "");
    d->may_exec = may_exec;
}

/* ---------- the control program ---------- */

int carve_find_in_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *save = NULL;
    for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", *d ? d : ".", name);
        if (access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

const char *carve_mps_control_find(bool simulate, const char *libdir, char *out, size_t len)
{
    const char *env = getenv("CARVE_MPS_CONTROL");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, X_OK) == 0 ? NULL : "CARVE_MPS_CONTROL";
    }
    if (simulate) {
        snprintf(out, len, "%s/sim/bin/%s", libdir, CARVE_MPS_CONTROL_NAME);
        return access(out, X_OK) == 0 ? NULL : "simulated";
    }
    return carve_find_in_path(CARVE_MPS_CONTROL_NAME, out, len) == 0 ? NULL : "PATH";
}

/* The daemon's environment: the caller's, for its one GPU and private directories, without
 * a client's limits (the daemon serves every client) or a slice around it. */
static char **control_env(const struct carve_mps_daemon *d)
{
    static const char *const dropped[] = {
        "CUDA_VISIBLE_DEVICES=", "CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY=",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=",
        "CUDA_MPS_CLIENT_PRIORITY=", "LD_PRELOAD=", "CARVE_SLICE=",
    };
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 4, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int keep = 1;
        for (size_t x = 0; x < sizeof(dropped) / sizeof(dropped[0]); x++)
            keep &= strncmp(environ[i], dropped[x], strlen(dropped[x])) != 0;
        if (keep)
            env[k++] = environ[i];
    }
    if (asprintf(&env[k++], "CUDA_VISIBLE_DEVICES=%s", d->uuid) < 0 ||
        asprintf(&env[k++], "CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe) < 0 ||
        asprintf(&env[k++], "CUDA_MPS_LOG_DIRECTORY=%s", d->log) < 0) {
        free(env); /* the few strings made so far are lost: the caller ends soon after */
        return NULL;
    }
    return env;
}

static void free_env(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "CUDA_VISIBLE_DEVICES=", 21) == 0 ||
            strncmp(env[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) == 0 ||
            strncmp(env[i], "CUDA_MPS_LOG_DIRECTORY=", 23) == 0)
            free(env[i]);
    free(env);
}

int carve_mps_control_run(const struct carve_mps_daemon *d, const char *arg, const char *input,
                          char *err, size_t errlen)
{
    char logpath[PATH_MAX + 32];
    snprintf(logpath, sizeof(logpath), "%s/carve-control.log", d->log);
    if (!d->may_exec || !d->control[0]) {
        snprintf(err, errlen, "no %s to run%s", CARVE_MPS_CONTROL_NAME,
                 d->may_exec ? "" : " here (none is run at a Slurm step's end)");
        return -1;
    }
    char **env = control_env(d);
    int in[2] = {-1, -1};
    int out = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (!env || out < 0 || pipe2(in, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot run %s: %s", d->control, strerror(errno));
        free_env(env);
        if (out >= 0)
            close(out);
        return -1;
    }
    char *argv[] = {(char *)d->control, (char *)arg, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out, 1);
        dup2(out, 2);
        carve_close_from(3); /* a long-lived daemon keeps none of its starter's files */
        setsid(); /* a daemon it starts is no part of its starter's terminal session */
        /* nor keeps the first client's working directory busy (an unmount, a deleted dir);
         * its paths are absolute (cli/mode_mps.c makes them so) */
        if (chdir("/") < 0)
            _exit(127);
        execve(d->control, argv, env);
        dprintf(2, "carve: cannot run %s: %s\n", d->control, strerror(errno));
        _exit(127);
    }
    int forked = errno;
    close(in[0]);
    close(out);
    free_env(env);
    if (pid < 0) {
        close(in[1]);
        snprintf(err, errlen, "cannot run %s: %s", d->control, strerror(forked));
        return -1;
    }
    if (input) {
        /* SIGPIPE ignored meanwhile: it may have ended already, and its status tells */
        void (*old)(int) = signal(SIGPIPE, SIG_IGN);
        ssize_t w = write(in[1], input, strlen(input));
        (void)w;
        signal(SIGPIPE, old);
    }
    close(in[1]);
    int status;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(err, errlen, "cannot wait for %s: %s", d->control, strerror(errno));
            return -1;
        }
        if (waited >= CONTROL_TIMEOUT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(err, errlen, "%s %s did not finish in %d s; stopped it", d->control,
                     arg ? arg : input, CONTROL_TIMEOUT_MS / 1000);
            return -1;
        }
        sleep_ms(10);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---------- whether the daemon runs ---------- */

/* The pipe directory, not followed: its fd, or -1 when there is none or a link is in its
 * place (no daemon that carve started keeps its pipes there; nothing it names is read). */
static int open_pipe_dir(const struct carve_mps_daemon *d)
{
    return open(d->pipe, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The daemon's pid file in pipe directory dir: 0 with its pid and the time it was written,
 * or -1 when there is none (nor a regular file of that name). */
static int pid_file(int dir, long *pid, struct timespec *written)
{
    char buf[64] = "";
    struct stat st;
    int fd = dir < 0 ? -1 : openat(dir, CARVE_MPS_PID_FILE,
                                   O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    *pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    *written = st.st_mtim;
    return 0;
}

/* pid started no later than the pid file was written, START_SLACK_S allowed: a pid that the
 * kernel gave again after the daemon ended started after its file. The start time counts
 * clock ticks since boot, the file's time is the wall clock's: compared on the first. An
 * unknown start proves nothing, and is not taken. */
static bool started_by(pid_t pid, const struct timespec *written)
{
    struct carve_proc_stat st;
    struct timespec real, boot;
    long tick = sysconf(_SC_CLK_TCK);
    if (carve_proc_stat(pid, &st) < 0 || st.start == 0 || tick <= 0 ||
        clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
        return false;
    double age = (double)(real.tv_sec - written->tv_sec) +
                 (double)(real.tv_nsec - written->tv_nsec) / 1e9;
    double at_boot = (double)boot.tv_sec + (double)boot.tv_nsec / 1e9 - age;
    return (double)st.start / (double)tick <= at_boot + START_SLACK_S;
}

/* pid runs, is this user's (its status says so: an unreadable one proves nothing) and is
 * named as the daemon: the driver's name, or with may_exec the control program's own (cut to
 * 15 characters, as the kernel keeps it; CARVE_MPS_CONTROL's stand-ins). */
static bool ours_named(const struct carve_mps_daemon *d, pid_t pid)
{
    uid_t uid;
    gid_t gid;
    struct carve_proc_stat st;
    if (!carve_proc_running(pid) || carve_proc_ids(pid, &uid, &gid) < 0 || uid != geteuid() ||
        carve_proc_stat(pid, &st) < 0)
        return false;
    if (strncmp(st.comm, MPS_COMM, strlen(MPS_COMM)) == 0)
        return true;
    const char *base = strrchr(d->control, '/');
    base = base ? base + 1 : d->control;
    return d->may_exec && *base && strncmp(st.comm, base, sizeof(st.comm) - 1) == 0;
}

/* pid, when it is the daemon that wrote the pid file at written; else 0. A pid reused by
 * another user's daemon (their own, in their directory) or by a later one of ours is
 * neither reused nor stopped. */
static pid_t daemon_process(const struct carve_mps_daemon *d, long pid,
                            const struct timespec *written)
{
    if (pid <= 0 || pid > INT_MAX || !ours_named(d, (pid_t)pid) ||
        !started_by((pid_t)pid, written))
        return 0;
    return (pid_t)pid;
}

pid_t carve_mps_daemon_pid(const struct carve_mps_daemon *d)
{
    long pid;
    struct timespec written;
    int dir = open_pipe_dir(d);
    pid_t found = pid_file(dir, &pid, &written) == 0 ? daemon_process(d, pid, &written) : 0;
    if (dir >= 0)
        close(dir);
    return found;
}

/* Calls fn for each process /proc lists until it returns other than 0: that, 0 when it never
 * did, or -1 when /proc cannot be read. */
static int each_process(int (*fn)(pid_t pid, void *arg), void *arg)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return -1;
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (end != e->d_name && !*end && pid > 0 && pid <= INT_MAX)
            r = fn((pid_t)pid, arg);
    }
    closedir(proc);
    return r;
}

/* pid is this user's and named nvidia-cuda-mps... (the driver's control daemon or server). */
static bool ours_mps(pid_t pid, struct carve_proc_stat *st)
{
    uid_t uid;
    gid_t gid;
    return carve_proc_stat(pid, st) == 0 && strncmp(st->comm, MPS_COMM, strlen(MPS_COMM)) == 0 &&
           carve_proc_ids(pid, &uid, &gid) == 0 && uid == geteuid();
}

struct pid_file_seen {
    long pid;
    const struct timespec *written;
};

/* each_process's test for nested_daemon: 1 for such a process, -1 for one of this user so
 * named whose namespaces cannot be read. */
static int nested_one(pid_t pid, void *arg)
{
    const struct pid_file_seen *f = arg;
    struct carve_proc_stat st;
    pid_t inner;
    if (!ours_mps(pid, &st))
        return 0;
    int depth = carve_proc_ns_pid(pid, &inner);
    if (depth < 0)
        return -1;
    return depth > 1 && inner == f->pid && started_by(pid, f->written);
}

/* Whether a daemon of ours may be the pid file's in a PID namespace below this one (a
 * container's, sharing BASE), where the file's pid is its own: a process of this user named
 * nvidia-cuda-mps... whose pid there is pid, started by the file's time. 1 (or -1 when /proc
 * cannot be read, or one such process's namespaces cannot: neither can be judged), else 0. */
static int nested_daemon(long pid, const struct timespec *written)
{
    struct pid_file_seen f = {pid, written};
    return each_process(nested_one, &f);
}

int carve_mps_daemon_alive(const struct carve_mps_daemon *d, char *err, size_t errlen)
{
    long pid = 0;
    struct timespec written;
    struct stat st;
    err[0] = '\0';
    int dir = open_pipe_dir(d);
    int have_file = pid_file(dir, &pid, &written) == 0;
    bool ours = have_file && daemon_process(d, pid, &written) > 0;
    bool has_pipe = dir >= 0 && fstatat(dir, "control", &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (dir >= 0)
        close(dir);
    if (ours)
        return 1;
    if (!has_pipe)
        return 0; /* a daemon that wrote a pid file and died left it, the pipe gone */
    if (d->may_exec && d->control[0]) {
        /* ask it: one that writes no pid file (older drivers), or whose pid is another PID
           namespace's (a container sharing BASE) */
        char ran[512] = "";
        int rc = carve_mps_control_run(d, NULL, "get_server_list\n", ran, sizeof(ran));
        if (rc == 0)
            return 1;
        /* the control program said no daemon answers (its exit status): none. One that
           could not be run, or that hung and was killed, says nothing of the daemon, which
           may run still: taken for none, its pipes were cleared and a second daemon started
           over it, the first left for good (a review's finding, 2026-11-29) */
        if (rc > 0) {
            snprintf(err, errlen, "%s", ran);
            return 0;
        }
        snprintf(err, errlen, "whether the MPS control daemon of %s runs cannot be told (%s)",
                 d->uuid, ran);
        return -EAGAIN;
    }
    if (!have_file) {
        snprintf(err, errlen, "%s has a control pipe and no %s: whether its MPS control "
                              "daemon runs cannot be told without running %s%s", d->pipe,
                 CARVE_MPS_PID_FILE, CARVE_MPS_CONTROL_NAME,
                 d->may_exec ? ", and there is none" : ", which is not run here");
        return -EAGAIN;
    }
    if (!d->may_exec && pid > 0 && pid <= INT_MAX && ours_named(d, (pid_t)pid)) {
        /* a pid given again, or the daemon itself under a clock set forward since */
        snprintf(err, errlen, "%s names pid %ld, a process of yours named %s... that started "
                              "after the file was written: whether it is the MPS control "
                              "daemon cannot be told", CARVE_MPS_PID_FILE, pid, MPS_COMM);
        return -EAGAIN;
    }
    int nested = d->may_exec ? 0 : nested_daemon(pid, &written);
    if (nested > 0)
        snprintf(err, errlen, "its MPS control daemon may run in another PID namespace: %s "
                              "names pid %ld, which a process of yours named %s... has there",
                 CARVE_MPS_PID_FILE, pid, MPS_COMM);
    else if (nested < 0)
        snprintf(err, errlen, "whether its MPS control daemon (pid %ld in %s) runs in another "
                              "PID namespace cannot be told from /proc", pid, CARVE_MPS_PID_FILE);
    else if (d->may_exec)
        snprintf(err, errlen, "the MPS control daemon of %s may run (%s names pid %ld, which "
                              "is not it here) and there is no %s to ask", d->uuid,
                 CARVE_MPS_PID_FILE, pid, CARVE_MPS_CONTROL_NAME);
    else
        return 0; /* the file's pid is final: its daemon ended (SIGKILL with its step) */
    return -EAGAIN;
}

/* ---------- starting and stopping ---------- */

/* Empties the pipe directory of what a dead daemon left. */
static void clear_pipe_dir(const struct carve_mps_daemon *d)
{
    DIR *dir = opendir(d->pipe);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(dir), e->d_name, 0);
    closedir(dir);
}

/* The last line nvidia-cuda-mps-control wrote (carve-control.log), for an error message. */
static void last_output(const struct carve_mps_daemon *d, char *out, size_t len)
{
    char path[PATH_MAX + 32], buf[4096];
    snprintf(path, sizeof(path), "%s/carve-control.log", d->log);
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    const char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    size_t l = strlen(line) < len - 1 ? strlen(line) : len - 1;
    memcpy(out, line, l);
    out[l] = '\0';
}

int carve_mps_daemon_start(const struct carve_mps_daemon *d, char *err, size_t errlen)
{
    char ran[512] = "", asked[512] = "", said[256];
    clear_pipe_dir(d);
    int rc = carve_mps_control_run(d, "-d", NULL, ran, sizeof(ran));
    for (int waited = 0; rc == 0 && waited < START_WAIT_MS; waited += 20) {
        if (carve_mps_daemon_alive(d, asked, sizeof(asked)) > 0)
            return 0;
        sleep_ms(20);
    }
    last_output(d, said, sizeof(said));
    snprintf(err, errlen, "%s -d did not start an MPS control daemon for %s (%s%d%s)%s%s%s; "
                          "see %s/carve-control.log and %s/control.log",
             d->control, d->uuid, rc == 0 ? "no pipe after " : "exit status ",
             rc == 0 ? START_WAIT_MS / 1000 : rc, rc == 0 ? " s" : "", *said ? ": `" : "",
             said, *said ? "'" : "", d->log, d->log);
    add_message(err, errlen, ran);
    add_message(err, errlen, asked);
    return -EIO;
}

struct servers_seen {
    pid_t daemon;
    struct carve_mps_proc *out;
    int n, max;
};

/* each_process's test for find_servers: notes a server of the daemon; 1 once full. */
static int server_one(pid_t pid, void *arg)
{
    struct servers_seen *s = arg;
    struct carve_proc_stat st;
    if (ours_mps(pid, &st) && st.ppid == s->daemon &&
        carve_proc_is_mps_server(pid, geteuid()) == 1)
        s->out[s->n++] = (struct carve_mps_proc){pid, st.start};
    return s->n == s->max;
}

/* The MPS servers of daemon: its children of this user that run nvidia-cuda-mps-server (the
 * file, not a name anyone can give a program), with their start times; at most max. */
static int find_servers(pid_t daemon, struct carve_mps_proc *out, int max)
{
    struct servers_seen s = {daemon, out, 0, max};
    each_process(server_one, &s);
    return s.n;
}

/* Sends sig to those of procs that are still the same processes. */
static void signal_all(const struct carve_mps_proc *procs, int n, int sig)
{
    for (int i = 0; i < n; i++)
        if (carve_proc_alive_since(procs[i].pid, procs[i].start))
            kill(procs[i].pid, sig);
}

/* Waits up to ms for procs to be gone; true when all are. */
static bool wait_gone(const struct carve_mps_proc *procs, int n, long ms)
{
    for (long waited = 0;; waited += 20) {
        bool any = false;
        for (int i = 0; i < n; i++)
            any |= carve_proc_alive_since(procs[i].pid, procs[i].start) != 0;
        if (!any)
            return true;
        if (waited >= ms)
            return false;
        sleep_ms(20);
    }
}

/* Stops daemon pid and its servers without running anything: SIGTERM, then SIGKILL to what
 * is left after TERM_GRACE_MS. */
static int signal_stop(const struct carve_mps_daemon *d, pid_t pid, char *err, size_t errlen)
{
    struct carve_mps_proc procs[1 + MAX_SERVERS];
    struct carve_proc_stat st;
    /* pid was proven the daemon a moment ago; from here on it is this start time's */
    if (pid <= 0 || carve_proc_stat(pid, &st) < 0)
        return 0; /* it ended meanwhile */
    procs[0] = (struct carve_mps_proc){pid, st.start};
    int n = 1 + find_servers(pid, procs + 1, MAX_SERVERS);
    signal_all(procs, n, SIGTERM);
    if (wait_gone(procs, n, TERM_GRACE_MS))
        return 0;
    signal_all(procs, n, SIGKILL);
    wait_gone(procs, n, KILL_WAIT_MS);
    if (carve_proc_alive_since(pid, procs[0].start)) {
        snprintf(err, errlen, "the MPS control daemon of %s (pid %d) still runs after SIGTERM "
                              "and SIGKILL", d->uuid, (int)pid);
        return -EBUSY;
    }
    snprintf(err, errlen, "it did not end within %d s of SIGTERM: SIGKILL", TERM_GRACE_MS / 1000);
    for (int i = 1; i < n; i++)
        if (carve_proc_alive_since(procs[i].pid, procs[i].start)) {
            char text[128];
            snprintf(text, sizeof(text), "its MPS server (pid %d) still runs after SIGKILL",
                     (int)procs[i].pid);
            add_message(err, errlen, text);
        }
    return 0;
}

int carve_mps_daemon_stop(const struct carve_mps_daemon *d, char *err, size_t errlen)
{
    char asked[512];
    err[0] = '\0';
    int alive = carve_mps_daemon_alive(d, asked, sizeof(asked));
    if (alive == 0) { /* it ended by itself (or was stopped by hand) */
        snprintf(err, errlen, "%s", asked);
        return 0;
    }
    if (alive < 0) {
        snprintf(err, errlen, "%s; left as it is", asked);
        return -EBUSY;
    }
    pid_t pid = carve_mps_daemon_pid(d);
    if (!d->may_exec)
        return signal_stop(d, pid, err, errlen);
    if (!d->control[0]) {
        snprintf(err, errlen, "the MPS control daemon of %s runs (pid %d) and there is no %s "
                              "to stop it", d->uuid, (int)pid, CARVE_MPS_CONTROL_NAME);
        return -ENOENT;
    }
    char ran[512] = "";
    int rc = carve_mps_control_run(d, NULL, "quit\n", ran, sizeof(ran));
    for (int waited = 0; pid > 0 && waited < STOP_WAIT_MS; waited += 20) {
        if (!carve_proc_running(pid))
            return 0;
        sleep_ms(20);
    }
    if (pid == 0 && rc == 0)
        return 0; /* a daemon without a pid file took the quit */
    snprintf(err, errlen, "the MPS control daemon of %s %s after `quit' (status %d); see "
                          "%s/carve-control.log", d->uuid,
             pid > 0 ? "still runs" : "may still run", rc, d->log);
    add_message(err, errlen, ran);
    return -EBUSY;
}

/* ---------- leaving ---------- */

int carve_mps_release(const struct carve_mps_daemon *d, pid_t leaving, bool remove, char *err,
                      size_t errlen)
{
    struct carve_mps_client clients[CARVE_MPS_MAX_CLIENTS];
    char why[1024] = "";
    err[0] = '\0';
    int lock = carve_mps_lock(d->dir, err, errlen);
    if (lock < 0)
        return lock;
    err[0] = '\0';
    /* gone clients are dropped as the list is read; a list that cannot be read is empty */
    int n = carve_mps_clients_load(d->dir, clients, CARVE_MPS_MAX_CLIENTS, why, sizeof(why));
    add_message(err, errlen, why);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (leaving <= 0 || clients[i].pid != leaving)
            clients[kept++] = clients[i];
    why[0] = '\0';
    if (carve_mps_clients_store(d->dir, clients, kept, why, sizeof(why)) < 0)
        add_message(err, errlen, why);
    why[0] = '\0';
    int stopped = kept == 0 ? carve_mps_daemon_stop(d, why, sizeof(why)) : -EBUSY;
    add_message(err, errlen, why); /* why it runs, or a warning: SIGKILL, a hung control */
    /* a job step's directory is its own (carve_mps_dir_name): it goes with the step's last
       client, so that steps do not leave one each on the node; the user's own stays. Not
       while its daemon runs or may (carve run asks once more: a daemon that took `quit'
       without a pid file may still be ending) */
    if (stopped == 0 && remove) {
        why[0] = '\0';
        int alive = carve_mps_daemon_alive(d, why, sizeof(why));
        add_message(err, errlen, why);
        if (alive == 0)
            carve_mps_remove_dir(d->dir);
    }
    carve_mps_unlock(lock);
    return kept;
}

/* carve_mps_end_step's work on one directory, name in mine (fd: mine, open). */
static void end_one(int fd, const char *mine, const char *name, const char *uuid,
                    carve_mps_note_fn note, void *arg)
{
    char path[PATH_MAX], text[PATH_MAX + 2048], why[1536] = "";
    struct stat st;
    struct carve_mps_daemon *d = malloc(sizeof(*d));
    int w = snprintf(path, sizeof(path), "%s/%s", mine, name);
    if (!d || w < 0 || (size_t)w >= sizeof(d->dir)) {
        snprintf(text, sizeof(text), "%s/%.200s: not removed: %s", mine, name,
                 d ? "too long a path" : "out of memory");
        note(arg, true, text);
        free(d);
        return;
    }
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        free(d);
        return; /* gone meanwhile */
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(text, sizeof(text), "%s is not a directory (a %s), so not carve's: left as it is",
                 path, S_ISLNK(st.st_mode) ? "symbolic link" : "file");
        note(arg, true, text);
        free(d);
        return;
    }
    carve_mps_daemon_init(d, path, uuid, NULL, false); /* nothing is run here */
    pid_t daemon = carve_mps_daemon_pid(d);
    int n = carve_mps_release(d, 0, true, why, sizeof(why));
    bool gone = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
    if (n < 0 || (n == 0 && !gone))
        snprintf(text, sizeof(text), "%s: not removed: %s", path,
                 why[0] ? why : "its MPS control daemon still runs");
    else if (n > 0)
        snprintf(text, sizeof(text), "%s: left: %d of its carve run --mode mps clients still "
                                     "run%s%s", path, n, why[0] ? "; " : "", why);
    else if (daemon > 0)
        snprintf(text, sizeof(text), "removed %s, after stopping its MPS control daemon (pid "
                                     "%d) by signal, which outlived the step%s%s",
                 path, (int)daemon, why[0] ? "; " : "", why);
    else
        snprintf(text, sizeof(text), "removed %s%s%s", path, why[0] ? "; " : "", why);
    note(arg, n < 0 || (n == 0 && !gone), text);
    free(d);
}

int carve_mps_end_step(const char *job, const char *step, carve_mps_note_fn note, void *arg,
                       char *err, size_t errlen)
{
    char mine[PATH_MAX], uuid[96];
    int r = carve_mps_user_dir(false, mine, sizeof(mine), err, errlen);
    if (r == -ENOENT)
        return 0; /* no carve run --mode mps of this user made it */
    if (r < 0)
        return r;
    int fd = open(mine, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s: %s", mine, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    int found = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (carve_mps_dir_of_step(e->d_name, job, step, uuid, sizeof(uuid))) {
            found++;
            end_one(fd, mine, e->d_name, uuid, note, arg);
        }
    closedir(dir);
    return found;
}
