/* mps.c - MPS clients for carve: GPU choice, client variables, the run directory and the
 * flock-guarded list of live clients; see mps.h. */
#include "mps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "slice.h"

#define MIB (1024ULL * 1024ULL)

/* ---------- choosing the GPU ---------- */

/* The GPU whose NVML index visible names: its place in gpus, which leaves out the GPUs NVML
 * does not answer for (it took the place for the index until 2026-11-29, so that with GPU 3
 * lost CUDA_VISIBLE_DEVICES=5 ran on GPU 6; a review's finding). */
static int pick_by_index(const char *visible, const struct carve_gpu_info *gpus, int ngpu,
                         char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(visible, &end, 10);
    for (int i = 0; !errno && !*end && v >= 0 && i < ngpu; i++)
        if (gpus[i].index == (unsigned long)v)
            return i;
    if (!errno && !*end && v >= 0 && v < (long)gpus[ngpu - 1].index)
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s: NVML does not answer for GPU %ld "
                 "(lost? carve doctor says)", visible, v);
    else if (gpus[ngpu - 1].index + 1 == (unsigned)ngpu)
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s: this machine has %d GPU%s (%s%d)",
                 visible, ngpu, ngpu == 1 ? "" : "s", ngpu == 1 ? "" : "0-", ngpu - 1);
    else
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s: NVML answers for %d GPU%s of this "
                 "machine, GPU %u the last", visible, ngpu, ngpu == 1 ? "" : "s",
                 gpus[ngpu - 1].index);
    return -EINVAL;
}

static int pick_by_uuid(const char *visible, const struct carve_gpu_info *gpus, int ngpu,
                        char *err, size_t errlen)
{
    int found = -1, matches = 0;
    for (int i = 0; i < ngpu; i++)
        if (strncmp(gpus[i].uuid, visible, strlen(visible)) == 0) {
            found = i;
            matches++;
        }
    if (matches == 1)
        return found;
    if (matches == 0)
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s names no GPU of this machine "
                              "(nvidia-smi -L lists their UUIDs)", visible);
    else
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s matches %d GPUs: give more of the UUID",
                 visible, matches);
    return -EINVAL;
}

int carve_mps_pick_gpu(const char *visible, const struct carve_gpu_info *gpus, int ngpu,
                       char *err, size_t errlen)
{
    if (ngpu < 1) {
        snprintf(err, errlen, "no GPU to run on");
        return -EINVAL;
    }
    if (!visible) {
        if (ngpu == 1)
            return 0;
        snprintf(err, errlen, "--mode mps runs COMMAND on one GPU (one MPS daemon per GPU), and "
                              "this machine has %d (0-%d): choose one with "
                              "CUDA_VISIBLE_DEVICES=INDEX or its UUID", ngpu, ngpu - 1);
        return -EINVAL;
    }
    if (!*visible) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES is empty, which hides every GPU: unset it "
                              "or name one GPU");
        return -EINVAL;
    }
    if (strchr(visible, ',')) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s names more than one GPU; --mode mps runs "
                              "COMMAND on one (one MPS daemon per GPU): name one", visible);
        return -EINVAL;
    }
    if (visible[0] >= '0' && visible[0] <= '9')
        return pick_by_index(visible, gpus, ngpu, err, errlen);
    if (strncmp(visible, "MIG-", 4) == 0) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s is a MIG device; --mode mps serves whole "
                              "GPUs", visible);
        return -EINVAL;
    }
    if (strncmp(visible, "GPU-", 4) == 0 && visible[4])
        return pick_by_uuid(visible, gpus, ngpu, err, errlen);
    snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%s is neither a GPU index (0, 1, ...) nor a GPU "
                          "UUID (GPU-...)", visible);
    return -EINVAL;
}

/* ---------- client variables ---------- */

