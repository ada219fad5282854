/* proc.c - what /proc says of a process, read in one place: /proc/PID/stat (the name may hold
 * any character, spaces and parentheses included, so the fields resume after its last ')'),
 * /proc/PID/status, and the process's PID namespace with its pid there. */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define START_FIELD 22 /* starttime, counting from 1 (pid) */

/* /proc/WHO/FILE into buf, NUL-terminated; 0, or -1 when it cannot be read. */
static int read_proc_at(const char *who, const char *file, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%s/%s", who, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* /proc/PID/FILE into buf, NUL-terminated; 0, or -1 when it cannot be read. */
static int read_proc(pid_t pid, const char *file, char *buf, size_t len)
{
    char who[16];
    if (pid <= 0)
        return -1;
    snprintf(who, sizeof(who), "%d", (int)pid);
    return read_proc_at(who, file, buf, len);
}

/* The fields of a /proc/PID/stat line into *st: 0, or -1 when it is not one. */
static int parse_stat(const char *buf, struct carve_proc_stat *st)
{
    const char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ' ||
        !close_paren[2] || close_paren[3] != ' ')
        return -1;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len >= sizeof(st->comm))
        len = sizeof(st->comm) - 1;
    memcpy(st->comm, open_paren + 1, len);
    st->comm[len] = '\0';
    st->state = close_paren[2];
    st->ppid = (pid_t)strtol(close_paren + 4, NULL, 10);
    const char *p = close_paren + 1; /* at the space before field 3 */
    for (int field = 3; field < START_FIELD && p; field++)
        p = strchr(p + 1, ' ');
    st->start = p ? strtoull(p + 1, NULL, 10) : 0;
    return 0;
}

int carve_proc_stat(pid_t pid, struct carve_proc_stat *st)
{
    char buf[1024];
    return read_proc(pid, "stat", buf, sizeof(buf)) < 0 ? -1 : parse_stat(buf, st);
}

int carve_proc_stat_self(struct carve_proc_stat *st)
{
    char buf[1024];
    return read_proc_at("self", "stat", buf, sizeof(buf)) < 0 ? -1 : parse_stat(buf, st);
}

int carve_proc_alive_since(pid_t pid, uint64_t start)
{
    struct carve_proc_stat st;
    if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
        return 0;
    if (carve_proc_stat(pid, &st) < 0)
        return 1; /* a hidden /proc proves nothing: a live pid counts */
    return st.state != 'Z' && st.state != 'X' && !(start && st.start && start != st.start);
}

int carve_proc_running(pid_t pid)
{
    return carve_proc_alive_since(pid, 0);
}

/* The second number of a "Uid:" or "Gid:" line (real, effective, saved, filesystem). */
static int effective_id(const char *status, const char *key, unsigned *out)
{
    const char *line = strstr(status, key);
    if (!line)
        return -1;
    const char *real = line + strlen(key);
    char *end_real, *end;
    errno = 0;
    (void)strtoul(real, &end_real, 10);
    unsigned long v = strtoul(end_real, &end, 10);
    if (errno || end_real == real || end == end_real || v > 0xffffffffUL)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int carve_proc_ids(pid_t pid, uid_t *uid, gid_t *gid)
{
    char buf[4096];
    if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
        return -1;
    unsigned u, g;
    if (effective_id(buf, "\nUid:", &u) < 0 || effective_id(buf, "\nGid:", &g) < 0)
        return -1;
    *uid = (uid_t)u;
    *gid = (gid_t)g;
    return 0;
}

int carve_proc_uses_cuda(pid_t pid)
{
    char path[64];
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re"); /* fails for a process we may not look into */
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    bool cuda = false;
    while (!cuda && getline(&line, &cap, f) > 0)
        cuda = strstr(line, "/libcuda.so") || strstr(line, "/dev/nvidia");
    free(line);
    fclose(f);
    return cuda;
}

int carve_proc_is_mps_server(pid_t pid, uid_t trusted_owner)
{
    char link[64], exe[4096];
    if (pid <= 0)
        return -1;
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strcmp(base, CARVE_MPS_SERVER_NAME) != 0)
        return 0; /* a replaced or deleted file reads "... (deleted)": not it either */
    /* the file the process runs, not the path that now names it */
    struct stat st;
    if (stat(link, &st) != 0)
        return -1;
    return S_ISREG(st.st_mode) && (st.st_uid == 0 || st.st_uid == trusted_owner) &&
           !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int carve_proc_children(pid_t *out, int max)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    int count = 0;
    for (char *p = buf, *end; *p && count < max; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0 && pid <= INT_MAX)
            out[count++] = (pid_t)pid;
    }
    return count;
}

