/* registry.c - the slices carved owns: making them (the same checks as carve run, through
 * gpus.c), who may join or manage them, and keeping them in state_dir/slices.json so that a
 * restarted carved adopts the slices its tenants are still running in. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "groups.h"
#include "size.h"
#include "uuid.h"

static const char *origin_names[] = {"config", "api", "run"};

const char *registry_origin_name(int origin)
{
    return origin >= 0 && origin <= ORIGIN_RUN ? origin_names[origin] : "api";
}

static int origin_of(const char *s)
{
    for (int i = 0; i <= ORIGIN_RUN; i++)
        if (s && strcmp(s, origin_names[i]) == 0)
            return i;
    return ORIGIN_API;
}

struct dslice *registry_find(struct carved *d, const char *name)
{
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        if (d->slices[i].used && strcmp(d->slices[i].name, name) == 0)
            return &d->slices[i];
    return NULL;
}

bool registry_is_admin(const struct carved *d, uid_t uid, gid_t gid)
{
    if (uid == 0 || uid == geteuid())
        return true;
    for (int i = 0; i < d->conf.nadmins; i++)
        if (d->conf.admins[i] == uid)
            return true;
    return carved_in_groups(uid, gid, d->conf.admin_groups, d->conf.nadmin_groups);
}

int registry_owned_on_boards(const struct carved *d, uid_t uid)
{
    int n = 0;
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        const struct dslice *s = &d->slices[i];
        bool on_board = false;
        for (int k = 0; k < s->spec.ndev && !on_board; k++)
            on_board = s->boards[k] != NULL;
        n += s->used && s->origin != ORIGIN_CONFIG && s->owner == uid && on_board;
    }
    return n;
}

int registry_owned(const struct carved *d, uid_t uid)
{
    int n = 0;
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        n += d->slices[i].used && d->slices[i].origin != ORIGIN_CONFIG &&
             d->slices[i].owner == uid;
    return n;
}

bool registry_may_manage(const struct carved *d, const struct dslice *s, uid_t uid, gid_t gid)
{
    if (registry_is_admin(d, uid, gid))
        return true;
    return s->origin != ORIGIN_CONFIG && s->owner == uid;
}

bool registry_may_join(const struct carved *d, const struct dslice *s, uid_t uid, gid_t gid)
{
    if (registry_may_manage(d, s, uid, gid))
        return true;
    for (int i = 0; i < s->nusers; i++)
        if (s->users[i] == uid)
            return true;
    return carved_in_groups(uid, gid, s->groups, s->ngroups);
}

static void leave_boards(struct dslice *s)
{
    for (int i = 0; i < s->spec.ndev; i++)
        if (s->boards[i]) {
            carve_board_leave(s->boards[i], s->spec.dev[i].board_entry);
            s->boards[i] = NULL;
        }
}

static int join_boards(struct dslice *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->spec.ndev; i++) {
        const struct carve_compute *c = &s->spec.dev[i].compute;
        if (s->gone[i] || (c->share_bp == 0 && c->priority == CARVE_PRIO_NORMAL))
            continue;
        char why[512];
        int r = carve_board_join(s->spec.dev[i].uuid, CARVE_BOARD_MODE_DAEMON, c, s->name,
                                 getpid(), &s->boards[i], &s->spec.dev[i].board_entry, why,
                                 sizeof(why));
        if (r < 0) { /* the board's own code: -EDQUOT is a guarantee past 100%, and only it */
            snprintf(err, errlen, "GPU %d: %s", s->spec.dev[i].index, why);
            leave_boards(s);
            return r;
        }
    }
    return 0;
}

static int check_name(const char *name, char *err, size_t errlen)
{
    if (carve_slice_name_ok(name))
        return 0;
    snprintf(err, errlen, "slice name `%.80s' is not 1-%d of A-Z a-z 0-9 . _ - (nor . or ..)",
             name, CARVE_SLICE_NAME_MAX - 1);
    return -EINVAL;
}

static struct dslice *free_entry(struct carved *d)
{
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        if (!d->slices[i].used)
            return &d->slices[i];
    return NULL;
}

/* A --compute value as carve writes it (`30' -> `30%', `12.50%+' -> `12.5%+'), so that
 * listings and the config's comparison with a kept slice read the same whatever was typed;
 * a value that does not parse is copied as it is. */
static void compute_words(const char *in, char *out, size_t len)
{
    struct carve_compute c;
    if (in[0] && carve_parse_compute(in, &c, NULL, 0) == 0)
        carve_format_compute(&c, out, len);
    else
        snprintf(out, len, "%s", in);
}