int carve_mps_thread_percentage(const struct carve_compute *c, char *buf, size_t len, char *err,
                                size_t errlen)
{
    char given[32];
    carve_format_compute(c, given, sizeof(given));
    if (c->mode == CARVE_COMPUTE_GUARANTEE) {
        snprintf(err, errlen, "--mode mps: --compute %s asks for a guarantee, and MPS can only "
                              "limit a client's threads: give a limit (`%.*s') or use --mode "
                              "carve", given, (int)(strlen(given) - 1), given);
        return -EINVAL;
    }
    if (c->share_bp == 0 || c->share_bp % 100 != 0) {
        snprintf(err, errlen, "--mode mps: --compute %s is not a whole percentage; MPS takes "
                              "1%% to 100%% in steps of 1", given);
        return -EINVAL;
    }
    snprintf(buf, len, "%u", c->share_bp / 100);
    return 0;
}

void carve_mps_mem_limit(uint64_t cap, char *buf, size_t len)
{
    uint64_t mib = cap / MIB;
    snprintf(buf, len, "0=%lluM", (unsigned long long)(mib ? mib : 1));
}

/* ---------- the run directory ---------- */

/* "alice (uid 1000)", or "uid 1000" for a uid /etc/passwd does not name, for messages. Read
 * by hand: bin/carve may be linked statically, where getpwuid's NSS modules cannot load. */
static void user_name(uid_t uid, char *out, size_t len)
{
    snprintf(out, len, "uid %u", (unsigned)uid);
    FILE *f = fopen("/etc/passwd", "re");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char *name = line, *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c1 == line)
            continue;
        char *end;
        errno = 0;
        unsigned long u = strtoul(c2 + 1, &end, 10);
        if (errno || end == c2 + 1 || *end != ':' || u != (unsigned long)uid)
            continue;
        *c1 = '\0';
        snprintf(out, len, "%.64s (uid %u)", name, (unsigned)uid);
        break;
    }
    fclose(f);
}

/* Makes path (mode 0700) unless it exists (with create; without, a missing one is -ENOENT);
 * either way it must be a directory of ours that no one else may write. */
static int own_dir(const char *path, bool create, char *err, size_t errlen)
{
    char who[128], me[128];
    if (create && mkdir(path, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make %s: %s", path, strerror(errno));
        return -errno;
    }
    struct stat st;
    if (lstat(path, &st) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory (a symbolic link or a file): carve keeps "
                              "the MPS daemon's pipes there; remove it, or set CARVE_MPS_DIR to "
                              "another place", path);
        return -EPERM;
    }
    if (st.st_uid != geteuid()) {
        /* another user's daemon lives there: its pipes and client list are not ours to use
         * or stop, and "remove it" is not advice they can take */
        user_name(st.st_uid, who, sizeof(who));
        user_name(geteuid(), me, sizeof(me));
        snprintf(err, errlen, "%s belongs to %s, not to you, %s: each user's MPS daemon has "
                              "a directory of its own; set CARVE_MPS_DIR to a directory of "
                              "yours", path, who, me);
        return -EPERM;
    }
    if (st.st_mode & 022) {
        snprintf(err, errlen, "%s may be written by others (mode %03o): others could replace "
                              "the MPS daemon's pipes; chmod 700 it, or set CARVE_MPS_DIR to "
                              "another place", path, (unsigned)(st.st_mode & 0777));
        return -EPERM;
    }
    return 0;
}

/* Whether $XDG_RUNTIME_DIR (v) can hold the user's run directories: an absolute path to a
 * directory (not a link) of the user's that no one else may write, as the XDG spec has
 * it. srun and sbatch pass on the submitting shell's value, which names the login node's
 * /run/user/UID: on a compute node it may not exist, or be another user's; and root with a
 * user's environment (sudo -E) would put its directories in the user's. */
