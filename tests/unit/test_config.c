/* test_config.c - carved's config parser: the defaults, every key's accepted forms and stored
 * value, and every refusal's "FILE:LINE: what is wrong (what is accepted)". */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "carved.h"

#ifndef CARVED_CONF_EXAMPLE
#define CARVED_CONF_EXAMPLE "carved/carved.conf.example" /* run from the repository root */
#endif

#define FILE_NAME "t.conf"
#define CONF_BIG (PATH_MAX + 16)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const node_keys[] = {"socket",        "state_dir",  "listen",
                                        "poll_interval", "idle_after", "idle_policy",
                                        "escape_policy", "allow_user_slices", "admins",
                                        "admin_groups"};
static const char *const slice_keys[] = {"memory", "compute", "priority", "users",
                                         "groups", "gpus",    "idle_policy"};

static struct carved_config conf; /* ~200 KiB: not on the stack */
static struct carved_config defaults;

static int parse_len(const char *text, size_t len, char *err, size_t errlen)
{
    return carved_config_parse(text, len, FILE_NAME, &conf, err, errlen);
}

static void parse_ok(const char *text)
{
    char err[2048] = "junk";
    int r = parse_len(text, strlen(text), err, sizeof(err));
    if (r != 0)
        fail_msg("rejected (%d): %s\n--- text:\n%s", r, err, text);
    assert_string_equal(err, ""); /* cleared on success */
}

/* Parsing text fails on `line' with a message that holds each of the wants. */
static void parse_bad_len(const char *text, size_t len, int line, const char *const *wants)
{
    char err[2048] = "", prefix[64];
    int r = parse_len(text, len, err, sizeof(err));
    if (r != -EINVAL)
        fail_msg("got %d, want -EINVAL (`%s')\n--- text:\n%.300s", r, err, text);
    snprintf(prefix, sizeof(prefix), FILE_NAME ":%d: ", line);
    if (strncmp(err, prefix, strlen(prefix)) != 0)
        fail_msg("`%s' does not begin with `%s'", err, prefix);
    for (; *wants; wants++)
        if (!strstr(err, *wants))
            fail_msg("`%s' lacks `%s'", err, *wants);
}

#define PARSE_BAD(text, line, ...) \
    parse_bad_len((text), strlen(text), (line), (const char *const[]){__VA_ARGS__, NULL})

/* "[slice s]\nKEY = VALUE\n" */
static const char *in_slice(const char *key, const char *value)
{
    static char buf[16384];
    snprintf(buf, sizeof(buf), "[slice s]\n%s = %s\n", key, value);
    return buf;
}

static const char *node_line(const char *key, const char *value)
{
    static char buf[16384];
    snprintf(buf, sizeof(buf), "%s = %s\n", key, value);
    return buf;
}

static void test_defaults(void **state)
{
    memset(&conf, 0xa5, sizeof(conf));
    carved_config_defaults(&conf);
    assert_string_equal(conf.socket_path, "/run/carve/carved.sock");
    assert_string_equal(conf.state_dir, "/var/lib/carve");
    assert_string_equal(conf.listen, "127.0.0.1:9477");
    assert_int_equal(conf.poll_ms, 1000);
    assert_int_equal(conf.idle_after_s, 1800);
    assert_int_equal(conf.idle_policy, CARVED_POLICY_REPORT);
    assert_int_equal(conf.escape_policy, CARVED_POLICY_REPORT);
    assert_true(conf.allow_user_slices);
    assert_int_equal(conf.nadmins, 0);
    assert_int_equal(conf.nadmin_groups, 0);
    assert_int_equal(conf.nslices, 0);

    /* an empty file, or one of comments, is the defaults, whatever c held */
    static const char *const empty[] = {"", "\n\n", "# nothing\n   \n\t# more\n", "\xef\xbb\xbf"};
    for (size_t i = 0; i < COUNT(empty); i++) {
        memset(&conf, 0x5a, sizeof(conf));
        parse_ok(empty[i]);
        assert_memory_equal(&conf, &defaults, sizeof(conf));
    }
    char err[64];
    memset(&conf, 0x5a, sizeof(conf));
    assert_int_equal(carved_config_parse(NULL, 0, FILE_NAME, &conf, err, sizeof(err)), 0);
    assert_memory_equal(&conf, &defaults, sizeof(conf));
}

static const char full_text[] =
    "# carved.conf\n"
    "socket = /tmp/carve/test.sock\n"
    "state_dir = /srv/carve/state\n"
    "listen = [::1]:9500\n"
    "poll_interval = 250ms\n"
    "idle_after = 2h\n"
    "idle_policy = reclaim\n"
    "escape_policy = kill\n"
    "allow_user_slices = no\n"
    "admins = root, 1001\n"
    "admin_groups = root, 2000, 3000\n"
    "\n"
    "[slice train]\n"
    "memory = 8GiB\n"
    "compute = 30%\n"
    "priority = batch\n"
    "users = root, 1000\n"
    "groups = 100\n"
    "idle_policy = report\n"
    "\n"
    "[slice infer.v2_a-b]\n"
    "memory = 0=8GiB,1=4GiB\n"
    "compute = 12.5%+\n"
    "priority = latency\n"
    "\n"
    "[slice empty]\n";

