/* fleet_report.c - showing a fleet plan: the side-by-side table, a terminal picture (GPUs
 * needed per mechanism, memory fill of the first GPUs), an SVG of the packing, and JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fleet.h"
#include "fleet_report.h"

static void format_mib(uint64_t mib, char *buf, size_t len)
{
    if (mib >= 1024ULL * 1024 * 10)
        snprintf(buf, len, "%.1f TiB", mib / (1024.0 * 1024.0));
    else if (mib >= 10240)
        snprintf(buf, len, "%.0f GiB", mib / 1024.0);
    else
        snprintf(buf, len, "%llu MiB", (unsigned long long)mib);
}

void fleet_report_fleet(FILE *out, const struct fleet *f)
{
    for (size_t i = 0; i < f->npools; i++) {
        const struct fleet_pool *p = &f->pools[i];
        fprintf(out, "%s%s (%llu MiB%s) x ", i ? ", " : "", p->name,
                (unsigned long long)p->memory_mib, p->mig ? ", MIG" : "");
        if (p->count == FLEET_UNLIMITED)
            fprintf(out, "any number");
        else
            fprintf(out, "%llu", (unsigned long long)p->count);
        if (p->price > 0 || p->priced) /* @0 is a price too: GPUs that cost nothing */
            fprintf(out, " at $%.2f/h", p->price);
    }
}

/* v to the 1/scale shown (cents, whole percent), as the JSON has it, and never -0: sums of the
   same prices in another order differ by float noise (3 - 3.0000000000000004), which %.2f
   showed as "-0.00" and %.0f%% as "-0%" */
static double rounded(double v, double scale)
{
    double r = (double)(long long)(v * scale + (v < 0 ? -0.5 : 0.5)) / scale;
    return r == 0 ? 0.0 : r;
}

void fleet_report_text(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                       const struct fleet_result *r)
{
    bool cost = fleet_priced(f);
    const struct fleet_plan *whole = &r->plans[FLEET_WHOLE];
    fprintf(out, "%zu workload%s on ", r->nworkloads, r->nworkloads == 1 ? "" : "s");
    fleet_report_fleet(out, f);
    fprintf(out, "\n");
    if (r->nimpossible)
        fprintf(out, "%zu of them cannot run on any GPU of this fleet (listed below); the plans "
                     "place the other %zu\n", r->nimpossible, r->nworkloads - r->nimpossible);
    bool in_cost = fleet_gap_in_cost(f);
    fprintf(out, "\n%-13s %8s %9s %6s %10s %10s", "mechanism", "GPUs", in_cost ? "$ bound" : "bound",
            "gap", "beyond", "stranded");
    if (cost)
        fprintf(out, " %11s %11s %6s", "$/hour", "saves/hour", "saves");
    fprintf(out, "\n");
    bool proved = false;
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        if (!p->available) {
            fprintf(out, "%-13s %8s  (%s)\n", fleet_mech_title(m), "-", p->note);
            continue;
        }
        char stranded[32];
        format_mib(p->stranded_mib, stranded, sizeof(stranded));
        char bound[32];
        const char *mark = p->proved_cheapest ? "*" : "";
        proved |= p->proved_cheapest;
        if (in_cost)
            snprintf(bound, sizeof(bound), "%.2f%s", p->cost_lower_bound, mark);
        else
            snprintf(bound, sizeof(bound), "%llu%s", (unsigned long long)p->lower_bound, mark);
        char gap[16];
        if (in_cost && p->shortage)
            snprintf(gap, sizeof(gap), "-");
        else
            snprintf(gap, sizeof(gap), "%.1f%%", fleet_plan_gap(f, p));
        fprintf(out, "%-13s %8llu %9s %6s %10llu %10s", fleet_mech_title(m),
                (unsigned long long)p->gpus, bound, gap, (unsigned long long)p->shortage,
                stranded);
        if (cost) {
            double saves = whole->cost_per_hour - p->cost_per_hour;
            fprintf(out, " %11.2f %11.2f %5.0f%%", p->cost_per_hour, rounded(saves, 100),
                    whole->cost_per_hour > 0 ? rounded(100.0 * saves / whole->cost_per_hour, 1)
                                             : 0.0);
        }
        fprintf(out, "\n");
    }
    if (in_cost)
        fprintf(out, "\nGPUs: used by the plan; $ bound: no plan under the mechanism's rules costs "
                     "less per hour (gap: the plan's cost above it;\n- when the plan goes beyond "
                     "the fleet, with GPUs of the pools that hold the rest most cheaply, and the "
                     "bound with any);\n");
    else
        fprintf(out, "\nGPUs: used by the plan; bound: no packing under the mechanism's rules uses "
                     "fewer;\n");
    fprintf(out, "beyond: GPUs the plan needs that the fleet does not have; stranded: memory of "
                 "used GPUs no workload uses.\n");
    if (proved)
        fprintf(out, "*: the plan's own %s: every other plan within the fleet was tried, and none "
                     "is cheaper (short lists).\n", in_cost ? "cost" : "GPUs");
    for (int m = 1; m < FLEET_NMECH; m++)
        if (r->plans[m].available)
            fprintf(out, "  %s: %s\n", fleet_mech_title(m), r->plans[m].note);
    if (f->npools > 1)
        for (int m = 0; m < FLEET_NMECH; m++) {
            const struct fleet_plan *p = &r->plans[m];
            if (!p->available)
                continue;
            fprintf(out, "  %s uses", fleet_mech_title(m));
            for (size_t i = 0; i < f->npools; i++)
                fprintf(out, "%s %llu %s", i ? "," : "", (unsigned long long)p->gpus_by_pool[i],
                        f->pools[i].name);
            fprintf(out, "\n");
        }
    if (r->nimpossible) {
        fprintf(out, "\ncannot run on this fleet:\n");
        for (size_t i = 0; i < r->nimpossible; i++) {
            const struct fleet_workload *w = &ws->w[r->impossible[i].index];
            fprintf(out, "  line %u `%s': %s\n", w->line, w->name, r->impossible[i].why);
        }
    }
}

