/* daemon.c - carve's side of carved's socket API (carved/api.c): one request, one reply;
 * and the commands that need carved: `carve slice create|list|delete` and `carve ps`. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "board.h"
#include "cli.h"
#include "compute.h"
#include "gpus.h"
#include "size.h"
#include "slice.h"

const char *carve_socket_path(void)
{
    const char *env = getenv("CARVE_SOCKET");
    return env && *env ? env : "/run/carve/carved.sock";
}

/* Seconds carve waits for carved to take a request or answer it: a stopped or wedged carved
 * made every carve (and a Slurm job's prolog) wait for ever. CARVE_DAEMON_TIMEOUT overrides. */
#define DAEMON_TIMEOUT_S 30

static int daemon_timeout_s(void)
{
    const char *env = getenv("CARVE_DAEMON_TIMEOUT");
    char *end;
    long s = env ? strtol(env, &end, 10) : 0;
    return env && *env && !*end && s > 0 && s <= 3600 ? (int)s : DAEMON_TIMEOUT_S;
}

int carve_daemon_connect(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", carve_socket_path());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* the send timeout also bounds connect() while carved's backlog is full */
    struct timeval tv = {.tv_sec = daemon_timeout_s()};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        int e = errno; /* the caller tells "no carved" from "carved does not answer" */
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

json_t *carve_daemon_call(int fd, json_t *req, char *err, size_t errlen)
{
    char code[32];
    return carve_daemon_call_code(fd, req, err, errlen, code, sizeof(code));
}

json_t *carve_daemon_call_code(int fd, json_t *req, char *err, size_t errlen, char *code,
                               size_t codelen)
{
    code[0] = '\0';
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text || write(fd, text, strlen(text)) < 0 || write(fd, "\n", 1) < 0) {
        snprintf(err, errlen, "cannot talk to carved at %s: %s", carve_socket_path(), strerror(errno));
        free(text);
        return NULL;
    }
    free(text);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                break;
            buf = bigger;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            snprintf(err, errlen, "carved at %s did not answer in %d s (is it stopped or stuck? "
                     "its log, or `systemctl status carved', tells; CARVE_DAEMON_TIMEOUT sets "
                     "the wait)", carve_socket_path(), daemon_timeout_s());
            free(buf);
            return NULL;
        }
        if (n <= 0)
            break;
        len += (size_t)n;
        if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
            break;
    }
    json_t *reply = NULL;
    if (buf && len) {
        buf[len] = '\0';
        reply = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
    }
    free(buf);
    if (!json_is_object(reply)) {
        snprintf(err, errlen, "carved at %s gave no answer (it may have stopped)", carve_socket_path());
        json_decref(reply);
        return NULL;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        snprintf(err, errlen, "%s", json_string_value(json_object_get(reply, "error")) ?: "refused");
        snprintf(code, codelen, "%s", json_string_value(json_object_get(reply, "code")) ?: "");
        json_decref(reply);
        return NULL;
    }
    return reply;
}

bool carve_daemon_simulated(void)
{
    char err[256];
    int fd = carve_daemon_connect();
    if (fd < 0)
        return false;
    json_t *r = carve_daemon_call(fd, json_pack("{s:s}", "op", "list"), err, sizeof(err));
    close(fd);
    bool simulated = r && json_is_true(json_object_get(json_object_get(r, "snapshot"),
                                                       "simulated"));
    json_decref(r);
    return simulated;
}

/* Connects and calls; prints the error as "carve CMD: ..." and returns NULL on failure, with
 * carved's code for the refusal in code ("" when none). */
static json_t *call_code(const char *cmd, json_t *req, char *code, size_t codelen)
{
    char err[1024];
    code[0] = '\0';
    int fd = carve_daemon_connect();
    if (fd < 0) {
        fprintf(stderr, "carve %s: carved is not running (no one listens on %s; start it, or "
                        "set CARVE_SOCKET)\n", cmd, carve_socket_path());
        json_decref(req);
        return NULL;
    }
    json_t *r = carve_daemon_call_code(fd, req, err, sizeof(err), code, codelen);
    close(fd);
    if (!r)
        fprintf(stderr, "carve %s: %s\n", cmd, err);
    return r;
}