/* Fills s's fields from the request, its compute settings parsed and checked into out. */
static int prepare_fields(struct dslice *s, const struct carved_slice_conf *req,
                          struct carve_compute *out, char *err, size_t errlen)
{
    struct carve_compute c = {0, 0, 0};
    char why[256];
    if (req->compute[0] && carve_parse_compute(req->compute, &c, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--compute: %s", why);
        return -EINVAL;
    }
    if (req->priority[0] && carve_parse_priority(req->priority, &c.priority, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--priority: %s", why);
        return -EINVAL;
    }
    /* same sizes as the request's fields, which are NUL-terminated */
    memcpy(s->name, req->name, sizeof(s->name));
    memcpy(s->memory, req->memory, sizeof(s->memory));
    compute_words(req->compute, s->compute, sizeof(s->compute));
    memcpy(s->priority, req->priority, sizeof(s->priority));
    s->name[sizeof(s->name) - 1] = s->memory[sizeof(s->memory) - 1] = '\0';
    s->compute[sizeof(s->compute) - 1] = s->priority[sizeof(s->priority) - 1] = '\0';
    memcpy(s->users, req->users, sizeof(s->users));
    s->nusers = req->nusers;
    memcpy(s->groups, req->groups, sizeof(s->groups));
    s->ngroups = req->ngroups;
    s->idle_policy = req->idle_policy;
    *out = c;
    return 0;
}

/* The node's GPUs a request puts its slice on, in the node's order, into out: every GPU, or
 * those its "gpus" names (by UUID; one the node no longer has is left out). Their count. */
static int chosen_gpus(const struct carved *d, const struct carved_slice_conf *req,
                       struct carve_gpu_info *out)
{
    int n = 0;
    for (int g = 0; g < d->ngpu; g++) {
        bool named = req->ngpus == 0;
        for (int k = 0; k < req->ngpus && !named; k++)
            named = carve_uuid_is(d->gpus[g].uuid, req->gpus[k]);
        if (named)
            out[n++] = d->gpus[g];
    }
    return n;
}

/* A memory text naming GPUs by index (IDX=SIZE) names only the slice's chosen GPUs: 0, or
 * -EINVAL with why (it would be refused as a GPU "this machine" lacks). */
static int memory_on(const char *memory, const struct carve_gpu_info *gpus, int n, char *err,
                     size_t errlen)
{
    struct carve_memory_spec m;
    if (!memory[0] || carve_parse_memory_spec(memory, &m, NULL, 0) < 0)
        return 0; /* carve_spec_build says what is wrong with it */
    for (int i = 0; i < CARVE_SPEC_MAX_DEVICES; i++) {
        bool on = !m.per_index[i];
        for (int k = 0; k < n && !on; k++)
            on = gpus[k].index == (unsigned)i;
        if (!on) {
            snprintf(err, errlen, "--memory %s names GPU %d, which is not one of the slice's "
                     "`gpus'", memory, i);
            return -EINVAL;
        }
    }
    return 0;
}

/* Fills s from the request: parsed and checked, the slice spec built for the node's GPUs as
 * they are now (those the request names, or all); no object made. Its memory and compute
 * apply on those GPUs only: a guarantee joins their boards, and no other GPU's. */
static int prepare(struct carved *d, struct dslice *s, const struct carved_slice_conf *req,
                   char *err, size_t errlen)
{
    struct carve_compute c;
    struct carve_gpu_info gpus[CARVE_SLICE_MAX_DEVICES];
    int r = prepare_fields(s, req, &c, err, errlen);
    if (r < 0)
        return r;
    int n = chosen_gpus(d, req, gpus);
    if (req->ngpus && n < req->ngpus) {
        snprintf(err, errlen, "the slice's `gpus' name %d GPU%s, of which this node has %d",
                 req->ngpus, req->ngpus == 1 ? "" : "s", n);
        return -ENODEV;
    }
    if (req->ngpus && (r = memory_on(req->memory, gpus, n, err, errlen)) < 0)
        return r;
    s->chosen_gpus = req->ngpus > 0;
    return carve_spec_build(&s->spec, s->name, req->memory[0] ? req->memory : NULL, &c, gpus, n,
                            err, errlen);
}

/* The table is carved's alone: a tenant gets an fd of it with carved's answer to its join
 * (api.c), so a user who may not join cannot write it, or truncate it. Only carved can write
 * the terms (slice.h). */
#define TABLE_MODE 0600

/* -EDQUOT is the board's refusal of a guarantee past 100%, which the API names with a code:
 * a quota met writing a slice's table or the state is told as a full file system. */
static int quota_as_full(int r)
{
    return r == -EDQUOT ? -ENOSPC : r;
}

/* Makes the objects of s, whose fields and spec are filled, and takes it into the registry:
 * 0, or -errno with a message (s is then left unused). */
static int make_objects(struct carved *d, struct dslice *s, int origin, uid_t owner,
                        pid_t creator, uint64_t creator_start, char *err, size_t errlen)
{
    int r = join_boards(s, err, errlen);
    if (r < 0)
        return r;
    unsigned rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        rnd = (unsigned)time(NULL) ^ (unsigned)getpid();
    char shm[sizeof(s->shm)];
    snprintf(shm, sizeof(shm), "/" CARVE_SLICE_DAEMON_PREFIX "%s.%08x", s->name, rnd);
    memcpy(s->shm, shm, sizeof(shm));
    s->spec.table_mode = TABLE_MODE;
    if ((r = carve_slice_create(s->shm, &s->spec, &s->handle, err, errlen)) < 0) {
        leave_boards(s);
        return quota_as_full(r);
    }
    s->origin = origin;
    s->owner = owner;
    s->creator = creator;
    /* made again (slices.json, a broken table): the start saved, whoever has the pid now */
    s->creator_start = creator_start || creator <= 0 ? creator_start
                                                     : carve_proc_start_time(creator);
    s->created = (long long)time(NULL);
    s->used = true;
    d->stale = true;
    carved_log("slice %s made (%s, owner uid %u, memory %s, compute %s)", s->name,
               registry_origin_name(origin), (unsigned)owner, s->memory[0] ? s->memory : "-",
               s->compute[0] ? s->compute : "-");
    return quota_as_full(registry_save(d, err, errlen));
}

/* Whether the config's slice c is on the GPU uuid (no gpus: on every GPU). */
static bool config_on_gpu(const struct carved_slice_conf *c, const uint8_t uuid[16])
{
    bool on = c->ngpus == 0;
    for (int k = 0; k < c->ngpus && !on; k++)
        on = memcmp(uuid, c->gpus[k], 16) == 0;
    return on;
}

/* Whether the config's slice c, which waits for room, guarantees a share on the GPU uuid. */
static bool waits_for_guarantee_on(const struct carved_slice_conf *c, const uint8_t uuid[16])
{
    struct carve_compute cc;
    if (!c->compute[0] || carve_parse_compute(c->compute, &cc, NULL, 0) < 0 ||
        cc.mode != CARVE_COMPUTE_GUARANTEE)
        return false;
    return config_on_gpu(c, uuid);
}

/* A slice that is not the config's guarantees no share on a GPU where a config slice waits
 * for room for its guarantee (refused as a guarantee past 100%): the room that slices going
 * free leave is the config's first (-EDQUOT, as such a refusal). */
static int reserved_for_config(const struct carved *d, const struct dslice *s, char *err,
                               size_t errlen)
{
    for (int i = 0; i < s->spec.ndev; i++) {
        if (s->spec.dev[i].compute.mode != CARVE_COMPUTE_GUARANTEE ||
            !s->spec.dev[i].compute.share_bp)
            continue;
        for (int k = 0; k < d->conf.nslices; k++) {
            const struct carved_slice_conf *c = &d->conf.slices[k];
            if (!d->conf_state[k].waiting || d->conf_state[k].code != -EDQUOT ||
                !waits_for_guarantee_on(c, s->spec.dev[i].uuid))
                continue;
            snprintf(err, errlen, "GPU %d: the config's [slice %s] (line %d) waits for room for "
                     "its guarantee of %s there, and carved makes no other guarantee on that "
                     "GPU until it is made (an admin can delete slices to make room: carve "
                     "slice list)", s->spec.dev[i].index, c->name, c->line, c->compute);
            return -EDQUOT;
        }
    }
    return 0;
}

bool registry_on_boards(const struct carved_slice_conf *c)
{
    struct carve_compute cc = {0};
    uint8_t prio = CARVE_PRIO_NORMAL;
    if (c->compute[0] && carve_parse_compute(c->compute, &cc, NULL, 0) < 0)
        cc.share_bp = 0;
    if (c->priority[0] && carve_parse_priority(c->priority, &prio, NULL, 0) < 0)
        prio = CARVE_PRIO_NORMAL;
    return cc.share_bp || prio != CARVE_PRIO_NORMAL;
}

/* Whether the config's slice c has compute settings on the GPU uuid: a place on its board. */
static bool config_on_board(const struct carved_slice_conf *c, const uint8_t uuid[16])
{
    return registry_on_boards(c) && config_on_gpu(c, uuid);
}

/* A slice that is not the config's takes no place that the config's slices waiting for room
 * will need: one among carved's slices each, and one on the board of each GPU they have
 * compute settings on; else a slice going leaves its place to whoever asks first, and a
 * section waiting for the 1024 slices or a full board could wait for good (-ENOSPC). */
static int reserved_places(const struct carved *d, const struct dslice *s, char *err,
                           size_t errlen)
{
    int waiting = 0, used = 0;
    for (int k = 0; k < d->conf.nslices; k++)
        waiting += d->conf_state[k].waiting;
    if (!waiting)
        return 0;
    for (int j = 0; j < CARVED_MAX_SLICES; j++)
        used += d->slices[j].used;
    if (used + 1 + waiting > CARVED_MAX_SLICES) {
        snprintf(err, errlen, "carved holds %d slices of its %d, and keeps %d place%s for the "
                 "config's slices that wait for room (carve slice list)", used,
                 CARVED_MAX_SLICES, waiting, waiting == 1 ? "" : "s");
        return -ENOSPC;
    }
    for (int i = 0; i < s->spec.ndev; i++) {
        const struct carve_compute *c = &s->spec.dev[i].compute;
        if (c->share_bp == 0 && c->priority == CARVE_PRIO_NORMAL)
            continue;
        const uint8_t *uuid = s->spec.dev[i].uuid;
        int kept = 0;
        for (int k = 0; k < d->conf.nslices; k++)
            kept += d->conf_state[k].waiting && config_on_board(&d->conf.slices[k], uuid);
        if (!kept)
            continue;
        /* the board's own count: slices of `carve run` or the Slurm plugin made without
           carved hold places there too */
        int on_board = carve_board_count(uuid);
        if (on_board >= 0 && on_board + 1 + kept > CARVE_BOARD_ENTRIES) {
            snprintf(err, errlen, "GPU %d: its board holds %d slices with compute settings of "
                     "%d, and carved keeps %d place%s there for the config's slices that "
                     "wait for room (carve slice list)", s->spec.dev[i].index, on_board,
                     CARVE_BOARD_ENTRIES, kept, kept == 1 ? "" : "s");
            return -ENOSPC;
        }
    }
    return 0;
}

int registry_create(struct carved *d, const struct carved_slice_conf *req, int origin,
                    uid_t owner, pid_t creator, char *err, size_t errlen)
{
    int r = check_name(req->name, err, errlen);
    if (r < 0)
        return r;
    if (registry_find(d, req->name)) {
        snprintf(err, errlen, "a slice named `%s' exists already (carve slice list)", req->name);
        return -EEXIST;
    }
    struct dslice *s = free_entry(d);
    if (!s) {
        snprintf(err, errlen, "carved holds %d slices, its most; delete some first",
                 CARVED_MAX_SLICES);
        return -ENOSPC;
    }
    memset(s, 0, sizeof(*s));
    if ((r = prepare(d, s, req, err, errlen)) < 0)
        return r;
    if (origin != ORIGIN_CONFIG && ((r = reserved_for_config(d, s, err, errlen)) < 0 ||
                                    (r = reserved_places(d, s, err, errlen)) < 0))
        return r;
    return make_objects(d, s, origin, owner, creator, 0, err, errlen);
}

void registry_make_waiting(struct carved *d)
{
    for (int i = 0; i < d->conf.nslices; i++) {
        if (!d->conf_state[i].waiting)
            continue;
        const struct carved_slice_conf *c = &d->conf.slices[i];
        char why[sizeof(d->conf_state[i].why)] = "";
        int r = registry_create(d, c, ORIGIN_CONFIG, geteuid(), 0, why, sizeof(why));
        if (r == 0 || registry_find(d, c->name)) { /* made, though slices.json may not say so */
            d->conf_state[i].waiting = false;
            carved_log("slice %s: the config's [slice %s] (line %d) is made now%s%s", c->name,
                       c->name, c->line, r ? "; " : "", r ? why : "");
        } else if (r != d->conf_state[i].code || strcmp(why, d->conf_state[i].why) != 0) {
            carved_log("slice %s: the config's [slice %s] (line %d) still waits: %s", c->name,
                       c->name, c->line, why); /* said once a reason */
            d->conf_state[i].code = r;
            snprintf(d->conf_state[i].why, sizeof(d->conf_state[i].why), "%s", why);
        }
    }
}

/* s's objects and board places gone, its entry free. */
static void unmake(struct carved *d, struct dslice *s)
{
    carve_slice_close(s->handle);
    carve_slice_unlink(s->shm);
    leave_boards(s);
    memset(s, 0, sizeof(*s));
    d->stale = true;
}

int registry_delete(struct carved *d, struct dslice *s, char *err, size_t errlen)
{
    carved_log("slice %s removed", s->name);
    unmake(d, s);
    return registry_save(d, err, errlen);
}

static json_t *ids_json(const unsigned *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* A slice's GPUs as its objects name them, for slices.json: [{"uuid": "GPU-...", "index": the
 * GPU's index when the objects were made, "cap": bytes (0: none)}]. Its memory text names
 * GPUs by index, which a renumbering, a replaced or a removed GPU changes while carved is
 * down; a slice made again after a reboot (its objects gone) takes its GPUs from these. */
static json_t *gpus_json(const struct dslice *s)
{
    json_t *a = json_array();
    for (int k = 0; k < s->spec.ndev; k++) {
        char uuid[64];
        carve_uuid_format(s->spec.dev[k].uuid, uuid, sizeof(uuid));
        json_array_append_new(a, json_pack("{s:s,s:i,s:I}", "uuid", uuid, "index",
                                           carve_slice_dev_index(s->handle, k), "cap",
                                           (json_int_t)s->spec.dev[k].cap));
    }
    return a;
}

int registry_save(const struct carved *d, char *err, size_t errlen)
{
    json_t *list = json_array();
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        const struct dslice *s = &d->slices[i];
        if (!s->used)
            continue;
        json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:b,s:s,s:I,s:I,s:I,s:I,s:o,s:o,s:i,s:f}",
            "name", s->name, "shm", s->shm, "memory", s->memory, "compute", s->compute,
            "priority", s->priority, "gpus", gpus_json(s), "chosen_gpus", s->chosen_gpus,
            "origin", registry_origin_name(s->origin),
            "owner", (json_int_t)s->owner, "creator", (json_int_t)s->creator,
            "creator_start", (json_int_t)s->creator_start,
            "created", (json_int_t)s->created, "users", ids_json(s->users, s->nusers),
            "groups", ids_json(s->groups, s->ngroups), "idle_policy", s->idle_policy,
            "idle_gpu_hours", s->idle_gpu_hours));
    }
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    snprintf(path, sizeof(path), "%s/slices.json", d->conf.state_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    /* the node's counters too, so that Prometheus counters survive a restart */
    json_t *root = json_pack("{s:i,s:o,s:I,s:I,s:I}", "version", 1, "slices", list,
                             "escapes", (json_int_t)d->escapes_total, "escapes_killed",
                             (json_int_t)d->escapes_killed, "idle_reclaims",
                             (json_int_t)d->idle_reclaims);
    /* on the disk before it replaces the last: a power cut after the rename left an empty or
       partial file, which carved refuses to start with (a reviewer's finding, 2026-11-28) */
    int r = json_dump_file(root, tmp, JSON_INDENT(2)) == 0 ? 0 : -errno;
    if (!r) {
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        r = fd >= 0 && fdatasync(fd) == 0 ? 0 : -errno;
        if (fd >= 0)
            close(fd);
    }
    if (!r && rename(tmp, path) < 0)
        r = -errno;
    json_decref(root);
    if (r < 0)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
    return r;
}

