/* mig.c - `carve mig`: NVIDIA MIG profile tables, the geometry planner, and applying a layout
 * through NVML (a dry run unless --yes; an instance with processes is never destroyed); and
 * choosing a MIG instance for `carve run --mode mig`. The tables and the planner live in
 * planner/ (mig.h, mig_plan.h), the NVML calls in planner/mig_nvml.c. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "compute.h"
#include "fleet.h"
#include "gpus.h"
#include "mig.h"
#include "mig_nvml.h"
#include "mig_plan.h"
#include "mig_visible.h"
#include "size.h"

#define EXIT_REFUSED 1 /* a request that does not fit, a destroy refused, an NVML failure */

static const char mig_help[] =
    "usage: carve mig profiles [--gpu MODEL] [--json]\n"
    "       carve mig profiles --check [--index N] [--simulate]\n"
    "       carve mig plan (--gpu MODEL | [--index N] [--simulate]) [--json] REQUEST...\n"
    "       carve mig apply [--index N] [--simulate] [--replace] [--yes] [--json] REQUEST...\n"
    "       carve mig list [--index N] [--simulate] [--json]\n"
    "       carve mig destroy [--index N] [--simulate] [--yes] (GI-ID | MIG-UUID)... | --all\n"
    "\n"
    "NVIDIA MIG (Multi-Instance GPU) cuts an A100, H100 or H200 into up to 7 instances with\n"
    "their own memory, SMs and caches, isolated by the hardware. carve knows each model's\n"
    "profiles and the memory slices each may start at, plans the instances for a list of\n"
    "requests so that the most fit with the least memory stranded, and creates them.\n"
    "\n"
    "REQUEST: a profile by name (3g.40gb, 1g.10gb+me), memory (8GiB, 20GB), a share of the\n"
    "GPU's SMs (30%), or memory and a share (20GiB,30%). Each request gets the smallest\n"
    "profile that gives it at least what it asks.\n"
    "\n"
    "commands:\n"
    "  profiles  the profile table of one model or of all (A100-40GB, A100-80GB, H100-80GB,\n"
    "            H200-141GB): memory, SMs, most instances, start slots; --check compares\n"
    "            GPU N's table with what its NVML says (profile IDs, counts, placements,\n"
    "            memory)\n"
    "  plan      a layout for the requests: on a model (--gpu), or on GPU N beside the\n"
    "            instances it has; requests that cannot fit are listed with the reason\n"
    "            (the media engines, a profile's limit per GPU, compute slices, start slots)\n"
    "  apply     plans on GPU N and shows what it would create (and with --replace, destroy);\n"
    "            --yes does it through NVML. Without --replace existing instances stay and\n"
    "            the requests go beside them; with --replace the GPU gets exactly the plan:\n"
    "            instances in the plan stay, others are destroyed, unless a process runs in\n"
    "            one (or a carve run --mode mig holds it): then nothing is changed and the\n"
    "            processes are named\n"
    "  list      the GPUs, their MIG mode and instances: profile, slots, memory, MIG device\n"
    "            UUID, processes\n"
    "  destroy   destroys GPU instances (by ID or MIG device UUID; --all: every one), a dry\n"
    "            run unless --yes; refused for an instance with processes or held by a\n"
    "            carve run --mode mig\n"
    "\n"
    "options:\n"
    "  -g, --gpu MODEL   a model by name (H100-80GB ...) or NVML name (\"NVIDIA H100 80GB HBM3\")\n"
    "  -i, --index N     the GPU's NVML index (nvidia-smi's), default 0\n"
    "  -s, --simulate    use carve's simulated GPU (CARVE_SIM_MODEL, CARVE_SIM_MIG=1)\n"
    "  -r, --replace     (apply) make the GPU's layout exactly the plan\n"
    "  -y, --yes         (apply, destroy) change the GPU; without it nothing is changed\n"
    "  -a, --all         (destroy) every GPU instance of the GPU\n"
    "  -c, --check       (profiles) check carve's table against GPU N's NVML\n"
    "  -j, --json        machine-readable output on stdout\n"
    "  -h, --help        this text\n"
    "\n"
    "MIG mode itself is never changed: turn it on with `nvidia-smi -i N -mig 1` (root, GPU\n"
    "reset). Creating and destroying instances needs root on a real GPU.\n"
    "\n"
    "exit status: 0 done (or shown, for a dry run); 1 a request does not fit, a destroy was\n"
    "refused, or NVML failed; 2 bad input.\n"
    "\n"
    "examples:\n"
    "  carve mig profiles --gpu H100-80GB\n"
    "  carve mig plan --gpu H100-80GB 20GiB,30% 8GiB 8GiB 3g.40gb\n"
    "  carve mig apply -i 0 20GiB 8GiB 8GiB          # shows what it would do\n"
    "  carve mig apply -i 0 --yes 20GiB 8GiB 8GiB    # does it\n"
    "  carve mig list\n"
    "  carve run --mode mig --memory 8GiB -- python serve.py\n";

struct mig_opts {
    const char *model;
    unsigned index;
    bool index_given; /* --index was given: list shows that GPU only */
    bool simulate, json, yes, replace, all, check;
    char **args;
    int nargs;
};

static int usage_error(const char *sub, const char *fmt, const char *arg)
{
    fprintf(stderr, "carve mig%s%s: ", sub ? " " : "", sub ? sub : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see carve mig --help)\n");
    return CARVE_EXIT_USAGE;
}

/* allowed: the option letters the subcommand takes */
static int parse_opts(const char *sub, int argc, char **argv, const char *allowed,
                      struct mig_opts *o)
{
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, 'g'},  {"index", required_argument, NULL, 'i'},
        {"simulate", no_argument, NULL, 's'},   {"json", no_argument, NULL, 'j'},
        {"yes", no_argument, NULL, 'y'},        {"replace", no_argument, NULL, 'r'},
        {"all", no_argument, NULL, 'a'},        {"help", no_argument, NULL, 'h'},
        {"check", no_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:g:i:sjyrahc", longopts, NULL)) != -1) {
        if (c != 'h' && c != ':' && c != '?' && !strchr(allowed, c))
            return usage_error(sub, "option `%s' does not apply here", argv[optind - 1]);
        switch (c) {
        case 'g': o->model = optarg; break;
        case 'i': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            /* digits only: strtol takes `' as 0 (GPU 0 for an empty --index) and skips spaces */
            if (!isdigit((unsigned char)*optarg) || *end || errno || v < 0 ||
                v >= MIG_NVML_MAX_GPUS)
                return usage_error(sub, "--index `%s' is not a GPU index from 0 to 15", optarg);
            o->index = (unsigned)v;
            o->index_given = true;
            break;
        }
        case 's': o->simulate = true; break;
        case 'j': o->json = true; break;
        case 'y': o->yes = true; break;
        case 'r': o->replace = true; break;
        case 'a': o->all = true; break;
        case 'c': o->check = true; break;
        case 'h': fputs(mig_help, stdout); return 0;
        case ':': return usage_error(sub, "option `%s' needs a value", argv[optind - 1]);
        default: return usage_error(sub, "unknown option `%s'", carve_bad_option(argv));
        }
    }
    o->args = &argv[optind];
    o->nargs = argc - optind;
    return -1;
}

static void gib(uint64_t mib, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f GiB", (double)mib / 1024.0);
}

static void slots(const struct mig_profile *p, unsigned start, char *buf, size_t len)
{
    if (p->memory_slices == 1)
        snprintf(buf, len, "%u", start);
    else
        snprintf(buf, len, "%u-%u", start, start + p->memory_slices - 1);
}

static void starts_text(unsigned mask, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned s = 0; s < 32 && used < len; s++)
        if (mask & (1u << s))
            used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? "," : "", s);
}

