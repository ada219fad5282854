/* sigbus_guard.c - private zero pages in place of a guarded mapping cut short (sigbus_guard.h). */
#include "sigbus_guard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* start is published last (release) and cleared first: the handler, which may run on any
 * thread at any time, reads a place only through a start it loaded */
struct guarded {
    _Atomic uintptr_t start;
    size_t len;
    int prot;
    atomic_bool *cut;
};

static struct guarded ranges[CARVE_SIGBUS_GUARD_RANGES];
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction before; /* the handler the guard took the place of */

/* Replaces the guarded range holding addr by zero pages; false when none holds it. */
static bool replace(uintptr_t addr)
{
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES; i++) {
        uintptr_t start = atomic_load_explicit(&ranges[i].start, memory_order_acquire);
        if (!start || addr < start || addr - start >= ranges[i].len)
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

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    int saved = errno;
    /* si_code > 0: raised by a fault at si_addr, which faults again on return unless mended;
       <= 0: sent by a process (kill, raise), with no address */
    bool fault = info && info->si_code > 0;
    if (fault && replace((uintptr_t)info->si_addr)) {
        errno = saved;
        return;
    }
    if (before.sa_flags & SA_SIGINFO) {
        before.sa_sigaction(sig, info, ctx);
    } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
        before.sa_handler(sig);
    } else if (before.sa_handler == SIG_DFL || fault) {
        /* what would have happened without the guard: a fault is fatal even when ignored */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        if (!fault)
            raise(sig);
    }
    errno = saved;
}

/* Puts the handler in place unless it is there: checked at each new range, as a program may
 * have put its own in its place since (cmocka does, around each test), whose faults are then
 * passed on to it. */
static int install(void)
{
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) < 0)
        return -errno;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)
        return 0;
    struct sigaction mine = {.sa_sigaction = on_sigbus,
                             .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART};
    sigemptyset(&mine.sa_mask);
    before = now;
    return sigaction(SIGBUS, &mine, NULL) < 0 ? -errno : 0;
}

int carve_sigbus_guard(void *addr, size_t len, int prot, atomic_bool *cut)
{
    int r = -ENOSPC;
    pthread_mutex_lock(&ranges_lock);
    int e = install();
    if (e < 0) {
        pthread_mutex_unlock(&ranges_lock);
        return e;
    }
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES && r; i++) {
        if (atomic_load(&ranges[i].start))
            continue;
        ranges[i].len = len;
        ranges[i].prot = prot;
        ranges[i].cut = cut;
        atomic_store_explicit(&ranges[i].start, (uintptr_t)addr, memory_order_release);
        r = 0;
    }
    pthread_mutex_unlock(&ranges_lock);
    return r;
}

void carve_sigbus_unguard(void *addr)
{
    pthread_mutex_lock(&ranges_lock);
    for (int i = 0; i < CARVE_SIGBUS_GUARD_RANGES; i++)
        if (atomic_load(&ranges[i].start) == (uintptr_t)addr)
            atomic_store(&ranges[i].start, 0);
    pthread_mutex_unlock(&ranges_lock);
}