static void ids_from(json_t *a, unsigned *out, int *n)
{
    size_t i;
    json_t *v;
    *n = 0;
    json_array_foreach(a, i, v)
        if (json_is_integer(v) && *n < CARVED_MAX_IDS)
            out[(*n)++] = (unsigned)json_integer_value(v);
}

/* A table made by a carved before 2026-11-27 is mode 0666, which any user could write or
 * truncate: carved's alone from its adoption on (its running tenants keep their mappings). */
static void restrict_table(const char *shm)
{
    int fd = carve_slice_table_fd(shm);
    if (fd >= 0 && fchmod(fd, TABLE_MODE) < 0)
        carved_log("slice objects %s: cannot make the table mode %o: %s", shm, TABLE_MODE,
                   strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* Whether carved made a saved slice's objects. After a reboot /dev/shm is empty, and anyone
 * may make objects under the saved name before carved starts, with a bigger cap in them. */
static bool objects_ours(const struct carve_slice *h, char *why, size_t len)
{
    uid_t terms_uid, table_uid = carve_slice_table_owner(h);
    mode_t terms_mode;
    carve_slice_terms_owner(h, &terms_uid, &terms_mode);
    if (terms_uid == geteuid() && table_uid == geteuid() && !(terms_mode & 022))
        return true;
    snprintf(why, len, "its table belongs to uid %u and its terms to uid %u (mode %03o), "
             "not to carved's uid %u", (unsigned)table_uid, (unsigned)terms_uid,
             (unsigned)terms_mode, (unsigned)geteuid());
    return false;
}

int registry_gpu_of_uuid(const struct carved *d, const uint8_t uuid[16])
{
    for (int g = 0; g < d->ngpu; g++)
        if (carve_uuid_is(d->gpus[g].uuid, uuid))
            return g;
    return -1;
}

int registry_gpus_named(const struct carved *d, const struct carve_gpu_ref *refs, int n,
                        struct carved_slice_conf *c, char *err, size_t errlen)
{
    c->ngpus = 0;
    for (int i = 0; i < n; i++) {
        char what[48];
        uint8_t u[16];
        carve_gpu_ref_text(&refs[i], what, sizeof(what));
        int g = carve_gpu_ref_find(&refs[i], d->gpus, d->ngpu);
        for (int k = 0; g < 0 && refs[i].index >= 0 && k < d->driver.nunread; k++)
            if (d->driver.unread_index[k] == (unsigned)refs[i].index) {
                char buf[32];
                snprintf(err, errlen, "GPU %s is not in carved's list: NVML answered `%s' for "
                         "it when the GPUs were listed; restart carved once it answers (carve ps)",
                         what, carve_nvml_error_text(d->driver.unread_error[k], buf,
                                                     sizeof(buf)));
                return -ENODEV;
            }
        if (g < 0 && refs[i].index < 0 && d->driver.nunread > 0) {
            snprintf(err, errlen, "carved lists no GPU %s: NVML did not answer for %d GPU%s "
                     "when the GPUs were listed (carve ps); restart carved once it answers",
                     what, d->driver.nunread, d->driver.nunread == 1 ? "" : "s");
            return -ENODEV;
        }
        if (g < 0) {
            snprintf(err, errlen, "this node has no GPU %s (carve ps lists its GPUs)", what);
            return -ENODEV;
        }
        if (carve_uuid_parse(d->gpus[g].uuid, u) < 0) {
            snprintf(err, errlen, "GPU %s has a UUID carve cannot read", what);
            return -EINVAL;
        }
        for (int k = 0; k < c->ngpus; k++)
            if (memcmp(c->gpus[k], u, 16) == 0) {
                char first[48];
                carve_gpu_ref_text(&refs[k], first, sizeof(first));
                if (strcmp(first, what) == 0)
                    snprintf(err, errlen, "names GPU %s twice", what);
                else
                    snprintf(err, errlen, "names GPU %s twice, as %s and as %s", first, first,
                             what);
                return -EINVAL;
            }
        memcpy(c->gpus[c->ngpus++], u, 16);
    }
    return 0;
}

/* Slice GPU k of s (its UUID filled) at the index the node gives its UUID now, or gone: it
 * then keeps made_as, the index it had when the slice was made, which objects made again
 * for the slice record (for the log when the GPU comes back). */
static void place_gpu(const struct carved *d, struct dslice *s, int k, int made_as)
{
    int g = registry_gpu_of_uuid(d, s->spec.dev[k].uuid);
    s->gone[k] = g < 0;
    s->spec.dev[k].index = g < 0 ? made_as : (int)d->gpus[g].index;
}

/* Slice GPU of s whose UUID is uuid, or -1. */
static int spec_find_uuid(const struct dslice *s, const uint8_t uuid[16])
{
    for (int k = 0; k < s->spec.ndev; k++)
        if (memcmp(s->spec.dev[k].uuid, uuid, 16) == 0)
            return k;
    return -1;
}

/* Says where slice s's GPUs are now (made_as[k]: slice GPU k's index when the slice was
 * made): each one gone or moved, and each GPU of the node the slice was not made for. */
static void log_gpus(const struct carved *d, const struct dslice *s, const int *made_as)
{
    char uuid[64];
    for (int k = 0; k < s->spec.ndev; k++) {
        carve_uuid_format(s->spec.dev[k].uuid, uuid, sizeof(uuid));
        if (s->gone[k])
            carved_log("slice %s: its GPU %s (GPU %d when the slice was made) is not on this "
                       "node now: the slice keeps it, listed as gone, and caps and counts "
                       "nothing there; `carve slice delete %s' (and a restart of carved, for a "
                       "slice of the config) makes it for the GPUs here", s->name, uuid,
                       made_as[k], s->name);
        else if (s->spec.dev[k].index != made_as[k])
            carved_log("slice %s: its GPU %s was GPU %d when the slice was made and is GPU %d "
                       "now: its cap and share there follow the GPU", s->name, uuid, made_as[k],
                       s->spec.dev[k].index);
    }
    for (int g = 0; g < d->ngpu && !s->chosen_gpus; g++) {
        uint8_t u[16];
        if (carve_uuid_parse(d->gpus[g].uuid, u) < 0 || spec_find_uuid(s, u) >= 0)
            continue;
        carved_log("slice %s: GPU %u (%s) came after the slice was made: the slice has no cap "
                   "nor share there; `carve slice delete %s' (and a restart of carved, for a "
                   "slice of the config) makes it for the GPUs here", s->name, d->gpus[g].index,
                   d->gpus[g].uuid, s->name);
    }
}

/* carved's books of an adopted slice's GPUs come from its terms, which its running tenants
 * enforce by GPU UUID, each GPU at the index the node gives its UUID now. They were built
 * from the saved request against the GPUs by position: after a GPU was removed or the GPUs
 * renumbered, GPU 0's cap and usage were shown (and checked against NVML, and under
 * escape_policy = kill acted on) as another GPU's, and a request naming an index the node
 * no longer had dropped the slice (its tenants then escapes, its objects left in /dev/shm).
 * A GPU of the terms that the node no longer has stays in them (the terms cannot change
 * under running tenants, and the GPU may come back), marked gone; a GPU the terms lack is
 * not the slice's. The log says each. */
static void follow_terms(struct carved *d, struct dslice *s)
{
    int made_as[CARVE_SLICE_MAX_DEVICES];
    s->spec.ndev = carve_slice_ndev(s->handle);
    for (int k = 0; k < s->spec.ndev; k++) {
        struct carve_slice_dev_spec *dv = &s->spec.dev[k];
        made_as[k] = carve_slice_dev_index(s->handle, k);
        carve_slice_dev_uuid(s->handle, k, dv->uuid);
        dv->cap = carve_slice_cap(s->handle, k);
        dv->compute = carve_slice_compute(s->handle, k);
        dv->board_entry = carve_slice_board_entry(s->handle, k); /* its tenants know it */
        place_gpu(d, s, k, made_as[k]);
    }
    log_gpus(d, s, made_as);
}

/* One GPU of a saved slice, as slices.json records it (gpus_json). */
struct saved_gpu {
    uint8_t uuid[16];
    int index; /* when the slice was made */
    uint64_t cap;
};

/* A saved slice's "gpus" into out: their count, or -1 with why (no such list: a file of an
 * older carved; or a malformed one). */
static int saved_gpus(json_t *a, struct saved_gpu *out, char *why, size_t len)
{
    if (!a) {
        snprintf(why, len, "slices.json records no GPU UUIDs for it (written by an older "
                 "carved)");
        return -1;
    }
    if (!json_is_array(a) || json_array_size(a) > CARVE_SLICE_MAX_DEVICES) {
        snprintf(why, len, "its \"gpus\" in slices.json is not a list of at most %d GPUs",
                 CARVE_SLICE_MAX_DEVICES);
        return -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        const char *uuid = "";
        int index = 0;
        json_int_t cap = 0;
        if (json_unpack(v, "{s:s,s:i,s:I}", "uuid", &uuid, "index", &index, "cap", &cap) < 0 ||
            carve_uuid_parse(uuid, out[i].uuid) < 0 || cap < 0) {
            snprintf(why, len, "its GPU %zu in slices.json is not {\"uuid\": \"GPU-...\", "
                     "\"index\": N, \"cap\": BYTES}", i);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (memcmp(out[j].uuid, out[i].uuid, 16) == 0) {
                snprintf(why, len, "slices.json names its GPU %s twice", uuid);
                return -1;
            }
        out[i].index = index;
        out[i].cap = (uint64_t)cap;
    }
    return (int)json_array_size(a);
}

/* Makes a saved slice whose objects are gone (a reboot empties /dev/shm) again on the GPUs it
 * was made for, by UUID, with the rules of adoption: each GPU at the index the node gives it
 * now, one the node no longer has kept and listed as gone, a new one not the slice's. It was
 * made from its memory text, which names GPUs by index: after a renumbering the cap went on
 * another GPU, and a removed GPU's index dropped the slice. 0, or -errno with a message. */
static int remake_on_gpus(struct carved *d, const struct carved_slice_conf *req,
                          const struct saved_gpu *sg, int n, bool chosen, int origin,
                          uid_t owner, pid_t creator, uint64_t creator_start, char *err,
                          size_t errlen)
{
    struct dslice *s = free_entry(d);
    if (!s) {
        snprintf(err, errlen, "carved holds %d slices, its most", CARVED_MAX_SLICES);
        return -ENOSPC;
    }
    memset(s, 0, sizeof(*s));
    struct carve_compute c;
    int r = prepare_fields(s, req, &c, err, errlen);
    if (r < 0)
        return r;
    int made_as[CARVE_SLICE_MAX_DEVICES];
    snprintf(s->spec.name, sizeof(s->spec.name), "%s", req->name);
    s->chosen_gpus = chosen;
    s->spec.ndev = n;
    for (int k = 0; k < n; k++) {
        struct carve_slice_dev_spec *dv = &s->spec.dev[k];
        memcpy(dv->uuid, sg[k].uuid, 16);
        dv->cap = sg[k].cap;
        dv->compute = c;
        dv->board_entry = -1;
        made_as[k] = sg[k].index;
        place_gpu(d, s, k, made_as[k]);
    }
    log_gpus(d, s, made_as);
    return make_objects(d, s, origin, owner, creator, creator_start, err, errlen);
}

/* Makes a saved slice whose objects are gone again: on its recorded GPUs by UUID, or, when
 * slices.json records none (an older carved's file), from its memory text against the GPUs
 * as the node numbers them now, as carved did before. */
static void remake_saved(struct carved *d, const struct carved_slice_conf *req, json_t *gpus,
                         bool chosen, int origin, uid_t owner, pid_t creator,
                         uint64_t creator_start)
{
    struct saved_gpu sg[CARVE_SLICE_MAX_DEVICES];
    char err[512], why[256];
    int r, n = saved_gpus(gpus, sg, why, sizeof(why));
    if (n >= 0) {
        r = remake_on_gpus(d, req, sg, n, chosen, origin, owner, creator, creator_start, err,
                           sizeof(err));
    } else if (chosen) { /* made on the node's every GPU, it would hold room where it asked none */
        r = -EINVAL;
        snprintf(err, sizeof(err), "%s, and it was made on GPUs its request chose, which only "
                 "they can say: make it again (carve slice create --gpus)", why);
    } else {
        carved_log("slice %s: %s: it is made again by GPU index, its memory `%s' read against "
                   "the GPUs as the node numbers them now", req->name, why,
                   req->memory[0] ? req->memory : "(none)");
        r = registry_create(d, req, origin, owner, creator, err, sizeof(err));
        struct dslice *made = r == 0 && creator_start ? registry_find(d, req->name) : NULL;
        if (made) /* the saved start, not that of whoever has the pid now (saved next) */
            made->creator_start = creator_start;
    }
    if (r < 0)
        carved_log("state: cannot make slice %s again: %s", req->name, err);
}

/* The slice is made anew on the GPUs its objects named, by UUID, as a restart makes it
 * again: from its memory text by index it went on other GPUs when the node's had changed
 * since the slice was made (its objects adopted by a restart across the change). */
int registry_remake(struct carved *d, struct dslice *s, char *err, size_t errlen)
{
    struct carved_slice_conf req = {.idle_policy = s->idle_policy};
    snprintf(req.name, sizeof(req.name), "%s", s->name);
    snprintf(req.memory, sizeof(req.memory), "%s", s->memory);
    snprintf(req.compute, sizeof(req.compute), "%s", s->compute);
    snprintf(req.priority, sizeof(req.priority), "%s", s->priority);
    memcpy(req.users, s->users, sizeof(req.users));
    req.nusers = s->nusers;
    memcpy(req.groups, s->groups, sizeof(req.groups));
    req.ngroups = s->ngroups;
    struct saved_gpu sg[CARVE_SLICE_MAX_DEVICES];
    int n = s->spec.ndev;
    for (int k = 0; k < n; k++) { /* carved's books: its table may be gone under it */
        memcpy(sg[k].uuid, s->spec.dev[k].uuid, 16);
        sg[k].index = s->spec.dev[k].index;
        sg[k].cap = s->spec.dev[k].cap;
    }
    int origin = s->origin;
    uid_t owner = s->owner;
    pid_t creator = s->creator;
    uint64_t creator_start = s->creator_start;
    bool chosen = s->chosen_gpus;
    registry_delete(d, s, err, errlen);
    return remake_on_gpus(d, &req, sg, n, chosen, origin, owner, creator, creator_start, err,
                          errlen);
}

/* An adopted slice's saved compute or priority text that does not parse (slices.json edited
 * by hand) is replaced with what the slice's objects hold: its running tenants keep to that
 * whatever the text says, and carved takes its books from the objects. Such a slice was not
 * adopted, nor could it be made again: its tenants became escapes and its objects stayed in
 * /dev/shm for good. */
static void settings_from_terms(const struct carve_slice *h, struct carved_slice_conf *req)
{
    struct carve_compute c, t = {0, 0, 0};
    if (carve_slice_ndev(h) > 0) /* carved gives each GPU of a slice the same settings */
        t = carve_slice_compute(h, 0);
    char why[256], now[CARVED_SPEC_MAX];
    if (req->compute[0] && carve_parse_compute(req->compute, &c, why, sizeof(why)) < 0) {
        now[0] = '\0';
        if (t.share_bp)
            carve_format_compute(&t, now, sizeof(now));
        carved_log("slice %s: its saved compute `%s' does not parse (%s): adopted with the "
                   "compute its objects hold, %s, which its tenants keep to", req->name,
                   req->compute, why, now[0] ? now : "none");
        snprintf(req->compute, sizeof(req->compute), "%s", now);
    }
    uint8_t p;
    if (req->priority[0] && carve_parse_priority(req->priority, &p, why, sizeof(why)) < 0) {
        const char *held = t.priority == CARVE_PRIO_NORMAL ? "" : carve_priority_name(t.priority);
        carved_log("slice %s: its saved priority `%s' does not parse (%s): adopted with the "
                   "priority its objects hold, %s, which its tenants keep to", req->name,
                   req->priority, why, carve_priority_name(t.priority));
        snprintf(req->priority, sizeof(req->priority), "%s", held);
    }
}

/* Takes one saved slice back: its objects still exist (tenants may be running in them), or
 * they are made again from the saved request. */
static void adopt(struct carved *d, json_t *o)
{
    struct carved_slice_conf req = {.idle_policy = -1};
    const char *name = "", *shm = "", *memory = "", *compute = "", *priority = "", *origin = "";
    json_int_t owner = 0, creator = 0, created = 0, creator_start = 0;
    int idle_policy = -1, chosen = 0;
    double idle_gpu_hours = 0;
    json_t *users = NULL, *groups = NULL;
    if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:o,s?i,s?F,s?b,s?I}", "name",
                    &name, "shm", &shm, "memory", &memory, "compute", &compute, "priority",
                    &priority, "origin", &origin, "owner", &owner, "creator", &creator,
                    "created", &created, "users", &users, "groups", &groups, "idle_policy",
                    &idle_policy, "idle_gpu_hours", &idle_gpu_hours, "chosen_gpus", &chosen,
                    "creator_start", &creator_start) < 0) {
        carved_log("state: a saved slice is malformed; skipped");
        return;
    }
    snprintf(req.name, sizeof(req.name), "%s", name);
    snprintf(req.memory, sizeof(req.memory), "%s", memory);
    snprintf(req.compute, sizeof(req.compute), "%s", compute);
    snprintf(req.priority, sizeof(req.priority), "%s", priority);
    ids_from(users, req.users, &req.nusers);
    ids_from(groups, req.groups, &req.ngroups);
    req.idle_policy = idle_policy;
    char err[512];
    struct carve_slice *h = NULL;
    struct dslice *s = free_entry(d);
    if (!s || check_name(name, err, sizeof(err)) < 0 || registry_find(d, name))
        return;
    memset(s, 0, sizeof(*s));
    bool opened = carve_slice_open(shm, &h, err, sizeof(err)) == 0;
    if (opened && !objects_ours(h, err, sizeof(err))) {
        carved_log("slice %s: the objects %s are not carved's (%s): not adopted; the slice is "
                   "made anew under another name, and those objects are left alone", name, shm,
                   err);
        carve_slice_close(h);
        h = NULL;
        opened = false;
    }
    if (opened) {
        settings_from_terms(h, &req);
        restrict_table(shm);
    }
    struct carve_compute unused;
    if (opened && prepare_fields(s, &req, &unused, err, sizeof(err)) == 0) {
        s->handle = h;
        snprintf(s->spec.name, sizeof(s->spec.name), "%s", name);
        s->chosen_gpus = chosen;
        follow_terms(d, s);
        snprintf(s->shm, sizeof(s->shm), "%s", shm);
        s->origin = origin_of(origin);
        s->owner = (uid_t)owner;
        s->creator = (pid_t)creator;
        s->creator_start = creator_start > 0 ? (uint64_t)creator_start : 0;
        s->created = created;
        s->idle_gpu_hours = idle_gpu_hours > 0 ? idle_gpu_hours : 0; /* NaN too */
        s->used = true;
        if (join_boards(s, err, sizeof(err)) < 0)
            carved_log("slice %s: its compute share is not on the board again: %s", name, err);
        for (int i = 0; i < s->spec.ndev; i++)
            if (s->boards[i] && s->spec.dev[i].board_entry != carve_slice_board_entry(h, i))
                carved_log("slice %s: GPU %d's board place moved from %d to %d while carved "
                           "was down; its running tenants note their work at the old place "
                           "until they restart", name, s->spec.dev[i].index,
                           carve_slice_board_entry(h, i), s->spec.dev[i].board_entry);
        carved_log("slice %s adopted from %s", name, shm);
        return;
    }
    carve_slice_close(h);
    remake_saved(d, &req, json_object_get(o, "gpus"), chosen, origin_of(origin), (uid_t)owner,
                 (pid_t)creator, creator_start > 0 ? (uint64_t)creator_start : 0);
}