void carve_close_from(int low)
{
    if (close_range((unsigned)low, ~0U, 0) == 0)
        return;
    carve_close_listed_from(low); /* ENOSYS: a kernel before 5.9 */
}

/* Closes the descriptors from low up that dir (/proc/self/fd) lists; 1 when it closed any, 0
 * when none, -1 when the directory cannot be read. */
static int close_listed(int dir, int low)
{
    char buf[4096] __attribute__((aligned(8)));
    int closed = 0;
    long n;
    if (lseek(dir, 0, SEEK_SET) < 0)
        return -1;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
        for (long off = 0; off < n;) {
            const struct dirent64 *e = (const struct dirent64 *)(void *)(buf + off);
            off += e->d_reclen;
            char *end;
            long fd = strtol(e->d_name, &end, 10);
            if (end != e->d_name && !*end && fd >= low && fd <= INT_MAX && fd != dir) {
                close((int)fd);
                closed = 1;
            }
        }
    return n < 0 ? -1 : closed;
}

void carve_close_listed_from(int low)
{
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = -1;
    /* closing while reading may skip entries: again until a pass finds none to close */
    while (dir >= 0 && (r = close_listed(dir, low)) > 0)
        ;
    if (dir >= 0)
        close(dir);
    if (r == 0)
        return;
    struct rlimit rl; /* no /proc: each one below the limit */
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                   ? (long)rl.rlim_cur : 65536;
    for (long fd = low; fd < max && fd < (1L << 20); fd++)
        close((int)fd);
}

int carve_proc_host_pid_namespace(void)
{
    return carve_proc_ns(0, "pid") == CARVE_HOST_PID_NS;
}

uint32_t carve_proc_ns(pid_t pid, const char *kind)
{
    char path[64];
    struct stat st;
    if (pid < 0)
        return 0;
    if (pid == 0)
        snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
    else
        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
    if (stat(path, &st) < 0 || st.st_ino > UINT32_MAX)
        return 0;
    return (uint32_t)st.st_ino;
}

/* The fields of the NSpid line of a /proc/PID/status (its pid from /proc's namespace down
 * to its own), at most max of them into out: their count, 0 when there is no such line. */
static int nspid_fields(const char *status, long *out, int max)
{
    const char *line = strstr(status, "\nNSpid:");
    int n = 0;
    if (!line)
        return 0;
    for (const char *p = line + 7; n < max; n++) {
        char *end;
        long v = strtol(p, &end, 10); /* strtol skips the tabs between the fields */
        if (end == p || v <= 0 || v > INT_MAX)
            break;
        out[n] = v;
        p = end;
    }
    return n;
}

#define NSPID_MAX 33 /* the kernel nests PID namespaces 32 deep */

int carve_proc_inner_pid(pid_t pid, pid_t *inner)
{
    char buf[4096], who[16];
    long f[NSPID_MAX];
    if (pid < 0)
        return -1;
    if (pid == 0)
        snprintf(who, sizeof(who), "self");
    else
        snprintf(who, sizeof(who), "%d", (int)pid);
    int n = read_proc_at(who, "status", buf, sizeof(buf)) < 0 ? 0 : nspid_fields(buf, f, NSPID_MAX);
    if (n == 0)
        return -1;
    *inner = (pid_t)f[n - 1];
    return 0;
}

