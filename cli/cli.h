/* cli.h - what the carve command's files share: exit codes and the subcommand entry points. */
#ifndef CARVE_CLI_H
#define CARVE_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define CARVE_VERSION "0.1.0"

enum {
    CARVE_EXIT_USAGE = 2,      /* bad input: nothing was run */
    CARVE_EXIT_NOEXEC = 126,   /* the command exists but cannot be run */
    CARVE_EXIT_NOTFOUND = 127, /* the command was not found */
};

/* main's arguments as they came (getopt reorders argv): what the dynamically linked carve is
   given when a command of the static one needs NVML (dynamic_twin.c) */
extern char **carve_argv;

/* The option getopt_long just refused ('?'): `-Z' for a short one, even inside a group such
   as -jZ or -Z10 (where argv[optind - 1] is still the word before it), else the word itself */
const char *carve_bad_option(char **argv);

int carve_cmd_run(int argc, char **argv);
int carve_cmd_slice(int argc, char **argv);
int carve_cmd_ps(int argc, char **argv);
int carve_cmd_plan(int argc, char **argv);
int carve_cmd_advise(int argc, char **argv);
int carve_cmd_cost(int argc, char **argv);
int carve_cmd_mig(int argc, char **argv);
/* carve run --mode mig: the MIG device to run in (instance, or a free one with at least
   memory and compute), among the devices visible names when it is not NULL (the value of
   CUDA_VISIBLE_DEVICES: GPUs and MIG devices); its UUID in uuid and a lock held on it in
   *lock_fd; 0 or an exit status with err. */
int carve_mig_choose(const char *instance, const char *memory, const char *compute,
                     const char *visible, bool simulate, char *uuid, size_t uuidlen,
                     int *lock_fd, char *err, size_t errlen);
/* Lets the MIG device carve_mig_choose locked go. */
void carve_mig_release(int lock_fd);
int carve_cmd_top(int argc, char **argv);
int carve_cmd_doctor(int argc, char **argv);

/* carved's socket (CARVE_SOCKET or /run/carve/carved.sock); a connected fd or -1. */
const char *carve_socket_path(void);
int carve_daemon_connect(void);
/* Sends req (taken) and returns carved's reply when it says ok; else NULL with its error. */
json_t *carve_daemon_call(int fd, json_t *req, char *err, size_t errlen);
/* The same, and a refusal's "code" (board.h's CARVE_REFUSAL_*) into code; "" when carved
 * gave none (most refusals, a carved of before codes, no answer at all). */
json_t *carve_daemon_call_code(int fd, json_t *req, char *err, size_t errlen, char *code,
                               size_t codelen);
/* Whether a carved answers at the socket and runs on the simulated GPU: carve run's modes
 * that find the GPU themselves (mps, mig) then use that GPU too, as the default mode does. */
bool carve_daemon_simulated(void);

#endif
