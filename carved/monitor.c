/* monitor.c - carved's view of the node, once per poll: every GPU process NVML sees, which
 * slice each belongs to (or none: an escape), each slice's memory, achieved share and idle
 * time; the escape and idle policies; and the snapshot (carved.h) built from all of it. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "carve/nvml_abi.h"
#include "daemon.h"
#include "nvml_procs.h"
#include "proc.h"
#include "uuid.h"

#define MAX_PROCS 1024
#define ORPHAN_SWEEP_POLLS 10 /* polls between two sweeps of /dev/shm for carve runs' slices */

/* nvml.h's nvmlPciInfo_t (v3), for DCGM's pci_bus_id label; declared here because only
 * carved reads it. */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} carved_nvml_pci_info;

static struct {
    void *handle;
    nvmlReturn_t (*pci)(nvmlDevice_t, carved_nvml_pci_info *);  /* optional: the simulated */
    nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);         /* GPU has neither */
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlShutdown) shutdown;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetUUID) uuid;
    __typeof__(&nvmlDeviceGetName) name;
    __typeof__(&nvmlDeviceGetMemoryInfo) memory;
    __typeof__(&nvmlDeviceGetUtilizationRates) util;
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) procs;
    __typeof__(&nvmlDeviceGetGraphicsRunningProcesses_v3) graphics_procs; /* NULL: none */
    __typeof__(&nvmlDeviceGetProcessUtilization) proc_util;
    size_t procs_stride; /* bytes between the entries procs writes (nvml_procs.h) */
} nv;

static double last_poll;
static double clock_seconds(clockid_t clock);
static bool host_pidns;   /* carved runs in the host's PID namespace: it sees every process */
static uint32_t time_ns;  /* carved's time namespace */

/* A slice's tenants must write its table, so any of them can truncate it, and reading a
 * mapping past its end raises SIGBUS. The poll, where carved reads the tables, comes back
 * here instead of carved dying, and each broken slice is made anew. */
static sigjmp_buf poll_escape;
/* the snapshot's arrays while a poll builds them, dropped when a SIGBUS escapes the poll */
static json_t *poll_parts[3];
static _Thread_local volatile sig_atomic_t in_poll;

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    if (in_poll)
        siglongjmp(poll_escape, 1);
    signal(sig, SIG_DFL); /* not a table's: what SIGBUS does anyway */
    raise(sig);
}

/* A table cut short or removed (SIGBUS in the poll), or whose head was overwritten: every
 * later join was refused, and carved kept the slice as it was until 2026-11-28 (a reviewer's
 * finding). Whoever may write a table can do either: a tenant, which holds its fd. */
static bool cut_or_gone(const struct dslice *s)
{
    return !carve_slice_intact(s->shm);
}

static bool head_overwritten(const struct dslice *s)
{
    return s->handle && !carve_slice_head_ok(s->handle);
}

/* Makes anew each slice broken as `broken' says, logged as "slice NAME: OBJECTS SHM HAPPENED". */
static void remake_broken(struct carved *d, bool (*broken)(const struct dslice *),
                          const char *objects, const char *happened)
{
    char err[512];
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        struct dslice *s = &d->slices[i];
        if (!s->used || !broken(s))
            continue;
        carved_log("slice %s: %s %s %s (whoever may write its table can: a tenant); its running "
                   "tenants have lost it; made anew", s->name, objects, s->shm, happened);
        if (registry_remake(d, s, err, sizeof(err)) < 0)
            carved_log("slice %s: cannot make it anew: %s", s->name, err);
    }
}

int monitor_open(struct carved *d, char *err, size_t errlen)
{
    struct sigaction bus = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, NULL);
    host_pidns = carve_proc_host_pid_namespace() == 1;
    time_ns = carve_proc_ns(0, "time");
    char path[PATH_MAX + 64];
    carve_nvml_path(d->simulate, d->libdir, path, sizeof(path));
    d->ngpu = carve_gpus_list_driver(path, d->simulate, d->gpus, CARVE_SLICE_MAX_DEVICES,
                                     &d->driver, err, errlen);
    if (d->ngpu < 0)
        return -ENODEV;
    for (int k = 0; k < d->driver.nunread; k++) {
        char buf[32];
        carved_log("GPU %u: NVML counts it but answers `%s' for it, so carved does not list it "
                   "(its UUID unknown, no slice goes there, and slices made for it are listed "
                   "as gone)%s; restart carved once NVML answers for it",
                   d->driver.unread_index[k],
                   carve_nvml_error_text(d->driver.unread_error[k], buf, sizeof(buf)),
                   d->driver.unread_error[k] == NVML_ERROR_GPU_IS_LOST
                       ? ": fallen off the bus? see the kernel log (Xid) and reset the GPU or "
                         "reboot the node"
                       : "");
    }
    nv.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!nv.handle) {
        snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
        return -ENODEV;
    }
    nv.init = (__typeof__(nv.init))dlsym(nv.handle, "nvmlInit_v2");
    nv.shutdown = (__typeof__(nv.shutdown))dlsym(nv.handle, "nvmlShutdown");
    nv.by_index = (__typeof__(nv.by_index))dlsym(nv.handle, "nvmlDeviceGetHandleByIndex_v2");
    nv.uuid = (__typeof__(nv.uuid))dlsym(nv.handle, "nvmlDeviceGetUUID");
    nv.name = (__typeof__(nv.name))dlsym(nv.handle, "nvmlDeviceGetName");
    nv.memory = (__typeof__(nv.memory))dlsym(nv.handle, "nvmlDeviceGetMemoryInfo");
    nv.util = (__typeof__(nv.util))dlsym(nv.handle, "nvmlDeviceGetUtilizationRates");
    nv.procs = (__typeof__(nv.procs))dlsym(nv.handle, "nvmlDeviceGetComputeRunningProcesses_v3");
    nv.graphics_procs = (__typeof__(nv.graphics_procs))dlsym(
        nv.handle, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    nv.proc_util = (__typeof__(nv.proc_util))dlsym(nv.handle, "nvmlDeviceGetProcessUtilization");
    nv.procs_stride = carve_nvml_lib_v3_stride(nv.handle);
    nv.pci = (__typeof__(nv.pci))dlsym(nv.handle, "nvmlDeviceGetPciInfo_v3");
    nv.minor = (__typeof__(nv.minor))dlsym(nv.handle, "nvmlDeviceGetMinorNumber");
    if (!nv.init || !nv.shutdown || !nv.by_index || !nv.uuid || !nv.name || !nv.memory || !nv.procs ||
        nv.init() != NVML_SUCCESS) {
        snprintf(err, errlen, "%s lacks what carved needs (NVML process listing)", path);
        dlclose(nv.handle);
        nv.handle = NULL;
        return -ENODEV;
    }
    return 0;
}

