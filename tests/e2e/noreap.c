/* noreap.c - runs a command as a parent that reaps nothing but that command, as a
 * container's PID 1 that is not an init may: orphans of the command (a daemon it started)
 * are made this process's children (PR_SET_CHILD_SUBREAPER) and stay zombies until it
 * exits. mps.sh runs carve run --mode mps under it.
 *
 *   noreap COMMAND [ARG...]     exit status: COMMAND's, 128+N for signal N, 127 if it
 *                               could not run */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: noreap COMMAND [ARG...]\n");
        return 2;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        fprintf(stderr, "noreap: PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
        return 127;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "noreap: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "noreap: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 127;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
