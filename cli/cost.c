/* cost.c - `carve cost`: the GPU economics calculator (planner/cost.c) from assumptions given
 * on the command line, or from what carved measures (--from-metrics: its unix socket, a saved
 * snapshot file, or a snapshot on standard input). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cost.h"

static const char cost_help[] =
    "usage: carve cost [--gpus N] [--price DOLLARS] [--tenants N] [--utilisation PCT]\n"
    "                  [--gpu MODEL] [--mechanism NAME] [--json]\n"
    "       carve cost --from-metrics [SOCKET|FILE|-] [--price DOLLARS] [--mechanism NAME]\n"
    "                  [--json]\n"
    "\n"
    "The GPU economics calculator: for a cluster where each workload had a GPU of its own,\n"
    "what sharing each GPU among tenants costs per workload-hour, against the baseline of a\n"
    "whole GPU, and how many idle GPU-hours a day it recovers, per mechanism; and whether\n"
    "the mechanism suits the set-up. With no options it is the seed article's example: a\n"
    "10-GPU A100 cluster at $3.50/h, 4 tenants per GPU at 25% each.\n"
    "\n"
    "options:\n"
    "  -g, --gpus N           GPUs in the cluster, one workload each today: a whole\n"
    "                         number, 1 to 10000000 (default 10)\n"
    "  -p, --price DOLLARS    price per GPU-hour (default 3.50)\n"
    "  -t, --tenants N        tenants per GPU, 1 to 64 (default 4)\n"
    "  -u, --utilisation PCT  each tenant's busy share of one GPU, e.g. 25% (default 25%)\n"
    "  -G, --gpu MODEL        the GPU model, for MIG's hardware gate (default A100): T4,\n"
    "                         V100, A10, L4, L40S, A100, H100, H200, B200, a board\n"
    "                         (H100-80GB) or NVML's name; another is refused\n"
    "  -m, --mechanism NAME   one mechanism, shown as the article's card: time-slicing,\n"
    "                         mps, mig, hami or carve (default: all, side by side)\n"
    "  -M, --from-metrics [SRC] take GPUs, tenants per GPU, utilisation and the model from\n"
    "                         carved: its unix socket (default CARVE_SOCKET or\n"
    "                         /run/carve/carved.sock), a saved snapshot JSON file, or -\n"
    "                         for a snapshot on standard input (a remote carved:\n"
    "                         curl -s http://HOST:9477/api/state | carve cost -M -)\n"
    "  -j, --json             the results as JSON\n"
    "  -h, --help             this text\n"
    "\n"
    "MODEL: hosted = tenants capped by the mechanism (MPS 48; MIG the instances that fit\n"
    "of the smallest real profile with ceil(7 x utilisation) compute slices: 1g x7, 2g x3,\n"
    "3g x2, 4g or 7g x1; carve 64); cost = price / (hosted x efficiency)\n"
    "(time-slicing 0.92, HAMi 0.97, carve 0.99, MPS and MIG 1); savings = cost / price - 1;\n"
    "recovered = GPUs x 24 x (1 - max(utilisation, 1/hosted)); GPUs needed = ceil(GPUs /\n"
    "hosted); suitable when it hosts all\n"
    "the tenants (hosted x utilisation <= 100%) and the GPU has the mechanism. A mechanism\n"
    "the GPU cannot run\n"
    "(MIG on an L4) shows no figures: \"not available\" and why. See docs/cost.md.\n"
    "\n"
    "exit status: 0; 1 when carved cannot be read; 2 for bad input.\n"
    "\n"
    "examples:\n"
    "  carve cost --mechanism time-slicing\n"
    "  carve cost --gpus 64 --price 2.49 --tenants 6 --utilisation 12% --gpu H100\n"
    "  carve cost --from-metrics --price 2.49\n"
    "  curl -s http://gpu-node-1:9477/api/state | carve cost --from-metrics - --price 2.49\n";

static int cost_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "carve cost: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see carve cost --help)\n");
    return CARVE_EXIT_USAGE;
}

static int parse_number(const char *opt, const char *s, double *out, bool percent)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    bool digits = end != s; /* a lone `%' is no number, not 0% */
    if (percent && *end == '%')
        end++;
    if (!digits || *end || errno || strpbrk(s, "xXnN") || !(v == v)) {
        fprintf(stderr, "carve cost: %s `%s' is not a number%s\n(see carve cost --help)\n", opt,
                s, percent ? " (a percentage such as 25%)" : "");
        return CARVE_EXIT_USAGE;
    }
    *out = percent ? v / 100.0 : v;
    return 0;
}

