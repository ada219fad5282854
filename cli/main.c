/* main.c - the carve command: a table of subcommands, their one-line descriptions and usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int cmd_help(int argc, char **argv);

static const struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *description;
} subcommands[] = {
    {"run", carve_cmd_run, "run a command in a GPU slice"},
    {"slice", carve_cmd_slice, "make, list and delete carved's slices"},
    {"ps", carve_cmd_ps, "slices, their processes and escapes, as carved sees them"},
    {"mig", carve_cmd_mig, "NVIDIA MIG: profiles, plan a layout, apply it, list instances"},
    {"plan", carve_cmd_plan, "pack workloads onto a fleet under each sharing mechanism"},
    {"advise", carve_cmd_advise, "which sharing mechanism fits a GPU, workload and trust"},
    {"cost", carve_cmd_cost, "what sharing saves: cost per workload-hour, GPU-hours recovered"},
    {"top", carve_cmd_top, "a live terminal view of carved's GPUs, slices and escapes"},
    {"doctor", carve_cmd_doctor, "is this node ready for carve? the driver, GPUs, a slice, carved"},
    {"help", cmd_help, "show help for carve or one of its subcommands"},
};

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: carve <command> [options]\n\n"
               "carve slices one NVIDIA GPU among many workloads.\n\ncommands:\n");
    for (size_t i = 0; i < NSUB; i++)
        fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].description);
    fprintf(f, "\n`carve help <command>` or `carve <command> --help` for a command's options.\n"
               "`carve --version` prints the version.\n");
}

static const struct subcommand *find(const char *name)
{
    for (size_t i = 0; i < NSUB; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return &subcommands[i];
    return NULL;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    const struct subcommand *s = find(argv[1]);
    if (s && s->fn == cmd_help) { /* `carve help help': the help there is, carve's own */
        usage(stdout);
        return 0;
    }
    if (!s) {
        fprintf(stderr, "carve help: no command `%s' (commands:", argv[1]);
        for (size_t i = 0; i < NSUB; i++)
            fprintf(stderr, " %s", subcommands[i].name);
        fprintf(stderr, ")\n");
        return CARVE_EXIT_USAGE;
    }
    char *help_argv[] = {argv[1], "--help", NULL};
    return s->fn(2, help_argv);
}

char **carve_argv;

int main(int argc, char **argv)
{
    carve_argv = calloc((size_t)argc + 1, sizeof(*carve_argv));
    if (!carve_argv) {
        fprintf(stderr, "carve: out of memory\n");
        return CARVE_EXIT_USAGE;
    }
    memcpy(carve_argv, argv, (size_t)argc * sizeof(*argv));
    if (argc < 2) {
        usage(stderr);
        return CARVE_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("carve %s\n", CARVE_VERSION);
        return 0;
    }
    const struct subcommand *s = find(argv[1]);
    if (!s) {
        fprintf(stderr, "carve: unknown command `%s'\n\n", argv[1]);
        usage(stderr);
        return CARVE_EXIT_USAGE;
    }
    return s->fn(argc - 1, argv + 1);
}
