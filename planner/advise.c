/* advise.c - the mechanism advisor. The isolation matrix and the hardware gate come from the
 * seed articles ("Why share a GPU?", "A Deep Dive into GPU Sharing Technologies"); the latency
 * numbers from carve's own H100 measurements (docs/compute.md). The rules:
 *   distributed training        -> whole GPUs (sharing recovers nothing, gang scheduling matters)
 *   untrusted tenants           -> MIG where the GPU has it, else a GPU per tenant
 *   trusted, online inference   -> MIG (tight P99 budget, fixed mix) or carve slices with
 *                                  latency priority; MPS when the budget is loose
 *   trusted, notebooks          -> carve slices (memory caps; idle reporting)
 *   trusted, batch              -> time-slicing (zero set-up), carve when memory must be capped
 * and every trap that applies to the set-up is named, whichever mechanism is chosen. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "advise.h"
#include "fleet.h"
#include "mig.h"

static const struct adv_matrix_row matrix[ADV_NMECH] = {
    {"whole", "Whole GPUs", "Hardware", "Hardware", "Hardware", "None", "any GPU"},
    {"time-slicing", "Time-slicing", "None", "None", "Partial", "High", "any CUDA GPU"},
    {"mps", "MPS", "Partial", "None", "None", "Low-Medium", "any CUDA GPU (Volta+ for "
                                                         "separate address spaces)"},
    {"mig", "MIG", "Hardware", "Hardware", "Hardware", "Negligible",
     "A100, A30, H100, H20, H200, B200"},
    {"hami", "HAMi", "Software", "Software", "Partial", "Low-Medium", "any CUDA GPU"},
    {"carve", "carve slices", "Software (exact caps)", "Software (paced shares)", "Partial",
     "Low (latency priority)", "any NVIDIA GPU"},
};

const struct adv_matrix_row *adv_matrix(int mech)
{
    return mech >= 0 && mech < ADV_NMECH ? &matrix[mech] : NULL;
}

int adv_mech_find(const char *name)
{
    for (int i = 0; i < ADV_NMECH; i++)
        if (strcasecmp(name, matrix[i].name) == 0)
            return i;
    /* timeslice: carve run --mode's name for it */
    if (strcasecmp(name, "timeslicing") == 0 || strcasecmp(name, "timeslice") == 0 ||
        strcasecmp(name, "ts") == 0)
        return ADV_TIMESLICE;
    return -1;
}

static const char *const arch_names[ADV_NARCH] = {"training", "inference", "notebook", "batch"};

int adv_archetype_find(const char *name)
{
    static const struct {
        const char *word;
        int a;
    } words[] = {{"training", ADV_TRAINING},           {"distributed-training", ADV_TRAINING},
                 {"inference", ADV_INFERENCE},         {"online-inference", ADV_INFERENCE},
                 {"serving", ADV_INFERENCE},           {"notebook", ADV_NOTEBOOK},
                 {"experimentation", ADV_NOTEBOOK},    {"batch", ADV_BATCH}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(name, words[i].word) == 0)
            return words[i].a;
    return -1;
}

const char *adv_archetype_name(int a)
{
    return a >= 0 && a < ADV_NARCH ? arch_names[a] : "?";
}

/* ---- traps ---- */

struct trap_rule {
    const char *id;
    int mech;       /* the mechanism it is about; ADV_NMECH: every sharing mechanism */
    bool blocking;  /* choosing that mechanism here is wrong, not merely costly */
};

enum {
    T_TIMESLICE_ONLINE, T_NO_MEMORY_LIMIT, T_MPS_UNTRUSTED, T_MPS_NEIGHBOUR, T_MIG_GATE,
    T_MIG_UNKNOWN, T_MIG_RESIZE, T_MIG_ROUNDING, T_MIG_TOO_SMALL, T_SOFTWARE_ISOLATION,
    T_TIMESLICE_UNTRUSTED, T_SHARE_TRAINING, T_NTRAPS
};

