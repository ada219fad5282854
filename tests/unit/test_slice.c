/* test_slice.c - the slice table: admission against the cap, exact across 64 processes of 4
 * threads each, recovery of a SIGKILLed process's usage, pid-reuse safety, tenants of other
 * PID namespaces (whose pids collide with ours) left alone, and refusal of tables that are
 * not slices of this version. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"
#include "slice.h"
#include "slice_layout.h"
#include "snapshot.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define PROCS 64
#define THREADS 4
#define ROUNDS 1000
#define SNAPSHOTS 40

static char name[64];

static struct carve_slice *make_slice(uint64_t cap0, uint64_t cap1)
{
    static int seq;
    snprintf(name, sizeof(name), "/carve.test.%d.%d", (int)getpid(), seq++);
    struct carve_slice_spec spec = {.ndev = 2};
    snprintf(spec.name, sizeof(spec.name), "unit");
    spec.dev[0].cap = cap0;
    spec.dev[0].uuid[0] = 0xa0;
    spec.dev[1].cap = cap1;
    spec.dev[1].uuid[0] = 0xa1;
    spec.dev[1].index = 1;
    struct carve_slice *s = NULL;
    char err[256];
    if (carve_slice_create(name, &spec, &s, err, sizeof(err)) != 0)
        fail_msg("create: %s", err);
    return s;
}

static void drop_slice(struct carve_slice *s)
{
    carve_slice_close(s);
    assert_int_equal(carve_slice_unlink(name), 0);
}

static void test_basics(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    int slot = carve_slice_attach(s, getpid());
    assert_true(slot >= 0);
    assert_string_equal(carve_slice_name(s), "unit");
    assert_int_equal(carve_slice_ndev(s), 2);
    uint8_t uuid[16] = {0xa1};
    assert_int_equal(carve_slice_find_uuid(s, uuid), 1);
    uuid[0] = 0xee;
    assert_int_equal(carve_slice_find_uuid(s, uuid), -1);

    assert_int_equal(carve_slice_admit(s, slot, 0, 600 * MiB), 0);
    assert_int_equal(carve_slice_admit(s, slot, 0, 424 * MiB), 0);
    assert_int_equal(carve_slice_used(s, 0), GiB);
    assert_int_equal(carve_slice_admit(s, slot, 0, 1), -ENOMEM); /* not a byte more */
    assert_int_equal(carve_slice_denials(s, 0), 1);
    carve_slice_release(s, slot, 0, 424 * MiB);
    assert_int_equal(carve_slice_used(s, 0), 600 * MiB);
    assert_int_equal(carve_slice_peak(s, 0), GiB);
    carve_slice_release(s, slot, 0, GiB); /* more than held: clamps at zero */
    assert_int_equal(carve_slice_used(s, 0), 0);

    /* an uncapped device admits anything and still records it */
    assert_int_equal(carve_slice_admit(s, slot, 1, 100 * GiB), 0);
    assert_int_equal(carve_slice_used(s, 1), 100 * GiB);
    assert_int_equal(carve_slice_cap(s, 1), 0);
    /* forced charges pass the cap; the next admission is refused */
    carve_slice_charge(s, slot, 0, GiB + MiB);
    assert_int_equal(carve_slice_admit(s, slot, 0, 1), -ENOMEM);
    assert_int_equal(carve_slice_admit(s, slot, 7, 1), -EINVAL);

    unsigned pids[4];
    assert_int_equal(carve_slice_pids(s, pids, 4), 1);
    assert_int_equal(pids[0], (unsigned)getpid());
    carve_slice_detach(s, slot);
    assert_int_equal(carve_slice_used(s, 0), 0);
    assert_int_equal(carve_slice_pids(s, pids, 4), 0);
    drop_slice(s);
}

