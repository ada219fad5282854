/* test_board.c - the per-GPU board: guarantee admission, activity seen by peers, the two
 * objects' modes (carved's settings are read-only to tenants), clean-up by the last leaver,
 * and a board of another layout refused with a message that says so. Each test uses a GPU
 * UUID of its own, so that boards of other runs on the machine are never touched. */
#include <errno.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "board.h"
#include "proc.h"
#include "slice.h"

static void fresh_uuid(uint8_t uuid[16])
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32), b = ++counter;
    memcpy(uuid, &a, 8);
    memcpy(uuid + 8, &b, 8);
}

static void paths(const uint8_t uuid[16], char *settings, char *activity, size_t len)
{
    char name[64];
    carve_board_name(uuid, name, sizeof(name));
    snprintf(settings, len, "/dev/shm%s", name);
    snprintf(activity, len, "/dev/shm%s.activity", name);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static const struct carve_compute CAP30 = {3000, CARVE_COMPUTE_CAP, CARVE_PRIO_NORMAL};
static const struct carve_compute G60 = {6000, CARVE_COMPUTE_GUARANTEE, CARVE_PRIO_NORMAL};
static const struct carve_compute G50 = {5000, CARVE_COMPUTE_GUARANTEE, CARVE_PRIO_NORMAL};
static const struct carve_compute G40 = {4000, CARVE_COMPUTE_GUARANTEE, CARVE_PRIO_NORMAL};
/* how far past an entry's last launch its queue end is believed, and the readers' clock, in
 * the tests below */
#define HORIZON 100000ull
#define NOW 1000000000ull

static void test_guarantees_add_up_to_100(void **state)
{
    uint8_t uuid[16];
    fresh_uuid(uuid);
    struct carve_board *a, *b, *c;
    int ea = -1, eb = -1, ec = -1;
    char err[512] = "";
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G60, "a", getpid(), &a,
                                      &ea, err, sizeof(err)), 0);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G50, "b", getpid(), &b,
                                      &eb, err, sizeof(err)), -EDQUOT);
    assert_non_null(strstr(err, "already hold guarantees of 60.00%"));
    assert_non_null(strstr(err, "ask for 40.00%+ or less"));
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "c", getpid(), &c,
                                      &ec, err, sizeof(err)), 0);
    assert_int_not_equal(ea, ec);
    /* the GPU is now fully guaranteed: the message offers a cap, not a "0.00%+" that
     * --compute would refuse */
    struct carve_board *d;
    int ed = -1;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "d", getpid(), &d,
                                      &ed, err, sizeof(err)), -EDQUOT);
    assert_non_null(strstr(err, "already hold guarantees of 100.00%"));
    assert_non_null(strstr(err, "no guarantee is left to give: ask for a cap (without '+')"));
    assert_null(strstr(err, "0.00%+"));
    carve_board_leave(c, ec);
    carve_board_leave(a, ea);
}

/* An entry whose process has exited but is not reaped yet (a zombie: a carved stopped under
 * a parent that reaps late) is free: its guarantee no longer holds room. */
static void test_zombie_entry_is_free(void **state)
{
    uint8_t uuid[16];
    fresh_uuid(uuid);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct carve_board *z;
        int ez = -1;
        char err[512];
        int r = carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G60, "z", getpid(), &z, &ez,
                                 err, sizeof(err));
        _exit(r == 0 && write(ready[1], "j", 1) == 1 ? 0 : 1); /* gone, never left */
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    for (int i = 0; i < 200; i++) { /* until it is a zombie: exited, not yet waited for */
        struct carve_proc_stat st;
        if (carve_proc_stat(pid, &st) == 0 && st.state == 'Z')
            break;
        usleep(10000);
    }
    struct carve_board *b;
    int eb = -1;
    char err[512] = "";
    int r = carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G50, "b", getpid(), &b, &eb, err,
                             sizeof(err));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (r != 0)
        fail_msg("a 50%% guarantee beside a zombie's 60%%: %d (%s)", r, err);
    carve_board_leave(b, eb);
}

