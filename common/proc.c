/* proc.c - what /proc/PID/stat says of a process, read in one place: the name may hold any
 * character, spaces and parentheses included, so the fields resume after its last ')'. */
#include "proc.h"

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

/* /proc/PID/FILE into buf, NUL-terminated; 0, or -1 when it cannot be read. */
static int read_proc(pid_t pid, const char *file, char *buf, size_t len)
{
    char path[64];
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
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

int carve_proc_stat(pid_t pid, struct carve_proc_stat *st)
{
    char buf[1024];
    if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
        return -1;
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

int carve_proc_running(pid_t pid)
{
    struct carve_proc_stat st;
    if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
        return 0;
    if (carve_proc_stat(pid, &st) < 0)
        return 1;
    return st.state != 'Z' && st.state != 'X';
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

int carve_proc_ns_pid(pid_t pid, pid_t *inner)
{
    char buf[8192]; /* past a long Groups: line */
    if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
        return -1;
    const char *line = strstr(buf, "\nNSpid:");
    if (!line)
        return -1;
    int count = 0;
    long last = 0;
    for (const char *p = line + 7; *p && *p != '\n';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        last = v;
        count++;
        p = end;
    }
    if (count == 0 || last <= 0 || last > INT_MAX)
        return -1;
    *inner = (pid_t)last;
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

/* The kernel numbers the initial PID namespace's inode so (PROC_PID_INIT_INO). */
#define HOST_PID_NAMESPACE_INO 0xEFFFFFFCu

int carve_proc_host_pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == HOST_PID_NAMESPACE_INO;
}
