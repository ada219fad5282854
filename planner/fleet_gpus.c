/* fleet_gpus.c - the GPU models the planner and the advisor know, and the fleet SPEC parser
 * ("H100-80GB:100@2.49,L4:40@0.80"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleet.h"
#include "mig.h"
#include "size.h"

/* Memory in MiB as NVML reports the board's total (what nvidia-smi prints as "x MiB / TOTAL"),
 * as the MIG models' figures are (planner/mig_profiles.c): a workload is planned against what
 * a process can have, not the nominal size. T4 15360, A10 23028, L4 23034, L40S 46068: as
 * nvidia-smi prints them in public issue reports and logs (T4 "0MiB / 15360MiB", A10 at 150 W
 * "/  23028MiB", L4 at 72 W "/  23034MiB", L40S at 350 W "/  46068MiB"). V100 keeps its
 * nominal size: no board's report was checked for it. MIG follows NVIDIA's gate: Ampere A100,
 * Hopper H100/H200 and Blackwell B200 only (not T4, V100, A10, L4, L40S). */
static const struct fleet_gpu_model models[] = {
    {"T4-16GB", "T4", "T4", 15360, false, "Turing"},
    {"V100-16GB", "V100", "V100", 16384, false, "Volta"},
    {"V100-32GB", "V100", "V100", 32768, false, "Volta"},
    {"A10-24GB", "A10", "A10", 23028, false, "Ampere"},
    {"L4-24GB", "L4", "L4", 23034, false, "Ada"},
    {"L40S-48GB", "L40S", "L40S", 46068, false, "Ada"},
    {"A100-40GB", "A100", "A100-SXM4-40GB", 40960, true, "Ampere"},
    {"A100-80GB", "A100", "A100-SXM4-80GB", 81920, true, "Ampere"},
    {"H100-80GB", "H100", "H100 80GB", 81920, true, "Hopper"},
    {"H100-94GB", "H100", "H100 NVL", 96256, true, "Hopper"},
    {"H200-141GB", "H200", "H200", 144384, true, "Hopper"},
    {"B200-180GB", "B200", "B200", 184320, true, "Blackwell"},
};
#define NMODELS (sizeof(models) / sizeof(models[0]))

const struct fleet_gpu_model *fleet_gpu_models(size_t *count)
{
    *count = NMODELS;
    return models;
}

const struct fleet_gpu_model *fleet_gpu_find(const char *name, bool *ambiguous)
{
    const struct fleet_gpu_model *hit = NULL;
    size_t len = strlen(name), hits = 0;
    *ambiguous = false;
    for (size_t i = 0; i < NMODELS; i++)
        if (strcasecmp(models[i].name, name) == 0)
            return &models[i];
    for (size_t i = 0; i < NMODELS && len; i++) {
        if (strncasecmp(models[i].name, name, len) == 0 &&
            (models[i].name[len] == '-' || models[i].name[len] == '\0')) {
            hit = &models[i];
            hits++;
        }
    }
    if (hits > 1)
        *ambiguous = true;
    return hits == 1 ? hit : NULL;
}

/* name without "NVIDIA " or "Tesla " in front, as NVML's device names have them */
static const char *after_vendor(const char *name)
{
    static const char *const vendors[] = {"NVIDIA ", "Tesla "};
    for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
        if (strncasecmp(name, vendors[i], strlen(vendors[i])) == 0)
            return name + strlen(vendors[i]);
    return name;
}

/* Whether name says model's memory as a word ("32GB" in "Tesla V100-SXM2-32GB"). */
static bool memory_named(const char *name, const struct fleet_gpu_model *model)
{
    char size[24];
    snprintf(size, sizeof(size), "%lluGB", (unsigned long long)(model->memory_mib / 1024));
    return mig_name_has_word(name, size);
}

