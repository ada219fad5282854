/* fuzz_slurm.c - libFuzzer harness for what the Slurm plugin reads from outside: the
 * values of --gpu-memory and --gpu-compute (from any user, at submit time), a job's record
 * (a file in the plugin's state directory), gres.conf and its hostlists (NodeName=, File=),
 * and Slurm's list of a job's GPUs against NVML's.
 * Any input gets a result or an error message, never a crash; accepted records print back
 * to themselves.
 *
 * The first byte picks the parser; the rest is the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void check_record(const char *text)
{
    struct carve_job_record rec, back;
    char buf[8192];
    if (carve_job_record_parse(text, &rec) != 0)
        return;
    if (rec.nsteps < 0 || rec.nsteps > CARVE_JOB_MAX_STEPS || rec.nboards < 0 ||
        rec.nboards > CARVE_SLICE_MAX_DEVICES)
        abort();
    if (carve_job_record_format(&rec, buf, sizeof(buf)) < 0)
        return; /* too long to print in 8 KiB: the record file holds at most that */
    if (carve_job_record_parse(buf, &back) != 0 || memcmp(&rec, &back, sizeof(rec)) != 0)
        abort();
}

/* "EXPR\nNAME": the name matched against the expression, which is counted; a plain name
 * (no bracket, comma or NUL) matches itself. */
static void check_hostlist(char *text)
{
    char *nl = strchr(text, '\n');
    const char *name = nl ? nl + 1 : text;
    if (nl)
        *nl = '\0';
    bool in = carve_hostlist_match(text, name);
    long n = carve_hostlist_count(text);
    if (n < -1 || n > CARVE_HOSTLIST_MAX)
        abort();
    if (!nl && *text && strlen(text) <= 255 && !strpbrk(text, "[],") && !in)
        abort();
}

/* A job's GPU list against 0-4 GPUs NVML lists (indices 0-3, or 2-5): the job's are some
 * of those, each once, or an error says why. */
static void check_pick(const char *list, size_t len)
{
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    int slurm[CARVE_SLICE_MAX_DEVICES], n = (int)(len % 5);
    char err[512] = "";
    for (int i = 0; i < n; i++)
        gpus[i].index = (unsigned)i + (len % 2 ? 2u : 0u);
    int k = carve_job_pick_gpus(list, gpus, n, n, slurm, err, sizeof(err));
    if (k < 0 ? !err[0] : k > n)
        abort();
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++)
            if (gpus[i].index == gpus[j].index || slurm[i] <= slurm[j])
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 1)
        return 0;
    char *s = malloc(len);
    if (!s)
        return 0;
    memcpy(s, data + 1, len - 1);
    s[len - 1] = '\0';
    char err[512] = "";
    switch (data[0] % 6) {
    case 0:
    case 1:
        if (carve_job_check_option(data[0] % 4 ? "gpu-compute" : "gpu-memory", s, err,
                                   sizeof(err)) != 0 && !err[0])
            abort(); /* every refusal says why */
        break;
    case 2:
        check_record(s);
        break;
    case 3: {
        struct carve_job_gres g;
        carve_job_gres_read(s, "node1", &g);
        if (g.shards > 1000000u || g.gpus > 1000000u)
            abort(); /* the sums stop at a million */
        break;
    }
    case 4:
        check_hostlist(s);
        break;
    default:
        check_pick(s, len);
        break;
    }
    free(s);
    return 0;
}