/* A fresh board with a 30% cap (a) and a 40% guarantee (b) joined, and a tenant's mapping. */
static void join_cap_and_guarantee(uint8_t uuid[16], struct carve_board **a, int *ea,
                                   struct carve_board **b, int *eb, struct carve_board **tenant)
{
    char err[512];
    fresh_uuid(uuid);
    *ea = *eb = -1;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), a,
                                      ea, err, sizeof(err)), 0);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "b", getpid(), b,
                                      eb, err, sizeof(err)), 0);
    assert_int_equal(carve_board_open(uuid, tenant), 0);
}

static void test_activity_reaches_peers(void **state)
{
    uint8_t uuid[16];
    struct carve_board *a, *b, *tenant;
    int ea, eb, me;
    join_cap_and_guarantee(uuid, &a, &ea, &b, &eb, &tenant);
    const uint64_t now = 10000000000ull;
    carve_board_note_launch(tenant, eb, now); /* b's tenant launched; a's did not */
    struct carve_peer peers[CARVE_BOARD_ENTRIES];
    /* a joiner's board maps no activity (board.c writes its entry's through the fd) */
    int n = carve_board_peers(a, ea, now + 1000, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me);
    assert_int_equal(n, 2);
    assert_false(peers[0].active || peers[1].active);
    carve_board_note_launch(a, ea, now); /* nothing, and no fault */
    n = carve_board_peers(tenant, ea, now + 1000, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me);
    assert_int_equal(n, 2);
    assert_in_range(me, 0, 1);
    assert_false(peers[me].active);
    assert_true(peers[1 - me].active);
    assert_int_equal(peers[1 - me].compute.share_bp, 4000);
    assert_int_equal(peers[1 - me].compute.mode, CARVE_COMPUTE_GUARANTEE);
    assert_int_equal(peers[me].entry, ea); /* each names its place, for its note on the board */
    assert_int_equal(peers[1 - me].entry, eb);
    /* a launch noted after the reader took its clock (another process, a moment later) */
    n = carve_board_peers(tenant, ea, now - 1000, 100000000ull, peers, CARVE_BOARD_ENTRIES,
                          &me);
    assert_true(peers[1 - me].active);
    /* past the active window, b is idle again */
    n = carve_board_peers(tenant, ea, now + 200000000ull, 100000000ull, peers,
                          CARVE_BOARD_ENTRIES, &me);
    assert_false(peers[1 - me].active);
    carve_board_close(tenant);
    carve_board_leave(b, eb);
    carve_board_leave(a, ea);
}

static void test_queue_hands_over(void **state)
{
    uint8_t uuid[16];
    struct carve_board *a, *b, *c, *tenant;
    int ea, eb, ec;
    char err[512];
    join_cap_and_guarantee(uuid, &a, &ea, &b, &eb, &tenant);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    carve_board_note_queue(tenant, eb, 5000, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 5000);
    assert_int_equal(carve_board_busy_until(tenant, eb, NOW, HORIZON), 0); /* its own is no wait */
    /* two processes of b race: the later end stays */
    carve_board_note_queue(tenant, eb, 9000, NOW, HORIZON);
    carve_board_note_queue(tenant, eb, 7000, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 9000);
    /* the latest of all the others */
    carve_board_note_queue(tenant, ea, 12000, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, eb, NOW, HORIZON), 12000);
    /* a slice that leaves stops counting, and its place is taken with an empty queue */
    carve_board_leave(b, eb);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    ec = eb;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "c", getpid(), &c,
                                      &ec, err, sizeof(err)), 0);
    assert_int_equal(ec, eb);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    carve_board_close(tenant);
    carve_board_leave(c, ec);
    carve_board_leave(a, ea);
}

