/* job.c - a Slurm job's carve slice on one node: option checks, the job's record, making
 * and removing the slice (standalone or through carved), sweeping what dead jobs left.
 * See job.h. */
#include "job.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "board.h"
#include "proc.h"
#include "cli.h"
#include "gpus.h"
#include "hostlist.h"
#include "size.h"
#include "uuid.h"

#define RECORD_MAX 16384 /* CARVE_JOB_MAX_STEPS step lines of 40 bytes, and the rest */

int carve_job_check_option(const char *option, const char *value, char *err, size_t errlen)
{
    char why[256];
    int r;
    if (!value || !*value) {
        snprintf(err, errlen, "--%s needs a value, e.g. --%s=%s", option, option,
                 strcmp(option, "gpu-memory") == 0 ? "8G" : "25%");
        return -EINVAL;
    }
    if (strcmp(option, "gpu-memory") == 0) {
        struct carve_memory_spec m;
        r = carve_parse_memory_spec(value, &m, why, sizeof(why));
    } else if (strcmp(option, "gpu-compute") == 0) {
        struct carve_compute c;
        r = carve_parse_compute(value, &c, why, sizeof(why));
    } else {
        snprintf(err, errlen, "carve has no option --%s", option);
        return -EINVAL;
    }
    if (r < 0) {
        snprintf(err, errlen, "--%s=%s: %s", option, value, why);
        return -EINVAL;
    }
    return 0;
}

bool carve_job_shard_share(unsigned job_shards, unsigned gpu_shards, struct carve_compute *out)
{
    if (job_shards == 0 || gpu_shards == 0)
        return false;
    uint64_t bp = (uint64_t)job_shards * CARVE_BP_FULL / gpu_shards;
    out->share_bp = (uint32_t)(bp == 0 ? 1 : bp > CARVE_BP_FULL ? CARVE_BP_FULL : bp);
    out->mode = CARVE_COMPUTE_GUARANTEE;
    out->priority = CARVE_PRIO_NORMAL;
    return true;
}

/* The value of KEY= among a gres.conf line's words (case-insensitive key), or NULL. */
static const char *word_value(char *const *words, int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (strncasecmp(words[i], key, k) == 0 && words[i][k] == '=')
            return words[i] + k + 1;
    return NULL;
}

/* A gres.conf count: 0 to a million, or -1. */
static long long gres_count(const char *v)
{
    char *end;
    errno = 0;
    unsigned long long c = v ? strtoull(v, &end, 10) : 0;
    return v && !errno && end != v && !*end && *v != '-' && c <= 1000000 ? (long long)c : -1;
}

void carve_job_gres_read(const char *text, const char *node, struct carve_job_gres *out)
{
    unsigned long long shards = 0, gpus = 0;
    char *copy = strdup(text ? text : ""), *save = NULL;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *words[32], *wsave = NULL;
        int n = 0;
        for (char *w = strtok_r(line, " \t\r", &wsave); w && n < 32; w = strtok_r(NULL, " \t\r", &wsave))
            words[n++] = w;
        const char *name = word_value(words, n, "Name");
        const char *node_names = word_value(words, n, "NodeName");
        bool shard = name && strcasecmp(name, "shard") == 0;
        bool gpu = name && strcasecmp(name, "gpu") == 0;
        if ((!shard && !gpu) || (node_names && !carve_hostlist_match(node_names, node)))
            continue;
        /* a GPU line's devices are its files (File=/dev/nvidia[0-3]: 4), else its Count= */
        long files = gpu ? carve_hostlist_count(word_value(words, n, "File")) : -1;
        long long c = files > 0 ? files : gres_count(word_value(words, n, "Count"));
        if (c < 0)
            continue;
        unsigned long long *sum = shard ? &shards : &gpus;
        *sum += (unsigned long long)c;
        if (*sum > 1000000)
            *sum = 1000000; /* a million is past any real node: keep the sums bounded */
    }
    free(copy);
    out->shards = (unsigned)shards;
    out->gpus = (unsigned)gpus;
}

/* ---- the record ---- */

/* Fields of a record line after its key: exactly n words (at most 127 characters each). */
static int line_words(const char *line, char words[][128], int n)
{
    int got = 0, used = 0;
    const char *p = line + strcspn(line, " \t"); /* past the key */
    while (got <= n) {
        char w[128];
        if (sscanf(p, "%127s%n", w, &used) != 1)
            break;
        if (got < n)
            memcpy(words[got], w, sizeof(w));
        got++;
        p += used;
        if (*p && !strchr(" \t", *p))
            return -1; /* a word of 128 characters or more */
    }
    return got == n ? 0 : -1;
}

static int parse_number(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return s[0] >= '0' && s[0] <= '9' && !errno && !*end && *out <= max ? 0 : -1;
}

int carve_job_record_parse(const char *text, struct carve_job_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    char *copy = strdup(text), *save = NULL;
    int r = copy ? 0 : -ENOMEM;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line && r == 0;
         line = strtok_r(NULL, "\n", &save)) {
        char key[16], w[2][128];
        unsigned long long n1 = 0, n2 = 0;
        line += strspn(line, " \t");
        if (!*line)
            continue;
        size_t klen = strcspn(line, " \t");
        if (klen >= sizeof(key)) {
            r = -EINVAL;
            break;
        }
        memcpy(key, line, klen);
        key[klen] = '\0';
        if (strcmp(key, "carve-slurm") == 0) {
            r = line_words(line, w, 1) == 0 && strcmp(w[0], "1") == 0 ? 0 : -EINVAL;
        } else if (strcmp(key, "shm") == 0) {
            memset(rec->shm, 0, sizeof(rec->shm)); /* the last line counts, nothing of others */
            if (line_words(line, w, 1) < 0 || w[0][0] != '/' || strchr(w[0] + 1, '/') ||
                strlen(w[0]) >= sizeof(rec->shm))
                r = -EINVAL;
            else
                snprintf(rec->shm, sizeof(rec->shm), "%s", w[0]);
        } else if (strcmp(key, "carved") == 0) {
            memset(rec->carved, 0, sizeof(rec->carved));
            if (line_words(line, w, 1) < 0 || (strcmp(w[0], "-") && !carve_slice_name_ok(w[0])))
                r = -EINVAL;
            else if (strcmp(w[0], "-") != 0) /* a good name is shorter than carved[] */
                memcpy(rec->carved, w[0], strlen(w[0]) + 1);
        } else if (strcmp(key, "board") == 0) {
            int e = rec->nboards;
            if (e >= CARVE_SLICE_MAX_DEVICES || line_words(line, w, 2) < 0 ||
                carve_uuid_parse(w[0], rec->boards[e].uuid) < 0 ||
                parse_number(w[1], CARVE_BOARD_ENTRIES - 1, &n1) < 0)
                r = -EINVAL;
            else
                rec->boards[rec->nboards++].entry = (int)n1;
        } else if (strcmp(key, "step") == 0) {
            int s = rec->nsteps;
            if (s >= CARVE_JOB_MAX_STEPS || line_words(line, w, 2) < 0 ||
                parse_number(w[0], INT_MAX, &n1) < 0 || n1 == 0 ||
                parse_number(w[1], UINT64_MAX, &n2) < 0)
                r = -EINVAL;
            else {
                rec->steps[s].pid = (pid_t)n1;
                rec->steps[s].start = n2;
                rec->nsteps++;
            }
        } else {
            r = -EINVAL;
        }
    }
    free(copy);
    return r;
}

