/* test_groups.c - carved's users' groups (carved/groups.c), with NSS replaced by the fakes
 * below (linked with --wrap): membership through the process's group, the passwd group and
 * supplementary groups; NSS asked once per user per CARVED_GROUPS_TTL_S, again after it (a
 * change then applies); four users of one cache set kept, a fifth replacing the oldest; a
 * failed lookup asked again in 5 s, the last good list kept meanwhile; a user in more
 * groups than a first guess of room (300: the old list of 256 lost them); a user NSS does
 * not know. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "groups.h"

#define KNOWN_UID 1000
#define UNKNOWN_UID 4242
#define PASSWD_GID 100

static int pw_calls, list_calls;
static int fake_count = 3;     /* supplementary groups: 200, 201, ... */
static int fake_failing;       /* 1: getpwuid fails (EIO); 2: getgrouplist fails */
static struct passwd fake_pw = {.pw_name = "alice", .pw_gid = PASSWD_GID};

struct passwd *__wrap_getpwuid(uid_t uid);
int __wrap_getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups);

struct passwd *__wrap_getpwuid(uid_t uid)
{
    pw_calls++;
    errno = fake_failing == 1 ? EIO : 0;
    if (uid == UNKNOWN_UID || fake_failing == 1)
        return NULL;
    fake_pw.pw_uid = uid;
    return &fake_pw;
}

int __wrap_getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups)
{
    list_calls++;
    int want = 1 + fake_count;
    if (fake_failing == 2)
        return -1; /* *ngroups left as it was: not a want of room */
    if (*ngroups < want) {
        *ngroups = want;
        return -1;
    }
    groups[0] = group;
    for (int i = 0; i < fake_count; i++)
        groups[1 + i] = (gid_t)(200 + i);
    *ngroups = want;
    return want;
}

static int reset(void **state)
{
    carved_groups_forget();
    pw_calls = list_calls = fake_failing = 0;
    fake_count = 3;
    return 0;
}

static void test_membership(void **state)
{
    const gid_t none[] = {7};
    assert_false(carved_in_groups_at(KNOWN_UID, 50, none, 0, 10.0));
    assert_int_equal(pw_calls, 0); /* no groups configured: NSS is not asked */
    const gid_t own[] = {50};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, own, 1, 10.0));
    assert_int_equal(pw_calls, 0); /* the process's group needs no NSS */
    const gid_t passwd[] = {9, PASSWD_GID};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, passwd, 2, 10.0));
    const gid_t supplementary[] = {202};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, supplementary, 1, 10.0));
    assert_false(carved_in_groups_at(KNOWN_UID, 50, none, 1, 10.0));
    assert_int_equal(pw_calls, 1);
    assert_int_equal(list_calls, 1); /* room for 64 on the first try: 4 fit */
}

static void test_cached_for_the_ttl(void **state)
{
    const gid_t g[] = {201};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, 100.0));
    for (int i = 0; i < 1000; i++) /* a poll of 1000 tenant processes */
        assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, 100.0 + i * 0.05));
    assert_int_equal(pw_calls, 1);
    /* taken out of 201 (and 202): still in until the TTL is over, then out */
    fake_count = 1;
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, 100.0 + CARVED_GROUPS_TTL_S - 0.5));
    assert_false(carved_in_groups_at(KNOWN_UID, 50, g, 1, 100.0 + CARVED_GROUPS_TTL_S));
    assert_int_equal(pw_calls, 2);
    /* a clock before the list's time (not monotonic after all): asked again */
    assert_false(carved_in_groups_at(KNOWN_UID, 50, g, 1, 50.0));
    assert_int_equal(pw_calls, 3);
}

static void test_users_sharing_a_set(void **state)
{
    const gid_t g[] = {200};
    for (int round = 0; round < 3; round++)
        for (uid_t k = 0; k < 4; k++) /* four users of one set (uid modulo 64): all kept */
            assert_true(carved_in_groups_at(KNOWN_UID + 64 * k, 50, g, 1, 10.0 + round));
    assert_int_equal(pw_calls, 4);
    /* a fifth takes the place of the one asked first; the other three stay */
    assert_true(carved_in_groups_at(KNOWN_UID + 64 * 4, 50, g, 1, 20.0));
    for (uid_t k = 1; k < 4; k++)
        assert_true(carved_in_groups_at(KNOWN_UID + 64 * k, 50, g, 1, 20.0));
    assert_int_equal(pw_calls, 5);
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, 20.0));
    assert_int_equal(pw_calls, 6);
}

/* NSS's server not answering: a user's last good list is kept, and asked again in 5 s, not
 * a minute; a user never known is in no group meanwhile, and asked again as soon. */
static void test_failed_lookup(void **state)
{
    const gid_t g[] = {201};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, 100.0));
    fake_failing = 1;
    const double later = 100.0 + CARVED_GROUPS_TTL_S;
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, later));
    assert_int_equal(pw_calls, 2);
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, later + 4.9));
    assert_int_equal(pw_calls, 2);
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, later + 5.0));
    assert_int_equal(pw_calls, 3);
    assert_false(carved_in_groups_at(KNOWN_UID + 1, 50, g, 1, later));
    fake_failing = 2; /* the groups' lookup fails: the same */
    assert_false(carved_in_groups_at(KNOWN_UID + 1, 50, g, 1, later + 5.0));
    assert_int_equal(pw_calls, 5);
    fake_failing = 0;
    assert_true(carved_in_groups_at(KNOWN_UID + 1, 50, g, 1, later + 10.0));
    assert_true(carved_in_groups_at(KNOWN_UID, 50, g, 1, later + 10.0));
}

static void test_many_groups(void **state)
{
    fake_count = 300;
    const gid_t last[] = {200 + 299};
    assert_true(carved_in_groups_at(KNOWN_UID, 50, last, 1, 10.0));
    assert_int_equal(list_calls, 2); /* 64, then the 301 asked for */
}

static void test_unknown_user(void **state)
{
    const gid_t g[] = {200, PASSWD_GID};
    assert_false(carved_in_groups_at(UNKNOWN_UID, 50, g, 2, 10.0));
    assert_false(carved_in_groups_at(UNKNOWN_UID, 50, g, 2, 11.0));
    assert_int_equal(pw_calls, 1); /* "no such user" is kept the whole TTL */
    assert_int_equal(list_calls, 0);
    const gid_t own[] = {50};
    assert_true(carved_in_groups_at(UNKNOWN_UID, 50, own, 1, 12.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_membership, reset),
        cmocka_unit_test_setup(test_cached_for_the_ttl, reset),
        cmocka_unit_test_setup(test_users_sharing_a_set, reset),
        cmocka_unit_test_setup(test_failed_lookup, reset),
        cmocka_unit_test_setup(test_many_groups, reset),
        cmocka_unit_test_setup(test_unknown_user, reset),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    carved_groups_forget();
    return failed;
}
