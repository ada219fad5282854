/* top_exec.c - `carve top` in the carve command: runs lib/carve/carve-top (top.c), so that
 * only `carve top` loads ncurses. Every `carve run` loads what the carve binary links, and
 * in a start-up of 6 ms ncurses cost 0.2-0.4 ms (docs/results/2026-11-23-carved-bench-
 * simulated.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpus.h"

int carve_cmd_top(int argc, char **argv)
{
    char libdir[PATH_MAX], path[PATH_MAX + 16];
    if (carve_find_libdir(libdir, sizeof(libdir)) < 0) {
        fprintf(stderr, "carve top: cannot find carve's libraries; set CARVE_LIBDIR\n");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/carve-top", libdir);
    execv(path, argv);
    fprintf(stderr, "carve top: cannot run %s: %s (build carve with make, or set "
                    "CARVE_LIBDIR to its lib/carve)\n", path, strerror(errno));
    return 1;
}