int carve_job_record_format(const struct carve_job_record *rec, char *buf, size_t len)
{
    size_t at = 0;
    int n = snprintf(buf, len, "carve-slurm 1\n%s%s%scarved %s\n", rec->shm[0] ? "shm " : "",
                     rec->shm, rec->shm[0] ? "\n" : "", rec->carved[0] ? rec->carved : "-");
    for (int i = 0; n >= 0 && (size_t)n < len - at && i <= rec->nboards + rec->nsteps; i++) {
        at += (size_t)n;
        char uuid[64];
        if (i < rec->nboards) {
            carve_uuid_format(rec->boards[i].uuid, uuid, sizeof(uuid));
            n = snprintf(buf + at, len - at, "board %s %d\n", uuid, rec->boards[i].entry);
        } else if (i < rec->nboards + rec->nsteps) {
            int s = i - rec->nboards;
            n = snprintf(buf + at, len - at, "step %d %" PRIu64 "\n", (int)rec->steps[s].pid,
                         rec->steps[s].start);
        } else {
            n = 0;
        }
    }
    if (n < 0 || (size_t)n >= len - at)
        return -ENOSPC;
    return (int)(at + (size_t)n);
}

/* A zombie is dead (carve_proc_alive_since): a killed slurmstepd, re-parented to an init
 * that does not reap (containers), stays one; a reused pid is not the step. */
static bool step_alive(pid_t pid, uint64_t start)
{
    return carve_proc_alive_since(pid, start) == 1;
}

static int live_steps(const struct carve_job_record *rec)
{
    int n = 0;
    for (int i = 0; i < rec->nsteps; i++)
        n += step_alive(rec->steps[i].pid, rec->steps[i].start);
    return n;
}

/* Drops the steps that are gone, and the one leaving (its pid, 0 for none), from the
 * record; the first entry stays whatever its state while the record lists boards: it holds
 * their entries (it joined them, or they were handed to it), and leave_boards asks whether
 * it lives before leaving them. */
static void prune_steps(struct carve_job_record *rec, pid_t leaving)
{
    int kept = 0;
    for (int i = 0; i < rec->nsteps; i++)
        if ((i == 0 && rec->nboards > 0) ||
            (rec->steps[i].pid != leaving && step_alive(rec->steps[i].pid, rec->steps[i].start)))
            rec->steps[kept++] = rec->steps[i];
    rec->nsteps = kept;
}

static void record_path(const struct carve_job_conf *conf, uint32_t job, char *out, size_t len)
{
    snprintf(out, len, "%s/job-%" PRIu32, conf->state_dir, job);
}

static int make_state_dir(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot make %s: %s", path, strerror(errno));
                return -errno;
            }
            if (!(*p = c))
                break;
        }
    }
    return 0;
}

/* Opens and locks the job's record; a record removed while we waited for the lock is
 * opened again. -ENOENT when there is none and create is false. */
static int record_lock(const struct carve_job_conf *conf, uint32_t job, bool create,
                       char *err, size_t errlen)
{
    char path[PATH_MAX];
    record_path(conf, job, path, sizeof(path));
    if (create && make_state_dir(conf->state_dir, err, errlen) < 0)
        return -EACCES;
    for (;;) {
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
        if (fd < 0) {
            int e = errno;
            if (e != ENOENT || create)
                snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
            return -e;
        }
        struct stat held, now;
        if (flock(fd, LOCK_EX) == 0 && fstat(fd, &held) == 0 && stat(path, &now) == 0 &&
            held.st_ino == now.st_ino && held.st_dev == now.st_dev)
            return fd;
        close(fd);
    }
}

static int record_read(int fd, struct carve_job_record *rec, char *err, size_t errlen)
{
    char text[RECORD_MAX];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    if (n < 0) {
        snprintf(err, errlen, "cannot read the job's record: %s", strerror(errno));
        return -errno;
    }
    text[n] = '\0';
    if (carve_job_record_parse(text, rec) < 0) {
        snprintf(err, errlen, "the job's record is damaged (remove it by hand): %.200s", text);
        return -EINVAL;
    }
    return 0;
}

static int record_write(int fd, const struct carve_job_record *rec, char *err, size_t errlen)
{
    char text[RECORD_MAX];
    int n = carve_job_record_format(rec, text, sizeof(text));
    if (n < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        snprintf(err, errlen, "cannot write the job's record: %s", n < 0 ? "too long" : strerror(errno));
        return -EIO;
    }
    return 0;
}

/* ---- making and removing the slice ---- */

/* Slurm's numbers in list ("2,0,2": 0 2) into out, sorted, each once: how many; 0 when list
 * is NULL, empty or not numbers (UUIDs, say: every GPU is the job's); -1 past max. */
static int slurm_numbers(const char *list, int *out, int max)
{
    if (!list || !*list || strspn(list, "0123456789,") != strlen(list))
        return 0;
    int n = 0;
    for (const char *p = list; *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end != p) {
            int at = 0;
            while (at < n && out[at] < (long)v)
                at++;
            if (at == n || out[at] != (long)v) {
                if (n == max || v > 1000000)
                    return -1;
                memmove(out + at + 1, out + at, (size_t)(n - at) * sizeof(*out));
                out[at] = (int)v;
                n++;
            }
        }
        p = *end ? end + 1 : end;
    }
    return n;
}