void monitor_close(void)
{
    if (nv.handle) {
        nv.shutdown();
        dlclose(nv.handle);
        nv.handle = NULL;
    }
}

/* uid -> user name and gid -> group name, each looked up once per poll: getpwuid reads
 * /etc/passwd on every call, and with a thousand slices that was most of a poll
 * (bench/carved-bench.sh). */
#define NAME_CACHE 64
static struct {
    bool group;
    unsigned id;
    char name[32];
} names[NAME_CACHE];
static int nnames;

static void id_name(bool group, unsigned id, char *out, size_t len)
{
    for (int i = 0; i < nnames; i++)
        if (names[i].group == group && names[i].id == id) {
            snprintf(out, len, "%s", names[i].name);
            return;
        }
    struct passwd *pw = group ? NULL : getpwuid((uid_t)id);
    struct group *gr = group ? getgrgid((gid_t)id) : NULL;
    if (pw || gr)
        snprintf(out, len, "%s", pw ? pw->pw_name : gr->gr_name);
    else
        snprintf(out, len, "%u", id);
    if (nnames < NAME_CACHE) {
        names[nnames].group = group;
        names[nnames].id = id;
        snprintf(names[nnames].name, sizeof(names[nnames].name), "%s", out);
        nnames++;
    }
}

static void user_name(uid_t uid, char *out, size_t len)
{
    id_name(false, (unsigned)uid, out, len);
}

/* Who may join s besides its owner, root and carved's admins: names where known. */
_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned),
               "ids are read as unsigned");
static json_t *ids_names(bool group, const unsigned *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char name[32];
        id_name(group, ids[i], name, sizeof(name));
        json_array_append_new(a, json_string(name));
    }
    return a;
}

/* The length of the UTF-8 sequence at s (1-4), or 0 when it is not one: the checks jansson
 * makes (no overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_sequence(const unsigned char *s)
{
    unsigned char lo = 0x80, hi = 0xbf;
    int n;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* A process's name as the snapshot can carry it: each byte that is not part of a UTF-8
 * character, and each control character, becomes '?'. The name is the process's to choose
 * (and the kernel cuts it at 15 bytes, maybe inside a character): one that was not UTF-8
 * made the snapshot's entry fail to build, and the process was missing from every listing,
 * an escape too (not shown, not counted); a control character reached the operator's
 * terminal in carve ps. */
static void printable_utf8(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = utf8_sequence(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

static void proc_user(pid_t pid, char *user, size_t ulen, char *cmd, size_t clen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    cmd[0] = '\0';
    if (f) {
        if (fgets(cmd, (int)clen, f))
            cmd[strcspn(cmd, "\n")] = '\0';
        fclose(f);
        printable_utf8(cmd);
    }
    uid_t uid; /* the process's own: its /proc entry is root's once it is not dumpable */
    gid_t gid;
    if (carve_proc_ids(pid, &uid, &gid) == 0)
        user_name(uid, user, ulen);
    else
        snprintf(user, ulen, "?");
}

/* Who is in which slice, read once per poll: finding a slice's members checks each slot's
 * process (a syscall), too dear to repeat for every GPU process NVML lists. */
#define MAX_MEMBERS 65536
static struct member {
    unsigned pid;
    struct dslice *slice;
    bool barred; /* its user may not join the slice: an escape, reason not_allowed */
} members[MAX_MEMBERS];
static int nmembers;

/* Whether pid was started in the slice: its environment names the slice's object, as carve
 * run sets it. The table's pids are not proof: any tenant of the slice can write them. 1: it
 * was; 0: it was not; -1: carved cannot read its environment (a carved not run as root,
 * which cannot signal another user's process either). */
static int started_in(pid_t pid, const char *shm)
{
    char path[64], want[sizeof("CARVE_SLICE=") + sizeof(((struct dslice *)0)->shm)];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    snprintf(want, sizeof(want), "CARVE_SLICE=%s", shm);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == EACCES || errno == EPERM ? -1 : 0;
    char *entry = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getdelim(&entry, &cap, '\0', f) > 0)
        found = strcmp(entry, want) == 0;
    free(entry);
    fclose(f);
    return found;
}

/* Whether pid's user may be in s, judged as a join through the socket is: the table and
 * CARVE_SLICE are the tenant's, so a user could point CARVE_SLICE at any slice's object in
 * /dev/shm (anyone can list them) and run within its cap and share, counted as its tenant.
 * The ids are the process's own, not its /proc entry's owner (root once it is not
 * dumpable). A process carved cannot read is gone: nothing to judge. */
static bool may_be_in(const struct carved *d, const struct dslice *s, pid_t pid)
{
    uid_t uid;
    gid_t gid;
    return carve_proc_ids(pid, &uid, &gid) < 0 || registry_may_join(d, s, uid, gid);
}

/* Tenants of other PID namespaces than carved's (containers): the table names each by its
 * pid there (every container's first process is 1), NVML and /proc here by another.
 * find_foreign looks for them by their namespace and pid there, in one pass over /proc for
 * those not found before, and keeps what it found while the process checks out; where one
 * is surely gone (not there in a /proc that shows every process, or its pid there taken by
 * a process started since), it gives its slot back, as a tenant of its namespace would. */
#define MAX_FOREIGN 4096
struct foreign {
    struct dslice *slice;
    struct carve_slice_owner o;
    pid_t pid;   /* its pid here; 0: not found */
    bool said;   /* the log says it was not found */
    bool reaped; /* gone: its slot was given back this poll */
};
static struct foreign foreign[MAX_FOREIGN], foreign_prev[MAX_FOREIGN];
static int nforeign, nforeign_prev;
static int foreign_at[CARVED_MAX_SLICES], foreign_n[CARVED_MAX_SLICES]; /* each slice's */

/* Whether a precedes b in the list's order (slice, then slot), and whether both name the
 * same owner of the same slot. */
static bool foreign_before(const struct foreign *a, const struct foreign *b)
{
    return a->slice < b->slice || (a->slice == b->slice && a->o.slot < b->o.slot);
}

static bool foreign_same(const struct foreign *a, const struct foreign *b)
{
    return a->slice == b->slice && a->o.slot == b->o.slot && a->o.pid == b->o.pid &&
           a->o.pidns == b->o.pidns && a->o.start == b->o.start;
}

/* Whether pid here is the process that o names: its namespace, its pid there, and its start
 * time (not compared across time namespaces, where /proc shifts start times). */
static bool is_owner(pid_t pid, const struct carve_slice_owner *o)
{
    pid_t inner;
    if (carve_proc_ns(pid, "pid") != o->pidns || carve_proc_inner_pid(pid, &inner) < 0 ||
        inner != o->pid)
        return false;
    if (!o->start || carve_proc_ns(pid, "time") != time_ns)
        return true;
    return carve_proc_start_time(pid) == o->start;
}

/* Why a tenant of another namespace was not found, for the log. */
static const char *not_found_why(const struct foreign *f, int scan)
{
    if (!f->o.pidns)
        return "it could not read its namespace (no /proc where it runs)";
    if (!host_pidns)
        return "carved runs in a PID namespace of its own, and cannot see into that one";
    return scan < 0 ? "carved cannot read /proc"
                    : "carved cannot look into every process (it does not run as root)";
}

/* The owners of other namespaces of slice s appended to foreign, each with what the last
 * poll found of it; those to look for into want (their index in foreign into at). */
static void list_foreign(struct dslice *s, struct carve_proc_nspid *want, int *at, int *nwant,
                         int *prev)
{
    static struct carve_slice_owner owners[CARVE_SLICE_MAX_PROCS];
    int n = carve_slice_foreign(s->handle, owners, CARVE_SLICE_MAX_PROCS);
    for (int j = 0; j < n && nforeign < MAX_FOREIGN; j++) {
        struct foreign *f = &foreign[nforeign];
        *f = (struct foreign){.slice = s, .o = owners[j]};
        while (*prev < nforeign_prev && foreign_before(&foreign_prev[*prev], f))
            (*prev)++;
        if (*prev < nforeign_prev && foreign_same(&foreign_prev[*prev], f)) {
            f->said = foreign_prev[*prev].said;
            if (foreign_prev[*prev].pid > 0 && is_owner(foreign_prev[*prev].pid, &f->o))
                f->pid = foreign_prev[*prev].pid;
        }
        if (!f->pid && f->o.pidns) {
            want[*nwant] = (struct carve_proc_nspid){f->o.pidns, f->o.pid, 0};
            at[(*nwant)++] = nforeign;
        }
        nforeign++;
    }
}

static void find_foreign(struct carved *d)
{
    static struct carve_proc_nspid want[MAX_FOREIGN];
    static int at[MAX_FOREIGN];
    int nwant = 0, prev = 0;
    memcpy(foreign_prev, foreign, (size_t)nforeign * sizeof(*foreign));
    nforeign_prev = nforeign;
    nforeign = 0;
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        foreign_at[i] = nforeign;
        if (d->slices[i].used)
            list_foreign(&d->slices[i], want, at, &nwant, &prev);
        foreign_n[i] = nforeign - foreign_at[i];
    }
    int scan = nwant ? carve_proc_find_nspids(want, nwant) : 1;
    for (int k = 0; k < nwant; k++) {
        struct foreign *f = &foreign[at[k]];
        pid_t found = want[k].found;
        if (found > 0 && is_owner(found, &f->o)) {
            f->pid = found;
            continue;
        }
        /* its pid there is a later process's, or no process has it on the node */
        bool gone = found > 0 || (scan == 1 && host_pidns);
        f->reaped = gone && carve_slice_reap_owner(f->slice->handle, &f->o);
    }
    for (int k = 0; k < nforeign; k++) { /* unknown namespaces were not looked for */
        struct foreign *f = &foreign[k];
        if (f->pid || f->reaped || f->said)
            continue;
        carved_log("slice %s: a tenant of PID namespace %u (pid %d there) holds a slot, and "
                   "carved cannot find it: %s. It is listed without a pid, its slot is not "
                   "given back when it ends, idle_policy does not end it, and the pid NVML "
                   "names it by is an escape", f->slice->name, f->o.pidns, (int)f->o.pid,
                   not_found_why(f, scan));
        f->said = true;
    }
}