/* A count (GPUs, tenants) is a whole number written as one: digits only. strtod took 1e3 as
   1000 and 0x10 as 16, a count nobody writes that way on purpose. The range is cost_check's. */
static int parse_count(const char *opt, const char *s, unsigned max, double *out)
{
    if (!*s || s[strspn(s, "0123456789")] != '\0') {
        fprintf(stderr, "carve cost: %s `%s' is not a whole number (digits only, e.g. %s 10)\n"
                        "(see carve cost --help)\n", opt, s, opt);
        return CARVE_EXIT_USAGE;
    }
    /* past 9 digits a double would name it back as 1e+20: name it as given */
    if (strlen(s + strspn(s, "0")) > 9) {
        fprintf(stderr, "carve cost: %s `%s' is too large (at most %u)\n(see carve cost "
                        "--help)\n", opt, s, max);
        return CARVE_EXIT_USAGE;
    }
    *out = strtod(s, NULL);
    return 0;
}

/* ---- reading carved ---- */

/* The snapshot from SRC: a URL, a socket or a file; NULL with a message. */
static json_t *load_snapshot(const char *src, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = NULL;
    if (strncmp(src, "http://", 7) == 0 || strncmp(src, "https://", 8) == 0) {
        /* carve has no HTTP client of its own: curl is the one people trust. The snapshot is
         * at /api/state of the listener, whatever path the URL names (/metrics, /api/state) */
        size_t scheme = strstr(src, "://") - src + 3;
        int host = (int)(scheme + strcspn(src + scheme, "/?#"));
        snprintf(err, errlen, "%s: carve cost reads carved's socket, a snapshot file, or - (a "
                              "snapshot on standard input); for carved's HTTP listener: "
                              "curl -s %.*s/api/state | carve cost --from-metrics -", src,
                 host, src);
        return NULL;
    }
    if (strcmp(src, "-") == 0) {
        root = json_loadf(stdin, 0, &jerr);
        if (!root)
            snprintf(err, errlen, "standard input:%d: not JSON: %s", jerr.line, jerr.text);
        return root;
    }
    struct stat st;
    if (stat(src, &st) < 0) { /* a path of 100 KB is quoted in part, so that why still shows */
        snprintf(err, errlen, "%.200s%s: %s (give carved's socket, a snapshot file or -)",
                 src, strlen(src) > 200 ? "..." : "", strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) { /* jansson reads a directory as an empty file */
        snprintf(err, errlen, "%s is a directory (give carved's socket, a snapshot file or -)",
                 src);
        return NULL;
    }
    if (S_ISSOCK(st.st_mode)) {
        setenv("CARVE_SOCKET", src, 1);
        int fd = carve_daemon_connect();
        if (fd < 0) {
            snprintf(err, errlen, "cannot connect to carved at %s: %s", src, strerror(errno));
            return NULL;
        }
        json_t *reply = carve_daemon_call(fd, json_pack("{s:s}", "op", "ps"), err, errlen);
        close(fd);
        if (!reply)
            return NULL;
        root = json_incref(json_object_get(reply, "snapshot"));
        json_decref(reply);
        if (!root)
            snprintf(err, errlen, "carved at %s sent no snapshot", src);
        return root;
    }
    root = json_load_file(src, 0, &jerr);
    if (!root) {
        snprintf(err, errlen, "%s:%d: not JSON: %s", src, jerr.line, jerr.text);
        return NULL;
    }
    json_t *inner = json_object_get(root, "snapshot"); /* a saved socket reply */
    if (inner) {
        json_incref(inner);
        json_decref(root);
        root = inner;
    }
    return root;
}

/* ---- output ---- */

static void print_card(const struct cost_input *in, const struct cost_result *r)
{
    printf("Sharing mechanism        %s\n", cost_mech(r->mech)->title);
    if (!r->available) {
        printf("Not available            %s\n", r->unavailable_reason);
        printf("Baseline cost / hr       $%.2f\n", r->baseline_per_hour);
        printf("%s\n", r->verdict);
        return;
    }
    printf("Cost / workload / hr     $%.2f\n", r->cost_per_workload_hour);
    printf("Baseline cost / hr       $%.2f\n", r->baseline_per_hour);
    printf("Savings per workload     %.0f%%\n", r->savings_pct);
    printf("GPU-hrs recovered/day    %.0f\n", r->recovered_gpu_hours_day);
    printf("Tenants hosted per GPU   %.0f (%.0f%% of a GPU asked for)\n", r->tenants_hosted,
           r->demand * 100);
    printf("GPUs needed              %.0f of %.0f\n", r->gpus_needed, in->gpus);
    printf("%s\n", r->verdict);
}

static void print_table(const struct cost_result *r, int n)
{
    printf("%-13s %6s %13s %9s %8s %15s %6s\n", "mechanism", "hosted", "$/workload-h",
           "baseline", "savings", "GPU-h back/day", "suits");
    for (int i = 0; i < n; i++) {
        if (!r[i].available) { /* no figures to read a saving from */
            printf("%-13s not available: %s\n", cost_mech(r[i].mech)->name,
                   r[i].unavailable_reason);
            continue;
        }
        printf("%-13s %6.0f %13.2f %9.2f %7.0f%% %15.0f %6s\n", cost_mech(r[i].mech)->name,
               r[i].tenants_hosted, r[i].cost_per_workload_hour, r[i].baseline_per_hour,
               r[i].savings_pct, r[i].recovered_gpu_hours_day, r[i].suitable ? "yes" : "no");
    }
    printf("\n");
    for (int i = 0; i < n; i++)
        printf("%s\n", r[i].verdict);
}

int carve_cmd_cost(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'g'},     {"price", required_argument, NULL, 'p'},
        {"tenants", required_argument, NULL, 't'},  {"utilisation", required_argument, NULL, 'u'},
        {"utilization", required_argument, NULL, 'u'}, {"gpu", required_argument, NULL, 'G'},
        {"mechanism", required_argument, NULL, 'm'}, {"from-metrics", optional_argument, NULL, 'M'},
        {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cost_input in = {.gpus = 10, .price = 3.50, .tenants = 4, .utilisation = 0.25,
                            .gpu = "A100"};
    int mech = -1, c, r;
    bool json = false, metrics = false, set_shape = false;
    const char *src = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:g:p:t:u:G:m:M::jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': set_shape = true; if ((r = parse_count("--gpus", optarg, COST_MAX_GPUS, &in.gpus))) return r; break;
        case 'p': if ((r = parse_number("--price", optarg, &in.price, false))) return r; break;
        case 't': set_shape = true; if ((r = parse_count("--tenants", optarg, COST_MAX_TENANTS, &in.tenants))) return r; break;
        case 'u':
            set_shape = true;
            if ((r = parse_number("--utilisation", optarg, &in.utilisation, true)))
                return r;
            break;
        case 'G': {
            set_shape = true;
            in.gpu = optarg;
            json_t *text = json_string(optarg); /* NULL: not UTF-8, which JSON cannot carry */
            json_decref(text);
            if (!text || !*optarg)
                return cost_error("--gpu `%s' is not a GPU model name (e.g. A100, H100)", optarg);
            /* an unknown model would silently count as one without MIG */
            char gpu_err[400];
            if (cost_gpu_check(optarg, gpu_err, sizeof(gpu_err)))
                return cost_error("--gpu: %s", gpu_err);
            break;
        }
        case 'm':
            if ((mech = cost_mech_find(optarg)) < 0)
                return cost_error("--mechanism `%s' is not one of time-slicing, mps, mig, hami, "
                                  "carve", optarg);
            break;
        case 'M':
            metrics = true;
            src = optarg;
            /* the next word, when it is no option: a source, "-" (standard input) included */
            if (!src && optind < argc && (argv[optind][0] != '-' || strcmp(argv[optind], "-") == 0))
                src = argv[optind++];
            break;
        case 'j': json = true; break;
        case 'h': fputs(cost_help, stdout); return 0;
        case ':': return cost_error("option `%s' needs a value", argv[optind - 1]);
        default: return cost_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind < argc)
        return cost_error("unexpected argument `%s'", argv[optind]);
    if (metrics && set_shape)
        return cost_error("%s", "--from-metrics measures GPUs, tenants, utilisation and the "
                                "model; give only --price and --mechanism with it");
    char err[512];
    struct cost_measured meas;
    if (metrics) {
        if (!src)
            src = carve_socket_path();
        json_t *snap = load_snapshot(src, err, sizeof(err));
        if (strcmp(src, "-") == 0)
            src = "standard input"; /* for the messages and the report */
        if (!snap) {
            fprintf(stderr, "carve cost: --from-metrics: %s\n", err);
            return 1;
        }
        r = cost_from_snapshot(snap, &meas, err, sizeof(err));
        json_decref(snap);
        if (r) {
            fprintf(stderr, "carve cost: --from-metrics %s: %s\n", src, err);
            return 1;
        }
        in.gpus = meas.gpus;
        in.tenants = (double)(long long)(meas.tenants + 0.5);
        in.utilisation = meas.utilisation;
        in.gpu = meas.gpu;
    }
    if (cost_check(&in, err, sizeof(err)))
        return cost_error("%s", err);

    struct cost_result res[COST_NMECH];
    int n = 0;
    for (int m = 0; m < COST_NMECH; m++)
        if (mech < 0 || mech == m)
            cost_compute(&in, m, &res[n++]);
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, cost_result_json(&res[i]));
        json_t *root = json_pack("{s:{s:f, s:f, s:f, s:f, s:s}, s:o}", "input", "gpus", in.gpus,
                                 "price", in.price, "tenants", in.tenants, "utilisation_pct",
                                 in.utilisation * 100, "gpu", in.gpu, "results", arr);
        if (root && metrics &&
            json_object_set_new(root, "measured",
                                json_pack("{s:s, s:s, s:i, s:f}", "from", src, "source",
                                          meas.source, "tenants_seen", (int)meas.ntenants,
                                          "tenants_per_gpu", meas.tenants))) {
            json_decref(root);
            root = NULL;
        }
        if (!root) { /* a string that is not UTF-8 (the SRC path): no JSON, and no exit 0 */
            fprintf(stderr, "carve cost: cannot write the results as JSON (is SRC a path "
                            "that is not UTF-8?)\n");
            return 1;
        }
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(root);
        return 0;
    }
    if (metrics)
        printf("measured by carved (%s): %u tenant%s, %.2f per GPU in use (%s)\n", src,
               meas.ntenants, meas.ntenants == 1 ? "" : "s", meas.tenants, meas.source);
    printf("%.0f GPU%s (%s) at $%.2f/h; %.0f tenant%s per GPU, each busy %.1f%% of a GPU\n\n",
           in.gpus, in.gpus == 1 ? "" : "s", in.gpu, in.price, in.tenants,
           in.tenants == 1 ? "" : "s", in.utilisation * 100);
    if (n == 1)
        print_card(&in, &res[0]);
    else
        print_table(res, n);
    return 0;
}
