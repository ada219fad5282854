/* modes.c - the table of `carve run --mode` mechanisms, and the modes too small for a file
 * of their own (carve: libcarve alone; timeslice: the driver's time-slicing). Adding a mode
 * is one row here and its prepare function. */
#include "modes.h"

#include <string.h>

#include "cli.h"

const struct run_mode carve_run_modes[] = {
    {"carve", "libcarve alone: memory cap, compute shares and priorities (the default)", NULL},
    {"timeslice", "the driver's plain time-slicing: no compute share; --memory still caps",
     carve_mode_timeslice_prepare},
    {"mps", "NVIDIA MPS: --compute sets the client's active threads, --memory also its pinned "
            "memory; one GPU", carve_mode_mps_prepare},
    {NULL, NULL, NULL},
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

void carve_run_modes_help(FILE *f)
{
    fprintf(f, "\nMODES (--mode; docs/mps.md)\n");
    for (const struct run_mode *m = carve_run_modes; m->name; m++)
        fprintf(f, "  %-10s %s\n", m->name, m->description);
}

int carve_mode_timeslice_prepare(struct run_opts *o, struct run_mode_ctx *ctx)
{
    const char *given = o->compute_arg ? "--compute" : o->priority_arg ? "--priority" : NULL;
    if (given) {
        fprintf(stderr, "carve run: --mode timeslice leaves the GPU's time to the driver, so "
                        "%s cannot be given with it: drop it, or use --mode carve (or mps for "
                        "a thread limit)\n(see carve run --help)\n", given);
        return CARVE_EXIT_USAGE;
    }
    if (o->slice) {
        fprintf(stderr, "carve run: --slice %s has carved's settings; --mode timeslice cannot "
                        "be given with it\n(see carve run --help)\n", o->slice);
        return CARVE_EXIT_USAGE;
    }
    return 0;
}
