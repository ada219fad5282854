/* mig_visible.h - what CUDA_VISIBLE_DEVICES leaves to `carve run --mode mig`: the GPUs it
 * names and the MIG devices it names, so that a command is given an instance of the
 * devices its job was given (Slurm, a container) and not of another GPU of the node. */
#ifndef CARVE_MIG_VISIBLE_H
#define CARVE_MIG_VISIBLE_H

#include <stdbool.h>
#include <stddef.h>

#include "mig_nvml.h"

#define MIG_VISIBLE_MAX 64 /* entries: 16 GPUs of 7 MIG devices would be 112; 64 is plenty */

struct mig_visible {
    bool gpu[MIG_NVML_MAX_GPUS]; /* by position in the GPU list given to the parser */
    int nmig;
    char mig[MIG_VISIBLE_MAX][96]; /* the MIG device UUIDs named, in their order */
};

/* Reads visible, a comma-separated list as CUDA takes it: GPU indices as nvidia-smi numbers
 * them (NVML's), GPU UUIDs or unique GPU- prefixes of them (of gpus, ngpu of them), and MIG
 * device UUIDs (MIG-..., whole; which of the machine's MIG devices they name is for the
 * caller to find). 0, or -EINVAL with a message naming the entry and the forms accepted:
 * an empty value (it hides every GPU), an empty entry, an index the machine does not have,
 * a UUID or prefix that names no GPU or several, the MIG-GPU-UUID/GI/CI form of drivers
 * before R470, anything else. Carve refuses rather than guess where CUDA would stop at the
 * first entry it cannot read. */
int mig_visible_parse(const char *visible, const struct mig_gpu *gpus, int ngpu,
                      struct mig_visible *out, char *err, size_t errlen);

/* Whether v names MIG device uuid. */
bool mig_visible_names(const struct mig_visible *v, const char *uuid);

#endif
