/* cost.c - the GPU economics calculator of the seed article "Why share a GPU?" (a 10-GPU
 * A100 cluster at $3.50/h, 4 tenants per GPU at 25% each, time-slicing: $0.95 per
 * workload-hour against $3.50, -73%, 180 GPU-hours recovered a day), for every mechanism,
 * and the same set-up measured by carved.
 *
 * The model, kept small enough to check by hand:
 *   hosted    = tenants, capped by what the mechanism fits on one GPU (MPS 48 clients; MIG
 *               as many instances as fit of the smallest real profile that gives a tenant its
 *               busy share of the compute: 1g x7, 2g x3, 3g x2, 4g or 7g x1; carve 64
 *               slices); where those ask for more than the GPU, the floor(1 / utilisation)
 *               that fit
 *   cost      = price / (hosted * efficiency); efficiency is the share of a shared GPU's time
 *               that does tenant work (time-slicing loses 8% to context switches); one tenant
 *               alone costs the price
 *   GPUs      = ceil(gpus / hosted): whole GPUs
 *   savings   = cost / price - 1
 *   recovered = gpus * 24 * (1 - max(utilisation, 1 / hosted)): the idle GPU-hours sharing
 *               takes back; it cannot take back more than was idle
 *   suitable  = the mechanism hosts every tenant asked for (hosted = tenants, so hosted *
 *               utilisation <= 100% of one GPU), and the hardware has the mechanism */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cost.h"
#include "fleet.h"
#include "mig.h"

static const struct cost_mech_info mechs[COST_NMECH] = {
    {"time-slicing", "Time-slicing", 0.92, 0,
     "Good for low-utilisation batch / notebook workloads with relaxed latency budgets. Avoid "
     "for online inference (high P99 jitter)."},
    {"mps", "MPS", 1.00, 48,
     "Good for trusted co-tenancy within one team (replicas of one inference service). No "
     "fault isolation: avoid for untrusted tenants."},
    {"mig", "MIG", 1.00, 7,
     "Good for isolated multi-tenancy (hardware memory, compute and fault isolation). Rigid "
     "profiles; changing the geometry stops the workloads."},
    {"hami", "HAMi", 0.97, 0,
     "Good for trusted, cooperative tenants on any CUDA GPU. Software isolation only: not "
     "equivalent to MIG."},
    {"carve", "carve slices", 0.99, 64,
     "Good for trusted tenants on any NVIDIA GPU: exact memory caps, compute shares, latency "
     "priority. Software isolation only: not for untrusted tenants."},
};

const struct cost_mech_info *cost_mech(int mech)
{
    return mech >= 0 && mech < COST_NMECH ? &mechs[mech] : NULL;
}

int cost_mech_find(const char *name)
{
    for (int i = 0; i < COST_NMECH; i++)
        if (strcasecmp(name, mechs[i].name) == 0)
            return i;
    /* timeslice: carve run --mode's name for it */
    if (strcasecmp(name, "timeslicing") == 0 || strcasecmp(name, "timeslice") == 0 ||
        strcasecmp(name, "ts") == 0)
        return COST_TIMESLICE;
    return -1;
}

int cost_check(const struct cost_input *in, char *err, size_t errlen)
{
    if (!(in->gpus >= 1 && in->gpus <= COST_MAX_GPUS) || in->gpus != (double)(long long)in->gpus) {
        snprintf(err, errlen, "GPUs %.10g is not a whole number from 1 to %u", in->gpus,
                 COST_MAX_GPUS);
        return -EINVAL;
    }
    if (!(in->price >= 0 && in->price <= 10000)) {
        snprintf(err, errlen, "price %.10g is not between 0 and 10000 dollars per GPU-hour", in->price);
        return -EINVAL;
    }
    if (!(in->tenants >= 1 && in->tenants <= COST_MAX_TENANTS) ||
        in->tenants != (double)(long long)in->tenants) {
        snprintf(err, errlen, "tenants per GPU %.10g is not a whole number from 1 to %u",
                 in->tenants, COST_MAX_TENANTS);
        return -EINVAL;
    }
    if (!(in->utilisation > 0 && in->utilisation <= 1)) {
        snprintf(err, errlen, "utilisation %.10g%% is not above 0%% and at most 100%%",
                 in->utilisation * 100);
        return -EINVAL;
    }
    return 0;
}

