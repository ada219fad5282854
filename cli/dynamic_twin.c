/* dynamic_twin.c - linked into the statically linked carve only (cli/module.mk): how a command
 * that needs NVML runs there.
 *
 * carve is linked statically where the C library allows it, so that a `carve run` start-up
 * maps no shared library (the dynamic loader was a quarter of a start-up on a paravirtualised
 * node: docs/results/2026-11-23-carved-bench-simulated.md). NVML is a shared library, and a
 * static process should not load one: glibc's static dlopen brings in a second C library, and
 * the driver's libraries are not built or tested for that. So the static link wraps dlopen
 * (-Wl,--wrap=dlopen): the first time a command reaches for NVML (carve run without carved,
 * --mode mps, carve mig), the same command is run again, from its first argument, by
 * lib/carve/carve-dynamic, which is the same objects linked dynamically. Every such command
 * opens NVML before it changes anything, so starting over is safe. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpus.h"

void *__wrap_dlopen(const char *file, int mode);

void *__wrap_dlopen(const char *file, int mode)
{
    (void)mode;
    char libdir[PATH_MAX], twin[PATH_MAX + 32];
    /* the twin is part of this carve, not of the libraries CARVE_LIBDIR may point at */
    if (carve_own_libdir(libdir, sizeof(libdir)) < 0) {
        fprintf(stderr, "carve: loading %s needs lib/carve/carve-dynamic, and /proc/self/exe "
                        "cannot be read to find it\n", file);
        exit(CARVE_EXIT_USAGE);
    }
    snprintf(twin, sizeof(twin), "%s/carve-dynamic", libdir);
    /* what this process printed but did not flush yet, the command prints again there */
    execv(twin, carve_argv);
    fprintf(stderr,
            "carve: loading %s needs %s, the dynamically linked carve, which cannot be run: "
            "%s (rebuild carve: make)\n",
            file, twin, strerror(errno));
    exit(CARVE_EXIT_USAGE);
}
