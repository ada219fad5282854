/* options.c - what the commands share about reading their options, linked into carve and
 * into carve-top (which has no main.c of carve's). */
#include <getopt.h>

#include "cli.h"

const char *carve_bad_option(char **argv)
{
    static char opt[3];
    if (optopt > 0 && optopt < 128) {
        opt[0] = '-';
        opt[1] = (char)optopt;
        return opt;
    }
    return argv[optind - 1];
}
