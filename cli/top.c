/* top.c - `carve top`, built as lib/carve/carve-top (which top_exec.c runs, so that only it
 * loads ncurses): a live terminal view of carved's snapshot (carved/carved.h): per GPU its
 * memory and utilisation, per slice its memory used against its cap, achieved compute
 * share, idle time and processes, then the GPU processes and the escapes. It asks carved for
 * a fresh snapshot every interval and redraws with ncurses; --once prints one frame as plain
 * text (scripts, tests, a log) and --json one snapshot. One renderer writes both: a frame is
 * a list of lines, each with an emphasis, that either printf or ncurses puts out. */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "size.h"

static const char top_help[] =
    "usage: carve top [--interval SECONDS] [--sort KEY] [--once | --json] [--input FILE]\n"
    "                 [--width COLUMNS]\n"
    "\n"
    "A live view of what carved sees, redrawn every second: per GPU its memory and\n"
    "utilisation; per slice on it a bar of memory used against the cap, the compute share\n"
    "achieved over the last poll (and the one asked for), idle time and process count;\n"
    "then every GPU process with its slice, and the escapes (GPU processes in no slice, or\n"
    "past their slice's cap).\n"
    "\n"
    "options:\n"
    "  -i, --interval SECONDS  between redraws (0.2-60, default 1)\n"
    "  -s, --sort KEY          order of the slices under each GPU: name (default), memory\n"
    "                          (most used first), share (highest first) or idle (longest\n"
    "                          idle first)\n"
    "  -1, --once              print one frame as plain text and exit\n"
    "  -j, --json              print one snapshot as JSON (as carve ps --json) and exit\n"
    "  -f, --input FILE        render a saved snapshot (carve ps --json > FILE) instead of\n"
    "                          asking carved; with --once, for tests and reports\n"
    "  -w, --width COLUMNS     width of a --once frame (default $COLUMNS, else 100)\n"
    "  -h, --help              this text\n"
    "\n"
    "keys: q quits; s cycles the sort key (name, memory, share, idle).\n"
    "A slice idle for carved's idle_after is marked IDLE. The socket is CARVE_SOCKET\n"
    "(default /run/carve/carved.sock).\n"
    "\n"
    "exit status: 0; 1 when carved cannot be reached (--once, --json) or FILE cannot be\n"
    "read; 2 for bad options.\n";

enum sort_key { SORT_NAME, SORT_MEMORY, SORT_SHARE, SORT_IDLE, SORT_KEYS };
static const char *const sort_names[SORT_KEYS] = {"name", "memory", "share", "idle"};

/* What a line is, so that ncurses can make it stand out; plain text ignores it. */
enum emphasis { EM_NONE, EM_TITLE, EM_HEADER, EM_GPU, EM_IDLE, EM_ALERT, EM_DIM };

/* A frame's sink: plain text on a stream, or the rows of the ncurses screen. */
struct frame {
    FILE *plain;  /* --once; NULL: ncurses */
    int row, rows; /* ncurses: the next row, and how many the screen has */
    int width;
    int name_w; /* the slice names' column (render sets it) */
};

__attribute__((format(printf, 3, 4)))
static void line(struct frame *f, enum emphasis em, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if ((size_t)f->width < sizeof(text))
        text[f->width] = '\0'; /* one screen line, never a wrapped one */
    if (f->plain) {
        size_t n = strlen(text); /* no trailing blanks: lines compare cleanly in tests */
        while (n > 0 && text[n - 1] == ' ')
            text[--n] = '\0';
        fprintf(f->plain, "%s\n", text);
        return;
    }
    if (f->row >= f->rows)
        return;
    int attr = em == EM_TITLE    ? A_REVERSE
             : em == EM_HEADER   ? A_BOLD
             : em == EM_GPU      ? A_BOLD | COLOR_PAIR(1)
             : em == EM_IDLE     ? COLOR_PAIR(2)
             : em == EM_ALERT    ? A_BOLD | COLOR_PAIR(3)
             : em == EM_DIM      ? A_DIM
                                 : A_NORMAL;
    attron(attr);
    mvaddstr(f->row, 0, text);
    if (em == EM_TITLE)
        for (int x = (int)strlen(text); x < f->width; x++)
            addch(' ');
    attroff(attr);
    f->row++;
}

