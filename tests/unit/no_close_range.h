/* no_close_range.h - for unit tests: this process as a kernel before 5.9 runs it, where
 * close_range(2) fails with ENOSYS (a seccomp filter; for a forked child, as it lasts). */
#ifndef CARVE_TEST_NO_CLOSE_RANGE_H
#define CARVE_TEST_NO_CLOSE_RANGE_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* 0 once close_range fails with ENOSYS here, or -1 when that cannot be arranged. */
static inline int deny_close_range(void)
{
#ifdef __NR_close_range
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
        return -1;
    return 0;
#else
    return -1;
#endif
}

#endif
