/* groups.c - users' groups from NSS, cached for CARVED_GROUPS_TTL_S (groups.h). On a node
 * whose groups come from LDAP each lookup is a round trip, and carved asked at every poll
 * for every tenant process of a slice with `groups`, twice with `admin_groups` too. */
#include "groups.h"

#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <time.h>

#define CACHED 256         /* users kept, by uid modulo: a collision only asks NSS again */
#define MOST_GROUPS 65536 /* NGROUPS_MAX on Linux */

struct user_groups {
    bool known;
    uid_t uid;
    double at; /* when NSS was asked */
    int n;
    gid_t *gids;
};

static struct user_groups cache[CACHED];

/* Asks NSS for uid's groups into u; a user NSS does not know has none (and is asked again
 * only after the TTL, as a known one). The list had room for 256 groups: a user in more lost
 * all but the process's own group. */
static void ask(struct user_groups *u, uid_t uid, double now_s)
{
    free(u->gids);
    *u = (struct user_groups){.known = true, .uid = uid, .at = now_s};
    struct passwd *pw = getpwuid(uid);
    if (!pw)
        return;
    for (int room = 64; room <= MOST_GROUPS;) {
        gid_t *list = realloc(u->gids, (size_t)room * sizeof(*list));
        if (!list)
            return;
        u->gids = list;
        int got = room;
        if (getgrouplist(pw->pw_name, pw->pw_gid, list, &got) >= 0) {
            u->n = got;
            return;
        }
        if (got <= room)
            return; /* failed for another reason than room */
        room = got;
    }
}

bool carved_in_groups_at(uid_t uid, gid_t gid, const gid_t *groups, int n, double now_s)
{
    if (n == 0)
        return false;
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    struct user_groups *u = &cache[uid % CACHED];
    if (!u->known || u->uid != uid || now_s < u->at || now_s - u->at >= CARVED_GROUPS_TTL_S)
        ask(u, uid, now_s);
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
    for (int i = 0; i < CACHED; i++) {
        free(cache[i].gids);
        cache[i] = (struct user_groups){0};
    }
}
