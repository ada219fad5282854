/* proc.h - what /proc/PID/stat says of a process (its name, its state, its start time), and
 * whose it is by /proc/PID/status. */
#ifndef CARVE_PROC_H
#define CARVE_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct carve_proc_stat {
    char comm[16];  /* the name, cut to 15 characters by the kernel */
    char state;     /* R, S, D, Z (exited, not yet reaped), X, ... */
    uint64_t start; /* start time in clock ticks since boot: with the pid, names the process */
};

/* 0 and *st filled, or -1 when the entry cannot be read (gone, or /proc hidden). */
int carve_proc_stat(pid_t pid, struct carve_proc_stat *st);
/* 1 when pid runs: kill(2) finds it and /proc does not call it exited (a zombie waiting for
 * a parent, or a PID 1 that reaps late or never). A hidden /proc leaves kill's word. */
int carve_proc_running(pid_t pid);
/* 0 with the process's effective uid and gid from /proc/PID/status, or -1. Not the owner
 * of /proc/PID: a process that makes itself non-dumpable has its entry owned by root. */
int carve_proc_ids(pid_t pid, uid_t *uid, gid_t *gid);

#endif
