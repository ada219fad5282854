/* unreaped.h - for unit tests: a child that has exited and that its parent (the test) has not
 * reaped, a zombie, as a container's late-reaping PID 1 leaves them. The test reaps it with
 * waitpid once it has looked. */
#ifndef CARVE_TEST_UNREAPED_H
#define CARVE_TEST_UNREAPED_H

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child's pid once it has exited (waitid with WNOWAIT leaves it unreaped), or -1. */
static inline pid_t unreaped_child(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    siginfo_t info;
    if (p < 0 || waitid(P_PID, (id_t)p, &info, WEXITED | WNOWAIT) != 0)
        return -1;
    return p;
}

#endif
