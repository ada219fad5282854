/* advise.c - `carve advise`: which sharing mechanism fits a GPU model, a workload archetype,
 * the tenants' trust and a latency budget, with the reasons and the traps (planner/advise.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "advise.h"
#include "cli.h"
#include "mig.h"
#include "size.h"

static const char advise_help[] =
    "usage: carve advise --gpu MODEL --workload KIND [--trust team|untrusted]\n"
    "                    [--latency MS] [--memory SIZE] [--changing] [--check MECH] [--json]\n"
    "       carve advise --matrix [--json]\n"
    "\n"
    "Recommends a way to share GPUs (whole GPUs, time-slicing, MPS, MIG, HAMi-style or carve\n"
    "slices) for one kind of workload, with the reasons from the isolation matrix and the\n"
    "hardware gate, and names the traps that look right for this set-up but fail in\n"
    "production.\n"
    "\n"
    "options:\n"
    "  -g, --gpu MODEL      the GPU: T4, V100, A10, L4, L40S, A100, H100, H200, B200 or a\n"
    "                       full name from `carve plan --models' (A100-80GB), or NVML's\n"
    "                       device name (\"NVIDIA A100-SXM4-40GB\")\n"
    "  -w, --workload KIND  training (distributed), inference (online serving), notebook\n"
    "                       (experimentation) or batch\n"
    "  -t, --trust LEVEL    team (one team's trusted workloads, default) or untrusted\n"
    "                       (tenants that must not affect or see each other)\n"
    "  -l, --latency MS     the P99 latency budget of --workload inference, in milliseconds;\n"
    "                       0 = none (refused with another workload kind)\n"
    "  -m, --memory SIZE    one workload's memory (checks how much a MIG profile strands;\n"
    "                       refused when larger than the GPU)\n"
    "  -c, --changing       the workload mix changes (e.g. training by day, serving by night)\n"
    "  -k, --check MECH     would MECH do here? (whole, time-slicing, mps, mig, hami, carve)\n"
    "  -x, --matrix         print the isolation matrix and stop\n"
    "  -j, --json           the advice as JSON\n"
    "  -h, --help           this text\n"
    "\n"
    "exit status: 0; 1 when --check names a mechanism that is a trap here, or MIG on a GPU\n"
    "whose MIG carve does not know; 2 for bad input.\n"
    "\n"
    "examples:\n"
    "  carve advise --gpu H100 --workload inference --trust untrusted\n"
    "  carve advise --gpu T4 --workload inference --latency 50 --check time-slicing\n"
    "  carve advise --gpu A100 --workload notebook --memory 12GiB\n";

static int advise_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "carve advise: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see carve advise --help)\n");
    return CARVE_EXIT_USAGE;
}

static int print_matrix(bool json)
{
    json_t *arr = json ? json_array() : NULL;
    if (!json)
        printf("%-13s %-22s %-24s %-9s %-23s %s\n", "mechanism", "memory isolation",
               "compute isolation", "fault", "latency jitter", "hardware");
    for (int m = 0; m < ADV_NMECH; m++) {
        const struct adv_matrix_row *r = adv_matrix(m);
        if (json)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "mechanism",
                                                 r->name, "memory", r->memory, "compute",
                                                 r->compute, "fault", r->fault, "jitter",
                                                 r->jitter, "hardware", r->hardware));
        else
            printf("%-13s %-22s %-24s %-9s %-23s %s\n", r->title, r->memory, r->compute,
                   r->fault, r->jitter, r->hardware);
    }
    if (json) {
        json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(arr);
    }
    return 0;
}

static void print_advice(const struct adv_input *in, const struct adv_result *r)
{
    const struct adv_matrix_row *row = adv_matrix(r->mech);
    printf("%s, %s, %s", r->gpu, adv_archetype_name(in->archetype),
           in->trust == ADV_UNTRUSTED ? "untrusted tenants" : "one team");
    if (in->latency_ms > 0)
        printf(", P99 budget %.10g ms", in->latency_ms);
    printf("%s\n\n", r->gpu_known     ? ""
                     : r->mig_unknown ? " (a GPU carve does not know)"
                                      : " (carve has no board for it; it has MIG)");
    printf("recommended: %s\n", row->title);
    printf("  isolation: memory %s, compute %s, fault %s; latency jitter %s\n", row->memory,
           row->compute, row->fault, row->jitter);
    printf("why:\n");
    for (size_t i = 0; i < r->nreasons; i++)
        printf("  - %s\n", r->reasons[i]);
    if (r->alternative >= 0)
        printf("otherwise: %s\n", r->alternative_why);
    printf("on %s: time-slicing, MPS, HAMi and carve slices work; MIG %s\n", r->gpu,
           r->mig_capable ? "too"
           : r->mig_unknown
               ? "perhaps: carve does not know (`nvidia-smi -q | grep -i mig` on the node says)"
               : "does not (" MIG_FAMILIES_TEXT " only)");
    if (r->ntraps) {
        printf("\ntraps for this set-up:\n");
        for (size_t i = 0; i < r->ntraps; i++)
            printf("  [%s] %s\n", r->traps[i].id, r->traps[i].text);
    }
    if (r->proposal >= 0)
        printf("\ncheck %s: %s %s\n", adv_matrix(r->proposal)->name,
               r->proposal_ok ? "yes," : r->proposal_unknown ? "UNKNOWN," : "NO,",
               r->proposal_verdict);
}

int carve_cmd_advise(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, 'g'},    {"workload", required_argument, NULL, 'w'},
        {"trust", required_argument, NULL, 't'},  {"latency", required_argument, NULL, 'l'},
        {"memory", required_argument, NULL, 'm'}, {"changing", no_argument, NULL, 'c'},
        {"check", required_argument, NULL, 'k'},  {"matrix", no_argument, NULL, 'x'},
        {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct adv_input in = {.archetype = -1, .trust = ADV_TEAM, .proposal = -1};
    bool json = false, matrix = false;
    int c;
    char err[512];
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:g:w:t:l:m:ck:xjh", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': in.gpu = optarg; break;
        case 'w':
            if ((in.archetype = adv_archetype_find(optarg)) < 0)
                return advise_error("--workload `%s' is not training, inference, notebook or "
                                    "batch", optarg);
            break;
        case 't':
            if (strcasecmp(optarg, "team") == 0 || strcasecmp(optarg, "trusted") == 0)
                in.trust = ADV_TEAM;
            else if (strcasecmp(optarg, "untrusted") == 0 || strcasecmp(optarg, "tenants") == 0)
                in.trust = ADV_UNTRUSTED;
            else
                return advise_error("--trust `%s' is not team or untrusted", optarg);
            break;
        case 'l': {
            char *end;
            errno = 0;
            const char *s = optarg;
            in.latency_ms = strtod(s, &end);
            if (strcasecmp(end, "ms") == 0)
                end += 2;
            if (!*s || *end || errno || strpbrk(s, "xXnN") || !(in.latency_ms >= 0) ||
                in.latency_ms > 3600000)
                return advise_error("--latency `%s' is not milliseconds from 0 to 3600000 "
                                    "(e.g. 50)", s);
            break;
        }
        case 'm': {
            uint64_t bytes;
            if (carve_parse_cap(optarg, &bytes, err, sizeof(err)))
                return advise_error("--memory: %s", err);
            in.memory_mib = (bytes + (1 << 20) - 1) >> 20;
            break;
        }
        case 'c': in.changing = true; break;
        case 'k':
            if ((in.proposal = adv_mech_find(optarg)) < 0)
                return advise_error("--check `%s' is not whole, time-slicing, mps, mig, hami or "
                                    "carve", optarg);
            break;
        case 'x': matrix = true; break;
        case 'j': json = true; break;
        case 'h': fputs(advise_help, stdout); return 0;
        case ':': return advise_error("option `%s' needs a value", argv[optind - 1]);
        default: return advise_error("unknown option `%s'", carve_bad_option(argv));
        }
    }
    if (optind < argc)
        return advise_error("unexpected argument `%s'", argv[optind]);
    if (matrix)
        return print_matrix(json);
    if (!in.gpu)
        return advise_error("%s", "--gpu MODEL is required (e.g. --gpu H100)");
    if (in.archetype < 0)
        return advise_error("%s", "--workload KIND is required (training, inference, notebook "
                                  "or batch)");
    struct adv_result r;
    if (adv_advise(&in, &r, err, sizeof(err)))
        return advise_error("%s", err);
    if (json) {
        json_t *j = adv_result_json(&r);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("\n");
        json_decref(j);
    } else {
        print_advice(&in, &r);
    }
    return r.proposal >= 0 && !r.proposal_ok ? 1 : 0;
}