int carve_proc_ns_pid(pid_t pid, pid_t *inner)
{
    char buf[8192], who[16]; /* past a long Groups: line */
    long f[NSPID_MAX];
    if (pid <= 0)
        return -1;
    snprintf(who, sizeof(who), "%d", (int)pid);
    int n = read_proc_at(who, "status", buf, sizeof(buf)) < 0 ? 0 : nspid_fields(buf, f, NSPID_MAX);
    if (n == 0 || f[n - 1] <= 0 || f[n - 1] > INT_MAX)
        return -1;
    *inner = (pid_t)f[n - 1];
    return n;
}

int carve_proc_is_own(void)
{
    char buf[4096];
    long f[2];
    if (read_proc_at("self", "status", buf, sizeof(buf)) < 0)
        return -1;
    /* no NSpid (before Linux 4.1): no way to tell; /proc has been the namespace's whenever
     * it was mounted in it, as containers do */
    return nspid_fields(buf, f, 2) != 2;
}

/* Whether the name of a /proc entry is a pid: digits only. */
static bool pid_name(const char *name, pid_t *pid)
{
    char *end;
    long v = strtol(name, &end, 10);
    if (*name < '1' || *name > '9' || *end || v > INT_MAX)
        return false;
    *pid = (pid_t)v;
    return true;
}

/* Marks found the entries of want that pid (of namespace ns) is. */
static void match_nspid(struct carve_proc_nspid *want, int n, uint32_t ns, pid_t pid)
{
    pid_t inner = 0;
    bool read = false;
    for (int i = 0; i < n; i++) {
        if (want[i].found || want[i].ns != ns)
            continue;
        if (!read && carve_proc_inner_pid(pid, &inner) < 0)
            return; /* gone meanwhile */
        read = true;
        if (want[i].pid == inner)
            want[i].found = pid;
    }
}

/* Whether pid, whose namespace we may not look into, may be one of want: by NSpid in its
 * status, which anyone may read. One with a single field is of /proc's own namespace,
 * proc_ns (0: unknown); another has its pid there last. */
static bool may_be_wanted(const struct carve_proc_nspid *want, int n, pid_t pid,
                          uint32_t proc_ns)
{
    char buf[4096], who[16];
    long f[NSPID_MAX];
    snprintf(who, sizeof(who), "%d", (int)pid);
    errno = 0;
    if (read_proc_at(who, "status", buf, sizeof(buf)) < 0)
        return errno != ENOENT && errno != ESRCH; /* gone meanwhile: none of them */
    int k = nspid_fields(buf, f, NSPID_MAX);
    for (int i = 0; i < n; i++) {
        if (want[i].found)
            continue;
        if (k == 0 || (k == 1 && (!proc_ns || want[i].ns == proc_ns)) ||
            (k > 1 && f[k - 1] == want[i].pid))
            return true;
    }
    return false;
}

int carve_proc_find_nspids(struct carve_proc_nspid *want, int n)
{
    DIR *dir = opendir("/proc");
    if (!dir)
        return -1;
    for (int i = 0; i < n; i++)
        want[i].found = 0;
    uint32_t proc_ns = carve_proc_is_own() == 1 ? carve_proc_ns(0, "pid") : 0;
    int complete = 1;
    struct dirent *e;
    while ((e = readdir(dir))) {
        pid_t pid;
        if (!pid_name(e->d_name, &pid))
            continue;
        errno = 0;
        uint32_t ns = carve_proc_ns(pid, "pid");
        if (ns)
            match_nspid(want, n, ns, pid);
        /* not ours to look into (another user's, or kept from root), and maybe one of them */
        else if ((errno == EACCES || errno == EPERM) && may_be_wanted(want, n, pid, proc_ns))
            complete = 0;
    }
    closedir(dir);
    return complete;
}
