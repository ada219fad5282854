/* fork_init.c - a process that forks while another of its threads is in libcarve's init (which
 * waits up to 10 s for carved when the slice's table is carved's and carved is down): the
 * child's own first CUDA call must not wait forever for a thread it does not have. Run by
 * carved.sh as a tenant started while carved restarts.
 *   fork_init   (prints the thread's and the child's context results; exit 1 when the child
 *               did not finish within 20 s) */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "carve/cuda_abi.h"

static int context(void)
{
    CUcontext c;
    cuInit(0);
    return (int)cuDevicePrimaryCtxRetain(&c, 0);
}

static void *first(void *arg)
{
    (void)arg;
    printf("thread: context %d\n", context());
    fflush(stdout);
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, first, NULL) != 0)
        return 2;
    usleep(500000); /* the thread is in libcarve's init by now, waiting for carved */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        alarm(20);
        printf("child: context %d\n", context());
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) < 0)
        return 2;
    pthread_join(t, NULL);
    if (WIFSIGNALED(status)) {
        printf("child: killed by signal %d (it waited for the init of a thread it has not)\n",
               WTERMSIG(status));
        return 1;
    }
    return 0;
}
