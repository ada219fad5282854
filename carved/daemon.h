/* daemon.h - what carved's own files share: the registry of slices it owns (registry.c),
 * the monitor that reads NVML and the slices into a snapshot (monitor.c), and the request
 * handler of the socket API (api.c). One daemon per node; single-threaded except for the
 * HTTP thread, which only ever sees published snapshots. */
#ifndef CARVED_DAEMON_H
#define CARVED_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>

#include "board.h"
#include "carved.h"
#include "gpus.h"
#include "slice.h"

#define CARVED_MAX_SLICES 1024
/* A user not among carved's admins holds at most this many slices: one user filled all
 * 1024, and every other user's carve run was refused. */
#define CARVED_MAX_USER_SLICES 64
/* ... and at most this many with compute settings (a place on each of its GPUs' boards, 64
 * there for every user): one user's 64 such slices took every place on every GPU, and every
 * other user's, admins' and Slurm jobs' compute settings were refused (a review, 2026-11-29). */
#define CARVED_MAX_USER_BOARD_SLICES 16

enum carved_origin { ORIGIN_CONFIG, ORIGIN_API, ORIGIN_RUN };

struct dslice {
    bool used;
    char name[CARVED_NAME_MAX];
    char shm[96];
    char memory[CARVED_SPEC_MAX], compute[CARVED_SPEC_MAX], priority[CARVED_SPEC_MAX];
    int origin;
    uid_t owner;
    pid_t creator; /* ORIGIN_RUN: the carve run that asked; the slice ends with it */
    /* its start time (carve_proc_start_time), 0: not known (a slices.json of before
       2026-11-28): a process of another start under its pid is not it */
    uint64_t creator_start;
    uid_t users[CARVED_MAX_IDS];
    int nusers;
    gid_t groups[CARVED_MAX_IDS];
    int ngroups;
    int idle_policy;
    long long created;
    struct carve_slice *handle;
    struct carve_slice_spec spec;
    struct carve_board *boards[CARVE_SLICE_MAX_DEVICES];
    /* an adopted slice's GPU (by the UUID in its terms) that the node no longer has: kept in
       its terms, its index the one it had when the slice was made, left out of the
       snapshot's devices and listed as gone */
    bool gone[CARVE_SLICE_MAX_DEVICES];
    /* made on the GPUs its request named ("gpus"), not on every GPU of the node: the node's
       other GPUs are not the slice's by choice, not because they came after it */
    bool chosen_gpus;
    /* the monitor's books */
    double idle_since;      /* when it last was busy or held no memory */
    double idle_gpu_hours;
    bool idle;
    unsigned long long last_charged[CARVE_SLICE_MAX_DEVICES];
    double share[CARVE_SLICE_MAX_DEVICES];
    /* what NVML says the slice's processes hold on each of its GPUs, the check on counters
       that tenants can write; over_cap: past the cap by more than the tolerance */
    uint64_t nvml_used[CARVE_SLICE_MAX_DEVICES];
    bool over_cap[CARVE_SLICE_MAX_DEVICES];
    /* what NVML says its processes ran on each GPU since the last poll (their smUtil, summed,
       percent); nvml_sm_ok: NVML gave per-process utilisation for that GPU this poll */
    double nvml_sm[CARVE_SLICE_MAX_DEVICES];
    bool nvml_sm_ok[CARVE_SLICE_MAX_DEVICES];
};

struct carved {
    struct carved_config conf;
    bool simulate;
    char libdir[PATH_MAX];
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    int ngpu;
    /* the driver, and the GPUs NVML counted but did not answer for at carved's start (lost):
       not in gpus[], shown as such by the polls (monitor.c) */
    struct carve_driver_info driver;
    struct dslice slices[CARVED_MAX_SLICES];
    unsigned long long escapes_total, escapes_killed, idle_reclaims;
    /* the config's slices carved could not make at its start for want of room (a guarantee
       that does not fit beside the slices held, no free place): made at a later poll once
       they fit (registry_make_waiting); code and why: the last refusal */
    struct {
        bool waiting;
        int code; /* the refusal's: -EDQUOT, its guarantee does not fit; -ENOSPC, no place */
        char why[512];
    } conf_state[CARVED_MAX_CONF_SLICES];
    json_t *snapshot; /* the latest, owned */
    bool stale;       /* slices made or deleted since it was built: list and ps rebuild it */
};

/* registry.c */
int registry_load(struct carved *d, char *err, size_t errlen);
int registry_save(const struct carved *d, char *err, size_t errlen);
/* Makes slice s anew under another object name, with its request, owner and origin (its
 * objects were broken: truncated by a tenant); its old objects are removed. */
int registry_remake(struct carved *d, struct dslice *s, char *err, size_t errlen);
struct dslice *registry_find(struct carved *d, const char *name);
/* Makes the config's slices that wait for room, where they fit now; at each poll. */
void registry_make_waiting(struct carved *d);
/* Makes a slice from its request (strings as the CLI takes them); 0 or -errno + message:
 * -EDQUOT for a guarantee that would take a GPU's guarantees past 100%, and only for it. */
int registry_create(struct carved *d, const struct carved_slice_conf *req, int origin,
                    uid_t owner, pid_t creator, char *err, size_t errlen);
int registry_delete(struct carved *d, struct dslice *s, char *err, size_t errlen);
/* May the user (uid, with its groups) run in s / manage s? */
bool registry_may_join(const struct carved *d, const struct dslice *s, uid_t uid, gid_t gid);
bool registry_may_manage(const struct carved *d, const struct dslice *s, uid_t uid, gid_t gid);
bool registry_is_admin(const struct carved *d, uid_t uid, gid_t gid);
/* How many slices uid owns (made through the socket, not the config). */
int registry_owned(const struct carved *d, uid_t uid);
/* How many of them hold places on GPUs' boards (compute settings). */
int registry_owned_on_boards(const struct carved *d, uid_t uid);
/* Whether a slice so described has compute settings (a share, or a priority other than
 * normal): a place on the board of each of its GPUs. */
bool registry_on_boards(const struct carved_slice_conf *c);
/* The node's GPU whose UUID is uuid (an index into d->gpus), or -1. */
int registry_gpu_of_uuid(const struct carved *d, const uint8_t uuid[16]);
/* c's gpus from the GPUs refs name (carve slice create --gpus, the config's gpus): 0, or
 * -ENODEV/-EINVAL with which one this node lacks or which is named twice in err. */
int registry_gpus_named(const struct carved *d, const struct carve_gpu_ref *refs, int n,
                        struct carved_slice_conf *c, char *err, size_t errlen);
const char *registry_origin_name(int origin);

/* monitor.c */
int monitor_open(struct carved *d, char *err, size_t errlen);
/* One poll: reads NVML and the slices, applies the escape and idle policies, and rebuilds
 * d->snapshot. now is monitor_now()'s. */
void monitor_poll(struct carved *d, double now);
/* Seconds on a clock that only goes forward (CLOCK_MONOTONIC), for every interval carved
 * times: polls, idle stretches, clients' time limits. The wall clock steps (NTP, a resumed
 * VM, date -s): an hour forward made every slice holding memory idle at once, and reclaimed
 * it; an hour back stopped the polls for an hour. Only the snapshot's "time" is wall clock. */
double monitor_now(void);
void monitor_close(void);

/* api.c: one request line in, one reply (a new JSON object) out, and in *pass_fd an fd to
 * send with it (a join that asked for the slice's table; the caller closes it) or -1. */
json_t *api_handle(struct carved *d, const char *line, uid_t uid, gid_t gid, pid_t pid,
                   int *pass_fd);

/* main.c */
void carved_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
