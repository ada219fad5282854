/* snapshot.h - for tests: a slice's usage summed while every tenant is stopped.
 *
 * A running sum over a slice's slots is no snapshot: it can add one process's usage from
 * before a release to another's from after an admission, and so read above the cap when
 * the slice never was. Stopping the tenants (SIGSTOP, waited for) makes the sum exact. */
#ifndef CARVE_TEST_SNAPSHOT_H
#define CARVE_TEST_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "slice.h"

struct tenants {
    pid_t *pid;
    bool *alive;
    int n, done, bad_exit; /* bad_exit: ended by a signal or with a nonzero status */
};

/* Stops the live tenants, sums device dev's usage, lets them go on; reaps any that ended. */
uint64_t snapshot_used(struct carve_slice *s, int dev, struct tenants *t);
/* Waits for every live tenant to end. */
void tenants_wait(struct tenants *t);

#endif
