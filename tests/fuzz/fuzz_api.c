/* fuzz_api.c - libFuzzer harness for carved's socket protocol: any bytes, given to the same
 * request handler the socket calls (carved/api.c, through carved/registry.c, which makes
 * real slice objects in /dev/shm), get one reply object, never a crash: {"ok":true,...} or
 * {"ok":false,"error":"..."} with a non-empty reason (and, if any, a "code" clients know),
 * and the registry keeps its promises
 * (valid, unique names; each slice's shared memory opens). The caller changes with the
 * input's length (root, another user, nobody) so that the permission paths are fuzzed too.
 * After each input every slice but one is deleted again, so runs stay independent and
 * nothing is left in /dev/shm. The one, `standing', open to every caller, is there before
 * each input (made again if an input deleted it), so that a join can succeed, and a table
 * handed over with it is checked; it guarantees 60%+, so that a create guaranteeing more than
 * 40% is refused with its code. The daemon's two GPUs are fixed here, with UUIDs of their own so that
 * the compute boards this makes are not any real or simulated GPU's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct carved daemon_state; /* ~1 MiB: not on the stack */
static char state_dir[] = "/tmp/carve-fuzz-api.XXXXXX";

void carved_log(const char *fmt, ...)
{
    (void)fmt; /* the fuzzer's output is for its own findings */
}

static void remove_state(void)
{
    char err[512];
    for (int i = 0; i < CARVED_MAX_SLICES; i++) /* the standing slice, and any an exit cut */
        if (daemon_state.slices[i].used)
            registry_delete(&daemon_state, &daemon_state.slices[i], err, sizeof(err));
    char path[sizeof(state_dir) + 32];
    snprintf(path, sizeof(path), "%s/slices.json", state_dir);
    unlink(path);
    rmdir(state_dir);
}

#define STANDING "standing"

/* the slice a join can reach: made as root, open to every caller of the harness */
static void make_standing(struct carved *d)
{
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        if (d->slices[i].used && strcmp(d->slices[i].name, STANDING) == 0)
            return;
    int fd;
    json_t *r = api_handle(d,
                           "{\"op\":\"create\",\"name\":\"" STANDING "\",\"memory\":\"1GiB\","
                           "\"compute\":\"60%+\",\"users\":[0,1000,65534]}",
                           0, 0, getpid(), &fd);
    if (!json_is_true(json_object_get(r, "ok")) || fd >= 0)
        abort();
    json_decref(r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct carved *d = &daemon_state;
    carved_config_defaults(&d->conf);
    if (!mkdtemp(state_dir))
        abort();
    atexit(remove_state);
    snprintf(d->conf.state_dir, sizeof(d->conf.state_dir), "%s", state_dir);
    d->conf.nadmins = 1;
    d->conf.admins[0] = 4242; /* one admin besides root, so the admin path is not root's alone */
    d->simulate = true;
    d->ngpu = 2;
    for (unsigned g = 0; g < 2; g++) {
        d->gpus[g].index = g;
        snprintf(d->gpus[g].uuid, sizeof(d->gpus[g].uuid),
                 "GPU-f022f022-0000-4000-8000-0000000000%02u", g);
        snprintf(d->gpus[g].name, sizeof(d->gpus[g].name), "fuzzed GPU %u", g);
        d->gpus[g].total = (uint64_t)8 << 30;
    }
    /* list and ps hand out the snapshot; a small one is enough */
    d->snapshot = json_pack("{s:i,s:s,s:[],s:[],s:[]}", "version", 1, "node", "fuzz", "gpus",
                            "slices", "escapes");
    make_standing(d);
    return 0;
}

static void check_reply(const json_t *r)
{
    if (!json_is_object(r) || !json_is_boolean(json_object_get(r, "ok")))
        abort();
    if (json_is_false(json_object_get(r, "ok"))) {
        const char *why = json_string_value(json_object_get(r, "error"));
        if (!why || !*why)
            abort(); /* a refusal always says why */
    }
    /* a code only on a refusal, and one that clients know (old clients ignore it) */
    json_t *code = json_object_get(r, "code");
    if (code && (!json_is_false(json_object_get(r, "ok")) || !json_is_string(code) ||
                 strcmp(json_string_value(code), CARVE_REFUSAL_GUARANTEES) != 0))
        abort();
    char *text = json_dumps(r, JSON_COMPACT);
    if (!text || strchr(text, '\n'))
        abort(); /* the reply goes out as one line */
    free(text);
}

/* An fd goes out only with a yes, and it is a slice's table: a file with something in it.
 * The harness closes it: an fd per join would leak. */
static void check_handover(const json_t *r, int pass_fd)
{
    if (pass_fd < 0)
        return;
    struct stat st;
    if (!json_is_true(json_object_get(r, "ok")) || fstat(pass_fd, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size <= 0)
        abort();
    close(pass_fd);
}

static void check_registry(struct carved *d)
{
    for (int i = 0; i < CARVED_MAX_SLICES; i++) {
        struct dslice *s = &d->slices[i];
        if (!s->used)
            continue;
        if (!memchr(s->name, '\0', sizeof(s->name)) || !carve_slice_name_ok(s->name) ||
            !memchr(s->shm, '\0', sizeof(s->shm)) || !s->handle)
            abort();
        for (int j = 0; j < i; j++)
            if (d->slices[j].used && strcmp(d->slices[j].name, s->name) == 0)
                abort();
        if (s->spec.ndev < 1 || s->spec.ndev > d->ngpu)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    static const uid_t callers[] = {0, 1000, 65534};
    struct carved *d = &daemon_state;
    char *line = malloc(len + 1);
    if (!line)
        return 0;
    memcpy(line, data, len);
    line[len] = '\0'; /* as carved's reader hands over one line */
    uid_t uid = callers[len % 3];
    int pass_fd;
    json_t *r = api_handle(d, line, uid, (gid_t)uid, getpid(), &pass_fd);
    check_reply(r);
    check_handover(r, pass_fd);
    json_decref(r);
    /* a second request on the same state: a name made above is now taken, or joinable */
    r = api_handle(d, line, uid, (gid_t)uid, getpid(), &pass_fd);
    check_reply(r);
    check_handover(r, pass_fd);
    json_decref(r);
    check_registry(d);
    char err[512];
    for (int i = 0; i < CARVED_MAX_SLICES; i++)
        if (d->slices[i].used && strcmp(d->slices[i].name, STANDING) != 0)
            registry_delete(d, &d->slices[i], err, sizeof(err));
    make_standing(d);
    free(line);
    return 0;
}