/* ---- reading the snapshot: it comes from carved, but a missing field is shown as 0 or
 * "-" rather than trusted to be there ---- */

static double num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key, const char *none)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : none;
}

static void size_text(double bytes, char *out, size_t len)
{
    if (!(bytes > 0)) {
        snprintf(out, len, "0");
        return;
    }
    carve_format_size((uint64_t)bytes, out, len);
}

/* "[#####.....]" of width cells (brackets included) for used out of cap; a '!' bar when
 * used passes cap, which a capped slice should never show. */
static void bar(double used, double cap, int width, char *out)
{
    int cells = width - 2;
    int full = cap > 0 ? (int)((double)cells * (used > cap ? 1.0 : used / cap) + 0.5) : 0;
    out[0] = '[';
    for (int i = 0; i < cells; i++)
        out[1 + i] = i < full ? (used > cap ? '!' : '#') : cap > 0 ? '.' : ' ';
    out[cells + 1] = ']';
    out[cells + 2] = '\0';
}

/* whole seconds, without libm: every `carve run` loads what carve links */
static void duration_text(double seconds, char *out, size_t len)
{
    unsigned long long s = seconds >= 1 && seconds < 1e15 ? (unsigned long long)seconds : 0;
    if (s < 60)
        snprintf(out, len, "%llus", s);
    else if (s < 3600)
        snprintf(out, len, "%llum%02llus", s / 60, s % 60);
    else if (s < 86400)
        snprintf(out, len, "%lluh%02llum", s / 3600, s % 3600 / 60);
    else
        snprintf(out, len, "%llud%02lluh", s / 86400, s % 86400 / 3600);
}

/* One slice's entry on one GPU, for sorting. */
struct row {
    const json_t *slice, *dev;
};

static enum sort_key current_sort;

static int compare_rows(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    double kx = 0, ky = 0;
    switch (current_sort) {
    case SORT_MEMORY: kx = num(x->dev, "memory_used"); ky = num(y->dev, "memory_used"); break;
    case SORT_SHARE: kx = num(x->dev, "compute_share"); ky = num(y->dev, "compute_share"); break;
    case SORT_IDLE: kx = num(x->slice, "idle_seconds"); ky = num(y->slice, "idle_seconds"); break;
    default: break;
    }
    if (kx != ky)
        return kx < ky ? 1 : -1; /* the most first */
    return strcmp(str(x->slice, "name", ""), str(y->slice, "name", ""));
}

/* The slices with an entry on GPU index, sorted; returns how many (at most max). */
static size_t slices_on(const json_t *snap, json_int_t index, struct row *rows, size_t max)
{
    size_t n = 0, i, j;
    json_t *s, *d;
    json_array_foreach(json_object_get(snap, "slices"), i, s) {
        if (!json_is_object(s))
            continue;
        json_array_foreach(json_object_get(s, "devices"), j, d)
            if (n < max && json_integer_value(json_object_get(d, "index")) == index)
                rows[n++] = (struct row){s, d};
    }
    qsort(rows, n, sizeof(rows[0]), compare_rows);
    return n;
}

#define NAME_TEXT 1024 /* a name cut to fit, with its "..." (a line is 1024 at most) */
#define NAME_W 16 /* the slice names' column at least, and as long as the names fit in it */
#define OWNER_W 10
#define BAR_MIN 12 /* a slice's memory bar: from 12 cells (brackets included) to 32 */
#define BAR_MAX 32
/* a slice's line but its name and bar: "  " NAME " " OWNER " " PROCS(5) "  " BAR " "
   USED / CAP(21) " " SHARE(7) " " TARGET(7) "  " IDLE ("IDLE 2h01m", 10) */
#define SLICE_LINE_REST (2 + 1 + OWNER_W + 1 + 5 + 2 + 1 + 21 + 1 + 7 + 1 + 7 + 2 + 10)