static int runtime_dir_usable(const char *v)
{
    struct stat st;
    return v && v[0] == '/' && lstat(v, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && !(st.st_mode & 022);
}

int carve_mps_run_base(char *out, size_t len)
{
    const char *v = getenv("CARVE_MPS_DIR"), *job = getenv("SLURM_JOB_ID");
    if (v && *v)
        return snprintf(out, len, "%s", v);
    /* not in a Slurm job: logind removes /run/user/UID at the user's last logout on the
       node, taking the pipes of a daemon that a job's step still uses with it */
    v = getenv("XDG_RUNTIME_DIR");
    if (!(job && *job) && runtime_dir_usable(v))
        return snprintf(out, len, "%s/carve", v);
    if (geteuid() == 0)
        return snprintf(out, len, "/run/carve");
    return snprintf(out, len, "/tmp/carve-%u", (unsigned)geteuid());
}

/* The directory of this user's run directories in base: base itself when it is ours and no
 * one else may write it, else base/UID, so that users who share a base (CARVE_MPS_DIR=/tmp/mps
 * for a group, /run/carve) each get their own daemons and never reach or stop another's.
 * The choice depends on base only, not on who came first, so a user's runs always meet in
 * the same place. Without create, nothing is made: -ENOENT when it does not exist. */
static int user_dir(const char *base, bool create, char *out, size_t len, char *err,
                    size_t errlen)
{
    struct stat st;
    if (stat(base, &st) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s: %s", base, strerror(e));
        if (e != ENOENT || !create)
            return -e;
        snprintf(out, len, "%s", base);
        return own_dir(base, true, err, errlen);
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "CARVE_MPS_DIR: %s is not a directory", base);
        return -ENOTDIR;
    }
    if (st.st_uid == geteuid() && !(st.st_mode & 022)) {
        snprintf(out, len, "%s", base);
        return 0;
    }
    /* others may write it: only its sticky bit (as /tmp has) keeps them from swapping our
     * entry for theirs */
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, errlen, "%s may be written by others (mode %03o, no sticky bit), who "
                              "could replace your MPS daemon's directory: to share it, chmod "
                              "+t it (as /tmp is); else set CARVE_MPS_DIR to a directory of "
                              "yours", base, (unsigned)(st.st_mode & 07777));
        return -EPERM;
    }
    if (snprintf(out, len, "%s/%u", base, (unsigned)geteuid()) >= (int)len) {
        snprintf(err, errlen, "the MPS run directory's path is too long: %s/%u", base,
                 (unsigned)geteuid());
        return -ENAMETOOLONG;
    }
    if (create && mkdir(out, 0700) < 0 && (errno == EACCES || errno == EROFS)) {
        char who[128];
        user_name(st.st_uid, who, sizeof(who));
        snprintf(err, errlen, "%s belongs to %s, mode %03o, and you cannot make your directory "
                              "%s in it: set CARVE_MPS_DIR to a directory of yours, or have it "
                              "made shared (chmod 1777, or group-writable with the sticky bit)",
                 base, who, (unsigned)(st.st_mode & 07777), out);
        return -EPERM;
    }
    return own_dir(out, create, err, errlen);
}

/* Whether s is a number as Slurm writes its ids: 1 to 10 digits. */
static int slurm_id(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n > 0 && n <= 10 && s[n] == '\0';
}

/* Whether the n characters at uuid are all ones carve puts in a path: letters, digits, '-'. */
static bool path_safe(const char *uuid, size_t n)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
    for (size_t i = 0; i < n; i++)
        if (!uuid[i] || !strchr(ok, uuid[i]))
            return false;
    return true;
}

int carve_mps_dir_name(const char *uuid, const char *job, const char *step, char *out,
                       size_t len, char *err, size_t errlen)
{
    if (!path_safe(uuid, strlen(uuid))) {
        snprintf(err, errlen, "GPU UUID `%s' has a character carve does not put in a path",
                 uuid);
        return -EINVAL;
    }
    int w;
    if (!job || !*job) {
        w = snprintf(out, len, "mps-%s", uuid);
    } else {
        int batch = !step || !*step;
        const char *var = "SLURM_JOB_ID", *val = job;
        if (slurm_id(job)) {
            var = "SLURM_STEP_ID";
            val = batch || slurm_id(step) ? NULL : step;
        }
        if (val) {
            snprintf(err, errlen, "%s=`%.40s' is not a Slurm id (a number): --mode mps gives "
                                  "each job step a daemon of its own by its job and step ids",
                     var, val);
            return -EINVAL;
        }
        w = batch ? snprintf(out, len, "mps-%s-j%s", uuid, job)
                  : snprintf(out, len, "mps-%s-j%s.%s", uuid, job, step);
    }
    if (w < 0 || (size_t)w >= len) {
        snprintf(err, errlen, "the MPS run directory's name is too long: mps-%.100s", uuid);
        return -ENAMETOOLONG;
    }
    return 0;
}

