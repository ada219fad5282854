/* fd_starved.c - a tenant that has used up its file descriptors, all but FREE of them, before
 * its first CUDA call: libcarve, which then needs one for carved's socket and one for the
 * slice's table that carved hands over, must say that this is why it refuses, not blame the
 * slice's owner or carved (or, with no carved, take it for a process that outlived its slice).
 * Run by carved.sh as a tenant of another user, and by mem_slice.sh in a slice of carve run's.
 *   fd_starved FREE   (prints the context's CUresult) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "carve/cuda_abi.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int free_fds = atoi(argv[1]), last[16], n = 0;
    if (free_fds < 0 || free_fds > 16)
        return 2;
    /* a low limit first: a container's may be a million, each a file to open here */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64) {
        rl.rlim_cur = 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    fflush(stdout);
    for (;;) { /* the newest 16 are kept, to give FREE of them back */
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        last[n++ % 16] = fd;
    }
    for (int i = 0; i < free_fds && i < n; i++)
        close(last[(n - 1 - i) % 16]);
    CUcontext c;
    cuInit(0);
    printf("context %d\n", (int)cuDevicePrimaryCtxRetain(&c, 0));
    return 0;
}
