/* main.c - carved, the node daemon: reads its config, adopts or makes its slices, and then
 * serves its socket API, polls the GPUs and publishes snapshots for the HTTP side, until
 * SIGTERM or SIGINT. Slices outlive carved: a restart adopts them (registry.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "groups.h"
#include "proc.h"

#define MAX_CLIENTS 256
/* A user not among carved's admins holds at most this many of them: one user's 64 clients
 * that each sent a byte every few seconds held every slot for as long as they liked, and
 * nobody else's carve command, nor libcarve's join at a tenant's start, was answered. */
#define MAX_CLIENTS_PER_USER 16
/* The last free slots are for carved's admins only: users who together hold every other
 * slot (15 of them, at 16 each) still leave the operator a way in (carve ps, slice delete). */
#define ADMIN_SLOTS 16
#define LINE_MAX_BYTES 65536
/* A request not finished this long after it could start (the client connected, or read its
 * last reply) is refused and the client dropped, however it trickles in; a client that
 * reads nothing of its reply this long is dropped too. carve's commands write their request
 * as soon as they connect, so only a stuck or hostile client waits. */
#define CLIENT_IDLE_S 5.0
/* Requests of one client answered before the others get their turn: a client that sent 64 KiB
 * of slice creates and deletes at once, each rewriting slices.json, held every other client
 * for as long as they took (a list waited 5.6 s with 150 slices on the node; 20 s measured by
 * a reviewer with 200, until 2026-11-28). */
#define ANSWERS_PER_TURN 8

static const char help[] =
    "usage: carved [--config FILE] [--simulate] [--socket PATH] [--state-dir DIR]\n"
    "              [--listen HOST:PORT|off] [--check-config]\n"
    "\n"
    "The carve node daemon: owns the node's GPU slices, enforces who may use them, sees\n"
    "every GPU process (escapes), flags and reclaims idle slices, and serves Prometheus\n"
    "metrics (/metrics) and a dashboard (/) over HTTP.\n"
    "\n"
    "options (each overrides the config file's setting):\n"
    "  -c, --config FILE   default /etc/carve/carved.conf when it exists, else built-in\n"
    "                      defaults (see carved.conf.example)\n"
    "  -s, --simulate      use carve's simulated GPU instead of the driver\n"
    "  -S, --socket PATH   the API socket (default /run/carve/carved.sock)\n"
    "  -d, --state-dir DIR where slices are kept across restarts (default /var/lib/carve)\n"
    "  -l, --listen ADDR   HTTP address (default 127.0.0.1:9477); off for none\n"
    "  -n, --check-config  parse the config, print what is wrong, and exit\n"
    "  -h, --help          this text\n"
    "\n"
    "exit status: 0 after SIGTERM/SIGINT; 2 for a bad option or config, or kept slices\n"
    "(STATE_DIR/slices.json) it cannot read back; 1 when it cannot start (socket, state\n"
    "directory, HTTP address, NVML).\n";

static volatile sig_atomic_t stopping;