/* A base carve chose itself (no CARVE_MPS_DIR) must be the user's own directory when it
 * exists: not a link, nor another user's. /tmp/carve-UID is a name anyone can take first,
 * and would then hold the user's daemons in a directory of theirs (a link: anywhere). */
static int chosen_base_ok(const char *base, char *err, size_t errlen)
{
    struct stat st;
    char who[128], me[128];
    if (lstat(base, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", base, strerror(errno));
        return -errno;
    }
    if (S_ISDIR(st.st_mode) && st.st_uid == geteuid())
        return 0;
    user_name(st.st_uid, who, sizeof(who));
    user_name(geteuid(), me, sizeof(me));
    snprintf(err, errlen, "%s, where carve keeps your MPS daemons' pipes, is a %s owned by "
                          "%s, not a directory of yours (%s): have it removed, or set "
                          "CARVE_MPS_DIR to a directory of yours", base,
             S_ISLNK(st.st_mode) ? "symbolic link" : S_ISDIR(st.st_mode) ? "directory" : "file",
             who, me);
    return -EPERM;
}

int carve_mps_dir_of_step(const char *name, const char *job, const char *step, char *uuid,
                          size_t len)
{
    char suffix[32];
    if (!job || !slurm_id(job) || (step && *step && !slurm_id(step)))
        return 0;
    int w = step && *step ? snprintf(suffix, sizeof(suffix), "-j%s.%s", job, step)
                          : snprintf(suffix, sizeof(suffix), "-j%s", job);
    size_t n = strlen(name), s = (size_t)w;
    if (strncmp(name, "mps-", 4) != 0 || n <= 4 + s || strcmp(name + n - s, suffix) != 0)
        return 0;
    /* a UUID has no '.': "mps-U-j12.3" is never the batch script's "-j3", nor job 2's */
    size_t u = n - 4 - s;
    if (u >= len || !path_safe(name + 4, u))
        return 0;
    memcpy(uuid, name + 4, u);
    uuid[u] = '\0';
    return 1;
}

int carve_mps_user_dir(bool create, char *out, size_t len, char *err, size_t errlen)
{
    char base[PATH_MAX];
    if (carve_mps_run_base(base, sizeof(base)) >= (int)sizeof(base)) {
        snprintf(err, errlen, "the MPS run directory's path is too long: %.100s...", base);
        return -ENAMETOOLONG;
    }
    const char *given = getenv("CARVE_MPS_DIR");
    int r;
    if (!(given && *given) && (r = chosen_base_ok(base, err, errlen)) < 0)
        return r;
    r = user_dir(base, create, out, len, err, errlen);
    if (r < 0)
        return r;
    /* and again, now that it exists: a name that was free at the first look and became
       another user's link before user_dir made it (which follows links) is refused here,
       before anything of ours goes in; once ours, no one else can replace it */
    if (!(given && *given) && (r = chosen_base_ok(base, err, errlen)) < 0)
        return r;
    return 0;
}

int carve_mps_run_dir(const char *uuid, char *out, size_t len, char *err, size_t errlen)
{
    char mine[PATH_MAX], name[NAME_MAX + 1];
    int r = carve_mps_dir_name(uuid, getenv("SLURM_JOB_ID"), getenv("SLURM_STEP_ID"), name,
                               sizeof(name), err, errlen);
    if (r < 0 || (r = carve_mps_user_dir(true, mine, sizeof(mine), err, errlen)) < 0)
        return r;
    if (snprintf(out, len, "%s/%s", mine, name) >= (int)len) {
        snprintf(err, errlen, "the MPS run directory's path is too long: %s/%s", mine, name);
        return -ENAMETOOLONG;
    }
    return own_dir(out, true, err, errlen);
}

/* ---------- the client list ---------- */

/* "PID START" at s: 0 with *p filled and *s past it, or -1. */
static int parse_pair(const char **s, struct carve_mps_proc *p)
{
    char *end;
    errno = 0;
    long pid = strtol(*s, &end, 10);
    if (errno || end == *s || **s < '0' || **s > '9' || *end != ' ' || pid <= 0 ||
        pid > INT_MAX)
        return -1;
    const char *t = end + 1;
    if (*t < '0' || *t > '9')
        return -1;
    unsigned long long start = strtoull(t, &end, 10);
    if (errno)
        return -1;
    p->pid = (pid_t)pid;
    p->start = start;
    *s = end;
    return 0;
}

/* carve run's pair, then up to CARVE_MPS_CLIENT_PROCS pairs of its command's processes, one
 * space apart. */
static int parse_line(const char *line, struct carve_mps_client *c)
{
    struct carve_mps_proc p;
    const char *s = line;
    if (parse_pair(&s, &p) < 0)
        return -1;
    c->pid = p.pid;
    c->start = p.start;
    c->nproc = 0;
    while (*s) {
        if (*s != ' ' || c->nproc == CARVE_MPS_CLIENT_PROCS)
            return -1;
        s++;
        if (parse_pair(&s, &c->proc[c->nproc]) < 0)
            return -1;
        c->nproc++;
    }
    return 0;
}

/* the longest line: 1 + CARVE_MPS_CLIENT_PROCS pairs of 10 + 1 + 20 digits and a space */
#define LINE_MAX_CHARS ((1 + CARVE_MPS_CLIENT_PROCS) * 33)

int carve_mps_clients_parse(const char *text, struct carve_mps_client *out, int max, char *err,
                            size_t errlen)
{
    int n = 0, lineno = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        char line[LINE_MAX_CHARS + 1];
        lineno++;
        if (l >= sizeof(line)) {
            snprintf(err, errlen, "line %d: longer than a client entry (%zu characters)", lineno,
                     l);
            return -EINVAL;
        }
        memcpy(line, p, l);
        line[l] = '\0';
        p += l + (nl ? 1 : 0);
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (n == max) {
            snprintf(err, errlen, "line %d: more than %d clients", lineno, max);
            return -EINVAL;
        }
        if (parse_line(line, &out[n]) < 0) {
            snprintf(err, errlen, "line %d: `%.80s' is not `PID START-TIME' followed by at most "
                                  "%d `CMD-PID START-TIME'", lineno, line, CARVE_MPS_CLIENT_PROCS);
            return -EINVAL;
        }
        n++;
    }
    return n;
}