static void test_open_checks(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0), *t = NULL;
    char err[256];
    assert_int_equal(carve_slice_open(name, &t, err, sizeof(err)), 0);
    int slot = carve_slice_attach(t, getpid());
    assert_int_equal(carve_slice_admit(t, slot, 0, MiB), 0);
    assert_int_equal(carve_slice_used(s, 0), MiB); /* one table, two mappings */
    carve_slice_close(t);
    drop_slice(s);

    assert_int_not_equal(carve_slice_open("/carve.test.none", &t, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "/carve.test.none"));

    /* a shared-memory object that is not a slice is refused */
    char other[64];
    snprintf(other, sizeof(other), "/carve.test.other.%d", (int)getpid());
    int fd = shm_open(other, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    close(fd);
    assert_int_equal(carve_slice_open(other, &t, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "not a carve slice"));
    shm_unlink(other);
}

/* Maps the table behind the API, to forge what a test needs (versions, start times). */
static struct slice_table *raw_table(void)
{
    int fd = shm_open(name, O_RDWR, 0);
    assert_true(fd >= 0);
    void *p = mmap(NULL, sizeof(struct slice_table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    return p;
}

static void test_version_mismatch(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0), *t = NULL;
    struct slice_table *raw = raw_table();
    char err[256] = "";
    raw->version = SLICE_VERSION + 1;
    assert_int_equal(carve_slice_open(name, &t, err, sizeof(err)), -EPROTO);
    assert_null(t);
    assert_non_null(strstr(err, "table version"));
    raw->version = SLICE_VERSION;
    raw->size += 64; /* right version, wrong layout */
    assert_int_equal(carve_slice_open(name, &t, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "wrong size"));
    raw->size -= 64;
    assert_int_equal(carve_slice_open(name, &t, err, sizeof(err)), 0);
    carve_slice_close(t);
    munmap(raw, sizeof(*raw));
    drop_slice(s);
}

struct hammer {
    struct carve_slice *s;
    int slot;
    unsigned seed;
    uint64_t held[8];
};

static void *hammer_thread(void *arg)
{
    struct hammer *h = arg;
    uint64_t *held = h->held;
    for (int i = 0; i < ROUNDS; i++) {
        int k = rand_r(&h->seed) % 8;
        if (held[k]) {
            carve_slice_release(h->s, h->slot, 0, held[k]);
            held[k] = 0;
        } else {
            uint64_t b = 1 + (uint64_t)rand_r(&h->seed) % (64 * MiB);
            if (carve_slice_admit(h->s, h->slot, 0, b) == 0)
                held[k] = b;
        }
    }
    return NULL; /* what it still holds, the process checks against its slot, then gives */
}

static void hammer_child(int n)
{
    struct carve_slice *s;
    if (carve_slice_open(name, &s, NULL, 0) != 0)
        _exit(3);
    int slot = carve_slice_attach(s, getpid());
    if (slot < 0)
        _exit(4);
    pthread_t t[THREADS];
    struct hammer h[THREADS];
    for (int i = 0; i < THREADS; i++) {
        h[i] = (struct hammer){s, slot, (unsigned)(n * 131 + i + 1), {0}};
        pthread_create(&t[i], NULL, hammer_thread, &h[i]);
    }
    uint64_t held = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        for (int k = 0; k < 8; k++)
            held += h[i].held[k];
    }
    /* this process's own books: its slot counts exactly what its threads still hold... */
    if (carve_slice_slot_used(s, slot, 0) != held)
        _exit(5);
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < 8; k++)
            carve_slice_release(s, slot, 0, h[i].held[k]);
    /* ...and nothing once they gave it back */
    _exit(carve_slice_slot_used(s, slot, 0) == 0 ? 0 : 6);
}

