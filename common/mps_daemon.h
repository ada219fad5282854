/* mps_daemon.h - one GPU's NVIDIA MPS control daemon as carve drives it: finding
 * nvidia-cuda-mps-control, starting the daemon for a run directory (mps.h), telling whether
 * it runs, stopping it, and leaving it: the last client stops it, and a Slurm job step's run
 * directory goes with it, also when the step was killed and no client could.
 *
 * `carve run --mode mps` (cli/mode_mps.c) uses all of it and runs the control program
 * (may_exec). The Slurm plugin (slurm/spank.c) calls carve_mps_end_step at a step's end, in
 * a process of the job's user with the job's environment, where nothing is run: a program
 * named by the job would run from slurmstepd, so a daemon that outlived the step is stopped
 * by signals to the pid in its pid file, once that is proven to be it, and a directory whose
 * daemon cannot be judged so is left. Functions return 0 (or a count) or a negative errno,
 * with a message in err; none writes to stderr. */
#ifndef CARVE_MPS_DAEMON_H
#define CARVE_MPS_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One GPU's daemon: its run directory, the pipe and log directories in it, the control
 * program, the GPU, and whether that program may be run at all. */
struct carve_mps_daemon {
    char dir[PATH_MAX - 64];            /* the GPU's run directory */
    char pipe[PATH_MAX], log[PATH_MAX]; /* dir/pipe and dir/log */
    char control[PATH_MAX];             /* nvidia-cuda-mps-control; "" when there is none */
    char uuid[96];
    bool may_exec; /* carve run: control is run to start, ask and stop the daemon; false
                      (a Slurm step's end): nothing is run, the daemon is judged by its pid
                      file and stopped by signals */
};

/* Fills d for run directory dir (pipe and log in it), GPU uuid and control program control;
 * may_exec false with control NULL: none is ever run. */
void carve_mps_daemon_init(struct carve_mps_daemon *d, const char *dir, const char *uuid,
                           const char *control, bool may_exec);

/* The first executable NAME in PATH (or the usual bin directories when PATH is unset) into
 * out; 0, or -1 when there is none. */
int carve_find_in_path(const char *name, char *out, size_t len);
/* The nvidia-cuda-mps-control carve runs: CARVE_MPS_CONTROL, the simulated GPU's
 * (libdir/sim/bin) with simulate, else the first in PATH, into out; NULL, or where it was
 * looked for in vain ("CARVE_MPS_CONTROL", "simulated", "PATH"; out then holds the path
 * tried, errno why). */
const char *carve_mps_control_find(bool simulate, const char *libdir, char *out, size_t len);

/* Runs the control program with arg (e.g. "-d") or with input on its stdin, in /, in its own
 * session, with this process's environment less a client's limits and slice and plus the
 * daemon's GPU and directories, none of this process's other files open; its output goes
 * to LOG/carve-control.log. Its exit status, or -1 (with err) when it could not run, took
 * longer than 20 s (then it is killed), or d may not run it (may_exec false). */
int carve_mps_control_run(const struct carve_mps_daemon *d, const char *arg, const char *input,
                          char *err, size_t errlen);
/* The daemon's pid from PIPE/nvidia-cuda-mps-control.pid when that process runs, is this
 * user's, is named nvidia-cuda-mps... (with may_exec, also the control program's own name)
 * and started no later than the file was written (a reused pid started after it), else 0. */
pid_t carve_mps_daemon_pid(const struct carve_mps_daemon *d);
/* Whether the daemon runs: 1 when its pid file names it (carve_mps_daemon_pid), 0 when there
 * is no PIPE/control. Else, with may_exec, the daemon is asked through PIPE/control (as one
 * writing no pid file, an older driver's, or one in another PID namespace must be): 1 when
 * it answers, 0 when the control program says it does not; -EAGAIN when the program cannot
 * be run or hangs (killed after 20 s), saying so in err: a daemon may run still. Without
 * may_exec, a pid file whose process is gone is final unless a process
 * of this user named nvidia-cuda-mps... has that pid in a PID namespace below this one;
 * that, a control pipe with no pid file, and a pid that such a process has here but got
 * after the file was written cannot be judged: -EAGAIN, saying why in err. */
int carve_mps_daemon_alive(const struct carve_mps_daemon *d, char *err, size_t errlen);
/* Starts the daemon (`-d') in an emptied pipe directory and waits up to 10 s for it. */
int carve_mps_daemon_start(const struct carve_mps_daemon *d, char *err, size_t errlen);
/* Stops a running daemon and waits for it to end. With may_exec: tells it to `quit' and
 * waits up to 10 s. Without: SIGTERM to it and to its MPS servers (its children of this user
 * running nvidia-cuda-mps-server), SIGKILL to what is left after 1 s, at most 1 s more.
 * 0 when it is gone (or was not running; a warning may be in err); -EBUSY when it still runs
 * or may (a daemon that cannot be judged without the control program included), -ENOENT
 * when there is no control program to tell it. */
int carve_mps_daemon_stop(const struct carve_mps_daemon *d, char *err, size_t errlen);

/* A client leaves the daemon, under the run directory's lock: the entry of carve run leaving
 * (0: none, as at a job step's end) is taken off the client list, whose gone clients are
 * dropped; when none is left the daemon is stopped, and with remove (a job step's directory,
 * the step's alone) the directory is removed once the daemon is gone. The clients left; 0
 * may come with a warning in err (a list that did not parse, a daemon that still runs). A
 * lock that cannot be taken is a negative errno: nothing was done. */
int carve_mps_release(const struct carve_mps_daemon *d, pid_t leaving, bool remove, char *err,
                      size_t errlen);

/* What a Slurm job step's end leaves (slurm/spank.c): carve_mps_release for each of this
 * user's run directories of step (job, step; step NULL or "": the batch script), found
 * where carve_mps_user_dir has them (the environment's CARVE_MPS_DIR, or the fallback),
 * without may_exec: no program is run, a daemon that outlived the step is stopped by
 * signals, and a directory whose daemon still runs or cannot be judged is left. Nothing is
 * made, and only directories are taken: a link or a file of such a name is left, and named.
 * Each directory's outcome goes to note (error: true for one that was not removed for a
 * reason other than running clients). The directories found, or a negative errno with err
 * (the user's directory cannot be read or is refused; none at all is 0). */
typedef void (*carve_mps_note_fn)(void *arg, bool error, const char *text);
int carve_mps_end_step(const char *job, const char *step, carve_mps_note_fn note, void *arg,
                       char *err, size_t errlen);

#endif
