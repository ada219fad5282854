#!/usr/bin/env bash
# slow: yes (22 s: containers with and without carved, sweeps waited for; the gcc build runs it)
# pid_namespaces.sh - one slice's tenants in PID namespaces of their own (containers), where a
# pid names different processes: every container's first process is 1, and the host's pid 1
# is init. A slot names its process by its pid there and by its namespace.
#
# Without carved: a tenant does not take another container's slot of its own pid for its
# image's before an exec, nor reap it by what its pid means in its own namespace (two
# containers in a 4 GiB slice held 3 GiB each, 6 GiB); a tenant of its namespace still gives a
# SIGKILLed one's memory back; and a namespace whose /proc is the host's (unshare -p without
# --mount-proc) does not take a live sibling for a reused pid; nor is a tenant charged, as its
# context's memory, what another container's process of its pid holds in the simulated GPU, nor
# is a sibling container's dead process's memory kept from it. With carved in the host's
# namespace: carve ps lists a container's tenant by its host pid (and its pid there), NVML
# names it so too, carved gives its slot back when it is SIGKILLed, and idle_policy = reclaim
# ends it by its host pid. With carved in a namespace of its own, which cannot see the host's
# processes: their tenant is listed without a pid, the log says why, and its slot is kept.
#
#   BUILD=build bash tests/e2e/pid_namespaces.sh   (as root, with unshare; skipped otherwise)
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc --kill-child true 2>/dev/null; then
    echo "skip - tenants in PID namespaces of their own (needs root and unshare -p)"
    echo "0 passed, 0 failed"
    exit 0
fi

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash

