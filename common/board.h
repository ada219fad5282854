/* board.h - the board of one physical GPU: the slices on it that have compute settings, so
 * that each can see who else is active (work-conserving guarantees, latency priority) and so
 * that guarantees on one GPU never add up to more than the whole GPU.
 *
 * Two shared-memory objects per GPU, created by the first joiner that needs them and removed
 * by the last one to leave; joins and leaves are serialised with flock on the first:
 *  - /carve-board-<uuid>: the settings (who is on the GPU, with which share and priority).
 *    Joiners write it; tenants (libcarve) map it read-only. carved joins with mode 0644, so
 *    that on a node it runs no tenant can change anyone's share or priority; `carve run`
 *    without carved joins with 0666, since every user of the GPU joins by itself then.
 *  - /carve-board-<uuid>.activity: when each entry last launched work, until when its
 *    queued work runs and until when it leaves its window to the next, written by tenants
 *    with lock-free stores (mode 0666). A tenant can lie about its activity, never about a
 *    share. Joiners write it only with pwrite, and tenants map it under a SIGBUS guard: any
 *    user can truncate it, which killed every process that touched a mapping of it. */
#ifndef CARVE_BOARD_H
#define CARVE_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compute.h"

#define CARVE_BOARD_ENTRIES 64
_Static_assert(CARVE_BOARD_ENTRIES <= CARVE_PEERS_MAX, "a board's peers fit a window's working");

struct carve_board;

/* Joiner side (`carve run`, carved): opens or creates the board of the GPU with this UUID
 * (mode: one of the two below). *entry on entry: the place to take when it is free (carved
 * adopting a slice again after a restart, whose tenants know their place), or -1 for the
 * first free one; on return, the place taken. Clears
 * entries whose owner is gone, refuses a guarantee that would take the guarantees on the
 * GPU past 100% (-EDQUOT, with the numbers in err, and for nothing else), and claims an entry
 * for pid. */
#define CARVE_BOARD_MODE_SHARED 0666 /* `carve run` alone: every user joins by itself */
#define CARVE_BOARD_MODE_DAEMON 0644 /* carved: only it changes the settings */
int carve_board_join(const uint8_t uuid[16], mode_t mode, const struct carve_compute *c,
                     const char *name, pid_t pid, struct carve_board **out, int *entry,
                     char *err, size_t errlen);
/* The "code" of carved's refusal of that guarantee ({"ok":false,"code":...,"error":...}):
 * bad input for the GPU's state, which `carve slice create` exits 2 for. */
#define CARVE_REFUSAL_GUARANTEES "guarantees_full"
/* A joiner's board again, read-write, for leaving an entry it joined earlier (the Slurm
 * plugin leaves in another process than it joined); -ENOENT when there is none. */
int carve_board_attach(const uint8_t uuid[16], struct carve_board **out);
/* How many live entries the GPU's board has (0: no board), read without mapping it; or
 * -errno (-EPROTO: another layout, or cut short). */
int carve_board_count(const uint8_t uuid[16]);
/* Gives a joiner's entry, owned by pid from (started at from_start; 0: not checked), to pid
 * to, started at to_start, which then keeps it alive (the Slurm plugin: the step that joined
 * ends before the job's other steps). 0; -ESRCH when the entry is not from's; -ECHILD when
 * to is gone (or its pid another's); -EINVAL: not a joiner's board, or no such entry. */
int carve_board_hand_over(struct carve_board *b, int entry, pid_t from, uint64_t from_start,
                          pid_t to, uint64_t to_start);
/* Clears the entry; removes the board when it was the last; unmaps. On a tenant's
 * (read-only) board it only unmaps. */
void carve_board_leave(struct carve_board *b, int entry);

/* Tenant side: maps the existing board of the GPU (settings read-only); -ENOENT when there
 * is none. */
int carve_board_open(const uint8_t uuid[16], struct carve_board **out);
void carve_board_close(struct carve_board *b);
/* A tenant's board whose objects were cut short by somebody (truncated: both are shared, the
 * activity with every tenant of the GPU) goes on with zero pages in their place
 * (sigbus_guard.h), its notes its own; carve_board_cut says so. carve_board_reattach maps
 * the objects again over the same places, lengthening a cut activity: 0, or -errno when it
 * could not (still cut; -ESTALE: an object is another now, the board made anew). */
bool carve_board_cut(const struct carve_board *b);
int carve_board_reattach(struct carve_board *b);

/* Notes that entry launched work at now_ns (stores only when the last note is older than
 * CARVE_BOARD_NOTE_NS, so that a launch loop does not keep a shared line bouncing). */
#define CARVE_BOARD_NOTE_NS 250000ull
void carve_board_note_launch(struct carve_board *b, int entry, uint64_t now_ns);
/* Taking turns: notes that entry's admitted work runs until end_ns (by its estimates), and
 * the latest end of what the other entries have so noted, or 0. A slice's turn begins when
 * the work before it has run out, so that its first kernel is not queued behind another
 * slice's (on the GPU the two would time-slice, and its cost sample would include theirs).
 * A queue end more than horizon_ns past its entry's last noted launch (or past now_ns, when
 * that launch is noted later than now_ns) is not believed: the reader passes it over, and the
 * entry's next note replaces it. */
void carve_board_note_queue(struct carve_board *b, int entry, uint64_t end_ns, uint64_t now_ns,
                            uint64_t horizon_ns);
/* Sets entry's queue end, later or earlier than it was: the slice's work measured since it
 * noted it (a launch whose cost varies, charged its mean, ran longer or shorter). The latest
 * setting wins, as all the slice's processes share one queue clock. */
void carve_board_set_queue(struct carve_board *b, int entry, uint64_t end_ns);
uint64_t carve_board_busy_until(const struct carve_board *b, int entry, uint64_t now_ns,
                                uint64_t horizon_ns);
/* Taking turns: notes that entry, held in its window, leaves it unused from the end of its
 * queue until until_ns; and reads that of one entry (*from_ns: its queue end; nothing given,
 * 0, when that end is not believed, as above). The slice whose window comes next may start
 * early in that time (libcarve/pace.c, window_given). */
void carve_board_note_given(struct carve_board *b, int entry, uint64_t until_ns);
uint64_t carve_board_given(const struct carve_board *b, int entry, uint64_t now_ns,
                          uint64_t horizon_ns, uint64_t *from_ns);
/* Fills peers (at most max) with the live entries, active meaning a launch within
 * active_ns before now_ns (never, on a joiner's board: joiners map no activity); *me is set
 * to entry's place among them (-1 if absent).
 * Returns how many were filled. */
int carve_board_peers(const struct carve_board *b, int entry, uint64_t now_ns,
                      uint64_t active_ns, struct carve_peer *peers, int max, int *me);

/* For tests and listings: the board's shared-memory name for a UUID. */
void carve_board_name(const uint8_t uuid[16], char *buf, size_t len);

#endif
