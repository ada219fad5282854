/* mps.h - what carve needs to run clients under NVIDIA MPS: choosing the one GPU a client
 * runs on, turning a slice's settings into the MPS client variables, the per-GPU, per-user
 * run directory, and the list of live clients that decides when the control daemon starts
 * and stops (read and written under an flock, so concurrent `carve run --mode mps` agree).
 *
 * Starting, stopping and leaving the daemon itself (running nvidia-cuda-mps-control) is
 * mps_daemon.h's, for cli/mode_mps.c and the Slurm plugin. Not used inside tenant
 * processes. Functions return 0 (or a count) or a negative errno, with a message in err
 * where one is given. */
#ifndef CARVE_MPS_H
#define CARVE_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compute.h"
#include "gpus.h"

#define CARVE_MPS_MAX_CLIENTS 128 /* carve runs sharing one GPU's daemon (MPS allows 48-60) */
#define CARVE_MPS_CONTROL_NAME "nvidia-cuda-mps-control"
#define CARVE_MPS_PID_FILE "nvidia-cuda-mps-control.pid" /* the daemon writes it in its pipe dir */

/* The GPU a client runs on, as an index into gpus: the one CUDA_VISIBLE_DEVICES names
 * (visible: its value, NULL when unset; an nvidia-smi index, a UUID or a unique GPU- prefix
 * of one), or the only GPU. -EINVAL with a message when visible names none, several, a MIG
 * device, or is unset on a machine with several GPUs. */
int carve_mps_pick_gpu(const char *visible, const struct carve_gpu_info *gpus, int ngpu,
                       char *err, size_t errlen);

/* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for a --compute share: "30" for 30%. MPS limits and
 * cannot guarantee, and takes whole percentages: -EINVAL with a message for "30%+" or
 * "12.5%". */
int carve_mps_thread_percentage(const struct carve_compute *c, char *buf, size_t len, char *err,
                                size_t errlen);

/* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for a cap of bytes on the client's device 0 (the only one
 * it sees): "0=8192M", in whole MiB rounded down (never below 1M, so the value never reads
 * as "no limit"). */
void carve_mps_mem_limit(uint64_t cap, char *buf, size_t len);

/* The name of one GPU's run directory: "mps-UUID"; in a Slurm job (job: SLURM_JOB_ID, step:
 * SLURM_STEP_ID; NULL or "" when unset) "mps-UUID-jJOB.STEP", or "mps-UUID-jJOB" in the
 * batch script, which has no step id. So each job step starts a daemon of its own: Slurm
 * ends every process of a step when the step ends, the daemon it started included, and a
 * daemon shared with another step would go with it. -EINVAL with a message for a UUID with
 * a character carve does not put in a path, or an id that is not a number. */
int carve_mps_dir_name(const char *uuid, const char *job, const char *step, char *out,
                       size_t len, char *err, size_t errlen);

/* Where the run directories go (BASE), made or checked by nothing here: CARVE_MPS_DIR when
 * set, else $XDG_RUNTIME_DIR/carve when that directory exists, is the user's, no one else
 * may write it and no Slurm job runs (SLURM_JOB_ID unset), else /run/carve for root, else
 * /tmp/carve-UID. The length snprintf gave. */
int carve_mps_run_base(char *out, size_t len);

/* Whether name is carve_mps_dir_name's for job step (job, step) and some GPU (step NULL or
 * "": the batch script's); 1 with the GPU's UUID in uuid, else 0 (ids that are not
 * numbers included). */
int carve_mps_dir_of_step(const char *name, const char *job, const char *step, char *uuid,
                          size_t len);

/* The directory of this user's run directories: BASE, or BASE/UID when BASE is not this
 * user's alone (carve_mps_run_dir, below). With create, made as there; without, nothing is
 * made and one that does not exist is -ENOENT. Refused (-EPERM, naming the owner) as there. */
int carve_mps_user_dir(bool create, char *out, size_t len, char *err, size_t errlen);

/* The run directory of one GPU for this user: BASE/NAME (BASE: carve_mps_run_base; NAME:
 * carve_mps_dir_name, with the Slurm ids of the environment); BASE/UID/NAME when BASE is
 * not this user's alone (another's, or shared with the sticky bit), so that users who share
 * a BASE never share a daemon. Creates what is missing (mode 0700) and refuses, naming the
 * owner, a directory that is not ours or that others may write. */
int carve_mps_run_dir(const char *uuid, char *out, size_t len, char *err, size_t errlen);

/* A process by its pid and start time (/proc/PID/stat field 22), to tell a reused pid apart;
 * start 0: unknown, the live pid counts. */
struct carve_mps_proc {
    pid_t pid;
    uint64_t start;
};

/* The processes of one client's command that carve run records: the command itself, then
 * what it leaves running that comes to carve run (a subreaper). Past this many, more are
 * not recorded: one live process keeps the entry, so the first few are what count. */
#define CARVE_MPS_CLIENT_PROCS 8

/* One carve run serving a client: its own pid and start time, and its command's processes.
 * The entry counts while carve run or any of them runs: a carve run killed with SIGKILL
 * leaves its command running as an orphan that still uses the daemon. */
struct carve_mps_client {
    pid_t pid;
    uint64_t start;
    int nproc;
    struct carve_mps_proc proc[CARVE_MPS_CLIENT_PROCS];
};

/* The client list's text: "# comment" lines and "PID START[ CPID CSTART]..." lines (carve
 * run, then its command's processes; a line of an older carve has the first pair only).
 * Returns the count, or -EINVAL naming the line number and what is wrong (more than max
 * entries included). */
int carve_mps_clients_parse(const char *text, struct carve_mps_client *out, int max, char *err,
                            size_t errlen);
/* Writes the list in the form parse reads; the length, or -ENOSPC. */
int carve_mps_clients_format(const struct carve_mps_client *c, int n, char *buf, size_t len);
/* carve run or one of its command's recorded processes still runs. */
int carve_mps_client_alive(const struct carve_mps_client *c);
/* Adds a process to c's command processes unless it is there already; a gone one's place is
 * reused when c is full. 0, or -ENOSPC when all CARVE_MPS_CLIENT_PROCS still run. */
int carve_mps_client_add_proc(struct carve_mps_client *c, pid_t pid, uint64_t start);
/* Drops the entries whose carve run and command processes are all gone, and the gone
 * command processes of those kept; the new count. */
int carve_mps_clients_prune(struct carve_mps_client *c, int n);

/* Takes the run directory's lock (dir/lock, flock, blocking): the fd to pass to unlock. */
int carve_mps_lock(const char *dir, char *err, size_t errlen);
void carve_mps_unlock(int fd);
/* Removes run directory dir and what carve and MPS put in it (pipe/, log/, clients, lock),
 * under its lock: what a job step's last client does (its directory is the step's alone),
 * and the step's end (carve_mps_end_step). Nothing is followed: a link in place of pipe/ or
 * log/ goes itself, not what it names. A carve run waiting on the lock meanwhile takes it
 * again on a new directory. */
void carve_mps_remove_dir(const char *dir);
/* Reads dir/clients (missing: none) and drops clients that are gone; the count. A file
 * that does not parse is reported and read as empty: a crash can leave nothing worse than a
 * daemon that the next client reuses. Call with the lock held. */
int carve_mps_clients_load(const char *dir, struct carve_mps_client *out, int max, char *err,
                           size_t errlen);
/* Replaces dir/clients (a new file renamed over the old). Call with the lock held. */
int carve_mps_clients_store(const char *dir, const struct carve_mps_client *c, int n, char *err,
                            size_t errlen);

#endif