static void test_full(void **state)
{
    parse_ok(full_text);
    assert_string_equal(conf.socket_path, "/tmp/carve/test.sock");
    assert_string_equal(conf.state_dir, "/srv/carve/state");
    assert_string_equal(conf.listen, "[::1]:9500");
    assert_int_equal(conf.poll_ms, 250);
    assert_int_equal(conf.idle_after_s, 7200);
    assert_int_equal(conf.idle_policy, CARVED_POLICY_RECLAIM);
    assert_int_equal(conf.escape_policy, CARVED_POLICY_KILL);
    assert_false(conf.allow_user_slices);
    assert_int_equal(conf.nadmins, 2);
    assert_int_equal(conf.admins[0], 0);
    assert_int_equal(conf.admins[1], 1001);
    assert_int_equal(conf.nadmin_groups, 3);
    assert_int_equal(conf.admin_groups[0], 0);
    assert_int_equal(conf.admin_groups[1], 2000);
    assert_int_equal(conf.admin_groups[2], 3000);

    assert_int_equal(conf.nslices, 3);
    const struct carved_slice_conf *s = &conf.slices[0];
    assert_string_equal(s->name, "train");
    assert_string_equal(s->memory, "8GiB");
    assert_string_equal(s->compute, "30%");
    assert_string_equal(s->priority, "batch");
    assert_int_equal(s->nusers, 2);
    assert_int_equal(s->users[0], 0);
    assert_int_equal(s->users[1], 1000);
    assert_int_equal(s->ngroups, 1);
    assert_int_equal(s->groups[0], 100);
    assert_int_equal(s->idle_policy, CARVED_POLICY_REPORT);
    assert_int_equal(s->line, 13);

    s = &conf.slices[1];
    assert_string_equal(s->name, "infer.v2_a-b");
    assert_string_equal(s->memory, "0=8GiB,1=4GiB");
    assert_string_equal(s->compute, "12.5%+");
    assert_string_equal(s->priority, "latency");
    assert_int_equal(s->nusers, 0);
    assert_int_equal(s->ngroups, 0);
    assert_int_equal(s->idle_policy, -1); /* the node's */
    assert_int_equal(s->line, 21);

    s = &conf.slices[2];
    assert_string_equal(s->name, "empty");
    assert_string_equal(s->memory, "");
    assert_string_equal(s->compute, "");
    assert_string_equal(s->priority, "");
    assert_int_equal(s->idle_policy, -1);
    assert_int_equal(s->line, 26);

    /* a second parse starts again from the defaults */
    parse_ok("socket = /x.sock\n");
    assert_int_equal(conf.nslices, 0);
    assert_int_equal(conf.nadmins, 0);
    assert_int_equal(conf.poll_ms, 1000);
}

static void test_paths(void **state)
{
    parse_ok(node_line("socket", "relative/carved.sock"));
    assert_string_equal(conf.socket_path, "relative/carved.sock");
    parse_ok(node_line("state_dir", "/"));
    assert_string_equal(conf.state_dir, "/");
    PARSE_BAD(node_line("socket", ""), 1, "socket: ", "no path", "at most 107 bytes");
    PARSE_BAD(node_line("state_dir", "var/lib/carve"), 1, "state_dir: ",
              "`var/lib/carve' is not an absolute path", "starting with /");
    PARSE_BAD(node_line("state_dir", ""), 1, "not an absolute path");
}

static void test_durations(void **state)
{
    static const struct {
        const char *key, *value;
        uint64_t want;
    } good[] = {
        {"poll_interval", "100ms", 100},   {"poll_interval", "500ms", 500},
        {"poll_interval", "1s", 1000},     {"poll_interval", "60s", 60000},
        {"poll_interval", "1m", 60000},    {"poll_interval", "0002s", 2000},
        {"poll_interval", "60000ms", 60000},
        {"idle_after", "10s", 10},         {"idle_after", "10000ms", 10},
        {"idle_after", "5m", 300},         {"idle_after", "2h", 7200},
        {"idle_after", "1d", 86400},       {"idle_after", "30d", 2592000},
        {"idle_after", "720h", 2592000},   {"idle_after", "11000ms", 11},
    };
    for (size_t i = 0; i < COUNT(good); i++) {
        parse_ok(node_line(good[i].key, good[i].value));
        uint64_t got = good[i].key[0] == 'p' ? conf.poll_ms : conf.idle_after_s;
        if (got != good[i].want)
            fail_msg("%s = %s: got %llu, want %llu", good[i].key, good[i].value,
                     (unsigned long long)got, (unsigned long long)good[i].want);
    }
    static const struct {
        const char *key, *value, *why;
    } bad[] = {
        {"poll_interval", "99ms", "out of range"},
        {"poll_interval", "61s", "out of range"},
        {"poll_interval", "2m", "out of range"},
        {"poll_interval", "0s", "out of range"},
        {"poll_interval", "18446744073709551616ms", "out of range"},
        {"poll_interval", "99999999999999999d", "out of range"},
        {"poll_interval", "1", "not a duration"},
        {"poll_interval", "1 s", "not a duration"},
        {"poll_interval", "1.5s", "not a duration"},
        {"poll_interval", "-1s", "not a duration"},
        {"poll_interval", "+1s", "not a duration"},
        {"poll_interval", "s", "not a duration"},
        {"poll_interval", "1sec", "not a duration"},
        {"poll_interval", "1S", "not a duration"},
        {"poll_interval", "", "not a duration"},
        {"idle_after", "9s", "out of range"},
        {"idle_after", "31d", "out of range"},
        {"idle_after", "10500ms", "not a whole number of seconds"},
        {"idle_after", "fast", "not a duration"},
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "`%s'", bad[i].value);
        const char *range = bad[i].key[0] == 'p' ? "from 100ms to 60s" : "from 10s to 30d";
        PARSE_BAD(node_line(bad[i].key, bad[i].value), 1, bad[i].key, quoted, bad[i].why,
                  range);
    }
    PARSE_BAD(node_line("poll_interval", "x"), 1, "ms, s, m, h or d", "500ms, 30s, 5m, 2h");
}