/* call_code for a request whose refusals are all alike (status 1). */
static json_t *call(const char *cmd, json_t *req)
{
    char code[32];
    return call_code(cmd, req, code, sizeof(code));
}

static int usage_error(const char *cmd, const char *what, const char *arg)
{
    fprintf(stderr, "carve %s: ", cmd);
    fprintf(stderr, what, arg);
    /* the help is the command's ("carve slice --help" for "slice create") */
    fprintf(stderr, "\n(see carve %.*s --help)\n", (int)strcspn(cmd, " "), cmd);
    return CARVE_EXIT_USAGE;
}

/* "alice, 1001,bob" into a JSON list of names and numbers (carved resolves the names). */
static json_t *name_list(const char *s)
{
    json_t *a = json_array();
    char *copy = strdup(s), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        t += strspn(t, " \t");
        size_t n = strlen(t);
        while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
            t[--n] = '\0';
        if (n == 0)
            continue;
        char *end;
        errno = 0;
        unsigned long id = strtoul(t, &end, 10);
        if (t[0] >= '0' && t[0] <= '9' && *end == '\0' && errno == 0 && id <= UINT32_MAX)
            json_array_append_new(a, json_integer((json_int_t)id));
        else
            json_array_append_new(a, json_string(t));
    }
    free(copy);
    return a;
}

/* --gpus as the create request's "gpus": indices as numbers, UUIDs as text. NULL, with why,
 * when it is not a list of them. */
static json_t *gpu_list(const char *s, char *why, size_t whylen)
{
    struct carve_gpu_ref refs[CARVE_SLICE_MAX_DEVICES];
    int n = carve_gpu_refs_parse(s, refs, CARVE_SLICE_MAX_DEVICES, why, whylen);
    if (n < 0)
        return NULL;
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char text[48];
        carve_gpu_ref_text(&refs[i], text, sizeof(text));
        json_array_append_new(a, refs[i].index >= 0 ? json_integer(refs[i].index)
                                                    : json_string(text));
    }
    return a;
}

static const char slice_help[] =
    "usage: carve slice create NAME [--memory SPEC] [--compute SHARE] [--priority CLASS]\n"
    "                   [--users U,U...] [--groups G,G...] [--gpus GPU,GPU...]\n"
    "       carve slice list [--json|-j]\n"
    "       carve slice delete NAME\n"
    "\n"
    "Slices kept by carved, the node daemon: they exist until deleted (carved restarts\n"
    "included) and any number of `carve run --slice NAME` commands run in them together,\n"
    "sharing the cap. --memory, --compute and --priority take what carve run takes.\n"
    "--users and --groups name who else may run in the slice (names or numbers).\n"
    "--gpus puts the slice on those of the node's GPUs only (indices as carve ps lists\n"
    "them, or GPU-UUIDs): its cap, share and guarantee apply there, and a guarantee is\n"
    "counted against theirs alone. Without it, the slice is on every GPU.\n"
    "The socket is CARVE_SOCKET (default /run/carve/carved.sock).\n";

/* carve run's checks of --memory, --compute and --priority, made before carved is asked, so
 * that bad input is status 2 as it is for carve run (carved, asked, would refuse it: 1). */
static int check_setting(int c, const char *value)
{
    char why[512];
    struct carve_memory_spec m;
    struct carve_compute share;
    uint8_t prio;
    int r = c == 'm'   ? carve_parse_memory_spec(value, &m, why, sizeof(why))
            : c == 'c' ? carve_parse_compute(value, &share, why, sizeof(why))
                       : carve_parse_priority(value, &prio, why, sizeof(why));
    if (r == 0)
        return 0;
    fprintf(stderr, "carve slice create: --%s: %s\n(see carve slice --help)\n",
            c == 'm' ? "memory" : c == 'c' ? "compute" : "priority", why);
    return CARVE_EXIT_USAGE;
}

