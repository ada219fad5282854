/* proc.h - what /proc/PID/stat says of a process (its name, its state, its parent, its start
 * time), whose it is and its pid in its own PID namespace by /proc/PID/status, which PID
 * namespace it is in; and closing a child's inherited files before it runs another program. */
#ifndef CARVE_PROC_H
#define CARVE_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct carve_proc_stat {
    char comm[16];  /* the name, cut to 15 characters by the kernel */
    char state;     /* R, S, D, Z (exited, not yet reaped), X, ... */
    pid_t ppid;     /* the parent */
    uint64_t start; /* start time in clock ticks since boot: with the pid, names the process */
};

/* 0 and *st filled, or -1 when the entry cannot be read (gone, or /proc hidden). */
int carve_proc_stat(pid_t pid, struct carve_proc_stat *st);
/* The same of this process, by /proc/self: right also where /proc is an outer PID
 * namespace's, whose /proc/PID is another process than this process's PID. */
int carve_proc_stat_self(struct carve_proc_stat *st);
/* 1 when pid runs: kill(2) finds it and /proc does not call it exited (a zombie waiting for
 * a parent, or a PID 1 that reaps late or never). A hidden /proc leaves kill's word. */
int carve_proc_running(pid_t pid);
/* 1 when pid runs, as above, and is the process that started at start (clock ticks since
 * boot, as carve_proc_stat gives it; 0 or an unreadable entry: any): a reused pid is another
 * process. One read of /proc/PID/stat: a Slurm job's 256 steps each looking at every step
 * read /proc half a million times when the start time was read apart. */
int carve_proc_alive_since(pid_t pid, uint64_t start);
/* 0 with the process's effective uid and gid from /proc/PID/status, or -1. Not the owner
 * of /proc/PID: a process that makes itself non-dumpable has its entry owned by root. */
int carve_proc_ids(pid_t pid, uid_t *uid, gid_t *gid);
/* 1 when pid maps the CUDA driver (a libcuda.so, the real one or the simulated GPU's) or an
 * NVIDIA device file, as every process that NVML sees on a GPU does; 0 when it maps
 * neither; -1 when its maps cannot be read (gone, or not ours to read). */
int carve_proc_uses_cuda(pid_t pid);
/* 1 when pid runs NVIDIA's MPS server: the file it executes is named nvidia-cuda-mps-server,
 * is owned by root or by trusted_owner (the daemon's own user, who installed it) and is not
 * writable by group or others, so that a user's own program renamed so is not taken for
 * it; 0 when not; -1 when its executable cannot be read (gone, or not ours to look at). */
#define CARVE_MPS_SERVER_NAME "nvidia-cuda-mps-server"
int carve_proc_is_mps_server(pid_t pid, uid_t trusted_owner);
/* This process's children (its main thread's, /proc/self/task/PID/children; a child
 * subreaper's include the orphans that came to it): their count, at most max. */
int carve_proc_children(pid_t *out, int max);
/* The pid that pid has in its own PID namespace (the last of /proc/PID/status's NSpid) into
 * *inner: the count of namespaces it is seen in from here (1: this one, *inner == pid; more:
 * one below this), or -1 when it cannot be read (gone, hidden, or a kernel before 4.1). */
int carve_proc_ns_pid(pid_t pid, pid_t *inner);
/* Closes every file descriptor from low up: close_range(2) where the kernel has it (5.9 and
 * later), else those /proc/self/fd lists, else each one below the descriptor limit. Uses no
 * allocation: for a child between fork and exec. */
void carve_close_from(int low);
/* The fallbacks of carve_close_from alone (what a kernel without close_range gets), for
 * tests. */
void carve_close_listed_from(int low);
/* 1 when this process runs in the host's (the initial) PID namespace, 0 when in another. */
int carve_proc_host_pid_namespace(void);

/* The kernel numbers the initial PID namespace's inode so (PROC_PID_INIT_INO). */
#define CARVE_HOST_PID_NS 0xEFFFFFFCu
/* pid's namespace of a kind ("pid", "time", ...), by the inode of /proc/PID/ns/KIND (pid 0:
 * this process); 0 when it cannot be read (gone, not ours to look into, no /proc). The
 * kernel's namespace inodes are 32 bits, and the same whichever /proc names them. */
uint32_t carve_proc_ns(pid_t pid, const char *kind);
/* pid's pid in its own PID namespace: the last field of NSpid in /proc/PID/status (pid 0:
 * this process). 0, or -1 when it cannot be read (or a kernel before 4.1, which has no
 * NSpid). */
int carve_proc_inner_pid(pid_t pid, pid_t *inner);
/* 1 when /proc is this process's PID namespace's (its /proc/PID are this process's PIDs:
 * NSpid there has one field), 0 when it is an outer namespace's (a process of a namespace
 * made without a /proc of its own, as by unshare -p -f without --mount-proc), -1 when
 * /proc/self cannot be read. */
int carve_proc_is_own(void);

/* A process to find by its pid in its own PID namespace: found is its pid in /proc as this
 * process sees it (the host's pid, where /proc is the host's), 0 when not found. */
struct carve_proc_nspid {
    uint32_t ns;
    pid_t pid;
    pid_t found;
};
/* Looks for each of want[0, n) in one pass over /proc. 1 when every process listed there
 * could be looked into (then one not found is not there), 0 when some could not be (not
 * ours: one not found may be among them), -1 when /proc cannot be read. */
int carve_proc_find_nspids(struct carve_proc_nspid *want, int n);

#endif