static void test_listen(void **state)
{
    static const char *const good[] = {
        "127.0.0.1:9477", "0.0.0.0:1",     "localhost:65535", "carve-01.example.com:80",
        "LOCALHOST:8080", "[::1]:9477",    "[fe80::1:2]:443", "[::ffff:10.0.0.1]:9477",
        "[::]:9477",      "off",           "host:09477",
    };
    for (size_t i = 0; i < COUNT(good); i++) {
        parse_ok(node_line("listen", good[i]));
        assert_string_equal(conf.listen, good[i]); /* as written */
    }
    static const struct {
        const char *value, *why;
    } bad[] = {
        {"9477", "no port"},
        {"127.0.0.1", "no port"},
        {"", "no port"},
        {"OFF", "no port"},
        {":9477", "not a host name or IPv4 address"},
        {"127.0.0.1:0", "port must be 1-65535"},
        {"127.0.0.1:65536", "port must be 1-65535"},
        {"127.0.0.1:", "port must be 1-65535"},
        {"127.0.0.1:+80", "port must be 1-65535"},
        {"127.0.0.1:9477x", "port must be 1-65535"},
        {"127.0.0.1:100000", "port must be 1-65535"},
        {"::1:9477", "in brackets"},
        {"[::1]9477", "not an address and a port"},
        {"[::1", "not an address and a port"},
        {"[zz]:1", "not an IPv6 address"},
        {"[]:1", "not an IPv6 address"},
        {"[127.0.0.1]:1", "not an IPv6 address"},
        {"999.0.0.1:1", "not a host name or IPv4 address"},
        {"1.2.3:80", "not a host name or IPv4 address"},
        {"a b:1", "not a host name or IPv4 address"},
        {"-x:1", "not a host name or IPv4 address"},
        {"x-:1", "not a host name or IPv4 address"},
        {"a..b:1", "not a host name or IPv4 address"},
        {"a_b:1", "not a host name or IPv4 address"},
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "`%s'", bad[i].value);
        PARSE_BAD(node_line("listen", bad[i].value), 1, "listen: ", quoted, bad[i].why,
                  "HOST:PORT", "[IPV6]:PORT", "or off");
    }
}

static void test_bools(void **state)
{
    static const struct {
        const char *word;
        bool want;
    } words[] = {
        {"yes", true}, {"no", false},   {"true", true}, {"false", false}, {"on", true},
        {"off", false}, {"1", true},    {"0", false},   {"YES", true},    {"Off", false},
        {"True", true},
    };
    for (size_t i = 0; i < COUNT(words); i++) {
        parse_ok(node_line("allow_user_slices", words[i].word));
        if (conf.allow_user_slices != words[i].want)
            fail_msg("allow_user_slices = %s: got %d", words[i].word, conf.allow_user_slices);
    }
    static const char *const bad[] = {"maybe", "", "2", "y", "yess", "no no"};
    for (size_t i = 0; i < COUNT(bad); i++)
        PARSE_BAD(node_line("allow_user_slices", bad[i]), 1, "allow_user_slices: ",
                  "is not yes or no", "use yes, no, true, false, on, off, 1 or 0");
}

static void test_policies(void **state)
{
    parse_ok(node_line("idle_policy", "reclaim"));
    assert_int_equal(conf.idle_policy, CARVED_POLICY_RECLAIM);
    parse_ok(node_line("idle_policy", "Report"));
    assert_int_equal(conf.idle_policy, CARVED_POLICY_REPORT);
    parse_ok(node_line("escape_policy", "kill"));
    assert_int_equal(conf.escape_policy, CARVED_POLICY_KILL);
    parse_ok(node_line("escape_policy", "report"));
    assert_int_equal(conf.escape_policy, CARVED_POLICY_REPORT);
    parse_ok(in_slice("idle_policy", "reclaim"));
    assert_int_equal(conf.slices[0].idle_policy, CARVED_POLICY_RECLAIM);
    assert_int_equal(conf.idle_policy, CARVED_POLICY_REPORT); /* the node's is untouched */
    parse_ok(in_slice("idle_policy", "report"));
    assert_int_equal(conf.slices[0].idle_policy, CARVED_POLICY_REPORT);

    PARSE_BAD(node_line("idle_policy", "kill"), 1, "idle_policy: ", "`kill' is not a policy",
              "use report or reclaim");
    PARSE_BAD(node_line("escape_policy", "reclaim"), 1, "escape_policy: ",
              "`reclaim' is not a policy", "use report or kill");
    PARSE_BAD(in_slice("idle_policy", "kill"), 2, "use report or reclaim");
    PARSE_BAD(in_slice("idle_policy", ""), 2, "use report or reclaim");
}