static json_t *starts_json(unsigned mask)
{
    json_t *a = json_array();
    for (unsigned s = 0; s < 32; s++)
        if (mask & (1u << s))
            json_array_append_new(a, json_integer(s));
    return a;
}

/* Why carve has no MIG table for name, in words: a family of several boards, a board or a
 * GPU that has MIG but no table in carve, one without MIG, or a name carve does not know. */
static void no_table_why(const char *name, char *why, size_t len)
{
    bool ambiguous, family_only = false;
    const struct fleet_gpu_model *m = fleet_gpu_find(name, &ambiguous);
    if (!m && !ambiguous)
        m = fleet_gpu_named(name, &family_only);
    size_t nboards = 0;
    char boards[128] = "";
    if (ambiguous || family_only) { /* "A100": the boards of the family, as carve plan says */
        size_t n, used = 0;
        const struct fleet_gpu_model *all = fleet_gpu_models(&n);
        for (size_t i = 0; i < n && used < sizeof(boards); i++)
            if (m ? strcmp(all[i].family, m->family) == 0
                  : strncasecmp(all[i].name, name, strlen(name)) == 0 &&
                        all[i].name[strlen(name)] == '-') {
                used += (size_t)snprintf(boards + used, sizeof(boards) - used, "%s%s",
                                         used ? " or " : "", all[i].name);
                nboards++;
            }
    }
    if (nboards > 1) {
        snprintf(why, len, "ambiguous GPU model `%s': say %s", name, boards);
    } else if (m && m->mig) {
        snprintf(why, len, "carve has no MIG profile table for %s (it has MIG: `nvidia-smi mig "
                           "-lgip' on it lists its profiles)", m->name);
    } else if (m) {
        snprintf(why, len, "%s has no MIG (MIG needs " MIG_FAMILIES_TEXT ")", m->name);
    } else if (mig_family_in(name)) {
        snprintf(why, len, "carve has no MIG profile table for `%s' (it has MIG: `nvidia-smi mig "
                           "-lgip' on it lists its profiles)", name);
    } else {
        snprintf(why, len, "no MIG model `%s': not a GPU carve knows", name);
    }
}

static const struct mig_model *model_or_error(const char *sub, const char *name)
{
    const struct mig_model *m = mig_model_find(name);
    if (!m) {
        size_t n;
        const struct mig_model *all = mig_models(&n);
        char list[128] = "", why[256];
        size_t used = 0;
        for (size_t i = 0; i < n && used < sizeof(list); i++)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
                                     all[i].name);
        no_table_why(name, why, sizeof(why));
        fprintf(stderr, "carve mig %s: %s; carve has MIG profile tables for %s\n", sub, why,
                list);
    }
    return m;
}

/* ---------- profiles ---------- */

static json_t *profile_json(const struct mig_model *m, const struct mig_profile *p)
{
    return json_pack("{s:s,s:i,s:i,s:f,s:I,s:i,s:o,s:i,s:b}", "name", p->name, "compute_slices",
                     (int)p->compute_slices, "memory_slices", (int)p->memory_slices, "sm_percent",
                     mig_profile_compute_pct(m, p), "memory_mib", (json_int_t)p->memory_mib,
                     "max_count", (int)p->max_count, "starts", starts_json(p->start_mask),
                     "nvml_profile_id", (int)p->nvml_id, "media_extensions", p->media);
}

static void print_model(const struct mig_model *m)
{
    char total[32];
    gib(m->memory_mib, total, sizeof(total));
    printf("%s (NVML name contains \"%s\"): %u compute slices, %u memory slices, %s\n", m->name,
           m->nvml_match, m->compute_slices, m->memory_slices, total);
    printf("  %-12s %6s %6s %5s %10s %4s  %s\n", "PROFILE", "SMS", "GSLICE", "MEM", "MEMORY",
           "MAX", "STARTS");
    for (size_t i = 0; i < m->nprofiles; i++) {
        const struct mig_profile *p = &m->profiles[i];
        char mem[32], st[32];
        gib(p->memory_mib, mem, sizeof(mem));
        starts_text(p->start_mask, st, sizeof(st));
        printf("  %-12s %5.1f%% %4u/%u %3u/%u %10s %4u  %s\n", p->name,
               mig_profile_compute_pct(m, p), p->compute_slices, m->compute_slices,
               p->memory_slices, m->memory_slices, mem, p->max_count, st);
    }
}

static int check_profiles(const struct mig_opts *o);

static int cmd_profiles(int argc, char **argv)
{
    struct mig_opts o = {0};
    int ret = parse_opts("profiles", argc, argv, "gjcis", &o);
    if (ret >= 0)
        return ret;
    if (o.nargs)
        return usage_error("profiles", "unexpected argument `%s'", o.args[0]);
    if (o.check)
        return check_profiles(&o);
    size_t n;
    const struct mig_model *all = mig_models(&n);
    if (o.model) {
        if (!(all = model_or_error("profiles", o.model)))
            return CARVE_EXIT_USAGE;
        n = 1;
    }
    if (o.json) {
        json_t *out = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *profs = json_array();
            for (size_t j = 0; j < all[i].nprofiles; j++)
                json_array_append_new(profs, profile_json(&all[i], &all[i].profiles[j]));
            json_array_append_new(out, json_pack("{s:s,s:s,s:I,s:i,s:i,s:o}", "model",
                                                 all[i].name, "nvml_match", all[i].nvml_match,
                                                 "memory_mib", (json_int_t)all[i].memory_mib,
                                                 "compute_slices", (int)all[i].compute_slices,
                                                 "memory_slices", (int)all[i].memory_slices,
                                                 "profiles", profs));
        }
        json_dumpf(out, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(out);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            putchar('\n');
        print_model(&all[i]);
    }
    printf("\nSource: NVIDIA MIG user guide, \"Supported MIG Profiles\"; memory as NVML reports "
           "it (docs/mig.md).\n");
    return 0;
}

/* ---------- NVML access shared by plan, apply, list, destroy and run ---------- */

static int open_nvml(bool simulate, struct mig_nvml **n, char *err, size_t errlen)
{
    char libdir[PATH_MAX], path[PATH_MAX + 64];
    if (carve_find_libdir(libdir, sizeof(libdir)) < 0) {
        snprintf(err, errlen, "cannot find carve's libraries; set CARVE_LIBDIR");
        return -1;
    }
    carve_nvml_path(simulate, libdir, path, sizeof(path));
    return mig_nvml_open(path, n, err, errlen);
}

/* GPU index's info, its model and MIG mode checked; 0 or -1 with err */
static int gpu_of(struct mig_nvml *n, unsigned index, struct mig_gpu *g, char *err,
                  size_t errlen)
{
    struct mig_gpu gpus[MIG_NVML_MAX_GPUS];
    int k = mig_nvml_gpus(n, gpus, MIG_NVML_MAX_GPUS, err, errlen);
    if (k < 0)
        return -1;
    int at = -1;
    for (int i = 0; i < k && at < 0; i++)
        if (gpus[i].index == index)
            at = i;
    if (at < 0) {
        snprintf(err, errlen, "no GPU %u: NVML answers for %d GPU%s%s", index, k,
                 k == 1 ? "" : "s", k && gpus[k - 1].index + 1 != (unsigned)k
                                        ? " (one it counts does not answer: lost?)" : "");
        return -1;
    }
    *g = gpus[at];
    if (g->mode < 0) {
        snprintf(err, errlen, "GPU %u (%s) has no MIG", index, g->name);
        return -1;
    }
    if (!g->model) {
        snprintf(err, errlen, "GPU %u (%s): carve has no MIG table for this model", index,
                 g->name);
        return -1;
    }
    return 0;
}

