/* test_proc.c - /proc/PID/stat as common/proc.c reads it: a name holding spaces and
 * parentheses does not shift the fields, an exited but unreaped child is not running, and a
 * pid that is not there reads as nothing; whose a process is comes from /proc/PID/status,
 * also once it is not dumpable (its /proc entry is root's then); a process uses CUDA when it
 * maps a libcuda.so (carved kills only such a pid that NVML names). */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"
#include "unreaped.h"

static void test_awkward_name(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        prctl(PR_SET_NAME, "a) R (b) Z 1 2", 0, 0, 0);
        (void)!write(ready[1], "x", 1);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    struct carve_proc_stat st, self;
    int r = carve_proc_stat(p, &st);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    assert_int_equal(r, 0);
    assert_string_equal(st.comm, "a) R (b) Z 1 2");
    assert_int_not_equal(st.state, 'Z');
    assert_int_equal(carve_proc_stat(getpid(), &self), 0);
    assert_true(self.start > 0);
    assert_true(st.start >= self.start); /* started after us, in clock ticks since boot */
}

static void test_unreaped_child(void **state)
{
    (void)state;
    pid_t p = unreaped_child();
    assert_true(p > 0);
    struct carve_proc_stat st;
    int r = carve_proc_stat(p, &st), running = carve_proc_running(p);
    waitpid(p, NULL, 0);
    assert_int_equal(r, 0);
    assert_int_equal(st.state, 'Z');
    assert_int_equal(running, 0);
    assert_int_equal(carve_proc_running(getpid()), 1);
}

static void test_missing(void **state)
{
    (void)state;
    struct carve_proc_stat st;
    assert_int_equal(carve_proc_stat(0, &st), -1);
    assert_int_equal(carve_proc_stat(-5, &st), -1);
    assert_int_equal(carve_proc_running(0), 0);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0); /* reaped: gone (until the pid is reused, which takes a while) */
    assert_int_equal(carve_proc_running(p), 0);
}

static void test_ids(void **state)
{
    (void)state;
    uid_t uid = 12345;
    gid_t gid = 12345;
    assert_int_equal(carve_proc_ids(getpid(), &uid, &gid), 0);
    assert_int_equal(uid, geteuid());
    assert_int_equal(gid, getegid());
    assert_int_equal(carve_proc_ids(0, &uid, &gid), -1);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        (void)!write(ready[1], "x", 1);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    uid = 12345;
    int r = carve_proc_ids(p, &uid, &gid);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    assert_int_equal(r, 0);
    assert_int_equal(uid, geteuid());
    assert_int_equal(carve_proc_ids(p, &uid, &gid), -1); /* reaped */
}

static void test_uses_cuda(void **state)
{
    (void)state;
    assert_int_equal(carve_proc_uses_cuda(getpid()), 0); /* links no CUDA */
    assert_int_equal(carve_proc_uses_cuda(0), -1);
    char dir[] = "/tmp/carve-test-proc.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    void *map = mmap(NULL, 1, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    unlink(path);
    rmdir(dir);
    assert_true(map != MAP_FAILED);
    int mapped = carve_proc_uses_cuda(getpid());
    munmap(map, 1);
    assert_int_equal(mapped, 1);
    assert_int_equal(carve_proc_uses_cuda(getpid()), 0);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    assert_int_equal(carve_proc_uses_cuda(p), -1); /* gone */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awkward_name),
        cmocka_unit_test(test_unreaped_child),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_uses_cuda),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
