/* sigbus_guard.c - private zero pages in place of a guarded mapping cut short (sigbus_guard.h). */
#include "sigbus_guard.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define CLAIMED ((uintptr_t)1) /* a place being filled in: no range yet */

/* Places are claimed and freed with compare-and-swap on start, never a lock: a fork while
 * another thread held one left the child's next guard waiting forever. start is published
 * last (release); the handler reads a place only through a start it loaded. */
struct guarded {
    _Atomic uintptr_t start;
    size_t len;
    int prot;
    atomic_bool *cut;
};

static struct guarded ranges[CARVE_SIGBUS_GUARD_RANGES];
static struct sigaction before; /* the handler the guard took the place of */
static atomic_int installing;   /* 0 never, 1 being installed, 2 installed once */

/* Replaces the guarded range holding addr by zero pages; false when none holds it. */
static bool replace(uintptr_t addr)
{
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES; i++) {
        uintptr_t start = atomic_load_explicit(&ranges[i].start, memory_order_acquire);
        if (start == 0 || start == CLAIMED || addr < start || addr - start >= ranges[i].len)
            continue;
        /* mmap is a plain system call: safe here in practice, though POSIX does not list it */
        void *p = mmap((void *)start, ranges[i].len, ranges[i].prot,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (p == MAP_FAILED)
            return false;
        atomic_store(ranges[i].cut, true);
        return true;
    }
    return false;
}

/* What the handler before the guard would have done with the signal: its flags too (a
 * one-shot handler resets to the default first; its mask is held while it runs). */
static void pass_on(int sig, siginfo_t *info, void *ctx)
{
    struct sigaction was = before;
    if (was.sa_handler == SIG_DFL || was.sa_handler == SIG_IGN) {
        if (was.sa_handler == SIG_IGN && info && info->si_code <= 0)
            return; /* sent, and ignored; a fault is fatal even when ignored */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* pending until this handler returns, then fatal */
        return;
    }
    if (was.sa_flags & SA_RESETHAND) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
    }
    sigset_t mask, old;
    mask = was.sa_mask;
    if (!(was.sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    sigprocmask(SIG_BLOCK, &mask, &old);
    if (was.sa_flags & SA_NODEFER) {
        sigset_t self;
        sigemptyset(&self);
        sigaddset(&self, sig);
        sigprocmask(SIG_UNBLOCK, &self, NULL);
    }
    if (was.sa_flags & SA_SIGINFO)
        was.sa_sigaction(sig, info, ctx);
    else
        was.sa_handler(sig);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    int saved = errno;
    /* BUS_ADRERR: an access past the end of a mapped file, which faults again on return
       unless mended; not an alignment fault or a machine check, nor one sent by a process */
    if (!(info && info->si_code == BUS_ADRERR && replace((uintptr_t)info->si_addr)))
        pass_on(sig, info, ctx);
    errno = saved;
}

/* Puts the handler in place: the first time over whatever is there, which it passes other
 * signals on to. Later (a new range) only where the program put the default back (cmocka
 * does, after each test): a handler the program installed since may pass signals on to the
 * guard, which would then pass them back to it, round and round. */
static int install(void)
{
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) < 0)
        return -errno;
    bool ours = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus;
    int expected = 0;
    if (ours || (!atomic_compare_exchange_strong(&installing, &expected, 1) &&
                 (expected == 1 || (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN))))
        return 0; /* ours, being put in place by another thread, or the program's now */
    struct sigaction mine = {.sa_sigaction = on_sigbus,
                             .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART};
    sigemptyset(&mine.sa_mask);
    before = now;
    int r = sigaction(SIGBUS, &mine, NULL) < 0 ? -errno : 0;
    atomic_store(&installing, r ? expected : 2);
    return r;
}

int carve_sigbus_guard(void *addr, size_t len, int prot, atomic_bool *cut)
{
    int r = install();
    if (r < 0)
        return r;
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES; i++) {
        uintptr_t free_place = 0;
        if (!atomic_compare_exchange_strong(&ranges[i].start, &free_place, CLAIMED))
            continue;
        ranges[i].len = len;
        ranges[i].prot = prot;
        ranges[i].cut = cut;
        atomic_store_explicit(&ranges[i].start, (uintptr_t)addr, memory_order_release);
        return 0;
    }
    return -ENOSPC;
}

void carve_sigbus_unguard(void *addr)
{
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES; i++) {
        uintptr_t start = (uintptr_t)addr;
        atomic_compare_exchange_strong(&ranges[i].start, &start, 0);
    }
}
