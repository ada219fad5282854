#!/usr/bin/env bash
# carved_reclaim.sh - idle_policy = reclaim on the simulated GPU: a tenant that holds memory
# and runs no kernel for idle_after is ended, and its slice's memory comes back; a pid that
# someone wrote into the slice's table (mode 0666: any user can) is not killed. carved ended
# every pid in the table, so any local user could have root's carved SIGKILL any process.
# Then, with escape_policy = kill, a tenant of another slice planted in a small slice's table
# is not taken for that slice's process over its cap, and killed (it was).
#
#   BUILD=build bash tests/e2e/carved_reclaim.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash

victim=
tenant=
cleanup_extra() { kill "$victim" "$tenant" 2>/dev/null; }

start_carved 200ms off $'idle_after = 10s\nidle_policy = reclaim\n'

"$CARVE" slice create idle --memory 2GiB >/dev/null
shm=$(python3 -c 'import json,sys; print([s["shm"] for s in json.load(open(sys.argv[1]))["slices"] if s["name"] == "idle"][0])' "$work/state/slices.json")
"$CARVE" run --slice idle -- "$BUILD/tests/e2e/mem_claim" hold 512 60 >"$work/tenant.log" 2>&1 &
tenant=$!
sleep 300 &
victim=$!
claimer=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    claimer=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
for _ in $(seq 50); do grep -q holding "$work/tenant.log" && break; sleep 0.1; done
check "a tenant holds 512 MiB in slice idle" 'grep -q "holding 512 MiB" "$work/tenant.log"'
CARVE_SLICE=$shm "${claimer[@]}" "$BUILD/tests/e2e/mem_claim" "$victim" >"$work/claim.log" 2>&1
check "another user writes the pid of a process not in the slice into its table ($(id -un "${claimer[1]#--reuid=}" 2>/dev/null || id -un))" 'grep -q "claims pid $victim" "$work/claim.log"'

# idle after 10 s; reclaimed at that poll
for _ in $(seq 200); do kill -0 "$tenant" 2>/dev/null || break; sleep 0.1; done
check "the idle tenant is ended by the reclaim" '! kill -0 "$tenant" 2>/dev/null'
wait "$tenant" 2>/dev/null
check "the pid written into the table is not killed" 'kill -0 "$victim" 2>/dev/null'
check "the log says why it was left" 'grep -q "pid $victim is in its table but was not started in the slice" "$work/carved.log"'
check "the log counts one process ended" 'grep -q "slice idle reclaimed: 1 process(es) ended" "$work/carved.log"'
reclaims=$("$CARVE" ps --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["idle_reclaims"])')
sleep 1
again=$("$CARVE" ps --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["idle_reclaims"])')
check "one reclaim counted, not one per poll while the planted pid stays ($reclaims, then $again)" '[ "$reclaims" = 1 ] && [ "$again" = 1 ]'
check "carved is still running" 'kill -0 "$daemon"'

# escape_policy = kill: slice small (256 MiB) made first, so its table is read first
stop_carved
start_carved 200ms off $'escape_policy = kill\n'
"$CARVE" slice create small --memory 256MiB >/dev/null
"$CARVE" slice create big --memory 1GiB >/dev/null
"$CARVE" run --slice big -- "$BUILD/tests/e2e/mem_claim" hold 512 60 >"$work/tenant2.log" 2>&1 &
tenant=$!
for _ in $(seq 50); do grep -q holding "$work/tenant2.log" && break; sleep 0.1; done
small=$(python3 -c 'import json,sys; print([s["shm"] for s in json.load(open(sys.argv[1]))["slices"] if s["name"] == "small"][0])' "$work/state/slices.json")
CARVE_SLICE=$small "${claimer[@]}" "$BUILD/tests/e2e/mem_claim" "$tenant" >"$work/claim2.log" 2>&1
check "big's tenant (512 MiB) planted in small's table" 'grep -q "claims pid $tenant" "$work/claim2.log"'
sleep 2
check "big's tenant is not killed as small's process over its cap" 'kill -0 "$tenant" 2>/dev/null'
check "carved does not find small over its cap" '! grep -q "slice small holds" "$work/carved.log"'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