static void test_concurrent_admission(void **state)
{
    const uint64_t cap = 256 * MiB;
    struct carve_slice *s = make_slice(cap, 0);
    pid_t kids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0)
            hammer_child(i);
    }
    bool alive[PROCS];
    for (int i = 0; i < PROCS; i++)
        alive[i] = true;
    struct tenants t = {.pid = kids, .alive = alive, .n = PROCS};
    uint64_t max_seen = 0;
    int snapshots;
    for (snapshots = 0; snapshots < SNAPSHOTS && t.done < PROCS; snapshots++) {
        uint64_t u = snapshot_used(s, 0, &t);
        max_seen = u > max_seen ? u : max_seen;
        usleep(2000);
    }
    tenants_wait(&t);
    int bad_exit = t.bad_exit;
    print_message("%d snapshots of the stopped tenants: max %llu of cap %llu; peak %llu, "
                  "%llu denials\n", snapshots, (unsigned long long)max_seen,
                  (unsigned long long)cap, (unsigned long long)carve_slice_peak(s, 0),
                  (unsigned long long)carve_slice_denials(s, 0));
    assert_int_equal(bad_exit, 0);
    assert_true(max_seen <= cap);
    /* every admission's view (committed + in flight, its own included) fitted the cap; a
     * reservation lost between two threads of one process would show here */
    assert_true(carve_slice_peak(s, 0) <= cap);
    assert_true(max_seen > cap / 2); /* the cap was actually contended */
    assert_true(carve_slice_denials(s, 0) > 0);
    assert_int_equal(carve_slice_used(s, 0), 0);
    drop_slice(s);
}