static void format_numbers(const int *v, int n, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%s%d", i ? "," : "", v[i]);
}

int carve_job_pick_gpus(const char *list, struct carve_gpu_info *gpus, int n, int counted,
                        int *slurm, char *err, size_t errlen)
{
    int want[CARVE_SLICE_MAX_DEVICES];
    int k = slurm_numbers(list, want, CARVE_SLICE_MAX_DEVICES);
    if (n > CARVE_SLICE_MAX_DEVICES)
        n = CARVE_SLICE_MAX_DEVICES;
    if (k < 0) {
        snprintf(err, errlen, "Slurm gave the job GPUs %.200s on this node, which carve "
                 "cannot take: at most %d GPUs, numbered below a million", list,
                 CARVE_SLICE_MAX_DEVICES);
        return -E2BIG;
    }
    if (k == 0) { /* the job's GPUs are the node's, which NVML numbers as Slurm does */
        for (int i = 0; i < n; i++)
            slurm[i] = (int)gpus[i].index;
        return n;
    }
    /* NVML lists the job's GPUs only (a devices cgroup) when it lists as many as the job
       has: numbered from 0 in the node's order, which is Slurm's */
    bool constrained = counted == k;
    struct carve_gpu_info picked[CARVE_SLICE_MAX_DEVICES];
    for (int j = 0; j < k; j++) {
        int at = constrained ? j : -1;
        for (int i = 0; i < n && at < 0; i++)
            if (gpus[i].index == (unsigned)want[j])
                at = i;
        if (at < 0) {
            char have[256];
            format_numbers(want, k, have, sizeof(have));
            snprintf(err, errlen, "Slurm gave the job GPU%s %s on this node (SLURM_STEP_GPUS "
                     "or SLURM_JOB_GPUS), but NVML lists %d GPU%s here: neither the job's "
                     "alone (as under ConstrainDevices=yes) nor the node's with a GPU %d; "
                     "gres.conf's GPUs must be the node's in NVML's order",
                     k == 1 ? "" : "s", have, n, n == 1 ? "" : "s", want[j]);
            return -ENODEV;
        }
        picked[j] = gpus[at];
        slurm[j] = want[j];
    }
    memcpy(gpus, picked, (size_t)k * sizeof(*gpus));
    return k;
}

/* The job's GPUs on this node as NVML lists them to its tasks, each with Slurm's number. */
struct job_gpus {
    int n;      /* the job's */
    int listed; /* all NVML lists here */
    struct carve_gpu_info gpu[CARVE_SLICE_MAX_DEVICES];
    int slurm[CARVE_SLICE_MAX_DEVICES];
};

static int job_gpus_read(const struct carve_job_conf *conf, const struct carve_job_request *req,
                         struct job_gpus *jg, char *err, size_t errlen)
{
    char nvml[PATH_MAX + 64];
    carve_nvml_path(conf->simulate, conf->libdir, nvml, sizeof(nvml));
    struct carve_driver_info driver;
    int n = carve_gpus_list_driver(nvml, conf->simulate, jg->gpu, CARVE_SLICE_MAX_DEVICES,
                                   &driver, err, errlen);
    if (n < 0)
        return -ENODEV;
    jg->listed = n;
    if ((n = carve_job_pick_gpus(req->gpus, jg->gpu, n, n + driver.nunread, jg->slurm, err,
                                 errlen)) < 0)
        return n;
    if (n == 0) {
        snprintf(err, errlen, "NVML lists no GPU on this node");
        return -ENODEV;
    }
    jg->n = n;
    return 0;
}

/* Which of the job's GPUs has this UUID: its place in jg, or -1. */
static int job_gpu_of_uuid(const struct job_gpus *jg, const uint8_t uuid[16])
{
    for (int k = 0; k < jg->n; k++)
        if (carve_uuid_is(jg->gpu[k].uuid, uuid))
            return k;
    return -1;
}

/* The whole of a text file, at most 1 MiB (a cluster's gres.conf lists every node): a
 * buffer the caller frees, or NULL with the errno text or why in err. */
static char *read_text(const char *path, char *err, size_t errlen)
{
    enum { TEXT_MAX = 1 << 20 };
    FILE *f = fopen(path, "re");
    char *text = f ? malloc(TEXT_MAX + 1) : NULL;
    size_t n = text ? fread(text, 1, TEXT_MAX + 1, f) : 0;
    int e = !f ? errno : !text ? ENOMEM : ferror(f) ? (errno ? errno : EIO) : 0;
    if (f)
        fclose(f);
    if (!e && n > TEXT_MAX) {
        snprintf(err, errlen, "longer than %d bytes", TEXT_MAX);
        free(text);
        return NULL;
    }
    if (e) {
        snprintf(err, errlen, "%s", strerror(e));
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* The GPU's shard count for a job on shards: plugstack.conf's shards_per_gpu, else
 * gres.conf's shard lines for the node (its Slurm name, matched against their NodeName=
 * hostlists) over the node's GPUs: its GPU lines there, else NVML's count, which is the
 * node's where NVML sees them all (a devices cgroup, ConstrainDevices=yes, shows the job's
 * only). A count that cannot be had is an error naming the file and why: the job would
 * otherwise run with none of the share its shards stand for, and a guarantee it gives
 * would go unchecked against them. */