/* One process of a slice, as the poll lists it. */
struct tenant {
    pid_t pid;      /* carved's pid for it; 0: of another namespace, not found */
    int slot;
    pid_t ns_pid;   /* its pid in its own PID namespace */
    uint32_t pidns; /* that namespace (0: unknown) */
};

/* The processes of s: those of carved's namespace that live, and those of others (found or
 * not) that find_foreign did not find gone. At most max; the count. */
static int slice_tenants(const struct carved *d, const struct dslice *s, struct tenant *out,
                         int max)
{
    static struct carve_slice_owner owners[CARVE_SLICE_MAX_PROCS];
    int n = 0, k = carve_slice_owners(s->handle, owners, CARVE_SLICE_MAX_PROCS);
    for (int j = 0; j < k && n < max; j++)
        if (owners[j].local)
            out[n++] = (struct tenant){owners[j].pid, owners[j].slot, owners[j].pid,
                                       owners[j].pidns};
    int i = (int)(s - d->slices);
    for (int j = foreign_at[i]; j < foreign_at[i] + foreign_n[i] && n < max; j++)
        if (!foreign[j].reaped)
            out[n++] = (struct tenant){foreign[j].pid, foreign[j].o.slot, foreign[j].o.pid,
                                       foreign[j].o.pidns};
    return n;
}

/* The slices' processes, by their tables and checked: a pid someone wrote into another
 * slice's table took that process's NVML memory there, and under escape_policy = kill an
 * over-cap slice's processes were killed, whoever's they were. A process started in a
 * slice its user may not join is kept apart (barred): an escape, not the slice's tenant. */
static void read_members(struct carved *d)
{
    static struct tenant t[CARVE_SLICE_MAX_PROCS];
    nmembers = 0;
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        struct dslice *s = &d->slices[i];
        if (!s->used)
            continue;
        int n = slice_tenants(d, s, t, CARVE_SLICE_MAX_PROCS);
        for (int j = 0; j < n && nmembers < MAX_MEMBERS; j++)
            if (t[j].pid > 0 && started_in(t[j].pid, s->shm) != 0)
                members[nmembers++] =
                    (struct member){(unsigned)t[j].pid, s, !may_be_in(d, s, t[j].pid)};
    }
}

/* The slice whose member pid is (barred false), or the slice it runs in without leave
 * (barred true), or NULL. */
static struct dslice *slice_of(unsigned pid, bool barred)
{
    for (int i = 0; i < nmembers; i++)
        if (members[i].pid == pid && members[i].barred == barred)
            return members[i].slice;
    return NULL;
}

static struct dslice *slice_of_pid(unsigned pid)
{
    return slice_of(pid, false);
}

static int policy_of(const struct carved *d, const struct dslice *s)
{
    return s->idle_policy >= 0 ? s->idle_policy : d->conf.idle_policy;
}

static const char *policy_name(int p)
{
    return p == CARVED_POLICY_KILL ? "kill" : p == CARVED_POLICY_RECLAIM ? "reclaim" : "report";
}

/* NVML's memory of a process is what the driver gives it, rounded to its pages; libcarve
 * counts what was asked for plus the context it measured. An honest slice stays within this
 * of its cap; one past it holds memory its counters do not show (a tenant rewrote them, or
 * allocated behind libcarve's back). */