static void test_sigkill_recovery(void **state)
{
    struct carve_slice *s = make_slice(4 * GiB, 0);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        struct carve_slice *c;
        if (carve_slice_open(name, &c, NULL, 0) != 0)
            _exit(3);
        int slot = carve_slice_attach(c, getpid());
        char ok = carve_slice_admit(c, slot, 0, 3 * GiB) == 0 ? 'y' : 'n';
        (void)!write(pipefd[1], &ok, 1);
        pause();
        _exit(0);
    }
    char ok = 0;
    assert_int_equal(read(pipefd[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    assert_int_equal(carve_slice_used(s, 0), 3 * GiB);
    int slot = carve_slice_attach(s, getpid());
    /* the live child holds its 3 GiB: a second 3 GiB must wait */
    assert_int_equal(carve_slice_admit(s, slot, 0, 3 * GiB), -ENOMEM);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    /* the next decision that needs the memory reaps the dead slot first */
    assert_int_equal(carve_slice_admit(s, slot, 0, 3 * GiB), 0);
    assert_int_equal(carve_slice_used(s, 0), 3 * GiB);
    close(pipefd[0]);
    close(pipefd[1]);
    drop_slice(s);
}

static void test_reap_only_dead(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    int me = carve_slice_attach(s, getpid());
    assert_int_equal(carve_slice_admit(s, me, 0, MiB), 0);
    /* a live process with the right start time is never reaped */
    assert_int_equal(carve_slice_reap(s), 0);
    assert_int_equal(carve_slice_used(s, 0), MiB);

    /* a slot claimed for a pid that no longer exists is */
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    int ghost = carve_slice_attach(s, gone);
    assert_true(ghost >= 0);
    assert_int_equal(carve_slice_admit(s, ghost, 0, 100 * MiB), 0);
    assert_int_equal(carve_slice_reap(s), 1);
    assert_int_equal(carve_slice_used(s, 0), MiB);
    assert_true(carve_proc_start_time(getpid()) > 0);
    carve_slice_detach(s, me);
    drop_slice(s);
}

static void test_pid_reuse(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    struct slice_table *raw = raw_table();
    /* a slot for this (live) process, and one for its parent that wants memory */
    int mine = carve_slice_attach(s, getpid());
    int other = carve_slice_attach(s, getppid());
    assert_true(mine >= 0 && other >= 0 && mine != other);
    assert_int_equal(raw->slot[mine].start_time, carve_proc_start_time(getpid()));
    assert_int_equal(carve_slice_admit(s, mine, 0, 900 * MiB), 0);
    /* the owner is alive with its own start time: its bytes stand, the request is refused */
    assert_int_equal(carve_slice_admit(s, other, 0, 200 * MiB), -ENOMEM);
    assert_int_equal(carve_slice_used(s, 0), 900 * MiB);
    assert_int_equal(carve_slice_slot_pid(s, mine), getpid());

    /* the same pid with another start time is another process: the slot's owner is gone */
    atomic_store(&raw->slot[mine].start_time, carve_proc_start_time(getpid()) + 1);
    usleep(20000); /* past the interval between two reuse checks of one slot */
    assert_int_equal(carve_slice_admit(s, other, 0, 200 * MiB), 0);
    assert_int_equal(carve_slice_used(s, 0), 200 * MiB);
    assert_int_equal(carve_slice_slot_pid(s, mine), 0);
    assert_int_equal(carve_slice_slot_used(s, mine, 0), 0);
    munmap(raw, sizeof(*raw));
    drop_slice(s);
}

/* A process SIGKILLed inside an admission leaves its request in its slot's `reserving`:
 * an admission that fits the committed usage must reap it, not take it for a contender. */
static void test_killed_while_reserving(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    struct slice_table *raw = raw_table();
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    int ghost = carve_slice_attach(s, gone);
    int me = carve_slice_attach(s, getpid());
    assert_true(ghost >= 0 && me >= 0);
    atomic_store(&raw->slot[ghost].reserving[0], 600 * MiB);
    assert_int_equal(carve_slice_admit(s, me, 0, 600 * MiB), 0);
    assert_int_equal(carve_slice_slot_pid(s, ghost), 0);
    assert_int_equal(atomic_load(&raw->slot[ghost].reserving[0]), 0);
    carve_slice_detach(s, me);
    munmap(raw, sizeof(*raw));
    drop_slice(s);
}

/* After an exec the pid and its start time are the same: the old image's slot is given
 * back by the new one before it attaches, never by a reaper. */
static void test_forget_pid(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    int before_exec = carve_slice_attach(s, getpid());
    int parent = carve_slice_attach(s, getppid());
    assert_int_equal(carve_slice_admit(s, before_exec, 0, 800 * MiB), 0);
    assert_int_equal(carve_slice_admit(s, parent, 0, 100 * MiB), 0);
    assert_int_equal(carve_slice_reap(s), 0);
    assert_int_equal(carve_slice_forget_pid(s, getpid()), 1);
    assert_int_equal(carve_slice_slot_pid(s, before_exec), 0);
    assert_int_equal(carve_slice_used(s, 0), 100 * MiB);
    int after_exec = carve_slice_attach(s, getpid());
    assert_int_equal(carve_slice_admit(s, after_exec, 0, 800 * MiB), 0);
    assert_int_equal(carve_slice_forget_pid(s, 0), 0);
    drop_slice(s);
}

/* Tenants of several PID namespaces (containers) share a slice, and a pid names different
 * processes in each: every container's first process is 1. A slot of another namespace is
 * not forgotten as our image's before an exec, not reaped by what its pid means here (a
 * process that is no tenant, or none), not listed among our pids; carved, which found its
 * process gone, gives it back, and only while the same owner holds it. */
static void test_other_namespace(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    struct slice_table *raw = raw_table();
    uint32_t here = carve_proc_ns(0, "pid"), there = here + 1;
    assert_true(here != 0);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    /* our pid and a pid that is nobody here, both of another namespace */
    int twin = carve_slice_attach(s, getpid());
    int ghost = carve_slice_attach(s, gone);
    assert_true(twin >= 0 && ghost >= 0);
    atomic_store(&raw->slot[twin].owner, SLOT_OWNER(there, getpid()));
    atomic_store(&raw->slot[ghost].owner, SLOT_OWNER(there, gone));
    assert_int_equal(carve_slice_admit(s, twin, 0, 800 * MiB), 0);
    assert_int_equal(carve_slice_admit(s, ghost, 0, 100 * MiB), 0);
    assert_int_equal(carve_slice_forget_pid(s, getpid()), 0);
    assert_int_equal(carve_slice_forget_pid(s, gone), 0);
    /* here, another start time of our pid would be a reused pid */
    atomic_store(&raw->slot[twin].start_time, carve_proc_start_time(getpid()) + 1);
    usleep(20000); /* past the interval between two reuse checks of one slot */
    assert_int_equal(carve_slice_reap(s), 0);
    int me = carve_slice_attach(s, getpid());
    assert_true(me >= 0);
    assert_int_equal(carve_slice_admit(s, me, 0, 200 * MiB), -ENOMEM);
    assert_int_equal(carve_slice_used(s, 0), 900 * MiB);

    unsigned pids[4];
    assert_int_equal(carve_slice_pids(s, pids, 4), 1);
    assert_int_equal(pids[0], getpid());
    struct carve_slice_owner o[4];
    assert_int_equal(carve_slice_owners(s, o, 4), 3);
    assert_int_equal(o[0].slot, twin);
    assert_false(o[0].local);
    assert_int_equal(o[0].pidns, there);
    assert_int_equal(o[0].pid, getpid());
    assert_int_equal(o[1].slot, ghost);
    assert_false(o[1].local);
    assert_int_equal(o[2].slot, me);
    assert_true(o[2].local);
    assert_int_equal(o[2].pidns, here);
    assert_int_equal(o[2].start, carve_proc_start_time(getpid()));
    struct carve_slice_owner others[4];
    assert_int_equal(carve_slice_foreign(s, others, 4), 2);
    assert_int_equal(others[0].slot, twin);
    assert_int_equal(others[1].slot, ghost);

    struct carve_slice_owner claimed_since = o[1];
    claimed_since.start++;
    assert_false(carve_slice_reap_owner(s, &claimed_since));
    assert_true(carve_slice_reap_owner(s, &o[1]));
    assert_false(carve_slice_reap_owner(s, &o[1]));
    assert_int_equal(carve_slice_slot_pid(s, ghost), 0);
    assert_int_equal(carve_slice_admit(s, me, 0, 200 * MiB), 0);
    munmap(raw, sizeof(*raw));
    drop_slice(s);
}

/* The namespaces' makers of test_pid_namespaces, killed by its teardown whatever happened:
 * each tenant dies with its maker, and each maker with this process. */
static pid_t ns_makers[2];

/* A process that is the first (pid 1) of a PID namespace of its own, as unshare -p -f makes
 * it (with this /proc, an outer namespace's): it attaches to the slice, asks for bytes on
 * device 0, writes {its pid, the answer} to fd, and waits to be killed. Returns the pid of
 * its parent, which made the namespace. */
static pid_t ns_tenant(uint64_t bytes, int fd)
{
    pid_t test = getpid(), outer = fork();
    if (outer != 0)
        return outer;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != test ||
        unshare(CLONE_NEWPID) != 0)
        _exit(77);
    pid_t inner = fork();
    if (inner == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* its maker waits for it: not gone before */
        struct carve_slice *t = NULL;
        char err[256];
        int32_t msg[2] = {(int32_t)getpid(), -EIO};
        if (carve_slice_open(name, &t, err, sizeof(err)) == 0) {
            carve_slice_forget_pid(t, getpid());
            int slot = carve_slice_attach(t, getpid());
            msg[1] = slot < 0 ? slot : carve_slice_admit(t, slot, 0, bytes);
        }
        (void)!write(fd, msg, sizeof(msg));
        for (;;)
            pause();
    }
    waitpid(inner, NULL, 0);
    _exit(0);
}

/* The pid here of outer's one child. */
static pid_t child_of(pid_t outer)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)outer, (int)outer);
    for (int i = 0; i < 100 && !buf[0]; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(buf, sizeof(buf), f))
                buf[0] = '\0';
            fclose(f);
        }
        if (!buf[0])
            usleep(10000);
    }
    return (pid_t)atoi(buf);
}

