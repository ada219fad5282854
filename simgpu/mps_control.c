/* mps_control.c - a stand-in for nvidia-cuda-mps-control on the simulated GPU, so that
 * `carve run --mode mps` runs and is tested without a GPU. It keeps the real program's
 * outward behaviour that carve relies on and writes down what happened:
 *
 *   nvidia-cuda-mps-control -d     starts a background daemon for CUDA_MPS_PIPE_DIRECTORY
 *                                  (default /tmp/nvidia-mps): writes the pid file and a
 *                                  `control' fifo there and a control.log in
 *                                  CUDA_MPS_LOG_DIRECTORY, and starts the server's stand-in
 *                                  (mps_server.c); refuses when one already runs
 *   nvidia-cuda-mps-control        reads commands on stdin for that daemon: quit,
 *                                  get_server_list (the server's pid),
 *                                  set_default_active_thread_percentage N;
 *                                  exits 1 when no daemon runs there
 *
 * The daemon ends on `quit' (SIGUSR1 from the program told to quit: the stand-in's pipe) and
 * on SIGTERM, which CARVE_SIM_MPS_IGNORE_TERM=1 makes it ignore (a daemon that only SIGKILL
 * ends).
 *
 * Record: one line per event (ran: each run of this program, start, refused, fail, quit,
 * signal, exit, command) appended to $CARVE_SIM_STATE.mps (default
 * /dev/shm/carve-sim.UID.mps), with the variables the daemon saw. CARVE_SIM_MPS_FAIL=1 makes
 * -d fail, as a broken driver install would; CARVE_SIM_MPS_STOP_SENDER=1 makes the daemon
 * stop (SIGSTOP) whoever sends it SIGTERM, and record it. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim_mps.h"

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static void log_line(const char *msg)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/control.log", env_or("CUDA_MPS_LOG_DIRECTORY",
                                                          "/var/log/nvidia-mps"));
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "[simulated control %d] %s\n", (int)getpid(), msg);
        fclose(f);
    }
}

/* The server, started beside this program (its stand-in, mps_server.c), with the pid in
 * SIM_MPS_SERVER_PID_FILE for get_server_list; 0 when it cannot be started. The real daemon
 * starts its server at the first client's connection; starting it with the daemon keeps the
 * stand-in simple and lists it in NVML for as long as any client may run. */
