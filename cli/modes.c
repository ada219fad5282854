/* modes.c - the table of `carve run --mode` mechanisms, and the modes too small for a file
 * of their own (carve: libcarve alone; timeslice: the driver's time-slicing). Adding a mode
 * is one row here and its prepare function. */
#include "modes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const struct run_mode carve_run_modes[] = {
    {"carve", "libcarve alone: memory cap, compute shares and priorities (the default)", NULL, false},
    {"timeslice", "the driver's plain time-slicing: no compute share; --memory still caps",
     carve_mode_timeslice_prepare, false},
    {"mps", "NVIDIA MPS: --compute sets the client's active threads, --memory also its pinned "
            "memory, --priority its client priority; one GPU", carve_mode_mps_prepare, false},
    {"mig", "a MIG instance (carve mig): isolated by the hardware, no libcarve; --memory and "
            "--compute choose the smallest free instance that fits", carve_mode_mig_prepare,
     true},
    {NULL, NULL, NULL, false},
};

const struct run_mode *carve_run_mode_find(const char *name)
{
    for (const struct run_mode *m = carve_run_modes; m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

void carve_run_modes_list(char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (const struct run_mode *m = carve_run_modes; m->name && off < len; m++) {
        int w = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", m->name);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

#define HELP_WIDTH 84 /* the width of the rest of carve run --help */
#define HELP_INDENT 13 /* "  " NAME padded to 10, " " */

/* The table's descriptions are one line each; --help wraps them under the mode's column,
 * at spaces, so that a terminal of the help's width shows them whole. */
void carve_run_modes_help(FILE *f)
{
    fprintf(f, "\nMODES (--mode; docs/mps.md, docs/mig.md)\n");
    for (const struct run_mode *m = carve_run_modes; m->name; m++) {
        fprintf(f, "  %-10s ", m->name);
        const char *p = m->description;
        while (*p) {
            size_t room = HELP_WIDTH - HELP_INDENT, n = strlen(p);
            if (n > room) {
                n = room;
                while (n > 0 && p[n] != ' ')
                    n--;
                if (n == 0) /* one word longer than the line: left whole */
                    n = strcspn(p, " ");
            }
            fprintf(f, "%.*s\n", (int)n, p);
            p += n;
            while (*p == ' ')
                p++;
            if (*p)
                fprintf(f, "%*s", HELP_INDENT, "");
        }
    }
}

int carve_mode_timeslice_prepare(struct run_opts *o, struct run_mode_ctx *ctx)
{
    if (o->compute_arg) {
        fprintf(stderr, "carve run: --mode timeslice leaves the GPU's time to the driver, so "
                        "--compute cannot be given with it: drop it, or use --mode carve (or "
                        "mps for a thread limit)\n(see carve run --help)\n");
        return CARVE_EXIT_USAGE;
    }
    /* normal, the default, is what the driver gives every process: asked for, it is kept */
    if (o->compute.priority != CARVE_PRIO_NORMAL) {
        fprintf(stderr, "carve run: --mode timeslice leaves the GPU's time to the driver, which "
                        "gives every process its turn alike, so --priority %s cannot be given "
                        "with it: drop it (or give normal), or use --mode carve (batch slices "
                        "step back while a latency slice launches) or mps (the MPS client "
                        "priority)\n(see carve run --help)\n",
                carve_priority_name(o->compute.priority));
        return CARVE_EXIT_USAGE;
    }
    if (o->slice) {
        fprintf(stderr, "carve run: --slice %s has carved's settings; --mode timeslice cannot "
                        "be given with it\n(see carve run --help)\n", o->slice);
        return CARVE_EXIT_USAGE;
    }
    return 0;
}

/* --mode mig: the instance stays locked to this carve run until the command ends, so that
 * two runs never take the same free one. */
static void mig_finish(struct run_mode_ctx *ctx)
{
    carve_mig_release((int)(intptr_t)ctx->state);
}

int carve_mode_mig_prepare(struct run_opts *o, struct run_mode_ctx *ctx)
{
    char uuid[96], err[1024];
    int lock_fd = -1;
    o->simulate = o->simulate || carve_daemon_simulated();
    /* the devices the job was given (Slurm, a container): the instance is one of them */
    int ret = carve_mig_choose(o->mig_instance, o->memory, o->compute_arg,
                               getenv("CUDA_VISIBLE_DEVICES"), o->simulate, uuid, sizeof(uuid),
                               &lock_fd, err, sizeof(err));
    if (ret != 0) { /* as for any carve run that cannot start: 2, nothing was run */
        fprintf(stderr, "carve run: %s\n", err);
        return CARVE_EXIT_USAGE;
    }
    ctx->state = (void *)(intptr_t)lock_fd;
    ctx->finish = mig_finish;
    if (setenv("CUDA_VISIBLE_DEVICES", uuid, 1) < 0 ||
        (o->simulate && carve_run_sim_env(ctx->libdir) < 0))
        return CARVE_EXIT_USAGE;
    if (!o->quiet)
        fprintf(stderr, "carve run: in MIG device %s\n", uuid);
    return 0;
}
