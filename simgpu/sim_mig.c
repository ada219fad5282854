/* sim_mig.c - the simulated GPU's MIG instances in a small text file with one line per GPU
 * instance ("dev gi profile-id start ci uuid"), read and rewritten under flock; see sim_mig.h. */
#include "sim_mig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "simdev.h"

const struct mig_model *sim_mig_model(void)
{
    const char *m = getenv("CARVE_SIM_MODEL");
    if (m && *m)
        return mig_model_find(m);
    return mig_model_find(sim_config()->name);
}

static void mig_path(char *buf, size_t len)
{
    snprintf(buf, len, "%s.mig", sim_config()->state_path);
}

static int parse(FILE *f, struct sim_mig_gi *out, int max)
{
    int n = 0;
    char line[256];
    while (n < max && fgets(line, sizeof(line), f)) {
        struct sim_mig_gi g = {0};
        if (sscanf(line, "%d %u %u %u %d %47s", &g.dev, &g.gi, &g.nvml_id, &g.start, &g.ci,
                   g.uuid) < 5)
            continue;
        if (strcmp(g.uuid, "-") == 0)
            g.uuid[0] = '\0';
        out[n++] = g;
    }
    return n;
}

int sim_mig_load(struct sim_mig_gi *out, int max)
{
    char path[300];
    mig_path(path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    flock(fd, LOCK_SH);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return 0;
    }
    int n = parse(f, out, max);
    fclose(f); /* drops the lock */
    return n;
}

int sim_mig_update(int (*change)(struct sim_mig_gi *list, int *n, void *arg), void *arg)
{
    char path[300];
    mig_path(path, sizeof(path));
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "carve simulated GPU: cannot open %s: %s\n", path, strerror(errno));
        return NVML_ERROR_UNKNOWN;
    }
    flock(fd, LOCK_EX);
    FILE *f = fdopen(fd, "r+");
    if (!f) {
        close(fd);
        return NVML_ERROR_UNKNOWN;
    }
    struct sim_mig_gi list[SIM_MIG_MAX];
    int n = parse(f, list, SIM_MIG_MAX);
    int r = change(list, &n, arg);
    if (r == NVML_SUCCESS) {
        rewind(f);
        if (ftruncate(fd, 0) < 0)
            r = NVML_ERROR_UNKNOWN;
        for (int i = 0; i < n && r == NVML_SUCCESS; i++)
            fprintf(f, "%d %u %u %u %d %s\n", list[i].dev, list[i].gi, list[i].nvml_id,
                    list[i].start, list[i].ci, list[i].uuid[0] ? list[i].uuid : "-");
        if (fflush(f) != 0)
            r = NVML_ERROR_UNKNOWN;
    }
    fclose(f);
    return r;
}

bool sim_mig_find_uuid(const char *uuid, struct sim_mig_gi *out)
{
    struct sim_mig_gi list[SIM_MIG_MAX];
    int n = sim_mig_load(list, SIM_MIG_MAX);
    for (int i = 0; i < n; i++)
        if (list[i].uuid[0] && strcmp(list[i].uuid, uuid) == 0) {
            *out = list[i];
            return true;
        }
    return false;
}
