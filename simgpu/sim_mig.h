/* sim_mig.h - the simulated GPU's MIG instances: GPU instances (each with at most one compute
 * instance, which takes all of it) kept in a text file beside the simulated GPU's state
 * (CARVE_SIM_STATE + ".mig"), so that processes creating, listing and destroying them agree.
 * Possible placements and profiles come from carve's MIG tables (planner/mig.h) for the
 * simulated model (CARVE_SIM_MODEL, else the one CARVE_SIM_NAME names). */
#ifndef CARVE_SIM_MIG_H
#define CARVE_SIM_MIG_H

#include <stdbool.h>

#include "mig.h"

#define SIM_MIG_MAX 32     /* instances in the file, all devices together */
#define SIM_MIG_MAX_ID 15  /* GPU instance IDs 1..15 per device */

struct sim_mig_gi {
    int dev;
    unsigned gi;      /* GPU instance ID */
    unsigned nvml_id; /* profile ID (19, 14, 9 ...) */
    unsigned start;   /* first memory slice */
    int ci;           /* compute instance ID, -1 when none */
    char uuid[48];    /* MIG-...: the MIG device's, set with the compute instance */
};

/* The simulated GPU's MIG model; NULL when its name is not a MIG-capable model. */
const struct mig_model *sim_mig_model(void);
/* The instances, all devices; their number (0 when there is no file yet). */
int sim_mig_load(struct sim_mig_gi *out, int max);
/* Runs change on the instances under an exclusive lock and writes them back when it returns
 * 0 (an NVML code otherwise, which is returned). */
int sim_mig_update(int (*change)(struct sim_mig_gi *list, int *n, void *arg), void *arg);
/* The instance whose MIG device has this UUID; false if none. */
bool sim_mig_find_uuid(const char *uuid, struct sim_mig_gi *out);

#endif
