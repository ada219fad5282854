/* job.h - a Slurm job's carve slice on one node: checking the job's options, making the
 * slice when the job's first task starts (through carved when it runs, standalone
 * otherwise), keeping a record of which steps use it, and removing it when the last step
 * ends, when the job ends, or when a sweep finds that the steps that used it are gone.
 *
 * Nothing here includes Slurm's headers: spank.c is the only file that talks to Slurm, so
 * that this code is unit-tested and fuzzed without it.
 *
 * The record, STATE_DIR/job-JOBID, is a few lines of text ("key value"), rewritten under
 * flock on the record itself:
 *     carve-slurm 1
 *     shm /carve.slurm.42.1a2b3c4d      the slice's shared-memory table
 *     carved slurm-42                   carved's name for it, or - when made standalone
 *     board GPU-UUID ENTRY              a standalone slice's entry on a GPU's board
 *     step PID START                    a slurmstepd using the slice, and its start time
 * Liveness is the steps: a slurmstepd outlives a slurmd restart and dies with its step, so
 * a record none of whose steps is alive belongs to a job that is over here. */
#ifndef CARVE_SLURM_JOB_H
#define CARVE_SLURM_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compute.h"
#include "gpus.h"
#include "slice.h"

#define CARVE_JOB_STATE_DIR "/run/carve/slurm"
/* steps of one job alive on a node at once (srun ... & in a loop, one per core of a big
 * node): each is listed, since an unlisted one would not keep the slice */
#define CARVE_JOB_MAX_STEPS 256
#define CARVE_JOB_OPT_MAX 128

/* What plugstack.conf's arguments set (spank.c parses them). */
struct carve_job_conf {
    char state_dir[256];   /* state_dir=DIR (default CARVE_JOB_STATE_DIR) */
    char libdir[256];      /* libdir=DIR: where libcarve.so is (default: the plugin's dir) */
    char gres_conf[256];   /* gres_conf=FILE (default gres.conf beside SLURM_CONF) */
    bool simulate;         /* simulate: carve's simulated GPU (tests, demos) */
    unsigned shards_per_gpu; /* shards_per_gpu=N; 0: read from gres.conf */
};

/* One step's view of the job when its first task starts. */
struct carve_job_request {
    uint32_t job_id;
    uid_t uid;
    gid_t gid;
    pid_t step_pid;         /* the slurmstepd: the record's liveness */
    const char *memory;     /* --gpu-memory, NULL when not given */
    const char *compute;    /* --gpu-compute, NULL when not given */
    unsigned job_shards;    /* SLURM_SHARDS_ON_NODE, 0 when the job has no shards */
    const char *gpus;       /* Slurm's numbers for the job's GPUs ("0,2": SLURM_STEP_GPUS,
                               SLURM_JOB_GPUS), NULL or "" for all */
    const char *node;       /* the node's Slurm name (slurmd -N; slurmstepd's own
                               SLURMD_NODENAME), NULL or "": the host name up to its
                               first dot */
};

/* Checks an option's value the way `carve run` would (common/size.c, common/compute.c):
 * 0, or -EINVAL with a message naming the option, the value and the accepted forms. */
int carve_job_check_option(const char *option, const char *value, char *err, size_t errlen);

/* The compute share a job with job_shards of a GPU's gpu_shards gets when it names none:
 * its fraction of the GPU, as a guarantee (idle time on top). false when it has no shards. */
bool carve_job_shard_share(unsigned job_shards, unsigned gpu_shards, struct carve_compute *out);

/* What a gres.conf's text gives the node (its Slurm name; a line whose NodeName= hostlist,
 * "gpu[01-16],login1", does not hold it is skipped): the Count= of its Name=shard lines, and
 * its GPUs, the devices its Name=gpu lines' File= names (/dev/nvidia[0-3]: 4), else their
 * Count=. Counts past a million are skipped, and each sum stops at a million; 0: none. */
struct carve_job_gres {
    unsigned shards;
    unsigned gpus;
};
void carve_job_gres_read(const char *text, const char *node, struct carve_job_gres *out);

/* Picks the job's GPUs among the n that NVML lists to its tasks (gpus, in NVML's order)
 * from Slurm's numbers for them (list: "0,2"; NULL, "" or not numbers: every GPU listed).
 * Where NVML lists as many GPUs as the job has, it sees the job's alone (a devices cgroup:
 * ConstrainDevices=yes), numbered from 0 in the node's order: the job's lowest number is
 * NVML's GPU 0, and so on. Else it sees the node's, and Slurm's number is NVML's index.
 * Moves the job's GPUs to the front of gpus, in Slurm's order, with Slurm's number of each
 * in slurm[]. counted: the GPUs NVML counts, those it does not answer for (lost) among them,
 * which gpus leaves out: the view is the job's alone when counted is the job's number (with
 * n, a lost GPU of the node's made its other GPUs look like the job's). Returns how many, or
 * a negative errno with why in err (a GPU of the job that NVML does not list). */
int carve_job_pick_gpus(const char *list, struct carve_gpu_info *gpus, int n, int counted,
                        int *slurm, char *err, size_t errlen);

/* Puts the step in the job's slice, making the slice when the job has none on this node.
 * Returns 1 with the slice's shared-memory name in shm, and in err "" or a note for the
 * step's user (its first task's call only): which of its options the slice, made by an
 * earlier step of the job, does not hold, with the values it holds; 0 when the job asked
 * for nothing and has no slice (nothing to do); or a negative errno with the reason in err. */
int carve_job_enter(const struct carve_job_conf *conf, const struct carve_job_request *req,
                    char *shm, size_t shmlen, char *err, size_t errlen);
/* Takes the step off the record; the last step out removes the slice. */
int carve_job_leave(const struct carve_job_conf *conf, uint32_t job_id, pid_t step_pid,
                    char *err, size_t errlen);
/* Removes the job's slice and record whatever steps it lists (the job ended here). */
int carve_job_remove(const struct carve_job_conf *conf, uint32_t job_id, char *err,
                     size_t errlen);

/* One record as a sweep saw it. */
struct carve_job_status {
    uint32_t job_id;
    char shm[96];
    char carved[CARVE_SLICE_NAME_MAX];
    int steps, live_steps;
    bool removed;
    /* what the slice holds on its first GPU, read from its table: "2.00 GiB" or "-" (no
     * cap), "50%+" or "-" (no share); "?" when the slice cannot be opened */
    char memory[32];
    char compute[32];
    /* "" or why the record cannot be read (cannot be opened, damaged): such a record and
     * its slice stay, and the other fields say nothing */
    char error[512];
};
/* Removes the slices of jobs none of whose steps is alive (unless dry_run); fills out (at
 * most max) with every record seen, those it cannot read among them, and returns how many
 * there were, or -errno. */
int carve_job_sweep(const struct carve_job_conf *conf, bool dry_run,
                    struct carve_job_status *out, int max, char *err, size_t errlen);

/* Parses a record's text into its parts (for tests and the fuzz harness): 0 or -EINVAL. */
struct carve_job_record {
    char shm[96];
    char carved[CARVE_SLICE_NAME_MAX];
    int nboards;
    struct {
        uint8_t uuid[16];
        int entry;
    } boards[CARVE_SLICE_MAX_DEVICES];
    int nsteps;
    struct {
        pid_t pid;
        uint64_t start;
    } steps[CARVE_JOB_MAX_STEPS];
};
int carve_job_record_parse(const char *text, struct carve_job_record *rec);
/* Writes rec as text into buf: its length, or -ENOSPC. */
int carve_job_record_format(const struct carve_job_record *rec, char *buf, size_t len);

#endif