static const struct trap_rule trap_rules[T_NTRAPS] = {
    [T_TIMESLICE_ONLINE] = {"timeslice-online", ADV_TIMESLICE, true},
    [T_NO_MEMORY_LIMIT] = {"no-memory-limit", ADV_TIMESLICE, false},
    [T_MPS_UNTRUSTED] = {"mps-untrusted", ADV_MPS, true},
    [T_MPS_NEIGHBOUR] = {"mps-neighbour", ADV_MPS, false},
    [T_MIG_GATE] = {"mig-gate", ADV_MIG, true},
    /* not a trap MIG falls in, a fact carve lacks: --check mig answers neither yes nor no */
    [T_MIG_UNKNOWN] = {"mig-unknown", ADV_MIG, false},
    [T_MIG_RESIZE] = {"mig-resize", ADV_MIG, false},
    [T_MIG_ROUNDING] = {"mig-rounding", ADV_MIG, false},
    [T_MIG_TOO_SMALL] = {"mig-too-small", ADV_MIG, true},
    [T_SOFTWARE_ISOLATION] = {"software-isolation", ADV_CARVE, true},
    [T_TIMESLICE_UNTRUSTED] = {"timeslice-untrusted", ADV_TIMESLICE, true},
    [T_SHARE_TRAINING] = {"share-training", ADV_NMECH, true},
};

static bool trap_concerns(int trap, int mech)
{
    int m = trap_rules[trap].mech;
    if (m == ADV_NMECH)
        return mech != ADV_WHOLE;
    if (trap == T_SOFTWARE_ISOLATION)
        return mech == ADV_CARVE || mech == ADV_HAMI;
    return m == mech;
}

static void add_trap(struct adv_result *r, int trap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_trap(struct adv_result *r, int trap, const char *fmt, ...)
{
    if (r->ntraps == ADV_MAX_LINES)
        return;
    struct adv_trap *t = &r->traps[r->ntraps++];
    t->id = trap_rules[trap].id;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->text, sizeof(t->text), fmt, ap);
    va_end(ap);
}

