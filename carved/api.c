/* api.c - carved's socket API: one JSON object per line in, one per line out. Who asks is
 * the socket's peer credentials (SO_PEERCRED), never anything in the request.
 *
 *   {"op":"create","name":N,"memory":S,"compute":S,"priority":S,"users":[U],"groups":[G],
 *    "gpus":[IDX or "GPU-UUID"],"run":true}
 *                  -> {"ok":true,"slice":N,"shm":SHM,"simulated":B}   (gpus: the node's GPUs
 *                    the slice is on, default all, its memory and compute applying there
 *                    only; run: ends with the asking process; simulated: carved runs on the
 *                    simulated GPU)
 *   {"op":"join","name":N}   -> {"ok":true,"shm":SHM,"simulated":B}
 *   {"op":"join","name":N,"table":true} -> the same, with an fd of the slice's table passed
 *                    (SCM_RIGHTS) with the reply: the table is carved's (0600), and this is
 *                    how libcarve in a tenant that may join maps it
 *   {"op":"delete","name":N} -> {"ok":true}
 *   {"op":"list"} / {"op":"ps"} -> {"ok":true,"snapshot":{...}}   (carved.h's snapshot)
 *   any error -> {"ok":false,"error":"what is wrong and what to do"}; a refusal a client
 *                    acts on by kind also has a "code" (clients that do not know one ignore
 *                    it): "guarantees_full" (board.h), a create whose guarantee would take a
 *                    GPU's guarantees past 100% */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "uuid.h"

static json_t *fail(const char *fmt, const char *arg)
{
    char msg[768];
    snprintf(msg, sizeof(msg), fmt, arg);
    json_t *why = json_string(msg);
    if (!why) {
        /* not UTF-8: a parse error quotes the request's own bytes (found by fuzz_api; the
         * reply was lost and the client waited for nothing) */
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        why = json_string(msg);
    }
    return json_pack("{s:b,s:o}", "ok", 0, "error", why);
}

/* The largest uid or gid a request may name, as in the config: (uid_t)-1 means "no id". */
#define API_ID_MAX 4294967294LL

/* A user or group given by name or number; false when unknown. */
static bool id_of(json_t *v, bool group, unsigned *out)
{
    if (json_is_integer(v)) {
        /* 4294967296 was cut to 32 bits: a slice open to root, or to a user not named */
        if (json_integer_value(v) < 0 || json_integer_value(v) > API_ID_MAX)
            return false;
        *out = (unsigned)json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    if (group) {
        struct group *g = getgrnam(s);
        if (g)
            *out = g->gr_gid;
        return g != NULL;
    }
    struct passwd *p = getpwnam(s);
    if (p)
        *out = p->pw_uid;
    return p != NULL;
}

static json_t *read_ids(json_t *a, bool group, unsigned *out, int *n)
{
    size_t i;
    json_t *v;
    *n = 0;
    if (a && !json_is_array(a))
        return fail("`%s' must be a list", group ? "groups" : "users");
    json_array_foreach(a, i, v) {
        if (*n >= CARVED_MAX_IDS)
            return fail("at most 32 %s per slice", group ? "groups" : "users");
        if (json_is_integer(v) && !id_of(v, group, &out[*n])) {
            char num[32];
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            return fail(group ? "gid %s is out of range; give 0-4294967294 or a group name"
                              : "uid %s is out of range; give 0-4294967294 or a user name",
                        num);
        }
        if (!id_of(v, group, &out[*n]))
            return fail(group ? "no such group: %s" : "no such user: %s",
                        json_is_string(v) ? json_string_value(v) : "(not a name or number)");
        (*n)++;
    }
    return NULL;
}

static json_t *copy_field(json_t *req, const char *key, char *out, size_t len)
{
    json_t *v = json_object_get(req, key);
    out[0] = '\0';
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v))
        return fail("`%s' must be a string", key);
    if (strlen(json_string_value(v)) >= len) { /* "a short string" did not say how short */
        char why[96];
        snprintf(why, sizeof(why), "`%s' is %zu bytes long; give at most %zu", key,
                 strlen(json_string_value(v)), len - 1);
        return fail("%s", why);
    }
    snprintf(out, len, "%s", json_string_value(v));
    return NULL;
}

/* The request's "gpus" into c: the node's GPUs the slice is on, each by carved's index or
 * by UUID, each once; absent: every GPU. NULL, or the refusal. */