/* ---- terminal picture ---- */

static const char *const fill_glyph[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};

void fleet_report_picture(FILE *out, const struct fleet *f, const struct fleet_result *r,
                          unsigned width)
{
    uint64_t most = 1;
    for (int m = 0; m < FLEET_NMECH; m++)
        if (r->plans[m].available && r->plans[m].gpus > most)
            most = r->plans[m].gpus;
    if (width < 20)
        width = 20;
    fprintf(out, "\nGPUs each mechanism needs (the longest bar is %llu GPU%s):\n",
            (unsigned long long)most, most == 1 ? "" : "s");
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        if (!p->available)
            continue;
        unsigned cells = (unsigned)((p->gpus * width * 8 + most - 1) / most); /* eighths */
        fprintf(out, "  %-13s ", fleet_mech_title(m));
        for (unsigned i = 0; i < cells / 8; i++)
            fputs(fill_glyph[8], out);
        if (cells % 8)
            fputs(fill_glyph[cells % 8], out);
        fprintf(out, " %llu\n", (unsigned long long)p->gpus);
    }
    fprintf(out, "\nmemory fill of the first %u GPUs of each plan (one column a GPU; "
                 "\u2581 = an eighth, \u2588 = full):\n", width);
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        if (!p->available || !p->use)
            continue;
        fprintf(out, "  %-13s ", fleet_mech_title(m));
        for (uint64_t g = 0; g < p->gpus && g < width; g++) {
            uint64_t have = f->pools[p->use[g].pool].memory_mib;
            unsigned level = (unsigned)((p->use[g].memory_used_mib * 8 + have / 2) / have);
            fputs(fill_glyph[level > 8 ? 8 : level ? level : 1], out);
        }
        fprintf(out, "\n");
    }
}

/* ---- SVG ---- */

static const char *latency_colour(int latency)
{
    return latency == FLEET_LAT_STRICT ? "#d6604d" : latency == FLEET_LAT_NORMAL ? "#4393c3"
                                                                                   : "#5aae61";
}

/* Text inside an SVG element: a workload's name may hold &, < or > (any printable byte). */
static void svg_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", out);
        else if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else
            fputc(*s, out);
    }
}