void carved_log(const char *fmt, ...)
{
    char when[32];
    time_t t = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", localtime(&t));
    fprintf(stderr, "%s carved: ", when);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void on_stop(int sig)
{
    stopping = 1;
}

/* SIGHUP, the classic "reload": with no handler it ended carved on the spot (no counters
 * saved, its socket left behind), while the man page said it did nothing. carved reads its
 * config only at start; it says so, and whether the file as it is now would load. */
static volatile sig_atomic_t hangup;
static const char *config_path; /* the file carved read, or NULL: the built-in defaults */

static void on_hangup(int sig)
{
    hangup = 1;
}

static void note_hangup(void)
{
    static struct carved_config now; /* static: a config holds its 256 slices */
    char err[1024];
    if (!config_path) {
        carved_log("SIGHUP: carved runs on its built-in defaults (no config file) and reads a "
                   "config only at start; nothing to reload");
        return;
    }
    if (carved_config_load(config_path, &now, err, sizeof(err)) < 0)
        carved_log("SIGHUP: carved reads its config only at start and goes on with the one "
                   "it read; %s would not load now: %s (fix it before restarting carved)",
                   config_path, err);
    else
        carved_log("SIGHUP: carved reads its config only at start and goes on with the one "
                   "it read; %s loads as it is now: restart carved (systemctl restart carved) "
                   "to apply it", config_path);
}

struct opts {
    const char *config, *socket, *state_dir, *listen;
    bool simulate, check;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"simulate", no_argument, NULL, 's'},
        {"socket", required_argument, NULL, 'S'}, {"state-dir", required_argument, NULL, 'd'},
        {"listen", required_argument, NULL, 'l'}, {"check-config", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:sS:d:l:nh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 's': o->simulate = true; break;
        case 'S': o->socket = optarg; break;
        case 'd': o->state_dir = optarg; break;
        case 'l': o->listen = optarg; break;
        case 'n': o->check = true; break;
        case 'h': fputs(help, stdout); return 0;
        case ':':
            fprintf(stderr, "carved: option `%s' needs a value (see carved --help)\n", argv[optind - 1]);
            return 2;
        default: {
            /* a short option inside a word (-nZ) leaves optind on that word, and argv[optind
             * - 1] named the word before it (carved itself, for `carved -Zx') */
            char opt[3] = {'-', (char)optopt, '\0'};
            fprintf(stderr, "carved: unknown option `%s' (see carved --help)\n",
                    optopt ? opt : argv[optind - 1]);
            return 2;
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "carved: unexpected argument `%s' (see carved --help)\n", argv[optind]);
        return 2;
    }
    return -1;
}

static int load_config(struct carved *d, const struct opts *o)
{
    char err[1024];
    carved_config_defaults(&d->conf);
    const char *path = o->config;
    if (!path && access("/etc/carve/carved.conf", F_OK) == 0)
        path = "/etc/carve/carved.conf";
    if (path && carved_config_load(path, &d->conf, err, sizeof(err)) < 0) {
        fprintf(stderr, "carved: %s\n", err);
        return 2;
    }
    config_path = path;
    /* checked as the config's lines are: --check-config said "config ok" to --listen foo,
     * which carved then could not start with, and --state-dir was cut to fit silently */
    const struct {
        const char *option, *key, *value;
    } set[] = {{"--socket", "socket", o->socket},
               {"--state-dir", "state_dir", o->state_dir},
               {"--listen", "listen", o->listen}};
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
        if (set[i].value && carved_config_set(&d->conf, set[i].key, set[i].value, err,
                                              sizeof(err)) < 0) {
            fprintf(stderr, "carved: %s: %s\n", set[i].option, err);
            return 2;
        }
    return 0;
}

static int make_dir(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    carved_log("cannot make %s: %s", path, strerror(errno));
    return -1;
}

/* Holds STATE_DIR/carved.lock for as long as this carved lives (the kernel lets go of it
 * however carved ends), or says which carved holds it: -1. A second carved started beside a
 * running one (a slip, two unit files) adopted the slices, made its config's slices in
 * /dev/shm and rewrote slices.json before it found the socket taken; the running one then
 * dropped those slices at its next save and left their objects in /dev/shm. */
static int lock_state_dir(const char *dir)
{
    char path[PATH_MAX + 16];
    if ((size_t)snprintf(path, sizeof(path), "%s/carved.lock", dir) >= sizeof(path)) {
        carved_log("state dir %s: its path is too long", dir);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        carved_log("cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        char pid[24] = "";
        ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? strcspn(pid, "\n") : 0] = '\0';
        carved_log("another carved (pid %s) runs with state dir %s: stop it first (systemctl "
                   "stop carved, or kill -TERM %s and wait for it to exit), or give this one "
                   "a --state-dir and --socket of its own", *pid ? pid : "?", dir,
                   *pid ? pid : "PID");
        close(fd);
        return -1;
    }
    char pid[24];
    int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len)
        carved_log("cannot write its pid into %s: %s (carved runs on)", path, strerror(errno));
    return fd;
}

