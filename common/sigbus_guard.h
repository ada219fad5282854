/* sigbus_guard.h - keeps a process alive when a shared-memory object it maps is cut short by
 * somebody else. Reading or writing a MAP_SHARED mapping past its file's end raises SIGBUS,
 * whose default is death; the board's activity object (board.h) is every tenant's to write,
 * so any of them could truncate it and kill every paced process on the GPU. A guarded range
 * that faults is replaced, at the same address, by private zero pages, and its cut flag is
 * set; the process goes on, and its owner may map the object again over it later (board.c's
 * carve_board_reattach). Any other SIGBUS goes to the handler that was there before, or kills
 * the process as it would have.
 *
 * The handler is put in place by the first carve_sigbus_guard call, over any handler there,
 * to which it passes every other SIGBUS with that handler's flags (or dies of it, where the
 * default was there); again by a later call only where the program put the default back.
 * What it cannot keep alive: a program that installs its own handler after it, without
 * passing on the faults it does not own (Python's faulthandler.enable() once CUDA is up: it
 * raises the signal again with no address), and a thread that blocks SIGBUS (the kernel
 * kills the process on a fault there, handler or not). A range is unguarded before it is
 * unmapped, with no access to it going on. */
#ifndef CARVE_SIGBUS_GUARD_H
#define CARVE_SIGBUS_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define CARVE_SIGBUS_GUARD_RANGES 64

/* Guards [addr, addr + len) (page-aligned, as mmap returns), mapped with prot; *cut is set
 * when it was replaced. 0, or -ENOSPC with every place taken (the range stays unguarded), or
 * -errno from sigaction. */
int carve_sigbus_guard(void *addr, size_t len, int prot, atomic_bool *cut);
/* Before the range is unmapped: its faults are no longer the guard's. */
void carve_sigbus_unguard(void *addr);

#endif
