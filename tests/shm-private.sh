#!/usr/bin/env bash
# shm-private.sh - run one test suite with a /dev/shm of its own, and say what of carve's it
# left there. run-all.sh runs it inside `unshare -m` (a mount namespace of the suite's), so
# the fresh tmpfs is seen by the suite and its children alone and is gone when they are.
#
#   unshare -m --propagation private bash tests/shm-private.sh LEFTFILE CMD...
#
# LEFTFILE gets the names of the slice and board objects (not the simulated GPU's own
# state, carve-sim.*, which lasts like a device) still there when CMD ends, one a line.
# The exit status is CMD's, or 125 when the tmpfs cannot be mounted.
set -u
left_file=$1
shift
mount -t tmpfs -o mode=1777,nosuid,nodev carve-test-shm /dev/shm || exit 125
"$@"
rc=$?
find /dev/shm -maxdepth 1 -name 'carve*' ! -name 'carve-sim.*' -printf '%f\n' 2>/dev/null |
    sort >"$left_file"
exit "$rc"
