/* hostlist.h - Slurm's hostlist expressions, as gres.conf writes them in NodeName= and File=:
 * a comma list of names, each with ranges in brackets ("gpu[01-16,20],login1",
 * "/dev/nvidia[0-3]", "rack[1-2]-n[1-4]"), or ALL. Read here without libslurm, so that the
 * plugin's logic stays testable and fuzzable without Slurm (job.h).
 *
 * In a range the lower bound's digits give the width: [01-16] is 01 to 16, [1-16] is 1 to
 * 16 (no padding), [001-100] is 001 to 100, as Slurm prints them. A malformed part (an
 * unclosed bracket, a bound that is not digits, a range going down) matches nothing and
 * counts as nothing. */
#ifndef CARVE_SLURM_HOSTLIST_H
#define CARVE_SLURM_HOSTLIST_H

#include <stdbool.h>

/* Whether name is one of the names expr stands for (ALL, in any case: every name). */
bool carve_hostlist_match(const char *expr, const char *name);

/* How many names expr stands for (duplicates counted), at most CARVE_HOSTLIST_MAX; -1 for
 * ALL or when a part is malformed. */
#define CARVE_HOSTLIST_MAX 1000000L
long carve_hostlist_count(const char *expr);

#endif