static bool can_unshare_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(unshare(CLONE_NEWPID) == 0 ? 0 : 77);
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* With real PID namespaces (root): two tenants that are each their namespace's pid 1. The
 * second does not take the first's slot for its own image's before an exec, nor reap it as
 * a process here that is another (pid 1 here is init): it is refused what the first holds.
 * From here (outside both) each is found by /proc, and the one that ended is given back. */
static void test_pid_namespaces(void **state)
{
    if (geteuid() != 0 || !can_unshare_pid())
        skip();
    struct carve_slice *s = make_slice(GiB, 0);
    int ch[2];
    int32_t a[2], b[2];
    assert_int_equal(pipe(ch), 0);
    pid_t outer_a = ns_makers[0] = ns_tenant(800 * MiB, ch[1]);
    assert_int_equal(read(ch[0], a, sizeof(a)), sizeof(a));
    pid_t outer_b = ns_makers[1] = ns_tenant(800 * MiB, ch[1]);
    assert_int_equal(read(ch[0], b, sizeof(b)), sizeof(b));
    pid_t inner_a = child_of(outer_a), inner_b = child_of(outer_b);
    assert_true(inner_a > 0 && inner_b > 0);
    assert_int_equal(a[0], 1);
    assert_int_equal(a[1], 0);
    assert_int_equal(b[0], 1);
    assert_int_equal(b[1], -ENOMEM);
    assert_int_equal(carve_slice_used(s, 0), 800 * MiB);

    struct carve_slice_owner o[4];
    assert_int_equal(carve_slice_owners(s, o, 4), 2);
    assert_false(o[0].local || o[1].local);
    assert_int_equal(o[0].pid, 1);
    assert_int_equal(o[1].pid, 1);
    assert_int_equal(o[0].pidns, carve_proc_ns(inner_a, "pid"));
    assert_int_equal(o[1].pidns, carve_proc_ns(inner_b, "pid"));
    assert_int_equal(o[0].start, carve_proc_start_time(inner_a));
    struct carve_proc_nspid want[2] = {{o[0].pidns, 1, 0}, {o[1].pidns, 1, 0}};
    assert_true(carve_proc_find_nspids(want, 2) >= 0);
    assert_int_equal(want[0].found, inner_a);
    assert_int_equal(want[1].found, inner_b);

    kill(inner_a, SIGKILL);
    waitpid(outer_a, NULL, 0);
    ns_makers[0] = 0;
    assert_int_equal(carve_slice_reap(s), 0); /* not ours to judge */
    assert_int_equal(carve_proc_find_nspids(want, 2), 1);
    assert_int_equal(want[0].found, 0);
    assert_int_equal(want[1].found, inner_b);
    assert_true(carve_slice_reap_owner(s, &o[0]));
    assert_int_equal(carve_slice_used(s, 0), 0);
    close(ch[0]);
    close(ch[1]);
    drop_slice(s);
}