static int gpu_shards(const struct carve_job_conf *conf, const struct carve_job_request *req,
                      const struct job_gpus *jg, unsigned *out, char *err, size_t errlen)
{
    unsigned job_shards = req->job_shards;
    *out = conf->shards_per_gpu;
    if (conf->shards_per_gpu)
        return 0;
    const char *fix = "point plugstack.conf's gres_conf= at the node's gres.conf, or give "
                      "shards_per_gpu=N there (the shard count of one GPU)";
    char why[512];
    char *text = read_text(conf->gres_conf, why, sizeof(why));
    if (!text) {
        snprintf(err, errlen, "cannot read %s (plugstack.conf's gres_conf=) for the shard "
                 "count of a GPU: %s; without it the job's %u shard%s give%s no compute "
                 "share, so its tasks are not started: %s", conf->gres_conf, why, job_shards,
                 job_shards == 1 ? "" : "s", job_shards == 1 ? "s" : "", fix);
        return -EIO;
    }
    char node[256] = "";
    if (req->node && *req->node) {
        snprintf(node, sizeof(node), "%s", req->node);
    } else {
        gethostname(node, sizeof(node) - 1);
        node[strcspn(node, ".")] = '\0';
    }
    struct carve_job_gres gres;
    carve_job_gres_read(text, node, &gres);
    free(text);
    unsigned ngpu = gres.gpus ? gres.gpus : (unsigned)jg->listed;
    *out = ngpu ? gres.shards / ngpu : 0;
    if (*out == 0) {
        snprintf(err, errlen, "%s (plugstack.conf's gres_conf=) has no Name=shard line with "
                 "a Count= of at least one shard a GPU for this node (%s, %u GPU%s); without "
                 "it the job's %u shard%s give%s no compute share, so its tasks are not "
                 "started: %s", conf->gres_conf, node, ngpu, ngpu == 1 ? "" : "s", job_shards,
                 job_shards == 1 ? "" : "s", job_shards == 1 ? "s" : "", fix);
        return -EINVAL;
    }
    return 0;
}

/* The compute settings: the job's --gpu-compute, else its share of the GPU's shards. A
 * guarantee holds room on the GPU's board that other jobs' guarantees are then refused, so
 * it is given only within what Slurm gave the job: no more than its shards' share, and not
 * at all to a job that Slurm gave no GPU and no shard on this node. */
static int job_compute(const struct carve_job_conf *conf, const struct carve_job_request *req,
                       const struct job_gpus *jg, struct carve_compute *c, char *err,
                       size_t errlen)
{
    char why[256];
    unsigned per_gpu = 0;
    int r;
    memset(c, 0, sizeof(*c));
    if (!req->compute) {
        if (req->job_shards && (r = gpu_shards(conf, req, jg, &per_gpu, err, errlen)) < 0)
            return r;
        carve_job_shard_share(req->job_shards, per_gpu, c);
        return 0;
    }
    if (carve_parse_compute(req->compute, c, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--gpu-compute=%s: %s", req->compute, why);
        return -EINVAL;
    }
    if (c->mode != CARVE_COMPUTE_GUARANTEE)
        return 0; /* a cap holds no room: the shards need not be counted */
    if (req->job_shards && (r = gpu_shards(conf, req, jg, &per_gpu, err, errlen)) < 0)
        return r;
    struct carve_compute shards, cap = *c;
    char given[32], as_cap[32];
    cap.mode = CARVE_COMPUTE_CAP;
    carve_format_compute(&cap, as_cap, sizeof(as_cap));
    if (carve_job_shard_share(req->job_shards, per_gpu, &shards) && c->share_bp > shards.share_bp) {
        carve_format_compute(&shards, given, sizeof(given));
        snprintf(err, errlen,
                 "--gpu-compute=%s guarantees more than the job's %u of %u shards of a GPU "
                 "give (%s): ask for more shards (--gres=shard:N), a guarantee of %s at most, "
                 "or a cap (--gpu-compute=%s, which holds no room for the job)",
                 req->compute, req->job_shards, per_gpu, given, given, as_cap);
        return -EINVAL;
    }
    if (!req->job_shards && (!req->gpus || !*req->gpus)) {
        snprintf(err, errlen,
                 "--gpu-compute=%s guarantees GPU time, but Slurm gave the job no GPU and no "
                 "shard on this node (SLURM_STEP_GPUS, SLURM_JOB_GPUS and "
                 "SLURM_SHARDS_ON_NODE are unset): ask for --gres=gpu:N or --gres=shard:N, or "
                 "give a cap (--gpu-compute=%s)", req->compute, as_cap);
        return -EINVAL;
    }
    return 0;
}

static int join_boards(struct carve_slice_spec *spec, struct carve_job_record *rec, pid_t pid,
                       char *err, size_t errlen)
{
    for (int i = 0; i < spec->ndev; i++) {
        const struct carve_compute *c = &spec->dev[i].compute;
        if (c->share_bp == 0 && c->priority == CARVE_PRIO_NORMAL)
            continue;
        struct carve_board *b;
        char why[512];
        /* the plugin runs as root, like carved: the jobs' tenants read shares, never write */
        if (carve_board_join(spec->dev[i].uuid, CARVE_BOARD_MODE_DAEMON, c, spec->name, pid, &b,
                             &spec->dev[i].board_entry, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "GPU %d: %s", spec->dev[i].index, why);
            return -EDQUOT;
        }
        carve_board_close(b);
        memcpy(rec->boards[rec->nboards].uuid, spec->dev[i].uuid, 16);
        rec->boards[rec->nboards++].entry = spec->dev[i].board_entry;
    }
    return 0;
}

/* Leaves the boards, but only while the step that joined them lives: once it is gone the
 * board counts its entry dead and may have handed it to another slice. */
static void leave_boards(const struct carve_job_record *rec)
{
    if (rec->nsteps == 0 || !step_alive(rec->steps[0].pid, rec->steps[0].start))
        return;
    for (int i = 0; i < rec->nboards; i++) {
        struct carve_board *b;
        if (carve_board_attach(rec->boards[i].uuid, &b) == 0)
            carve_board_leave(b, rec->boards[i].entry);
    }
}

/* The job's --gpu-memory for a slice on its GPUs, numbered target[k] for the job's GPU k
 * (NVML's index in the task for the plugin's slice, carved's for carved's): SIZE as it is;
 * IDX=SIZE,... names GPUs by Slurm's numbers (SLURM_STEP_GPUS), turned into target's. 0, or
 * -EINVAL with why: a GPU that is not the job's here. */
static int slice_memory(const char *memory, const struct job_gpus *jg, const int *target,
                        char *out, size_t len, char *err, size_t errlen)
{
    snprintf(out, len, "%s", memory);
    if (!strchr(memory, '='))
        return 0;
    size_t at = 0;
    char *copy = strdup(memory), *save = NULL;
    int r = copy ? 0 : -ENOMEM;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && r == 0;
         t = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long idx = strtoul(t, &end, 10);
        int k = -1;
        for (int i = 0; i < jg->n && *end == '=' && k < 0; i++)
            if ((unsigned long)jg->slurm[i] == idx)
                k = i;
        if (k < 0) {
            char have[256];
            format_numbers(jg->slurm, jg->n, have, sizeof(have));
            snprintf(err, errlen, "--gpu-memory=%s names GPU %.*s, which is not one of the "
                     "job's on this node (Slurm's numbers for them: %s)", memory,
                     (int)(end - t), t, have);
            r = -EINVAL;
        } else if (at < len) {
            at += (size_t)snprintf(out + at, len - at, "%s%d=%s", at ? "," : "", target[k],
                                   end + 1);
        }
    }
    free(copy);
    if (r == 0 && at >= len) {
        snprintf(err, errlen, "--gpu-memory=%.60s...: too long", memory);
        r = -EINVAL;
    }
    return r;
}