static pid_t start_server(void)
{
    char self[2048], path[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return 0;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-server", self);
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl(path, "nvidia-cuda-mps-server", (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        return 0;
    sim_mps_pipe_path(path, sizeof(path), SIM_MPS_SERVER_PID_FILE);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", (int)pid);
        fclose(f);
    }
    sim_mps_record("server pid=%d", (int)pid);
    return pid;
}

/* The name of process pid (spaces as '_', so that it stays one word of the record) and its
 * parent's pid, from /proc/PID/stat: the name is what lies between the first '(' and the
 * last ')', as a name may hold either. "?" and 0 when it cannot be read. */
static void proc_name(pid_t pid, char *name, size_t len, int *ppid)
{
    char path[64], line[512];
    snprintf(name, len, "?");
    *ppid = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char *lp = NULL, *rp = NULL;
    if (fgets(line, sizeof(line), f) && (lp = strchr(line, '(')) &&
        (rp = strrchr(line, ')')) && rp > lp) {
        snprintf(name, len, "%.*s", (int)(rp - lp - 1), lp + 1);
        for (char *c = name; *c; c++)
            if (*c == ' ' || *c == '\t' || *c == '\n')
                *c = '_';
        if (sscanf(rp + 1, " %*c %d", ppid) != 1)
            *ppid = 0;
    }
    fclose(f);
}

/* The real uid of process pid, from /proc/PID/status (the owner of /proc/PID is root for a
 * process that is not dumpable), or -1. */
static long proc_uid(pid_t pid)
{
    char path[64], line[256];
    long uid = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Uid: %ld", &uid) == 1)
            break;
    fclose(f);
    return uid;
}

/* Stops (SIGSTOP) the process that sent SIGTERM, as its user could while it waits for the
 * daemon to end (CARVE_SIM_MPS_STOP_SENDER=1: a test of the Slurm plugin's step end, which
 * must kill such a stopped child; a test that looked for it by polling `ps` missed it on a
 * loaded machine), and records what it was: its name, user and parent's name, and when. */
static void stop_process(pid_t who)
{
    char comm[64], parent[64];
    int ppid, grand;
    proc_name(who, comm, sizeof(comm), &ppid);
    proc_name(ppid, parent, sizeof(parent), &grand);
    long uid = proc_uid(who);
    int rc = kill(who, SIGSTOP);
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    sim_mps_record("stopped sender=%d comm=%s uid=%ld parent=%s at=%lld.%09ld%s", (int)who, comm,
                   uid, parent, (long long)at.tv_sec, at.tv_nsec, rc == 0 ? "" : " (failed)");
}

/* The daemon: announces itself, then waits for SIGUSR1 (what `quit' sends) or SIGTERM and
 * cleans up. */
static void daemon_main(int ready_fd)
{
    char path[4096], pid[32];
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int ignore_term = strcmp(env_or("CARVE_SIM_MPS_IGNORE_TERM", "0"), "1") == 0;
    setsid();
    sim_mps_pipe_path(path, sizeof(path), "control");
    unlink(path);
    mkfifo(path, 0600);
    sim_mps_pipe_path(path, sizeof(path), SIM_MPS_PID_FILE);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    char cwd[4096];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    sim_mps_record("start pid=%s cwd=%s", pid, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
    log_line("Starting control daemon (simulated)");
    pid_t server = start_server();
    if (write(ready_fd, "1", 1) < 0)
        _exit(1);
    close(ready_fd);
    bool stop_sender = strcmp(env_or("CARVE_SIM_MPS_STOP_SENDER", "0"), "1") == 0;
    for (;;) {
        siginfo_t info;
        if (sigwaitinfo(&set, &info) < 0)
            continue;
        if (info.si_signo == SIGUSR1)
            break;
        sim_mps_record("signal TERM pid=%s%s", pid, ignore_term ? " ignored" : "");
        if (stop_sender && info.si_code == SI_USER && info.si_pid > 0)
            stop_process(info.si_pid);
        if (!ignore_term)
            break;
    }
    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
        char spath[4096];
        sim_mps_pipe_path(spath, sizeof(spath), SIM_MPS_SERVER_PID_FILE);
        unlink(spath);
    }
    unlink(path);
    sim_mps_pipe_path(path, sizeof(path), "control");
    unlink(path);
    sim_mps_record("exit pid=%s", pid);
    log_line("Exiting");
    _exit(0);
}

static int start_daemon(void)
{
    if (strcmp(env_or("CARVE_SIM_MPS_FAIL", "0"), "1") == 0) {
        sim_mps_record("fail");
        fprintf(stderr, "nvidia-cuda-mps-control (simulated): cannot start "
                        "(CARVE_SIM_MPS_FAIL=1)\n");
        return 1;
    }
    pid_t other = sim_mps_daemon();
    if (other) {
        sim_mps_record("refused other=%ld", (long)other);
        fprintf(stderr, "An instance of this daemon is already running\n");
        return 1;
    }
    int ready[2];
    if (pipe(ready) < 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(ready[0]);
        /* stdio to /dev/null, as a daemon's are: no one waits on this program's output */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            close(null);
        }
        daemon_main(ready[1]);
    }
    close(ready[1]);
    char c;
    ssize_t n = read(ready[0], &c, 1);
    close(ready[0]);
    return n == 1 ? 0 : 1;
}

static int quit_daemon(pid_t pid)
{
    sim_mps_record("quit pid=%ld", (long)pid);
    kill(pid, SIGUSR1);
    for (int i = 0; i < 500 && sim_mps_running(pid); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int commands(void)
{
    pid_t pid = sim_mps_daemon();
    if (!pid) {
        fprintf(stderr, "Cannot find MPS control daemon process\n");
        return 1;
    }
    char line[256];
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "quit") == 0)
            return quit_daemon(pid);
        if (strcmp(line, "get_server_list") == 0) {
            char path[4096], server[32];
            sim_mps_pipe_path(path, sizeof(path), SIM_MPS_SERVER_PID_FILE);
            FILE *f = fopen(path, "r");
            if (f && fgets(server, sizeof(server), f))
                fputs(server, stdout);
            if (f)
                fclose(f);
            continue;
        }
        if (strncmp(line, "set_default_active_thread_percentage ", 37) == 0) {
            sim_mps_record("command %s", line);
            printf("%s\n", line + 37);
            continue;
        }
        if (*line)
            printf("Unknown command: %s\n", line);
    }
    return 0;
}

int main(int argc, char **argv)
{
    sim_mps_record("ran pid=%d uid=%d arg=%s", (int)getpid(), (int)getuid(),
                   argc > 1 ? argv[1] : "-");
    if (argc == 1)
        return commands();
    if (argc == 2 && strcmp(argv[1], "-d") == 0)
        return start_daemon();
    fprintf(stderr, "usage: nvidia-cuda-mps-control [-d]\n"
                    "carve's stand-in for the MPS control program on the simulated GPU; "
                    "commands on stdin: quit, get_server_list, "
                    "set_default_active_thread_percentage N\n");
    return 1;
}