static void test_attach_full(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0);
    for (int i = 0; i < CARVE_SLICE_MAX_PROCS; i++)
        assert_int_equal(carve_slice_attach(s, getpid()), i);
    assert_int_equal(carve_slice_attach(s, getpid()), -ENOSPC);
    carve_slice_detach(s, 17);
    assert_int_equal(carve_slice_attach(s, getpid()), 17); /* a freed slot is reused */
    drop_slice(s);
}

/* A failed assertion leaves its test early: the slice object goes anyway. */
static int unlink_slice(void **state)
{
    if (name[0])
        carve_slice_unlink(name);
    return 0;
}

/* The same, and test_pid_namespaces's tenants end (with their makers). */
static int end_ns_tenants(void **state)
{
    for (int i = 0; i < 2; i++)
        if (ns_makers[i] > 0 && kill(ns_makers[i], SIGKILL) == 0)
            waitpid(ns_makers[i], NULL, 0);
    ns_makers[0] = ns_makers[1] = 0;
    return unlink_slice(state);
}


/* The terms (caps, shares) are a second object, 0644 whatever the umask, mapped read-only;
 * a tenant of another user can use the table but cannot open the terms for writing. */
static void test_terms_read_only(void **state)
{
    static int seq;
    snprintf(name, sizeof(name), "/carve.test.terms.%d.%d", (int)getpid(), seq++);
    struct carve_slice_spec spec = {.ndev = 1, .table_mode = 0666};
    spec.dev[0].cap = GiB;
    struct carve_slice *s = NULL, *t = NULL;
    char err[256], kname[80];
    mode_t old_umask = umask(077);
    assert_int_equal(carve_slice_create(name, &spec, &s, err, sizeof(err)), 0);
    umask(old_umask);
    uid_t uid;
    mode_t mode;
    assert_int_equal(carve_slice_open(name, &t, err, sizeof(err)), 0);
    carve_slice_terms_owner(t, &uid, &mode);
    assert_int_equal(uid, geteuid());
    assert_int_equal(mode, 0644);
    carve_slice_close(t);
    snprintf(kname, sizeof(kname), "%s.terms", name);
    struct stat st;
    int fd = shm_open(name, O_RDONLY, 0);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666);
    close(fd);
    if (geteuid() == 0) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(10);
            struct carve_slice *c = NULL;
            char e[256];
            if (carve_slice_open(name, &c, e, sizeof(e)) != 0)
                _exit(11); /* a tenant of another user can join */
            if (shm_open(kname, O_RDWR, 0) >= 0 || errno != EACCES)
                _exit(12); /* ... but cannot write the terms */
            int slot = carve_slice_attach(c, getpid());
            if (slot < 0 || carve_slice_admit(c, slot, 0, 2 * GiB) != -ENOMEM)
                _exit(13);
            _exit(carve_slice_cap(c, 0) == GiB ? 0 : 14);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    carve_slice_close(s);
    assert_int_equal(carve_slice_unlink(name), 0);
    assert_int_equal(shm_open(kname, O_RDONLY, 0), -1); /* unlink takes both objects */
}

