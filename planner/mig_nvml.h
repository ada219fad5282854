/* mig_nvml.h - MIG instances on the machine's GPUs through NVML (the driver's
 * libnvidia-ml.so.1 or carve's simulated one, loaded with dlopen): list GPUs and their MIG
 * mode, list GPU instances with their compute instance, MIG device UUID and processes, create
 * a GPU instance at a placement with its full compute instance, destroy one. Nothing here
 * changes MIG mode itself. */
#ifndef CARVE_MIG_NVML_H
#define CARVE_MIG_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mig.h"

#define MIG_NVML_MAX_GPUS 16
#define MIG_NVML_MAX_LIVE 16
#define MIG_NVML_MAX_PIDS 16

struct mig_gpu {
    unsigned index;
    char name[96];
    char uuid[96];
    int mode;                      /* 1: MIG on, 0: off, -1: the GPU has no MIG */
    const struct mig_model *model; /* carve's table for it, or NULL */
};

/* one GPU instance, with its compute instance and MIG device when it has them */
struct mig_live {
    unsigned gpu;
    unsigned gi_id;
    unsigned profile_id;              /* NVML's profile ID (19, 14, 9 ...) */
    const struct mig_profile *profile; /* carve's row for it, or NULL if unknown */
    unsigned start, size;             /* placement in memory slices, when placement_known */
    bool placement_known;             /* false: read from the MIG device alone (not root) */
    uint64_t memory_mib;              /* NVML's number for the profile */
    int ci_id;                        /* -1: no compute instance */
    char uuid[96];                    /* "MIG-..."; "" without a MIG device */
    unsigned npids;                   /* processes running in it (may exceed the list) */
    bool pids_unknown;                /* NVML would not list them all: taken as busy */
    unsigned pids[MIG_NVML_MAX_PIDS];
};

struct mig_nvml;

/* Loads NVML from path and initialises it; 0, or -1 with what is missing in err. */
int mig_nvml_open(const char *path, struct mig_nvml **out, char *err, size_t errlen);
void mig_nvml_close(struct mig_nvml *n);
/* The GPUs NVML answers for, each with its NVML index (one it does not answer for is left
 * out, so a GPU's place in gpus need not be its index): their number, or -1 with err. */
int mig_nvml_gpus(struct mig_nvml *n, struct mig_gpu *gpus, int max, char *err, size_t errlen);
/* GPU gpu's GPU instances, ordered by start slot: their number, or -1 with err. */
int mig_nvml_instances(struct mig_nvml *n, unsigned gpu, struct mig_live *out, int max,
                       char *err, size_t errlen);
/* What NVML says of profile p on gpu, to check carve's table against the driver. */
struct mig_nvml_facts {
    unsigned id;          /* NVML's profile ID */
    unsigned compute_slices, max_count;
    uint64_t memory_mib;
    unsigned start_mask;  /* from nvmlDeviceGetGpuInstancePossiblePlacements_v2 */
    unsigned memory_slices; /* the placements' size */
};
/* 0, or -1 with err when NVML cannot say (no such profile on this GPU, too old a driver). */
int mig_nvml_facts(struct mig_nvml *n, unsigned gpu, const struct mig_profile *p,
                   struct mig_nvml_facts *f, char *err, size_t errlen);
/* Creates a GPU instance of p at start and its full compute instance; *made describes it.
 * 0, or -1 with err (and nothing left behind). */
int mig_nvml_create(struct mig_nvml *n, unsigned gpu, const struct mig_profile *p,
                    unsigned start, struct mig_live *made, char *err, size_t errlen);
/* Destroys GPU instance gi_id and its compute instances, unless a process runs in it: then
 * -1 and err names the processes. 0, or -1 with err. */
int mig_nvml_destroy(struct mig_nvml *n, unsigned gpu, unsigned gi_id, char *err,
                     size_t errlen);

#endif
