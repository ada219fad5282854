/* test_proc.c - /proc/PID/stat as common/proc.c reads it: a name holding spaces and
 * parentheses does not shift the fields, an exited but unreaped child is not running, and a
 * pid that is not there reads as nothing; whose a process is comes from /proc/PID/status,
 * also once it is not dumpable (its /proc entry is root's then); a process uses CUDA when it
 * maps a libcuda.so (carved kills only such a pid that NVML names); NVIDIA's MPS server is
 * told by the file it runs, not by a name anyone can give a program; a process's children
 * include the orphans that come to a child subreaper; a process's PID namespace and its pid
 * there, and one pass over /proc that finds processes by them; a process's pid in a PID
 * namespace of its own; and a child's files are closed before it runs a program also where
 * close_range fails (kernels before 5.9). */
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
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "no_close_range.h"
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
    assert_int_equal(st.ppid, getpid());
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

/* Alive and the same process: a zombie is not, nor a pid whose start time is another's. */
static void test_alive_since(void **state)
{
    (void)state;
    struct carve_proc_stat me;
    assert_int_equal(carve_proc_stat(getpid(), &me), 0);
    assert_int_equal(carve_proc_alive_since(getpid(), me.start), 1);
    assert_int_equal(carve_proc_alive_since(getpid(), 0), 1); /* no start known: any */
    assert_int_equal(carve_proc_alive_since(getpid(), me.start + 1), 0); /* pid reused */
    assert_int_equal(carve_proc_alive_since(0, 0), 0);
    assert_int_equal(carve_proc_alive_since(-1, me.start), 0);
    pid_t p = unreaped_child();
    assert_true(p > 0);
    struct carve_proc_stat st;
    int r = carve_proc_stat(p, &st), alive = carve_proc_alive_since(p, st.start);
    waitpid(p, NULL, 0);
    assert_int_equal(r, 0);
    assert_int_equal(alive, 0); /* a zombie, its start time right */
    assert_int_equal(carve_proc_alive_since(p, st.start), 0); /* reaped */
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

/* A copy of sleep(1) under the MPS server's name, started; its pid. */
static pid_t start_copy(const char *dir, const char *name, mode_t mode, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s'", path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(path, mode), 0);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        execl(path, name, "30", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* until the exec has happened */
        char exe[4096], link[64];
        snprintf(link, sizeof(link), "/proc/%d/exe", (int)p);
        ssize_t n = readlink(link, exe, sizeof(exe) - 1);
        if (n > 0 && (size_t)n == strlen(path) && memcmp(exe, path, (size_t)n) == 0)
            break;
        usleep(10000);
    }
    return p;
}

