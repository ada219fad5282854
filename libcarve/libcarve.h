/* libcarve.h - what the interposer's files share: the real-function table generated from
 * hooks.def, the process state (slice, slot, device map), and the accounting helpers that
 * the wrappers in mem.c, pool.c, overhead.c and view.c are built from.
 *
 * Prefix carve__ for everything internal; nothing here is exported (-fvisibility=hidden). */
#ifndef CARVE_LIBCARVE_H
#define CARVE_LIBCARVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "carve/cuda_abi.h"
#include "carve/driver_pages.h"
#include "carve/nvml_abi.h"

#define CARVE_EXPORT __attribute__((visibility("default")))

/* ---- hooks.c: the generated tables ---- */
enum carve_lib { CARVE_LIB_CUDA, CARVE_LIB_NVML };

struct carve_real {
#define CARVE_HOOK(lib, name) __typeof__(&name) name;
#define CARVE_REAL(lib, name) __typeof__(&name) name;
#include "hooks.def"
};
extern struct carve_real carve__real;
#define R carve__real

struct carve_hook {
    const char *name;
    enum carve_lib lib;
    void *wrapper; /* our exported function */
    void **real;   /* its slot in carve__real */
};
extern const struct carve_hook carve__hooks[];
extern const size_t carve__nhooks;

/* Resolves every real pointer with the real dlsym (never ours); idempotent. */
void carve__resolve_real(void);
/* The real dlsym, found with dlvsym(RTLD_NEXT, "dlsym", ...). */
void *carve__real_dlsym(void *handle, const char *name);
/* The hook named name, or NULL. */
const struct carve_hook *carve__hook_by_name(const char *name);
/* Our wrapper for a real pointer the driver handed out, or p itself. */
void *carve__wrap_pointer(void *p);
/* What cuGetProcAddress hands back for symbol when the driver answered p: our wrapper when
 * p is a hooked entry point (matched by pointer, else by name and version), else p. */
void *carve__gpa_answer(const char *symbol, int version, cuuint64_t flags, void *p);

/* exported for bench/overhead --paired: the driver function behind a wrapper, or NULL */
void *carve_real_symbol(const char *name);

/* ---- pace.c: compute shares ---- */
struct carve_slice;
/* Reads the slice's compute settings and opens the GPUs' boards (at init, and in a fork
 * child), for the process in the slice's slot (-1: none); sets carve__pacing when any launch
 * is to be paced or seen. */
void carve__pace_setup(struct carve_slice *slice, int slot);
extern _Atomic int carve__pacing;
/* The slice's flag that a kernel ran (slice.h), NULL outside a slice; set up with pacing.
 * Every launch notes itself there, so that carved tells a slice that runs kernels from an
 * idle one without NVML's per-process utilisation (which some GPUs, MIG and containers do
 * not give it): once set, a launch only reads the line. */
extern _Atomic(_Atomic uint32_t *) carve__ran;
static inline void carve__note_ran(void)
{
    _Atomic uint32_t *ran = atomic_load_explicit(&carve__ran, memory_order_relaxed);
    if (ran && !atomic_load_explicit(ran, memory_order_relaxed))
        atomic_store_explicit(ran, 1, memory_order_relaxed);
}
struct carve_pace_pair;
struct carve_launch {
    struct carve_pace_pair *pair; /* events bracketing this launch, when sampled */
    CUstream stream;
};
/* Before a launch: charge its estimated cost, wait while the slice is ahead of its share,
 * and maybe start a sample. key names the kernel and grid (or the graph). */
void carve__launch_begin(struct carve_launch *L, uint64_t key, CUstream stream);
/* After it: finish the sample when the launch went through. */
void carve__launch_end(struct carve_launch *L, CUresult launched);