static int make_standalone(const struct carve_job_conf *conf, const struct carve_job_request *req,
                           const struct job_gpus *jg, struct carve_job_record *rec, char *err,
                           size_t errlen)
{
    struct carve_compute c;
    struct carve_slice_spec spec;
    char name[CARVE_SLICE_NAME_MAX], memory[CARVE_JOB_OPT_MAX * 2];
    snprintf(name, sizeof(name), "slurm-%" PRIu32, req->job_id);
    char why[512];
    int r = job_compute(conf, req, jg, &c, err, errlen);
    if (r < 0)
        return r;
    int index[CARVE_SLICE_MAX_DEVICES];
    for (int k = 0; k < jg->n; k++)
        index[k] = (int)jg->gpu[k].index;
    if (req->memory &&
        (r = slice_memory(req->memory, jg, index, memory, sizeof(memory), err, errlen)) < 0)
        return r;
    if ((r = carve_spec_build(&spec, name, req->memory ? memory : NULL, &c, jg->gpu, jg->n, why,
                              sizeof(why))) < 0) {
        /* carve_spec_build speaks of carve run's --memory: name the job's option */
        bool ours = strncmp(why, "--memory", 8) == 0;
        snprintf(err, errlen, "%s%s", ours ? "--gpu-" : "", ours ? why + 2 : why);
        return r;
    }
    unsigned rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        rnd = (unsigned)time(NULL) ^ (unsigned)getpid();
    snprintf(rec->shm, sizeof(rec->shm), "/carve.slurm.%" PRIu32 ".%08x", req->job_id, rnd);
    if ((r = join_boards(&spec, rec, req->step_pid, err, errlen)) < 0)
        goto fail;
    struct carve_slice *s;
    if ((r = carve_slice_create(rec->shm, &spec, &s, err, errlen)) < 0)
        goto fail;
    carve_slice_close(s);
    /* the job's processes write the table; the terms stay root's, which libcarve trusts */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/dev/shm%s", rec->shm);
    if (chown(path, req->uid, req->gid) < 0 && geteuid() == 0) {
        snprintf(err, errlen, "cannot give %s to uid %u: %s", path, (unsigned)req->uid, strerror(errno));
        carve_slice_unlink(rec->shm);
        r = -EPERM;
        goto fail;
    }
    return 0;
fail:
    rec->steps[0].pid = req->step_pid; /* leave_boards checks the joiner: it is us */
    rec->steps[0].start = carve_proc_start_time(req->step_pid);
    rec->nsteps = 1;
    leave_boards(rec);
    rec->nsteps = rec->nboards = 0;
    rec->shm[0] = '\0';
    return r;
}

/* carved's index of each of the job's GPUs (by UUID, from its listing) into index: 0, or
 * -ENODEV with why. */
static int carved_indices(const struct job_gpus *jg, int *index, char *err, size_t errlen)
{
    char why[1024];
    int fd = carve_daemon_connect();
    json_t *reply = fd >= 0 ? carve_daemon_call(fd, json_pack("{s:s}", "op", "list"), why,
                                                sizeof(why))
                            : NULL;
    if (fd < 0)
        snprintf(why, sizeof(why), "cannot connect to %s", carve_socket_path());
    else
        close(fd);
    json_t *gpus = json_object_get(json_object_get(reply, "snapshot"), "gpus"), *g;
    int r = 0;
    for (int k = 0; k < jg->n && r == 0; k++) {
        size_t i;
        index[k] = -1;
        json_array_foreach(gpus, i, g) {
            const char *uuid = json_string_value(json_object_get(g, "uuid"));
            /* one carved shows but does not list (NVML did not answer for it at carved's
               start) takes no slice */
            if (uuid && strcasecmp(uuid, jg->gpu[k].uuid) == 0 &&
                !json_is_true(json_object_get(g, "unlisted")) &&
                json_is_integer(json_object_get(g, "index")))
                index[k] = (int)json_integer_value(json_object_get(g, "index"));
        }
        if (index[k] < 0 && reply)
            snprintf(err, errlen, "carved does not list the job's GPU %d (%s), which "
                     "--gpu-memory names", jg->slurm[k], jg->gpu[k].uuid);
        else if (index[k] < 0)
            snprintf(err, errlen, "carved: %s", why);
        r = index[k] < 0 ? -ENODEV : 0;
    }
    json_decref(reply);
    return r;
}

