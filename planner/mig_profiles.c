/* mig_profiles.c - the MIG profile tables of the GPU models carve knows, and their lookups.
 *
 * Sources (looked up 2026-11-23):
 *  - NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
 *    (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html):
 *    profile names, fraction of memory (= memory slices of 8), fraction of SMs (= compute slices
 *    of 7) and "Number of Instances Available" (max_count), for A100-40GB, A100-80GB (names
 *    scaled with memory), H100 80GB and H200 141GB.
 *  - The same guide's "Getting Started" (`nvidia-smi mig -lgipp`) and NVML's
 *    nvmlDeviceGetGpuInstancePossiblePlacements_v2: the start slots. Every model here has the
 *    same geometry: 1 memory slice at {0..6}, 2-slice 1g at {0,2,4,6}, 2g at {0,2,4}, 3g (4
 *    memory slices) at {0,4}, 4g at {0}, 7g (all 8) at {0}.
 *  - memory_mib: what `nvidia-smi mig -lgip` (NVML's memorySizeMB) reports, which is a little
 *    less than the name says: A100-40GB from the guide's own example; A100-80GB and H100-80GB
 *    from published -lgip outputs of those boards; H200-141GB from NVML's profile info on an
 *    H200 with driver 580.159.04 (docs/results/2026-11-28-mig-check-nvidia-h200.md; a
 *    published listing, NVIDIA/mig-parted issue #120, had 256 MiB less for the 2-, 4- and
 *    8-slice profiles). Drivers move these by a few hundred MiB; on a real GPU `carve mig`
 *    takes NVML's numbers over these.
 *  - mig_family_in: the same guide's "Supported GPUs" table (A100, A30, H100, H20, H200,
 *    B200, and the GH200 and GB200 that carry them); A30 (1g.6gb, 2g.12gb, 4g.24gb) and H20
 *    have MIG but no table here.
 *  - nvml_profile: nvml.h's NVML_GPU_INSTANCE_PROFILE_* (1_SLICE 0 ... 7_SLICE 4, 1_SLICE_REV1
 *    7, 1_SLICE_REV2 9); nvml_id: the profile ID NVML then reports (19, 20, 15, 14, 9, 5, 0). */
#include "mig.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define ALL_1SLICE_STARTS 0x7Fu /* memory slices 0..6: a 1g instance never starts at 7 */
#define EVEN_STARTS 0x55u       /* 0, 2, 4, 6 */
#define SLICE2_STARTS 0x15u     /* 0, 2, 4 */
#define HALF_STARTS 0x11u       /* 0, 4 */
#define FIRST_START 0x01u       /* 0 */

/* One row per profile: name, compute slices, memory slices, MiB, max count, starts, NVML
   profile index, NVML profile ID, media extensions. Ordered small to large. */
#define MIG_ROWS(g1, g1me, g1x2, g2, g3, g4, g7, m1, m2, m4, m8)                                \
    {g1, 1, 1, m1, 7, ALL_1SLICE_STARTS, 0, 19, false},                                          \
    {g1me, 1, 1, m1, 1, ALL_1SLICE_STARTS, 7, 20, true},                                         \
    {g1x2, 1, 2, m2, 4, EVEN_STARTS, 9, 15, false},                                              \
    {g2, 2, 2, m2, 3, SLICE2_STARTS, 1, 14, false},                                              \
    {g3, 3, 4, m4, 2, HALF_STARTS, 2, 9, false},                                                 \
    {g4, 4, 4, m4, 1, FIRST_START, 3, 5, false},                                                 \
    {g7, 7, 8, m8, 1, FIRST_START, 4, 0, false}

static const struct mig_profile a100_40gb[] = {
    MIG_ROWS("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb",
             4864, 9856, 19968, 40192),
};
static const struct mig_profile a100_80gb[] = {
    MIG_ROWS("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
             9728, 19968, 40192, 80896),
};
static const struct mig_profile h100_80gb[] = {
    MIG_ROWS("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
             9984, 20096, 40448, 81152),
};
static const struct mig_profile h200_141gb[] = {
    MIG_ROWS("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb",
             16384, 33280, 71424, 143360),
};

static const char *const a100_40gb_names[] = {"A100-PCIE-40GB", "A100 40GB", NULL};
static const char *const a100_80gb_names[] = {"A100-PCIE-80GB", "A100 80GB", NULL};
static const char *const h100_80gb_names[] = {"H100 PCIe", "H100 SXM5 80GB", "H100 80GB", NULL};
static const char *const h200_names[] = {"H200", NULL};