/* The slice names' column: wide enough for the longest name in the snapshot, as far as the
 * width allows with the bars at their smallest (a bar gives up its cells before a name is
 * cut); never under NAME_W. It was NAME_W always, and `carve run's names
 * (COMMAND-PID-RANDOM) were cut to the same 16 characters. */
static int name_width(const json_t *snap, int width)
{
    size_t longest = 0, i, j;
    json_t *s, *g, *p;
    json_array_foreach(json_object_get(snap, "slices"), i, s)
        if (json_string_length(json_object_get(s, "name")) > longest)
            longest = json_string_length(json_object_get(s, "name"));
    json_array_foreach(json_object_get(snap, "gpus"), i, g)
        json_array_foreach(json_object_get(g, "processes"), j, p)
            if (json_string_length(json_object_get(p, "slice")) > longest)
                longest = json_string_length(json_object_get(p, "slice"));
    int room = width - SLICE_LINE_REST - BAR_MIN;
    if (room <= NAME_W) /* a narrow frame: its lines are cut at the width anyway */
        return NAME_W;
    return longest < (size_t)room ? (longest > NAME_W ? (int)longest : NAME_W) : room;
}

/* name in w columns: whole when it fits, else its start and its end around "...", so that
 * two names cut are never the same text without a sign (carve run's differ at the end) */
static const char *fit_name(const char *name, int w, char *out, size_t len)
{
    size_t n = strlen(name);
    if (n <= (size_t)w || w < 5 || (size_t)w >= len)
        return name; /* the column's precision cuts a name in a column too narrow for "..." */
    size_t head = (size_t)(w - 3) / 2, tail = (size_t)(w - 3) - head;
    snprintf(out, len, "%.*s...%s", (int)head, name, name + n - tail);
    return out;
}

static void gpu_section(struct frame *f, const json_t *snap, const json_t *gpu)
{
    json_int_t index = json_integer_value(json_object_get(gpu, "index"));
    double used = num(gpu, "memory_used"), total = num(gpu, "memory_total");
    char u[32], t[32], b[128];
    size_text(used, u, sizeof(u));
    size_text(total, t, sizeof(t));
    int bw = f->width - 80 > 42 ? 42 : f->width - 80 < 12 ? 12 : f->width - 80;
    bar(used, total, bw, b);
    line(f, EM_GPU, "GPU %lld  %-22.22s util %3.0f%%  %s %s / %s  %zu proc%s", (long long)index,
         str(gpu, "name", "?"), num(gpu, "utilization"), b, u, t,
         json_array_size(json_object_get(gpu, "processes")),
         json_array_size(json_object_get(gpu, "processes")) == 1 ? "" : "s");
    bool unlisted = json_is_true(json_object_get(gpu, "unlisted"));
    if (json_is_true(json_object_get(gpu, "lost")))
        line(f, EM_GPU, unlisted ? "  LOST since before carved started: carved does not list "
                                   "it (no UUID from NVML): see carved's log"
                                 : "  LOST: NVML answers nothing for it (fallen off the bus?): "
                                   "see carved's log");
    else if (unlisted)
        line(f, EM_GPU, "  NOT WATCHED: NVML did not answer for it at carved's start: restart "
                        "carved to use it");

    static struct row rows[4096];
    size_t n = slices_on(snap, index, rows, sizeof(rows) / sizeof(rows[0]));
    if (n == 0) {
        line(f, EM_DIM, "  (no slices on this GPU)");
        return;
    }
    /* the bar takes what the width has beyond 100 columns, less what longer names took */
    int spare = f->width - 100 - (f->name_w - NAME_W);
    int sbw = spare > BAR_MAX ? BAR_MAX : spare < BAR_MIN ? BAR_MIN : spare;
    line(f, EM_HEADER, "  %-*s %-*s %5s  %-*s %-21s %7s %7s  %s", f->name_w, "SLICE", OWNER_W,
         "OWNER", "PROCS", sbw, "MEMORY", "USED / CAP", "SHARE", "TARGET", "IDLE");
    for (size_t i = 0; i < n; i++) {
        const json_t *s = rows[i].slice, *d = rows[i].dev;
        double su = num(d, "memory_used"), cap = num(d, "memory_cap");
        char su_t[32], cap_t[32], mem[80], idle[32], name[NAME_TEXT];
        size_text(su, su_t, sizeof(su_t));
        if (cap > 0)
            size_text(cap, cap_t, sizeof(cap_t));
        else
            snprintf(cap_t, sizeof(cap_t), "none");
        snprintf(mem, sizeof(mem), "%s / %s", su_t, cap_t);
        bar(su, cap, sbw, b);
        bool is_idle = json_is_true(json_object_get(s, "idle"));
        duration_text(num(s, "idle_seconds"), idle, sizeof(idle));
        line(f, is_idle ? EM_IDLE : su > cap && cap > 0 ? EM_ALERT : EM_NONE,
             "  %-*.*s %-*.*s %5zu  %s %-21s %6.1f%% %7s  %s%s", f->name_w, f->name_w,
             fit_name(str(s, "name", "?"), f->name_w, name, sizeof(name)), OWNER_W, OWNER_W,
             str(s, "owner", "?"),
             json_array_size(json_object_get(s, "processes")), b, mem,
             num(d, "compute_share"), str(d, "compute", "-"), is_idle ? "IDLE " : "", idle);
    }
}