static void proc_name(unsigned pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%u/comm", pid);
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f) {
        if (fgets(buf, (int)len, f))
            buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
    if (!buf[0])
        snprintf(buf, len, "?");
}

static void pids_text(const struct mig_live *l, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < l->npids && i < MIG_NVML_MAX_PIDS && used < len; i++) {
        char name[32];
        proc_name(l->pids[i], name, sizeof(name));
        used += (size_t)snprintf(buf + used, len - used, "%s%u (%s)", i ? ", " : "", l->pids[i],
                                 name);
    }
    if (l->pids_unknown && used < len)
        snprintf(buf + used, len - used, "%s? (NVML would not list them)", used ? ", " : "");
    else if (!l->npids && !l->pids_unknown)
        snprintf(buf, len, "-");
}

static const char *live_name(const struct mig_live *l)
{
    return l->profile ? l->profile->name : "?";
}

/* "0-3", or "?" when NVML would not say (not root) */
static const char *live_slots(const struct mig_live *l, char *buf, size_t len)
{
    if (!l->placement_known)
        snprintf(buf, len, "?");
    else if (l->profile)
        slots(l->profile, l->start, buf, len);
    else
        snprintf(buf, len, "%u+%u", l->start, l->size);
    return buf;
}

static json_t *live_json(const struct mig_live *l)
{
    json_t *pids = json_array();
    for (unsigned i = 0; i < l->npids && i < MIG_NVML_MAX_PIDS; i++)
        json_array_append_new(pids, json_integer(l->pids[i]));
    json_t *start = l->placement_known ? json_integer(l->start) : json_null();
    json_t *size = l->placement_known ? json_integer(l->size) : json_null();
    return json_pack("{s:i,s:i,s:s,s:i,s:o,s:o,s:I,s:i,s:s,s:o,s:b}", "gpu", (int)l->gpu,
                     "gpu_instance", (int)l->gi_id, "profile", live_name(l), "profile_id",
                     (int)l->profile_id, "start", start, "size", size, "memory_mib",
                     (json_int_t)l->memory_mib, "compute_instance", l->ci_id, "uuid", l->uuid,
                     "pids", pids, "pids_unknown", l->pids_unknown);
}

