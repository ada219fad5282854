/* http.c - carved's HTTP listener: Prometheus metrics, the snapshot as JSON and the dashboard
 * page, served by libmicrohttpd from its own thread out of the latest published snapshot. */
#include "carved.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

/* carved/dashboard.html, made into C by carved/embed.sh */
extern const char carved_dashboard_html[];
extern const size_t carved_dashboard_html_len;

/* libmicrohttpd 0.9.71 made the handler's result an enum, 0.9.53 renamed the flag */
#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result http_result;
#else
typedef int http_result;
#endif
#if MHD_VERSION >= 0x00095300
#define HTTP_DAEMON_FLAGS (MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD)
#else
#define HTTP_DAEMON_FLAGS MHD_USE_SELECT_INTERNALLY
#endif

#define HTTP_LISTEN_FORMS \
    "HOST:PORT, [IPv6]:PORT or :PORT (every IPv4 address), e.g. 127.0.0.1:9477"

static struct MHD_Daemon *http_daemon;
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *snap_current; /* our reference to the latest snapshot; under snap_lock */

/* code is returned, so that `return http_error(...)' ends a failing function */
__attribute__((format(printf, 4, 5)))
static int http_error(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- the listen address ---- */

struct http_addr {
    char host[128]; /* "" = every IPv4 address (":PORT") */
    char port[8];
};

/* "HOST:PORT", "[V6]:PORT", ":PORT" into host and port; 0 or -EINVAL with a message. */
static int parse_listen(const char *spec, struct http_addr *a, char *err, size_t errlen)
{
    const char *host = spec, *colon;
    size_t hostlen;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            return http_error(err, errlen, -EINVAL, "listen `%s': an IPv6 address is written "
                              "[ADDR]:PORT; expected %s", spec, HTTP_LISTEN_FORMS);
        host = spec + 1;
        hostlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon)
            return http_error(err, errlen, -EINVAL, "listen `%s': no port; expected %s", spec,
                              HTTP_LISTEN_FORMS);
        hostlen = (size_t)(colon - spec);
        if (memchr(spec, ':', hostlen))
            return http_error(err, errlen, -EINVAL, "listen `%s': an IPv6 address needs "
                              "brackets, [ADDR]:PORT; expected %s", spec, HTTP_LISTEN_FORMS);
    }
    if (hostlen >= sizeof(a->host))
        return http_error(err, errlen, -EINVAL, "listen `%s': the host is longer than %zu "
                          "characters", spec, sizeof(a->host) - 1);
    const char *port = colon + 1;
    char *end;
    errno = 0;
    unsigned long p = strtoul(port, &end, 10);
    if (port[0] < '0' || port[0] > '9' || *end || errno || p < 1 || p > 65535)
        return http_error(err, errlen, -EINVAL, "listen `%s': port `%s' is not a number in "
                          "1-65535; expected %s", spec, port, HTTP_LISTEN_FORMS);
    memcpy(a->host, host, hostlen);
    a->host[hostlen] = '\0';
    snprintf(a->port, sizeof(a->port), "%lu", p);
    return 0;
}

static const char *bind_hint(int e)
{
    switch (e) {
    case EADDRINUSE: return " (another program holds it: stop that one, or set another "
                            "`listen' in the config, or `off')";
    case EADDRNOTAVAIL: return " (no interface of this machine has that address)";
    case EACCES: return " (ports below 1024 need root or CAP_NET_BIND_SERVICE)";
    default: return "";
    }
}

/* A bound, listening socket for the address (the first the resolver gives), made here so
 * that a failure says exactly why; libmicrohttpd takes it over. The fd, or -errno with a
 * message naming the address. */
static int open_listener(const char *spec, const struct http_addr *a, char *err,
                         size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int fd = -1, ret;
    int r = getaddrinfo(a->host[0] ? a->host : "0.0.0.0", a->port, &hints, &res);
    if (r != 0) {
        ret = http_error(err, errlen, -EADDRNOTAVAIL, "listen `%s': cannot resolve `%s': %s",
                         spec, a->host, r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        goto out;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) {
        ret = http_error(err, errlen, -errno, "listen `%s': cannot make a socket: %s", spec,
                         strerror(errno));
        goto out;
    }
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)); /* restarts over TIME_WAIT */
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
        int e = errno;
        ret = http_error(err, errlen, -e, "listen `%s': cannot bind: %s%s", spec, strerror(e),
                         bind_hint(e));
        goto out;
    }
    if (listen(fd, 64) != 0) {
        ret = http_error(err, errlen, -errno, "listen `%s': cannot listen: %s", spec,
                         strerror(errno));
        goto out;
    }
    ret = fd;
out:
    if (ret < 0 && fd >= 0)
        close(fd);
    if (res)
        freeaddrinfo(res);
    return ret;
}

/* ---- the snapshot ----
 * Readers render it (metrics text, JSON) while holding the lock, and take no reference:
 * jansson's reference counts are atomic but its decref only releases, so a reader dropping
 * the last reference on another thread is not ordered after the reads (ThreadSanitizer
 * says so). The lock orders every read before the publish that drops the snapshot, and a
 * render is short (well under a millisecond for a node). The publisher must not change a
 * snapshot once published: it makes a new one each poll. */