static void test_ids(void **state)
{
    parse_ok(node_line("admins", "root, 1001 ,4294967294,0"));
    assert_int_equal(conf.nadmins, 4);
    assert_int_equal(conf.admins[0], 0);
    assert_int_equal(conf.admins[1], 1001);
    assert_int_equal(conf.admins[2], 4294967294u);
    assert_int_equal(conf.admins[3], 0);
    parse_ok(node_line("admin_groups", "root"));
    assert_int_equal(conf.nadmin_groups, 1);
    assert_int_equal(conf.admin_groups[0], 0);
    parse_ok(in_slice("users", "65534"));
    assert_int_equal(conf.slices[0].nusers, 1);
    assert_int_equal(conf.slices[0].users[0], 65534);
    parse_ok(in_slice("groups", "root,\t5"));
    assert_int_equal(conf.slices[0].ngroups, 2);
    assert_int_equal(conf.slices[0].groups[0], 0);
    assert_int_equal(conf.slices[0].groups[1], 5);

    PARSE_BAD(node_line("admins", "no-such-user-carve"), 1,
              "admins: unknown user `no-such-user-carve'", "user names or numeric uids");
    PARSE_BAD(in_slice("users", "root, no-such-user-carve"), 2,
              "users: unknown user `no-such-user-carve'");
    PARSE_BAD(node_line("admin_groups", "no-such-group-carve"), 1,
              "admin_groups: unknown group `no-such-group-carve'", "group names or numeric gids");
    PARSE_BAD(in_slice("groups", "no-such-group-carve"), 2, "unknown group");
    PARSE_BAD(node_line("admins", "4294967295"), 1, "uid `4294967295' is out of range",
              "0-4294967294");
    PARSE_BAD(node_line("admin_groups", "99999999999999999999999"), 1, "gid", "out of range");
    PARSE_BAD(node_line("admins", "-1"), 1, "unknown user `-1'");
    PARSE_BAD(node_line("admins", "root alice"), 1, "unknown user `root alice'");
    static const char *const empty[] = {"root,,1", "root,", ",root", ",", "", "root, ,1"};
    for (size_t i = 0; i < COUNT(empty); i++)
        PARSE_BAD(node_line("admins", empty[i]), 1, "admins: ", "has an empty entry",
                  "separated by commas");
    /* a refused list leaves the field as it was */
    PARSE_BAD("admins = 7\nadmin_groups = 1, no-such-group-carve\n", 2, "unknown group");
    assert_int_equal(conf.nadmins, 1);
    assert_int_equal(conf.admins[0], 7);
    assert_int_equal(conf.nadmin_groups, 0);
}

/* "0, 1, ..., n-1" */
static const char *id_list(int n)
{
    static char buf[1024];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%d", i ? ", " : "", i);
    return buf;
}

static void test_id_limits(void **state)
{
    parse_ok(node_line("admins", id_list(CARVED_MAX_IDS)));
    assert_int_equal(conf.nadmins, CARVED_MAX_IDS);
    for (int i = 0; i < CARVED_MAX_IDS; i++)
        assert_int_equal(conf.admins[i], i);
    parse_ok(in_slice("groups", id_list(CARVED_MAX_IDS)));
    assert_int_equal(conf.slices[0].ngroups, CARVED_MAX_IDS);
    assert_int_equal(conf.slices[0].groups[CARVED_MAX_IDS - 1], CARVED_MAX_IDS - 1);

    PARSE_BAD(node_line("admins", id_list(CARVED_MAX_IDS + 1)), 1, "admins: ",
              "more than 32 users");
    PARSE_BAD(node_line("admin_groups", id_list(CARVED_MAX_IDS + 1)), 1, "more than 32 groups");
    PARSE_BAD(in_slice("users", id_list(CARVED_MAX_IDS + 1)), 2, "users: ", "more than 32 users");
    PARSE_BAD(in_slice("groups", id_list(CARVED_MAX_IDS + 5)), 2, "more than 32 groups");
}

static void test_slice_specs(void **state)
{
    static const struct {
        const char *key, *value;
    } good[] = {
        {"memory", "8GiB"},     {"memory", "0=8GiB,1=4GiB"}, {"memory", "512M"},
        {"memory", "1.5GiB"},   {"memory", "15=1T"},         {"compute", "30%"},
        {"compute", "30%+"},    {"compute", "12.5%"},        {"compute", "100"},
        {"compute", "0.01%+"},  {"priority", "latency"},     {"priority", "batch"},
        {"priority", "normal"},
    };
    for (size_t i = 0; i < COUNT(good); i++) {
        parse_ok(in_slice(good[i].key, good[i].value));
        const struct carved_slice_conf *s = &conf.slices[0];
        const char *got = good[i].key[0] == 'm' ? s->memory : good[i].key[0] == 'c'
                                                                  ? s->compute : s->priority;
        assert_string_equal(got, good[i].value);
    }
    /* the CLI parsers' messages, after FILE:LINE: KEY: */
    static const struct {
        const char *key, *value, *why, *forms;
    } bad[] = {
        {"memory", "8XB", "unknown unit", "1024-based"},
        {"memory", "0", "zero", "e.g. 512MiB"},
        {"memory", "", "empty", "IDX=SIZE"},
        {"memory", "8 GiB", "contains a space", "e.g. 512MiB"},
        {"memory", "0=8GiB,0=4GiB", "named twice", "IDX=SIZE"},
        {"memory", "16=1G", "out of range", "IDX 0-15"},
        {"memory", "0=8G,", "empty entry", "IDX=SIZE"},
        {"memory", "-1G", "negative", "e.g. 512MiB"},
        {"compute", "0%", "is zero", "percentage in (0, 100]"},
        {"compute", "101%", "more than 100%", "percentage in (0, 100]"},
        {"compute", "abc", "not a percentage", "`30%+'"},
        {"compute", "-5%", "negative", "percentage in (0, 100]"},
        {"compute", "", "empty", "percentage in (0, 100]"},
        {"compute", "12.345%", "precision", "percentage in (0, 100]"},
        {"priority", "urgent", "unknown priority `urgent'", "use latency, batch or normal"},
        {"priority", "Batch", "unknown priority", "use latency, batch or normal"},
        {"priority", "", "unknown priority", "use latency, batch or normal"},
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), ": %s: ", bad[i].key);
        PARSE_BAD(in_slice(bad[i].key, bad[i].value), 2, prefix, bad[i].why, bad[i].forms);
    }
}