/* carve's table against what the GPU's NVML says: the numbers the planner and apply rely on */
static int check_profiles(const struct mig_opts *o)
{
    struct mig_nvml *n;
    struct mig_gpu g;
    char err[512];
    int bad = 0;
    if (open_nvml(o->simulate, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig profiles: %s\n", err);
        return EXIT_REFUSED;
    }
    if (gpu_of(n, o->index, &g, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig profiles: %s\n", err);
        mig_nvml_close(n);
        return EXIT_REFUSED;
    }
    printf("GPU %u: %s (%s), MIG %s: carve's table against NVML\n", o->index, g.name,
           g.model->name, g.mode == 1 ? "on" : "off");
    printf("  %-12s %-5s %-7s %-5s %-16s %s\n", "PROFILE", "ID", "SLICES", "MAX", "STARTS",
           "MEMORY MiB (table / NVML)");
    for (size_t i = 0; i < g.model->nprofiles; i++) {
        const struct mig_profile *p = &g.model->profiles[i];
        struct mig_nvml_facts f;
        if (mig_nvml_facts(n, o->index, p, &f, err, sizeof(err)) < 0) {
            printf("  %-12s %s\n", p->name, err);
            bad++;
            continue;
        }
        char st[32] = "ok";
        if (f.start_mask != p->start_mask || f.memory_slices != p->memory_slices)
            starts_text(f.start_mask, st, sizeof(st));
        bool id_ok = f.id == p->nvml_id, sl_ok = f.compute_slices == p->compute_slices,
             max_ok = f.max_count == p->max_count;
        bad += !id_ok || !sl_ok || !max_ok || strcmp(st, "ok") != 0;
        printf("  %-12s %-5s %-7s %-5s %-16s %lu / %lu%s\n", p->name, id_ok ? "ok" : "DIFF",
               sl_ok ? "ok" : "DIFF", max_ok ? "ok" : "DIFF", st, (unsigned long)p->memory_mib,
               (unsigned long)f.memory_mib, f.memory_mib == p->memory_mib ? "" : " (differs)");
    }
    mig_nvml_close(n);
    if (bad)
        printf("%d profile%s differ%s from NVML in IDs, slices, counts or placements: please "
               "report the GPU and driver\n", bad, bad == 1 ? "" : "s", bad == 1 ? "s" : "");
    return bad ? EXIT_REFUSED : 0;
}

/* ---------- plan ---------- */

static int parse_requests(const char *sub, char **args, int n, struct mig_request *req)
{
    char err[300];
    if (n == 0)
        return usage_error(sub, "no REQUEST given (e.g. 8GiB, 20GiB,30%%, 3g.40gb)%s", "");
    if (n > MIG_MAX_REQUESTS)
        return usage_error(sub, "more than 64 requests%s", "");
    for (int i = 0; i < n; i++)
        if (mig_request_parse(args[i], &req[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "carve mig %s: %s\n(see carve mig --help)\n", sub, err);
            return CARVE_EXIT_USAGE;
        }
    return 0;
}

static json_t *plan_json(const struct mig_model *m, const struct mig_request *req,
                         const struct mig_plan *p)
{
    json_t *placed = json_array(), *refused = json_array();
    for (size_t i = 0; i < p->nplaced; i++) {
        const struct mig_placement *pl = &p->placed[i];
        json_t *o = profile_json(m, pl->inst.profile);
        json_object_set_new(o, "request", json_string(req[pl->request].text));
        json_object_set_new(o, "start", json_integer(pl->inst.start));
        json_object_set_new(o, "profile", json_string(pl->inst.profile->name));
        json_object_del(o, "name");
        json_object_del(o, "starts");
        json_array_append_new(placed, o);
    }
    for (size_t i = 0; i < p->nrefused; i++)
        json_array_append_new(refused, json_pack("{s:s,s:s}", "request",
                                                 req[p->refused[i].request].text, "why",
                                                 p->refused[i].why));
    return json_pack("{s:s,s:o,s:o,s:I,s:I,s:I,s:i,s:I,s:s?}", "model", m->name, "placed",
                     placed, "refused", refused, "stranded_mib", (json_int_t)p->stranded_mib,
                     "over_mib", (json_int_t)p->over_mib, "unreachable_mib",
                     (json_int_t)p->unreachable_mib, "free_memory_slices",
                     __builtin_popcount(~p->used_mask & ((1u << m->memory_slices) - 1)),
                     "headroom_mib", (json_int_t)p->headroom_mib, "headroom_profile",
                     p->headroom ? p->headroom->name : NULL);
}

static void print_plan(const struct mig_model *m, const struct mig_request *req, size_t n,
                       const struct mig_plan *p, size_t nkeep)
{
    printf("%s: %zu request%s, %zu placed, %zu refused%s\n", m->name, n, n == 1 ? "" : "s",
           p->nplaced, p->nrefused, nkeep ? " (beside the instances already there)" : "");
    if (p->nplaced) {
        printf("  %-20s %-12s %-6s %10s %6s\n", "REQUEST", "PROFILE", "SLOTS", "MEMORY", "SMS");
        for (size_t i = 0; i < p->nplaced; i++) {
            const struct mig_placement *pl = &p->placed[i];
            char mem[32], sl[16];
            gib(pl->inst.profile->memory_mib, mem, sizeof(mem));
            slots(pl->inst.profile, pl->inst.start, sl, sizeof(sl));
            printf("  %-20s %-12s %-6s %10s %5.1f%%\n", req[pl->request].text,
                   pl->inst.profile->name, sl, mem, mig_profile_compute_pct(m, pl->inst.profile));
        }
    }
    char s[32], o[32], u[32], h[64] = "none";
    gib(p->stranded_mib, s, sizeof(s));
    gib(p->over_mib, o, sizeof(o));
    gib(p->unreachable_mib, u, sizeof(u));
    if (p->headroom)
        snprintf(h, sizeof(h), "%s (%.2f GiB)", p->headroom->name,
                 (double)p->headroom_mib / 1024.0);
    printf("stranded: %s (%s given beyond the requests, %s in free slices no profile can use)\n",
           s, o, u);
    printf("free: %d memory slice%s, %u compute slice%s; largest instance still possible: %s\n",
           __builtin_popcount(~p->used_mask & ((1u << m->memory_slices) - 1)),
           __builtin_popcount(~p->used_mask & ((1u << m->memory_slices) - 1)) == 1 ? "" : "s",
           m->compute_slices - p->used_compute,
           m->compute_slices - p->used_compute == 1 ? "" : "s", h);
    for (size_t i = 0; i < p->nrefused; i++)
        printf("refused: %s: %s\n", req[p->refused[i].request].text, p->refused[i].why);
}

/* the live instances as planner instances; -1 with err for one the table does not know */
static int live_to_keep(const struct mig_live *live, int k, struct mig_instance *keep,
                        char *err, size_t errlen)
{
    for (int i = 0; i < k; i++) {
        if (!live[i].placement_known) {
            snprintf(err, errlen, "NVML shows the MIG devices but not where their instances "
                     "sit (reading placements needs root here): run as root to plan beside "
                     "or change them");
            return -1;
        }
        if (!live[i].profile) {
            snprintf(err, errlen, "GPU instance %u has profile ID %u, which carve's table does "
                     "not know", live[i].gi_id, live[i].profile_id);
            return -1;
        }
        keep[i] = (struct mig_instance){live[i].profile, live[i].start};
    }
    return 0;
}

static int cmd_plan(int argc, char **argv)
{
    struct mig_opts o = {0};
    int ret = parse_opts("plan", argc, argv, "gisj", &o);
    if (ret >= 0)
        return ret;
    struct mig_request req[MIG_MAX_REQUESTS];
    if ((ret = parse_requests("plan", o.args, o.nargs, req)) != 0)
        return ret;
    const struct mig_model *m;
    struct mig_instance keep[MIG_NVML_MAX_LIVE];
    size_t nkeep = 0;
    char err[512];
    struct mig_plan plan;
    if (o.model) {
        if (!(m = model_or_error("plan", o.model)))
            return CARVE_EXIT_USAGE;
    } else { /* the live GPU, beside its instances */
        struct mig_nvml *n;
        struct mig_gpu g;
        struct mig_live live[MIG_NVML_MAX_LIVE];
        int k = -1;
        if (open_nvml(o.simulate, &n, err, sizeof(err)) < 0) {
            fprintf(stderr, "carve mig plan: %s\n", err);
            return EXIT_REFUSED;
        }
        if (gpu_of(n, o.index, &g, err, sizeof(err)) == 0)
            k = mig_nvml_instances(n, o.index, live, MIG_NVML_MAX_LIVE, err, sizeof(err));
        mig_nvml_close(n);
        if (k < 0 || live_to_keep(live, k, keep, err, sizeof(err)) < 0) {
            fprintf(stderr, "carve mig plan: %s\n", err);
            return EXIT_REFUSED;
        }
        m = g.model;
        nkeep = (size_t)k;
    }
    if (mig_plan(m, req, (size_t)o.nargs, keep, nkeep, &plan, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig plan: %s\n", err);
        return EXIT_REFUSED;
    }
    if (o.json) {
        json_t *j = plan_json(m, req, &plan);
        json_dumpf(j, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(j);
    } else {
        print_plan(m, req, (size_t)o.nargs, &plan, nkeep);
    }
    return plan.nrefused ? EXIT_REFUSED : 0;
}

/* ---------- list ---------- */

static void print_live(const struct mig_live *live, int k)
{
    if (k == 0) {
        printf("  no MIG instances\n");
        return;
    }
    printf("  %-3s %-12s %-6s %10s  %-40s %s\n", "GI", "PROFILE", "SLOTS", "MEMORY",
           "MIG DEVICE", "PROCESSES");
    for (int i = 0; i < k; i++) {
        char mem[32], sl[16], pids[256];
        gib(live[i].memory_mib, mem, sizeof(mem));
        live_slots(&live[i], sl, sizeof(sl));
        pids_text(&live[i], pids, sizeof(pids));
        printf("  %-3u %-12s %-6s %10s  %-40s %s\n", live[i].gi_id, live_name(&live[i]), sl, mem,
               live[i].uuid[0] ? live[i].uuid : "(no compute instance)", pids);
    }
}

static int cmd_list(int argc, char **argv)
{
    struct mig_opts o = {0};
    int ret = parse_opts("list", argc, argv, "isj", &o);
    if (ret >= 0)
        return ret;
    if (o.nargs)
        return usage_error("list", "unexpected argument `%s'", o.args[0]);
    struct mig_nvml *n;
    struct mig_gpu gpus[MIG_NVML_MAX_GPUS];
    char err[512];
    if (open_nvml(o.simulate, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig list: %s\n", err);
        return EXIT_REFUSED;
    }
    int ngpu = mig_nvml_gpus(n, gpus, MIG_NVML_MAX_GPUS, err, sizeof(err));
    ret = EXIT_REFUSED;
    if (ngpu < 0)
        goto out;
    bool listed = !o.index_given;
    for (int i = 0; i < ngpu && !listed; i++)
        listed = gpus[i].index == o.index;
    if (!listed) {
        snprintf(err, sizeof(err), "no GPU %u: NVML answers for %d", o.index, ngpu);
        goto out;
    }
    json_t *out = o.json ? json_array() : NULL;
    for (int i = 0; i < ngpu; i++) {
        const struct mig_gpu *g = &gpus[i];
        if (o.index_given && g->index != o.index)
            continue;
        struct mig_live live[MIG_NVML_MAX_LIVE];
        int k = g->mode == 1 ? mig_nvml_instances(n, g->index, live, MIG_NVML_MAX_LIVE, err,
                                                  sizeof(err))
                             : 0;
        if (k < 0) {
            json_decref(out);
            goto out;
        }
        const char *mode = g->mode == 1 ? "on" : g->mode == 0 ? "off" : "unsupported";
        if (out) {
            json_t *arr = json_array();
            for (int j = 0; j < k; j++)
                json_array_append_new(arr, live_json(&live[j]));
            json_array_append_new(out, json_pack("{s:i,s:s,s:s,s:s?,s:s,s:o}", "index",
                                                 (int)g->index, "name", g->name, "uuid", g->uuid,
                                                 "model", g->model ? g->model->name : NULL,
                                                 "mig", mode, "instances", arr));
            continue;
        }
        printf("GPU %u: %s (%s), MIG %s\n", g->index, g->name,
               g->model ? g->model->name : "no MIG table", mode);
        if (g->mode == 1)
            print_live(live, k);
    }
    if (out) {
        json_dumpf(out, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(out);
    }
    ret = 0;
out:
    if (ret)
        fprintf(stderr, "carve mig list: %s\n", err);
    mig_nvml_close(n);
    return ret;
}

/* ---------- apply ---------- */

struct change {
    int ndestroy, ncreate, nkeep;
    const struct mig_live *destroy[MIG_NVML_MAX_LIVE];
    const struct mig_live *kept[MIG_NVML_MAX_LIVE];
    const struct mig_placement *create[MIG_MAX_INSTANCES];
};

/* with --replace: which live instances the plan keeps as they are, which go */
static void diff_replace(const struct mig_live *live, int k, const struct mig_plan *p,
                         struct change *c)
{
    bool taken[MIG_MAX_INSTANCES] = {false};
    for (int i = 0; i < k; i++) {
        bool keep = false;
        for (size_t j = 0; j < p->nplaced && !keep; j++)
            if (!taken[j] && p->placed[j].inst.profile == live[i].profile &&
                p->placed[j].inst.start == live[i].start)
                keep = taken[j] = true;
        if (keep)
            c->kept[c->nkeep++] = &live[i];
        else
            c->destroy[c->ndestroy++] = &live[i];
    }
    for (size_t j = 0; j < p->nplaced; j++)
        if (!taken[j])
            c->create[c->ncreate++] = &p->placed[j];
}

/* ---------- instance locks ---------- */

/* One lock per MIG device, shared by every user: a carve run --mode mig holds it while its
 * command runs, so that no other carve run, of this user or another, takes the same free
 * instance before the command has a process in it that NVML lists. The lock is the name
 * "carve-mig-UUID" in the abstract unix socket namespace: bind() takes it for one socket
 * only, for any user, and the kernel frees it when the socket closes, on SIGKILL too.
 * Nothing is left on a file system, so no user can plant a file that holds every instance
 * for everyone without a process of their own (as a lock file in /dev/shm could: one of
 * mode 000 there blocked every other user); a process that holds a name is one /proc/net/unix
 * and `ss -xlp` show. Abstract names are per network namespace, as /dev/shm is per mount
 * namespace: carve runs in separate ones do not see each other's locks. */
static int lock_address(const char *uuid, struct sockaddr_un *a, socklen_t *len)
{
    if (!uuid[0] || strspn(uuid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789-") != strlen(uuid))
        return -1;
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* sun_path[0] = '\0': the abstract namespace; the name is the bytes after it */
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "carve-mig-%s", uuid);
    if (n < 0 || (size_t)n >= sizeof(a->sun_path) - 1)
        return -1;
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    return 0;
}

/* Takes MIG device uuid's lock without waiting: the fd that holds it, or -1 when another
 * carve run holds it (errno EADDRINUSE) or it cannot be taken. */
static int lock_instance(const char *uuid)
{
    struct sockaddr_un a;
    socklen_t len;
    if (lock_address(uuid, &a, &len) < 0) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

void carve_mig_release(int lock_fd)
{
    if (lock_fd >= 0)
        close(lock_fd);
}

/* Whether a carve run --mode mig (of any user) holds MIG device uuid (lock_instance): its
   command may have no GPU process yet, and NVML then lists none. */
static bool held_by_run(const char *uuid)
{
    int fd = lock_instance(uuid);
    if (fd >= 0) {
        close(fd);
        return false;
    }
    return errno == EADDRINUSE;
}

/* Whether the instance is in use (a process in it, or a carve run holding it), and by whom. */
static bool busy_text(const struct mig_live *l, char *buf, size_t len)
{
    if (l->npids || l->pids_unknown) {
        pids_text(l, buf, len);
        return true;
    }
    snprintf(buf, len, "none yet, but a carve run --mode mig holds it for its command");
    return held_by_run(l->uuid);
}

static int refuse_busy(const struct change *c, unsigned gpu)
{
    int busy = 0;
    for (int i = 0; i < c->ndestroy; i++) {
        const struct mig_live *l = c->destroy[i];
        char pids[256], sl[16];
        if (!busy_text(l, pids, sizeof(pids)))
            continue;
        fprintf(stderr, "carve mig apply: refusing to destroy GPU instance %u (%s at slots "
                "%s, %s) on GPU %u: processes run in it: %s\n", l->gi_id, live_name(l),
                live_slots(l, sl, sizeof(sl)), l->uuid[0] ? l->uuid : "no MIG device", gpu,
                pids);
        busy++;
    }
    if (busy)
        fprintf(stderr, "carve mig apply: nothing changed; stop those processes first, or "
                "apply without --replace to add beside them\n");
    return busy;
}

static void print_change(const struct change *c, const struct mig_request *req, bool dry)
{
    char sl[16];
    for (int i = 0; i < c->nkeep; i++)
        printf("keep     GI %-2u %-12s slots %-5s %s\n", c->kept[i]->gi_id,
               live_name(c->kept[i]), live_slots(c->kept[i], sl, sizeof(sl)), c->kept[i]->uuid);
    if (!dry)
        return; /* what is done is printed as it is done */
    for (int i = 0; i < c->ndestroy; i++)
        printf("would destroy GI %-2u %-12s slots %-5s %s\n", c->destroy[i]->gi_id,
               live_name(c->destroy[i]), live_slots(c->destroy[i], sl, sizeof(sl)),
               c->destroy[i]->uuid);
    for (int i = 0; i < c->ncreate; i++) {
        slots(c->create[i]->inst.profile, c->create[i]->inst.start, sl, sizeof(sl));
        printf("%s %-12s slots %-5s for request %s\n", "would create",
               c->create[i]->inst.profile->name, sl, req[c->create[i]->request].text);
    }
}

static json_t *change_json(const struct change *c, const struct mig_request *req,
                           const struct mig_live *made, int nmade, bool dry)
{
    json_t *d = json_array(), *k = json_array(), *cr = json_array();
    for (int i = 0; i < c->ndestroy; i++)
        json_array_append_new(d, live_json(c->destroy[i]));
    for (int i = 0; i < c->nkeep; i++)
        json_array_append_new(k, live_json(c->kept[i]));
    for (int i = 0; i < c->ncreate; i++) {
        json_t *o = json_pack("{s:s,s:s,s:i}", "request", req[c->create[i]->request].text,
                              "profile", c->create[i]->inst.profile->name, "start",
                              (int)c->create[i]->inst.start);
        if (i < nmade)
            json_object_set_new(o, "created", live_json(&made[i]));
        json_array_append_new(cr, o);
    }
    return json_pack("{s:b,s:o,s:o,s:o}", "dry_run", dry, "keep", k, "destroy", d, "create", cr);
}

/* checks each creation's profile ID, placement size and start slot against NVML's own before
 * anything changes: a driver that numbered a profile otherwise made another profile than
 * planned, or failed only after --replace had destroyed (a review's finding, 2026-11-29) */
static int check_placements(struct mig_nvml *n, unsigned gpu, const struct change *c,
                            char *err, size_t errlen)
{
    for (int i = 0; i < c->ncreate; i++) {
        const struct mig_profile *p = c->create[i]->inst.profile;
        struct mig_nvml_facts f;
        if (mig_nvml_facts(n, gpu, p, &f, err, errlen) < 0)
            return -1;
        if (f.id != p->nvml_id || f.memory_slices != p->memory_slices) {
            snprintf(err, errlen, "NVML gives %s profile ID %u and %u memory slices, carve's "
                     "table %u and %u: nothing changed; please report this GPU and driver",
                     p->name, f.id, f.memory_slices, p->nvml_id, p->memory_slices);
            return -1;
        }
        unsigned mask = f.start_mask;
        if (!(mask & (1u << c->create[i]->inst.start))) {
            char nv[64], ours[64];
            starts_text(mask, nv, sizeof(nv));
            starts_text(p->start_mask, ours, sizeof(ours));
            snprintf(err, errlen, "NVML allows %s to start at slots %s, carve's table says %s: "
                     "nothing changed; please report this GPU and driver", p->name, nv, ours);
            return -1;
        }
    }
    return 0;
}

static int do_change(struct mig_nvml *n, unsigned gpu, const struct change *c,
                     const struct mig_request *req, struct mig_live *made, int *nmade, bool json)
{
    char err[512], sl[16];
    for (int i = 0; i < c->ndestroy; i++) {
        if (mig_nvml_destroy(n, gpu, c->destroy[i]->gi_id, err, sizeof(err)) < 0) {
            fprintf(stderr, "carve mig apply: %s; stopped after %d of %d changes\n", err, i,
                    c->ndestroy + c->ncreate);
            return EXIT_REFUSED;
        }
        if (!json)
            printf("destroyed GI %u (%s)\n", c->destroy[i]->gi_id, live_name(c->destroy[i]));
    }
    for (int i = 0; i < c->ncreate; i++) {
        const struct mig_placement *pl = c->create[i];
        if (mig_nvml_create(n, gpu, pl->inst.profile, pl->inst.start, &made[i], err,
                            sizeof(err)) < 0) {
            fprintf(stderr, "carve mig apply: %s; stopped after %d of %d changes\n", err,
                    c->ndestroy + i, c->ndestroy + c->ncreate);
            return EXIT_REFUSED;
        }
        (*nmade)++;
        if (!json)
            printf("created GI %-2u %-12s slots %-5s %s  for request %s\n", made[i].gi_id,
                   pl->inst.profile->name, live_slots(&made[i], sl, sizeof(sl)), made[i].uuid,
                   req[pl->request].text);
    }
    return 0;
}

static int cmd_apply(int argc, char **argv)
{
    struct mig_opts o = {0};
    int ret = parse_opts("apply", argc, argv, "isjyr", &o);
    if (ret >= 0)
        return ret;
    struct mig_request req[MIG_MAX_REQUESTS];
    if ((ret = parse_requests("apply", o.args, o.nargs, req)) != 0)
        return ret;
    struct mig_nvml *n;
    struct mig_gpu g;
    struct mig_live live[MIG_NVML_MAX_LIVE], made[MIG_MAX_INSTANCES];
    struct mig_instance keep[MIG_NVML_MAX_LIVE];
    struct mig_plan plan;
    struct change c = {0};
    char err[512];
    int k, nmade = 0;
    if (open_nvml(o.simulate, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig apply: %s\n", err);
        return EXIT_REFUSED;
    }
    ret = EXIT_REFUSED;
    if (gpu_of(n, o.index, &g, err, sizeof(err)) < 0)
        goto fail;
    if (g.mode != 1) {
        snprintf(err, sizeof(err), "GPU %u has MIG mode off; carve does not change it: turn it "
                 "on with `nvidia-smi -i %u -mig 1` (root, then a GPU reset)", o.index, o.index);
        goto fail;
    }
    if ((k = mig_nvml_instances(n, o.index, live, MIG_NVML_MAX_LIVE, err, sizeof(err))) < 0 ||
        live_to_keep(live, k, keep, err, sizeof(err)) < 0)
        goto fail;
    /* --replace plans on an empty GPU but reuses what is there wherever that costs nothing */
    if (mig_plan_prefer(g.model, req, (size_t)o.nargs, o.replace ? NULL : keep,
                        o.replace ? 0 : (size_t)k, o.replace ? keep : NULL,
                        o.replace ? (size_t)k : 0, &plan, err, sizeof(err)) < 0)
        goto fail;
    if (plan.nrefused) {
        if (!o.json)
            print_plan(g.model, req, (size_t)o.nargs, &plan, o.replace ? 0 : (size_t)k);
        else {
            json_t *j = plan_json(g.model, req, &plan);
            json_dumpf(j, stdout, JSON_INDENT(2));
            putchar('\n');
            json_decref(j);
        }
        snprintf(err, sizeof(err), "%zu request%s do%s not fit on GPU %u: nothing changed",
                 plan.nrefused, plan.nrefused == 1 ? "" : "s", plan.nrefused == 1 ? "es" : "",
                 o.index);
        goto fail;
    }
    if (o.replace) {
        diff_replace(live, k, &plan, &c);
    } else {
        for (int i = 0; i < k; i++)
            c.kept[c.nkeep++] = &live[i];
        for (size_t j = 0; j < plan.nplaced; j++)
            c.create[c.ncreate++] = &plan.placed[j];
    }
    if (refuse_busy(&c, o.index)) {
        mig_nvml_close(n);
        return EXIT_REFUSED;
    }
    if (check_placements(n, o.index, &c, err, sizeof(err)) < 0)
        goto fail;
    if (!o.json) {
        printf("GPU %u: %s (%s)\n", o.index, g.name, g.model->name);
        print_change(&c, req, !o.yes);
    }
    ret = 0;
    if (o.yes)
        ret = do_change(n, o.index, &c, req, made, &nmade, o.json);
    else if (!o.json)
        printf("dry run: nothing changed; add --yes to apply\n");
    if (o.json) {
        json_t *j = change_json(&c, req, made, nmade, !o.yes);
        json_object_set_new(j, "gpu", json_integer(o.index));
        json_object_set_new(j, "model", json_string(g.model->name));
        json_dumpf(j, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(j);
    }
    mig_nvml_close(n);
    return ret;
fail:
    fprintf(stderr, "carve mig apply: %s\n", err);
    mig_nvml_close(n);
    return ret;
}

/* ---------- destroy ---------- */

static int cmd_destroy(int argc, char **argv)
{
    struct mig_opts o = {0};
    int ret = parse_opts("destroy", argc, argv, "isya", &o);
    if (ret >= 0)
        return ret;
    if (!o.all && o.nargs == 0)
        return usage_error("destroy", "name GPU instances (an ID or a MIG-... UUID) or --all%s",
                           "");
    if (o.all && o.nargs)
        return usage_error("destroy", "--all and `%s' together", o.args[0]);
    struct mig_nvml *n;
    struct mig_gpu g;
    struct mig_live live[MIG_NVML_MAX_LIVE];
    const struct mig_live *targets[MIG_NVML_MAX_LIVE];
    int k, nt = 0;
    char err[512];
    if (open_nvml(o.simulate, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "carve mig destroy: %s\n", err);
        return EXIT_REFUSED;
    }
    ret = EXIT_REFUSED;
    if (gpu_of(n, o.index, &g, err, sizeof(err)) < 0 ||
        (k = mig_nvml_instances(n, o.index, live, MIG_NVML_MAX_LIVE, err, sizeof(err))) < 0)
        goto fail;
    for (int i = 0; o.all && i < k; i++)
        targets[nt++] = &live[i];
    for (int a = 0; a < o.nargs; a++) {
        const struct mig_live *t = NULL;
        char *end;
        long id = strtol(o.args[a], &end, 10);
        for (int i = 0; i < k && !t; i++)
            if ((*end == '\0' && end != o.args[a] && live[i].gi_id == (unsigned)id) ||
                (live[i].uuid[0] && strcmp(live[i].uuid, o.args[a]) == 0))
                t = &live[i];
        if (!t) {
            snprintf(err, sizeof(err), "GPU %u has no GPU instance `%s' (see carve mig list)",
                     o.index, o.args[a]);
            ret = CARVE_EXIT_USAGE;
            goto fail;
        }
        targets[nt++] = t;
    }
    int busy = 0;
    for (int i = 0; i < nt; i++) {
        char pids[256];
        if (busy_text(targets[i], pids, sizeof(pids))) {
            fprintf(stderr, "carve mig destroy: refusing to destroy GPU instance %u (%s, %s): "
                    "processes run in it: %s\n", targets[i]->gi_id, live_name(targets[i]),
                    targets[i]->uuid[0] ? targets[i]->uuid : "no MIG device", pids);
            busy++;
        }
    }
    if (busy) {
        fprintf(stderr, "carve mig destroy: nothing changed\n");
        mig_nvml_close(n);
        return EXIT_REFUSED;
    }
    for (int i = 0; i < nt; i++) {
        if (!o.yes) {
            char sl[16];
            printf("would destroy GI %u (%s at slots %s, %s)\n", targets[i]->gi_id,
                   live_name(targets[i]), live_slots(targets[i], sl, sizeof(sl)),
                   targets[i]->uuid[0] ? targets[i]->uuid : "no MIG device");
            continue;
        }
        if (mig_nvml_destroy(n, o.index, targets[i]->gi_id, err, sizeof(err)) < 0)
            goto fail;
        printf("destroyed GI %u (%s)\n", targets[i]->gi_id, live_name(targets[i]));
    }
    if (!o.yes)
        printf("dry run: nothing changed; add --yes to destroy\n");
    mig_nvml_close(n);
    return 0;
fail:
    fprintf(stderr, "carve mig destroy: %s\n", err);
    mig_nvml_close(n);
    return ret;
}

/* ---------- carve run --mode mig ---------- */

/* --memory must be a size and --compute a share: a request parses either, and took a share
   given as --memory (or a size as --compute) as if it were the other option. */
static int request_part(const char *opt, const char *text, bool share, char *err, size_t errlen)
{
    struct mig_request part = {0};
    if (mig_request_parse(text, &part, err, errlen) < 0)
        return -1;
    if (part.profile[0] || (share ? part.memory_mib != 0 : part.compute_pct > 0)) {
        snprintf(err, errlen, "%s %s: %s", opt, text,
                 share ? "not a share of the GPU's SMs (30%); give memory with --memory"
                       : "not a size (20GiB); give a share of the SMs with --compute");
        return -1;
    }
    return 0;
}

/* --compute as carve run reads a share in every mode (30, 30%, 12.5%), into the text of a
 * MIG request ("30%"). A MIG request's own parser took 30 for 30 bytes and 30%+ for a size
 * of an unknown unit; a guarantee is refused here, saying why: an instance's share is fixed. */
static int compute_share(const char *text, char *share, size_t len, char *err, size_t errlen)
{
    struct carve_compute c = {0};
    if (carve_parse_compute(text, &c, NULL, 0) < 0) {
        struct mig_request part;
        char why[256];
        /* a size or a profile: said as such, with the option that takes it */
        if (mig_request_parse(text, &part, why, sizeof(why)) == 0 &&
            (part.profile[0] || part.memory_mib))
            return request_part("--compute", text, true, err, errlen);
        uint32_t bp = 1;
        const char *end, *no = carve_parse_percent_bp(text, &bp, &end);
        snprintf(err, errlen, "--compute `%.64s%s' %s; give a share of the GPU's SMs in (0, "
                 "100], to 0.01%%: 30 or 30%%", text, strlen(text) > 64 ? "..." : "",
                 no ? no : bp == 0 ? "is zero" : "is not a percentage");
        return -1;
    }
    bool guarantee = c.mode == CARVE_COMPUTE_GUARANTEE;
    c.mode = CARVE_COMPUTE_CAP;
    carve_format_compute(&c, share, len);
    if (guarantee) {
        snprintf(err, errlen, "--compute %.64s%s: a MIG instance gives a fixed share of the "
                 "GPU's SMs, not a guarantee with idle time on top; use %s", text,
                 strlen(text) > 64 ? "..." : "", share);
        return -1;
    }
    return 0;
}

/* Whether no profile of any GPU in MIG mode (of those in scope) could hold the request: then
 * no instance to find or make exists, and "make one with carve mig apply" would send the user
 * to a plan that refuses it. The largest profile of each such model goes into largest, for the message.
 * false when a GPU's model is not in carve's tables: carve cannot tell there. */
static bool no_profile_holds(const struct mig_gpu *gpus, int ngpu, const bool *scope,
                             const struct mig_request *want, char *largest, size_t len)
{
    size_t used = 0;
    int judged = 0;
    largest[0] = '\0';
    for (int i = 0; i < ngpu; i++) {
        const struct mig_model *m = gpus[i].model;
        if (gpus[i].mode != 1 || !scope[i])
            continue;
        if (!m)
            return false;
        const struct mig_profile *big = NULL;
        for (size_t j = 0; j < m->nprofiles; j++) {
            if (mig_request_fits(m, want, &m->profiles[j]))
                return false;
            if (!big || m->profiles[j].memory_mib > big->memory_mib)
                big = &m->profiles[j];
        }
        judged++;
        if (big && used < len && !strstr(largest, m->name))
            used += (size_t)snprintf(largest + used, len - used, "%s%s's largest, %s, has "
                                     "%.2f GiB", used ? "; " : "", m->name, big->name,
                                     big->memory_mib / 1024.0);
    }
    return judged > 0;
}

/* What carve run --mode mig saw while choosing an instance: the choice, and what its
 * messages say when there is none. Only the devices in scope count: all of them, or with
 * CUDA_VISIBLE_DEVICES set (vis), those of the GPUs and the MIG devices it names. */
struct mig_scan {
    const struct mig_visible *vis; /* NULL: CUDA_VISIBLE_DEVICES unset */
    const char *visible;
    const char *instance; /* --mig-instance, or NULL */
    struct mig_request want;
    const struct mig_live *best, *named; /* the choice; --mig-instance's, in scope or not */
    bool named_in_scope;
    int lock_fd;                         /* held on best */
    bool scope[MIG_NVML_MAX_GPUS];       /* the GPU is named, or one of its MIG devices */
    bool vis_found[MIG_VISIBLE_MAX];     /* CUDA_VISIBLE_DEVICES's MIG device k exists */
    char seen[512], modes[256];
    size_t used, mused;
    int mig_on, mig_off;
    unsigned off_index; /* the first GPU with MIG mode off, for the command to turn it on */
};

/* Whether instance l of GPU i may be given to the command; notes the MIG devices named. */
static bool in_scope(struct mig_scan *sc, int i, const struct mig_live *l)
{
    if (!sc->vis)
        return true;
    bool named = false;
    for (int k = 0; k < sc->vis->nmig; k++)
        if (strcmp(sc->vis->mig[k], l->uuid) == 0)
            named = sc->vis_found[k] = true;
    return named || sc->vis->gpu[i];
}

/* Instance l of GPU g, in scope: the best so far (its lock taken, the previous one's let go)
 * when it fits, has no process, is smaller than the best and no other carve run holds it;
 * listed in seen either way. */
static void consider(struct mig_scan *sc, const struct mig_gpu *g, const struct mig_live *l)
{
    bool fits = l->profile && mig_request_fits(g->model, &sc->want, l->profile);
    bool better = fits && !l->npids && !l->pids_unknown &&
                  !(sc->best && sc->best->memory_mib <= l->memory_mib);
    /* held: another carve run (any user's) took it, its command has no process yet */
    int fd = better ? lock_instance(l->uuid) : -1;
    if (sc->used < sizeof(sc->seen))
        sc->used += (size_t)snprintf(sc->seen + sc->used, sizeof(sc->seen) - sc->used,
                                     "%s%s %s%s", sc->used ? ", " : "", live_name(l), l->uuid,
                                     l->npids || l->pids_unknown ? " (busy)"
                                     : !fits                      ? " (too small)"
                                     : better && fd < 0 ? " (held by a carve run)" : "");
    if (fd < 0)
        return;
    carve_mig_release(sc->lock_fd); /* a smaller one fits: let the bigger one go */
    sc->lock_fd = fd;
    sc->best = l;
}

/* GPU g, not in MIG mode: noted for the message that says so. */
static void note_mode(struct mig_scan *sc, const struct mig_gpu *g)
{
    if (sc->mused < sizeof(sc->modes))
        sc->mused += (size_t)snprintf(sc->modes + sc->mused, sizeof(sc->modes) - sc->mused,
                                      "%sGPU %u %s", sc->mused ? ", " : "", g->index,
                                      g->mode == 0 ? "has MIG mode off" : "has no MIG");
    if (g->mode == 0 && sc->mig_off++ == 0)
        sc->off_index = g->index;
}

/* Looks at the instances of every GPU in MIG mode; live holds what NVML listed. */
static void scan(struct mig_scan *sc, struct mig_nvml *n, const struct mig_gpu *gpus, int ngpu,
                 struct mig_live (*live)[MIG_NVML_MAX_LIVE], char *err, size_t errlen)
{
    for (int i = 0; i < ngpu; i++) {
        sc->scope[i] = !sc->vis || sc->vis->gpu[i];
        if (gpus[i].mode != 1) {
            if (sc->scope[i])
                note_mode(sc, &gpus[i]);
            continue;
        }
        int k = mig_nvml_instances(n, gpus[i].index, live[i], MIG_NVML_MAX_LIVE, err, errlen);
        for (int j = 0; j < k; j++) {
            const struct mig_live *l = &live[i][j];
            if (!l->uuid[0])
                continue;
            bool ok = in_scope(sc, i, l);
            sc->scope[i] |= ok;
            if (sc->instance && strcmp(sc->instance, l->uuid) == 0) {
                sc->named = l;
                sc->named_in_scope = ok;
            } else if (!sc->instance && ok) {
                consider(sc, &gpus[i], l);
            }
        }
        sc->mig_on += sc->scope[i];
    }
}

/* " among the devices CUDA_VISIBLE_DEVICES=... names" into buf, or "" without it. */
static void scope_text(const struct mig_scan *sc, char *buf, size_t len)
{
    buf[0] = '\0';
    if (sc->vis)
        snprintf(buf, len, " among the devices CUDA_VISIBLE_DEVICES=%.200s names", sc->visible);
}

/* Why no instance was chosen, into err: the exit status. */
static int no_choice(struct mig_scan *sc, const struct mig_gpu *gpus, int ngpu,
                     const char *memory, const char *compute, bool simulate, char *err,
                     size_t errlen)
{
    char largest[256], where[300];
    scope_text(sc, where, sizeof(where));
    if (sc->instance) {
        if (sc->named)
            snprintf(err, errlen, "--mig-instance %s is not%s", sc->instance, where);
        else
            snprintf(err, errlen, "no MIG device %s (see carve mig list%s)", sc->instance,
                     simulate ? " --simulate" : "");
        return CARVE_EXIT_USAGE;
    }
    if (!sc->mig_on && ngpu > 0) { /* carve mig apply cannot help here: say what can */
        if (sc->mig_off)
            snprintf(err, errlen, "no GPU%s is in MIG mode (%s); turn it on with `nvidia-smi "
                     "-i %u -mig 1' (root, then a GPU reset), then make instances with carve "
                     "mig apply", where, sc->modes, sc->off_index);
        else
            snprintf(err, errlen, "no GPU%s is in MIG mode (%s); use another --mode (carve, "
                     "timeslice or mps)", where, sc->modes);
        return EXIT_REFUSED;
    }
    if ((memory || compute) &&
        no_profile_holds(gpus, ngpu, sc->scope, &sc->want, largest, sizeof(largest))) {
        snprintf(err, errlen, "no MIG profile holds %s%s%s, so no MIG instance can (%s); use "
                 "another --mode (carve, timeslice or mps), or a GPU with more memory",
                 memory ? memory : "", memory && compute ? " and " : "", compute ? compute : "",
                 largest);
        return EXIT_REFUSED;
    }
    snprintf(err, errlen, "no free MIG instance%s%s%s%s%s; there %s: %s; make one with carve "
             "mig apply", memory || compute ? " with at least " : "", memory ? memory : "",
             memory && compute ? " and " : "", compute ? compute : "", where,
             sc->used ? "are" : "is", sc->used ? sc->seen : "none");
    return EXIT_REFUSED;
}

/* A MIG device CUDA_VISIBLE_DEVICES names that this machine does not have: said in err. */
static bool unknown_mig(const struct mig_scan *sc, bool simulate, char *err, size_t errlen)
{
    for (int k = 0; sc->vis && k < sc->vis->nmig; k++)
        if (!sc->vis_found[k]) {
            snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s names MIG device %s, which this "
                     "machine does not have (see carve mig list%s)", sc->visible,
                     sc->vis->mig[k], simulate ? " --simulate" : "");
            return true;
        }
    return false;
}

/* --memory and --compute as one request, into want. */
static int parse_want(const char *memory, const char *compute, struct mig_request *want,
                      char *err, size_t errlen)
{
    char text[MIG_REQUEST_TEXT];
    if ((memory && request_part("--memory", memory, false, err, errlen) < 0) ||
        (compute && request_part("--compute", compute, true, err, errlen) < 0))
        return -1;
    if (!memory && !compute)
        return 0;
    snprintf(text, sizeof(text), "%s%s%s", memory ? memory : "", memory && compute ? "," : "",
             compute ? compute : "");
    return mig_request_parse(text, want, err, errlen) < 0 ? -1 : 0;
}

int carve_mig_choose(const char *instance, const char *memory, const char *compute,
                     const char *visible, bool simulate, char *uuid, size_t uuidlen,
                     int *lock_fd, char *err, size_t errlen)
{
    static struct mig_live live[MIG_NVML_MAX_GPUS][MIG_NVML_MAX_LIVE];
    struct mig_scan sc;
    struct mig_visible vis;
    struct mig_gpu gpus[MIG_NVML_MAX_GPUS];
    struct mig_nvml *n;
    memset(&sc, 0, sizeof(sc));
    sc.lock_fd = *lock_fd = -1;
    sc.instance = instance;
    sc.visible = visible;
    char share[32];
    if (compute && compute_share(compute, share, sizeof(share), err, errlen) < 0)
        return CARVE_EXIT_USAGE;
    compute = compute ? share : NULL; /* "30%" in messages too, however it was given */
    if (parse_want(memory, compute, &sc.want, err, errlen) < 0)
        return CARVE_EXIT_USAGE;
    if (open_nvml(simulate, &n, err, errlen) < 0)
        return EXIT_REFUSED;
    int ret = EXIT_REFUSED;
    int ngpu = mig_nvml_gpus(n, gpus, MIG_NVML_MAX_GPUS, err, errlen);
    if (ngpu < 0)
        goto out;
    ret = CARVE_EXIT_USAGE;
    if (visible && mig_visible_parse(visible, gpus, ngpu, &vis, err, errlen) < 0)
        goto out;
    sc.vis = visible ? &vis : NULL;
    scan(&sc, n, gpus, ngpu, live, err, errlen);
    if (unknown_mig(&sc, simulate, err, errlen)) {
        carve_mig_release(sc.lock_fd);
        goto out;
    }
    if (sc.named && sc.named_in_scope) {
        sc.best = sc.named; /* named: shared use is the user's choice, the lock if free */
        sc.lock_fd = lock_instance(sc.named->uuid);
    }
    if (!sc.best) {
        ret = no_choice(&sc, gpus, ngpu, memory, compute, simulate, err, errlen);
        goto out;
    }
    snprintf(uuid, uuidlen, "%s", sc.best->uuid);
    *lock_fd = sc.lock_fd;
    ret = 0;
out:
    mig_nvml_close(n);
    return ret;
}

/* ---------- dispatch ---------- */

int carve_cmd_mig(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } subs[] = {
        {"profiles", cmd_profiles}, {"plan", cmd_plan},       {"apply", cmd_apply},
        {"list", cmd_list},         {"destroy", cmd_destroy},
    };
    if (argc < 2) {
        fputs(mig_help, stderr);
        return CARVE_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(mig_help, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].fn(argc - 1, argv + 1);
    return usage_error(NULL, "no subcommand `%s' (profiles, plan, apply, list, destroy)",
                       argv[1]);
}