void carved_http_publish(json_t *snap)
{
    json_incref(snap);
    pthread_mutex_lock(&snap_lock);
    json_t *old = snap_current;
    snap_current = snap;
    pthread_mutex_unlock(&snap_lock);
    json_decref(old);
}

enum render { RENDER_METRICS, RENDER_JSON };

/* The current snapshot rendered (malloc'd); NULL with *none set before the first snapshot,
 * NULL alone on out of memory. */
static char *snapshot_render(enum render how, bool *none)
{
    char *text = NULL;
    pthread_mutex_lock(&snap_lock);
    *none = snap_current == NULL;
    if (snap_current)
        text = how == RENDER_METRICS ? carved_metrics_render(snap_current)
                                     : json_dumps(snap_current, JSON_COMPACT);
    pthread_mutex_unlock(&snap_lock);
    return text;
}

/* ---- requests ---- */

#define TYPE_TEXT "text/plain; charset=utf-8"
#define TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define TYPE_JSON "application/json"
#define TYPE_HTML "text/html; charset=utf-8"

/* Queues body (freed here when mode says MUST_FREE, whatever happens). */
static http_result respond(struct MHD_Connection *conn, unsigned int status, const char *type,
                           const char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free((void *)body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    http_result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static http_result respond_text(struct MHD_Connection *conn, unsigned int status,
                                const char *text)
{
    return respond(conn, status, TYPE_TEXT, text, strlen(text), MHD_RESPMEM_PERSISTENT);
}

enum route { ROUTE_NONE, ROUTE_DASHBOARD, ROUTE_METRICS, ROUTE_STATE };

static enum route route_of(const char *url)
{
    if (strcmp(url, "/") == 0)
        return ROUTE_DASHBOARD;
    if (strcmp(url, "/metrics") == 0)
        return ROUTE_METRICS;
    if (strcmp(url, "/api/state") == 0)
        return ROUTE_STATE;
    return ROUTE_NONE;
}

/* snapshots served as JSON: what a watcher of the dashboard (or a test) can count */
static _Atomic unsigned long state_served;

unsigned long carved_http_state_served(void)
{
    return atomic_load(&state_served);
}

/* /metrics or /api/state, from the snapshot of this moment */
static http_result respond_snapshot(struct MHD_Connection *conn, enum route route)
{
    bool none;
    char *body = snapshot_render(route == ROUTE_METRICS ? RENDER_METRICS : RENDER_JSON, &none);
    if (none)
        return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                            "carved has no snapshot yet (the first poll has not finished); "
                            "retry in a second\n");
    if (!body)
        return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    if (route == ROUTE_STATE)
        atomic_fetch_add(&state_served, 1);
    return respond(conn, MHD_HTTP_OK, route == ROUTE_METRICS ? TYPE_METRICS : TYPE_JSON, body,
                   strlen(body), MHD_RESPMEM_MUST_FREE);
}

static http_result handle(void *cls, struct MHD_Connection *conn, const char *url,
                          const char *method, const char *version, const char *upload_data,
                          size_t *upload_data_size, void **con_cls)
{
    enum route route = route_of(url);
    if (route == ROUTE_NONE)
        return respond_text(conn, MHD_HTTP_NOT_FOUND,
                            "not found; carved serves /, /metrics and /api/state\n");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                            "method not allowed; carved's HTTP side is read-only (GET)\n");
    if (route == ROUTE_DASHBOARD)
        return respond(conn, MHD_HTTP_OK, TYPE_HTML, carved_dashboard_html,
                       carved_dashboard_html_len, MHD_RESPMEM_PERSISTENT);
    return respond_snapshot(conn, route);
}

/* ---- start and stop ---- */

int carved_http_start(const char *spec, char *err, size_t errlen)
{
    struct http_addr a;
    struct stat st;
    if (!spec || !*spec || strcmp(spec, "off") == 0)
        return 0;
    if (http_daemon)
        return http_error(err, errlen, -EALREADY, "listen `%s': the HTTP listener is "
                          "already running", spec);
    int r = parse_listen(spec, &a, err, errlen);
    if (r < 0)
        return r;
    int fd = open_listener(spec, &a, err, errlen);
    if (fd < 0)
        return fd;
    fstat(fd, &st);
    http_daemon = MHD_start_daemon(HTTP_DAEMON_FLAGS, (uint16_t)atoi(a.port), NULL, NULL,
                                   handle, NULL,
                                   MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                                   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
                                   MHD_OPTION_END);
    if (!http_daemon) {
        /* whether a failed start closed the socket it was given is not documented: close
         * it only if the descriptor is still that socket */
        struct stat now;
        if (fstat(fd, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
            close(fd);
        return http_error(err, errlen, -EIO, "listen `%s': libmicrohttpd could not start "
                          "(out of memory or threads?)", spec);
    }
    return 0;
}

void carved_http_stop(void)
{
    if (http_daemon) {
        MHD_stop_daemon(http_daemon); /* closes the listening socket, joins its thread */
        http_daemon = NULL;
    }
    carved_http_publish(NULL);
}