/* A queue end set after its work was measured moves either way; noted, only later. */
static void test_queue_set(void **state)
{
    uint8_t uuid[16];
    struct carve_board *a, *b, *tenant;
    int ea, eb;
    join_cap_and_guarantee(uuid, &a, &ea, &b, &eb, &tenant);
    carve_board_note_queue(tenant, eb, 9000, NOW, HORIZON);
    carve_board_note_queue(tenant, eb, 7000, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 9000);
    carve_board_set_queue(tenant, eb, 6000); /* its work ran shorter than charged */
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 6000);
    carve_board_set_queue(tenant, eb, 12000); /* or longer */
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 12000);
    /* believed as a noted end is: not past the horizon */
    carve_board_set_queue(tenant, eb, NOW + HORIZON + 1);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    /* nothing on a bad entry or a board without activity */
    carve_board_set_queue(tenant, -1, 1);
    carve_board_set_queue(tenant, CARVE_BOARD_ENTRIES, 1);
    carve_board_set_queue(a, ea, 1);
    carve_board_set_queue(NULL, ea, 1);
    assert_int_equal(carve_board_busy_until(tenant, eb, NOW, HORIZON), 0);
    carve_board_close(tenant);
    carve_board_leave(b, eb);
    carve_board_leave(a, ea);
}

static void test_window_given(void **state)
{
    uint8_t uuid[16];
    struct carve_board *a, *b, *c, *tenant;
    int ea, eb, ec;
    char err[512];
    uint64_t from = 1;
    join_cap_and_guarantee(uuid, &a, &ea, &b, &eb, &tenant);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), 0); /* nothing given yet */
    assert_int_equal(from, 0);
    /* b, held in its window, leaves it from its queue's end until 15000 */
    carve_board_note_queue(tenant, eb, 10000, NOW, HORIZON);
    carve_board_note_given(tenant, eb, 15000);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), 15000);
    assert_int_equal(from, 10000);
    assert_int_equal(carve_board_given(tenant, ea, NOW, HORIZON, &from), 0); /* a gave nothing */
    /* a later note replaces it, and no place past the board is read */
    carve_board_note_given(tenant, eb, 12000);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), 12000);
    assert_int_equal(carve_board_given(tenant, -1, NOW, HORIZON, &from), 0);
    assert_int_equal(carve_board_given(tenant, CARVE_BOARD_ENTRIES, NOW, HORIZON, &from), 0);
    assert_int_equal(from, 0);
    /* its place, taken again, starts with nothing given */
    carve_board_leave(b, eb);
    ec = eb;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "c", getpid(), &c,
                                      &ec, err, sizeof(err)), 0);
    assert_int_equal(ec, eb);
    assert_int_equal(carve_board_given(tenant, ec, NOW, HORIZON, &from), 0);
    carve_board_close(tenant);
    carve_board_leave(c, ec);
    carve_board_leave(a, ea);
}

/* A queue end forged far ahead (the activity is every tenant's to write) is passed over by
 * the readers, gives no time, and is replaced by the entry's next note; one within the horizon
 * of the entry's last launch counts; a launch noted after now (forged too) moves no horizon. */