#define NPROF(t) (sizeof(t) / sizeof((t)[0]))

static const struct mig_model models[] = {
    {"A100-40GB", "A100-SXM4-40GB", 40960, 7, 8, a100_40gb, NPROF(a100_40gb), a100_40gb_names},
    {"A100-80GB", "A100-SXM4-80GB", 81920, 7, 8, a100_80gb, NPROF(a100_80gb), a100_80gb_names},
    {"H100-80GB", "H100 80GB HBM3", 81559, 7, 8, h100_80gb, NPROF(h100_80gb), h100_80gb_names},
    {"H200-141GB", "H200", 143771, 7, 8, h200_141gb, NPROF(h200_141gb), h200_names},
};

const struct mig_model *mig_models(size_t *count)
{
    if (count)
        *count = NPROF(models);
    return models;
}

bool mig_name_has_word(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if ((p == hay || !isalnum((unsigned char)p[-1])) && strncasecmp(p, needle, n) == 0 &&
            !isalnum((unsigned char)p[n]))
            return true;
    return false;
}

const struct mig_model *mig_model_find(const char *name)
{
    if (!name || !*name)
        return NULL;
    for (size_t i = 0; i < NPROF(models); i++)
        if (strcasecmp(name, models[i].name) == 0)
            return &models[i];
    /* NVML names: "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200 NVL" ... */
    for (size_t i = 0; i < NPROF(models); i++) {
        if (mig_name_has_word(name, models[i].nvml_match))
            return &models[i];
        for (const char *const *a = models[i].nvml_also; a && *a; a++)
            if (mig_name_has_word(name, *a))
                return &models[i];
    }
    return NULL;
}

const char *mig_family_in(const char *name)
{
    /* longest first, so that "H200" is not read as H20 followed by a digit and given up */
    static const char *const families[] = {"A100", "H100", "H200", "B200", "A30", "H20"};
    for (size_t i = 0; name && i < sizeof(families) / sizeof(families[0]); i++) {
        size_t n = strlen(families[i]);
        for (const char *p = name; (p = strcasestr(p, families[i])) != NULL; p++)
            if (!isdigit((unsigned char)p[n]))
                return families[i];
    }
    return NULL;
}

double mig_profile_compute_pct(const struct mig_model *model, const struct mig_profile *p)
{
    return 100.0 * p->compute_slices / model->compute_slices;
}

unsigned mig_slice_mask(const struct mig_profile *p, unsigned start)
{
    return ((1u << p->memory_slices) - 1u) << start;
}

/* "smaller" for fitting: less memory first, then fewer compute slices, so a request gets the
   least GPU that satisfies it */
static bool smaller(const struct mig_profile *a, const struct mig_profile *b)
{
    if (a->memory_mib != b->memory_mib)
        return a->memory_mib < b->memory_mib;
    return a->compute_slices < b->compute_slices;
}

const struct mig_profile *mig_profile_fit(const struct mig_model *model, uint64_t memory_mib,
                                          double compute_pct)
{
    const struct mig_profile *best = NULL;
    if (!model || !(compute_pct >= 0.0) || compute_pct > 100.0)
        return NULL;
    for (size_t i = 0; i < model->nprofiles; i++) {
        const struct mig_profile *p = &model->profiles[i];
        /* a small epsilon so that "42.857%" (3/7 printed) still fits 3g */
        if (p->media || p->memory_mib < memory_mib ||
            mig_profile_compute_pct(model, p) + 1e-6 < compute_pct)
            continue;
        if (!best || smaller(p, best))
            best = p;
    }
    return best;
}

const struct mig_profile *mig_profile_find(const struct mig_model *model, const char *name)
{
    if (!model || !name)
        return NULL;
    if (strncasecmp(name, "MIG ", 4) == 0)
        name += 4;
    while (isspace((unsigned char)*name))
        name++;
    for (size_t i = 0; i < model->nprofiles; i++)
        if (strcasecmp(name, model->profiles[i].name) == 0)
            return &model->profiles[i];
    return NULL;
}

const struct mig_profile *mig_profile_by_nvml_id(const struct mig_model *model, unsigned id)
{
    for (size_t i = 0; model && i < model->nprofiles; i++)
        if (model->profiles[i].nvml_id == id)
            return &model->profiles[i];
    return NULL;
}