const struct fleet_gpu_model *fleet_gpu_named(const char *name, bool *family_only)
{
    bool ambiguous;
    *family_only = false;
    const struct fleet_gpu_model *m = fleet_gpu_find(name, &ambiguous);
    if (m)
        return m;
    /* NVML's name: a board whose NVML name is a whole word of it (the longest; of boards
       alike there, as V100's, the one whose size is a word of it, "Tesla V100-SXM2-32GB"),
       else carve's MIG table's reading of it, else the board named after the vendor */
    bool tied = false;
    for (size_t i = 0; i < NMODELS && !ambiguous; i++) {
        if (!mig_name_has_word(name, models[i].nvml_match))
            continue;
        size_t len = strlen(models[i].nvml_match), best = m ? strlen(m->nvml_match) : 0;
        if (len > best || (len == best && memory_named(name, &models[i]))) {
            tied = false;
            m = &models[i];
        } else if (len == best && !memory_named(name, m)) {
            tied = true;
        }
    }
    if (tied) /* no size said which: the family */
        m = NULL;
    const struct mig_model *mm = m || ambiguous ? NULL : mig_model_find(name);
    if (mm)
        m = fleet_gpu_find(mm->name, &ambiguous);
    const char *bare = after_vendor(name);
    if (!m && bare != name)
        m = fleet_gpu_find(bare, &ambiguous);
    if (m)
        return m;
    /* a family ("A100", "NVIDIA L40S"): its first board, whose MIG gate every board of the
       family shares. A name that merely contains one ("RTX A1000", "GH200") is none. */
    size_t word = strcspn(bare, " -");
    for (size_t i = 0; i < NMODELS && word; i++)
        if (strlen(models[i].family) == word && strncasecmp(models[i].family, bare, word) == 0) {
            *family_only = true;
            return &models[i];
        }
    return NULL;
}

static int pool_error(char *err, size_t errlen, const char *pool, const char *why)
{
    snprintf(err, errlen, "fleet spec `%s': %s", pool, why);
    return -EINVAL;
}

static int parse_count(const char *s, const char *pool, uint64_t *out, char *err, size_t errlen)
{
    char *end;
    char why[160];
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || s[0] == '+' || errno) {
        snprintf(why, sizeof(why), "COUNT `%s' is not a whole number (e.g. H100-80GB:100)", s);
        return pool_error(err, errlen, pool, why);
    }
    if (v == 0 || v > 10000000ULL) {
        snprintf(why, sizeof(why), "COUNT %s is out of range (1 to 10000000)", s);
        return pool_error(err, errlen, pool, why);
    }
    *out = v;
    return 0;
}

static int parse_price(const char *s, const char *pool, double *out, char *err, size_t errlen)
{
    char *end;
    char why[160];
    if (*s == '$')
        s++;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= 0 && v <= 10000) || strpbrk(s, "xXeEnN")) {
        snprintf(why, sizeof(why),
                 "PRICE `%s' is not dollars per GPU-hour between 0 and 10000 (e.g. @2.49)", s);
        return pool_error(err, errlen, pool, why);
    }
    *out = v;
    return 0;
}

/* MODEL: a known name, or NAME/SIZE for a GPU carve does not know. */
static int parse_model(char *s, const char *pool, struct fleet_pool *p, char *err, size_t errlen)
{
    char why[200];
    char *slash = strchr(s, '/');
    if (slash) {
        *slash = '\0';
        if (!*s || strlen(s) >= FLEET_NAME_MAX)
            return pool_error(err, errlen, pool, "a custom MODEL/SIZE needs a name of 1 to 63 characters");
        char nwhy[80], why2[120];
        if (fleet_name_check(s, nwhy, sizeof(nwhy))) {
            snprintf(why2, sizeof(why2), "the custom MODEL's name %s", nwhy);
            return pool_error(err, errlen, pool, why2);
        }
        uint64_t bytes;
        char serr[200];
        if (carve_parse_size(slash + 1, &bytes, serr, sizeof(serr)) != 0)
            return pool_error(err, errlen, pool, serr);
        if (bytes < (1ULL << 20) || bytes > (1ULL << 50))
            return pool_error(err, errlen, pool, "SIZE must be between 1 MiB and 1 PiB");
        snprintf(p->name, sizeof(p->name), "%s", s);
        p->memory_mib = bytes >> 20;
        return 0;
    }
    bool ambiguous;
    const struct fleet_gpu_model *m = fleet_gpu_find(s, &ambiguous);
    if (!m && ambiguous) {
        char names[128] = "";
        size_t len = strlen(s);
        for (size_t i = 0; i < NMODELS; i++)
            if (strncasecmp(models[i].name, s, len) == 0 && models[i].name[len] == '-')
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                         names[0] ? " or " : "", models[i].name);
        snprintf(why, sizeof(why), "ambiguous GPU model `%s': say %s", s, names);
        return pool_error(err, errlen, pool, why);
    }
    if (!m) {
        snprintf(why, sizeof(why),
                 "unknown GPU model `%s' (see `carve plan --models'; or NAME/SIZE, e.g. mygpu/48GiB)",
                 s);
        return pool_error(err, errlen, pool, why);
    }
    snprintf(p->name, sizeof(p->name), "%s", m->name);
    /* a MIG model's memory as NVML reports it, so that whole-GPU and MIG plans agree */
    const struct mig_model *mm = m->mig ? mig_model_find(m->name) : NULL;
    p->memory_mib = mm ? mm->memory_mib : m->memory_mib;
    p->mig = m->mig;
    p->model = m;
    return 0;
}