static void render(struct frame *f, const json_t *snap, const char *note)
{
    char when[32] = "?";
    time_t t = (time_t)num(snap, "time");
    struct tm tm;
    if (t > 0 && localtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    json_t *gpus = json_object_get(snap, "gpus"), *slices = json_object_get(snap, "slices");
    json_t *escapes = json_object_get(snap, "escapes");
    f->name_w = name_width(snap, f->width);
    size_t nproc = 0, i, j;
    json_t *g, *p;
    json_array_foreach(gpus, i, g)
        nproc += json_array_size(json_object_get(g, "processes"));
    line(f, EM_TITLE, "carve top - %s%s - %s - sort: %s", str(snap, "node", "?"),
         json_is_true(json_object_get(snap, "simulated")) ? " (simulated GPU)" : "", when,
         sort_names[current_sort]);
    line(f, EM_NONE, "%zu GPU%s, %zu slice%s, %zu process%s, %zu escape%s",
         json_array_size(gpus), json_array_size(gpus) == 1 ? "" : "s", json_array_size(slices),
         json_array_size(slices) == 1 ? "" : "s", nproc, nproc == 1 ? "" : "es",
         json_array_size(escapes), json_array_size(escapes) == 1 ? "" : "s");
    if (note)
        line(f, EM_ALERT, "%s", note);
    line(f, EM_NONE, "%s", "");
    if (json_array_size(gpus) == 0)
        line(f, EM_DIM, "(carved sees no GPU)");
    json_array_foreach(gpus, i, g) {
        gpu_section(f, snap, g);
        line(f, EM_NONE, "%s", "");
    }

    line(f, EM_HEADER, "PROCESSES");
    line(f, EM_HEADER, "  %3s %8s %-*s %-*s %10s %4s  %s", "GPU", "PID", OWNER_W, "USER",
         f->name_w, "SLICE", "MEMORY", "SM%", "COMMAND");
    if (nproc == 0)
        line(f, EM_DIM, "  (none)");
    json_array_foreach(gpus, i, g)
        json_array_foreach(json_object_get(g, "processes"), j, p) {
            char m[32], name[NAME_TEXT];
            size_text(num(p, "used_memory"), m, sizeof(m));
            const char *slice = str(p, "slice", NULL);
            bool mps_server = json_is_true(json_object_get(p, "mps_server"));
            line(f, slice || mps_server ? EM_NONE : EM_ALERT,
                 "  %3lld %8lld %-*.*s %-*.*s %10s %4.0f  %s",
                 (long long)json_integer_value(json_object_get(g, "index")),
                 (long long)json_integer_value(json_object_get(p, "pid")), OWNER_W, OWNER_W,
                 str(p, "user", "?"), f->name_w, f->name_w,
                 slice ? fit_name(slice, f->name_w, name, sizeof(name))
                       : mps_server ? "(mps server)" : "(escape)", m,
                 num(p, "sm_util"), str(p, "command", "?"));
        }
    line(f, EM_NONE, "%s", "");

    line(f, json_array_size(escapes) ? EM_ALERT : EM_HEADER,
         "ESCAPES (GPU processes in no slice, or past their slice's cap): %zu",
         json_array_size(escapes));
    json_array_foreach(escapes, i, p) {
        char m[32];
        size_text(num(p, "used_memory"), m, sizeof(m));
        bool over = strcmp(str(p, "reason", ""), "over_cap") == 0;
        const char *action = str(p, "action", "reported");
        line(f, EM_ALERT, "  GPU %lld pid %lld user %s command %s memory %s: %s%s",
             (long long)json_integer_value(json_object_get(p, "gpu")),
             (long long)json_integer_value(json_object_get(p, "pid")), str(p, "user", "?"),
             str(p, "command", "?"), m,
             strcmp(action, "not_killed") == 0 ? "not killed (no CUDA process has this pid here)"
                                               : action,
             over ? " (its slice is past its cap)" : "");
    }
    json_t *tot = json_object_get(snap, "totals");
    /* kept in slices.json: they go on across restarts of carved */
    line(f, EM_DIM, "carved's totals: %.0f escapes seen, %.0f killed, %.0f idle reclaims",
         num(tot, "escapes"), num(tot, "escapes_killed"), num(tot, "idle_reclaims"));
    /* the slices' own counts, kept in their tables: from before a restart of carved, and gone
       with a deleted slice */
    line(f, EM_DIM, "allocations refused at a cap by the slices there now: %.0f",
         num(tot, "oom_denials"));
}

/* ---- where snapshots come from ---- */

static json_t *load_file(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    struct stat st;
    if (stat(path, &st) < 0) { /* jansson's 160-byte message cut a long path's reason off */
        snprintf(err, errlen, "unable to open %.200s%s: %s (carve ps --json > FILE saves a "
                 "snapshot)", path, strlen(path) > 200 ? "..." : "", strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) { /* jansson reads it as an empty file */
        snprintf(err, errlen, "%s is a directory (carve ps --json > FILE saves a snapshot)",
                 path);
        return NULL;
    }
    json_t *snap = json_load_file(path, 0, &je);
    if (!snap && je.line < 1) /* not opened or not read: jansson has no line to name */
        snprintf(err, errlen, "%s (carve ps --json > FILE saves a snapshot)", je.text);
    else if (!snap)
        snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
    if (!snap)
        return NULL;
    if (!json_is_object(snap)) {
        snprintf(err, errlen, "%s: not a snapshot (carve ps --json writes one)", path);
        json_decref(snap);
        return NULL;
    }
    return snap;
}

/* A new snapshot from carved, or NULL with why. */
static json_t *fetch(char *err, size_t errlen)
{
    int fd = carve_daemon_connect();
    if (fd < 0) {
        snprintf(err, errlen, "carved is not running (no one listens on %s; start it, or set "
                 "CARVE_SOCKET)", carve_socket_path());
        return NULL;
    }
    json_t *r = carve_daemon_call(fd, json_pack("{s:s}", "op", "ps"), err, errlen);
    close(fd);
    if (!r)
        return NULL;
    json_t *snap = json_incref(json_object_get(r, "snapshot"));
    json_decref(r);
    if (!json_is_object(snap)) {
        json_decref(snap);
        snprintf(err, errlen, "carved's reply has no snapshot");
        return NULL;
    }
    return snap;
}

static json_t *get_snapshot(const char *input, char *err, size_t errlen)
{
    return input ? load_file(input, err, errlen) : fetch(err, errlen);
}

/* ---- the live view ---- */

static int live(const char *input, double interval)
{
    if (!initscr()) {
        fprintf(stderr, "carve top: cannot start the terminal (TERM=%s); try --once\n",
                getenv("TERM") ? getenv("TERM") : "");
        return 1;
    }
    cbreak();
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_CYAN, -1);
        init_pair(2, COLOR_YELLOW, -1);
        init_pair(3, COLOR_RED, -1);
    }
    json_t *snap = NULL;
    char err[1024] = "";
    bool fetch_now = true;
    for (;;) {
        if (fetch_now) {
            json_t *fresh = get_snapshot(input, err, sizeof(err));
            if (fresh) {
                json_decref(snap);
                snap = fresh;
                err[0] = '\0';
            }
        }
        erase();
        struct frame f = {.rows = LINES - 1, .width = COLS};
        if (snap) {
            render(&f, snap, err[0] ? err : NULL);
        } else {
            line(&f, EM_TITLE, "carve top");
            line(&f, EM_ALERT, "%s", err);
        }
        attron(A_REVERSE);
        mvaddstr(LINES - 1, 0, " q quit   s sort ");
        attroff(A_REVERSE);
        refresh();
        timeout((int)(interval * 1000));
        int key = getch();
        fetch_now = key == ERR; /* a key press redraws at once from what is there */
        if (key == 'q' || key == 'Q')
            break;
        if (key == 's' || key == 'S')
            current_sort = (enum sort_key)((current_sort + 1) % SORT_KEYS);
    }
    endwin();
    json_decref(snap);
    return 0;
}

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "carve top: ");
    fprintf(stderr, what, arg);
    fprintf(stderr, "\n(see carve top --help)\n");
    return CARVE_EXIT_USAGE;
}

