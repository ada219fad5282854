/* snapshot.c - a slice's exact usage while its tenants are stopped (see snapshot.h). */
#include "snapshot.h"

#include <signal.h>
#include <sys/wait.h>

static void ended(struct tenants *t, int i, int status)
{
    t->alive[i] = false;
    t->done++;
    t->bad_exit += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

uint64_t snapshot_used(struct carve_slice *s, int dev, struct tenants *t)
{
    for (int i = 0; i < t->n; i++)
        if (t->alive[i])
            kill(t->pid[i], SIGSTOP);
    for (int i = 0; i < t->n; i++) {
        int st;
        if (t->alive[i] && waitpid(t->pid[i], &st, WUNTRACED) == t->pid[i] && !WIFSTOPPED(st))
            ended(t, i, st); /* it finished before the stop reached it */
    }
    uint64_t used = carve_slice_used(s, dev);
    for (int i = 0; i < t->n; i++)
        if (t->alive[i])
            kill(t->pid[i], SIGCONT);
    return used;
}

void tenants_wait(struct tenants *t)
{
    for (int i = 0; i < t->n; i++) {
        int st;
        if (t->alive[i] && waitpid(t->pid[i], &st, 0) == t->pid[i])
            ended(t, i, st);
    }
}
