/* gpus.h - the machine's GPUs as carve's tools see them (through NVML, the real one or the
 * simulated one), and turning a slice request (memory spec, compute share) into a slice
 * spec for them. Shared by `carve run` and carved, so that both accept and refuse exactly
 * the same requests with the same messages. Not used inside tenant processes. */
#ifndef CARVE_GPUS_H
#define CARVE_GPUS_H

#include <stddef.h>
#include <stdint.h>

#include "compute.h"
#include "slice.h"
#include "uuid.h"

struct carve_gpu_info {
    unsigned index;
    char uuid[96];
    char name[96];
    uint64_t total;
    /* -1 where NVML does not say: nvmlComputeMode_t's value, MIG mode now and after a reset,
       compute processes on it */
    int compute_mode, mig_current, mig_pending, compute_procs;
};

/* What the driver says of itself (carve_gpus_list_driver). */
struct carve_driver_info {
    char version[96]; /* "580.82.07"; "unknown" where NVML does not say */
    int cuda;         /* the CUDA version it supports, 13000 for 13.0; 0 where not said */
    /* GPUs NVML counts but does not answer for (lost: fallen off the bus), left out of the
       list: their indices and NVML's answer (nvmlReturn_t) */
    int nunread;
    unsigned unread_index[CARVE_SLICE_MAX_DEVICES];
    int unread_error[CARVE_SLICE_MAX_DEVICES];
};

/* NVML's answer for a GPU it does not answer for, as text: "GPU is lost", "error 999". */
const char *carve_nvml_error_text(int error, char *buf, size_t len);

/* The NVML library to load: the simulated one under libdir/sim, or the driver's. */
void carve_nvml_path(int simulate, const char *libdir, char *out, size_t len);
/* The lib/carve directory: CARVE_LIBDIR, the executable's own directory when libcarve.so is
 * there (the programs in lib/carve), or ../lib/carve beside it. */
int carve_find_libdir(char *out, size_t len);
/* The lib/carve directory of this executable's own installation, whatever CARVE_LIBDIR says. */
int carve_own_libdir(char *out, size_t len);
/* Where carve-dynamic (the dynamically linked carve a static one hands NVML's commands to)
 * may be, in the order to try: beside this executable's own libraries, then in CARVE_LIBDIR.
 * Their count (0 to 2), written to paths. */
#define CARVE_TWIN_PATH_MAX 4128
int carve_twin_paths(char paths[2][CARVE_TWIN_PATH_MAX]);
/* Lists up to max GPUs through the NVML at nvml_path: their count, or -1 with a message
 * (what is missing and what to do) in err. */
int carve_gpus_list(const char *nvml_path, int simulate, struct carve_gpu_info *gpus, int max,
                    char *err, size_t errlen);
/* The same, and (where driver is not NULL) the driver's version and CUDA version. */
int carve_gpus_list_driver(const char *nvml_path, int simulate, struct carve_gpu_info *gpus,
                           int max, struct carve_driver_info *driver,
                    char *err, size_t errlen);
/* Fills spec for the GPUs from a --memory SPEC (NULL: no cap; "" is refused) and compute settings: 0, or
 * -EINVAL with a message naming the value ("--memory 100GiB is more than GPU 0 has"). */
int carve_spec_build(struct carve_slice_spec *spec, const char *name, const char *memory,
                     const struct carve_compute *compute, const struct carve_gpu_info *gpus,
                     int ngpu, char *err, size_t errlen);

/* Which of gpus r names: its position there, or -1. */
int carve_gpu_ref_find(const struct carve_gpu_ref *r, const struct carve_gpu_info *gpus, int n);

#endif
