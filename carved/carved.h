/* carved.h - the node daemon's shared declarations: its configuration, and the snapshot of
 * the node (GPUs, slices, processes, escapes) that the socket API, the metrics and the
 * dashboard all read. Each component keeps its own state static; this header is the
 * contract between them. */
#ifndef CARVED_H
#define CARVED_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpus.h"
#include "slice.h"

#define CARVED_NAME_MAX CARVE_SLICE_NAME_MAX /* a slice's name, with its NUL */
#define CARVED_SPEC_MAX 128     /* a --memory / --compute / --priority text, with its NUL */
#define CARVED_MAX_IDS 32       /* users or groups named on one line */
#define CARVED_MAX_CONF_SLICES 256

enum carved_policy {
    CARVED_POLICY_REPORT = 0, /* flag it in `carve ps`, the metrics and the log */
    CARVED_POLICY_KILL = 1,   /* escapes: SIGKILL the process */
    CARVED_POLICY_RECLAIM = 2 /* idle slices: end the slice's processes, free its memory */
};

/* A slice declared in the config file ([slice NAME] section). Sizes and shares are kept as
 * the user wrote them and parsed with the CLI's parsers (size.h, compute.h) when the slice
 * is made, so both accept exactly the same forms; the config parser checks them at load. */
struct carved_slice_conf {
    char name[CARVED_NAME_MAX];
    char memory[CARVED_SPEC_MAX];   /* "" = no cap; else a carve run --memory SPEC */
    char compute[CARVED_SPEC_MAX];  /* "" = unpaced; else "30%" or "30%+" */
    char priority[CARVED_SPEC_MAX]; /* "" = normal; latency | batch | normal */
    uid_t users[CARVED_MAX_IDS];    /* who may run in it (besides root) */
    int nusers;
    gid_t groups[CARVED_MAX_IDS];   /* members of these groups may too */
    int ngroups;
    int idle_policy;                /* -1: the node's; else CARVED_POLICY_REPORT/_RECLAIM */
    int line;                       /* where it was declared, for messages */
    /* the GPUs the slice is on, by UUID (the API's "gpus"); ngpus 0: every GPU of the node */
    uint8_t gpus[CARVE_SLICE_MAX_DEVICES][16];
    int ngpus;
    /* the config's `gpus', as written: carved finds them among the node's GPUs (into gpus)
       when it starts, for the config is read before NVML (carved --check-config) */
    struct carve_gpu_ref gpu_refs[CARVE_SLICE_MAX_DEVICES];
    int ngpu_refs;
};

struct carved_config {
    char socket_path[108];   /* the unix socket of the API (default /run/carve/carved.sock) */
    char state_dir[PATH_MAX]; /* slices survive restarts here (default /var/lib/carve) */
    char listen[128];        /* HTTP: "127.0.0.1:9477"; "" or "off" = no HTTP listener */
    uint64_t poll_ms;        /* how often NVML and the slices are read (default 1000) */
    uint64_t idle_after_s;   /* memory held, no kernel for this long = idle (default 1800) */
    int idle_policy;         /* report (default) | reclaim */
    int escape_policy;       /* report (default) | kill */
    bool allow_user_slices;  /* may non-admins create slices (`carve run --memory` through
                                carved, `carve slice create`)? default yes */
    uid_t admins[CARVED_MAX_IDS]; /* may create/delete any slice (root always may) */
    int nadmins;
    gid_t admin_groups[CARVED_MAX_IDS];
    int nadmin_groups;
    struct carved_slice_conf slices[CARVED_MAX_CONF_SLICES];
    int nslices;
};

/* Fills c with the defaults above. */
void carved_config_defaults(struct carved_config *c);
/* Parses a config text (file name used in messages only). 0, or -EINVAL with a message
 * "FILE:LINE: what is wrong (what is accepted)" in err. On error c holds the defaults plus
 * whatever was read before the bad line; callers discard it. Never crashes on any bytes. */
int carved_config_parse(const char *text, size_t len, const char *file, struct carved_config *c,
                        char *err, size_t errlen);
/* Reads and parses a file: 0, -errno (cannot read, message names the file) or -EINVAL. */
int carved_config_load(const char *path, struct carved_config *c, char *err, size_t errlen);
/* Sets one node key (carved's --socket, --state-dir, --listen) as a config line would: 0, or
 * -EINVAL with what is wrong and what is accepted in err. */