static int make_through_carved(int fd, const struct carve_job_conf *conf,
                               const struct carve_job_request *req, const struct job_gpus *jg,
                               struct carve_job_record *rec, char *err, size_t errlen)
{
    struct carve_compute c;
    char compute[32] = "", memory[CARVE_JOB_OPT_MAX * 2] = "", why[1024];
    int index[CARVE_SLICE_MAX_DEVICES];
    int r = job_compute(conf, req, jg, &c, err, errlen);
    if (r == 0 && req->memory && strchr(req->memory, '=')) /* IDX=SIZE: carved's indices */
        r = carved_indices(jg, index, err, errlen);
    if (r == 0 && req->memory)
        r = slice_memory(req->memory, jg, index, memory, sizeof(memory), err, errlen);
    if (r < 0) {
        close(fd);
        return r;
    }
    if (c.share_bp)
        carve_format_compute(&c, compute, sizeof(compute));
    /* the slice on the job's GPUs alone, by UUID: its cap and share, and the room a
       guarantee holds on a GPU's board, are there and nowhere else */
    json_t *gpus = json_array();
    for (int k = 0; k < jg->n; k++)
        json_array_append_new(gpus, json_string(jg->gpu[k].uuid));
    snprintf(rec->carved, sizeof(rec->carved), "slurm-%" PRIu32, req->job_id);
    /* asked as root (slurmstepd), so root owns it: the job's user must be let in, or its
       tasks were refused the slice and got no GPU context (a review's finding, 2026-11-29:
       the tests ran their carved jobs as root only) */
    json_t *ask = json_pack("{s:s,s:s,s:s?,s:s?,s:o,s:[I]}", "op", "create", "name", rec->carved,
                            "memory", memory[0] ? memory : NULL, "compute",
                            compute[0] ? compute : NULL, "gpus", gpus, "users",
                            (json_int_t)req->uid);
    json_t *reply = carve_daemon_call(fd, json_incref(ask), why, sizeof(why));
    close(fd);
    if (!reply && strstr(why, "exists already") && (fd = carve_daemon_connect()) >= 0) {
        /* left by an earlier run of this job id that no record remembers: ours now */
        json_decref(carve_daemon_call(fd, json_pack("{s:s,s:s}", "op", "delete", "name",
                                                    rec->carved), why, sizeof(why)));
        close(fd);
        if ((fd = carve_daemon_connect()) >= 0) {
            reply = carve_daemon_call(fd, json_incref(ask), why, sizeof(why));
            close(fd);
        }
    }
    json_decref(ask);
    if (!reply) {
        snprintf(err, errlen, "carved: %s", why);
        rec->carved[0] = '\0';
        return -EINVAL;
    }
    snprintf(rec->shm, sizeof(rec->shm), "%s", json_string_value(json_object_get(reply, "shm")) ?: "");
    json_decref(reply);
    return 0;
}

/* Removes the slice a record names: 0, or -EAGAIN when carved holds it and cannot be
 * reached now (the record stays for a later sweep). */
static int destroy_slice(const struct carve_job_record *rec, char *err, size_t errlen)
{
    if (rec->carved[0]) {
        char why[1024];
        int fd = carve_daemon_connect();
        if (fd < 0) {
            snprintf(err, errlen, "carved holds slice %s and is not running; it stays until "
                     "a later sweep", rec->carved);
            return -EAGAIN;
        }
        json_t *r = carve_daemon_call(fd, json_pack("{s:s,s:s}", "op", "delete", "name",
                                                    rec->carved), why, sizeof(why));
        close(fd);
        json_decref(r); /* refused: carved has no such slice any more, which is the goal */
        return 0;
    }
    leave_boards(rec);
    if (rec->shm[0])
        carve_slice_unlink(rec->shm);
    return 0;
}

static bool slice_exists(const struct carve_job_record *rec)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/dev/shm%s", rec->shm);
    return rec->shm[0] && access(path, F_OK) == 0;
}

/* "GPU 0: memory cap 2 GiB, compute 25%+" for each of the slice's GPUs, which are the
 * job's (the plugin's slice, or carved's made on the job's "gpus"). */
static void describe_terms(struct carve_slice *s, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int d = 0; d < carve_slice_ndev(s) && at < len; d++) {
        int index = carve_slice_dev_index(s, d);
        char mem[32] = "no memory cap", cmp[32] = "no compute share";
        struct carve_compute c = carve_slice_compute(s, d);
        if (carve_slice_cap(s, d)) {
            memcpy(mem, "memory cap ", 11);
            carve_format_size(carve_slice_cap(s, d), mem + 11, sizeof(mem) - 11);
        }
        if (c.share_bp) {
            memcpy(cmp, "compute ", 8);
            carve_format_compute(&c, cmp + 8, sizeof(cmp) - 8);
        }
        at += (size_t)snprintf(out + at, len - at, "%sGPU %d: %s, %s", at ? "; " : "", index,
                               mem, cmp);
    }
}

/* Slurm's number for the slice's GPU d, or -1 when it is not one of this step's: by UUID
 * among the job's GPUs where they were read (jg), else its index in the slice. */
static int slice_gpu_number(struct carve_slice *s, int d, const struct job_gpus *jg)
{
    uint8_t uuid[16];
    int k;
    if (jg && carve_slice_dev_uuid(s, d, uuid) == 0)
        return (k = job_gpu_of_uuid(jg, uuid)) >= 0 ? jg->slurm[k] : -1;
    return carve_slice_dev_index(s, d);
}

/* Which of a step's options the job's slice, made by an earlier step with its own, does
 * not hold: the slice is the job's on the node, its terms fixed while steps run in it, so
 * the step runs under them; note says so to the step's user ("" when the slice holds
 * what the step asked, or the step asked nothing). */