static void test_forged_queue_end(void **state)
{
    uint8_t uuid[16];
    struct carve_board *a, *b, *tenant;
    int ea, eb;
    uint64_t from = 1, launch = 5000000;
    join_cap_and_guarantee(uuid, &a, &ea, &b, &eb, &tenant);
    carve_board_note_launch(tenant, eb, launch);
    carve_board_note_queue(tenant, eb, launch + HORIZON, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), launch + HORIZON);
    carve_board_note_given(tenant, eb, launch + 2 * HORIZON);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), launch + 2 * HORIZON);
    assert_int_equal(from, launch + HORIZON);
    /* forged: 2^62 */
    carve_board_note_queue(tenant, eb, 1ull << 62, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), 0);
    assert_int_equal(from, 0);
    /* the entry's next note takes its place, though earlier (the latest end wins otherwise) */
    carve_board_note_queue(tenant, eb, launch + 300, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), launch + 300);
    carve_board_note_queue(tenant, eb, launch + 200, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), launch + 300);
    /* forged just past the horizon: passed over, and replaced by an earlier note too */
    carve_board_note_queue(tenant, eb, launch + HORIZON + 1, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    carve_board_note_queue(tenant, eb, launch + 400, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), launch + 400);
    /* believed once the entry launches later */
    carve_board_note_queue(tenant, eb, launch + HORIZON + 1000, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    carve_board_note_launch(tenant, eb, launch + 2 * CARVE_BOARD_NOTE_NS);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), launch + HORIZON + 1000);
    /* a launch forged at 2^62 with the end: the horizon runs from now, not from it */
    carve_board_note_launch(tenant, eb, 1ull << 62);
    carve_board_note_queue(tenant, eb, (1ull << 62) + 1, NOW, HORIZON);
    assert_int_equal(carve_board_busy_until(tenant, ea, NOW, HORIZON), 0);
    assert_int_equal(carve_board_given(tenant, eb, NOW, HORIZON, &from), 0);
    assert_int_equal(carve_board_busy_until(tenant, ea, 1ull << 62, HORIZON), (1ull << 62) + 1);
    carve_board_close(tenant);
    carve_board_leave(b, eb);
    carve_board_leave(a, ea);
}

static void test_modes_and_cleanup(void **state)
{
    uint8_t uuid[16];
    char settings[128], activity[128];
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    struct carve_board *a, *b;
    int ea = -1, eb = -1;
    char err[512];
    mode_t old = umask(022);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), &a,
                                      &ea, err, sizeof(err)), 0);
    assert_int_equal(mode_of(settings), 0666); /* past the umask */
    assert_int_equal(mode_of(activity), 0666);
    carve_board_leave(a, ea);
    assert_int_equal(access(settings, F_OK), -1);
    assert_int_equal(access(activity, F_OK), -1);

    /* carved's board: settings read-only to others, activity still writable by tenants */
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_DAEMON, &CAP30, "a", getpid(), &a,
                                      &ea, err, sizeof(err)), 0);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_DAEMON, &G40, "b", getpid(), &b,
                                      &eb, err, sizeof(err)), 0);
    assert_int_equal(mode_of(settings), 0644);
    assert_int_equal(mode_of(activity), 0666);
    umask(old);
    if (geteuid() == 0) {
        /* a tenant of another user: maps the board and notes launches, cannot write shares */
        pid_t pid = fork();
        if (pid == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(10);
            if (open(settings, O_RDWR) >= 0 || errno != EACCES)
                _exit(11);
            struct carve_board *t;
            if (carve_board_open(uuid, &t) < 0)
                _exit(12);
            carve_board_note_launch(t, eb, 5000000000ull);
            carve_board_close(t);
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        struct carve_peer peers[CARVE_BOARD_ENTRIES];
        struct carve_board *t;
        assert_int_equal(carve_board_open(uuid, &t), 0);
        int me, n = carve_board_peers(t, ea, 5000001000ull, 1000000ull, peers,
                                      CARVE_BOARD_ENTRIES, &me);
        carve_board_close(t);
        assert_int_equal(n, 2);
        assert_true(peers[1 - me].active);
    }
    carve_board_leave(a, ea);
    assert_int_equal(access(settings, F_OK), 0); /* b is still on it */
    carve_board_leave(b, eb);
    assert_int_equal(access(settings, F_OK), -1);
    assert_int_equal(access(activity, F_OK), -1);
}

/* The Slurm plugin joins in one process and leaves in another: attach gives it a writable
 * board again; a tenant's read-only board leaves nothing (and does not fault). */