/* The model carve knows by this name (fleet_gpu_named): a guess from a name that only
 * contains a family ("RTX A1000", "GH200", "H20") would decide MIG for a GPU carve knows
 * nothing of. */
static const struct fleet_gpu_model *gpu_model(const char *gpu)
{
    bool family_only;
    return fleet_gpu_named(gpu, &family_only);
}

int cost_gpu_mig(const char *gpu)
{
    const struct fleet_gpu_model *m = gpu ? gpu_model(gpu) : NULL;
    return m ? m->mig : -1;
}

int cost_gpu_check(const char *gpu, char *err, size_t errlen)
{
    if (gpu && gpu_model(gpu))
        return 0;
    size_t n, used = 0;
    const struct fleet_gpu_model *all = fleet_gpu_models(&n);
    char families[128] = "";
    for (size_t i = 0; i < n && used < sizeof(families); i++) {
        if (i && strcmp(all[i].family, all[i - 1].family) == 0)
            continue; /* the boards of a family are next to each other in the table */
        used += (size_t)snprintf(families + used, sizeof(families) - used, "%s%s",
                                 used ? ", " : "", all[i].family);
    }
    snprintf(err, errlen, "GPU model `%.64s' is not one carve knows: %s (or a board such as "
                          "H100-80GB, or NVML's name such as \"NVIDIA H100 80GB HBM3\"). The "
                          "model decides only whether MIG is available: for another GPU give "
                          "a known one with the same MIG support",
             gpu ? gpu : "", families);
    return -EINVAL;
}

/* The smallest MIG profile that gives a tenant busy u of the GPU its compute, from carve's
 * profile table for the model (mig_profiles.c); a model with MIG but no table there (B200,
 * H100-94GB) takes the first table's, since every MIG GPU carve knows splits its compute the
 * same way: 1g, 2g, 3g, 4g and 7g of 7 slices, no 5g or 6g. */