static void stop(pid_t p)
{
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

static void test_mps_server(void **state)
{
    (void)state;
    char dir[] = "/tmp/carve-test-mps.XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0755), 0);
    uid_t me = geteuid();
    pid_t p = start_copy(dir, CARVE_MPS_SERVER_NAME, 0755, path, sizeof(path));
    int ours = carve_proc_is_mps_server(p, me);
    /* writable by its group: anyone of the group could have put their program there */
    assert_int_equal(chmod(path, 0775), 0);
    int group_writable = carve_proc_is_mps_server(p, me);
    assert_int_equal(chmod(path, 0755), 0);
    /* owned by someone who is neither root nor the daemon's user */
    int foreign;
    if (me == 0) {
        assert_int_equal(chown(path, 65534, 65534), 0);
        foreign = carve_proc_is_mps_server(p, 0);
    } else {
        foreign = carve_proc_is_mps_server(p, me + 1);
    }
    stop(p);
    unlink(path);
    assert_int_equal(ours, 1);
    assert_int_equal(group_writable, 0);
    assert_int_equal(foreign, 0);
    p = start_copy(dir, "nvidia-cuda-mps-serverx", 0755, path, sizeof(path));
    assert_int_equal(carve_proc_is_mps_server(p, me), 0);
    stop(p);
    unlink(path);
    rmdir(dir);
    assert_int_equal(carve_proc_is_mps_server(getpid(), me), 0);
    assert_int_equal(carve_proc_is_mps_server(0, me), -1);
    assert_int_equal(carve_proc_is_mps_server(p, me), -1); /* reaped */
}

/* A process's children as /proc lists them: what it forked, and an orphan that came to it
 * as a child subreaper (what carve run and the Slurm plugin's step end rely on). */
static void test_children(void **state)
{
    (void)state;
    pid_t kids[16];
    assert_int_equal(carve_proc_children(kids, 16), 0);
    pid_t a = fork();
    if (a == 0) {
        pause();
        _exit(0);
    }
    int n = carve_proc_children(kids, 16);
    assert_int_equal(n, 1);
    assert_int_equal(kids[0], a);
    /* a grandchild orphaned by its parent comes here while this is a subreaper */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t b = fork();
    if (b == 0) {
        pid_t g = fork();
        if (g == 0) {
            pause();
            _exit(0);
        }
        if (write(p[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
            _exit(1);
        _exit(0);
    }
    pid_t g = 0;
    assert_int_equal(read(p[0], &g, sizeof(g)), (ssize_t)sizeof(g));
    waitpid(b, NULL, 0);
    n = carve_proc_children(kids, 16);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    kill(a, SIGKILL);
    kill(g, SIGKILL);
    waitpid(a, NULL, 0);
    waitpid(g, NULL, 0);
    close(p[0]);
    close(p[1]);
    assert_int_equal(n, 2);
    assert_true((kids[0] == a && kids[1] == g) || (kids[0] == g && kids[1] == a));
    assert_int_equal(carve_proc_children(kids, 1), 0); /* both gone */
}

/* This process, a child, and a pid that is gone, by their PID namespace and their pid there
 * (here, the same namespace: the pid is the pid). */
static void test_namespaces(void **state)
{
    (void)state;
    uint32_t ns = carve_proc_ns(0, "pid");
    pid_t inner = 0;
    assert_true(ns != 0);
    assert_int_equal(carve_proc_ns(getpid(), "pid"), ns);
    assert_int_equal(carve_proc_host_pid_namespace(), ns == CARVE_HOST_PID_NS);
    assert_int_equal(carve_proc_inner_pid(0, &inner), 0);
    assert_int_equal(inner, getpid());
    assert_int_equal(carve_proc_inner_pid(getpid(), &inner), 0);
    assert_int_equal(inner, getpid());
    assert_int_equal(carve_proc_is_own(), 1); /* the test runs where /proc is its own */
    struct carve_proc_stat st, self;
    assert_int_equal(carve_proc_stat_self(&self), 0);
    assert_int_equal(carve_proc_stat(getpid(), &st), 0);
    assert_int_equal(self.start, st.start);

    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    assert_int_equal(carve_proc_ns(gone, "pid"), 0);
    assert_int_equal(carve_proc_inner_pid(gone, &inner), -1);
    struct carve_proc_nspid want[3] = {{ns, child, 7}, {ns, gone, 7}, {ns + 1, getpid(), 7}};
    int r = carve_proc_find_nspids(want, 3);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_true(r >= 0);
    assert_int_equal(want[0].found, child);
    assert_int_equal(want[1].found, 0);
    assert_int_equal(want[2].found, 0); /* our pid, of another namespace: not us */
}

/* A process's pid in its own PID namespace: its pid here in this one; in a PID namespace
 * below (made as root, or in a user namespace of its own), 1 for its first process, seen
 * one namespace deeper. */
static void test_ns_pid(void **state)
{
    (void)state;
    pid_t inner = 0;
    int depth = carve_proc_ns_pid(getpid(), &inner);
    assert_true(depth >= 1);
    if (depth == 1)
        assert_int_equal(inner, getpid());
    assert_int_equal(carve_proc_ns_pid(0, &inner), -1);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t q = fork();
    assert_true(q >= 0);
    if (q == 0) {
        if (unshare(CLONE_NEWPID) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0)
            _exit(77);
        pid_t c = fork(); /* the first process there */
        if (c == 0) {
            pause();
            _exit(0);
        }
        if (c < 0 || write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
            _exit(1);
        waitpid(c, NULL, 0);
        _exit(0);
    }
    close(p[1]);
    pid_t c = 0;
    ssize_t n = read(p[0], &c, sizeof(c));
    close(p[0]);
    int deep = -1;
    pid_t there = 0;
    if (n == (ssize_t)sizeof(c)) {
        deep = carve_proc_ns_pid(c, &there);
        kill(c, SIGKILL);
    }
    int status;
    waitpid(q, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        printf("# no PID namespace can be made here: the nested case is not tried\n");
        return;
    }
    assert_int_equal(n, (ssize_t)sizeof(c));
    assert_int_equal(deep, depth + 1);
    assert_int_equal(there, 1);
}

/* carve_close_from in a child where close_range fails with ENOSYS (a kernel before 5.9):
 * every descriptor from 3 up is closed all the same, stdout kept; and its fallback alone. */
static void test_close_from(void **state)
{
    (void)state;
    for (int round = 0; round < 2; round++) {
        pid_t p = fork();
        assert_true(p >= 0);
        if (p == 0) {
            if (round == 0 && deny_close_range() < 0)
                _exit(77);
            int a = open("/dev/null", O_RDONLY); /* inherited by a program run next */
            if (a < 3 || dup2(a, 40) != 40 || dup2(a, 300) != 300)
                _exit(2);
            if (round == 0) {
                if (close_range(3, ~0U, 0) == 0 || errno != ENOSYS)
                    _exit(3); /* the filter does not hold */
                carve_close_from(3);
            } else {
                carve_close_listed_from(3);
            }
            if (fcntl(a, F_GETFD) != -1 || fcntl(40, F_GETFD) != -1 || fcntl(300, F_GETFD) != -1)
                _exit(4);
            _exit(fcntl(1, F_GETFD) < 0 ? 5 : 0);
        }
        int status;
        assert_int_equal(waitpid(p, &status, 0), p);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77) {
            printf("# seccomp is not available: close_range's ENOSYS is not tried\n");
            continue;
        }
        if (WEXITSTATUS(status) != 0)
            fail_msg("round %d (%s): status %d (4: a descriptor from 3 up left open)", round,
                     round ? "the fallback alone" : "close_range ENOSYS", WEXITSTATUS(status));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awkward_name),
        cmocka_unit_test(test_unreaped_child),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_alive_since),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_uses_cuda),
        cmocka_unit_test(test_mps_server),
        cmocka_unit_test(test_children),
        cmocka_unit_test(test_namespaces),
        cmocka_unit_test(test_ns_pid),
        cmocka_unit_test(test_close_from),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
