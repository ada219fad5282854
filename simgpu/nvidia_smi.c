/* nvidia_smi.c - a small nvidia-smi for the simulated GPU. Everything it shows comes through
 * NVML calls, so an interposer in front of libnvidia-ml.so.1 (libcarve) changes what it shows
 * exactly as it would for the real tool. Supports the default table, -L, -i, --query-gpu,
 * --query-compute-apps and --format=csv[,noheader][,nounits]. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carve/nvml_mig_abi.h"

#define MIB (1024ULL * 1024ULL)
#define MAX_PROCS 256

struct opts {
    int only; /* -i, or -1 */
    const char *query_gpu, *query_apps;
    bool csv, header, units;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: nvidia-smi [-L] [-i INDEX] [--query-gpu=FIELDS | "
               "--query-compute-apps=FIELDS] [--format=csv[,noheader][,nounits]]\n"
               "carve's stand-in for nvidia-smi on the simulated GPU.\n"
               "  --query-gpu fields: index, name, uuid, driver_version, memory.total, "
               "memory.used, memory.free, utilization.gpu\n"
               "  --query-compute-apps fields: pid, used_memory, gpu_uuid, process_name\n");
}

static void proc_name(unsigned pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%u/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f))
        snprintf(buf, len, "?");
    if (f)
        fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Prints one field of a GPU; false when the name is unknown. */
static bool gpu_field(nvmlDevice_t d, unsigned idx, const char *field, const struct opts *o,
                      bool header)
{
    char s[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
    nvmlMemory_t m = {0};
    nvmlUtilization_t u = {0};
    const char *unit = o->units ? " MiB" : "";
    if (strcmp(field, "index") == 0)
        header ? printf("index") : printf("%u", idx);
    else if (strcmp(field, "name") == 0)
        header ? printf("name") : (nvmlDeviceGetName(d, s, sizeof(s)), printf("%s", s));
    else if (strcmp(field, "uuid") == 0)
        header ? printf("uuid") : (nvmlDeviceGetUUID(d, s, sizeof(s)), printf("%s", s));
    else if (strcmp(field, "driver_version") == 0)
        header ? printf("driver_version")
               : (nvmlSystemGetDriverVersion(s, sizeof(s)), printf("%s", s));
    else if (strncmp(field, "memory.", 7) == 0) {
        nvmlDeviceGetMemoryInfo(d, &m);
        unsigned long long v = strcmp(field, "memory.total") == 0  ? m.total
                               : strcmp(field, "memory.used") == 0 ? m.used
                               : strcmp(field, "memory.free") == 0 ? m.free
                                                                   : ~0ULL;
        if (v == ~0ULL)
            return false;
        header ? printf("%s%s", field, o->units ? " [MiB]" : "") : printf("%llu%s", v / MIB, unit);
    } else if (strcmp(field, "utilization.gpu") == 0) {
        nvmlDeviceGetUtilizationRates(d, &u);
        header ? printf("utilization.gpu%s", o->units ? " [%]" : "")
               : printf("%u%s", u.gpu, o->units ? " %" : "");
    } else
        return false;
    return true;
}

static int query_fields(nvmlDevice_t d, unsigned idx, const char *fields, const struct opts *o,
                        bool header)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", fields);
    char *save = NULL;
    bool first = true;
    for (char *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (!first)
            printf(", ");
        first = false;
        if (!gpu_field(d, idx, f, o, header)) {
            fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", f);
            return 2;
        }
    }
    printf("\n");
    return 0;
}

static int query_apps(nvmlDevice_t d, const struct opts *o)
{
    nvmlProcessInfo_t infos[MAX_PROCS];
    unsigned n = MAX_PROCS;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    nvmlDeviceGetUUID(d, uuid, sizeof(uuid));
    if (nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos) != NVML_SUCCESS)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        char buf[512], name[64];
        snprintf(buf, sizeof(buf), "%s", o->query_apps);
        char *save = NULL;
        bool first = true;
        for (char *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
            printf("%s", first ? "" : ", ");
            first = false;
            if (strcmp(f, "pid") == 0)
                printf("%u", infos[i].pid);
            else if (strcmp(f, "used_memory") == 0 || strcmp(f, "used_gpu_memory") == 0)
                printf("%llu%s", infos[i].usedGpuMemory / MIB, o->units ? " MiB" : "");
            else if (strcmp(f, "gpu_uuid") == 0)
                printf("%s", uuid);
            else if (strcmp(f, "process_name") == 0)
                proc_name(infos[i].pid, name, sizeof(name)), printf("%s", name);
            else {
                fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", f);
                return 2;
            }
        }
        printf("\n");
    }
    return 0;
}