/* A launch in any process of the slice sets the flag (here through a mapping of its own, as
 * a tenant's); carved's read clears it. */
static void test_ran_flag(void **state)
{
    struct carve_slice *s = make_slice(GiB, 0), *tenant = NULL;
    char err[256];
    assert_false(carve_slice_take_ran(s));
    assert_int_equal(carve_slice_open(name, &tenant, err, sizeof(err)), 0);
    atomic_store_explicit(carve_slice_ran_flag(tenant), 1, memory_order_relaxed);
    carve_slice_close(tenant);
    assert_true(carve_slice_take_ran(s));
    assert_false(carve_slice_take_ran(s)); /* cleared by the read */
    drop_slice(s);
}

static void test_name_rule(void **state)
{
    assert_true(carve_slice_name_ok("train-1.v2_a"));
    assert_false(carve_slice_name_ok(""));
    assert_false(carve_slice_name_ok("."));
    assert_false(carve_slice_name_ok(".."));
    assert_false(carve_slice_name_ok("a/b"));
    assert_false(carve_slice_name_ok("a b"));
    char longest[CARVE_SLICE_NAME_MAX + 1];
    memset(longest, 'x', sizeof(longest));
    longest[CARVE_SLICE_NAME_MAX - 1] = '\0';
    assert_true(carve_slice_name_ok(longest)); /* 63 characters */
    longest[CARVE_SLICE_NAME_MAX - 1] = 'x';
    longest[CARVE_SLICE_NAME_MAX] = '\0';
    assert_false(carve_slice_name_ok(longest)); /* 64 */
}

#define SLICE_TEST(f) cmocka_unit_test_teardown(f, unlink_slice)

int main(void)
{
    const struct CMUnitTest tests[] = {
        SLICE_TEST(test_basics),
        SLICE_TEST(test_open_checks),
        SLICE_TEST(test_version_mismatch),
        SLICE_TEST(test_concurrent_admission),
        SLICE_TEST(test_sigkill_recovery),
        SLICE_TEST(test_reap_only_dead),
        SLICE_TEST(test_pid_reuse),
        SLICE_TEST(test_forget_pid),
        SLICE_TEST(test_killed_while_reserving),
        SLICE_TEST(test_other_namespace),
        cmocka_unit_test_teardown(test_pid_namespaces, end_ns_tenants),
        SLICE_TEST(test_attach_full),
        SLICE_TEST(test_terms_read_only),
        SLICE_TEST(test_ran_flag),
        cmocka_unit_test(test_name_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