/* Whether the request's memory names by IDX=SIZE a GPU its gpus, all indices, leave out (why
 * says which): bad input, found before carved is asked. UUIDs only carved can place. */
static bool memory_outside_gpus(json_t *req, char *why, size_t len)
{
    json_t *gpus = json_object_get(req, "gpus"), *g;
    const char *memory = json_string_value(json_object_get(req, "memory"));
    struct carve_memory_spec m;
    size_t k;
    if (!gpus || !memory || carve_parse_memory_spec(memory, &m, NULL, 0) < 0)
        return false;
    json_array_foreach(gpus, k, g)
        if (!json_is_integer(g))
            return false;
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++) {
        bool named = !m.per_index[i];
        json_array_foreach(gpus, k, g)
            named = named || json_integer_value(g) == i;
        if (!named) {
            snprintf(why, len, "--memory %s names GPU %d, which --gpus leaves out", memory, i);
            return true;
        }
    }
    return false;
}

static int slice_create(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"memory", required_argument, NULL, 'm'}, {"compute", required_argument, NULL, 'c'},
        {"priority", required_argument, NULL, 'p'}, {"users", required_argument, NULL, 'u'},
        {"groups", required_argument, NULL, 'g'}, {"gpus", required_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    json_t *req = json_pack("{s:s}", "op", "create");
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":m:c:p:u:g:G:", longopts, NULL)) != -1) {
        const char *key = c == 'm' ? "memory" : c == 'c' ? "compute" : c == 'p' ? "priority" : NULL;
        if (key && check_setting(c, optarg)) {
            json_decref(req);
            return CARVE_EXIT_USAGE;
        }
        if (key)
            json_object_set_new(req, key, json_string(optarg));
        else if (c == 'u' || c == 'g')
            json_object_set_new(req, c == 'u' ? "users" : "groups", name_list(optarg));
        else if (c == 'G') { /* carved knows which GPUs the node has */
            char why[256];
            json_t *gpus = gpu_list(optarg, why, sizeof(why));
            if (!gpus) {
                json_decref(req);
                return usage_error("slice create", "--gpus %s", why);
            }
            json_object_set_new(req, "gpus", gpus);
        } else {
            json_decref(req);
            if (c == ':')
                return usage_error("slice create", "option `%s' needs a value", argv[optind - 1]);
            return usage_error("slice create", "unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind != argc - 1) {
        json_decref(req);
        return usage_error("slice create", "give one NAME%s", "");
    }
    char why[160];
    if (memory_outside_gpus(req, why, sizeof(why))) {
        json_decref(req);
        return usage_error("slice create", "%s", why);
    }
    /* a bad name is bad input, status 2 as carve-slice(1) says (carved refused it: 1) */
    if (!carve_slice_name_ok(argv[optind])) {
        snprintf(why, sizeof(why), "slice name `%.80s' is not 1-%d of A-Z a-z 0-9 . _ - "
                 "(nor . or ..)", argv[optind], CARVE_SLICE_NAME_MAX - 1);
        json_decref(req);
        return usage_error("slice create", "%s", why);
    }
    json_object_set_new(req, "name", json_string(argv[optind]));
    char code[32];
    json_t *r = call_code("slice create", req, code, sizeof(code));
    /* a guarantee the GPU cannot give is bad input for the node as it is, as in carve run */
    if (!r)
        return strcmp(code, CARVE_REFUSAL_GUARANTEES) == 0 ? CARVE_EXIT_USAGE : 1;
    printf("slice %s made\n", argv[optind]);
    json_decref(r);
    return 0;
}

/* The slice's own columns, on its first row; blanks on the others. */
static void print_slice_columns(json_t *s, size_t row)
{
    if (row == 0)
        printf("%-20s %-10s %-7s %5zu ", json_string_value(json_object_get(s, "name")),
               json_string_value(json_object_get(s, "owner")),
               json_string_value(json_object_get(s, "origin")),
               json_array_size(json_object_get(s, "processes")));
    else
        printf("%-20s %-10s %-7s %5s ", "", "", "", "");
}

/* One row per slice and GPU it spans (the slice's own columns on its first): memory used
 * and cap, the share it achieved over carved's last poll and the one it asked for; then one
 * per GPU of the slice that the node no longer has (by its UUID). A slice on no GPU here
 * still has its row: it was left out of the listing. */
/* The users and groups a slice lets in besides its owner and the admins, on a row of their
 * own under it; nothing when it lets in none (a carved of before 2026-11-27 says none). */
static void print_joiners(json_t *s)
{
    json_t *lists[2] = {json_object_get(s, "users"), json_object_get(s, "groups")}, *v;
    if (!json_array_size(lists[0]) && !json_array_size(lists[1]))
        return;
    printf("%-20s may join:", "");
    for (int l = 0; l < 2; l++) {
        size_t i;
        if (!json_array_size(lists[l]))
            continue;
        printf(" %s", l == 0 ? "users" : (json_array_size(lists[0]) ? "; groups" : "groups"));
        json_array_foreach(lists[l], i, v)
            printf("%s%s", i ? ", " : " ", json_string_value(v));
    }
    printf(" (and its owner, root, carved's admins)\n");
}

static void print_slices(json_t *snap)
{
    printf("%-20s %-10s %-7s %5s %3s %-22s %6s %-8s %s\n", "SLICE", "OWNER", "ORIGIN", "PROCS",
           "GPU", "MEMORY (used / cap)", "SHARE", "COMPUTE", "IDLE");
    size_t i, k;
    json_t *s, *dev;
    json_array_foreach(json_object_get(snap, "slices"), i, s) {
        size_t rows = 0;
        char idle[32];
        snprintf(idle, sizeof(idle), "%s%.0fs", json_is_true(json_object_get(s, "idle")) ? "IDLE " : "",
                 json_number_value(json_object_get(s, "idle_seconds")));
        json_array_foreach(json_object_get(s, "devices"), k, dev) {
            char used[32], cap[32] = "none", mem[64], share[16];
            carve_format_size((uint64_t)json_integer_value(json_object_get(dev, "memory_used")), used, sizeof(used));
            uint64_t c = (uint64_t)json_integer_value(json_object_get(dev, "memory_cap"));
            if (c)
                carve_format_size(c, cap, sizeof(cap));
            snprintf(mem, sizeof(mem), "%s / %s", used, cap);
            snprintf(share, sizeof(share), "%.1f%%", json_number_value(json_object_get(dev, "compute_share")));
            const char *compute = json_string_value(json_object_get(dev, "compute"));
            print_slice_columns(s, rows++);
            printf("%3lld %-22s %6s %-8s %s\n", (long long)json_integer_value(json_object_get(dev, "index")),
                   mem, share, compute && *compute ? compute : "-", k == 0 ? idle : "");
        }
        json_array_foreach(json_object_get(s, "gpus_gone"), k, dev) {
            print_slice_columns(s, rows++);
            printf("%3s gone: %s (not on this node now)\n", "-", json_string_value(dev));
        }
        if (rows == 0) {
            print_slice_columns(s, rows++);
            printf("%3s %-22s %6s %-8s %s\n", "-", "-", "-", "-", idle);
        }
        print_joiners(s);
    }
    json_array_foreach(json_object_get(snap, "config_waiting"), i, s) {
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *why = json_string_value(json_object_get(s, "why"));
        printf("waiting: the config's [slice %s] (line %lld) is not made yet: %s\n",
               name ? name : "?", (long long)json_integer_value(json_object_get(s, "line")),
               why ? why : "?");
    }
}

static int slice_list(int argc, char **argv)
{
    bool as_json = argc > 1 && (strcmp(argv[1], "--json") == 0 || strcmp(argv[1], "-j") == 0);
    if (argc > (as_json ? 2 : 1))
        return usage_error("slice list", "unexpected argument `%s'", argv[as_json ? 2 : 1]);
    json_t *r = call("slice list", json_pack("{s:s}", "op", "list"));
    if (!r)
        return 1;
    json_t *snap = json_object_get(r, "snapshot");
    if (as_json)
        json_dumpf(json_object_get(snap, "slices"), stdout, JSON_INDENT(2));
    else
        print_slices(snap);
    if (as_json)
        putchar('\n');
    json_decref(r);
    return 0;
}

int carve_cmd_slice(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(slice_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CARVE_EXIT_USAGE : 0;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(slice_help, stdout);
            return 0;
        }
    if (strcmp(argv[1], "create") == 0)
        return slice_create(argc - 1, argv + 1);
    if (strcmp(argv[1], "list") == 0)
        return slice_list(argc - 1, argv + 1);
    if (strcmp(argv[1], "delete") == 0) {
        if (argc != 3)
            return usage_error("slice delete", "give one NAME%s", "");
        json_t *r = call("slice delete", json_pack("{s:s,s:s}", "op", "delete", "name", argv[2]));
        if (!r)
            return 1;
        printf("slice %s deleted\n", argv[2]);
        json_decref(r);
        return 0;
    }
    return usage_error("slice", "unknown action `%s' (create, list, delete)", argv[1]);
}

/* GPUs NVML calls lost (fallen off the bus), and GPUs carved did not list at its start
 * (NVML did not answer for them then), before anything else: what carved shows of them (no
 * memory used, no process) is not what they hold. */
static void print_lost_gpus(json_t *snap)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(snap, "gpus"), i, g) {
        long long index = (long long)json_integer_value(json_object_get(g, "index"));
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        const char *answer = json_string_value(json_object_get(g, "nvml_answer"));
        bool lost = json_is_true(json_object_get(g, "lost"));
        if (json_is_true(json_object_get(g, "unlisted")) && lost)
            printf("GPU %lld is lost: NVML has answered `%s' for it since before carved's start "
                   "(fallen off the bus?), so carved does not list it: no slice goes there, and "
                   "slices made for it are listed as gone; see carved's log\n\n", index,
                   answer ? answer : "?");
        else if (json_is_true(json_object_get(g, "unlisted")))
            printf("GPU %lld (%s) is not watched: NVML did not answer for it at carved's start; "
                   "it does now: restart carved to use it\n\n", index, uuid ? uuid : "");
        else if (lost)
            printf("GPU %lld (%s) is lost: NVML answers nothing for it (fallen off the bus?), "
                   "so its slices' use and processes there read as none; see carved's log\n\n",
                   index, uuid ? uuid : "");
    }
}