static uint64_t over_cap_tolerance(uint64_t cap)
{
    uint64_t slack = cap / 20;
    return slack > (64ull << 20) ? slack : 64ull << 20;
}

/* The slice device of s on GPU index, or -1. */
static int slice_dev_on(const struct dslice *s, unsigned index)
{
    for (int k = 0; k < s->spec.ndev; k++)
        if (!s->gone[k] && (unsigned)s->spec.dev[k].index == index)
            return k;
    return -1;
}

/* The GPUs (by index) NVML called lost at the last poll (gpu_json). */
static bool lost_gpu[CARVE_SLICE_MAX_DEVICES];

/* Sums NVML's per-process memory into each slice's nvml_used on this GPU and sets over_cap,
 * logging when a slice goes over and comes back; starts the slices' utilisation sums there. */
static void check_slices_against_nvml(struct carved *d, unsigned index,
                                      const nvmlProcessInfo_t *infos, unsigned n, bool util_ok)
{
    static uint64_t sums[CARVED_MAX_SLICES];
    memset(sums, 0, sizeof(sums));
    for (unsigned i = 0; i < n; i++) {
        struct dslice *s = slice_of_pid(infos[i].pid);
        if (s)
            sums[s - d->slices] += infos[i].usedGpuMemory;
    }
    for (int j = 0; j < CARVED_MAX_SLICES; j++) {
        struct dslice *s = &d->slices[j];
        int k = s->used ? slice_dev_on(s, index) : -1;
        if (k < 0)
            continue;
        uint64_t cap = carve_slice_cap(s->handle, k);
        bool over = cap && sums[j] > cap + over_cap_tolerance(cap);
        if (over && !s->over_cap[k])
            carved_log("slice %s holds %llu MiB on GPU %u by NVML, over its cap of %llu MiB "
                       "(its counters say %llu MiB): its processes there are escapes (policy %s)",
                       s->name, (unsigned long long)(sums[j] >> 20), index,
                       (unsigned long long)(cap >> 20),
                       (unsigned long long)(carve_slice_used(s->handle, k) >> 20),
                       d->conf.escape_policy == CARVED_POLICY_KILL ? "kill" : "report");
        else if (!over && s->over_cap[k])
            carved_log("slice %s is back within its cap on GPU %u", s->name, index);
        s->nvml_used[k] = sums[j];
        s->over_cap[k] = over;
        s->nvml_sm[k] = 0; /* its processes' utilisation is added up next */
        s->nvml_sm_ok[k] = util_ok;
    }
}

/* NVML's per-process utilisation samples of one GPU since the last poll read them: the
 * driver keeps a sample per process every 1/6 s or so, and with a last-seen time of 0 hands
 * back all it holds, old ones included (the last one per pid was taken, whichever it was). */
static nvmlProcessUtilizationSample_t samples[MAX_PROCS];
#define UNMATCHED_POLLS 3 /* polls of samples naming no listed process before they are ignored */
static unsigned nsamples;
static unsigned long long util_seen_us[CARVE_SLICE_MAX_DEVICES];

/* Reads GPU g's samples newer than its last read; false when NVML gives none at all
 * (no such call, or not supported): "none since" (NOT_FOUND) is a reading of 0. */
static bool read_proc_util(int g, nvmlDevice_t dev)
{
    nsamples = MAX_PROCS;
    nvmlReturn_t r = nv.proc_util ? nv.proc_util(dev, samples, &nsamples, util_seen_us[g])
                                  : NVML_ERROR_NOT_SUPPORTED;
    if (r != NVML_SUCCESS)
        nsamples = 0;
    for (unsigned j = 0; j < nsamples; j++)
        if (samples[j].timeStamp > util_seen_us[g])
            util_seen_us[g] = samples[j].timeStamp;
    return r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND;
}

/* Whether any sample read names a process of list: on some drivers the process list's pids
 * are translated into a container's PID namespace and the samples' are not (the host's). */
static bool samples_name_listed(const nvmlProcessInfo_t *list, unsigned n)
{
    for (unsigned j = 0; j < nsamples; j++)
        for (unsigned i = 0; i < n; i++)
            if (samples[j].pid == list[i].pid)
                return true;
    return false;
}

/* pid's SM utilisation over the samples read: their mean, in percent */
static unsigned proc_sm_util(unsigned pid)
{
    unsigned long sum = 0, k = 0;
    for (unsigned j = 0; j < nsamples; j++)
        if (samples[j].pid == pid) {
            sum += samples[j].smUtil;
            k++;
        }
    return k ? (unsigned)((sum + k / 2) / k) : 0;
}

/* What this poll did to pid on a GPU listed before (its action), or NULL: a process using
 * several GPUs is an escape on each of them. */
static const char *escape_action_this_poll(const json_t *escapes, unsigned pid)
{
    size_t i;
    const json_t *e;
    json_array_foreach(escapes, i, e)
        if (json_integer_value(json_object_get(e, "pid")) == (json_int_t)pid)
            return json_string_value(json_object_get(e, "action"));
    return NULL;
}

/* The GPU's processes, each pid once: NVML's compute list, then its graphics list, where a
 * process that only draws (Vulkan, OpenGL) is named and no CUDA hook counts its memory. */
static unsigned gpu_processes(nvmlDevice_t dev, nvmlProcessInfo_t *infos)
{
    static _Alignas(nvmlProcessInfo_t) unsigned char raw[MAX_PROCS * CARVE_NVML_PROC_STRIDE_MAX];
    __typeof__(nv.procs) lists[] = {nv.procs, nv.graphics_procs};
    unsigned total = 0;
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        unsigned n = MAX_PROCS;
        if (!lists[l] || lists[l](dev, &n, (void *)raw) != NVML_SUCCESS)
            continue;
        for (unsigned i = 0; i < n && total < MAX_PROCS; i++) {
            nvmlProcessInfo_t p = carve_nvml_proc_at(raw, nv.procs_stride, i);
            unsigned j = 0;
            while (j < total && infos[j].pid != p.pid)
                j++;
            if (j == total) /* a process that computes and draws is in both: once */
                infos[total++] = p;
        }
    }
    return total;
}

/* Per GPU: its processes into gpu["processes"], escapes into escapes (processes in no slice,
 * and those of a slice that NVML sees over its cap); sm util per pid summed into the slices'
 * busy flags. */
