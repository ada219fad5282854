#!/usr/bin/env bash
# shm-private.sh - run one test suite with a /dev/shm and a /run/carve of its own, and say
# what of carve's it left in /dev/shm. run-all.sh runs it inside `unshare -m` (a mount
# namespace of the suite's), so the fresh tmpfs mounts are seen by the suite and its children
# alone and are gone when they are. /run/carve is carve's (carved's socket, root's MPS
# directories, the Slurm plugin's job state): two suites running at once must not find each
# other's carved there.
#
#   unshare -m --propagation private bash tests/shm-private.sh LEFTFILE CMD...
#
# LEFTFILE gets the names of the slice and board objects (not the simulated GPU's own
# state, carve-sim.*, which lasts like a device) still there when CMD ends, one a line.
# /run/carve is made (empty, as carved would make it) where the machine has none, to mount
# over. The exit status is CMD's, or 125 when a tmpfs cannot be mounted.
set -u
left_file=$1
shift
mount -t tmpfs -o mode=1777,nosuid,nodev carve-test-shm /dev/shm || exit 125
{ mkdir -p /run/carve && mount -t tmpfs -o mode=0755,nosuid,nodev carve-test-run /run/carve; } || exit 125
"$@"
rc=$?
find /dev/shm -maxdepth 1 -name 'carve*' ! -name 'carve-sim.*' -printf '%f\n' 2>/dev/null |
    sort >"$left_file"
exit "$rc"