int fleet_report_svg(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                     const struct fleet_result *r, unsigned max_gpus)
{
    const unsigned col = 10, gap = 2, height = 120, left = 130, top = 50, panel = height + 40;
    unsigned shown = 0;
    for (int m = 0; m < FLEET_NMECH; m++)
        if (r->plans[m].available && r->plans[m].gpus > shown)
            shown = (unsigned)(r->plans[m].gpus < max_gpus ? r->plans[m].gpus : max_gpus);
    unsigned w = left + shown * (col + gap) + 20, h = top + FLEET_NMECH * panel + 30;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
                 "font-family=\"sans-serif\" font-size=\"12\">\n", w < 640 ? 640 : w, h);
    fprintf(out, "<text x=\"10\" y=\"20\" font-size=\"15\">carve plan: %zu workload%s; one column "
                 "a GPU (first %u), height its memory</text>\n", r->nworkloads,
            r->nworkloads == 1 ? "" : "s", max_gpus);
    fprintf(out, "<text x=\"10\" y=\"38\"><tspan fill=\"#d6604d\">&#9632; strict</tspan> "
                 "<tspan fill=\"#4393c3\">&#9632; normal</tspan> <tspan fill=\"#5aae61\">&#9632; "
                 "relaxed</tspan> <tspan fill=\"#bbbbbb\">&#9632; MIG profile beyond use</tspan> "
                 "<tspan fill=\"#eeeeee\" stroke=\"#999\">&#9632; stranded</tspan></text>\n");
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        unsigned y0 = top + (unsigned)m * panel;
        fprintf(out, "<text x=\"10\" y=\"%u\">%s</text>\n", y0 + height / 2, fleet_mech_title(m));
        if (!p->available || !p->use) {
            fprintf(out, "<text x=\"%u\" y=\"%u\" fill=\"#777\">not available: %s</text>\n", left,
                    y0 + height / 2, p->note);
            continue;
        }
        fprintf(out, "<text x=\"10\" y=\"%u\" fill=\"#555\">%llu GPU%s</text>\n",
                y0 + height / 2 + 16, (unsigned long long)p->gpus, p->gpus == 1 ? "" : "s");
        unsigned n = (unsigned)(p->gpus < max_gpus ? p->gpus : max_gpus);
        double *stack = calloc(n ? n : 1, sizeof(*stack));
        if (!stack)
            return -1;
        for (unsigned g = 0; g < n; g++)
            fprintf(out, "<rect x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"#eeeeee\" "
                         "stroke=\"#999\" stroke-width=\"0.5\"/>\n",
                    left + g * (col + gap), y0, col, height);
        for (size_t i = 0; p->gpu_of && i < ws->n; i++) {
            uint32_t g = p->gpu_of[i];
            if (g == UINT32_MAX || g >= n)
                continue;
            double have = (double)f->pools[p->use[g].pool].memory_mib;
            double used = height * (double)ws->w[i].memory_mib / have;
            double held = used;
            if (p->profile_of && p->profile_of[i] && strcmp(p->profile_of[i], "whole") != 0)
                held = height * (double)p->use[g].memory_held_mib / have / p->use[g].tenants;
            if (held < used)
                held = used;
            double y = y0 + height - stack[g] - held;
            if (held > used)
                fprintf(out, "<rect x=\"%u\" y=\"%.1f\" width=\"%u\" height=\"%.1f\" "
                             "fill=\"#bbbbbb\"/>\n", left + g * (col + gap), y, col, held);
            fprintf(out, "<rect x=\"%u\" y=\"%.1f\" width=\"%u\" height=\"%.1f\" fill=\"%s\" "
                         "stroke=\"white\" stroke-width=\"0.5\"><title>",
                    left + g * (col + gap), y + held - used, col, used,
                    latency_colour(ws->w[i].latency));
            svg_escaped(out, ws->w[i].name);
            fprintf(out, ": %llu MiB, %.0f%%, %s, %s</title></rect>\n",
                    (unsigned long long)ws->w[i].memory_mib, ws->w[i].compute_bp / 100.0,
                    fleet_latency_name(ws->w[i].latency), fleet_trust_name(ws->w[i].trust));
            stack[g] += held;
        }
        free(stack);
    }
    fprintf(out, "</svg>\n");
    return 0;
}

/* ---- JSON ---- */

/* Dollars to the cent: sums of prices carry float noise (51439.999999881686) */
static json_t *cents(double v)
{
    return json_real(rounded(v, 100));
}