/* Sampling's event pairs live and die with their context. Around a call that may destroy a
 * context (cuCtxDestroy_v2: ctx; a primary context's release or reset: ctx NULL, dev its
 * device), carve__pace_closing takes that context's pairs out of use, and carve__pace_closed
 * forgets them (never touching their events again) when gone says that the context went,
 * else puts them back. Neither is on a launch's path; closing may wait for a poller. */
struct carve_pace_close {
    CUcontext ctx;    /* the context, NULL: every pair of dev */
    CUdevice dev;
    uint64_t taken;   /* pairs taken out of use, one bit each */
    uint64_t pending; /* of those, the ones with a sample in flight */
};
void carve__pace_closing(struct carve_pace_close *c, CUcontext ctx, CUdevice dev);
void carve__pace_closed(struct carve_pace_close *c, bool gone);
/* After a context is made or retained (a primary one: primary): fresh says it was made by
 * this call, so that pairs of an earlier context with the same handle, gone unseen, are
 * forgotten; a primary context's handle is kept for its release and reset. */
void carve__pace_made(CUcontext ctx, CUdevice dev, bool primary, bool fresh);

/* ---- state.c: the process's state and init ---- */
enum { CARVE_ST_NONE, CARVE_ST_BUSY, CARVE_ST_READY };
extern _Atomic int carve__state;
void carve__init_slow(void);
static inline void carve__init(void)
{
    if (__builtin_expect(atomic_load_explicit(&carve__state, memory_order_acquire) !=
                             CARVE_ST_READY, 0))
        carve__init_slow();
}

/* true when this process is in a slice (after carve__init) */
bool carve__active(void);
/* CARVE_SLICE names a slice carved did not make while carved runs: no contexts. */
bool carve__refused(void);
/* After a context creation the driver refused with CUDA_ERROR_DEVICE_UNAVAILABLE: says once,
 * on stderr, when the GPU's compute mode is why (Exclusive_Process held by another
 * process, or Prohibited) and what to do. */
void carve__say_unavailable(CUdevice dev);

/* A device as the accounting sees it: CUDA ordinal and slice device index. */
struct carve_dev {
    CUdevice cu;
    int sdev;
};

/* Maps a CUDA ordinal to the slice's capped device: true and d filled, false when the
 * process is not in a slice or the device has no cap there (pass through). */
bool carve__dev_of(CUdevice cu, struct carve_dev *d);
/* The same for the current context's device. */
bool carve__dev_current(struct carve_dev *d);
/* Whether a memory location of this type is the host's (not counted). */
bool carve__location_is_host(CUmemLocationType type);
/* Slice device index for a 16-byte UUID, -1 when not capped. */
int carve__sdev_of_uuid(const unsigned char uuid[16]);
int carve__ndev(void);

/* Accounting against the slice (the one place that calls common/slice.h's admit/release). */
CUresult carve__admit(const struct carve_dev *d, uint64_t bytes); /* 0 or OUT_OF_MEMORY */
bool carve__try_admit(int sdev, uint64_t bytes);                  /* no message */
/* Gives back an allocation's bytes (admitted, or charged with carve__charge_counted): the
 * slice's usage and this process's count of its allocations both go down. */
void carve__release(int sdev, uint64_t bytes);
/* Count bytes without admission (memory the driver already took: context, modules). They
 * are not the process's allocations (carve__counted leaves them out): given back with
 * carve__uncharge, never carve__release, which would take them off that count too. */
void carve__charge(int sdev, uint64_t bytes);
void carve__uncharge(int sdev, uint64_t bytes);
/* The same for an allocation's memory, given back with carve__release. */
void carve__charge_counted(int sdev, uint64_t bytes);
/* Prints the one-line OOM message (unless CARVE_QUIET=1). */
void carve__oom_message(const struct carve_dev *d, uint64_t requested);
uint64_t carve__cap(int sdev);
uint64_t carve__slice_used(int sdev);
/* Bytes this process counted for allocations on sdev (overhead excluded). */
uint64_t carve__counted(int sdev);
/* The part of carve__counted(sdev) that is managed memory (cuMemAllocManaged), which NVML's
 * usage of a process leaves out, touched or not (driver 580 on an H200,
 * docs/results/2026-11-28-driver-facts-nvidia-h200.md): the context's memory is NVML's usage
 * less the count without it (overhead.c). Moves with CARVE_KIND_MANAGED's records. */