/* NVIDIA's MPS servers on the GPUs, when there are any: in no slice, yet not escapes. */
static void print_mps_servers(json_t *snap)
{
    size_t i, j;
    json_t *g, *p;
    bool header = false;
    json_array_foreach(json_object_get(snap, "gpus"), i, g)
        json_array_foreach(json_object_get(g, "processes"), j, p) {
            if (!json_is_true(json_object_get(p, "mps_server")))
                continue;
            if (!header)
                printf("\nMPS servers (they run the work of MPS clients, which are listed "
                       "above; not escapes):\n");
            header = true;
            char used[32];
            carve_format_size((uint64_t)json_integer_value(json_object_get(p, "used_memory")),
                              used, sizeof(used));
            printf("  GPU %lld pid %lld user %s command %s memory %s\n",
                   (long long)json_integer_value(json_object_get(g, "index")),
                   (long long)json_integer_value(json_object_get(p, "pid")),
                   json_string_value(json_object_get(p, "user")),
                   json_string_value(json_object_get(p, "command")), used);
        }
}

static const char ps_help[] =
    "usage: carve ps [--json|-j]\n"
    "\n"
    "What carved sees: each slice with its processes (pid, user, command, memory; one of a\n"
    "container's PID namespace says its pid there too), memory used and cap, achieved\n"
    "compute share and idle time; then every GPU process that is in no slice (an escape: a\n"
    "static binary, or one that dropped LD_PRELOAD), and NVIDIA's MPS servers, which are in\n"
    "no slice but not escapes.\n"
    "--json (-j) prints carved's whole snapshot (the schema is in carved/carved.h).\n";

