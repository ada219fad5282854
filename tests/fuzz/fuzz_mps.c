/* fuzz_mps.c - libFuzzer harness for what --mode mps reads: CUDA_VISIBLE_DEVICES (which GPU
 * the client runs on), Slurm's job and step ids (the run directory's name) and the run
 * directory's client list; and the names a job step's end takes for the step's. Any input
 * gets a result or a message, never a crash; a chosen GPU is one of the list, a name is one
 * path component, an accepted client list prints back to itself, and a name taken as a
 * step's is the one carve gives that step's directory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mps.h"

/* a directory name a job step's end reads from the user's directory: one it takes is
 * carve_mps_dir_name's own for the UUID it found, and that UUID is one path component */
static void check_dir_of_step(const char *s)
{
    const char *ids[][2] = {{"4242", "0"}, {"4242", NULL}, {"7", "4294967290"}};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char uuid[96] = "", name[256] = "", err[512] = "";
        if (!carve_mps_dir_of_step(s, ids[i][0], ids[i][1], uuid, sizeof(uuid)))
            continue;
        if (!uuid[0] || strchr(uuid, '/') || strchr(uuid, '.') ||
            carve_mps_dir_name(uuid, ids[i][0], ids[i][1], name, sizeof(name), err,
                               sizeof(err)) < 0 || strcmp(name, s) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static const struct carve_gpu_info gpus[] = {
    {.index = 0, .uuid = "GPU-5a1e0c4a-1000-4e3d-9a7b-c0ffeea00000",
     .name = "sim", .total = 1ULL << 30},
    {.index = 1, .uuid = "GPU-5a1e0c4a-1001-4e3d-9a7b-c0ffeea00001",
     .name = "sim", .total = 1ULL << 30},
    {.index = 2, .uuid = "GPU-77770000-0000-0000-0000-000000000002",
     .name = "sim", .total = 1ULL << 30},
};

static void check_pick(const char *s)
{
    for (int ngpu = 1; ngpu <= 3; ngpu++) {
        char err[512] = "";
        int g = carve_mps_pick_gpu(s, gpus, ngpu, err, sizeof(err));
        if (g < 0 ? !err[0] : g >= ngpu)
            abort(); /* a refusal says why; a choice is one of the GPUs */
    }
}

static void check_clients(const char *s)
{
    struct carve_mps_client c[8], back[8];
    char err[256] = "", text[8 * (1 + CARVE_MPS_CLIENT_PROCS) * 33 + 256];
    int n = carve_mps_clients_parse(s, c, 8, err, sizeof(err));
    if (n < 0) {
        if (!err[0])
            abort();
        return;
    }
    if (n > 8 || carve_mps_clients_format(c, n, text, sizeof(text)) < 0)
        abort();
    if (carve_mps_clients_parse(text, back, 8, err, sizeof(err)) != n)
        abort();
    for (int i = 0; i < n; i++) {
        if (back[i].pid != c[i].pid || back[i].start != c[i].start || c[i].pid <= 0 ||
            back[i].nproc != c[i].nproc || c[i].nproc < 0 || c[i].nproc > CARVE_MPS_CLIENT_PROCS)
            abort();
        for (int k = 0; k < c[i].nproc; k++)
            if (back[i].proc[k].pid != c[i].proc[k].pid ||
                back[i].proc[k].start != c[i].proc[k].start || c[i].proc[k].pid <= 0)
                abort();
    }
}

/* the run directory's name from Slurm's ids: a refusal says why; a name is one path
 * component, never "." or "..", and starts as every run directory's does */
static void check_dir_name(const char *s)
{
    const char *uuid = gpus[0].uuid;
    const char *ids[][2] = {{s, NULL}, {s, "0"}, {"4242", s}};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char name[256] = "", err[512] = "";
        int r = carve_mps_dir_name(uuid, ids[i][0], ids[i][1], name, sizeof(name), err,
                                   sizeof(err));
        if (r < 0 ? !err[0] : strchr(name, '/') || strncmp(name, "mps-GPU-", 8) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *s = strndup((const char *)data, len); /* the parsers read C strings */
    if (!s)
        return 0;
    check_pick(s);
    check_clients(s);
    check_dir_name(s);
    check_dir_of_step(s);
    free(s);
    return 0;
}