int carved_config_set(struct carved_config *c, const char *key, const char *value, char *err,
                      size_t errlen);

/* The HTTP listener (libmicrohttpd, its own thread): GET /metrics (Prometheus text),
 * /api/state (the snapshot as JSON), / (the dashboard). It serves the latest snapshot given
 * to carved_http_publish; until the first one, /metrics and /api/state answer 503. */
int carved_http_start(const char *listen, char *err, size_t errlen);
/* Takes a reference to snap (the caller keeps its own); thread-safe. */
void carved_http_publish(json_t *snap);
void carved_http_stop(void);
/* How many snapshots /api/state has served since the start (the dashboard polls it). */
unsigned long carved_http_state_served(void);
/* The Prometheus text for a snapshot (malloc'd, NUL-terminated; NULL on out of memory).
 * Exposed for tests. */
char *carved_metrics_render(const json_t *snap);

/*
 * The snapshot (schema version 1), built by the monitor every poll. Every field is always
 * present; sizes in bytes, times in seconds, shares in percent of one GPU's time.
 *
 * {
 *   "version": 1, "node": "hostname", "time": 1763900000.5, "simulated": true,
 *   "gpus": [ {
 *       "index": 0, "uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3",
 *       "pci_bus_id": "00000000:18:00.0" ("" when NVML does not say), "device": "nvidia0",
 *       "memory_total": N, "memory_used": N, "utilization": 37,
 *       "lost": false (true: NVML says the GPU is lost, fallen off the bus; then memory_used,
 *         utilization and processes read as none),
 *       "processes": [ { "pid": 123, "used_memory": N, "sm_util": 12,
 *                        "slice": "train" or null, "user": "alice", "command": "python",
 *                        "mps_server": false (true: NVIDIA's MPS server, in no slice and no
 *                          escape; its clients are listed themselves) } ]
 *   } ],
 *   "slices": [ {
 *       "name": "train", "owner": "alice", "uid": 1000, "created": 1763900000,
 *       "users": ["bob", "1001"], "groups": ["wheel"],  (who else may join: names, or numbers)
 *       "origin": "config" | "api" | "run",   (run: made by `carve run` for one command)
 *       "devices": [ { "index": 0, "uuid": "GPU-...", "memory_cap": N (0 = none),
 *                      "memory_used": N, "memory_peak": N, "oom_denials": N,
 *                      "memory_used_nvml": N (its processes by NVML), "over_cap": false,
 *                      "board_place": N (its entry on the GPU's compute board; -1: none),
 *                      "compute": "30%" or "", "priority": "normal",
 *                      "compute_share": 28.5 (achieved, last poll interval: its
 *                        processes' SM time by NVML, summed; the limiter's charges where
 *                        NVML gives no per-process utilisation),
 *                      "held_seconds_total": 1.25,
 *                      "launches_total": N (launches the limiter charged) } ],
 *       "gpus_gone": [ "GPU-..." ] (GPUs it was made for that the node no longer has, by
 *         UUID: kept in the slice, in no entry of its devices; a restart adopted it so, or
 *         made it again so from slices.json after a reboot),
 *       "processes": [ { "pid": 123 (carved's pid for it; null: a process of another PID
 *                          namespace that carved cannot find, user and command "?"),
 *                        "user": "alice", "command": "python", "memory_used": N,
 *                        "pid_namespace": 4026531836 (the inode of its /proc/PID/ns/pid;
 *                          null: unknown), "namespace_pid": 123 (its pid there) } ],
 *       "idle": false, "idle_seconds": 12.0 (memory held and no kernel since),
 *       "idle_gpu_hours": 0.0 (idle stretches of idle_after or more, from their start,
 *       times the GPUs holding its memory; kept across restarts), "policy_idle": "report"
 *   } ],
 *   "escapes": [ { "gpu": 0, "uuid": "GPU-...", "pid": 456, "user": "bob",
 *                  "command": "a.out", "used_memory": N, "action": "reported" | "killed" |
 *                  "not_killed" (under kill, a pid that is no CUDA process here: NVML's pids
 *                  of another PID namespace), "reason": "no_slice" | "over_cap" | "not_allowed" (started in a
 *                  slice its user may not join), "slice": null | "train" } ],
 *   "totals": { "escapes": N (seen since start), "escapes_killed": N,
 *               "idle_reclaims": N,
 *               "oom_denials": N (the slices there now, each since it was made) }
 * }
 */
#define CARVED_SNAPSHOT_VERSION 1

#endif