static void add_reason(struct adv_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_reason(struct adv_result *r, const char *fmt, ...)
{
    if (r->nreasons == ADV_MAX_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reasons[r->nreasons++], sizeof(r->reasons[0]), fmt, ap);
    va_end(ap);
}

static int trap_index(const char *id)
{
    for (int i = 0; i < T_NTRAPS; i++)
        if (strcmp(trap_rules[i].id, id) == 0)
            return i;
    return -1;
}

/* The largest MIG profile of r's GPU when --memory is more than it holds (an A100-40GB's
 * 7g.40gb has 39.25 GiB of its 40): MIG cannot run such a workload; NULL otherwise, or when
 * carve has no profile table for the GPU. */
static const struct mig_profile *mig_too_small(const struct adv_input *in,
                                               const struct adv_result *r)
{
    const struct mig_model *mm = r->mig_capable && in->memory_mib ? mig_model_find(r->gpu) : NULL;
    if (!mm || mig_profile_fit(mm, in->memory_mib, 0))
        return NULL;
    const struct mig_profile *largest = &mm->profiles[0];
    for (size_t i = 1; i < mm->nprofiles; i++)
        if (mm->profiles[i].memory_mib > largest->memory_mib)
            largest = &mm->profiles[i];
    return largest;
}

/* Every trap the set-up can fall into, whatever is chosen. */
static void find_traps(const struct adv_input *in, struct adv_result *r)
{
    bool tight = in->archetype == ADV_INFERENCE && in->latency_ms > 0;
    if (in->archetype == ADV_TRAINING)
        add_trap(r, T_SHARE_TRAINING,
                 "Sharing the GPUs of a distributed training job is counterproductive: a job that "
                 "fills its GPUs leaves no idle capacity to recover, and sharing adds scheduling "
                 "complexity; gang scheduling (all GPUs start together) matters more.");
    if (tight)
        add_trap(r, T_TIMESLICE_ONLINE,
                 "Time-slicing does not give concurrent use: it serialises contexts, and the "
                 "context switches add jitter (on an H100 a batch neighbour took a ResNet-50 "
                 "tenant's P99 to 1.36x solo), so a %.10g ms P99 budget is at risk. Use it for "
                 "batch and notebooks, not online inference.", in->latency_ms);
    if (in->archetype != ADV_TRAINING)
        add_trap(r, T_NO_MEMORY_LIMIT,
                 "Time-slicing (and scheduler-only fractions such as KAI) enforce no memory "
                 "limit: a pod that asked for 2 GB and uses 10 GB can crash its neighbours with "
                 "out-of-memory errors.");
    if (in->trust == ADV_UNTRUSTED)
        add_trap(r, T_MPS_UNTRUSTED,
                 "MPS is not isolation between separate instances: all clients share one MPS "
                 "server, a fault in one client can terminate every client, and fault isolation "
                 "is none. Only for trusted workloads of one team.");
    if (tight && in->trust == ADV_TEAM)
        add_trap(r, T_MPS_NEIGHBOUR,
                 "Under MPS a batch neighbour has no compute limit: on an H100 it took a "
                 "latency tenant's P99 to 5.3x solo (50 ms). Put only replicas of the same "
                 "service together, or cap the batch client's active threads.");
    if (r->mig_unknown)
        add_trap(r, T_MIG_UNKNOWN,
                 "carve does not know whether %s has MIG (it knows MIG on " MIG_FAMILIES_TEXT
                 "). On the node, `nvidia-smi -q | grep -i mig` shows a MIG Mode of Enabled or "
                 "Disabled where the GPU has MIG and N/A where it has none; if it has, lay out "
                 "its instances with `nvidia-smi mig -lgip`.", r->gpu);
    else if (!r->mig_capable)
        add_trap(r, T_MIG_GATE,
                 "MIG is hardware-gated: %s cannot be partitioned (MIG needs " MIG_FAMILIES_TEXT
                 "). In a mixed cluster fix the mechanism per node pool: MIG on those, "
                 "time-slicing, MPS or carve slices on the rest.", r->gpu);
    if (r->mig_capable && (in->changing || in->archetype == ADV_NOTEBOOK))
        add_trap(r, T_MIG_RESIZE,
                 "MIG cannot be resized on demand: changing the geometry destroys the instances "
                 "and ends the workloads in them. Keep the geometry fixed per node pool or plan a "
                 "maintenance window between phases.");
    const struct mig_model *mm = r->mig_capable && in->memory_mib ? mig_model_find(r->gpu) : NULL;
    const struct mig_profile *pr = mm ? mig_profile_fit(mm, in->memory_mib, 0) : NULL;
    if (pr && pr->memory_mib >= in->memory_mib + in->memory_mib / 10)
        add_trap(r, T_MIG_ROUNDING,
                 "MIG profiles are rigid: a %.1f GiB workload takes a %s instance (%.1f GiB), "
                 "stranding %.1f GiB that no one else can use.",
                 in->memory_mib / 1024.0, pr->name, pr->memory_mib / 1024.0,
                 (pr->memory_mib - in->memory_mib) / 1024.0);
    const struct mig_profile *largest = mig_too_small(in, r);
    if (largest)
        add_trap(r, T_MIG_TOO_SMALL,
                 "A %.1f GiB workload is larger than %s's largest MIG instance (%s, %.1f GiB): "
                 "MIG cannot run it; it needs a whole GPU.", in->memory_mib / 1024.0, r->gpu,
                 largest->name, largest->memory_mib / 1024.0);
    if (in->trust == ADV_UNTRUSTED)
        add_trap(r, T_TIMESLICE_UNTRUSTED,
                 "Time-slicing isolates nothing but turns on the GPU: tenants share its memory "
                 "with no limit, so one can exhaust it for all, and a fault can end the others' "
                 "work. Not for untrusted tenants.");
    if (in->trust == ADV_UNTRUSTED)
        add_trap(r, T_SOFTWARE_ISOLATION,
                 "LD_PRELOAD limits (HAMi, carve slices) are software isolation, not equivalent "
                 "to MIG: a statically linked CUDA binary or a privileged container that replaces "
                 "the library escapes them. Fine for cooperative tenants, not untrusted ones.");
}

/* ---- the recommendation ---- */

/* How to lay out MIG instances on r's GPU: `carve mig plan` where carve has the profile
   table, else NVIDIA's own listing (A30, H20, B200 have MIG but no table in carve). */
static const char *mig_layout_hint(const struct adv_result *r)
{
    return mig_model_find(r->gpu) ? "lay them out with `carve mig plan`"
                                  : "carve has no MIG profile table for it: list its profiles "
                                    "with `nvidia-smi mig -lgip`";
}

static void recommend(const struct adv_input *in, struct adv_result *r)
{
    const struct mig_profile *largest = mig_too_small(in, r);
    const bool mig = r->mig_capable && !largest;
    r->alternative = -1;
    if (in->archetype == ADV_TRAINING) {
        r->mech = ADV_WHOLE;
        add_reason(r, "distributed training fills the GPUs it holds: sharing recovers no idle "
                      "capacity and only adds scheduling complexity");
        add_reason(r, "whole GPUs keep hardware memory, compute and fault isolation and no "
                      "co-tenant jitter; schedule the job's GPUs as a gang");
        return;
    }
    if (in->trust == ADV_UNTRUSTED) {
        if (mig) {
            r->mech = ADV_MIG;
            add_reason(r, "untrusted tenants need isolation the hardware enforces: MIG is the only "
                          "sharing mechanism with hardware memory, compute and fault isolation");
            add_reason(r, "%s supports MIG: instances with their own SMs, L2 banks and memory "
                          "controllers, so latency jitter is negligible (%s)", r->gpu,
                       mig_layout_hint(r));
            r->alternative = ADV_WHOLE;
            snprintf(r->alternative_why, sizeof(r->alternative_why),
                     "a whole GPU per tenant, when a tenant needs more than the largest profile "
                     "or the profiles strand too much memory");
        } else if (largest) {
            r->mech = ADV_WHOLE;
            add_reason(r, "untrusted tenants need hardware isolation, and a %.1f GiB workload is "
                          "larger than %s's largest MIG instance (%s, %.1f GiB): only a whole "
                          "GPU isolates it in hardware", in->memory_mib / 1024.0, r->gpu,
                       largest->name, largest->memory_mib / 1024.0);
            add_reason(r, "give each untrusted tenant whole GPUs; share only within a tenant");
        } else if (r->mig_unknown) {
            r->mech = ADV_WHOLE;
            add_reason(r, "untrusted tenants need hardware isolation, and carve does not know "
                          "whether %s has MIG: a whole GPU per tenant isolates them whatever it "
                          "has; every other mechanism (time-slicing, MPS, HAMi, carve) is "
                          "software or none", r->gpu);
            add_reason(r, "give each untrusted tenant whole GPUs; share only within a tenant");
            r->alternative = ADV_MIG;
            snprintf(r->alternative_why, sizeof(r->alternative_why),
                     "MIG, if %.64s has it: `nvidia-smi -q | grep -i mig` on the node shows a "
                     "MIG Mode of Enabled or Disabled where it has, N/A where it has not",
                     r->gpu);
        } else {
            r->mech = ADV_WHOLE;
            add_reason(r, "untrusted tenants need hardware isolation and %s has no MIG: every "
                          "other mechanism (time-slicing, MPS, HAMi, carve) is software or none",
                       r->gpu);
            add_reason(r, "give each untrusted tenant whole GPUs; share only within a tenant");
            r->alternative = ADV_MIG;
            snprintf(r->alternative_why, sizeof(r->alternative_why),
                     "move these tenants to a pool with MIG (" MIG_FAMILIES_TEXT ") and use "
                     "MIG there (or vGPU if a hypervisor stack is already in place)");
        }
        return;
    }
    switch (in->archetype) {
    case ADV_INFERENCE:
        if (in->latency_ms > 0 && mig && !in->changing) {
            r->mech = ADV_MIG;
            add_reason(r, "a %.10g ms P99 budget needs a flat tail: MIG instances do not contend "
                          "for L2 or memory bandwidth, so jitter is negligible", in->latency_ms);
            add_reason(r, "%s supports MIG; a fixed serving mix suits a fixed geometry (%s)",
                       r->gpu, mig_layout_hint(r));
            r->alternative = ADV_CARVE;
            snprintf(r->alternative_why, sizeof(r->alternative_why),
                     "carve slices with --priority latency when models do not fit the profiles "
                     "well or the mix changes (H100: P99 1.20x solo beside a batch tenant)");
        } else if (in->latency_ms > 0) {
            r->mech = ADV_CARVE;
            add_reason(r, "a %.10g ms P99 budget rules out time-slicing (jitter) and MPS beside "
                          "batch work (P99 5.3x solo on an H100)", in->latency_ms);
            add_reason(r, "carve slices give exact memory caps, compute shares and latency "
                          "priority on any NVIDIA GPU (H100: P99 1.20x solo beside a batch "
                          "tenant)%s", mig ? "; the mix changes, which MIG's fixed geometry "
                                             "cannot follow" : "");
            r->alternative = mig ? ADV_MIG : ADV_MPS;
            snprintf(r->alternative_why, sizeof(r->alternative_why), "%s",
                     mig ? "MIG, if the serving mix can be fixed per node pool"
                         : "MPS, if only replicas of the same service share a GPU");
        } else {
            r->mech = ADV_MPS;
            add_reason(r, "trusted inference without a tight tail budget gains most from real "
                          "concurrency: MPS runs kernels of several clients at once (0-147%% "
                          "more throughput in published measurements)");
            add_reason(r, "one team's replicas may share a failure domain; MPS has no fault "
                          "isolation");
            r->alternative = ADV_CARVE;
            snprintf(r->alternative_why, sizeof(r->alternative_why),
                     "carve slices when each replica's memory must be capped exactly");
        }
        return;
    case ADV_NOTEBOOK:
        r->mech = ADV_CARVE;
        add_reason(r, "notebooks are the main source of idle GPUs: fractional slices let many "
                      "share one GPU while each sits idle most of the time");
        add_reason(r, "carve caps each notebook's memory exactly (one cannot OOM the others) and "
                      "carved reports idle slices; fault isolation matters less for interactive, "
                      "short-lived work");
        r->alternative = ADV_TIMESLICE;
        snprintf(r->alternative_why, sizeof(r->alternative_why),
                 "time-slicing: zero set-up on any GPU, if the team accepts no memory limit");
        return;
    default:
        r->mech = ADV_TIMESLICE;
        add_reason(r, "batch work with a relaxed latency budget tolerates time-slicing's "
                      "jitter, and it needs no set-up on any GPU");
        add_reason(r, "a trusted team can live without memory isolation between its own jobs");
        r->alternative = ADV_CARVE;
        snprintf(r->alternative_why, sizeof(r->alternative_why),
                 "carve slices when one job could exhaust the GPU's memory, or when jobs need "
                 "compute shares");
        return;
    }
}

static void check_proposal(const struct adv_input *in, struct adv_result *r)
{
    int p = in->proposal;
    r->proposal = p;
    r->proposal_ok = true;
    for (size_t i = 0; i < r->ntraps; i++) {
        int t = trap_index(r->traps[i].id);
        if (trap_concerns(t, p) && trap_rules[t].blocking) {
            r->proposal_ok = false;
            snprintf(r->proposal_verdict, sizeof(r->proposal_verdict),
                     "%s is a trap here (%s): %s", matrix[p].title, r->traps[i].id,
                     r->traps[i].text);
            return;
        }
    }
    if (p == ADV_MIG && r->mig_unknown) {
        r->proposal_ok = false;
        r->proposal_unknown = true;
        snprintf(r->proposal_verdict, sizeof(r->proposal_verdict),
                 "carve does not know whether %s has MIG (mig-unknown): check with `nvidia-smi "
                 "-q | grep -i mig` on the node (Enabled or Disabled: it has MIG; N/A: it has "
                 "not)", r->gpu);
        return;
    }
    if (p == r->mech)
        snprintf(r->proposal_verdict, sizeof(r->proposal_verdict), "%s is the recommendation",
                 matrix[p].title);
    else
        snprintf(r->proposal_verdict, sizeof(r->proposal_verdict),
                 "%s works here, but %s fits better (see the reasons)", matrix[p].title,
                 matrix[r->mech].title);
}

int adv_advise(const struct adv_input *in, struct adv_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->proposal = -1;
    if (!in->gpu || !*in->gpu) {
        snprintf(err, errlen, "no GPU model given (e.g. --gpu H100)");
        return -EINVAL;
    }
    if (in->archetype < 0 || in->archetype >= ADV_NARCH || in->trust < ADV_TEAM ||
        in->trust > ADV_UNTRUSTED) {
        snprintf(err, errlen, "workload must be training, inference, notebook or batch; trust "
                              "team or untrusted");
        return -EINVAL;
    }
    if (!(in->latency_ms >= 0 && in->latency_ms <= 3600000)) {
        snprintf(err, errlen, "latency budget %.10g ms is not between 0 and 3600000", in->latency_ms);
        return -EINVAL;
    }
    if (in->latency_ms > 0 && in->archetype != ADV_INFERENCE) {
        snprintf(err, errlen, "a P99 budget (--latency %.10g ms) is for online inference; %s is "
                              "advised on throughput and isolation: leave --latency out, or "
                              "give --workload inference", in->latency_ms,
                 in->archetype == ADV_TRAINING ? "training" : in->archetype == ADV_NOTEBOOK
                                                                  ? "notebook work" : "batch work");
        return -EINVAL;
    }
    bool family_only;
    const struct fleet_gpu_model *m = fleet_gpu_named(in->gpu, &family_only);
    if (family_only) {
        /* a family with several boards ("A100"): the largest board, preferring one whose MIG
           profiles carve knows (A100 -> A100-80GB, H100 -> H100-80GB) */
        size_t n;
        const struct fleet_gpu_model *all = fleet_gpu_models(&n), *family = m;
        m = NULL;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(all[i].family, family->family) != 0)
                continue;
            bool known = mig_model_find(all[i].name) != NULL;
            bool m_known = m && mig_model_find(m->name) != NULL;
            if (!m || (known && !m_known) || (known == m_known && all[i].memory_mib > m->memory_mib))
                m = &all[i];
        }
    }
    out->gpu_known = m != NULL;
    /* the memory NVML reports, as carve plan's pools have it (an H100-80GB: 81559 MiB) */
    const struct mig_model *mm = m && m->mig ? mig_model_find(m->name) : NULL;
    uint64_t gpu_mib = mm ? mm->memory_mib : m ? m->memory_mib : 0;
    if (m && in->memory_mib > gpu_mib) {
        /* no mechanism runs it on one such GPU: advising one would hide that */
        snprintf(err, errlen, "a workload of %llu MiB (%.1f GiB) does not fit on one %s (%llu "
                              "MiB) under any mechanism; give the memory one process uses on "
                              "one GPU, or a larger GPU",
                 (unsigned long long)in->memory_mib, in->memory_mib / 1024.0, m->name,
                 (unsigned long long)gpu_mib);
        return -EINVAL;
    }
    if (m) {
        snprintf(out->gpu, sizeof(out->gpu), "%s", m->name);
        out->mig_capable = m->mig;
    } else {
        /* its name goes into the JSON as it is: UTF-8, and whole */
        char why[80];
        if (fleet_name_check(in->gpu, why, sizeof(why)) || strlen(in->gpu) >= sizeof(out->gpu)) {
            snprintf(err, errlen, "GPU model `%.100s' %s", in->gpu,
                     strlen(in->gpu) >= sizeof(out->gpu) ? "is longer than 63 bytes" : why);
            return -EINVAL;
        }
        snprintf(out->gpu, sizeof(out->gpu), "%s", in->gpu);
        /* a GPU carve does not know: MIG if its name holds one of the families NVIDIA lists
           with MIG, not followed by a digit (H20, A30, GB200 and GH200 have MIG); of any other
           carve cannot say (an RTX A1000 has none, an RTX PRO 6000 Blackwell has) */
        out->mig_capable = mig_family_in(in->gpu) != NULL;
        out->mig_unknown = !out->mig_capable;
    }
    find_traps(in, out);
    recommend(in, out);
    /* the recommendation never walks into a blocking trap */
    for (size_t i = 0; i < out->ntraps; i++) {
        int t = trap_index(out->traps[i].id);
        if (trap_concerns(t, out->mech) && trap_rules[t].blocking) {
            snprintf(err, errlen, "internal: advice %s falls in trap %s", matrix[out->mech].name,
                     trap_rules[t].id);
            return -EFAULT;
        }
    }
    if (in->proposal >= 0 && in->proposal < ADV_NMECH)
        check_proposal(in, out);
    return 0;
}

