/* sim_mps.h - the simulated GPU's MPS: the record of what happened (daemon starts and
 * quits, clients that initialised CUDA under a daemon) and finding the daemon of
 * CUDA_MPS_PIPE_DIRECTORY. Shared by the stand-in nvidia-cuda-mps-control and the
 * simulated libcuda.so.1 (which notes its MPS clients in cuInit). */
#ifndef CARVE_SIM_MPS_H
#define CARVE_SIM_MPS_H

#include <stddef.h>
#include <sys/types.h>

#define SIM_MPS_PID_FILE "nvidia-cuda-mps-control.pid"
/* the stand-in server's pid, for get_server_list (the real daemon answers from memory) */
#define SIM_MPS_SERVER_PID_FILE "nvidia-cuda-mps-server.pid"

/* CUDA_MPS_PIPE_DIRECTORY, or the driver's default /tmp/nvidia-mps. */
const char *sim_mps_pipe_dir(void);
void sim_mps_pipe_path(char *out, size_t len, const char *name);
/* pid has not exited (a zombie has). */
int sim_mps_running(pid_t pid);
/* The pid of the daemon running for the pipe directory, or 0. */
pid_t sim_mps_daemon(void);
/* Appends "WHAT pipe=... log=... visible=... threads=... pinned=... preload=..." (the MPS
 * variables of this process) to $CARVE_SIM_STATE.mps, default /dev/shm/carve-sim.UID.mps. */
void sim_mps_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* In cuInit: a process with CUDA_MPS_PIPE_DIRECTORY set records "client pid=N daemon=D"
 * (D 0: no daemon runs there, and the real driver would run it without MPS). */
void sim_mps_note_client(void);

#endif