/* Whether kept is on the GPUs the config's section names (c->gpus, found among the node's
 * GPUs), or on every GPU where it names none. */
static bool on_config_gpus(const struct dslice *kept, const struct carved_slice_conf *c)
{
    if (!c->ngpus || !kept->chosen_gpus)
        return !c->ngpus && !kept->chosen_gpus;
    if (kept->spec.ndev != c->ngpus)
        return false;
    for (int k = 0; k < kept->spec.ndev; k++) {
        bool named = false;
        for (int j = 0; j < c->ngpus && !named; j++)
            named = memcmp(c->gpus[j], kept->spec.dev[k].uuid, 16) == 0;
        if (!named)
            return false;
    }
    return true;
}

/* A config slice kept from before a restart, against its section as the config now has it.
 * Who may join and the idle policy are carved's own books: they follow the config. The caps
 * and share are in the slice's terms, which its running tenants read: they stay, and the log
 * says how to apply the new ones. */
static void follow_config(struct dslice *s, const struct carved_slice_conf *c, bool gpus_found)
{
    if (s->origin != ORIGIN_CONFIG)
        return;
    memcpy(s->users, c->users, sizeof(s->users));
    s->nusers = c->nusers;
    memcpy(s->groups, c->groups, sizeof(s->groups));
    s->ngroups = c->ngroups;
    s->idle_policy = c->idle_policy;
    char asked[sizeof(c->compute)];
    compute_words(c->compute, asked, sizeof(asked));
    if (strcmp(s->memory, c->memory) != 0 || strcmp(s->compute, asked) != 0 ||
        strcmp(s->priority, c->priority) != 0)
        carved_log("slice %s: the config (line %d) asks memory `%s', compute `%s', priority "
                   "`%s'; the slice kept from before has `%s', `%s', `%s' and keeps them while "
                   "it lives: `carve slice delete %s' and restart carved to make it anew",
                   s->name, c->line, c->memory, c->compute, c->priority, s->memory, s->compute,
                   s->priority, s->name);
    if (gpus_found && !on_config_gpus(s, c))
        carved_log("slice %s: the config (line %d) puts it on other GPUs than the slice kept "
                   "from before is on (carve slice list shows them); it stays on those while "
                   "it lives: `carve slice delete %s' and restart carved to move it", s->name,
                   c->line, s->name);
}