uint64_t carve__managed(int sdev);
/* How many times carve__counted(sdev) has changed: the same before and after a read of it
 * and of NVML's usage, the two are of one moment as far as this process's allocations go
 * (an allocation is counted before the driver has it, and given back after the driver freed
 * it). */
uint64_t carve__counted_moves(int sdev);
/* Calls that allocate or free device memory in progress. Such a call counts an allocation
 * before the driver holds it and gives a free back after the driver freed it, so while one
 * runs NVML's usage reads below the count plus the context's memory by up to what it moves:
 * the context memory (overhead.c) is lowered by no more than NVML's reading less those bytes
 * (a thread's cuMemGetInfo during another's 1 GiB cuMemAlloc took 500 MiB of context memory
 * off the slice, and 500 MiB more was admitted, until 2026-11-28). CARVE_MEM_CALL() at the
 * top of each such export marks it until the export returns; carve__mem_in_flight is the
 * bytes the calls in progress counted, or took off their records, so far (and in *put_ever
 * all bytes ever put in flight, which only grows). */
int carve__mem_call_begin(void);
void carve__mem_call_end(int *unused);
uint64_t carve__mem_in_flight(uint64_t *put_ever);
/* Bytes the driver may free in the call this thread is in, before the count gives them back
 * (a handle released while mapped, at its unmap; a destroyed pool's memory, at its last
 * free): in flight until the call returns. Nothing outside a CARVE_MEM_CALL. */
void carve__mem_in_flight_add(uint64_t bytes);
#define CARVE_MEM_CALL()                                                                     \
    int carve_mem_call_ __attribute__((cleanup(carve__mem_call_end), unused)) =              \
        carve__mem_call_begin()
/* Pids of the slice's live processes of this process's PID namespace (a pid of another is
 * none here, or another process); returns how many (at most max). */
int carve__pids(unsigned int *pids, int max);

/* ---- allocation records ---- */
enum carve_kind { CARVE_KIND_PTR, CARVE_KIND_MANAGED, CARVE_KIND_HANDLE, CARVE_KIND_ARRAY,
                  CARVE_KIND_MIPMAP, CARVE_KIND_COUNT };
void carve__record(enum carve_kind kind, uint64_t key, int sdev, uint64_t bytes);
/* Removes key's record; true and *sdev, *bytes set when it had one. */
bool carve__unrecord(enum carve_kind kind, uint64_t key, int *sdev, uint64_t *bytes);
/* The same for a device pointer, plain (CARVE_KIND_PTR) or managed; *kind says which. */
bool carve__unrecord_ptr(uint64_t key, enum carve_kind *kind, int *sdev, uint64_t *bytes);
/* After the free of an unrecorded allocation: its bytes given back when the driver freed it
 * (carve__free_done: r), else its record put back. */
void carve__freed(enum carve_kind kind, uint64_t key, int sdev, uint64_t bytes, CUresult r);
/* Gives back a freed allocation's bytes: at once, or, for an allocation of up to 1 MiB (kind
 * CARVE_KIND_PTR), at the next reading of this process's memory (overhead.c), which charges
 * what the driver still holds. Such allocations share 2 MiB pages, and a page stays the
 * driver's while any allocation in it lives: given back at once, a tenant that filled its cap
 * with small allocations and freed all but one of each page could allocate its cap again.
 * The free that takes what waits on a GPU past a multiple of 32 MiB has the reading made. */