static void test_attach_and_leave_elsewhere(void **state)
{
    uint8_t uuid[16];
    char settings[128], activity[128], err[512];
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    struct carve_board *joined, *tenant, *again;
    int e = -1;
    assert_int_equal(carve_board_attach(uuid, &again), -ENOENT);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_DAEMON, &G40, "job", getpid(),
                                      &joined, &e, err, sizeof(err)), 0);
    carve_board_close(joined); /* the joining process goes on without it */
    assert_int_equal(carve_board_open(uuid, &tenant), 0);
    carve_board_leave(tenant, e); /* read-only: only unmaps */
    assert_int_equal(access(settings, F_OK), 0);
    assert_int_equal(carve_board_attach(uuid, &again), 0);
    carve_board_leave(again, e);
    assert_int_equal(access(settings, F_OK), -1);
    assert_int_equal(access(activity, F_OK), -1);
}

/* A child that waits to be killed, and dies with its parent: a failed assertion must not
 * leave it behind. Both forks were once made in the joiner child too, whose own child could
 * set its death signal after the joiner was killed and pause for good, holding the test's
 * output open (a `| tail` of it never ended). */
static _Noreturn void pause_child(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == parent)
        pause();
    _exit(0);
}

/* An entry handed to another process: kept alive by it (not cleared as dead by the next
 * joiner once its joiner ended), and only by the pid that holds it; not on a tenant's board.
 * carve_board_count counts live entries, the handed one among them. */
static void test_hand_over(void **state)
{
    uint8_t uuid[16];
    char err[512];
    fresh_uuid(uuid);
    pid_t parent = getpid();
    pid_t joiner = fork();
    if (joiner == 0)
        pause_child(parent);
    pid_t gone = fork();
    if (gone == 0)
        pause_child(parent);
    assert_true(joiner > 0 && gone > 0);
    uint64_t joiner_start = carve_proc_start_time(joiner), me = carve_proc_start_time(getpid());
    uint64_t gone_start = carve_proc_start_time(gone);
    kill(gone, SIGKILL);
    waitpid(gone, NULL, 0);
    struct carve_board *b, *tenant, *c;
    int e = -1, ec = -1;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G60, "job", joiner, &b,
                                      &e, err, sizeof(err)), 0);
    /* not ours; ours, but by another start (a reused pid) */
    assert_int_equal(carve_board_hand_over(b, e, getpid(), me, getpid(), me), -ESRCH);
    assert_int_equal(carve_board_hand_over(b, e, joiner, joiner_start + 1, getpid(), me), -ESRCH);
    /* to a process gone, or by a start that is not its own, or none */
    assert_int_equal(carve_board_hand_over(b, e, joiner, joiner_start, gone, gone_start), -ECHILD);
    assert_int_equal(carve_board_hand_over(b, e, joiner, joiner_start, getpid(), me + 1), -ECHILD);
    assert_int_equal(carve_board_hand_over(b, e, joiner, joiner_start, getpid(), 0), -ECHILD);
    assert_int_equal(carve_board_open(uuid, &tenant), 0);
    assert_int_equal(carve_board_hand_over(tenant, e, joiner, joiner_start, getpid(), me),
                     -EINVAL);
    carve_board_close(tenant);
    assert_int_equal(carve_board_count(uuid), 1);
    assert_int_equal(carve_board_hand_over(b, e, joiner, joiner_start, getpid(), me), 0);
    kill(joiner, SIGKILL);
    waitpid(joiner, NULL, 0);
    assert_int_equal(carve_board_count(uuid), 1); /* its entry is ours now */
    /* the joiner is gone, the entry lives on: a guarantee past 100% is still refused */
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G50, "c", getpid(), &c,
                                      &ec, err, sizeof(err)), -EDQUOT);
    carve_board_leave(b, e);
    assert_int_equal(carve_board_count(uuid), 0); /* no board */
}

/* carved, restarted, joins again where its slice was: the place its running tenants know
 * (the terms hold it). The place is taken only when free; else the first free one. */