static json_t *read_gpus(const struct carved *d, json_t *a, struct carved_slice_conf *c)
{
    struct carve_gpu_ref refs[CARVE_SLICE_MAX_DEVICES];
    size_t i;
    json_t *v;
    c->ngpus = 0;
    if (!a)
        return NULL;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return fail("%s", "`gpus' must be a list of the node's GPUs the slice is on, each an "
                          "index or a UUID (\"GPU-...\"); leave it out for every GPU");
    _Static_assert(CARVE_SLICE_MAX_DEVICES == 16, "the refusal below says 16");
    if (json_array_size(a) > CARVE_SLICE_MAX_DEVICES)
        return fail("%s", "`gpus' names more GPUs than the 16 a slice may be on");
    json_array_foreach(a, i, v) {
        struct carve_gpu_ref *r = &refs[i];
        memset(r, 0, sizeof(*r));
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= INT_MAX)
            r->index = (int)json_integer_value(v);
        else if (json_is_integer(v)) {
            char what[32];
            snprintf(what, sizeof(what), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            return fail("`gpus': this node has no GPU %s (carve ps lists its GPUs)", what);
        }
        else if (json_is_string(v) && carve_uuid_parse(json_string_value(v), r->uuid) == 0)
            r->index = -1;
        else if (json_is_string(v))
            return fail("`gpus': this node has no GPU %.60s (carve ps lists its GPUs)",
                        json_string_value(v));
        else
            return fail("%s", "`gpus' holds something that is neither a GPU index nor a UUID");
    }
    char why[256];
    if (registry_gpus_named(d, refs, (int)json_array_size(a), c, why, sizeof(why)) < 0)
        return fail("`gpus': %s", why);
    return NULL;
}

static json_t *op_create(struct carved *d, json_t *req, uid_t uid, gid_t gid, pid_t pid)
{
    bool run = json_is_true(json_object_get(req, "run")), admin = registry_is_admin(d, uid, gid);
    if (!admin && !d->conf.allow_user_slices)
        return fail("only carved's admins may make slices here (allow_user_slices = no); %s",
                    run ? "ask for a slice and use carve run --slice NAME" : "ask an admin");
    if (!admin && registry_owned(d, uid) >= CARVED_MAX_USER_SLICES) {
        char most[16];
        snprintf(most, sizeof(most), "%d", CARVED_MAX_USER_SLICES);
        return fail("you hold %s slices, the most a user may (carved's admins may make more); "
                    "delete some first (carve slice list)", most);
    }
    struct carved_slice_conf c = {.idle_policy = -1};
    json_t *e;
    if ((e = copy_field(req, "name", c.name, sizeof(c.name))) ||
        (e = copy_field(req, "memory", c.memory, sizeof(c.memory))) ||
        (e = copy_field(req, "compute", c.compute, sizeof(c.compute))) ||
        (e = copy_field(req, "priority", c.priority, sizeof(c.priority))) ||
        (e = read_ids(json_object_get(req, "users"), false, c.users, &c.nusers)) ||
        (e = read_ids(json_object_get(req, "groups"), true, c.groups, &c.ngroups)) ||
        (e = read_gpus(d, json_object_get(req, "gpus"), &c)))
        return e;
    /* a name the config gives a slice is the config's, also while that slice is deleted (to
       apply the section's changes at the next start, where carved makes it again) */
    for (int i = 0; i < d->conf.nslices; i++)
        if (strcmp(d->conf.slices[i].name, c.name) == 0) {
            char why[320];
            snprintf(why, sizeof(why), "`%s' is the config's [slice %s] (line %d): carved makes "
                     "it at its start; choose another name", c.name, c.name,
                     d->conf.slices[i].line);
            return fail("%s", why);
        }
    if (!admin && registry_on_boards(&c) &&
        registry_owned_on_boards(d, uid) >= CARVED_MAX_USER_BOARD_SLICES) {
        char most[16];
        snprintf(most, sizeof(most), "%d", CARVED_MAX_USER_BOARD_SLICES);
        return fail("you hold %s slices with compute settings, the most a user may (each takes "
                    "a place on its GPUs' boards, 64 there for all users); delete some first "
                    "(carve slice list), or make this one without --compute and --priority",
                    most);
    }
    /* slurm-JOBID is the Slurm plugin's (it asks as root): a user who made the name of a
       coming job's slice first failed that job's step, the plugin deleting and making it
       again over two connections (a review's finding, 2026-11-29) */
    if (strncmp(c.name, "slurm-", 6) == 0 && !admin)
        return fail("%s", "names slurm-* are the Slurm plugin's, for the slices of jobs: "
                          "choose another name");
    char err[768];
    int r = registry_create(d, &c, run ? ORIGIN_RUN : ORIGIN_API, uid, run ? pid : 0, err,
                            sizeof(err));
    if (r < 0) {
        json_t *no = fail("%s", err);
        if (r == -EDQUOT) /* told by a code, not by its words */
            json_object_set_new(no, "code", json_string(CARVE_REFUSAL_GUARANTEES));
        return no;
    }
    struct dslice *s = registry_find(d, c.name);
    return json_pack("{s:b,s:s,s:s,s:b}", "ok", 1, "slice", s->name, "shm", s->shm, "simulated",
                     d->simulate);
}

