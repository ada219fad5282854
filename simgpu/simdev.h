/* simdev.h - the simulated GPU's devices: their configuration (CARVE_SIM_* variables) and
 * the state every process using them shares through one mapped file (memory in use per
 * process, the kernel timeline, recent kernel intervals for utilisation). Used by both the
 * simulated libcuda.so.1 and libnvidia-ml.so.1. */
#ifndef CARVE_SIMDEV_H
#define CARVE_SIMDEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SIM_MAX_DEVICES 16
#define SIM_MAX_PROCS 512
#define SIM_RING 4096

struct sim_config {
    int ndev;
    uint64_t memory[SIM_MAX_DEVICES];
    int sms;
    char name[96];
    char uuid[SIM_MAX_DEVICES][48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    bool mig;    /* MIG-capable (CARVE_SIM_MIG set to 1, on or off) */
    bool mig_on; /* MIG mode on (CARVE_SIM_MIG=1 or on) */
    /* NVML gives per-process utilisation: not in MIG mode (as NVML documents), nor with
     * CARVE_SIM_PROC_UTIL=off (as under vGPU or on GPUs that lack it) */
    bool proc_util;
    /* added to every pid NVML names (CARVE_SIM_NVML_PID_OFFSET): processes as seen from
     * another PID namespace, as NVML in a container may name them */
    int nvml_pid_offset;
    /* added on top to the pids of utilisation samples only (CARVE_SIM_NVML_UTIL_PID_OFFSET):
     * drivers that translate the process list's pids into a container's namespace and not
     * the samples' */
    int nvml_util_pid_offset;
    /* the NVML process lists that name this process (SIM_LIST_* bits, from
     * CARVE_SIM_PROC_LISTS: compute, graphics, mps, comma-separated, or all; default
     * compute): a process that draws, or an MPS client, as the driver lists them */
    uint32_t proc_lists;
    /* microseconds cuMemFree_v2 waits before it frees (CARVE_SIM_FREE_DELAY_US; 0): widens
     * the window in which two threads' frees of one pointer race, for the tests of it */
    unsigned alloc_delay_us; /* CARVE_SIM_ALLOC_DELAY_US: each cuMemAlloc_v2 waits first */
    unsigned free_delay_us;
    /* microseconds cuMemMap waits before it maps (CARVE_SIM_MAP_DELAY_US; 0): widens the
     * window in which a release of its handle races with it, for the tests of it */
    unsigned map_delay_us;
    /* microseconds cuMemUnmap waits after it unmaps (CARVE_SIM_UNMAP_DELAY_US; 0): widens the
     * window in which another thread maps the address again before the unmap returns */
    unsigned unmap_delay_us;
    /* microseconds cuMemRetainAllocationHandle waits after it has taken its reference, before
     * it returns (CARVE_SIM_RETAIN_DELAY_US; 0): widens the window in which a release or an
     * unmap on another thread races with a retain the caller has not counted yet */
    unsigned retain_delay_us;
    /* a use of an event whose context went (destroyed, or a primary context released for
     * the last time or reset) aborts the process, naming the call (CARVE_SIM_STALE_EVENTS=
     * abort); else the call fails with CUDA_ERROR_INVALID_HANDLE. A real driver freed such an
     * event with its context: a use after free there, caught here for the tests */
    bool stale_events_abort;
    /* nvmlComputeMode_t's value for every GPU (CARVE_SIM_COMPUTE_MODE, 0-3; 0 Default):
     * NVML reports it, and contexts follow it as a GPU's do (Prohibited: none; Exclusive_
     * Process: one process's at a time) */
    int compute_mode;
    uint64_t ctx_memory;
    uint64_t module_memory;
    uint64_t lazy_memory; /* taken by a module at its first cuModuleGetFunction */
    /* CARVE_SIM_TIMESLICE_US (0: off): the processes' kernels on a device take turns in
     * slices this long, as a GPU time-slices contexts, instead of running one after another
     * in the order they were launched (sim_sched.c) */
    uint64_t timeslice_ns;
    char state_path[256];
};

/* An interval's process: its entry's index and that entry's generation (a later owner of
 * the entry is not charged its predecessor's intervals). */
#define SIM_RING_KEY(index, gen) ((uint32_t)(gen) << 10 | ((uint32_t)(index) + 1))

struct sim_interval {
    _Atomic uint64_t start_ns, end_ns;
    _Atomic uint32_t entry; /* the running process's entry: SIM_RING_KEY */
};

enum { SIM_LIST_COMPUTE = 1, SIM_LIST_GRAPHICS = 2, SIM_LIST_MPS = 4 };

struct sim_proc {
    _Atomic int32_t pid;     /* in its own PID namespace */
    _Atomic uint32_t pidns;  /* that namespace: the inode of /proc/self/ns/pid; 0 unknown */
    _Atomic uint32_t gen;    /* counts the entry's claims: which of one pid's processes */
    _Atomic uint32_t locked; /* its process holds the entry's lock (simdev.c, lock_entry) */
    _Atomic uint32_t lists;  /* SIM_LIST_*: the NVML process lists that name it */
    _Atomic uint64_t start_time;
    _Atomic uint64_t used[SIM_MAX_DEVICES];
    _Atomic uint64_t unlisted[SIM_MAX_DEVICES]; /* of used, what NVML's usage of the process
                                                   leaves out: managed memory */
    _Atomic uint32_t contexts[SIM_MAX_DEVICES];
    _Atomic uint64_t busy_ns[SIM_MAX_DEVICES];
    _Atomic uint32_t mig_gi[SIM_MAX_DEVICES]; /* the MIG GPU instance it runs in, 0: none */
};

/* Time-slicing (sim_sched.c): the kernels queued on a device, each process's in the order it
 * launched them, run a slice of CARVE_SIM_TIMESLICE_US per process in turn. All of it under
 * the lock. */
#define SIM_QUEUE 8192 /* a launch waits while the one this many launches before it runs */
#define SIM_TIMELINE_UNITS 64   /* processes with kernels queued on a device; likewise */
#define SIM_TICKET (1ULL << 63) /* a mark that is a kernel's ticket, not a time */

struct sim_queued {
    uint64_t seq;     /* its ticket; 0: the slot was never used */
    uint64_t left_ns; /* of its work, what is left at the timeline's base */
    uint64_t end_ns;  /* when it ended; 0 while it waits or runs */
    uint32_t next;    /* its process's next kernel: index + 1 in queue[], 0 none */
    uint64_t prev_seq, prev_end_ns; /* the slot's kernel before it, which had ended */
};

struct sim_unit {
    uint32_t key;        /* its process: SIM_RING_KEY */
    uint32_t head, tail; /* its queued kernels: index + 1 in queue[], 0 none */
};

struct sim_timeline {
    pthread_mutex_t lock; /* process-shared, robust */
    uint64_t next_seq;
    uint64_t base_ns;       /* run up to here */
    uint32_t current;       /* the unit running: index + 1 in units[], 0 none */
    uint32_t resume;        /* with none running, the unit whose turn may come first */
    uint64_t slice_used_ns; /* of its slice */
    uint32_t nunits;
    struct sim_unit units[SIM_TIMELINE_UNITS];
    struct sim_queued queue[SIM_QUEUE];
};

struct sim_device_state {
    uint64_t total;
    _Atomic uint64_t busy_until_ns; /* the device's kernel timeline, shared by all processes */
    _Atomic uint64_t ring_head;
    struct sim_interval ring[SIM_RING];
};

struct sim_shared {
    uint64_t magic;
    uint64_t config_hash;
    uint32_t ndev;
    uint32_t size;
    struct sim_device_state dev[SIM_MAX_DEVICES];
    struct sim_proc proc[SIM_MAX_PROCS];
    struct sim_timeline timeline[SIM_MAX_DEVICES];
};

/* true when a live process other than this one has a context on physical device dev */
bool sim_device_held_by_other(int dev);

/* The configuration, read once from the environment; never NULL. */
const struct sim_config *sim_config(void);
/* The shared state, mapped on first use; NULL (with a message on stderr) if it cannot be. */
struct sim_shared *sim_shared(void);
/* This process's entry in the shared state, claimed on first use; NULL when full. */
struct sim_proc *sim_self(void);

uint64_t sim_now_ns(void);
/* Device memory in use by all live processes (dead ones are reaped first). */
uint64_t sim_device_used(int dev);
/* Takes bytes of device memory for this process; false when the device is full. */
bool sim_take(int dev, uint64_t bytes);
void sim_give(int dev, uint64_t bytes);
/* Of this process's memory on dev, bytes more (up) or fewer that NVML does not count for it. */
void sim_unlisted(int dev, uint64_t bytes, bool up);
/* This process runs in MIG GPU instance gi (0: none), which has limit bytes of memory. */
void sim_set_mig(unsigned gi, uint64_t limit);
/* Device memory in use by the processes in MIG GPU instance gi of dev. */
uint64_t sim_instance_used(int dev, unsigned gi);
/* Runs a kernel of duration ns on the device timeline after `after` (a mark of the same
 * stream); returns its mark. A mark is when the kernel ends, or with time-slicing a ticket
 * (SIM_TICKET set) for it, whose end sim_mark_end says. */
uint64_t sim_run_kernel(int dev, uint64_t after, uint64_t ns);
/* When the kernel of a mark ends: known when *done, else as far as the queued work says. */
uint64_t sim_mark_end(int dev, uint64_t mark, bool *done);
/* sim_sched.c, with time-slicing on */
void sim_timeline_init(struct sim_timeline *t);
uint64_t sim_timeline_run(struct sim_shared *s, int dev, uint64_t ns);
uint64_t sim_timeline_end(struct sim_shared *s, int dev, uint64_t mark, bool *done);
void sim_timeline_settle(struct sim_shared *s, int dev); /* run it up to now */
/* Percent of [now - window, now] the device (or the process of proc[entry], if >= 0) was
 * busy. */
unsigned sim_busy_percent(int dev, int entry, uint64_t window_ns);
/* Clears entries of processes that are gone. */
void sim_reap(void);
/* An entry of proc[] as this process saw it, and the pid by which it names its process, as a
 * driver that translates pids into its caller's PID namespace does: one of this process's
 * namespace by its pid there, one of another by the pid this process's /proc gives it (a
 * container's process, seen from the host). A pid means another process, or none, in
 * another PID namespace: two containers' first processes are both 1. */
struct sim_seen {
    int32_t pid; /* the entry's, in its own namespace; 0 or less: free */
    uint32_t gen;
    pid_t here;  /* 0: free, or of another namespace and not found here (a sibling
                  * container's) */
};
/* Sees all SIM_MAX_PROCS entries. Returns what carve_proc_find_nspids did (1 when there was
 * nothing to look for). */
int sim_see_entries(struct sim_shared *s, struct sim_seen *out);

#endif