static json_t *gpu_json(struct carved *d, int g, json_t *escapes, bool *busy_slices)
{
    const struct carve_gpu_info *gi = &d->gpus[g];
    json_t *procs = json_array();
    nvmlDevice_t dev;
    nvmlMemory_t mem = {0, 0, 0};
    nvmlUtilization_t util = {0, 0};
    carved_nvml_pci_info pci;
    unsigned minor = gi->index; /* /dev/nvidiaN: the index unless NVML says otherwise */
    memset(&pci, 0, sizeof(pci));
    nvmlReturn_t got = nv.by_index(gi->index, &dev);
    if (got == NVML_SUCCESS)
        got = nv.memory(dev, &mem) == NVML_ERROR_GPU_IS_LOST ? NVML_ERROR_GPU_IS_LOST : got;
    /* fallen off the bus (Xid 79): every call for it fails until a reset or a reboot, and
     * its processes and memory read as none; said once, and when it answers again */
    static bool was_lost[CARVE_SLICE_MAX_DEVICES];
    bool lost = got == NVML_ERROR_GPU_IS_LOST || (got != NVML_SUCCESS && was_lost[g]);
    if (lost != was_lost[g])
        carved_log(lost ? "GPU %u (%s): NVML says it is lost (fallen off the bus?): nothing of it "
                          "is read until it answers again; see the kernel log (Xid) and "
                          "reset the GPU or reboot the node"
                        : "GPU %u (%s): NVML answers for it again",
                   gi->index, gi->uuid);
    was_lost[g] = lost;
    if (gi->index < CARVE_SLICE_MAX_DEVICES)
        lost_gpu[gi->index] = lost;
    /* its bus id and device file do not change: the last read, so that its series keep
       their labels */
    static carved_nvml_pci_info last_pci[CARVE_SLICE_MAX_DEVICES];
    static unsigned last_minor[CARVE_SLICE_MAX_DEVICES];
    static bool read_once[CARVE_SLICE_MAX_DEVICES];
    if (lost) {
        if (read_once[g]) {
            pci = last_pci[g];
            minor = last_minor[g];
        }
        check_slices_against_nvml(d, gi->index, NULL, 0, false); /* nothing over a cap now */
    }
    if (got == NVML_SUCCESS) {
        if (nv.pci && nv.pci(dev, &pci) != NVML_SUCCESS)
            pci.busId[0] = '\0';
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        if (nv.minor && nv.minor(dev, &minor) != NVML_SUCCESS)
            minor = gi->index;
        last_pci[g] = pci;
        last_minor[g] = minor;
        read_once[g] = true;
        if (nv.util)
            nv.util(dev, &util);
        static nvmlProcessInfo_t infos[MAX_PROCS];
        unsigned n = gpu_processes(dev, infos);
        bool util_ok = read_proc_util(g, dev);
        /* samples that name none of the listed processes, poll after poll (a process that
         * just started or ended can do it once): the samples' pids are another namespace's,
         * and the shares fall back to the limiter's books */
        static int unmatched_polls[CARVE_SLICE_MAX_DEVICES];
        if (util_ok && nsamples > 0 && n > 0 && !samples_name_listed(infos, n)) {
            if (unmatched_polls[g] < UNMATCHED_POLLS && ++unmatched_polls[g] == UNMATCHED_POLLS)
                carved_log("GPU %u: NVML's utilisation samples name no process of its process "
                           "list for %d polls (their pids are another PID namespace's?): "
                           "achieved shares come from the limiter's books until they match",
                           gi->index, UNMATCHED_POLLS);
        } else if (util_ok) {
            unmatched_polls[g] = 0;
        }
        util_ok = util_ok && unmatched_polls[g] < UNMATCHED_POLLS;
        check_slices_against_nvml(d, gi->index, infos, n, util_ok);
        for (unsigned i = 0; i < n; i++) {
            unsigned sm = proc_sm_util(infos[i].pid);
            char user[64], cmd[64];
            proc_user((pid_t)infos[i].pid, user, sizeof(user), cmd, sizeof(cmd));
            struct dslice *s = slice_of_pid(infos[i].pid);
            /* NVIDIA's MPS server runs the work of MPS clients (carve run --mode mps starts
             * one per user and GPU); the clients are listed themselves, in their slices or
             * as escapes, and killing the server would end every client it serves */
            bool mps_server = !s && carve_proc_is_mps_server((pid_t)infos[i].pid, geteuid()) == 1;
            if (s && sm > 0)
                busy_slices[s - d->slices] = true;
            int k = s ? slice_dev_on(s, gi->index) : -1;
            if (k >= 0)
                s->nvml_sm[k] += sm;
            json_array_append_new(procs, json_pack("{s:I,s:I,s:I,s:o,s:s,s:s,s:b}",
                "pid", (json_int_t)infos[i].pid, "used_memory", (json_int_t)infos[i].usedGpuMemory,
                "sm_util", (json_int_t)sm, "slice", s ? json_string(s->name) : json_null(),
                "user", user, "command", cmd, "mps_server", mps_server));
            bool over = k >= 0 && s->over_cap[k];
            if ((s && !over) || mps_server || infos[i].pid == (unsigned)getpid())
                continue;
            struct dslice *barred = s ? NULL : slice_of(infos[i].pid, true), *in = s ? s : barred;
            const char *action = "reported";
            /* only a pid that is a CUDA process here: NVML may name processes by pids of
             * another PID namespace (carved in a container), which here are anyone's */
            bool kill_it = d->conf.escape_policy == CARVED_POLICY_KILL;
            /* a process on several GPUs is listed on each: it is killed (and counted and
             * logged) once, on the first; the others say what became of it */
            const char *earlier = escape_action_this_poll(escapes, infos[i].pid);
            if (earlier && strcmp(earlier, "killed") == 0)
                action = earlier;
            else if (kill_it && carve_proc_uses_cuda((pid_t)infos[i].pid) != 1)
                action = "not_killed";
            else if (kill_it && kill((pid_t)infos[i].pid, SIGKILL) == 0) {
                action = "killed";
                d->escapes_killed++;
                carved_log("escape: pid %u (%s, user %s) on GPU %u %s: killed", infos[i].pid,
                           cmd, user, gi->index,
                           over     ? "in a slice over its cap"
                           : barred ? "in a slice not open to its user"
                                    : "outside every slice");
            }
            json_array_append_new(escapes, json_pack("{s:i,s:s,s:I,s:s,s:s,s:I,s:s,s:s,s:o}",
                "gpu", (int)gi->index, "uuid", gi->uuid, "pid", (json_int_t)infos[i].pid,
                "user", user, "command", cmd, "used_memory", (json_int_t)infos[i].usedGpuMemory,
                "action", action, "reason",
                over ? "over_cap" : barred ? "not_allowed" : "no_slice",
                "slice", in ? json_string(in->name) : json_null()));
        }
    }
    char device[32];
    snprintf(device, sizeof(device), "nvidia%u", minor);
    return json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:I,s:i,s:b,s:b,s:o}", "index", (int)gi->index,
                     "uuid", gi->uuid, "pci_bus_id", pci.busId, "device", device, "name", gi->name, "memory_total", (json_int_t)(mem.total ? mem.total : gi->total),
                     "memory_used", (json_int_t)mem.used, "utilization", (int)util.gpu,
                     "lost", lost, "unlisted", false, "processes", procs);
}

