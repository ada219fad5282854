/* options.c - what the commands share about reading their options, linked into carve and
 * into carve-top (which has no main.c of carve's). */
#include <getopt.h>

#include "cli.h"

/* The unknown option as the user typed it. getopt leaves optind on the word while more letters
 * follow in it, so argv[optind - 1] is the word before; a byte past ASCII arrives in optopt
 * as a negative char (-\xff in `-\xff\xfe' named the option before it). */
const char *carve_bad_option(char **argv)
{
    static char opt[3];
    if (optopt != 0) {
        opt[0] = '-';
        opt[1] = (char)optopt;
        return opt;
    }
    return argv[optind - 1];
}