static void test_preferred_place(void **state)
{
    uint8_t uuid[16];
    char err[512];
    fresh_uuid(uuid);
    struct carve_board *a, *b, *c;
    int ea = -1, eb = 5, ec = 5;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), &a,
                                      &ea, err, sizeof(err)), 0);
    assert_int_equal(ea, 0);
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "b", getpid(), &b,
                                      &eb, err, sizeof(err)), 0);
    assert_int_equal(eb, 5);
    /* 5 is taken: the first free place */
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "c", getpid(), &c,
                                      &ec, err, sizeof(err)), 0);
    assert_int_equal(ec, 1);
    carve_board_leave(c, ec);
    carve_board_leave(b, eb);
    carve_board_leave(a, ea);
}

static void test_other_layout_refused(void **state)
{
    uint8_t uuid[16];
    char settings[128], activity[128], err[512] = "";
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    char name[64];
    carve_board_name(uuid, name, sizeof(name));
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 8256), 0); /* the size of the first board layout */
    close(fd);
    struct carve_board *b = NULL;
    int e = -1;
    assert_int_equal(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), &b,
                                      &e, err, sizeof(err)), -EPROTO);
    assert_null(b);
    assert_non_null(strstr(err, "another version of carve"));
    assert_non_null(strstr(err, name));
    assert_int_equal(carve_board_open(uuid, &b), -EPROTO);
    assert_int_equal(carve_board_count(uuid), -EPROTO);
    shm_unlink(name);
}

static off_t size_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void cut(const char *path)
{
    assert_int_equal(truncate(path, 0), 0);
}

/* The child's half of test_cut_objects: exits 0 when every check held; a failed check exits
 * with its line, and a fault the guard did not catch kills it with SIGBUS. */
static int cut_objects_child(void)
{
    signal(SIGBUS, SIG_DFL); /* not cmocka's: a fault the guard misses kills the child */
#define CHECK(x)                                                                              \
    do {                                                                                      \
        if (!(x)) {                                                                           \
            fprintf(stderr, "test_cut_objects: line %d: %s\n", __LINE__, #x);              \
            return __LINE__ % 250 + 1;                                                        \
        }                                                                                     \
    } while (0)
    uint8_t uuid[16];
    char settings[128], activity[128], err[512];
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    struct carve_board *a, *b, *tenant, *other;
    int ea = -1, eb = -1, me;
    struct carve_peer peers[CARVE_BOARD_ENTRIES];
    const uint64_t now = 10000000000ull;
    CHECK(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), &a, &ea, err,
                           sizeof(err)) == 0);
    CHECK(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &G40, "b", getpid(), &b, &eb, err,
                           sizeof(err)) == 0);
    CHECK(carve_board_open(uuid, &tenant) == 0);
    CHECK(!carve_board_cut(tenant));

    /* any tenant on the GPU may cut the activity: the next note would have faulted */
    cut(activity);
    carve_board_note_launch(tenant, eb, now);
    CHECK(carve_board_cut(tenant));
    CHECK(carve_board_peers(tenant, ea, now, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me) == 2);
    CHECK(peers[1 - me].active); /* its own note, in the zero pages in the object's place */
    carve_board_note_queue(tenant, eb, now + 10, now, HORIZON);
    CHECK(carve_board_busy_until(tenant, ea, now, HORIZON) == now + 10);

    /* mapped again, the object lengthened: notes reach the others again */
    CHECK(carve_board_reattach(tenant) == 0);
    CHECK(!carve_board_cut(tenant));
    CHECK(size_of(activity) >= 4096);
    CHECK(carve_board_open(uuid, &other) == 0);
    carve_board_note_launch(tenant, ea, now);
    CHECK(carve_board_peers(other, eb, now, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me) == 2);
    CHECK(peers[1 - me].active);

    /* cut again with nobody looking: a tenant opening the board lengthens it */
    carve_board_close(other);
    cut(activity);
    CHECK(carve_board_open(uuid, &other) == 0);
    CHECK(size_of(activity) >= 4096);
    carve_board_close(other);

    /* the table (a board of `carve run` alone is anyone's): read as empty, and not mapped
       again while cut; a joiner makes it anew in the same object, which is then mapped */
    cut(settings);
    CHECK(carve_board_peers(tenant, ea, now, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me) == 0);
    CHECK(carve_board_cut(tenant));
    CHECK(carve_board_reattach(tenant) == -EPROTO);
    CHECK(carve_board_cut(tenant));
    struct carve_board *c;
    int ec = -1;
    CHECK(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "c", getpid(), &c, &ec, err,
                           sizeof(err)) == 0);
    CHECK(carve_board_reattach(tenant) == 0);
    CHECK(carve_board_peers(tenant, ec, now, 100000000ull, peers, CARVE_BOARD_ENTRIES, &me) == 1);
    CHECK(me == 0);

    /* a board made anew under the name is another: not mapped in this one's place */
    cut(activity);
    carve_board_leave(c, ec);
    CHECK(access(settings, F_OK) == -1); /* the last leaver removed both */
    int ed = -1;
    struct carve_board *d;
    CHECK(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "d", getpid(), &d, &ed, err,
                           sizeof(err)) == 0);
    carve_board_note_launch(tenant, ea, now + 1000000);
    CHECK(carve_board_cut(tenant));
    CHECK(carve_board_reattach(tenant) == -ESTALE);
    carve_board_close(tenant);
    carve_board_leave(d, ed);
    carve_board_close(b); /* a and b were on the board that went */
    carve_board_close(a);

    /* a joiner of `carve run` alone leaving a board that stays cut: no fault, and the board
       goes (its objects would have stayed, 0 bytes, until the next joiner) */
    struct carve_board *e;
    int ee = -1;
    fresh_uuid(uuid);
    paths(uuid, settings, activity, sizeof(settings));
    CHECK(carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "e", getpid(), &e, &ee, err,
                           sizeof(err)) == 0);
    cut(settings);
    carve_board_leave(e, ee);
    CHECK(access(settings, F_OK) == -1 && access(activity, F_OK) == -1);
    return 0;
