/* modes.h - how `carve run` shares the GPU (--mode): one table row per mechanism, each with
 * a prepare function that checks the request against what the mechanism can do, sets the
 * mechanism up (an MPS daemon, a MIG instance...) and the command's environment, and leaves
 * a finish function for when the command has ended. The slice (libcarve's accounting, view
 * and memory cap) is made the same way in every mode. */
#ifndef CARVE_CLI_MODES_H
#define CARVE_CLI_MODES_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "compute.h"

struct run_mode;

/* What `carve run` was asked for (parsed options). */
struct run_opts {
    const char *memory;
    const char *compute_arg;
    const char *priority_arg;
    struct carve_compute compute;
    const char *name;
    const char *slice; /* --slice: run in this slice of carved's */
    const struct run_mode *mode;
    const char *mig_instance; /* --mig-instance: a MIG device UUID (--mode mig) */
    bool simulate;
    bool quiet;
    /* nothing is left to undo once the command ends (no mode finish, no slice of our own):
       it may take carve's place instead of being its child */
    bool may_replace;
    char **command;
    struct run_mode_ctx *mode_ctx; /* the mode's set-up, for its command_ended */
};

/* A mode's set-up for one carve run. prepare fills it; run.c calls finish (when set) once
 * the command has ended, or could not be started, with the state prepare left. */
struct run_mode_ctx {
    const char *libdir; /* lib/carve: libcarve.so, sim/ */
    /* called once the command has been started, with its pid (not yet waited for) */
    void (*command_started)(struct run_mode_ctx *ctx, pid_t pid);
    /* called when the command has ended, while its slice still exists (processes it left
     * running keep their cap while this waits for them) */
    void (*command_ended)(struct run_mode_ctx *ctx);
    void (*finish)(struct run_mode_ctx *ctx);
    void *state;
};

struct run_mode {
    const char *name;
    const char *description; /* one line for --help */
    /* Checks o against the mode and sets it up; may take the compute settings over (clears
     * o->compute and o->compute_arg, so libcarve does not pace). Returns 0, or an exit
     * status after printing why (CARVE_EXIT_USAGE: nothing was run). NULL: nothing to do. */
    int (*prepare)(struct run_opts *o, struct run_mode_ctx *ctx);
    /* The hardware isolates the command (a MIG instance): no slice, no libcarve. */
    bool no_slice;
};

/* The modes, the first being the default; NULL-terminated by name. */
extern const struct run_mode carve_run_modes[];
const struct run_mode *carve_run_mode_find(const char *name);
/* "carve, timeslice, mps" */
void carve_run_modes_list(char *buf, size_t len);
/* The MODES part of `carve run --help`. */
void carve_run_modes_help(FILE *f);

/* The prepare functions (modes.c, mode_mps.c). */
int carve_mode_timeslice_prepare(struct run_opts *o, struct run_mode_ctx *ctx);
int carve_mode_mps_prepare(struct run_opts *o, struct run_mode_ctx *ctx);
int carve_mode_mig_prepare(struct run_opts *o, struct run_mode_ctx *ctx);

/* run.c: puts the simulated libcuda, libnvidia-ml and nvidia-smi first in the command's
 * paths; 0, or -1 after saying why. */
int carve_run_sim_env(const char *libdir);

#endif