int carve_cmd_top(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, 'i'}, {"sort", required_argument, NULL, 's'},
        {"once", no_argument, NULL, '1'},           {"json", no_argument, NULL, 'j'},
        {"input", required_argument, NULL, 'f'},    {"width", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    double interval = 1.0;
    bool once = false, as_json = false;
    const char *input = NULL;
    int width = 0, c;
    char *end;
    current_sort = SORT_NAME;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:s:1jf:w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            errno = 0;
            interval = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(interval >= 0.2 && interval <= 60))
                return usage_error("--interval `%s' is not a number of seconds in 0.2-60", optarg);
            break;
        case 's': {
            int k = 0;
            while (k < SORT_KEYS && strcmp(optarg, sort_names[k]) != 0)
                k++;
            if (k == SORT_KEYS)
                return usage_error("--sort `%s' is not name, memory, share or idle", optarg);
            current_sort = (enum sort_key)k;
            break;
        }
        case '1': once = true; break;
        case 'j': as_json = true; break;
        case 'f': input = optarg; break;
        case 'w': {
            long w = strtol(optarg, &end, 10);
            if (end == optarg || *end || w < 40 || w > 1000)
                return usage_error("--width `%s' is not a number of columns in 40-1000", optarg);
            width = (int)w;
            break;
        }
        case 'h': fputs(top_help, stdout); return 0;
        case ':': return usage_error("option `%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument `%s'", argv[optind]);
    if (once && as_json)
        return usage_error("%s", "give --once or --json, not both");
    if (once || as_json) {
        char err[1024];
        json_t *snap = get_snapshot(input, err, sizeof(err));
        if (!snap) {
            fprintf(stderr, "carve top: %s\n", err);
            return 1;
        }
        if (as_json) {
            json_dumpf(snap, stdout, JSON_INDENT(2));
            putchar('\n');
        } else {
            const char *cols = getenv("COLUMNS");
            long w = cols ? strtol(cols, NULL, 10) : 0;
            struct frame f = {.plain = stdout, .width = width ? width : w >= 40 && w <= 1000 ? (int)w : 100};
            render(&f, snap, NULL);
        }
        json_decref(snap);
        return 0;
    }
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return usage_error("%s", "the live view needs a terminal; use --once or --json in scripts");
    return live(input, interval);
}

#ifdef CARVE_TOP_PROGRAM
/* lib/carve/carve-top, which `carve top` runs (top_exec.c): ncurses is loaded by this
 * program alone, not by every `carve run`. argv[0] is "top". */
int main(int argc, char **argv)
{
    return carve_cmd_top(argc, argv);
}
#endif