/* One row of carve ps's slice processes. One of another PID namespace than carved's (a
 * container) says its pid there too; one that carved cannot find has no pid here. */
static void print_slice_process(const char *slice, json_t *p)
{
    char used[32], pid[24] = "?", ns[24] = "unknown", note[160] = "";
    carve_format_size((uint64_t)json_integer_value(json_object_get(p, "memory_used")), used,
                      sizeof(used));
    json_t *here = json_object_get(p, "pid"), *pidns = json_object_get(p, "pid_namespace");
    long long inner = json_integer_value(json_object_get(p, "namespace_pid"));
    if (json_is_integer(here))
        snprintf(pid, sizeof(pid), "%lld", (long long)json_integer_value(here));
    if (json_is_integer(pidns))
        snprintf(ns, sizeof(ns), "%lld", (long long)json_integer_value(pidns));
    if (!json_is_integer(here))
        snprintf(note, sizeof(note), "  (pid %lld in PID namespace %s: carved cannot find it, "
                 "see its log)", inner, ns);
    else if (inner && inner != json_integer_value(here))
        snprintf(note, sizeof(note), "  (pid %lld in PID namespace %s)", inner, ns);
    printf("%-20s %8s %-10s %-16s %s%s\n", slice, pid,
           json_string_value(json_object_get(p, "user")),
           json_string_value(json_object_get(p, "command")), used, note);
}