void carve__release_freed(enum carve_kind kind, int sdev, uint64_t bytes);
/* Whether small frees wait for that reading; gives back those waiting on sdev; how many
 * bytes wait there; takes exactly bytes of them (false when they are not what waits). */
bool carve__freed_small_waiting(void);
void carve__release_freed_small(int sdev);
uint64_t carve__freed_small(int sdev);
bool carve__take_freed_small(int sdev, uint64_t bytes);
void carve__records_reset(void);
/* mem.c: forgets every mapping and every handle released while mapped (a fork child) */
void carve__vmm_reset(void);

/* After a free whose record was taken: whether the memory is gone. A free the driver refuses
 * as CUDA_ERROR_INVALID_VALUE names memory it no longer has: another thread's free of the same
 * pointer reached the driver first (it found no record, so it gave nothing back), or the
 * memory went some other way. Putting the record back then would count it for good. */
static inline bool carve__free_done(CUresult r)
{
    return r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_VALUE;
}

/* ---- pool.c ---- */
/* Releases what pools no longer reserve; true when anything was released. */
bool carve__pools_refresh(void);
void carve__pools_reset(void);
/* A pool allocation's note, taken before the driver frees it (the address may be handed out
 * again at once): false when dptr is none. carve__pool_freed then settles it by the free's
 * result: put back on failure, else the pool's outstanding bytes go down. */
bool carve__pool_take(CUdeviceptr dptr, uint64_t *note);
void carve__pool_freed(uint64_t note, CUresult r, CUdeviceptr dptr);

/* Moves *charged up to reserved (what a pool or a device's graph memory now reserves), paying
 * with `admitted` first and admitting any more; the surplus admission is given back. False
 * when the growth could not be admitted: the admission is then given back. */
bool carve__settle_reserve(_Atomic uint64_t *charged, int sdev, uint64_t reserved,
                           uint64_t admitted);
/* The same, counting growth past the cap without admission (the driver holds it already). */
void carve__force_reserve(_Atomic uint64_t *charged, int sdev, uint64_t reserved);

/* ---- graphmem.c: graph memory (CUDA graphs' allocation nodes) ---- */
/* executable graphs with allocation nodes on the slice's devices: 0 keeps launches plain */
extern _Atomic int carve__graph_execs;
typedef CUresult (*carve_graph_call)(CUgraphExec, CUstream);
/* A launch of exec with its graph memory admitted first (and the graph uploaded first when
 * that memory may grow); paced as any launch. */
CUresult carve__graph_launch(CUgraphExec exec, CUstream stream, carve_graph_call launch,
                             carve_graph_call upload);
/* Gives back what the devices' graph memory no longer reserves; true when anything was. */
bool carve__graph_refresh(void);
void carve__graph_reset(void);
/* Whether stream is capturing: its work is recorded into a graph, not run. */
bool carve__capturing(CUstream stream);

/* ---- overhead.c ---- */
struct carve_probe {
    bool active;
    bool have_free;
    int sdev;
    size_t free_before;
};
void carve__overhead_begin(struct carve_probe *p);
void carve__overhead_end(struct carve_probe *p);
/* Reads the context and module memory again where NVML answers, at most every 10 ms (at a
 * cuMemGetInfo and a refused allocation): the driver takes such memory on its own between
 * the calls that reconcile it (lazy loading loads a kernel at its first launch), and at once
 * when small frees wait for it (carve__release_freed). True when it went down on some GPU or
 * such frees were given back, so that an allocation refused may fit now. */
bool carve__overhead_refresh(void);
/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no syscall). */
uint64_t carve__now_ns(void);
void carve__overhead_reset(void);

/* ---- view.c ---- */
int carve__sdev_of_nvml(nvmlDevice_t dev);
/* Bytes between the entries the driver's nvmlDeviceGetComputeRunningProcesses_v3 writes
 * (common/nvml_procs.h). */
size_t carve__nvml_v3_stride(void);

#endif