/* Listens on the API socket, world-connectable: who may do what is decided per request from
 * the peer's credentials. A socket left by a dead carved is replaced; a live one is not. */
static int listen_socket(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char dir[sizeof(a.sun_path)];
    size_t len = strlen(path);
    if (len >= sizeof(a.sun_path)) {
        carved_log("socket path %s is too long", path);
        return -1;
    }
    memcpy(a.sun_path, path, len + 1);
    memcpy(dir, path, len + 1);
    if (make_dir(dirname(dir), 0755) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        carved_log("another carved already listens on %s", path);
        close(fd);
        return -1;
    }
    if (fd >= 0)
        close(fd);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    /* the kernel's most for the backlog: a burst of carve run start-ups, or of tenants'
     * joins, past 128 made a client's connect fail with EAGAIN instead of waiting its turn.
     * Linux cuts a larger backlog to net.core.somaxconn; SOMAXCONN itself is 128 in glibc
     * before 2.35 (RHEL 8 and 9, Ubuntu 20.04), so it is not asked for by name */
    /* made 0666 by bind itself under a umask that allows it: a chmod of the path after the
       bind follows a symlink put there in between, where the socket's directory is one
       users may write (a reviewer's finding, 2026-11-28) */
    mode_t umask_before = umask(0111);
    int bound = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&a, sizeof(a));
    int bind_errno = errno;
    umask(umask_before);
    errno = bind_errno;
    if (fd < 0 || bound < 0 || listen(fd, INT_MAX) < 0) {
        carved_log("cannot listen on %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

struct client {
    int fd;
    uid_t uid;    /* who connected (SO_PEERCRED) */
    double since; /* when its next request could start: connected, or read its last reply */
    double last;  /* when it last read some of its reply */
    size_t len;
    char *out;   /* the reply it has not read yet (its later requests wait in buf) */
    int pass_fd; /* an fd that goes with the reply's first byte (a join's table), or -1 */
    size_t outlen, outdone;
    char buf[LINE_MAX_BYTES + 1]; /* a whole line of 64 KiB, its newline included */
};

static struct client clients[MAX_CLIENTS];

static void drop(struct client *c)
{
    close(c->fd);
    c->fd = -1;
    if (c->pass_fd >= 0)
        close(c->pass_fd);
    c->pass_fd = -1;
    c->len = 0;
    free(c->out);
    c->out = NULL;
    c->outlen = c->outdone = 0;
}

/* Writes the reply's first bytes with c->pass_fd attached (SCM_RIGHTS), and closes carved's
 * copy once it is sent. A client that reads with a plain recv() has the fd closed for it by
 * the kernel, so only a tenant that asks for the table and reads it with recvmsg() keeps it. */
static ssize_t send_with_fd(struct client *c)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec iov = {.iov_base = c->out + c->outdone, .iov_len = c->outlen - c->outdone};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &c->pass_fd, sizeof(int));
    ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
        close(c->pass_fd);
        c->pass_fd = -1;
    }
    return n;
}

/* Writes what the socket takes of the pending reply, without waiting: a client that does not
 * read stalls only itself (a blocking write held carved, and every other client and the
 * polls, for a second per such client). */
static void flush(struct client *c)
{
    while (c->outdone < c->outlen) {
        ssize_t n = c->pass_fd >= 0 ? send_with_fd(c)
                                    : write(c->fd, c->out + c->outdone, c->outlen - c->outdone);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            drop(c);
            return;
        }
        c->outdone += (size_t)n;
        c->last = monitor_now();
    }
    free(c->out);
    c->out = NULL;
    c->outlen = c->outdone = 0;
    c->since = monitor_now();
}

static void reply(struct client *c, json_t *r, int pass_fd)
{
    c->pass_fd = pass_fd;
    static const char no_memory[] = "{\"ok\":false,\"error\":\"carved is out of memory\"}\n";
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (line) {
        memcpy(line + n, "\n", 2);
        n++;
    } else { /* every request gets its one line */
        free(text);
        n = strlen(no_memory);
        if (!(line = strdup(no_memory))) {
            drop(c);
            return;
        }
    }
    c->out = line; /* requests are answered only when the reply before is written */
    c->outlen = n;
    c->outdone = 0;
    flush(c);
}