json_t *adv_result_json(const struct adv_result *r)
{
    json_t *reasons = json_array(), *traps = json_array(), *avail = json_array();
    for (size_t i = 0; i < r->nreasons; i++)
        json_array_append_new(reasons, json_string(r->reasons[i]));
    for (size_t i = 0; i < r->ntraps; i++)
        json_array_append_new(traps, json_pack("{s:s, s:s}", "id", r->traps[i].id, "text",
                                               r->traps[i].text));
    for (int m = 0; m < ADV_NMECH; m++)
        if (m != ADV_MIG || r->mig_capable)
            json_array_append_new(avail, json_string(matrix[m].name));
    const struct adv_matrix_row *row = &matrix[r->mech];
    /* mig_capable: null where carve does not know */
    json_t *mig = r->mig_unknown ? json_null() : json_boolean(r->mig_capable);
    json_t *o = json_pack("{s:s, s:b, s:o, s:s, s:{s:s, s:s, s:s, s:s}, s:o, s:o, s:o}", "gpu",
                          r->gpu, "gpu_known", r->gpu_known, "mig_capable", mig,
                          "recommendation", row->name, "isolation", "memory", row->memory,
                          "compute", row->compute, "fault", row->fault, "jitter", row->jitter,
                          "reasons", reasons, "traps", traps, "available", avail);
    if (r->alternative >= 0)
        json_object_set_new(o, "alternative", json_pack("{s:s, s:s}", "mechanism",
                                                        matrix[r->alternative].name, "when",
                                                        r->alternative_why));
    if (r->proposal >= 0)
        json_object_set_new(o, "check", json_pack("{s:s, s:o, s:s}", "mechanism",
                                                  matrix[r->proposal].name, "ok",
                                                  r->proposal_unknown ? json_null()
                                                                      : json_boolean(r->proposal_ok),
                                                  "verdict", r->proposal_verdict));
    return o;
}
