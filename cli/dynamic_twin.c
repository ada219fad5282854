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
    /* the twin is part of this carve's installation, beside its libraries; a carve copied
       elsewhere finds it where CARVE_LIBDIR points */
    char paths[2][CARVE_TWIN_PATH_MAX];
    int n = carve_twin_paths(paths), why = ENOENT;
    for (int i = 0; i < n; i++) {
        execv(paths[i], carve_argv);
        why = errno;
    }
    const char *env = getenv("CARVE_LIBDIR");
    fprintf(stderr,
            "carve: loading %s needs carve-dynamic, the dynamically linked carve, and %s%s%s "
            "cannot be run%s: %s (rebuild carve with make; a carve copied elsewhere needs "
            "CARVE_LIBDIR set to its lib/carve)\n",
            file, n ? paths[0] : "(/proc/self/exe unreadable)/../lib/carve/carve-dynamic",
            n > 1 ? " nor " : "", n > 1 ? paths[1] : "",
            env && *env ? "" : " ($CARVE_LIBDIR/carve-dynamic: unset)", strerror(why));
    exit(CARVE_EXIT_USAGE);
}
