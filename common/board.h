/* board.h - the board of one physical GPU: the slices on it that have compute settings, so
 * that each can see who else is active (work-conserving guarantees, latency priority) and so
 * that guarantees on one GPU never add up to more than the whole GPU.
 *
 * One shared-memory object per GPU, /carve-board-<uuid>, created by the first `carve run`
 * that needs it and removed by the last one to leave; joins and leaves are serialised with
 * flock on it. Tenants (libcarve) map it to publish and read activity: lock-free loads and
 * stores only. Anyone running carve on the node may write it (mode 0666) until carved owns
 * it (issue 4): a tenant can lie about its activity, not about its own share. */
#ifndef CARVE_BOARD_H
#define CARVE_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compute.h"

#define CARVE_BOARD_ENTRIES 64

struct carve_board;

/* Owner side (`carve run`): opens or creates the board of the GPU with this UUID, clears
 * entries whose owner is gone, refuses a guarantee that would take the guarantees on the
 * GPU past 100% (-EDQUOT, with the numbers in err), and claims an entry for pid. */
int carve_board_join(const uint8_t uuid[16], const struct carve_compute *c, const char *name,
                     pid_t pid, struct carve_board **out, int *entry, char *err,
                     size_t errlen);
/* Clears the entry; removes the board when it was the last; unmaps. */
void carve_board_leave(struct carve_board *b, int entry);

/* Tenant side: maps the existing board of the GPU; -ENOENT when there is none. */
int carve_board_open(const uint8_t uuid[16], struct carve_board **out);
void carve_board_close(struct carve_board *b);

/* Notes that entry launched work at now_ns (stores only when the last note is older than
 * CARVE_BOARD_NOTE_NS, so that a launch loop does not keep a shared line bouncing). */
#define CARVE_BOARD_NOTE_NS 250000ull
void carve_board_note_launch(struct carve_board *b, int entry, uint64_t now_ns);
/* Fills peers (at most max) with the live entries, active meaning a launch within
 * active_ns before now_ns; *me is set to entry's place among them (-1 if absent).
 * Returns how many were filled. */
int carve_board_peers(const struct carve_board *b, int entry, uint64_t now_ns,
                      uint64_t active_ns, struct carve_peer *peers, int max, int *me);

/* For tests and listings: the board's shared-memory name for a UUID. */
void carve_board_name(const uint8_t uuid[16], char *buf, size_t len);

#endif