#undef CHECK
}

/* Truncated board objects no longer kill the processes that map them (they did, with
 * SIGBUS, every paced tenant of the GPU: 0666 activity). In a child: the guard's handler
 * stays with it. */
static void test_cut_objects(void **state)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(cut_objects_child());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the child died of signal %d", WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static sigjmp_buf caught_jump;
static volatile sig_atomic_t caught;
static struct sigaction guard_action; /* "after": what the program's handler passes on to */

static void catch_bus(int sig, siginfo_t *info, void *ctx)
{
    caught = 1;
    siglongjmp(caught_jump, 1);
}

static void catch_bus_plain(int sig)
{
    caught = 1;
    siglongjmp(caught_jump, 1);
}

static void note_bus(int sig)
{
    caught = 1; /* and returns: the fault comes again, to SA_RESETHAND's default */
}

static void chain_bus(int sig, siginfo_t *info, void *ctx)
{
    guard_action.sa_sigaction(sig, info, ctx);
}

/* test_board --foreign-fault HOW, from test_foreign_faults_pass. A tenant's board opened
 * (the guard is in place), then a mapping of the child's own cut
 * and touched, or a SIGBUS sent: what becomes of a SIGBUS that is not the guard's, with the
 * program's handler before it (how): "handler" (SA_SIGINFO) and "plain" catch the fault;
 * "default", "ignored" (a fault is fatal even so) and "resethand" (a one-shot handler that
 * returns) die of SIGBUS; "sent" dies of one sent by kill, "ignored-sent" ignores it;
 * "after": a handler the program installs after the guard, passing signals on to it, is
 * not taken over by the guard's next board (the two passed a signal back and forth until
 * the stack ran out): dies of SIGBUS. */