/* A GPU that NVML counted but did not answer for at carved's start (k of d->driver's unread
 * ones; lost, as after an Xid 79): not in carved's list, for its UUID is unknown, so no slice
 * is placed there and none is found there. Shown all the same ("unlisted"), so that carve ps,
 * carve top and /metrics (carve_gpu_lost) say a GPU is there and lost, where they counted one
 * GPU less and no alert fired: lost while NVML answers anything but success for it. Asked
 * again at each poll: once NVML answers for it, the log says so and to restart carved, which
 * lists the GPUs at its start only; its processes and utilisation are not read meanwhile
 * (the metrics leave them out). */
static json_t *unlisted_gpu_json(struct carved *d, int k)
{
    static bool answered[CARVE_SLICE_MAX_DEVICES];
    unsigned index = d->driver.unread_index[k];
    nvmlDevice_t dev;
    nvmlMemory_t mem = {0, 0, 0};
    char uuid[96] = "", name[96] = "", buf[32];
    nvmlReturn_t got = nv.by_index(index, &dev);
    if (got == NVML_SUCCESS)
        got = nv.uuid(dev, uuid, sizeof(uuid));
    if (got == NVML_SUCCESS)
        got = nv.memory(dev, &mem);
    if (got == NVML_SUCCESS && nv.name(dev, name, sizeof(name)) != NVML_SUCCESS)
        name[0] = '\0';
    if (got != NVML_SUCCESS) {
        uuid[0] = name[0] = '\0';
        mem = (nvmlMemory_t){0, 0, 0};
    }
    bool lost = got != NVML_SUCCESS; /* whatever NVML's answer: nothing of it is read */
    if (got == NVML_SUCCESS && !answered[k])
        carved_log("GPU %u (%s): NVML answers for it now, but carved lists the GPUs at its start "
                   "only: restart carved to place slices there and watch its processes",
                   index, uuid);
    answered[k] = got == NVML_SUCCESS;
    if (index < CARVE_SLICE_MAX_DEVICES)
        lost_gpu[index] = lost;
    char device[32];
    snprintf(device, sizeof(device), "nvidia%u", index);
    return json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:I,s:i,s:b,s:b,s:s,s:[]}", "index", (int)index,
                     "uuid", uuid, "pci_bus_id", "", "device", device, "name", name,
                     "memory_total", (json_int_t)mem.total, "memory_used", (json_int_t)mem.used,
                     "utilization", 0, "lost", lost, "unlisted", true, "nvml_answer",
                     got == NVML_SUCCESS ? "success"
                                         : carve_nvml_error_text((int)got, buf, sizeof(buf)),
                     "processes");
}

/* Appends gpu to gpus in the order of the GPUs' indices. */
static void insert_by_index(json_t *gpus, json_t *gpu)
{
    json_int_t index = json_integer_value(json_object_get(gpu, "index"));
    size_t at = 0;
    while (at < json_array_size(gpus) &&
           json_integer_value(json_object_get(json_array_get(gpus, at), "index")) < index)
        at++;
    json_array_insert_new(gpus, at, gpu);
}