int carve_cmd_ps(int argc, char **argv)
{
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
            as_json = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(ps_help, stdout);
            return 0;
        } else
            return usage_error("ps", "unknown option `%s'", argv[i]);
    }
    json_t *r = call("ps", json_pack("{s:s}", "op", "ps"));
    if (!r)
        return 1;
    json_t *snap = json_object_get(r, "snapshot");
    if (as_json) {
        json_dumpf(snap, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(r);
        return 0;
    }
    print_lost_gpus(snap);
    print_slices(snap);
    size_t i, j;
    json_t *s, *p;
    printf("\n%-20s %8s %-10s %-16s %s\n", "SLICE", "PID", "USER", "COMMAND", "MEMORY");
    json_array_foreach(json_object_get(snap, "slices"), i, s)
        json_array_foreach(json_object_get(s, "processes"), j, p)
            print_slice_process(json_string_value(json_object_get(s, "name")), p);
    json_t *esc = json_object_get(snap, "escapes");
    printf("\nescapes (GPU processes in no slice, in a slice NVML sees over its cap, or in one "
           "not open to their user): %zu\n", json_array_size(esc));
    json_array_foreach(esc, i, p) {
        const char *in = json_string_value(json_object_get(p, "slice"));
        const char *reason = json_string_value(json_object_get(p, "reason"));
        char where[128] = "";
        if (in)
            snprintf(where, sizeof(where), " in slice %s, %s", in,
                     reason && strcmp(reason, "not_allowed") == 0 ? "not open to its user"
                                                                  : "over its cap");
        const char *action = json_string_value(json_object_get(p, "action"));
        printf("  GPU %lld pid %lld user %s command %s%s: %s\n",
               (long long)json_integer_value(json_object_get(p, "gpu")),
               (long long)json_integer_value(json_object_get(p, "pid")),
               json_string_value(json_object_get(p, "user")),
               json_string_value(json_object_get(p, "command")), where,
               action && strcmp(action, "not_killed") == 0
                   ? "not killed (no CUDA process has this pid here: see carved's log)"
                   : action);
    }
    print_mps_servers(snap);
    json_decref(r);
    return 0;
}