/* gpus: indices or UUIDs as written (carved finds them among the node's GPUs at its start) */
static void test_slice_gpus(void **state)
{
    static const char uuid[] = "GPU-8e6f1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5b";
    char text[256];
    snprintf(text, sizeof(text), "[slice s]\ngpus = 1 ,%s, 0\n", uuid);
    parse_ok(text);
    const struct carved_slice_conf *s = &conf.slices[0];
    assert_int_equal(s->ngpu_refs, 3);
    assert_int_equal(s->gpu_refs[0].index, 1);
    assert_int_equal(s->gpu_refs[1].index, -1);
    assert_int_equal(s->gpu_refs[1].uuid[0], 0x8e);
    assert_int_equal(s->gpu_refs[1].uuid[15], 0x5b);
    assert_int_equal(s->gpu_refs[2].index, 0);
    assert_int_equal(s->ngpus, 0); /* found among the node's GPUs by carved, not here */
    parse_ok("[slice s]\ngpus = 15\n[slice t]\n");
    assert_int_equal(conf.slices[0].ngpu_refs, 1);
    assert_int_equal(conf.slices[1].ngpu_refs, 0); /* every GPU */

    static const struct {
        const char *value, *why;
    } bad[] = {
        {"", "has an empty entry"},
        {"0,,1", "has an empty entry"},
        {"0,", "has an empty entry"},
        {"first", "`first' is neither a GPU index"},
        {"-1", "`-1' is neither a GPU index"},
        {"GPU-", "`GPU-' is neither"},
        {"GPU-8e6f1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5", "is neither"},
        {"1234567890", "`1234567890' is neither"},
        {"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "more than 16 GPUs"},
        {"0, 1, 0", "names GPU 0 twice"},
        {"GPU-8e6f1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5b,GPU-8E6F1A2B0c3d4e5f8a9b0c1d2e3f4a5b",
         "names GPU GPU-8E6F1A2B0c3d4e5f8a9b0c1d2e3f4a5b twice"},
    };
    for (size_t i = 0; i < COUNT(bad); i++)
        PARSE_BAD(in_slice("gpus", bad[i].value), 2, ": gpus: ", bad[i].why);
    /* a refused list leaves what the slice had */
    PARSE_BAD("[slice s]\ngpus = 2\ngpus = x\n", 3, "`gpus' is set twice");
    assert_int_equal(conf.slices[0].ngpu_refs, 1);
    assert_int_equal(conf.slices[0].gpu_refs[0].index, 2);
}

static void test_slice_names(void **state)
{
    char name63[64], name64[65], text[128];
    memset(name63, 'n', 63);
    name63[63] = '\0';
    memset(name64, 'n', 64);
    name64[64] = '\0';
    static const char *const good[] = {"a", "A-Z_0.9", "...", ".a", "-x", "_"};
    for (size_t i = 0; i < COUNT(good); i++) {
        snprintf(text, sizeof(text), "[slice %s]\n", good[i]);
        parse_ok(text);
        assert_string_equal(conf.slices[0].name, good[i]);
    }
    snprintf(text, sizeof(text), "[slice %s]\n", name63);
    parse_ok(text);
    assert_string_equal(conf.slices[0].name, name63);
    parse_ok("[ slice \t spaced ]   # comment\n");
    assert_string_equal(conf.slices[0].name, "spaced");

    const char *const bad[] = {name64, "", ".", "..", "a b", "a/b", "é", "a:b", "a#b"};
    for (size_t i = 0; i < COUNT(bad); i++) {
        snprintf(text, sizeof(text), "[slice %s]\n", bad[i]);
        PARSE_BAD(text, 1, "invalid slice name", "1-63 letters, digits, `.', `_' or `-'");
    }
    PARSE_BAD("[slice]\n", 1, "invalid slice name `'");
    PARSE_BAD("[node]\n", 1, "unknown section `[node]'", "[slice NAME]");
    PARSE_BAD("[slices a]\n", 1, "unknown section", "[slice NAME]");
    PARSE_BAD("[]\n", 1, "unknown section", "[slice NAME]");
    PARSE_BAD("[slice a\n", 1, "not a section header", "expected [slice NAME]");
    PARSE_BAD("[slice a] x\n", 1, "not a section header");
    PARSE_BAD("[slice a]]\n", 1, "invalid slice name `a]'");
}

static void test_duplicates(void **state)
{
    PARSE_BAD("[slice a]\n[slice b]\n\n[slice a]\n", 4, "slice `a' is already declared on line 1");
    PARSE_BAD("poll_interval = 1s\n# x\npoll_interval = 2s\n", 3,
              "`poll_interval' is set twice (first on line 1)");
    PARSE_BAD("[slice a]\nmemory = 1G\ncompute = 5%\nmemory = 2G\n", 4,
              "`memory' is set twice (first on line 2)");
    /* the same key once in each section is fine, and so is idle_policy in both scopes */
    parse_ok("idle_policy = reclaim\n[slice a]\nmemory = 1G\nidle_policy = report\n"
             "[slice b]\nmemory = 2G\nidle_policy = reclaim\n");
    assert_int_equal(conf.nslices, 2);
    assert_string_equal(conf.slices[1].memory, "2G");
}

static void test_too_many_slices(void **state)
{
    size_t cap = (CARVED_MAX_CONF_SLICES + 1) * 16;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t used = 0;
    for (int i = 0; i < CARVED_MAX_CONF_SLICES; i++)
        used += (size_t)snprintf(text + used, cap - used, "[slice s%d]\n", i);
    parse_ok(text);
    assert_int_equal(conf.nslices, CARVED_MAX_CONF_SLICES);
    assert_string_equal(conf.slices[CARVED_MAX_CONF_SLICES - 1].name, "s255");
    snprintf(text + used, cap - used, "[slice one-more]\n");
    char err[256];
    int r = parse_len(text, strlen(text), err, sizeof(err));
    free(text);
    assert_int_equal(r, -EINVAL);
    assert_string_equal(err, FILE_NAME ":257: more than 256 slices; declare at most 256");
}

static void test_wrong_section(void **state)
{
    for (size_t i = 0; i < COUNT(slice_keys) - 1; i++) { /* idle_policy is in both */
        char want[64];
        snprintf(want, sizeof(want), "`%s' is a slice setting", slice_keys[i]);
        PARSE_BAD(node_line(slice_keys[i], "1"), 1, want, "in a [slice NAME] section");
    }
    for (size_t i = 0; i < COUNT(node_keys); i++) {
        if (strcmp(node_keys[i], "idle_policy") == 0)
            continue;
        char want[64];
        snprintf(want, sizeof(want), "`%s' is a node setting", node_keys[i]);
        PARSE_BAD(in_slice(node_keys[i], "1"), 2, want, "before the first [slice NAME]");
    }
}

static void test_unknown_key(void **state)
{
    char node_list[512] = "", slice_list[256] = "";
    for (size_t i = 0; i < COUNT(node_keys); i++)
        snprintf(node_list + strlen(node_list), sizeof(node_list) - strlen(node_list), "%s%s",
                 i ? ", " : "", node_keys[i]);
    for (size_t i = 0; i < COUNT(slice_keys); i++)
        snprintf(slice_list + strlen(slice_list), sizeof(slice_list) - strlen(slice_list),
                 "%s%s", i ? ", " : "", slice_keys[i]);
    PARSE_BAD("pol_interval = 1s\n", 1, "unknown key `pol_interval'",
              "(did you mean `poll_interval'?)", "the node keys are", node_list);
    PARSE_BAD("colour = red\n", 1, "unknown key `colour'; the node keys are", node_list);
    PARSE_BAD("Socket = /x\n", 1, "did you mean `socket'");
    PARSE_BAD("[slice a]\nmemori = 1G\n", 2, "unknown key `memori' (did you mean `memory'?)",
              "the slice keys are", slice_list);
    PARSE_BAD("[slice a]\nfoo bar = 1\n", 2, "unknown key `foo bar'", slice_list);
    char err[1024];
    assert_int_equal(parse_len("colour = red\n", 13, err, sizeof(err)), -EINVAL);
    assert_null(strstr(err, "did you mean"));
}

static void test_syntax(void **state)
{
    PARSE_BAD("socket /run/x.sock\n", 1, "`socket /run/x.sock' has no `='",
              "expected KEY = VALUE or [slice NAME]");
    PARSE_BAD("# c\n\nmemory\n", 3, "has no `='");
    PARSE_BAD("= 1s\n", 1, "no key before `='");
    PARSE_BAD("  =\n", 1, "no key before `='");
    /* the first `=' splits: the rest is the value */
    parse_ok("[slice a]\nmemory = 0=1G,1=2G\n");
    assert_string_equal(conf.slices[0].memory, "0=1G,1=2G");
}

static void test_overlong(void **state)
{
    static char value[CONF_BIG];
    char want[64];
    /* socket: at most 107 bytes */
    memset(value, 'a', sizeof(value));
    value[0] = '/';
    value[107] = '\0';
    parse_ok(node_line("socket", value));
    assert_int_equal(strlen(conf.socket_path), 107);
    value[107] = 'a';
    value[108] = '\0';
    PARSE_BAD(node_line("socket", value), 1, "socket: ", "is 108 bytes long; give at most 107");

    /* state_dir: at most PATH_MAX - 1 */
    memset(value, 'a', sizeof(value));
    value[0] = '/';
    value[PATH_MAX - 1] = '\0';
    parse_ok(node_line("state_dir", value));
    assert_int_equal(strlen(conf.state_dir), PATH_MAX - 1);
    value[PATH_MAX - 1] = 'a';
    value[PATH_MAX] = '\0';
    snprintf(want, sizeof(want), "is %d bytes long; give at most %d", PATH_MAX, PATH_MAX - 1);
    PARSE_BAD(node_line("state_dir", value), 1, "state_dir: ", want, "...'");

    /* listen: at most 127 */
    char host[200];
    snprintf(host, sizeof(host), "%.60s.%.60s:9477", value + 1, value + 1); /* 126 bytes */
    parse_ok(node_line("listen", host));
    snprintf(host, sizeof(host), "%.60s.%.60s:19477", value + 1, value + 1); /* 127 */
    parse_ok(node_line("listen", host));
    snprintf(host, sizeof(host), "%.60s.%.61s:19477", value + 1, value + 1); /* 128 */
    PARSE_BAD(node_line("listen", host), 1, "listen: ", "is 128 bytes long; give at most 127");

    /* memory, compute, priority: at most CARVED_SPEC_MAX - 1, checked before the value */
    static const char *const specs[] = {"memory", "compute", "priority"};
    memset(value, '9', CARVED_SPEC_MAX);
    value[CARVED_SPEC_MAX] = '\0';
    for (size_t i = 0; i < COUNT(specs); i++)
        PARSE_BAD(in_slice(specs[i], value), 2, specs[i], "is 128 bytes long; give at most 127");
    /* a long valid spec fits: "0=1G,1=1G,...": 15 entries of 4-5 bytes */
    parse_ok(in_slice("memory", "0=1G,1=1G,2=1G,3=1G,4=1G,5=1G,6=1G,7=1G,8=1G,9=1G,10=1G,"
                                "11=1G,12=1G,13=1G,14=1G,15=1G"));

    /* a user name as long as a line can hold is just unknown */
    memset(value, 'u', 4000);
    value[4000] = '\0';
    PARSE_BAD(node_line("admins", value), 1, "unknown user `uuuu", "...'");

    /* lines: at most 8191 bytes, comments included */
    char *line = malloc(9000);
    assert_non_null(line);
    memset(line, '#', 8191);
    strcpy(line + 8191, "\n");
    parse_ok(line);
    memset(line, '#', 8192);
    strcpy(line + 8192, "\n");
    PARSE_BAD(line, 1, "the line is longer than 8191 bytes");
    free(line);
}

static void test_comments_whitespace(void **state)
{
    parse_ok("\xef\xbb\xbf" /* a UTF-8 byte order mark */
             "  # an indented comment\n"
             "\t socket\t=\t/tmp/a#b.sock \t# a trailing comment\n"
             "state_dir=/srv/x\n"
             "\n"
             "   \t  \n"
             "poll_interval = 2s\r\n"
             "escape_policy =kill # =x\n"
             "#idle_after = 5h\n"
             "idle_after = 1h");
    assert_string_equal(conf.socket_path, "/tmp/a#b.sock"); /* `#' after no space is text */
    assert_string_equal(conf.state_dir, "/srv/x");
    assert_int_equal(conf.poll_ms, 2000);
    assert_int_equal(conf.escape_policy, CARVED_POLICY_KILL);
    assert_int_equal(conf.idle_after_s, 3600);
    PARSE_BAD("listen = off#x\n", 1, "`off#x'");
    PARSE_BAD("[slice a]#c\n", 1, "not a section header");
    parse_ok("[slice a]\t# c\nmemory=1G\t#\tx\n");
    assert_string_equal(conf.slices[0].memory, "1G");
    PARSE_BAD("[slice a]\nmemory = 1G#x\n", 2, "memory: ", "`1G#x'");
}

static void test_line_numbers(void **state)
{
    PARSE_BAD("# c\n\nsocket = /x\r\n\n[slice a]\nmemory = 0\n", 6, "memory: ",
              "invalid size `0': zero");
    PARSE_BAD("socket = /x\n\n\n\npoll_interval = 1", 5, "poll_interval: ");
    PARSE_BAD("\xef\xbb\xbfsocket = /x\nbad\n", 2, "has no `='");
}

static void test_bad_bytes(void **state)
{
    static const char nul[] = "socket = /a\0b\n";
    parse_bad_len(nul, sizeof(nul) - 1, 1, (const char *const[]){"control character 0x00",
                                                                  "column 12", NULL});
    static const char nul2[] = "# ok\n\0\n";
    parse_bad_len(nul2, sizeof(nul2) - 1, 2, (const char *const[]){"0x00", NULL});
    PARSE_BAD("socket = /a\x1b[31m\n", 1, "control character 0x1b");
    PARSE_BAD("socket = /a\rb\n", 1, "control character 0x0d");
    PARSE_BAD("# x\x7f\n", 1, "control character 0x7f");
    PARSE_BAD("socket = /a\r\r\n", 1, "0x0d");
    /* the text's length is honoured: what follows it is not read */
    static const char cut[] = "poll_interval = 2sXXXX";
    char err[256];
    assert_int_equal(parse_len(cut, strlen("poll_interval = 2s"), err, sizeof(err)), 0);
    assert_int_equal(conf.poll_ms, 2000);
    /* bytes >= 0x80 are text */
    parse_ok("socket = /tmp/caf\xc3\xa9.sock # caf\xc3\xa9\n");
    assert_string_equal(conf.socket_path, "/tmp/caf\xc3\xa9.sock");
}

static void test_err_buffers(void **state)
{
    const char *text = "socket = /x\nbogus = 1\n";
    assert_int_equal(carved_config_parse(text, strlen(text), FILE_NAME, &conf, NULL, 0), -EINVAL);
    char err[8];
    memset(err, 'x', sizeof(err));
    assert_int_equal(carved_config_parse(text, strlen(text), FILE_NAME, &conf, err, 5), -EINVAL);
    assert_string_equal(err, "t.co");
    assert_int_equal(err[5], 'x'); /* nothing written past errlen */
    assert_int_equal(carved_config_parse(text, strlen(text), FILE_NAME, &conf, err, 1), -EINVAL);
    assert_string_equal(err, "");
    char big[256];
    assert_int_equal(carved_config_parse(text, strlen(text), NULL, &conf, big, sizeof(big)),
                     -EINVAL);
    assert_non_null(strstr(big, ":2: unknown key `bogus'"));
    assert_int_equal(carved_config_parse("", 0, FILE_NAME, &conf, NULL, 0), 0);
}

static void test_partial_on_error(void **state)
{
    char err[256];
    const char *text = "poll_interval = 2s\n[slice a]\nmemory = 1G\nbogus = 1\ncompute = 5%\n";
    assert_int_equal(parse_len(text, strlen(text), err, sizeof(err)), -EINVAL);
    assert_int_equal(conf.poll_ms, 2000);
    assert_string_equal(conf.socket_path, defaults.socket_path);
    assert_int_equal(conf.nslices, 1);
    assert_string_equal(conf.slices[0].memory, "1G");
    assert_string_equal(conf.slices[0].compute, "");
}

/* The file at path holds text; returns path. */
static const char *write_file(char *path, const char *text, size_t len)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static void test_load(void **state)
{
    char path[] = "/tmp/test_config.XXXXXX", err[512];
    write_file(path, full_text, strlen(full_text));
    assert_int_equal(carved_config_load(path, &conf, err, sizeof(err)), 0);
    assert_int_equal(conf.nslices, 3);
    assert_string_equal(conf.listen, "[::1]:9500");
    unlink(path);

    char bad[] = "/tmp/test_config.XXXXXX", want[64];
    write_file(bad, "socket = /x\n\nlisten = 9477\n", 27);
    assert_int_equal(carved_config_load(bad, &conf, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:3: listen: ", bad);
    assert_memory_equal(err, want, strlen(want));
    unlink(bad);

    assert_int_equal(carved_config_load("/nonexistent/carved.conf", &conf, err, sizeof(err)),
                     -ENOENT);
    assert_string_equal(err, "/nonexistent/carved.conf: cannot read: No such file or directory");
    assert_memory_equal(&conf, &defaults, sizeof(conf));
    assert_int_equal(carved_config_load("/", &conf, err, sizeof(err)), -EISDIR);
    assert_non_null(strstr(err, "/: cannot read: Is a directory"));

    /* larger than 1 MiB: refused before parsing */
    char huge[] = "/tmp/test_config.XXXXXX";
    size_t n = (1 << 20) + 1;
    char *text = malloc(n);
    assert_non_null(text);
    memset(text, '\n', n);
    write_file(huge, text, n);
    free(text);
    assert_int_equal(carved_config_load(huge, &conf, err, sizeof(err)), -EFBIG);
    assert_non_null(strstr(err, huge));
    unlink(huge);
}

/* The documented example loads; its node settings are the defaults; it names every key. */
static void test_example(void **state)
{
    char err[512];
    int r = carved_config_load(CARVED_CONF_EXAMPLE, &conf, err, sizeof(err));
    if (r != 0)
        fail_msg("%s", err);
    assert_string_equal(conf.socket_path, defaults.socket_path);
    assert_string_equal(conf.state_dir, defaults.state_dir);
    assert_string_equal(conf.listen, defaults.listen);
    assert_int_equal(conf.poll_ms, defaults.poll_ms);
    assert_int_equal(conf.idle_after_s, defaults.idle_after_s);
    assert_int_equal(conf.idle_policy, defaults.idle_policy);
    assert_int_equal(conf.escape_policy, defaults.escape_policy);
    assert_int_equal(conf.allow_user_slices, defaults.allow_user_slices);
    assert_int_equal(conf.nslices, 2);
    assert_string_equal(conf.slices[0].name, "train");
    assert_string_equal(conf.slices[1].name, "notebooks");

    FILE *f = fopen(CARVED_CONF_EXAMPLE, "r");
    assert_non_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    for (size_t i = 0; i < COUNT(node_keys); i++) {
        char set[64], commented[64];
        snprintf(set, sizeof(set), "\n%s = ", node_keys[i]);
        snprintf(commented, sizeof(commented), "\n# %s = ", node_keys[i]);
        if (!strstr(text, set) && !strstr(text, commented))
            fail_msg("the example does not show node key `%s'", node_keys[i]);
    }
    for (size_t i = 0; i < COUNT(slice_keys); i++) {
        char doc[64];
        snprintf(doc, sizeof(doc), "\n#   %s ", slice_keys[i]);
        if (!strstr(text, doc))
            fail_msg("the example does not document slice key `%s'", slice_keys[i]);
    }
}

static int setup(void **state)
{
    carved_config_defaults(&defaults);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_policies),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_id_limits),
        cmocka_unit_test(test_slice_specs),
        cmocka_unit_test(test_slice_gpus),
        cmocka_unit_test(test_slice_names),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_too_many_slices),
        cmocka_unit_test(test_wrong_section),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_overlong),
        cmocka_unit_test(test_comments_whitespace),
        cmocka_unit_test(test_line_numbers),
        cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_err_buffers),
        cmocka_unit_test(test_partial_on_error),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_example),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