export CARVE_SIM_CTX_MEMORY=0 # the caps count what the tenants ask for, nothing else
CLAIM=$PWD/$BUILD/tests/e2e/mem_claim
GIB=$((1024 * 1024 * 1024))
started=() # the containers (unshare, whose first process dies with it) and tenants started
# SIGTERM lets a carve run remove its slice; unshare --fork blocks it while it waits for its
# child, so SIGKILL follows (--kill-child takes the child with it)
cleanup_extra() {
    [ ${#started[@]} -eq 0 ] && return
    kill "${started[@]}" 2>/dev/null
    sleep 0.5
    kill -KILL "${started[@]}" 2>/dev/null
}

# a container: a PID namespace of its own with its /proc; its first process (unshare's child,
# the command) dies with unshare
box=(unshare -p -f -m --mount-proc --kill-child)
# holding FILE: waits until the tenant writing FILE holds its memory
holding() { for _ in $(seq 100); do grep -q holding "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# 1. Two containers, each tenant its namespace's pid 1: the second is refused what the first
# holds. It used to give the first's slot back as its own image's before an exec.
cat >"$work/two.sh" <<EOF
unshare -p -f -m --mount-proc --kill-child "$CLAIM" hold 3072 6 >"$work/a1.log" 2>&1 &
a=\$!
for _ in \$(seq 100); do grep -q holding "$work/a1.log" && break; sleep 0.1; done
unshare -p -f -m --mount-proc --kill-child "$CLAIM" hold 3072 1 >"$work/b1.log" 2>&1
echo "status \$?" >>"$work/b1.log"
kill -KILL \$a # done with (unshare blocks SIGTERM; its child dies with it)
wait
EOF
"$CARVE" run --simulate --memory 4GiB -- bash "$work/two.sh" >/dev/null 2>&1
sed 's/^/    /' "$work/a1.log" "$work/b1.log"
check "two containers' first processes (pid 1 each) in a 4 GiB slice: the first holds 3 GiB, the second is refused" \
    'grep -q "holding 3072 MiB" "$work/a1.log" && grep -q "out of memory on GPU 0: cap 4 GiB, in use 3 GiB" "$work/b1.log" && grep -q "status 1" "$work/b1.log"'

# 2. The second tenant is pid 2 of its namespace, where pid 1 is a shell started after the
# first tenant: that pid was taken for the first's, reused since, and its slot reaped.
cat >"$work/reuse.sh" <<EOF
unshare -p -f -m --mount-proc --kill-child "$CLAIM" hold 3072 6 >"$work/a2.log" 2>&1 &
a=\$!
for _ in \$(seq 100); do grep -q holding "$work/a2.log" && break; sleep 0.1; done
sleep 0.1
unshare -p -f -m --mount-proc --kill-child sh -c '"$CLAIM" hold 3072 1; echo "status \$?"' >"$work/b2.log" 2>&1
kill -KILL \$a
wait
EOF
"$CARVE" run --simulate --memory 4GiB -- bash "$work/reuse.sh" >/dev/null 2>&1
sed 's/^/    /' "$work/a2.log" "$work/b2.log"
check "a tenant of another container does not reap the first's slot by what pid 1 means there" \
    'grep -q "holding 3072 MiB" "$work/a2.log" && grep -q "out of memory on GPU 0: cap 4 GiB, in use 3 GiB" "$work/b2.log" && grep -q "status 1" "$work/b2.log"'

# 2b. Two containers whose first processes start in one clock tick (10 ms; a process is
# named by its pid and its start time): a tenant of a 3.5 GiB slice makes its context, the
# other, outside carve, then takes 1 GiB, and the tenant asks what is free and takes 3 GiB.
# The second took the tenant's entry in the simulated GPU for its own image's before an exec
# (pid 1, and the same start) and made it its own, and the tenant counted the 1 GiB NVML
# then gave pid 1 as its context's memory: 2.5 GiB free, 3 GiB refused. carved's tenants,
# started at once in step 5, did so now and then: one's slot held the other's memory.
# (Tried until the two start in one tick twice, at most 15 times. On a loaded machine they may
# never do: on 2026-11-29 CI's four suites at once gave 0 in 10, and the check failed though
# the tenant took its 3 GiB each time. The tenant's 3 GiB is checked every time; a run in which
# they never shared a tick says so, as a skip.)
cat >"$work/shared_pid.sh" <<EOF
waitfor() { for _ in \$(seq 100); do [ -e "\$1" ] && grep -q "\$2" "\$1" && return; sleep 0.05; done; }
unshare -p -f -m --mount-proc --kill-child sh -c 'cat /proc/1/stat >"$work/b5.stat"; while [ ! -e "$work/b5.go" ]; do sleep 0.05; done
exec "$CLAIM" hold 3072 1 "$work/go"' >"$work/b5.log" 2>&1 &
b=\$!
unshare -p -f -m --mount-proc --kill-child sh -c 'cat /proc/1/stat >"$work/a5.stat"; while [ ! -e "$work/a5.go" ]; do sleep 0.05; done
exec env -u LD_PRELOAD "$CLAIM" hold 1024 2' >"$work/a5.log" 2>&1 &
touch "$work/b5.go"
waitfor "$work/b5.log" context
touch "$work/a5.go"
waitfor "$work/a5.log" holding
touch "$work/go"
wait \$b
echo "status \$?" >>"$work/b5.log"
wait
EOF
same=0 tries=0 took=1
while [ "$same" -lt 2 ] && [ "$tries" -lt 15 ] && [ "$took" -eq 1 ]; do
    tries=$((tries + 1))
    rm -f "$work"/*5.go "$work/go" "$work"/*5.stat
    "$CARVE" run --simulate --memory 3584MiB -- bash "$work/shared_pid.sh" >/dev/null 2>&1
    [ "$(awk '{print $22}' "$work/a5.stat" "$work/b5.stat" | sort -u | wc -l)" = 1 ] && same=$((same + 1))
    grep -q "holding 1024 MiB" "$work/a5.log" && grep -q "free 3584 MiB of 3584 MiB" "$work/b5.log" &&
        grep -q "holding 3072 MiB" "$work/b5.log" && grep -q "status 0" "$work/b5.log" || took=0
done
sed 's/^/    /' "$work/a5.log" "$work/b5.log"
check "two containers' pid 1s, started in one tick $same times in $tries: the tenant is not charged the other's 1 GiB (3.5 GiB free, 3 GiB taken)" \
    '[ "$took" -eq 1 ]'
[ "$same" -ge 1 ] || echo "skip - two containers' pid 1s never started in one clock tick in $tries tries (a loaded machine): the shared start this check is for was not exercised"

# 2c. A process of a container that dies (SIGKILL) holding 3 GiB of a 4 GiB simulated GPU:
# a process of a sibling container, which cannot see it, finds that memory free (the kernel
# dropped the lock on its entry). It stayed held until a process of the host's namespace looked.
sim=(env CARVE_SIM_STATE="$work/sim-4g" CARVE_SIM_MEMORY=4GiB LD_LIBRARY_PATH="$PWD/$BUILD/lib/carve/sim")
"${sim[@]}" unshare -p -f -m --mount-proc --kill-child sh -c 'while [ ! -e "$0.go" ]; do sleep 0.05; done
exec "$1" hold 3072 1' "$work/b6" "$CLAIM" >"$work/b6.log" 2>&1 &
sibling=$!
"${sim[@]}" unshare -p -f -m --mount-proc --kill-child "$CLAIM" hold 3072 30 >"$work/a6.log" 2>&1 &
dying=$!
holding "$work/a6.log"
kill -KILL "$(pgrep -P "$dying")"
wait "$dying" 2>/dev/null
touch "$work/b6.go"
wait "$sibling"
sed 's/^/    /' "$work/a6.log" "$work/b6.log"
check "a container's process SIGKILLed holding 3 GiB of 4: a sibling container's process gets 3 GiB" \
    'grep -q "holding 3072 MiB" "$work/a6.log" && grep -q "holding 3072 MiB" "$work/b6.log"'

# 3. One namespace whose /proc is the host's (no --mount-proc): there /proc/2 is not the
# namespace's pid 2. A live sibling is not taken for a reused pid.
cat >"$work/outer_proc.sh" <<EOF
unshare -p -f --kill-child sh -c '
"$CLAIM" hold 3072 6 >"$work/a3.log" 2>&1 &
a=\$!
for _ in \$(seq 100); do grep -q holding "$work/a3.log" && break; sleep 0.1; done
sleep 0.1
"$CLAIM" hold 3072 1 >"$work/b3.log" 2>&1
echo "status \$?" >>"$work/b3.log"
kill \$a
wait'
EOF
"$CARVE" run --simulate --memory 4GiB -- bash "$work/outer_proc.sh" >/dev/null 2>&1
sed 's/^/    /' "$work/a3.log" "$work/b3.log"
check "a namespace with the host's /proc: a live sibling's slot is not taken for a reused pid's" \
    'grep -q "holding 3072 MiB" "$work/a3.log" && grep -q "out of memory on GPU 0" "$work/b3.log" && grep -q "status 1" "$work/b3.log"'

# 4. A tenant SIGKILLed in a container: the next tenant of its namespace gets its memory back.
cat >"$work/killed.sh" <<EOF
unshare -p -f -m --mount-proc --kill-child sh -c '
"$CLAIM" hold 3072 30 >"$work/a4.log" 2>&1 &
a=\$!
for _ in \$(seq 100); do grep -q holding "$work/a4.log" && break; sleep 0.1; done
kill -KILL \$a
wait \$a
"$CLAIM" hold 3072 1 >"$work/b4.log" 2>&1'
EOF
"$CARVE" run --simulate --memory 4GiB -- bash "$work/killed.sh" >/dev/null 2>&1
sed 's/^/    /' "$work/a4.log" "$work/b4.log"
check "a tenant SIGKILLed in a container: the next of its namespace gets its 3 GiB" \
    'grep -q "holding 3072 MiB" "$work/a4.log" && grep -q "holding 3072 MiB" "$work/b4.log"'

# 5. carved in the host's namespace. Slice reclaimed ends tenants idle for 10 s, slice
# shared only reports them.
start_carved 200ms off $'idle_after = 10s\n[slice reclaimed]\nmemory = 4GiB\nidle_policy = reclaim\n'
if ! "$CARVE" slice create shared --memory 4GiB >/dev/null; then
    bad "carved starts"
    sed 's/^/    /' "$work/carved.log"
    echo "$passed passed, $failed failed"
    exit 1
fi
"${box[@]}" "$CARVE" run --slice reclaimed -- "$CLAIM" hold 1024 60 >"$work/r.log" 2>&1 &
reclaimed=$!
started+=("$reclaimed")
"${box[@]}" "$CARVE" run --slice shared -- "$CLAIM" hold 3072 60 >"$work/c1.log" 2>&1 &
outer=$!
started+=("$outer")
holding "$work/c1.log"
host=$(pgrep -P "$outer")
ns=$(stat -L -c %i "/proc/$host/ns/pid")
sleep 0.6 # three polls
procs=$(slice_field shared '[(p["pid"], p["namespace_pid"], p["pid_namespace"], p["command"], p["memory_used"]) for p in s["processes"]]')
echo "    $procs"
check "carve ps lists the container's tenant by its host pid ($host), and as pid 1 of its namespace" \
    '[ "$procs" = "[($host, 1, $ns, '\''mem_claim'\'', $((3 * GIB)))]" ]'
check "carve ps says so" '"$CARVE" ps | grep -Eq "^shared +$host root +mem_claim +3 GiB +\(pid 1 in PID namespace $ns\)$"'
for _ in $(seq 50); do # polls go on: under load the three above may not have been
    nvml=$("$CARVE" ps --json | python3 -c 'import json, sys
snap = json.load(sys.stdin)
s = [s for s in snap["slices"] if s["name"] == "shared"][0]
print(s["devices"][0]["memory_used_nvml"], [e["pid"] for e in snap["escapes"]])')
    [ "$nvml" = "$((3 * GIB)) []" ] && break
    sleep 0.1
done
check "NVML names the container's tenant to carved by its host pid: its 3 GiB count in the slice, and it is no escape ($nvml)" \
    '[ "$nvml" = "$((3 * GIB)) []" ]'
out=$("${box[@]}" "$CARVE" run --slice shared -- "$CLAIM" hold 3072 1 2>&1)
echo "$out" | sed 's/^/    /'
check "a second container's tenant (pid 1 too) is refused what the first holds" \
    '[[ $out == *"out of memory on GPU 0: cap 4 GiB, in use 3 GiB"* ]] && [ "$(slice_field shared "s[\"devices\"][0][\"memory_used\"]")" = $((3 * GIB)) ]'
kill -KILL "$host"
wait "$outer" 2>/dev/null
check "the container's tenant SIGKILLed: carved gives its slot back (the host's pid 1 lives)" \
    'wait_field shared "(s[\"devices\"][0][\"memory_used\"], s[\"processes\"])" "(0, [])"'

holding "$work/r.log"
host=$(pgrep -P "$reclaimed")
for _ in $(seq 200); do kill -0 "$host" 2>/dev/null || break; sleep 0.1; done
wait "$reclaimed" 2>/dev/null
check "idle_policy = reclaim ends an idle container's tenant by its host pid, and its memory comes back" \
    '! kill -0 "$host" 2>/dev/null && grep -q "slice reclaimed reclaimed: 1 process(es) ended" "$work/carved.log" && wait_field reclaimed "s[\"devices\"][0][\"memory_used\"]" 0'
# 5b. a carve run without carved in a container that shares the host's /dev/shm but not its
# PIDs (docker --ipc=host): its slice's name holds its pid there (30000), which names no
# process here; carved's sweep of killed carve runs' slices must leave it (its terms say the
# namespace it was made in)
"${box[@]}" sh -c 'echo 29999 >/proc/sys/kernel/ns_last_pid; env CARVE_SOCKET=/nonexistent "$0" run --simulate --memory 1GiB -- sleep 30' \
    "$PWD/$CARVE" >/dev/null 2>&1 &
boxed=$!
started+=("$boxed")
for _ in $(seq 50); do ls /dev/shm/carve.0.30000.* >/dev/null 2>&1 && break; sleep 0.1; done
made=$(cd /dev/shm && ls carve.0.30000.* 2>/dev/null | tr '\n' ' ')
polls 10 # a sweep or more (every tenth poll)
check "a live carve run of another PID namespace keeps its slice ($made; pid 30000 $(kill -0 30000 2>/dev/null && echo runs || echo "runs not") here) through carved's sweeps" \
    '[ -n "$made" ] && ls /dev/shm/carve.0.30000.* >/dev/null 2>&1 && ! grep -q "removed slice /carve.0.30000" "$work/carved.log"'
kill -KILL "$boxed" 2>/dev/null # (unshare blocks SIGTERM: it waited for the sleep's 30 s)
wait "$boxed" 2>/dev/null
rm -f /dev/shm/carve.0.30000.*
stop_carved
daemon=

# 6. carved in a PID namespace of its own, which cannot see the host's processes: their
# tenant (of the host's namespace, here) is listed without a pid, and its slot is kept after
# it ends (its memory counts until a tenant of its namespace reaps it, or the slice goes).
printf 'poll_interval = 200ms\n' >"$work/inner.conf"
"${box[@]}" "$CARVED" --simulate --config "$work/inner.conf" --socket "$CARVE_SOCKET" \
    --state-dir "$work/state" --listen off >"$work/inner.log" 2>&1 &
inner_box=$!
started+=("$inner_box")
# carved, the namespace's pid 1 (stopped by SIGTERM, which it handles, saving its state)
for _ in $(seq 50); do inner_carved=$(pgrep -P "$inner_box") && break; sleep 0.1; done
for _ in $(seq 100); do "$CARVE" slice list >/dev/null 2>&1 && break; sleep 0.1; done
"$CARVE" slice create hidden --memory 4GiB >/dev/null
"$CARVE" run --slice hidden -- "$CLAIM" hold 1024 60 >"$work/h.log" 2>&1 &
tenant=$!
started+=("$tenant")
holding "$work/h.log"
sleep 0.6
procs=$(slice_field hidden '[(p["pid"], p["namespace_pid"], p["pid_namespace"], p["user"], p["command"], p["memory_used"]) for p in s["processes"]]')
echo "    $procs"
check "carved in a namespace of its own lists a host tenant without a pid, by its pid there ($tenant)" \
    '[ "$procs" = "[(None, $tenant, 4026531836, '\''?'\'', '\''?'\'', $GIB)]" ]'
check "carve ps says carved cannot find it" \
    '"$CARVE" ps | grep -Eq "^hidden +\? +\? +\? +1 GiB +\(pid $tenant in PID namespace 4026531836: carved cannot find it, see its log\)$"'
check "its log says why, once" \
    '[ "$(grep -c "slice hidden: a tenant of PID namespace 4026531836 (pid $tenant there) holds a slot, and carved cannot find it: carved runs in a PID namespace of its own" "$work/inner.log")" = 1 ]'
{ kill -KILL "$tenant" && wait "$tenant"; } 2>/dev/null
sleep 0.6
check "its slot is kept once it ended: carved cannot tell" \
    '[ "$(slice_field hidden "s[\"devices\"][0][\"memory_used\"]")" = "$GIB" ]'
kill -TERM "$inner_carved"
wait "$inner_box" 2>/dev/null

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
