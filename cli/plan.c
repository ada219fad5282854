/* plan.c - `carve plan WORKLOADS --fleet SPEC`: pack a workload list onto a fleet under every
 * sharing mechanism and show GPUs, stranded memory and cost side by side (planner/fleet*.c). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fleet.h"
#include "fleet_report.h"

static const char plan_help[] =
    "usage: carve plan WORKLOADS --fleet SPEC [--json [--assign]] [--svg FILE]\n"
    "                  [--picture|--no-picture] [--replicas N] [--mps-clients N]\n"
    "                  [--slices N] [--threads N]\n"
    "       carve plan --models [--json]\n"
    "\n"
    "Packs the workloads of WORKLOADS (a CSV or JSON file; - for stdin) onto the fleet SPEC\n"
    "under each sharing mechanism (whole GPUs, time-slicing, MPS, MIG, carve slices) and\n"
    "shows, side by side, the GPUs each needs, a lower bound no packing can beat, the memory\n"
    "left stranded, the cost per hour and what each saves against whole GPUs.\n"
    "\n"
    "options:\n"
    "  -f, --fleet SPEC     the GPUs: POOL[,POOL...], POOL = MODEL[:COUNT][@PRICE]; MODEL is\n"
    "                       a known model (--models) or NAME/SIZE for another GPU; COUNT\n"
    "                       left out = as many as needed; PRICE in $ per GPU-hour, for\n"
    "                       every pool or for none (@0: GPUs that cost nothing).\n"
    "  -j, --json           the plans as JSON (stable field names; see docs/plan.md)\n"
    "  -a, --assign         with --json: each plan's workload -> GPU (and MIG profile) list\n"
    "  -s, --svg FILE       draw the packing of each plan's first 120 GPUs into FILE\n"
    "  -p, --picture        draw the terminal picture even when stdout is not a terminal\n"
    "  -P, --no-picture     leave it out even on a terminal\n"
    "  -r, --replicas N     time-slicing: most workloads on one GPU (default 16)\n"
    "  -c, --mps-clients N  MPS: most clients on one GPU (default 48)\n"
    "  -S, --slices N       carve: most slices on one GPU (default 64)\n"
    "  -t, --threads N      plan the mechanisms on N threads at once (default: as many as\n"
    "                       the CPUs carve may run on; more than 5 is 5). The plans are the\n"
    "                       same whatever N is.\n"
    "  -m, --models         list the GPU models carve knows, their memory and MIG support\n"
    "                       (with --json only: no file, no other option)\n"
    "  -h, --help           this text\n"
    "\n"
    "WORKLOADS (CSV: a header naming the columns, then one workload a line; # comments):\n"
    "  name      any text (default: lineN)\n"
    "  memory    required: 8GiB, 512MiB, 1.5G (what the workload allocates, context included)\n"
    "  compute   percent of one GPU's time it keeps busy: 30%, 12.5 (default 0)\n"
    "  latency   strict (online, P99 budget), normal (default) or relaxed (batch, notebook)\n"
    "  trust     trusted (one team, default) or untrusted (tenants that must be isolated)\n"
    "  count     this many identical workloads (default 1)\n"
    "  JSON: [{\"name\": \"a\", \"memory\": \"8GiB\", \"compute\": 30, ...}] or\n"
    "  {\"workloads\": [...]}. At most 256 MiB.\n"
    "\n"
    "RULES per mechanism: untrusted workloads get a GPU of their own except under MIG;\n"
    "time-slicing also gives strict-latency workloads their own GPU (context-switch\n"
    "jitter) and delivers 92% of a GPU's time to the rest; MPS puts strict-latency\n"
    "workloads only with each other; MIG gives each workload the smallest profile that\n"
    "holds its memory and compute, on A100, H100 and H200 pools.\n"
    "\n"
    "exit status: 0; 1 when some workloads cannot run on any GPU of the fleet (they are\n"
    "listed; the plans place the rest); 2 for bad input (the message names the line and\n"
    "field).\n"
    "\n"
    "examples:\n"
    "  carve plan jobs.csv --fleet H100-80GB:100@2.49\n"
    "  carve plan jobs.json --fleet A100-80GB:64@3.50,L4:200@0.80 --svg plan.svg\n"
    "  carve plan jobs.csv --fleet H100-80GB@2.49 --json --assign | jq '.plans[4]'\n";

struct plan_opts {
    const char *file;
    const char *fleet;
    const char *svg;
    bool json, assign, models;
    int picture; /* -1 auto (a terminal), 0 no, 1 yes */
    struct fleet_options fo;
};