static int parse_pool(char *s, struct fleet_pool *p, char *err, size_t errlen)
{
    char pool[128];
    snprintf(pool, sizeof(pool), "%s", s);
    memset(p, 0, sizeof(*p));
    p->count = FLEET_UNLIMITED;
    if (!*s)
        return pool_error(err, errlen, pool, "empty pool (expected MODEL[:COUNT][@PRICE])");
    char *at = strchr(s, '@');
    if (at) {
        *at = '\0';
        if (parse_price(at + 1, pool, &p->price, err, errlen))
            return -EINVAL;
        p->priced = true;
    }
    char *colon = strchr(s, ':');
    if (colon) {
        *colon = '\0';
        if (parse_count(colon + 1, pool, &p->count, err, errlen))
            return -EINVAL;
    }
    return parse_model(s, pool, p, err, errlen);
}

/* Prices for every pool or for none. An unpriced pool beside priced ones would cost $0: the
 * plans would fill it first (pools open cheapest first) and the cost bound would read $0.00,
 * wrong numbers that look right. Refused rather than warned about: the plans themselves
 * change, not only a column, and the fix is one @PRICE in the spec (@0 for GPUs that really
 * cost nothing). */
static int check_prices(const struct fleet *f, char *err, size_t errlen)
{
    const struct fleet_pool *priced = NULL, *unpriced = NULL;
    for (size_t i = 0; i < f->npools; i++) {
        if (f->pools[i].priced && !priced)
            priced = &f->pools[i];
        if (!f->pools[i].priced && !unpriced)
            unpriced = &f->pools[i];
    }
    if (!priced || !unpriced)
        return 0;
    char count[32] = "";
    if (unpriced->count != FLEET_UNLIMITED)
        snprintf(count, sizeof(count), ":%llu", (unsigned long long)unpriced->count);
    snprintf(err, errlen, "pool %s has no price while %s has one ($%.2f/h): it would be planned "
                          "as free. Give it its price per GPU-hour (%s%s@PRICE; @0 if its GPUs "
                          "cost nothing), or leave out every price to plan without costs",
             unpriced->name, priced->name, priced->price, unpriced->name, count);
    return -EINVAL;
}

int fleet_parse_spec(const char *spec, struct fleet *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!spec || !*spec) {
        snprintf(err, errlen, "fleet spec is empty (expected MODEL[:COUNT][@PRICE][,...])");
        return -EINVAL;
    }
    if (strpbrk(spec, " \t\n")) {
        snprintf(err, errlen, "fleet spec `%s' contains a space", spec);
        return -EINVAL;
    }
    char *copy = strdup(spec);
    if (!copy)
        return -ENOMEM;
    int ret = 0;
    char *s = copy;
    for (;;) {
        char *comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        if (out->npools == FLEET_MAX_POOLS) {
            snprintf(err, errlen, "fleet spec has more than %d pools", FLEET_MAX_POOLS);
            ret = -EINVAL;
            break;
        }
        if ((ret = parse_pool(s, &out->pools[out->npools], err, errlen)))
            break;
        for (size_t i = 0; i < out->npools; i++)
            if (strcasecmp(out->pools[i].name, out->pools[out->npools].name) == 0) {
                snprintf(err, errlen, "fleet spec names %s twice; give one pool per model",
                         out->pools[i].name);
                ret = -EINVAL;
            }
        if (ret)
            break;
        out->npools++;
        if (!comma)
            break;
        s = comma + 1;
    }
    free(copy);
    if (!ret)
        ret = check_prices(out, err, errlen);
    return ret;
}

bool fleet_priced(const struct fleet *f)
{
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].price > 0)
            return true;
    return false;
}

bool fleet_gap_in_cost(const struct fleet *f)
{
    return f->npools > 1 && fleet_priced(f);
}

double fleet_plan_gap(const struct fleet *f, const struct fleet_plan *p)
{
    if (fleet_gap_in_cost(f)) {
        double gap = p->cost_lower_bound > 0
                         ? 100.0 * (p->cost_per_hour - p->cost_lower_bound) / p->cost_lower_bound
                         : 0;
        return gap < 0 && gap > -1e-6 ? 0 : gap; /* a bound that is the plan's cost, in rounding */
    }
    if (!p->lower_bound)
        return 0;
    return 100.0 * ((double)p->gpus - (double)p->lower_bound) / (double)p->lower_bound;
}
