/* cli.h - what the carve command's files share: exit codes and the subcommand entry points. */
#ifndef CARVE_CLI_H
#define CARVE_CLI_H

#include <stddef.h>

#include <jansson.h>

#define CARVE_VERSION "0.1.0"

enum {
    CARVE_EXIT_USAGE = 2,      /* bad input: nothing was run */
    CARVE_EXIT_NOEXEC = 126,   /* the command exists but cannot be run */
    CARVE_EXIT_NOTFOUND = 127, /* the command was not found */
};

int carve_cmd_run(int argc, char **argv);
int carve_cmd_slice(int argc, char **argv);
int carve_cmd_ps(int argc, char **argv);
int carve_cmd_top(int argc, char **argv);

/* carved's socket (CARVE_SOCKET or /run/carve/carved.sock); a connected fd or -1. */
const char *carve_socket_path(void);
int carve_daemon_connect(void);
/* Sends req (taken) and returns carved's reply when it says ok; else NULL with its error. */
json_t *carve_daemon_call(int fd, json_t *req, char *err, size_t errlen);

#endif