static int plan_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "carve plan: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see carve plan --help)\n");
    return CARVE_EXIT_USAGE;
}

static int parse_limit(const char *opt, const char *s, unsigned max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || errno || *s == '-' || v < 1 || v > max) {
        fprintf(stderr, "carve plan: %s `%s' is not a whole number from 1 to %u\n", opt, s, max);
        return CARVE_EXIT_USAGE;
    }
    *out = (unsigned)v;
    return 0;
}

/* 0: go on; -1: done, exit 0 (help); else an exit status. */
static int parse_opts(int argc, char **argv, struct plan_opts *o)
{
    static const struct option longopts[] = {
        {"fleet", required_argument, NULL, 'f'},  {"json", no_argument, NULL, 'j'},
        {"assign", no_argument, NULL, 'a'},       {"svg", required_argument, NULL, 's'},
        {"picture", no_argument, NULL, 'p'},      {"no-picture", no_argument, NULL, 'P'},
        {"replicas", required_argument, NULL, 'r'}, {"mps-clients", required_argument, NULL, 'c'},
        {"slices", required_argument, NULL, 'S'}, {"threads", required_argument, NULL, 't'},
        {"models", no_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int c, r;
    const char *planning_opt = NULL; /* an option that shapes a plan: not for --models */
    while ((c = getopt_long(argc, argv, ":f:jas:pPr:c:S:t:mh", longopts, NULL)) != -1) {
        for (const struct option *l = longopts; l->name && !planning_opt; l++)
            if (l->val == c && c != 'j' && c != 'm' && c != 'h')
                planning_opt = l->name;
        switch (c) {
        case 'f': o->fleet = optarg; break;
        case 'j': o->json = true; break;
        case 'a': o->assign = true; break;
        case 's': o->svg = optarg; break;
        case 'p': o->picture = 1; break;
        case 'P': o->picture = 0; break;
        case 'r':
            if ((r = parse_limit("--replicas", optarg, 1024, &o->fo.timeslice_replicas)))
                return r;
            break;
        case 'c':
            if ((r = parse_limit("--mps-clients", optarg, 48, &o->fo.mps_clients)))
                return r;
            break;
        case 'S':
            if ((r = parse_limit("--slices", optarg, 64, &o->fo.carve_slices)))
                return r;
            break;
        case 't':
            if ((r = parse_limit("--threads", optarg, 1024, &o->fo.threads)))
                return r;
            break;
        case 'm': o->models = true; break;
        case 'h': fputs(plan_help, stdout); return -1;
        case ':': return plan_error("option `%s' needs a value", argv[optind - 1]);
        default: return plan_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (o->models) {
        /* carve plan --models jobs.csv read as a plan that never came: say so */
        if (optind < argc)
            return plan_error("--models lists the GPU models and takes no argument; `%s' "
                              "is one too many", argv[optind]);
        if (planning_opt)
            return plan_error("--models lists the GPU models and takes only --json; `--%s' "
                              "is for a plan", planning_opt);
        return 0;
    }
    if (optind >= argc)
        return plan_error("%s", "no workload file given (carve plan WORKLOADS --fleet SPEC)");
    if (optind + 1 < argc)
        return plan_error("one workload file only; `%s' is one too many", argv[optind + 1]);
    o->file = argv[optind];
    if (!o->fleet)
        return plan_error("%s", "--fleet SPEC is required (e.g. --fleet H100-80GB:100@2.49)");
    if (o->assign && !o->json)
        return plan_error("%s", "--assign goes with --json");
    return 0;
}

static int list_models(bool json)
{
    size_t n;
    const struct fleet_gpu_model *m = fleet_gpu_models(&n);
    json_t *arr = json ? json_array() : NULL;
    if (!json)
        printf("%-12s %-7s %10s  %-4s %s\n", "model", "family", "memory", "MIG", "architecture");
    for (size_t i = 0; i < n; i++) {
        struct fleet f;
        char err[256];
        fleet_parse_spec(m[i].name, &f, err, sizeof(err)); /* the memory the planner uses */
        if (json)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:b, s:s}", "model", m[i].name,
                                                 "family", m[i].family, "memory_mib",
                                                 (json_int_t)f.pools[0].memory_mib, "mig",
                                                 m[i].mig, "architecture", m[i].arch));
        else
            printf("%-12s %-7s %6llu MiB  %-4s %s\n", m[i].name, m[i].family,
                   (unsigned long long)f.pools[0].memory_mib, m[i].mig ? "yes" : "no", m[i].arch);
    }
    if (json) {
        json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(arr);
    }
    return 0;
}

/* The most a workload file may hold: 2,000,000 workloads (the parser's limit) of about 100
 * bytes a line fit with room to spare; /dev/zero or an endless pipe would otherwise be read
 * until memory ran out (carve plan /dev/zero ran for minutes). */
#define PLAN_MAX_FILE (256u << 20)

/* The whole file (or stdin for "-"), NUL-terminated; NULL with a message. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "carve plan: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    bool too_large = false;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            if (cap > PLAN_MAX_FILE) { /* holds PLAN_MAX_FILE + 1 bytes: one too many */
                too_large = true;
                break;
            }
            cap = cap * 2 > PLAN_MAX_FILE + 2 ? PLAN_MAX_FILE + 2 : cap * 2;
            char *bigger = realloc(buf, cap);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (too_large) {
        fprintf(stderr, "carve plan: %s is larger than %u MiB; give a workload list (CSV or "
                        "JSON) of at most that size\n",
                f == stdin ? "standard input" : path, PLAN_MAX_FILE >> 20);
        free(buf);
        buf = NULL;
    } else if (buf && ferror(f)) {
        fprintf(stderr, "carve plan: cannot read %s: %s\n", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf)
        fprintf(stderr, "carve plan: %s is too large to read into memory\n", path);
    if (f != stdin)
        fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

int carve_cmd_plan(int argc, char **argv)
{
    struct plan_opts o = {.picture = -1};
    fleet_options_defaults(&o.fo);
    int r = parse_opts(argc, argv, &o);
    if (r)
        return r < 0 ? 0 : r;
    if (o.models)
        return list_models(o.json);

    char err[512];
    struct fleet f;
    if (fleet_parse_spec(o.fleet, &f, err, sizeof(err)))
        return plan_error("--fleet: %s", err);
    size_t len;
    char *text = read_all(o.file, &len);
    if (!text)
        return CARVE_EXIT_USAGE;
    struct fleet_workloads ws = {0};
    const char *name = strcmp(o.file, "-") == 0 ? "<stdin>" : o.file;
    r = fleet_parse_workloads(text, len, name, &ws, err, sizeof(err));
    free(text);
    if (r) {
        fprintf(stderr, "carve plan: %s\n", err);
        fleet_workloads_free(&ws);
        return CARVE_EXIT_USAGE;
    }
    if (!ws.n) {
        fprintf(stderr, "carve plan: %s lists no workloads\n", name);
        fleet_workloads_free(&ws);
        return CARVE_EXIT_USAGE;
    }
    o.fo.keep_assignment = o.assign || o.svg || o.picture != 0;
    struct fleet_result res;
    if (fleet_plan_all(&f, &ws, &o.fo, &res)) {
        fprintf(stderr, "carve plan: out of memory planning %zu workloads\n", ws.n);
        fleet_workloads_free(&ws);
        return 1;
    }
    int ret = res.nimpossible ? 1 : 0;
    if (o.svg) {
        FILE *svg = fopen(o.svg, "w");
        if (!svg || fleet_report_svg(svg, &f, &ws, &res, 120) || fclose(svg)) {
            fprintf(stderr, "carve plan: cannot write %s: %s\n", o.svg, strerror(errno));
            ret = 1;
        }
    }
    if (o.json && o.assign) {
        if (fleet_report_json_stream(stdout, &f, &ws, &res)) {
            fprintf(stderr, "carve plan: cannot write the JSON: %s\n", strerror(errno));
            ret = 1;
        }
    } else if (o.json) {
        json_t *j = fleet_report_json(&f, &ws, &res, false);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(j);
    } else {
        fleet_report_text(stdout, &f, &ws, &res);
        if (o.picture == 1 || (o.picture < 0 && isatty(STDOUT_FILENO)))
            fleet_report_picture(stdout, &f, &res, 60);
        if (res.nimpossible)
            fprintf(stderr, "carve plan: %zu workload%s cannot run on any GPU of this fleet "
                            "(listed above)\n", res.nimpossible, res.nimpossible == 1 ? "" : "s");
    }
    fleet_result_free(&res);
    fleet_workloads_free(&ws);
    return ret;
}