static json_t *slice_devices(struct dslice *s, double dt)
{
    /* in the order of the GPUs' indices: a slice adopted after a renumbering has its own */
    int order[CARVE_SLICE_MAX_DEVICES], n = 0;
    for (int i = 0; i < s->spec.ndev; i++) {
        if (s->gone[i]) /* no index, nothing held or run there: in gpus_gone */
            continue;
        int j = n++;
        for (; j > 0 && s->spec.dev[order[j - 1]].index > s->spec.dev[i].index; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    json_t *devs = json_array();
    for (int o = 0; o < n; o++) {
        int i = order[o];
        struct carve_pace_stats ps = carve_slice_pace_stats(s->handle, i);
        /* What its processes ran, as NVML measures it on the GPU; the limiter's books only
           where NVML gives no per-process utilisation: libcarve charges a launch only when it
           may hold it, so an unpaced slice (or a guarantee with the GPU to itself) running
           flat out read 0% there */
        if (s->nvml_sm_ok[i])
            s->share[i] = s->nvml_sm[i] < 100 ? s->nvml_sm[i] : 100;
        else if (dt > 0 && ps.charged_ns >= s->last_charged[i])
            s->share[i] = 100.0 * (double)(ps.charged_ns - s->last_charged[i]) / (dt * 1e9);
        s->last_charged[i] = ps.charged_ns;
        char uuid[96];
        carve_uuid_format(s->spec.dev[i].uuid, uuid, sizeof(uuid));
        json_array_append_new(devs, json_pack("{s:i,s:s,s:I,s:I,s:I,s:I,s:b,s:i,s:I,s:s,s:s,s:f,s:f,s:I}",
            "index", s->spec.dev[i].index, "uuid", uuid,
            "memory_cap", (json_int_t)carve_slice_cap(s->handle, i),
            "memory_used", (json_int_t)carve_slice_used(s->handle, i),
            "memory_peak", (json_int_t)carve_slice_peak(s->handle, i),
            "memory_used_nvml", (json_int_t)s->nvml_used[i], "over_cap", s->over_cap[i],
            "board_place", s->boards[i] ? s->spec.dev[i].board_entry : -1,
            "oom_denials", (json_int_t)carve_slice_denials(s->handle, i),
            "compute", s->compute, "priority", s->priority[0] ? s->priority : "normal",
            "compute_share", s->share[i], "held_seconds_total", (double)ps.held_ns / 1e9,
            "launches_total", (json_int_t)ps.launches));
    }
    return devs;
}

/* The GPUs on which the slice holds device memory. */
static int gpus_held(const struct dslice *s)
{
    int n = 0;
    for (int i = 0; i < s->spec.ndev; i++) {
        unsigned index = (unsigned)s->spec.dev[i].index;
        /* a lost GPU's: its tenants cannot run there, and are not idle for it (reclaimed
           after idle_after, they were killed for the GPU's fault) */
        bool lost = index < CARVE_SLICE_MAX_DEVICES && lost_gpu[index];
        n += !s->gone[i] && !lost && carve_slice_used(s->handle, i) > 0;
    }
    return n;
}

/* Idle: holds device memory and ran no kernel (no launch noted in its table, no SM time
 * by NVML, no paced launch) since
 * idle_since. An idle stretch counts in idle GPU-hours from its start once it has lasted
 * idle_after, once for each GPU the slice holds memory on. Returns true when the policy
 * ended the slice's processes: those started in it (a pid written into its table by hand
 * was killed too, whoever's it was). */
static bool judge_idle(struct carved *d, struct dslice *s, bool busy, double now, double dt,
                       int nprocs, const struct tenant *t)
{
    int held = gpus_held(s);
    if (busy || held == 0) {
        s->idle_since = now;
        s->idle = false;
        return false;
    }
    if (s->idle_since == 0)
        s->idle_since = now;
    bool was = s->idle;
    s->idle = now - s->idle_since >= (double)d->conf.idle_after_s;
    if (s->idle)
        s->idle_gpu_hours += (was ? dt : now - s->idle_since) / 3600.0 * held;
    if (s->idle && !was)
        carved_log("slice %s idle: holds memory, no kernel for %.0f s (policy %s)", s->name,
                   now - s->idle_since, policy_name(policy_of(d, s)));
    if (!s->idle || policy_of(d, s) != CARVED_POLICY_RECLAIM)
        return false;
    int ended = 0;
    for (int i = 0; i < nprocs; i++) {
        if (!t[i].pid) {
            if (!was)
                carved_log("slice %s: a tenant of PID namespace %u (pid %d there) is in its "
                           "table, and carved cannot find it; not ended", s->name, t[i].pidns,
                           (int)t[i].ns_pid);
            continue;
        }
        int in = started_in(t[i].pid, s->shm);
        if (in != 1) {
            if (!was) /* once, not at every poll it stays idle */
                carved_log("slice %s: pid %d is in its table but %s (CARVE_SLICE=%s in its "
                           "environment); not ended", s->name, (int)t[i].pid,
                           in == 0 ? "was not started in the slice" : "carved cannot read "
                           "whether it was started in the slice", s->shm);
            continue;
        }
        kill(t[i].pid, SIGKILL);
        ended++;
    }
    carve_slice_reap(s->handle);
    if (ended == 0)
        return false;
    d->idle_reclaims++;
    carved_log("slice %s reclaimed: %d process(es) ended", s->name, ended);
    return true;
}

/* A process of a slice in the snapshot: by carved's pid (null for one of another namespace
 * that carved cannot find) and by its pid in its own PID namespace. */
static json_t *tenant_json(const struct dslice *s, const struct tenant *t)
{
    char user[64] = "?", cmd[64] = "?";
    if (t->pid)
        proc_user(t->pid, user, sizeof(user), cmd, sizeof(cmd));
    uint64_t used = 0;
    for (int dv = 0; dv < s->spec.ndev; dv++)
        used += carve_slice_slot_used(s->handle, t->slot, dv);
    return json_pack("{s:o,s:s,s:s,s:I,s:o,s:I}", "pid",
                     t->pid ? json_integer(t->pid) : json_null(), "user", user, "command", cmd,
                     "memory_used", (json_int_t)used, "pid_namespace",
                     t->pidns ? json_integer(t->pidns) : json_null(), "namespace_pid",
                     (json_int_t)t->ns_pid);
}

static json_t *slice_json(struct carved *d, struct dslice *s, bool busy, double now, double dt)
{
    static struct tenant t[CARVE_SLICE_MAX_PROCS];
    int n = slice_tenants(d, s, t, CARVE_SLICE_MAX_PROCS);
    if (judge_idle(d, s, busy, now, dt, n, t))
        n = 0;
    json_t *procs = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(procs, tenant_json(s, &t[i]));
    json_t *gone = json_array();
    for (int i = 0; i < s->spec.ndev; i++)
        if (s->gone[i]) {
            char uuid[96];
            carve_uuid_format(s->spec.dev[i].uuid, uuid, sizeof(uuid));
            json_array_append_new(gone, json_string(uuid));
        }
    char owner[32];
    user_name(s->owner, owner, sizeof(owner));
    return json_pack("{s:s,s:s,s:I,s:o,s:o,s:I,s:s,s:o,s:o,s:o,s:b,s:f,s:f,s:s}", "name",
                     s->name, "owner", owner, "uid", (json_int_t)s->owner, "users",
                     ids_names(false, (const unsigned *)s->users, s->nusers), "groups",
                     ids_names(true, (const unsigned *)s->groups, s->ngroups),
                     "created", (json_int_t)s->created, "origin", registry_origin_name(s->origin),
                     "devices", slice_devices(s, dt), "gpus_gone", gone, "processes", procs,
                     "idle", s->idle,
                     "idle_seconds", s->idle_since > 0 ? now - s->idle_since : 0.0,
                     "idle_gpu_hours", s->idle_gpu_hours, "policy_idle",
                     policy_name(policy_of(d, s)));
}

/* An escape counts once, in the poll that first sees it, not in every poll it lasts: a pid
 * is the same escape while it stays one, and also when one poll missed it (a process list
 * read while it changes), so it is new only if neither of the last two polls had it. One
 * seen on a GPU that is lost now is kept as seen until the GPU answers again: NVML lists
 * nothing there meanwhile, and the same process was counted again when it came back. */
static void count_new_escapes(struct carved *d, const json_t *escapes)
{
    struct seen_escape {
        unsigned pid;
        long long gpu;
    };
    static struct seen_escape seen[2][MAX_PROCS], now_seen[MAX_PROCS];
    static size_t nseen[2];
    size_t n = 0, i;
    const json_t *e;
    json_array_foreach(escapes, i, e) {
        unsigned pid = (unsigned)json_integer_value(json_object_get(e, "pid"));
        long long gpu = json_integer_value(json_object_get(e, "gpu"));
        /* one process on several GPUs is one escape: it is listed once per GPU */
        bool old = false;
        for (size_t j = 0; j < n && !old; j++)
            old = now_seen[j].pid == pid;
        for (int k = 0; k < 2 && !old; k++)
            for (size_t j = 0; j < nseen[k] && !old; j++)
                old = seen[k][j].pid == pid;
        const char *action = json_string_value(json_object_get(e, "action"));
        if (!old && action && strcmp(action, "not_killed") == 0)
            carved_log("escape: pid %u, which NVML lists on GPU %lld, is not a CUDA process here "
                       "(%s): not killed. NVML may name processes by pids of another PID "
                       "namespace than carved's; run carved in the host's", pid, gpu,
                       json_string_value(json_object_get(e, "command")));
        if (!old)
            d->escapes_total++;
        if (n < MAX_PROCS)
            now_seen[n++] = (struct seen_escape){pid, gpu};
    }
    /* of both polls kept: one that missed it just before the GPU was lost had it in the
       older only */
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < nseen[k] && n < MAX_PROCS; j++) {
            struct seen_escape was = seen[k][j];
            if (was.gpu < 0 || was.gpu >= CARVE_SLICE_MAX_DEVICES || !lost_gpu[was.gpu])
                continue;
            bool kept = false;
            for (size_t i2 = 0; i2 < n && !kept; i2++)
                kept = now_seen[i2].pid == was.pid && now_seen[i2].gpu == was.gpu;
            if (!kept)
                now_seen[n++] = was;
        }
    memcpy(seen[1], seen[0], nseen[0] * sizeof(seen[0][0]));
    nseen[1] = nseen[0];
    memcpy(seen[0], now_seen, n * sizeof(seen[0][0]));
    nseen[0] = n;
}

/* A slice made for one `carve run` ends with it: when that carve run is gone and no process
 * is left in the slice (a SIGKILLed carve run cannot ask for it). Gone: no process has its
 * pid, or the one that has it started at another time (the pid was reused; such a slice
 * stayed until that process ended, until 2026-11-28). */
static void end_orphan_runs(struct carved *d)
{
    struct carve_slice_owner owner[1];
    unsigned pids[1];
    char err[256];
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        struct dslice *s = &d->slices[i];
        if (!s->used || s->origin != ORIGIN_RUN || s->creator <= 0)
            continue;
        /* judged only where /proc is carved's own (the pid is in carved's namespace), and an
           unreadable entry (hidepid, no fd left) proves nothing */
        uint64_t started = s->creator_start && carve_proc_is_own() == 1
                               ? carve_proc_start_time(s->creator) : 0;
        bool reused = started && started != s->creator_start;
        if (!reused && (kill(s->creator, 0) == 0 || errno != ESRCH))
            continue;
        /* tenants of other namespaces too, until find_foreign finds them gone */
        if (carve_slice_pids(s->handle, pids, 1) == 0 &&
            carve_slice_foreign(s->handle, owner, 1) == 0)
            registry_delete(d, s, err, sizeof(err));
    }
}