static struct dslice *named(struct carved *d, json_t *req, json_t **e)
{
    json_t *v = json_object_get(req, "name");
    *e = NULL;
    if (!json_is_string(v)) {
        *e = fail("%s", "the request needs a slice `name'");
        return NULL;
    }
    struct dslice *s = registry_find(d, json_string_value(v));
    if (!s)
        *e = fail("no slice named `%s' (carve slice list shows them)", json_string_value(v));
    return s;
}

/* A join's answer; with "table": true also *pass_fd, the slice's table for the tenant. */
static json_t *joined(struct carved *d, json_t *req, struct dslice *s, int *pass_fd)
{
    if (json_is_true(json_object_get(req, "table"))) {
        int fd = carve_slice_table_fd(s->shm);
        if (fd < 0) {
            /* said here and in the log, which the message sends the operator to */
            carved_log("slice %s: cannot open its table %s to hand it to a tenant: %s", s->name,
                       s->shm, strerror(-fd));
            return fail("cannot open the table of slice `%s' to hand it over; carved's log "
                        "says why", s->name);
        }
        *pass_fd = fd;
    }
    return json_pack("{s:b,s:s,s:b}", "ok", 1, "shm", s->shm, "simulated", d->simulate);
}

json_t *api_handle(struct carved *d, const char *line, uid_t uid, gid_t gid, pid_t pid,
                   int *pass_fd)
{
    *pass_fd = -1;
    json_error_t je;
    json_t *req = json_loads(line, JSON_REJECT_DUPLICATES, &je), *e = NULL, *reply = NULL;
    if (!json_is_object(req)) {
        json_decref(req);
        return fail("the request is not a JSON object: %s",
                    req ? "it is another JSON value (send {\"op\": ...})" : je.text);
    }
    const char *op = json_string_value(json_object_get(req, "op"));
    struct dslice *s;
    char err[768];
    if (!op) {
        reply = fail("%s", "the request has no `op' (create, join, delete, list, ps)");
    } else if (strcmp(op, "create") == 0) {
        reply = op_create(d, req, uid, gid, pid);
    } else if (strcmp(op, "join") == 0 || strcmp(op, "delete") == 0) {
        bool join = op[0] == 'j';
        if (!(s = named(d, req, &e)))
            reply = e;
        else if (join && !registry_may_join(d, s, uid, gid))
            reply = fail("slice `%s' is not open to you (its users and groups are set by "
                         "its owner or carved's config)", s->name);
        else if (!join && !registry_may_manage(d, s, uid, gid))
            reply = fail("slice `%s' belongs to another user or to carved's config", s->name);
        else if (join)
            reply = joined(d, req, s, pass_fd);
        else if (registry_delete(d, s, err, sizeof(err)) < 0)
            reply = fail("%s", err);
        else
            reply = json_pack("{s:b}", "ok", 1);
    } else if (strcmp(op, "list") == 0 || strcmp(op, "ps") == 0) {
        if (d->stale) /* a listing right after a create or delete shows it */
            monitor_poll(d, monitor_now());
        reply = d->snapshot ? json_pack("{s:b,s:O}", "ok", 1, "snapshot", d->snapshot)
                            : fail("%s", "carved has not read the GPUs yet; try again in a second");
    } else {
        reply = fail("unknown op `%s' (create, join, delete, list, ps)", op);
    }
    json_decref(req);
    return reply ? reply : fail("%s", "out of memory");
}