static const struct mig_profile *mig_tenant_profile(const char *gpu, double u)
{
    const struct mig_model *mm = gpu ? mig_model_find(gpu) : NULL;
    const struct fleet_gpu_model *board = gpu && !mm ? gpu_model(gpu) : NULL;
    if (board)
        mm = mig_model_find(board->name);
    if (!mm)
        mm = mig_models(NULL);
    return mig_profile_fit(mm, 0, u * 100);
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

void cost_compute(const struct cost_input *in, int mech, struct cost_result *out)
{
    const struct cost_mech_info *m = &mechs[mech];
    memset(out, 0, sizeof(*out));
    out->mech = mech;
    out->baseline_per_hour = in->price;
    int has_mig = in->gpu ? cost_gpu_mig(in->gpu) : 1;
    if (mech == COST_MIG && has_mig != 1) {
        /* no figures: a saving the GPU cannot deliver would read as one it can. A model carve
           does not know (measured by carved: --gpu refuses one) may or may not have MIG */
        if (has_mig == 0)
            snprintf(out->unavailable_reason, sizeof(out->unavailable_reason),
                     "%.64s has no MIG (MIG needs A100, H100, H200 or B200)", in->gpu);
        else
            snprintf(out->unavailable_reason, sizeof(out->unavailable_reason),
                     "carve does not know whether %.64s has MIG (it knows MIG on A100, H100, "
                     "H200 and B200)", in->gpu);
        snprintf(out->verdict, sizeof(out->verdict),
                 "MIG \u2014 not available on %.64s: %s; use time-slicing, MPS or carve slices "
                 "on this pool", in->gpu, has_mig == 0 ? "MIG needs A100, H100, H200 or B200"
                                                       : "carve does not know this model");
        return;
    }
    double hosted = in->tenants;
    const struct mig_profile *prof = NULL;
    if (m->max_tenants && hosted > m->max_tenants)
        hosted = m->max_tenants;
    if (mech == COST_MIG) {
        /* a tenant busy u of the GPU needs a profile of at least ceil(7u) compute slices, and
           one GPU holds max_count of it (a 5g or 6g share takes the 7g: there is none between) */
        prof = mig_tenant_profile(in->gpu, in->utilisation);
        if (prof && hosted > prof->max_count)
            hosted = prof->max_count;
    }
    /* tenants that would ask for more than the whole GPU do not all fit: the figures are for
       those that do (the verdict says so), not a saving the GPU cannot deliver */
    out->demand = hosted * in->utilisation;
    double fit = (double)(unsigned)(1 / in->utilisation + 1e-9);
    bool over = out->demand > 1.0 + 1e-9;
    if (over)
        hosted = fit > 1 ? fit : 1;
    double eff = hosted > 1 ? m->efficiency : 1.0;
    out->tenants_hosted = hosted;
    /* GPUs are whole: 10 workloads, 4 to a GPU, need 3 (2 full and one with 2), not 2.5 */
    unsigned long long g = (unsigned long long)in->gpus, h = (unsigned long long)hosted;
    out->gpus_needed = (double)((g + h - 1) / h);
    out->cost_per_workload_hour = in->price / (hosted * eff);
    out->savings_pct = in->price > 0 ? 100.0 * (out->cost_per_workload_hour / in->price - 1) : 0;
    out->recovered_gpu_hours_day = in->gpus * 24 * (1 - dmax(in->utilisation, 1 / hosted));
    if (out->recovered_gpu_hours_day < 0)
        out->recovered_gpu_hours_day = 0;
    out->suitable = true;
    out->available = true;
    if (over) {
        out->suitable = false;
        snprintf(out->verdict, sizeof(out->verdict),
                 "%s \u2014 not suitable: %.0f tenants at %.0f%% ask for %.0f%% of one GPU; they "
                 "would slow each other down. The figures are for the %.0f per GPU that fit",
                 m->title, out->demand / in->utilisation, in->utilisation * 100,
                 out->demand * 100, hosted);
        return;
    }
    if (hosted < in->tenants) {
        /* the figures are for the tenants it hosts; it does not suit the set-up asked for,
           the same "no" as a mechanism whose tenants ask for more than the GPU */
        out->suitable = false;
        if (prof)
            snprintf(out->verdict, sizeof(out->verdict),
                     "MIG \u2014 not suitable: fits only %.0f of %.0f tenants per GPU: each needs "
                     "a %ug profile (%u of 7 compute slices) for %.0f%% of the GPU. %s",
                     hosted, in->tenants, prof->compute_slices, prof->compute_slices,
                     in->utilisation * 100, m->good_for);
        else
            snprintf(out->verdict, sizeof(out->verdict),
                     "%s \u2014 not suitable: fits only %.0f of %.0f tenants per GPU. %s",
                     m->title, hosted, in->tenants, m->good_for);
        return;
    }
    snprintf(out->verdict, sizeof(out->verdict), "%s \u2014 suitable for this configuration. %s",
             m->title, m->good_for);
}

json_t *cost_result_json(const struct cost_result *r)
{
    if (!r->available) /* the same keys, null where there is no figure, and why */
        return json_pack("{s:s, s:b, s:s, s:n, s:n, s:n, s:f, s:n, s:n, s:n, s:b, s:s}",
                         "mechanism", mechs[r->mech].name, "available", false,
                         "unavailable_reason", r->unavailable_reason, "tenants_hosted",
                         "gpus_needed", "cost_per_workload_hour", "baseline_per_hour",
                         r->baseline_per_hour, "savings_pct", "gpu_hours_recovered_per_day",
                         "demand_pct", "suitable", false, "verdict", r->verdict);
    return json_pack("{s:s, s:b, s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:b, s:s}", "mechanism",
                     mechs[r->mech].name, "available", true, "tenants_hosted",
                     r->tenants_hosted, "gpus_needed", (json_int_t)r->gpus_needed,
                     "cost_per_workload_hour", r->cost_per_workload_hour, "baseline_per_hour",
                     r->baseline_per_hour, "savings_pct", r->savings_pct,
                     "gpu_hours_recovered_per_day", r->recovered_gpu_hours_day, "demand_pct",
                     r->demand * 100, "suitable", r->suitable, "verdict", r->verdict);
}

/* ---- carved's measurements ---- */

static double number(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : 0;
}

int cost_from_snapshot(const json_t *snap, struct cost_measured *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    const json_t *gpus = json_object_get(snap, "gpus");
    const json_t *slices = json_object_get(snap, "slices");
    if (!json_is_object(snap) || !json_is_array(gpus)) {
        snprintf(err, errlen, "not a carved snapshot (no \"gpus\" array; carved.h schema 1)");
        return -EINVAL;
    }
    json_int_t version = json_integer_value(json_object_get(snap, "version"));
    if (version != 1) {
        snprintf(err, errlen, "snapshot version %lld; this carve reads version 1",
                 (long long)version);
        return -EINVAL;
    }
    size_t ngpu = json_array_size(gpus);
    if (!ngpu) {
        snprintf(err, errlen, "carved reports no GPUs");
        return -EINVAL;
    }
    m->gpus = (double)ngpu;
    /* the first GPU's model that NVML names (a lost GPU carved does not list has none) */
    const char *model = NULL;
    for (size_t k = 0; k < ngpu && !(model && *model); k++)
        model = json_string_value(json_object_get(json_array_get(gpus, k), "name"));
    snprintf(m->gpu, sizeof(m->gpu), "%s", model && *model ? model : "unknown");
    /* a long name is cut at a character, not inside one: it goes into the JSON as UTF-8 */
    size_t cut = strlen(m->gpu);
    if (cut == sizeof(m->gpu) - 1) {
        size_t lead = cut;
        while (lead > 0 && ((unsigned char)m->gpu[lead - 1] & 0xc0) == 0x80)
            lead--;
        if (lead > 0 && ((unsigned char)m->gpu[lead - 1] & 0x80)) {
            unsigned char c = (unsigned char)m->gpu[--lead];
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            if (cut - lead < len)
                m->gpu[lead] = '\0';
        }
    }
    /* tenants: slices with processes, per GPU they hold; else plain processes per GPU */
    double util_sum = 0;
    unsigned tenants = 0, busy_gpus = 0;
    unsigned *per_gpu = calloc(ngpu, sizeof(*per_gpu));
    if (!per_gpu)
        return -ENOMEM;
    size_t i;
    const json_t *s;
    json_array_foreach(slices, i, s) {
        if (!json_array_size(json_object_get(s, "processes")))
            continue;
        size_t j;
        const json_t *d;
        json_array_foreach(json_object_get(s, "devices"), j, d) {
            json_int_t idx = json_integer_value(json_object_get(d, "index"));
            if (idx < 0 || (size_t)idx >= ngpu)
                continue;
            per_gpu[idx]++;
            tenants++;
            util_sum += number(json_object_get(d, "compute_share"));
        }
    }
    snprintf(m->source, sizeof(m->source), "carve slices with processes, achieved compute share");
    if (!tenants) {
        const json_t *g;
        json_array_foreach(gpus, i, g) {
            size_t j;
            const json_t *p;
            json_array_foreach(json_object_get(g, "processes"), j, p) {
                per_gpu[i]++;
                tenants++;
                util_sum += number(json_object_get(p, "sm_util"));
            }
        }
        snprintf(m->source, sizeof(m->source), "GPU processes, NVML SM utilisation");
    }
    for (i = 0; i < ngpu; i++)
        busy_gpus += per_gpu[i] > 0;
    free(per_gpu);
    if (!tenants) {
        snprintf(err, errlen, "carved sees no process on any of its %zu GPU%s: nothing to measure "
                              "(run the workloads, or give --tenants and --utilisation)",
                 ngpu, ngpu == 1 ? "" : "s");
        return -EINVAL;
    }
    m->ntenants = tenants;
    m->tenants = (double)tenants / busy_gpus;
    m->utilisation = util_sum / tenants / 100.0;
    if (m->utilisation <= 0)
        m->utilisation = 0.001; /* idle tenants: the calculator needs a share above zero */
    if (m->utilisation > 1)
        m->utilisation = 1;
    return 0;
}