static json_t *refusal(const char *why)
{
    return json_pack("{s:b,s:s}", "ok", 0, "error", why);
}

/* Whether the client has a whole request read and waiting for its answer. */
static bool has_request(const struct client *c)
{
    return c->fd >= 0 && !c->out && memchr(c->buf, '\n', c->len);
}

/* Answers complete lines in order, ANSWERS_PER_TURN at most, while the client reads what it
 * is answered; the loop comes back for the rest (has_request). */
static void answer(struct carved *d, struct client *c)
{
    char *nl;
    for (int answered = 0; answered < ANSWERS_PER_TURN && c->fd >= 0 && !c->out &&
                           (nl = memchr(c->buf, '\n', c->len));
         answered++) {
        *nl = '\0';
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
            drop(c);
            return;
        }
        int pass_fd = -1;
        json_t *r = (size_t)(nl - c->buf) != strlen(c->buf)
                        ? refusal("the request holds a NUL byte (send one JSON object per line)")
                        : api_handle(d, c->buf, cred.uid, cred.gid, cred.pid, &pass_fd);
        reply(c, r, pass_fd);
        if (c->fd < 0)
            return; /* it hung up: drop() emptied its buffer, and nl points into nothing */
        size_t rest = c->len - (size_t)(nl + 1 - c->buf);
        memmove(c->buf, nl + 1, rest);
        c->len = rest;
    }
    if (c->fd >= 0 && !c->out && c->len == sizeof(c->buf) - 1 && !has_request(c)) {
        reply(c, refusal("request longer than 64 KiB"), -1);
        if (c->fd >= 0)
            drop(c);
    }
}

/* Writes more of a pending reply, or reads what a client sent; answers complete lines. */
static void serve(struct carved *d, struct client *c)
{
    if (c->out) {
        flush(c);
        answer(d, c);
        return;
    }
    if (has_request(c)) { /* what it sent before comes first (its buffer may be full) */
        answer(d, c);
        return;
    }
    ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        if (n == 0 && c->len > 0) /* it stopped writing mid-request; it may still read */
            reply(c, refusal("the request ended without a newline (send one JSON object "
                             "per line)"), -1);
        if (c->fd >= 0)
            drop(c);
        return;
    }
    c->len += (size_t)n;
    answer(d, c);
}

/* Says why, on a fresh socket (its buffer takes the line), and closes it: "busy" tells
 * libcarve to try again shortly. */
static void turn_away(int fd, const char *why)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "{\"ok\":false,\"busy\":true,\"error\":\"%s\"}\n", why);
    (void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
}

static void accept_client(struct carved *d, int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
        close(fd);
        return;
    }
    bool admin = registry_is_admin(d, cred.uid, cred.gid);
    int held = 0, free_slot = -1, nfree = 0;
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].fd < 0 && free_slot < 0)
            free_slot = i;
        nfree += clients[i].fd < 0;
        held += clients[i].fd >= 0 && clients[i].uid == cred.uid;
    }
    if (!admin && held >= MAX_CLIENTS_PER_USER) {
        turn_away(fd, "you hold 16 connections to carved, the most a user may; try again "
                      "once they are answered");
        return;
    }
    if (free_slot < 0) {
        turn_away(fd, "carved serves 256 clients, its most; try again in a moment");
        return;
    }
    if (!admin && nfree <= ADMIN_SLOTS) {
        turn_away(fd, "carved keeps its last 16 free places for its admins and has no other "
                      "free; try again in a moment");
        return;
    }
    struct client *c = &clients[free_slot];
    c->fd = fd;
    c->pass_fd = -1;
    c->uid = cred.uid;
    c->len = 0;
    c->since = c->last = monitor_now();
}

