/* groups.h - whether a user is in one of some groups, for carved's `groups` and
 * `admin_groups`: the user's groups come from NSS once a minute per user (256 users kept,
 * a lookup that failed asked again after 5 s), not at every poll and connection, which
 * judge every tenant process. */
#ifndef CARVED_GROUPS_H
#define CARVED_GROUPS_H

#include <stdbool.h>
#include <sys/types.h>

/* How long a user's groups are kept: a group given or taken away applies within it. */
#define CARVED_GROUPS_TTL_S 60

/* Whether gid (the process's group) or a group NSS lists for uid (its passwd group and the
 * groups that name it) is one of groups[0..n). n == 0: false, and NSS is not asked. */
bool carved_in_groups(uid_t uid, gid_t gid, const gid_t *groups, int n);
/* The same at now_s (seconds, monotonic): for tests. */
bool carved_in_groups_at(uid_t uid, gid_t gid, const gid_t *groups, int n, double now_s);
/* Drops every cached list (tests, and carved at its exit). */
void carved_groups_forget(void);

#endif
