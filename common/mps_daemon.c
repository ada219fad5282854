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
                           const char *control)
{
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    snprintf(d->pipe, sizeof(d->pipe), "%s/pipe", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/log", d->dir);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    snprintf(d->control, sizeof(d->control), "%s", control ? control : "");
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
    if (!d->control[0]) {
        snprintf(err, errlen, "no %s to run", CARVE_MPS_CONTROL_NAME);
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
        close_range(3, ~0U, 0); /* a long-lived daemon keeps none of its starter's files */
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

/* The pid in the daemon's pid file: 0 with *pid, or -1 when there is no such file. */
static int pid_file(const struct carve_mps_daemon *d, long *pid)
{
    char path[PATH_MAX + 64], buf[64] = "";
    snprintf(path, sizeof(path), "%s/%s", d->pipe, CARVE_MPS_PID_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    *pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    return 0;
}

/* pid, when it runs, is this user's and looks like the daemon; else 0. */
static pid_t daemon_process(const struct carve_mps_daemon *d, long pid)
{
    if (pid <= 0 || pid > INT_MAX || !carve_proc_running((pid_t)pid))
        return 0;
    /* a daemon of ours runs as us: a reused pid may now be another user's daemon, with the
     * same name (their own, in their directory), which is neither reused nor sent a quit */
    uid_t uid;
    gid_t gid;
    if (carve_proc_ids((pid_t)pid, &uid, &gid) == 0 && uid != geteuid())
        return 0;
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, comm, sizeof(comm) - 1);
        close(fd);
        comm[n > 0 ? n : 0] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        const char *base = strrchr(d->control, '/');
        base = base ? base + 1 : d->control;
        /* comm is the name cut to 15 characters: the driver's, or CARVE_MPS_CONTROL's */
        if (*comm && strncmp(comm, "nvidia-cuda-mps", 15) != 0 &&
            (!*base || strncmp(comm, base, 15) != 0))
            return 0;
    }
    return (pid_t)pid;
}

pid_t carve_mps_daemon_pid(const struct carve_mps_daemon *d)
{
    long pid;
    return pid_file(d, &pid) == 0 ? daemon_process(d, pid) : 0;
}

int carve_mps_daemon_alive(const struct carve_mps_daemon *d)
{
    long pid;
    if (pid_file(d, &pid) == 0)
        return daemon_process(d, pid) > 0; /* a daemon that wrote it and died left it */
    char path[PATH_MAX + 16], err[512];
    snprintf(path, sizeof(path), "%s/control", d->pipe);
    if (access(path, F_OK) < 0)
        return 0;
    if (!d->control[0])
        return 1; /* no one to ask: it may run */
    /* a daemon that writes no pid file (older drivers): ask it */
    return carve_mps_control_run(d, NULL, "get_server_list\n", err, sizeof(err)) == 0;
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
    char ran[512] = "", said[256];
    clear_pipe_dir(d);
    int rc = carve_mps_control_run(d, "-d", NULL, ran, sizeof(ran));
    for (int waited = 0; rc == 0 && waited < START_WAIT_MS; waited += 20) {
        if (carve_mps_daemon_alive(d))
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
    return -EIO;
}

int carve_mps_daemon_stop(const struct carve_mps_daemon *d, char *err, size_t errlen)
{
    if (!carve_mps_daemon_alive(d))
        return 0; /* it ended by itself (or was stopped by hand) */
    pid_t pid = carve_mps_daemon_pid(d);
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
    if (kept == 0 && carve_mps_daemon_stop(d, why, sizeof(why)) < 0)
        add_message(err, errlen, why);
    /* a job step's directory is its own (carve_mps_dir_name): it goes with the step's last
       client, so that steps do not leave one each on the node; the user's own stays */
    if (kept == 0 && remove && !carve_mps_daemon_alive(d))
        carve_mps_remove_dir(d->dir);
    carve_mps_unlock(lock);
    return kept;
}

/* carve_mps_end_step's work on one directory, name in mine (fd: mine, open). */
static void end_one(int fd, const char *mine, const char *name, const char *uuid,
                    const char *control, carve_mps_note_fn note, void *arg)
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
    carve_mps_daemon_init(d, path, uuid, control);
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
                                     "%d), which outlived the step%s%s",
                 path, (int)daemon, why[0] ? "; " : "", why);
    else
        snprintf(text, sizeof(text), "removed %s%s%s", path, why[0] ? "; " : "", why);
    note(arg, n < 0 || (n == 0 && !gone), text);
    free(d);
}

int carve_mps_end_step(const char *job, const char *step, const char *control,
                       carve_mps_note_fn note, void *arg, char *err, size_t errlen)
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
            end_one(fd, mine, e->d_name, uuid, control, note, arg);
        }
    closedir(dir);
    return found;
}