static void loop(struct carved *d, int lfd)
{
    double next = 0;
    while (!stopping) {
        if (hangup) {
            hangup = 0;
            note_hangup();
        }
        struct pollfd p[MAX_CLIENTS + 1];
        int map[MAX_CLIENTS + 1], n = 0;
        p[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        map[n++] = -1;
        bool waiting = false; /* requests read and not yet answered: no sleep in poll */
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (clients[i].fd >= 0) {
                /* a client with a reply to read sends nothing more until it has read it, nor
                   one whose requests read before wait for their turn */
                bool more = has_request(&clients[i]);
                waiting |= more;
                p[n] = (struct pollfd){.fd = clients[i].fd,
                                       .events = clients[i].out ? POLLOUT : more ? 0 : POLLIN};
                map[n++] = i;
            }
        double now = monitor_now();
        int wait_ms = next > now && !waiting ? (int)((next - now) * 1000) + 1 : 0;
        if (n > 1 && wait_ms > 1000)
            wait_ms = 1000; /* wake to drop clients that went silent */
        int r = poll(p, (nfds_t)n, wait_ms);
        for (int i = 0; r > 0 && i < n; i++) {
            if (!p[i].revents)
                continue;
            if (map[i] < 0)
                accept_client(d, lfd);
            else
                serve(d, &clients[map[i]]);
        }
        for (int i = 0; waiting && i < MAX_CLIENTS; i++) /* each its next few, in turn */
            if (has_request(&clients[i]))
                answer(d, &clients[i]);
        now = monitor_now();
        /* a client whose requests wait for their turn waits for carved, not carved for it */
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (clients[i].fd >= 0 && !has_request(&clients[i]) &&
                now - (clients[i].out ? clients[i].last : clients[i].since) > CLIENT_IDLE_S) {
                if (clients[i].len > 0 && !clients[i].out)
                    reply(&clients[i], refusal("the request was not finished within 5 s (send "
                                               "one JSON object per line)"),
                          -1);
                if (clients[i].fd >= 0)
                    drop(&clients[i]);
            }
        if (now >= next) {
            registry_make_waiting(d);
            monitor_poll(d, now);
            carved_http_publish(d->snapshot);
            next = now + (double)d->conf.poll_ms / 1000.0;
        }
    }
}

static struct carved daemon_state;

/* --check-config: the config's gpus against the node's GPUs, where NVML answers (the
 * driver's, or with --simulate the simulated one), so that a reload (carved.service's
 * ExecReload) is not told a config is good that carved would refuse to start with. 0, or 2
 * with what is wrong on standard error. Without NVML it says the GPUs are found at start. */
static int check_config_gpus(struct carved *d, bool simulate)
{
    char libdir[PATH_MAX], nvml[PATH_MAX + 64], err[768] = "cannot find carve's libraries";
    int named = 0, bad = 0;
    for (int i = 0; i < d->conf.nslices; i++)
        named += d->conf.slices[i].ngpu_refs > 0;
    if (!named)
        return 0;
    d->ngpu = -1;
    if (carve_find_libdir(libdir, sizeof(libdir)) == 0) {
        carve_nvml_path(simulate, libdir, nvml, sizeof(nvml));
        d->ngpu = carve_gpus_list_driver(nvml, simulate, d->gpus, CARVE_SLICE_MAX_DEVICES,
                                         &d->driver, err, sizeof(err));
    }
    if (d->ngpu < 0) {
        printf("carved: the GPUs of %d slice%s (gpus) are not checked here, for NVML does not "
               "answer (%s): carved finds them when it starts\n", named, named == 1 ? "" : "s",
               err);
        d->ngpu = 0;
        return 0;
    }
    for (int i = 0; i < d->conf.nslices; i++) {
        struct carved_slice_conf *c = &d->conf.slices[i];
        if (c->ngpu_refs &&
            registry_gpus_named(d, c->gpu_refs, c->ngpu_refs, c, err, sizeof(err)) < 0) {
            fprintf(stderr, "carved: the config's [slice %s] (line %d): gpus: %s\n", c->name,
                    c->line, err);
            bad = 1;
        }
    }
    return bad ? 2 : 0;
}

/* The soft limit on open files raised to the hard one: clients, the tables handed over with
 * replies, 64 boards a GPU, HTTP connections and NVML's passed the usual 1024 on a node of
 * eight GPUs, and then accept failed while the socket stayed readable (a review's finding,
 * 2026-11-29; carved.service sets LimitNOFILE too). */
static void raise_file_limit(void)
{
    struct rlimit l;
    if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
        l.rlim_cur = l.rlim_max;
        setrlimit(RLIMIT_NOFILE, &l);
    }
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    int r = parse_args(argc, argv, &o);
    if (r >= 0)
        return r;
    struct carved *d = &daemon_state;
    if ((r = load_config(d, &o)) != 0)
        return r;
    if (o.check) {
        if ((r = check_config_gpus(d, o.simulate)) != 0)
            return r;
        printf("carved: config ok: %d slice%s, socket %s, state %s, listen %s\n", d->conf.nslices,
               d->conf.nslices == 1 ? "" : "s", d->conf.socket_path, d->conf.state_dir,
               d->conf.listen[0] ? d->conf.listen : "off");
        return 0;
    }
    d->simulate = o.simulate;
    raise_file_limit();
    char err[1024];
    if (carve_find_libdir(d->libdir, sizeof(d->libdir)) < 0 || monitor_open(d, err, sizeof(err)) < 0) {
        fprintf(stderr, "carved: %s\n", d->libdir[0] ? err : "cannot find carve's libraries; set CARVE_LIBDIR");
        return 1;
    }
    if (make_dir(d->conf.state_dir, 0700) < 0 || lock_state_dir(d->conf.state_dir) < 0)
        return 1;
    for (int i = 0; i < MAX_CLIENTS; i++)
        clients[i].fd = clients[i].pass_fd = -1;
    /* the socket before the slices: a carved that cannot have it must not touch them */
    int lfd = listen_socket(d->conf.socket_path);
    if (lfd < 0)
        return 1;
    /* and the HTTP address: it serves "no snapshot yet" until the first poll */
    if (carved_http_start(d->conf.listen, err, sizeof(err)) < 0) {
        fprintf(stderr, "carved: %s\n", err);
        close(lfd);
        unlink(d->conf.socket_path);
        return 1;
    }
    if (registry_load(d, err, sizeof(err)) < 0) {
        fprintf(stderr, "carved: %s\n", err);
        carved_http_stop();
        close(lfd);
        unlink(d->conf.socket_path);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sigaction hup = {.sa_handler = on_hangup};
    sigaction(SIGHUP, &hup, NULL);
    signal(SIGPIPE, SIG_IGN);
    int held = 0; /* the config's and those kept from before (it counted only the config's) */
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        held += d->slices[i].used;
    carved_log("ready: %d GPU%s%s, %d slice%s (%d from the config), socket %s, http %s",
               d->ngpu, d->ngpu == 1 ? "" : "s", d->simulate ? " (simulated)" : "", held,
               held == 1 ? "" : "s", d->conf.nslices, d->conf.socket_path,
               d->conf.listen[0] ? d->conf.listen : "off");
    if (!carve_proc_host_pid_namespace())
        carved_log("carved runs in a PID namespace of its own, not the host's: NVML may name "
                   "GPU processes, or their utilisation samples, by the host's pids, which "
                   "carved cannot match to its slices' processes, and then reports them as "
                   "escapes; run carved in the host's PID namespace (--pid=host, hostPID)");
    loop(d, lfd);
    carved_log("stopping; slices stay for the next carved");
    if (registry_save(d, err, sizeof(err)) < 0) /* the counters, as they are now */
        carved_log("%s", err);
    carved_http_stop();
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (clients[i].fd >= 0)
            drop(&clients[i]);
    close(lfd);
    unlink(d->conf.socket_path);
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        if (d->slices[i].used)
            carve_slice_close(d->slices[i].handle);
    json_decref(d->snapshot);
    monitor_close();
    carved_groups_forget();
    return 0;
}