json_t *fleet_report_json(const struct fleet *f, const struct fleet_workloads *ws,
                          const struct fleet_result *r, bool assignment)
{
    json_t *root = json_object(), *pools = json_array(), *plans = json_array(),
           *imp = json_array();
    for (size_t i = 0; i < f->npools; i++) {
        const struct fleet_pool *p = &f->pools[i];
        json_array_append_new(
            pools, json_pack("{s:s, s:I, s:b, s:o, s:f}", "model", p->name, "memory_mib",
                             (json_int_t)p->memory_mib, "mig", p->mig, "count",
                             p->count == FLEET_UNLIMITED ? json_null()
                                                         : json_integer((json_int_t)p->count),
                             "price", p->price));
    }
    const struct fleet_plan *whole = &r->plans[FLEET_WHOLE];
    for (int m = 0; m < FLEET_NMECH; m++) {
        const struct fleet_plan *p = &r->plans[m];
        json_t *o = json_pack("{s:s, s:b, s:s}", "mechanism", fleet_mech_name(m), "available",
                              p->available, "note", p->note);
        if (p->available) {
            json_t *byp = json_object();
            for (size_t i = 0; i < f->npools; i++)
                json_object_set_new(byp, f->pools[i].name,
                                    json_integer((json_int_t)p->gpus_by_pool[i]));
            json_object_set_new(o, "gpus", json_integer((json_int_t)p->gpus));
            json_object_set_new(o, "gpus_by_model", byp);
            json_object_set_new(o, "lower_bound", json_integer((json_int_t)p->lower_bound));
            json_object_set_new(o, "gap_pct", fleet_gap_in_cost(f) && p->shortage
                                                  ? json_null()
                                                  : json_real(fleet_plan_gap(f, p)));
            json_object_set_new(o, "gap_of", json_string(fleet_gap_in_cost(f) ? "cost" : "gpus"));
            json_object_set_new(o, "beyond_fleet", json_integer((json_int_t)p->shortage));
            json_object_set_new(o, "stranded_mib", json_integer((json_int_t)p->stranded_mib));
            json_object_set_new(o, "profile_rounding_mib", json_integer((json_int_t)p->rounding_mib));
            json_object_set_new(o, "alone", json_integer((json_int_t)p->alone));
            json_object_set_new(o, "placed", json_integer((json_int_t)p->placed));
            json_object_set_new(o, "cost_per_hour", cents(p->cost_per_hour));
            json_object_set_new(o, "cost_lower_bound", cents(p->cost_lower_bound));
            json_object_set_new(o, "proved_cheapest", json_boolean(p->proved_cheapest));
            json_object_set_new(o, "saves_per_hour", cents(whole->cost_per_hour - p->cost_per_hour));
        }
        if (assignment && p->available && p->gpu_of) {
            json_t *a = json_array();
            for (size_t i = 0; i < ws->n; i++) {
                if (p->gpu_of[i] == UINT32_MAX)
                    continue;
                json_t *e = json_pack("{s:s, s:I, s:s}", "workload", ws->w[i].name, "gpu",
                                      (json_int_t)p->gpu_of[i], "model",
                                      f->pools[p->use[p->gpu_of[i]].pool].name);
                if (p->profile_of && p->profile_of[i])
                    json_object_set_new(e, "profile", json_string(p->profile_of[i]));
                json_array_append_new(a, e);
            }
            json_object_set_new(o, "assignment", a);
        }
        json_array_append_new(plans, o);
    }
    for (size_t i = 0; i < r->nimpossible; i++) {
        const struct fleet_workload *w = &ws->w[r->impossible[i].index];
        json_array_append_new(imp, json_pack("{s:s, s:I, s:I, s:s}", "workload", w->name, "line",
                                             (json_int_t)w->line, "memory_mib",
                                             (json_int_t)w->memory_mib, "why",
                                             r->impossible[i].why));
    }
    json_object_set_new(root, "workloads", json_integer((json_int_t)r->nworkloads));
    json_object_set_new(root, "fleet", pools);
    json_object_set_new(root, "plans", plans);
    json_object_set_new(root, "impossible", imp);
    return root;
}

/* A name as a JSON string: workload names are printable ASCII (the parser refuses the rest),
 * so only quotes and backslashes need escaping. */
static void put_json_name(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

int fleet_report_json_stream(FILE *out, const struct fleet *f, const struct fleet_workloads *ws,
                             const struct fleet_result *r)
{
    json_t *root = fleet_report_json(f, ws, r, false);
    json_t *plans = json_object_get(root, "plans");
    if (!root || !plans)
        return -1;
    json_incref(plans);
    json_object_del(root, "plans");
    char *head = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!head) {
        json_decref(plans);
        return -1;
    }
    /* the object without its closing brace, then the plans written one by one */
    char *end = strrchr(head, '}');
    if (end)
        *end = '\0';
    fprintf(out, "%s,\n  \"plans\": [\n", head);
    free(head);
    for (size_t m = 0; m < json_array_size(plans); m++) {
        char *plan = json_dumps(json_array_get(plans, m), JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (!plan)
            break;
        char *close = strrchr(plan, '}');
        if (close)
            *close = '\0';
        fputs(plan, out);
        free(plan);
        const struct fleet_plan *p = &r->plans[m];
        if (p->available && p->gpu_of) {
            fputs(",\n  \"assignment\": [", out);
            bool first = true;
            for (size_t i = 0; i < ws->n; i++) {
                if (p->gpu_of[i] == UINT32_MAX)
                    continue;
                fputs(first ? "\n    " : ",\n    ", out);
                first = false;
                fputs("{\"workload\": ", out);
                put_json_name(out, ws->w[i].name);
                fprintf(out, ", \"gpu\": %u, \"model\": ", p->gpu_of[i]);
                put_json_name(out, f->pools[p->use[p->gpu_of[i]].pool].name);
                if (p->profile_of && p->profile_of[i]) {
                    fputs(", \"profile\": ", out);
                    put_json_name(out, p->profile_of[i]);
                }
                fputc('}', out);
            }
            fputs("\n  ]", out);
        }
        fputs(m + 1 < json_array_size(plans) ? "\n},\n" : "\n}\n", out);
    }
    fputs("]\n}\n", out);
    json_decref(plans);
    return ferror(out) ? -1 : 0;
}
