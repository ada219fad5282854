/* cli.h - what the carve command's files share: exit codes and the subcommand entry points. */
#ifndef CARVE_CLI_H
#define CARVE_CLI_H

#define CARVE_VERSION "0.1.0"

enum {
    CARVE_EXIT_USAGE = 2,      /* bad input: nothing was run */
    CARVE_EXIT_NOEXEC = 126,   /* the command exists but cannot be run */
    CARVE_EXIT_NOTFOUND = 127, /* the command was not found */
};

int carve_cmd_run(int argc, char **argv);

#endif