int carve_mps_clients_format(const struct carve_mps_client *c, int n, char *buf, size_t len)
{
    size_t off = 0;
    int w = snprintf(buf, len, "# carve run --mode mps clients of this GPU: PID START-TIME, "
                               "then its command's processes: PID START-TIME ...\n");
    if (w < 0 || (size_t)w >= len)
        return -ENOSPC;
    off = (size_t)w;
    for (int i = 0; i < n; i++) {
        w = snprintf(buf + off, len - off, "%d %llu", (int)c[i].pid,
                     (unsigned long long)c[i].start);
        if (w < 0 || (size_t)w >= len - off)
            return -ENOSPC;
        off += (size_t)w;
        for (int k = 0; k < c[i].nproc && k < CARVE_MPS_CLIENT_PROCS; k++) {
            w = snprintf(buf + off, len - off, " %d %llu", (int)c[i].proc[k].pid,
                         (unsigned long long)c[i].proc[k].start);
            if (w < 0 || (size_t)w >= len - off)
                return -ENOSPC;
            off += (size_t)w;
        }
        if (len - off < 2)
            return -ENOSPC;
        buf[off++] = '\n';
        buf[off] = '\0';
    }
    return (int)off;
}

int carve_mps_client_alive(const struct carve_mps_client *c)
{
    if (carve_proc_alive_since(c->pid, c->start))
        return 1;
    for (int k = 0; k < c->nproc && k < CARVE_MPS_CLIENT_PROCS; k++)
        if (carve_proc_alive_since(c->proc[k].pid, c->proc[k].start))
            return 1;
    return 0;
}

int carve_mps_client_add_proc(struct carve_mps_client *c, pid_t pid, uint64_t start)
{
    for (int k = 0; k < c->nproc; k++)
        if (c->proc[k].pid == pid && c->proc[k].start == start)
            return 0;
    int at = c->nproc;
    if (at == CARVE_MPS_CLIENT_PROCS) {
        for (at = 0; at < c->nproc; at++)
            if (!carve_proc_alive_since(c->proc[at].pid, c->proc[at].start))
                break;
        if (at == c->nproc)
            return -ENOSPC;
    } else {
        c->nproc++;
    }
    c->proc[at] = (struct carve_mps_proc){pid, start};
    return 0;
}