/* The node's counters go into slices.json when they change, not only at a change of a slice
 * and at stop: a carved that died (SIGKILL, a crash, the OOM killer) lost every escape and
 * reclaim counted since, and carve_escapes_total went back in Prometheus. Escapes and
 * reclaims are rare; a write each is cheap. */
static void save_node_counters(struct carved *d)
{
    static unsigned long long saved[3];
    unsigned long long now[3] = {d->escapes_total, d->escapes_killed, d->idle_reclaims};
    char err[512];
    if (memcmp(now, saved, sizeof(now)) == 0)
        return;
    if (registry_save(d, err, sizeof(err)) < 0)
        carved_log("%s", err);
    memcpy(saved, now, sizeof(saved)); /* a failed write is logged once, not every poll */
}

static void poll_once(struct carved *d, double now)
{
    double dt = last_poll > 0 ? now - last_poll : 0;
    last_poll = now;
    nnames = 0; /* names as they are now: a renamed user shows at the next poll */
    d->stale = false;
    end_orphan_runs(d);
    find_foreign(d);
    read_members(d);
    static bool busy[CARVED_MAX_SLICES];
    memset(busy, 0, sizeof(busy));
    for (int i = 0; i < CARVED_MAX_SLICES; i++) /* set again for each GPU NVML answers for */
        memset(d->slices[i].nvml_sm_ok, 0, sizeof(d->slices[i].nvml_sm_ok));
    json_t *gpus = json_array(), *escapes = json_array(), *slices = json_array();
    poll_parts[0] = gpus;
    poll_parts[1] = escapes;
    poll_parts[2] = slices;
    for (int g = 0; g < d->ngpu && nv.handle; g++)
        json_array_append_new(gpus, gpu_json(d, g, escapes, busy));
    for (int k = 0; k < d->driver.nunread && nv.handle; k++)
        insert_by_index(gpus, unlisted_gpu_json(d, k));
    count_new_escapes(d, escapes);
    unsigned long long denials = 0;
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        struct dslice *s = &d->slices[i];
        if (!s->used)
            continue;
        for (int dv = 0; dv < s->spec.ndev; dv++) {
            denials += carve_slice_denials(s->handle, dv);
            struct carve_pace_stats ps = carve_slice_pace_stats(s->handle, dv);
            busy[i] |= ps.charged_ns != s->last_charged[dv];
        }
        busy[i] |= carve_slice_take_ran(s->handle);
        json_array_append_new(slices, slice_json(d, s, busy[i], now, dt));
    }
    json_t *waiting = json_array();
    for (int i = 0; i < d->conf.nslices; i++)
        if (d->conf_state[i].waiting)
            json_array_append_new(waiting, json_pack("{s:s,s:i,s:s}", "name",
                                                     d->conf.slices[i].name, "line",
                                                     d->conf.slices[i].line, "why",
                                                     d->conf_state[i].why));
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    memset(poll_parts, 0, sizeof(poll_parts)); /* the snapshot takes them */
    json_t *snap = json_pack("{s:i,s:s,s:f,s:b,s:o,s:o,s:o,s:o,s:{s:I,s:I,s:I,s:I}}",
        "version", CARVED_SNAPSHOT_VERSION, "node", host, "time", clock_seconds(CLOCK_REALTIME), "simulated", d->simulate,
        "gpus", gpus, "slices", slices, "escapes", escapes, "config_waiting", waiting, "totals",
        "escapes", (json_int_t)d->escapes_total, "escapes_killed", (json_int_t)d->escapes_killed,
        "idle_reclaims", (json_int_t)d->idle_reclaims, "oom_denials", (json_int_t)denials);
    if (snap) {
        json_decref(d->snapshot);
        d->snapshot = snap;
    }
    save_node_counters(d);
}

/* carve_slice_sweep_killed's report: one line in carved's log a slice removed. */
static void log_swept(const char *shm, bool terms_only, int pid, unsigned uid, void *arg)
{
    (void)arg;
    carved_log("removed slice %s%s of a carve run that ended without removing it (pid %d, "
               "uid %u, runs no more)", shm, terms_only ? " (its terms: the table was gone)" : "",
               pid, uid);
}

void monitor_poll(struct carved *d, double now)
{
    static unsigned polls;
    if (polls++ % ORPHAN_SWEEP_POLLS == 0)
        carve_slice_sweep_killed(true, 0, log_swept, NULL);
    if (sigsetjmp(poll_escape, 1)) { /* a table was cut short: what was built is dropped */
        in_poll = 0;
        for (size_t i = 0; i < sizeof(poll_parts) / sizeof(poll_parts[0]); i++) {
            json_decref(poll_parts[i]); /* they leaked, a poll's worth each time */
            poll_parts[i] = NULL;
        }
        remake_broken(d, cut_or_gone, "its objects", "were truncated or removed");
        return;
    }
    in_poll = 1;
    remake_broken(d, head_overwritten, "the head of its table", "was overwritten");
    poll_once(d, now);
    in_poll = 0;
}

static double clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double monitor_now(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}