int registry_load(struct carved *d, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/slices.json", d->conf.state_dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (root) {
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(root, "slices"), i, o)
            adopt(d, o);
        json_int_t escapes = 0, killed = 0, reclaims = 0;
        if (json_unpack(root, "{s?I,s?I,s?I}", "escapes", &escapes, "escapes_killed", &killed,
                        "idle_reclaims", &reclaims) == 0 && escapes >= 0 && killed >= 0 &&
            reclaims >= 0) {
            d->escapes_total = (unsigned long long)escapes;
            d->escapes_killed = (unsigned long long)killed;
            d->idle_reclaims = (unsigned long long)reclaims;
        }
        json_decref(root);
    } else if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "%s:%d: %s (move the file away to start without saved slices)",
                 path, je.line, je.text);
        return -EINVAL;
    }
    /* the config's slices made here, unmade if a later one is refused: carved then does not
       start, and must leave nothing of them behind */
    struct dslice *made[CARVED_MAX_CONF_SLICES];
    int nmade = 0;
    for (int i = 0; i < d->conf.nslices; i++) {
        struct carved_slice_conf *c = &d->conf.slices[i];
        struct dslice *kept = registry_find(d, c->name);
        char why[768] = "";
        if (kept && kept->origin != ORIGIN_CONFIG) {
            /* the name is the config's: a slice a user made under it (while the operator
               deleted the config's to apply a change, or before a new section) kept it, and
               the config's say over who may join with it (until 2026-11-28) */
            carved_log("slice %s: the config's [slice %s] (line %d) takes the name from the "
                       "slice uid %u made (%s); that slice is removed, its tenants lose it",
                       c->name, c->name, c->line, (unsigned)kept->owner,
                       registry_origin_name(kept->origin));
            unmake(d, kept);
            kept = NULL;
        }
        if (c->ngpu_refs &&
            registry_gpus_named(d, c->gpu_refs, c->ngpu_refs, c, why, sizeof(why)) < 0 &&
            !kept) {
            snprintf(err, errlen, "the config's [slice %s] (line %d): gpus: %s", c->name,
                     c->line, why);
            goto refused;
        }
        if (kept) {
            if (why[0]) /* a GPU gone since: the slice kept lists it as gone */
                carved_log("slice %s: the config's gpus (line %d): %s", c->name, c->line, why);
            follow_config(kept, c, !why[0]);
            continue;
        }
        int r = registry_create(d, c, ORIGIN_CONFIG, geteuid(), 0, why, sizeof(why));
        struct dslice *made_now = r < 0 ? registry_find(d, c->name) : NULL;
        if (made_now) { /* made, and slices.json not written: carved does not start */
            made[nmade++] = made_now;
            snprintf(err, errlen, "the config's [slice %s] (line %d): %s", c->name, c->line,
                     why);
            goto refused;
        }
        if (r == -EDQUOT || r == -ENOSPC) {
            /* no room now (users' guarantees, 1024 slices held, the GPU's board or /dev/shm
               full): carved starts without it, rather than stay down over what users hold,
               and makes it once it fits */
            d->conf_state[i].waiting = true;
            d->conf_state[i].code = r;
            snprintf(d->conf_state[i].why, sizeof(d->conf_state[i].why), "%s", why);
            carved_log("slice %s: the config's [slice %s] (line %d) cannot be made now: %s; "
                       "carved starts without it and makes it as soon as it fits%s", c->name,
                       c->name, c->line, why, r == -EDQUOT ? ", and makes no other guarantee "
                       "where it waits for one" : "");
            continue;
        }
        if (r < 0) {
            snprintf(err, errlen, "the config's [slice %s] (line %d): %s", c->name, c->line,
                     why);
            goto refused;
        }
        made[nmade++] = registry_find(d, c->name);
    }
    return registry_save(d, err, errlen);
refused:
    while (nmade > 0) {
        carved_log("slice %s removed: carved does not start with this config",
                   made[nmade - 1]->name);
        unmake(d, made[--nmade]);
    }
    /* carved says why it does not start; slices.json as it was, less a user's slice that
       held a config section's name (removed above: the name is the config's in any case) */
    char ignored[256];
    registry_save(d, ignored, sizeof(ignored));
    return -EINVAL;
}