static void ignored_options(const struct carve_job_conf *conf, const struct carve_job_record *rec,
                            const struct carve_job_request *req, char *note, size_t len)
{
    struct carve_memory_spec m = {0};
    struct carve_compute want = {0};
    struct carve_slice *s;
    char why[256], terms[512];
    note[0] = '\0';
    bool memory = req->memory && carve_parse_memory_spec(req->memory, &m, why, sizeof(why)) == 0;
    bool compute = req->compute && carve_parse_compute(req->compute, &want, why, sizeof(why)) == 0;
    if ((!memory && !compute) || carve_slice_open(rec->shm, &s, why, sizeof(why)) < 0)
        return;
    /* IDX=SIZE names GPUs by Slurm's numbers: the slice's GPUs are matched to the job's by
       UUID (NVML read again) */
    struct job_gpus jg;
    char why2[512];
    bool read = job_gpus_read(conf, req, &jg, why2, sizeof(why2)) == 0;
    bool mapped = memory && m.per_index_count && read;
    bool memory_differs = false, compute_differs = false, named[CARVE_SPEC_MAX_DEVICES] = {0};
    for (int d = 0; d < carve_slice_ndev(s); d++) {
        int number = slice_gpu_number(s, d, mapped ? &jg : NULL);
        if (number < 0)
            continue;
        bool in_spec = number < CARVE_SPEC_MAX_DEVICES;
        uint64_t cap = m.all ? m.all : in_spec ? m.per_index[number] : 0;
        if (in_spec)
            named[number] = true;
        struct carve_compute c = carve_slice_compute(s, d);
        memory_differs |= memory && cap != carve_slice_cap(s, d);
        compute_differs |= compute && (c.share_bp != want.share_bp || c.mode != want.mode);
    }
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++)
        memory_differs |= memory && m.per_index[i] && !named[i]; /* a GPU the slice lacks */
    /* the step's GPUs the slice is not on: made for an earlier step's GPUs (under salloc,
       a first srun step's GPU 0, and a later one's GPU 1), it caps nothing there, and the
       step ran there uncapped without a word (a review's finding, 2026-11-29) */
    char missing[96] = "";
    int nmissing = 0;
    for (int k = 0; read && k < jg.n; k++) {
        bool held = false;
        uint8_t u[16];
        for (int d = 0; d < carve_slice_ndev(s) && !held; d++)
            held = carve_slice_dev_uuid(s, d, u) == 0 && carve_uuid_is(jg.gpu[k].uuid, u);
        size_t at = strlen(missing);
        if (!held && at + 16 < sizeof(missing))
            snprintf(missing + at, sizeof(missing) - at, "%s%d", nmissing ? "," : "",
                     jg.slurm[k]);
        nmissing += !held;
    }
    if (nmissing)
        snprintf(note, len, "this step's GPU%s %s (Slurm's number%s) %s not in the job's slice "
                 "%s on this node, which an earlier step of the job made for its own GPUs: "
                 "nothing caps this step's memory or compute there (give all the job's GPUs "
                 "to the job's first step on the node, or run the steps as separate jobs)",
                 nmissing == 1 ? "" : "s", missing, nmissing == 1 ? "" : "s",
                 nmissing == 1 ? "is" : "are", carve_slice_name(s));
    else if (memory_differs || compute_differs) {
        describe_terms(s, terms, sizeof(terms));
        snprintf(note, len, "this step's %s%s%s%s%s %s not applied: the job's slice %s on "
                 "this node was made by an earlier step of the job and holds %s; every step "
                 "of the job on the node runs in it, under the terms it was made with, until "
                 "the last one ends (give the options to sbatch or salloc, or to the job's "
                 "first step)", memory_differs ? "--gpu-memory=" : "",
                 memory_differs ? req->memory : "", memory_differs && compute_differs ? " and " : "",
                 compute_differs ? "--gpu-compute=" : "", compute_differs ? req->compute : "",
                 memory_differs && compute_differs ? "are" : "is", carve_slice_name(s),
                 terms[0] ? terms : "none of the job's GPUs");
    }
    carve_slice_close(s);
}

/* The boards' entries of steps[0] go to steps[heir], which becomes the record's first (the
 * holder, as leave_boards knows it). */
static void hand_over_boards(struct carve_job_record *rec, int heir)
{
    int kept = 0;
    for (int i = 0; i < rec->nboards; i++) {
        struct carve_board *b;
        if (carve_board_attach(rec->boards[i].uuid, &b) < 0)
            continue;
        /* an entry not handed over is another slice's, or dies with the step leaving: never
           left later (the heir gone meanwhile: the room goes, as it did before) */
        if (carve_board_hand_over(b, rec->boards[i].entry, rec->steps[0].pid,
                                  rec->steps[0].start, rec->steps[heir].pid,
                                  rec->steps[heir].start) == 0)
            rec->boards[kept++] = rec->boards[i];
        carve_board_close(b);
    }
    rec->nboards = kept;
    __typeof__(rec->steps[0]) first = rec->steps[0];
    rec->steps[0] = rec->steps[heir];
    rec->steps[heir] = first; /* pruned next, as the step leaving */
}

/* The boards' entries stay with a step that runs: when the step holding them (steps[0])
 * leaves, or has died before its exit hook (killed), they go to the first other step that
 * runs. The boards counted them dead once that step ended, and the job's guarantee held no
 * room for its steps still running: the next joiner took the place. */
static void keep_boards_held(struct carve_job_record *rec, pid_t leaving)
{
    if (rec->nboards == 0 || rec->nsteps == 0 ||
        (rec->steps[0].pid != leaving && step_alive(rec->steps[0].pid, rec->steps[0].start)))
        return;
    for (int i = 1; i < rec->nsteps; i++)
        if (rec->steps[i].pid != leaving && step_alive(rec->steps[i].pid, rec->steps[i].start)) {
            hand_over_boards(rec, i);
            return;
        }
}

int carve_job_enter(const struct carve_job_conf *conf, const struct carve_job_request *req,
                    char *shm, size_t shmlen, char *err, size_t errlen)
{
    err[0] = '\0';
    int fd = record_lock(conf, req->job_id, true, err, errlen);
    if (fd < 0)
        return fd;
    char path[PATH_MAX];
    record_path(conf, req->job_id, path, sizeof(path));
    struct carve_job_record rec;
    int r = record_read(fd, &rec, err, errlen);
    if (r < 0)
        goto out;
    bool asked = req->memory || req->compute || req->job_shards, made = false;
    if (!slice_exists(&rec)) {
        made = true;
        if (!asked && rec.nsteps == 0) {
            unlink(path);
            r = 0;
            goto out;
        }
        if (rec.shm[0])
            destroy_slice(&rec, err, errlen); /* what is left of a slice gone astray */
        memset(&rec, 0, sizeof(rec));
        struct job_gpus jg;
        if ((r = job_gpus_read(conf, req, &jg, err, errlen)) < 0) {
            unlink(path);
            goto out;
        }
        int dfd = carve_daemon_connect();
        if (dfd < 0 && errno != ENOENT && errno != ECONNREFUSED) {
            /* carved is there but does not answer (its backlog full, stopped): a slice made
               without it would be refused to the tasks once it answers, since carved has
               no such slice (a review's finding, 2026-11-29) */
            snprintf(err, errlen, "carved at %s does not answer (%s): the step cannot get "
                     "its slice; see carved's log (systemctl status carved)",
                     carve_socket_path(), strerror(errno));
            r = -EAGAIN;
            unlink(path);
            goto out;
        }
        r = dfd >= 0 ? make_through_carved(dfd, conf, req, &jg, &rec, err, errlen)
                     : make_standalone(conf, req, &jg, &rec, err, errlen);
        if (r < 0) {
            unlink(path);
            goto out;
        }
    }
    keep_boards_held(&rec, 0); /* a holder that died: its place in the record is free */
    prune_steps(&rec, 0);
    /* by pid and start time: a step that has the pid of a dead one listed is another (by
       pid alone it went unlisted, and the listed steps' ends removed the slice under it) */
    uint64_t start = carve_proc_start_time(req->step_pid);
    bool listed = false;
    for (int i = 0; i < rec.nsteps; i++)
        listed |= rec.steps[i].pid == req->step_pid &&
                  (rec.steps[i].start == start || !rec.steps[i].start || !start);
    if (!listed && rec.nsteps >= CARVE_JOB_MAX_STEPS) {
        /* an unlisted step does not keep the slice: the listed ones' ends would remove it
           while this one still runs in it */
        snprintf(err, errlen, "%d steps of job %" PRIu32 " run on this node already, as many "
                 "as carve's record of a job lists: run fewer steps of the job at once "
                 "(srun ... &)", rec.nsteps, req->job_id);
        r = -EMFILE;
        goto out;
    }
    if (!listed && !made)
        ignored_options(conf, &rec, req, err, errlen); /* once a step: its first task says it */
    if (!listed) {
        rec.steps[rec.nsteps].pid = req->step_pid;
        rec.steps[rec.nsteps++].start = start;
    }
    keep_boards_held(&rec, 0); /* again: to this step, where it is the only one that runs */
    prune_steps(&rec, 0);
    if ((r = record_write(fd, &rec, err, errlen)) == 0) { /* err keeps the note */
        snprintf(shm, shmlen, "%s", rec.shm);
        r = 1;
    }
out:
    close(fd);
    return r;
}