int carve_mps_clients_prune(struct carve_mps_client *c, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (!carve_mps_client_alive(&c[i]))
            continue;
        int live = 0;
        for (int k = 0; k < c[i].nproc && k < CARVE_MPS_CLIENT_PROCS; k++)
            if (carve_proc_alive_since(c[i].proc[k].pid, c[i].proc[k].start))
                c[i].proc[live++] = c[i].proc[k];
        c[i].nproc = live;
        c[kept++] = c[i];
    }
    return kept;
}

int carve_mps_lock(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/lock", dir);
    /* a job step's directory goes with its last client (carve_mps_remove_dir): a lock taken
       on the file it removed meanwhile is taken again, on a new directory */
    for (int tries = 0; tries < 8; tries++) {
        int r = own_dir(dir, true, err, errlen);
        if (r < 0)
            return r;
        /* O_CLOEXEC: a daemon started under the lock must not inherit (and hold) it */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            if (errno == ENOENT)
                continue; /* the directory went between own_dir and open */
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            return -errno;
        }
        while (flock(fd, LOCK_EX) < 0)
            if (errno != EINTR) {
                int e = errno;
                snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
                close(fd);
                return -e;
            }
        struct stat held, now;
        if (fstat(fd, &held) == 0 && lstat(path, &now) == 0 && held.st_ino == now.st_ino &&
            held.st_dev == now.st_dev)
            return fd;
        close(fd);
    }
    snprintf(err, errlen, "cannot lock %s: it was removed eight times while waiting", path);
    return -EAGAIN;
}

void carve_mps_remove_dir(const char *dir)
{
    static const char *const subdirs[] = {"pipe", "log"};
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return;
    for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
        int sub = openat(d, subdirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            unlinkat(d, subdirs[i], 0); /* a link put in its place: the link, not what it names */
            continue;
        }
        DIR *entries = sub >= 0 ? fdopendir(sub) : NULL;
        if (!entries) {
            if (sub >= 0)
                close(sub);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(entries)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(sub, e->d_name, 0);
        closedir(entries);
        unlinkat(d, subdirs[i], AT_REMOVEDIR);
    }
    unlinkat(d, "clients", 0);
    unlinkat(d, "lock", 0); /* last: a carve run waiting on it then takes a new one */
    close(d);
    rmdir(dir);
}

void carve_mps_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the only descriptor releases the flock */
}

int carve_mps_clients_load(const char *dir, struct carve_mps_client *out, int max, char *err,
                           size_t errlen)
{
    char path[PATH_MAX], text[CARVE_MPS_MAX_CLIENTS * (LINE_MAX_CHARS + 1) + 256];
    snprintf(path, sizeof(path), "%s/clients", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -errno;
    }
    ssize_t got = 0, r;
    while ((size_t)got < sizeof(text) - 1 &&
           (r = read(fd, text + got, sizeof(text) - 1 - (size_t)got)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += r;
    }
    close(fd);
    text[got] = '\0';
    char perr[256];
    int n = carve_mps_clients_parse(text, out, max, perr, sizeof(perr));
    if (n < 0) {
        snprintf(err, errlen, "%s: %s (read as empty)", path, perr);
        return 0;
    }
    return carve_mps_clients_prune(out, n);
}

int carve_mps_clients_store(const char *dir, const struct carve_mps_client *c, int n, char *err,
                            size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX + 16];
    char text[CARVE_MPS_MAX_CLIENTS * (LINE_MAX_CHARS + 1) + 256];
    int len = carve_mps_clients_format(c, n, text, sizeof(text));
    if (len < 0) {
        snprintf(err, errlen, "%d clients do not fit the client list", n);
        return -ENOSPC;
    }
    snprintf(path, sizeof(path), "%s/clients", dir);
    snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return -errno;
    }
    ssize_t w = write(fd, text, (size_t)len);
    int e = w == len ? 0 : (w < 0 ? errno : EIO);
    if (close(fd) < 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) < 0)
        e = errno;
    if (e) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
        return -e;
    }
    return 0;
}