static void table(unsigned count, const struct opts *o)
{
    char drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    int cuda = 0;
    nvmlSystemGetDriverVersion(drv, sizeof(drv));
    nvmlSystemGetCudaDriverVersion(&cuda);
    printf("+-----------------------------------------------------------------------------+\n");
    printf("| NVIDIA-SMI (carve simulated GPU)  Driver Version: %-10s CUDA Version: %d.%d |\n",
           drv, cuda / 1000, cuda % 1000 / 10);
    printf("|-----------------------------------------------------------------------------|\n");
    printf("| GPU  Name                                  Memory-Usage            GPU-Util |\n");
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t d;
        if ((o->only >= 0 && (int)i != o->only) || nvmlDeviceGetHandleByIndex_v2(i, &d))
            continue;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
        nvmlMemory_t m = {0};
        nvmlUtilization_t u = {0};
        nvmlDeviceGetName(d, name, sizeof(name));
        nvmlDeviceGetMemoryInfo(d, &m);
        nvmlDeviceGetUtilizationRates(d, &u);
        printf("| %3u  %-36.36s %7lluMiB / %7lluMiB %6u%% |\n", i, name, m.used / MIB,
               m.total / MIB, u.gpu);
    }
    printf("+-----------------------------------------------------------------------------+\n");
    printf("| Processes:                                                                  |\n");
    printf("|  GPU        PID   Process name                              GPU Memory Usage |\n");
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t d;
        nvmlProcessInfo_t infos[MAX_PROCS];
        unsigned n = MAX_PROCS;
        if ((o->only >= 0 && (int)i != o->only) || nvmlDeviceGetHandleByIndex_v2(i, &d) ||
            nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos))
            continue;
        for (unsigned k = 0; k < n; k++) {
            char pname[64];
            proc_name(infos[k].pid, pname, sizeof(pname));
            printf("|  %3u  %9u   %-40.40s %10lluMiB |\n", i, infos[k].pid, pname,
                   infos[k].usedGpuMemory / MIB);
        }
    }
    printf("+-----------------------------------------------------------------------------+\n");
}

/* -L's lines for the MIG devices of d, as the real nvidia-smi prints them */
static void list_mig_devices(nvmlDevice_t d)
{
    unsigned max = 0;
    if (nvmlDeviceGetMaxMigDeviceCount(d, &max) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < max; i++) {
        nvmlDevice_t mig;
        char name[160] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        if (nvmlDeviceGetMigDeviceHandleByIndex(d, i, &mig) != NVML_SUCCESS)
            continue;
        nvmlDeviceGetName(mig, name, sizeof(name));
        nvmlDeviceGetUUID(mig, uuid, sizeof(uuid));
        const char *profile = strstr(name, " MIG ");
        printf("  MIG %-11s Device %2u: (UUID: %s)\n", profile ? profile + 5 : "?", i, uuid);
    }
}

static int parse_args(int argc, char **argv, struct opts *o, bool *list)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-L") == 0 || strcmp(a, "--list-gpus") == 0)
            *list = true;
        else if (strcmp(a, "-i") == 0 && i + 1 < argc)
            o->only = atoi(argv[++i]);
        else if (strncmp(a, "--id=", 5) == 0)
            o->only = atoi(a + 5);
        else if (strncmp(a, "--query-gpu=", 12) == 0)
            o->query_gpu = a + 12;
        else if (strncmp(a, "--query-compute-apps=", 21) == 0)
            o->query_apps = a + 21;
        else if (strncmp(a, "--format=", 9) == 0) {
            o->csv = strstr(a, "csv") != NULL;
            o->header = strstr(a, "noheader") == NULL;
            o->units = strstr(a, "nounits") == NULL;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "nvidia-smi: unknown option `%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct opts o = {.only = -1, .header = true, .units = true};
    bool list = false;
    int r = parse_args(argc, argv, &o, &list);
    if (r >= 0)
        return r;
    if (nvmlInit_v2() != NVML_SUCCESS) {
        fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the "
                        "NVIDIA driver.\n");
        return 9;
    }
    unsigned count = 0;
    nvmlDeviceGetCount_v2(&count);
    if (o.query_gpu && o.header)
        query_fields(NULL, 0, o.query_gpu, &o, true);
    if (o.query_apps && o.header)
        printf("%s\n", o.query_apps);
    for (unsigned i = 0; i < count && (list || o.query_gpu || o.query_apps); i++) {
        nvmlDevice_t d;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        if ((o.only >= 0 && (int)i != o.only) || nvmlDeviceGetHandleByIndex_v2(i, &d))
            continue;
        if (list) {
            nvmlDeviceGetName(d, name, sizeof(name));
            nvmlDeviceGetUUID(d, uuid, sizeof(uuid));
            printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
            list_mig_devices(d);
        } else if (o.query_gpu && (r = query_fields(d, i, o.query_gpu, &o, false)))
            return r;
        else if (o.query_apps && (r = query_apps(d, &o)))
            return r;
    }
    if (!list && !o.query_gpu && !o.query_apps)
        table(count, &o);
    nvmlShutdown();
    return 0;
}