static int foreign_fault_child(const char *how)
{
    alarm(10); /* a fault handled round and round ends here */
    struct sigaction sa = {.sa_handler = SIG_DFL};
    if (strcmp(how, "handler") == 0)
        sa = (struct sigaction){.sa_sigaction = catch_bus, .sa_flags = SA_SIGINFO};
    else if (strcmp(how, "plain") == 0)
        sa.sa_handler = catch_bus_plain;
    else if (strncmp(how, "ignored", 7) == 0)
        sa.sa_handler = SIG_IGN;
    else if (strcmp(how, "resethand") == 0)
        sa = (struct sigaction){.sa_handler = note_bus, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL); /* cmocka's otherwise, around each test */
    uint8_t uuid[16];
    char err[512];
    fresh_uuid(uuid);
    struct carve_board *j, *tenant, *second;
    int e = -1;
    if (carve_board_join(uuid, CARVE_BOARD_MODE_SHARED, &CAP30, "a", getpid(), &j, &e, err,
                         sizeof(err)) < 0 || carve_board_open(uuid, &tenant) < 0)
        return 10;
    struct sigaction now;
    sigaction(SIGBUS, NULL, &now);
    if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction == catch_bus)
        return 15; /* the guard's is not in place */
    if (strcmp(how, "after") == 0) {
        guard_action = now;
        struct sigaction chain = {.sa_sigaction = chain_bus, .sa_flags = SA_SIGINFO};
        sigemptyset(&chain.sa_mask);
        sigaction(SIGBUS, &chain, NULL);
        if (carve_board_open(uuid, &second) < 0)
            return 16;
        sigaction(SIGBUS, NULL, &now);
        if (now.sa_sigaction != chain_bus)
            return 17;
    }
    carve_board_leave(j, e); /* the objects go: this child leaves nothing behind */
    if (strstr(how, "sent")) {
        kill(getpid(), SIGBUS);
        return 0;
    }
    char name[64];
    snprintf(name, sizeof(name), "/carve-test-foreign-%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    shm_unlink(name);
    if (fd < 0 || ftruncate(fd, 4096) < 0)
        return 12;
    volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
        return 13;
    if (sigsetjmp(caught_jump, 1) == 0)
        p[0] = 1;
    return caught ? 0 : 14;
}

static void expect_foreign(const char *how, bool dies)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* a program of its own: the guard never put in place before in it */
        execl("/proc/self/exe", "test_board", "--foreign-fault", how, (char *)NULL);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (dies) {
        if (!WIFSIGNALED(status))
            fail_msg("%s: the child exited %d, where SIGBUS should have killed it", how,
                     WEXITSTATUS(status));
        if (WTERMSIG(status) != SIGBUS)
            fail_msg("%s: the child died of signal %d, not SIGBUS (%d)", how,
                     WTERMSIG(status), SIGBUS);
    } else {
        if (WIFSIGNALED(status))
            fail_msg("%s: the child died of signal %d", how, WTERMSIG(status));
        if (WEXITSTATUS(status) != 0)
            fail_msg("%s: the child exited %d", how, WEXITSTATUS(status));
    }
}

static void test_foreign_faults_pass(void **state)
{
    expect_foreign("handler", false);
    expect_foreign("plain", false);
    expect_foreign("default", true);
    expect_foreign("sent", true);
    expect_foreign("ignored", true);
    expect_foreign("ignored-sent", false);
    expect_foreign("resethand", true);
    expect_foreign("after", true);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--foreign-fault") == 0)
        return foreign_fault_child(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guarantees_add_up_to_100),
        cmocka_unit_test(test_zombie_entry_is_free),
        cmocka_unit_test(test_activity_reaches_peers),
        cmocka_unit_test(test_queue_hands_over),
        cmocka_unit_test(test_queue_set),
        cmocka_unit_test(test_window_given),
        cmocka_unit_test(test_forged_queue_end),
        cmocka_unit_test(test_modes_and_cleanup),
        cmocka_unit_test(test_attach_and_leave_elsewhere),
        cmocka_unit_test(test_hand_over),
        cmocka_unit_test(test_preferred_place),
        cmocka_unit_test(test_other_layout_refused),
        cmocka_unit_test(test_cut_objects),
        cmocka_unit_test(test_foreign_faults_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
