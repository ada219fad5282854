/* sim_mps.c - the simulated GPU's MPS record and daemon lookup; see sim_mps.h. */
#include "sim_mps.h"

#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

const char *sim_mps_pipe_dir(void)
{
    return env_or("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
}

void sim_mps_pipe_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", sim_mps_pipe_dir(), name);
}

/* 1 when pid runs (not exited, not a zombie awaiting its reaper) and, with name, is called
 * name (comm, cut to 15 characters). */
static int running_as(pid_t pid, const char *name)
{
    struct carve_proc_stat st;
    if (!carve_proc_running(pid))
        return 0;
    return !name || (carve_proc_stat(pid, &st) == 0 && strncmp(st.comm, name, 15) == 0);
}

int sim_mps_running(pid_t pid)
{
    return running_as(pid, NULL);
}

/* 1 when pid's CUDA_MPS_PIPE_DIRECTORY (the default when unset) is ours: the real program
 * reaches its daemon through PIPE/control, so a daemon of another pipe directory (another
 * user's, whose pid a stale pid file of ours names) is not found, and one whose environment
 * we may not read (another user's, to a user) is not ours to reach either. */
static int serves_our_pipe(pid_t pid)
{
    char path[64], env[65536];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = 0, r;
    while ((size_t)n < sizeof(env) - 1 && (r = read(fd, env + n, sizeof(env) - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    env[n] = '\0';
    const char *theirs = "/tmp/nvidia-mps", *key = "CUDA_MPS_PIPE_DIRECTORY=";
    for (const char *e = env; e < env + n; e += strlen(e) + 1)
        if (strncmp(e, key, strlen(key)) == 0 && e[strlen(key)])
            theirs = e + strlen(key);
    return strcmp(theirs, sim_mps_pipe_dir()) == 0;
}

pid_t sim_mps_daemon(void)
{
    char path[4096], buf[32] = "";
    sim_mps_pipe_path(path, sizeof(path), SIM_MPS_PID_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    /* a pid file left by a dead daemon may name a reused pid: the real program finds its
       daemon through the control socket, so a live stranger is no daemon (and is never sent
       a quit), and neither is an exited daemon that its reaper has not collected yet */
    if (pid <= 0 || pid > INT_MAX || !running_as((pid_t)pid, "nvidia-cuda-mps-control") ||
        !serves_our_pipe((pid_t)pid))
        return 0;
    return (pid_t)pid;
}

void sim_mps_record(const char *fmt, ...)
{
    char path[4096], line[2048], what[512];
    const char *state = getenv("CARVE_SIM_STATE");
    if (state && *state)
        snprintf(path, sizeof(path), "%s.mps", state);
    else
        snprintf(path, sizeof(path), "/dev/shm/carve-sim.%u.mps", (unsigned)getuid());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    int len = snprintf(line, sizeof(line), "%s pipe=%s log=%s visible=%s threads=%s pinned=%s "
                       "priority=%s preload=%s\n", what, sim_mps_pipe_dir(),
                       env_or("CUDA_MPS_LOG_DIRECTORY", "-"), env_or("CUDA_VISIBLE_DEVICES", "-"),
                       env_or("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "-"),
                       env_or("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "-"),
                       env_or("CUDA_MPS_CLIENT_PRIORITY", "-"), env_or("LD_PRELOAD", "-"));
    /* O_APPEND: lines of concurrent writers do not mix */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (len > 0 && write(fd, line, (size_t)len) < 0)
        len = 0; /* a lost line shows as a failed check in the test that reads it */
    close(fd);
}

void sim_mps_note_client(void)
{
    const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
    if (pipe && *pipe)
        sim_mps_record("client pid=%d daemon=%d", (int)getpid(), (int)sim_mps_daemon());
}
