/* cleanup.c - carve-slurm-cleanup: lists the Slurm jobs' carve slices on this node and
 * removes those whose steps are all gone. The SPANK plugin already does this at each job's
 * end and when slurmd starts; this is for an Epilog= script, cron, or an admin's look. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "job.h"

#define MAX_JOBS 4096

static const char help[] =
    "usage: carve-slurm-cleanup [--state-dir DIR] [--dry-run] [--json]\n"
    "\n"
    "Lists the carve slices that Slurm jobs have on this node (the SPANK plugin's records)\n"
    "and removes the slices of jobs none of whose steps (slurmstepd) is alive any more.\n"
    "The plugin does the same when a job ends and when slurmd starts; run this from an\n"
    "Epilog= script or by hand after a node's trouble.\n"
    "\n"
    "options:\n"
    "  -d, --state-dir DIR  the plugin's state_dir= (default " CARVE_JOB_STATE_DIR ")\n"
    "  -n, --dry-run        list, remove nothing\n"
    "  -j, --json           one JSON object: {\"jobs\":[{\"job\":N,\"shm\":S,\"carved\":S|null,\n"
    "                       \"memory\":S,\"compute\":S,\"steps\":N,\"live_steps\":N,\n"
    "                       \"removed\":B,\"error\":S|null}]}; memory and compute are the\n"
    "                       slice's on its first GPU (\"-\": none, \"?\": the slice cannot\n"
    "                       be read); error: why the job's record cannot be read\n"
    "  -h, --help           this text\n"
    "\n"
    "Slices that carved holds are deleted through its socket (CARVE_SOCKET, default\n"
    "/run/carve/carved.sock); when carved is not running they stay for a later run.\n"
    "\n"
    "A record that cannot be read (not root, a damaged file) is listed with why, and\n"
    "neither it nor its slice is removed.\n"
    "\n"
    "exit status: 0; 1 when the state directory or a record in it cannot be read; 2 for\n"
    "bad options.\n";

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"state-dir", required_argument, NULL, 'd'}, {"dry-run", no_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},            {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct carve_job_conf conf = {0};
    snprintf(conf.state_dir, sizeof(conf.state_dir), "%s", CARVE_JOB_STATE_DIR);
    bool dry = false, json = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:njh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (strlen(optarg) >= sizeof(conf.state_dir)) {
                fprintf(stderr, "carve-slurm-cleanup: --state-dir is too long\n");
                return 2;
            }
            snprintf(conf.state_dir, sizeof(conf.state_dir), "%s", optarg);
            break;
        case 'n': dry = true; break;
        case 'j': json = true; break;
        case 'h': fputs(help, stdout); return 0;
        case ':':
            fprintf(stderr, "carve-slurm-cleanup: option `%s' needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "carve-slurm-cleanup: unknown option `%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "carve-slurm-cleanup: unexpected argument `%s' (see --help)\n", argv[optind]);
        return 2;
    }
    static struct carve_job_status st[MAX_JOBS];
    char err[512];
    int n = carve_job_sweep(&conf, dry, st, MAX_JOBS, err, sizeof(err));
    if (n < 0) {
        fprintf(stderr, "carve-slurm-cleanup: %s\n", err);
        return 1;
    }
    if (n > MAX_JOBS)
        n = MAX_JOBS;
    int status = 0;
    for (int i = 0; i < n; i++)
        if (st[i].error[0])
            status = 1;
    if (json) {
        json_t *jobs = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(jobs, json_pack("{s:I,s:s,s:s?,s:s,s:s,s:i,s:i,s:b,s:s?}",
                "job", (json_int_t)st[i].job_id, "shm", st[i].shm, "carved",
                st[i].carved[0] ? st[i].carved : NULL, "memory", st[i].memory, "compute",
                st[i].compute, "steps", st[i].steps, "live_steps", st[i].live_steps,
                "removed", st[i].removed, "error", st[i].error[0] ? st[i].error : NULL));
        json_t *root = json_pack("{s:o}", "jobs", jobs);
        json_dumpf(root, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(root);
        return status;
    }
    if (n == 0)
        printf("no Slurm job has a carve slice here (%s)\n", conf.state_dir);
    for (int i = 0; i < n; i++)
        if (st[i].error[0])
            printf("job %-8u record cannot be read: %s\n", st[i].job_id, st[i].error);
        else
            printf("job %-8u %-32s memory %-9s compute %-7s %d/%d steps alive  %s\n",
                   st[i].job_id, st[i].carved[0] ? st[i].carved : st[i].shm, st[i].memory,
                   st[i].compute, st[i].live_steps, st[i].steps,
                   st[i].removed ? "removed" : st[i].live_steps ? "running" :
                   dry ? "would be removed" : "kept (carved is not running)");
    return status;
}
