/* groups.c - users' groups from NSS, cached for CARVED_GROUPS_TTL_S (groups.h). On a node
 * whose groups come from LDAP each lookup is a round trip, and carved asked at every poll
 * for every tenant process of a slice with `groups`, twice with `admin_groups` too. */
#include "groups.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <time.h>

#define SETS 64           /* users kept: SETS x WAYS, by uid modulo SETS, the least used replaced */
#define WAYS 4
#define MOST_GROUPS 65536 /* NGROUPS_MAX on Linux */
/* A lookup that failed (NSS's server did not answer): asked again this soon, the user's last
 * good list kept meanwhile. Kept as "no groups" for the whole TTL, one LDAP hiccup took a
 * user out of its slices' groups for a minute: its tenants read as not allowed, and were
 * killed where escape_policy = kill. */
#define RETRY_S 5

struct user_groups {
    bool known;
    uid_t uid;
    double asked;   /* when NSS was last asked */
    double expires; /* asked again from then on */
    double used;    /* when it was last looked at */
    int n;
    gid_t *gids;
};

static struct user_groups cache[SETS][WAYS];

/* The user's groups by NSS into *list (*n of them): 1, 0 when NSS does not know the user,
 * -1 when the lookup failed (the user may well exist). The list had room for 256 groups: a
 * user in more lost all but the process's own group. */
static int ask(uid_t uid, gid_t **list, int *n)
{
    *list = NULL;
    *n = 0;
    errno = 0;
    struct passwd *pw = getpwuid(uid);
    if (!pw) /* getpwuid(3): these say "no such user" */
        return errno == 0 || errno == ENOENT || errno == ESRCH || errno == EBADF ||
                       errno == EPERM ? 0 : -1;
    for (int room = 64; room <= MOST_GROUPS;) {
        gid_t *more = realloc(*list, (size_t)room * sizeof(**list));
        if (!more)
            break;
        *list = more;
        int got = room;
        if (getgrouplist(pw->pw_name, pw->pw_gid, *list, &got) >= 0) {
            *n = got;
            return 1;
        }
        if (got <= room)
            break; /* failed for another reason than room */
        room = got;
    }
    free(*list);
    *list = NULL;
    return -1;
}

/* uid's place: its own if kept, else a free one, else the set's least recently used. */
static struct user_groups *place_of(uid_t uid)
{
    struct user_groups *set = cache[uid % SETS], *pick = NULL;
    for (int w = 0; w < WAYS; w++) {
        if (set[w].known && set[w].uid == uid)
            return &set[w];
        if (!pick || (pick->known && (!set[w].known || set[w].used < pick->used)))
            pick = &set[w];
    }
    return pick;
}

static void refresh(struct user_groups *u, uid_t uid, double now_s)
{
    gid_t *list;
    int n, r = ask(uid, &list, &n);
    bool same = u->known && u->uid == uid;
    if (r < 0 && same) { /* keep the last good list a while */
        u->asked = now_s;
        u->expires = now_s + RETRY_S;
        return;
    }
    free(u->gids);
    *u = (struct user_groups){.known = true, .uid = uid, .asked = now_s, .n = n, .gids = list,
                              .expires = now_s + (r < 0 ? RETRY_S : CARVED_GROUPS_TTL_S)};
}

bool carved_in_groups_at(uid_t uid, gid_t gid, const gid_t *groups, int n, double now_s)
{
    if (n == 0)
        return false;
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    struct user_groups *u = place_of(uid);
    if (!u->known || u->uid != uid || now_s < u->asked || now_s >= u->expires)
        refresh(u, uid, now_s);
    u->used = now_s;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < u->n; j++)
            if (groups[i] == u->gids[j])
                return true;
    return false;
}

bool carved_in_groups(uid_t uid, gid_t gid, const gid_t *groups, int n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return carved_in_groups_at(uid, gid, groups, n, (double)ts.tv_sec + ts.tv_nsec / 1e9);
}

void carved_groups_forget(void)
{
    for (int s = 0; s < SETS; s++)
        for (int w = 0; w < WAYS; w++) {
            free(cache[s][w].gids);
            cache[s][w] = (struct user_groups){0};
        }
}
