/* mig.h - NVIDIA MIG (Multi-Instance GPU) profile tables: for each MIG-capable GPU model
 * carve knows, the GPU instance profiles, the memory and compute slices each takes, how many
 * fit on one GPU and the memory slices an instance may start at. The geometry planner
 * (mig_geometry.c), `carve mig` and the simulated GPU's MIG emulation all read these tables.
 * Source: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"; see mig_profiles.c. */
#ifndef CARVE_MIG_H
#define CARVE_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mig_profile {
    const char *name;          /* NVIDIA's name, e.g. "1g.10gb", "3g.40gb", "1g.20gb" */
    unsigned compute_slices;   /* the "g": SM fraction is compute_slices / model->compute_slices */
    unsigned memory_slices;    /* memory slices (of model->memory_slices) the instance takes */
    uint64_t memory_mib;       /* memory an instance of this profile gets */
    unsigned max_count;        /* most instances of this profile on one GPU */
    unsigned start_mask;       /* bit i set: an instance may start at memory slice i */
    /* beyond the contract: what NVML calls the profile */
    unsigned nvml_profile;     /* NVML_GPU_INSTANCE_PROFILE_* (profile info takes it) */
    unsigned nvml_id;          /* the profile ID NVML reports, nvidia-smi shows (19, 14, 9 ...) */
    bool media;                /* a "+me" profile: takes the GPU's media engines (at most one) */
};

struct mig_model {
    const char *name;          /* short name: "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB" */
    const char *nvml_match;    /* substring of NVML's device name that selects this model */
    uint64_t memory_mib;       /* the whole GPU's memory */
    unsigned compute_slices;   /* 7 */
    unsigned memory_slices;    /* 8 */
    const struct mig_profile *profiles;
    size_t nprofiles;
    /* beyond the contract: more NVML names of the same model (NULL-terminated), e.g. the PCIe
       board's, which do not contain nvml_match */
    const char *const *nvml_also;
};

/* every model carve knows; *count gets their number */
const struct mig_model *mig_models(size_t *count);
/* a model by short name (case-insensitive) or by an NVML device name; NULL if none */
const struct mig_model *mig_model_find(const char *name);
/* whether needle is a whole word of hay, case-insensitive: "H200" is one of "NVIDIA H200 NVL"
   but not of "NVIDIA GH200 480GB" (a Grace Hopper, whose MIG profiles differ) nor "A100" of
   "RTX A1000" */
bool mig_name_has_word(const char *hay, const char *needle);
/* the smallest profile of model that gives at least memory_mib and compute_pct (0..100) of the
   GPU; NULL when none does. "+me" profiles are never chosen here (ask for them by name). */
const struct mig_profile *mig_profile_fit(const struct mig_model *model, uint64_t memory_mib,
                                          double compute_pct);
/* The GPU families NVIDIA's MIG user guide ("Supported GPUs") lists with MIG that carve gates
   on: A100, A30, H100, H20, H200 and B200, in words for messages, and the family a GPU name
   holds, not followed by a digit ("NVIDIA H20", "NVIDIA A30", "GB200" hold one; "H200" holds
   H200, not H20; "RTX A1000" and "RTX A3000" none); NULL when it holds none. A profile table
   (mig_model_find) exists only for some of their boards. */
#define MIG_FAMILIES_TEXT "A100, A30, H100, H20, H200 and B200"
const char *mig_family_in(const char *name);
/* a profile of model by NVIDIA's name ("3g.40gb", also "MIG 3g.40gb", case-insensitive);
   NULL when the model has none of that name */
const struct mig_profile *mig_profile_find(const struct mig_model *model, const char *name);
/* a profile of model by the profile ID NVML reports; NULL if none */
const struct mig_profile *mig_profile_by_nvml_id(const struct mig_model *model, unsigned id);
/* the percent of the GPU's SMs a profile gets (compute_slices / model->compute_slices) */
double mig_profile_compute_pct(const struct mig_model *model, const struct mig_profile *p);
/* the memory slices [start, start + memory_slices) as a bit mask */
unsigned mig_slice_mask(const struct mig_profile *p, unsigned start);

#endif