/* Removes the slice and the record (the caller holds fd's lock). */
static int finish(const struct carve_job_conf *conf, uint32_t job, int fd,
                  const struct carve_job_record *rec, char *err, size_t errlen)
{
    int r = destroy_slice(rec, err, errlen);
    if (r == 0) {
        char path[PATH_MAX];
        record_path(conf, job, path, sizeof(path));
        unlink(path);
    }
    close(fd);
    return r;
}

int carve_job_leave(const struct carve_job_conf *conf, uint32_t job_id, pid_t step_pid,
                    char *err, size_t errlen)
{
    int fd = record_lock(conf, job_id, false, err, errlen);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    struct carve_job_record rec;
    int r = record_read(fd, &rec, err, errlen);
    if (r < 0) {
        close(fd);
        return r;
    }
    int live = 0;
    for (int i = 0; i < rec.nsteps; i++)
        if (rec.steps[i].pid != step_pid && step_alive(rec.steps[i].pid, rec.steps[i].start))
            live++;
    if (live == 0)
        return finish(conf, job_id, fd, &rec, err, errlen);
    keep_boards_held(&rec, step_pid);
    prune_steps(&rec, step_pid);
    r = record_write(fd, &rec, err, errlen);
    close(fd);
    return r;
}

int carve_job_remove(const struct carve_job_conf *conf, uint32_t job_id, char *err, size_t errlen)
{
    int fd = record_lock(conf, job_id, false, err, errlen);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    struct carve_job_record rec;
    int r = record_read(fd, &rec, err, errlen);
    if (r < 0) {
        close(fd);
        return r;
    }
    return finish(conf, job_id, fd, &rec, err, errlen);
}

/* The slice's cap and share on its first GPU, for listings. */
static void describe(const struct carve_job_record *rec, struct carve_job_status *st)
{
    struct carve_slice *s;
    char err[256];
    snprintf(st->memory, sizeof(st->memory), "?");
    snprintf(st->compute, sizeof(st->compute), "?");
    if (!rec->shm[0] || carve_slice_open(rec->shm, &s, err, sizeof(err)) < 0)
        return;
    if (carve_slice_ndev(s) > 0) {
        struct carve_compute c = carve_slice_compute(s, 0);
        uint64_t cap = carve_slice_cap(s, 0);
        if (cap)
            carve_format_size(cap, st->memory, sizeof(st->memory));
        else
            snprintf(st->memory, sizeof(st->memory), "-");
        if (c.share_bp)
            carve_format_compute(&c, st->compute, sizeof(st->compute));
        else
            snprintf(st->compute, sizeof(st->compute), "-");
    }
    carve_slice_close(s);
}

int carve_job_sweep(const struct carve_job_conf *conf, bool dry_run,
                    struct carve_job_status *out, int max, char *err, size_t errlen)
{
    DIR *dir = opendir(conf->state_dir);
    if (!dir) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", conf->state_dir, strerror(errno));
        return -errno;
    }
    int count = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char *end;
        if (strncmp(de->d_name, "job-", 4) != 0 || !isdigit((unsigned char)de->d_name[4]))
            continue;
        unsigned long job = strtoul(de->d_name + 4, &end, 10);
        if (*end || job > UINT32_MAX)
            continue;
        char why[512], path[PATH_MAX];
        struct carve_job_status st = {.job_id = (uint32_t)job, .memory = "?", .compute = "?"};
        struct carve_job_record rec;
        int fd = record_lock(conf, (uint32_t)job, false, why, sizeof(why)), r = 0;
        if (fd == -ENOENT)
            continue; /* removed since readdir: its job ended */
        if (fd >= 0 && (r = record_read(fd, &rec, why, sizeof(why))) == -EINVAL) {
            /* not the text record_read puts in why: the listing is one line a record */
            record_path(conf, (uint32_t)job, path, sizeof(path));
            snprintf(why, sizeof(why), "%.300s is damaged (a write cut short?): its slice "
                     "stays; remove the slice it names (/dev/shm/carve.slurm.%lu.*, or "
                     "carved's slurm-%lu) and the file by hand", path, job, job);
        }
        if (fd < 0 || r < 0) {
            /* listed, not skipped: an admin's look must not say "no slice" over it */
            if (fd >= 0)
                close(fd);
            snprintf(st.error, sizeof(st.error), "%s", why);
            if (count < max)
                out[count] = st;
            count++;
            continue;
        }
        st.steps = rec.nsteps;
        st.live_steps = live_steps(&rec);
        snprintf(st.shm, sizeof(st.shm), "%s", rec.shm);
        describe(&rec, &st);
        snprintf(st.carved, sizeof(st.carved), "%s", rec.carved);
        if (st.live_steps == 0 && !dry_run)
            st.removed = finish(conf, (uint32_t)job, fd, &rec, why, sizeof(why)) == 0;
        else
            close(fd);
        if (count < max)
            out[count] = st;
        count++;
    }
    closedir(dir);
    return count;
}
