#!/usr/bin/env bash
# slow: yes (33 s: carved left running for idle stretches; the gcc build runs it)
# carved_numbers.sh - what carved reports, against situations whose right answer is known,
# on the simulated GPU: the compute share a slice achieved (a tenant running flat out,
# unpaced and capped at 30%), in the snapshot and in carve ps, and from the limiter's books
# when NVML's utilisation samples name pids its process list does not; allocations refused at a cap,
# counted by the slices, across a restart of carved; carve ps of a slice on two GPUs; idle
# GPU-hours of a slice on two GPUs, across a restart; an escape on two GPUs, counted and
# killed once; an escape whose name is not UTF-8 listed; NVIDIA's MPS server no escape; a
# process that only draws (NVML's graphics list) an escape
#
#   BUILD=build bash tests/e2e/carved_numbers.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
LOAD=$BUILD/bench/compute_load
export CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0

tenants=()
cleanup_extra() { kill "${tenants[@]}" 2>/dev/null; }

start_carved 500ms off $'idle_after = 10s\n'

# 1. achieved compute share: a tenant flat out (10 ms kernels, back to back) alone on the
# GPU. carved read it from libcarve's charges, which only a launch the limiter may hold
# makes: an unpaced slice at 100% read 0.0.
"$CARVE" slice create flat --memory 1GiB >/dev/null
"$CARVE" slice create cap30 --memory 1GiB --compute 30% >/dev/null
"$CARVE" slice create guar --memory 1GiB --compute 30%+ >/dev/null
# 5 s each: the flat one's carve ps, read after its share, found it ended at 3 s under four
# suites at once (2026-11-29)
for s in flat cap30 guar; do
    "$CARVE" run --slice "$s" -- "$LOAD" --kind big --seconds 5 --label "$s" >"$work/$s.log" 2>&1 &
    tenants+=($!)
    sleep 2
    share=$(slice_field "$s" 'd["compute_share"]')
    [ "$s" = flat ] && ps_text=$("$CARVE" ps)
    case $s in
        cap30) check "a --compute 30% slice flat out: achieved share $share%, 25-35" \
                   'python3 -c "import sys; sys.exit(not 25 <= $share <= 35)"' ;;
        *) check "a $s slice flat out alone: achieved share $share%, 90 or more" \
               'python3 -c "import sys; sys.exit(not $share >= 90)"' ;;
    esac
    wait "${tenants[-1]}"
done
row=$(grep "^flat " <<<"$ps_text")
check "carve ps shows the share achieved, not only the one asked for: $row" \
    '[[ $row =~ \ (9[0-9]|100)\.[0-9]%\ +-\  ]]'
wait_field flat 'd["compute_share"]' 0.0 30
share=$(slice_field flat 'd["compute_share"]')
check "the share once its tenant is gone: $share%" '[ "$share" = 0.0 ]'

# 1b. NVML's utilisation samples by pids of another PID namespace than its process list's
# (drivers that translate only the list's into a container's namespace): no sample matches,
# and the share comes from the limiter's books (it read 0.0 from the unmatched samples)
stop_carved
CARVE_SIM_NVML_UTIL_PID_OFFSET=100000 start_carved 500ms off $'idle_after = 10s\n'
"$CARVE" run --slice cap30 -- "$LOAD" --kind big --seconds 4 --label cap30b >"$work/cap30b.log" 2>&1 &
tenants+=($!)
sleep 3
share=$(slice_field cap30 'd["compute_share"]')
check "samples naming no listed process: the --compute 30% slice's share from the limiter, $share%, 25-35" \
    'python3 -c "import sys; sys.exit(not 25 <= $share <= 35)"'
check "the log says why" 'grep -q "GPU 0: NVML.s utilisation samples name no process of its process list for 3 polls" "$work/carved.log"'
wait "${tenants[-1]}"
stop_carved
start_carved 500ms off $'idle_after = 10s\n'

# 2. allocations refused: N refusals, N in the slice; the slices keep them across a restart
# of carved, so carve top must not say they were since carved started (it did: 3 refused
# "since carved started" by a carved that had refused none)
"$CARVE" slice create refuse --memory 1GiB >/dev/null
for i in 1 2 3; do
    "$CARVE" run --slice refuse -- "$BUILD/bench/memhog" --label r$i --step 768 --hold 0 >"$work/r$i.log" 2>&1
done
wait_field refuse 'd["oom_denials"]' 3 30
denials=$(slice_field refuse 'd["oom_denials"]')
check "3 tenants refused once each: oom_denials $denials" '[ "$denials" = 3 ]'
stop_carved
start_carved 500ms off $'idle_after = 10s\n'
wait_field refuse 'd["oom_denials"]' 3 30
denials=$(slice_field refuse 'd["oom_denials"]')
check "the slice's refusals after a restart of carved: $denials" '[ "$denials" = 3 ]'
"$CARVE" top --once --width 120 >"$work/top.txt"
since=$(grep "carved's totals" "$work/top.txt")
check "carve top after the restart: the refusals are not among carved's totals ($since)" \
    '[[ $since != *refused* ]] && grep -qx "allocations refused at a cap by the slices there now: 3" "$work/top.txt"'

# 3. a slice on two GPUs: carve ps printed its first GPU's memory only
stop_carved
export CARVE_SIM_DEVICES=2
start_carved 500ms off
"$CARVE" slice create two --memory 0=1GiB,1=512MiB >/dev/null
ps_text=$("$CARVE" ps)
check "carve ps: a row for each GPU of a slice on two" \
    '[[ $ps_text =~ two\ .*\ 0\ 0\ B\ /\ 1\ GiB ]] && [[ $ps_text =~ $'"'"'\n'"'"'\ +1\ 0\ B\ /\ 512\ MiB ]]'

# 4. idle GPU-hours: a slice holding memory on both GPUs, no kernel. An idle stretch counts
# from its start once it has lasted idle_after, on each GPU (it counted from the flag on,
# once), and a restart of carved keeps the total (it began again at 0)
stop_carved
start_carved 500ms off $'idle_after = 10s\n'
"$CARVE" slice create idle2 --memory 1GiB >/dev/null
for gpu in 0 1; do
    CUDA_VISIBLE_DEVICES=$gpu "$CARVE" run --slice idle2 -- "$BUILD/bench/memhog" --label g$gpu \
        --max 256 --hold 30 >"$work/idle$gpu.log" 2>&1 &
    tenants+=($!)
done
wait_field idle2 's["idle_gpu_hours"] > 0' True 160 # idle_after (10 s) from the memory held
read -r idle_s hours < <(slice_field idle2 '"%s %s" % (s["idle_seconds"], s["idle_gpu_hours"])')
check "idle on two GPUs for ${idle_s} s: ${hours} idle GPU-hours, twice the stretch" \
    'python3 -c "import sys; sys.exit(not 1.8 <= $hours * 3600 / $idle_s <= 2.2)"'
stop_carved
start_carved 500ms off $'idle_after = 10s\n'
wait_field idle2 "s[\"idle_gpu_hours\"] >= $hours" True 30
after=$(slice_field idle2 's["idle_gpu_hours"]')
check "idle GPU-hours across a restart of carved: $hours before, $after after" \
    'python3 -c "import sys; sys.exit(not $after >= $hours > 0)"'
kill "${tenants[@]}" 2>/dev/null

# 5. an escape on both GPUs is one escaped process: NVML lists it on each, and carved counted
# it once per GPU (carve_escapes_total 2), and under escape_policy = kill killed it "twice"
# (escapes_killed 2, two log lines)
# on_both SECONDS &: a process with 64 MiB on each simulated GPU, outside carve, held SECONDS
# (in the background only: the shell that runs it becomes python, so $! is python's pid)
on_both() {
    LD_LIBRARY_PATH=$BUILD/lib/carve/sim exec python3 -c '
import ctypes, sys, time
cu = ctypes.CDLL("libcuda.so")
assert cu.cuInit(0) == 0
for i in range(2):
    dev, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    assert cu.cuDeviceGet(ctypes.byref(dev), i) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    assert cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(64 << 20)) == 0
time.sleep(float(sys.argv[1]))' "$1"
}
totals() { "$CARVE" ps --json | python3 -c 'import json, sys; t = json.load(sys.stdin)["totals"]; print(t["escapes"], t["escapes_killed"])'; }
stop_carved
forget_state # (a bare rm -rf of it left the slices above in /dev/shm for good)
start_carved 200ms off
on_both 10 & # killed once checked
both=$!
tenants+=("$both")
escape_gpus() { "$CARVE" ps --json | python3 -c 'import json, sys; print(sorted(e["gpu"] for e in json.load(sys.stdin)["escapes"]))'; }
for _ in $(seq 30); do [ "$(escape_gpus)" = "[0, 1]" ] && break; sleep 0.1; done
listed=$(escape_gpus)
read -r seen killed < <(totals)
check "a process on both GPUs is listed as an escape on each ($listed) and counted once ($seen)" \
    '[ "$listed" = "[0, 1]" ] && [ "$seen" = 1 ]'
kill "$both"
wait "$both" 2>/dev/null
# a carved that dies (SIGKILL, a crash) keeps what it counted: the node's counters were
# written only at a change of a slice and at stop, and carve_escapes_total went back to 0
kill -KILL "$daemon"
wait "$daemon" 2>/dev/null
start_carved 200ms off
read -r seen killed < <(totals)
check "the escape is still counted after carved was SIGKILLed and started again ($seen)" '[ "$seen" = 1 ]'
stop_carved
start_carved 200ms off $'escape_policy = kill\n'
on_both 10 2>/dev/null &
both=$!
wait "$both" 2>/dev/null
rc=$?
sleep 0.5
read -r seen killed < <(totals)
lines=$(grep -c "escape: pid [0-9]* (python3, .*: killed" "$work/carved.log")
check "escape_policy = kill: the process on both GPUs killed once (status $rc, $killed killed, $lines log lines, $seen escapes in all)" \
    '[ $rc -eq 137 ] && [ "$killed" = 1 ] && [ "$lines" = 1 ] && [ "$seen" = 2 ]'

# 6. a process names itself: an escape whose name was not UTF-8 (or was cut inside a
# character at the kernel's 15 bytes) was missing from the snapshot, so never listed nor
# counted; a control character in it reached the operator's terminal through carve ps
stop_carved
start_carved 200ms off
odd="$work/$(printf 'hog\xff\x1b[2J')"
cp "$BUILD/bench/memhog" "$odd"
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$odd" --label odd --max 64 --hold 10 >"$work/odd.log" 2>&1 & # killed once checked
oddpid=$!
tenants+=("$oddpid")
for _ in $(seq 50); do grep -q holding "$work/odd.log" && break; sleep 0.1; done
odd_listed() { "$CARVE" ps --json | python3 -c 'import json, sys
print([e["command"] for e in json.load(sys.stdin)["escapes"] if e["pid"] == int(sys.argv[1])])' "$oddpid"; }
for _ in $(seq 30); do [ "$(odd_listed)" != "[]" ] && break; sleep 0.1; done # a poll lists it
listed=$(odd_listed)
ps_text=$("$CARVE" ps)
check "an escape named with a byte that is not UTF-8 and an escape character is listed ($listed), and carve ps prints no control character" \
    '[ "$listed" = "['"'"'hog??[2J'"'"']" ] && ! grep -q $'"'"'\x1b'"'"' <<<"$ps_text"'
kill "$oddpid"
wait "$oddpid" 2>/dev/null

# 7. NVIDIA's MPS server (carve run --mode mps starts one per user and GPU) is a GPU process
# in no slice: carved counted it as an escape, and under escape_policy = kill killed it,
# ending every MPS client it served. It is told by the file it runs (named
# nvidia-cuda-mps-server, owned by root or carved's user, writable by no group or other):
# a stand-in holding GPU memory under that name stays; the same program made group-writable
# (anyone of the group could have put their own there) is still an escape, and killed
stop_carved
start_carved 200ms off $'escape_policy = kill\n'
mkdir -p "$work/mps-ok" "$work/mps-gw"
for d in mps-ok mps-gw; do cp "$BUILD/bench/memhog" "$work/$d/nvidia-cuda-mps-server"; done
chmod 0755 "$work/mps-ok/nvidia-cuda-mps-server"
chmod 0775 "$work/mps-gw/nvidia-cuda-mps-server"
# 8 s: with 3 it had ended before carve ps under four suites at once (2026-11-29)
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$work/mps-ok/nvidia-cuda-mps-server" --label server \
    --max 64 --hold 8 >"$work/mps-ok.log" 2>&1 &
server=$!
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$work/mps-gw/nvidia-cuda-mps-server" --label impostor \
    --max 64 --hold 10 >"$work/mps-gw.log" 2>&1 &
impostor=$!
for _ in $(seq 50); do grep -q holding "$work/mps-ok.log" && break; sleep 0.1; done
sleep 0.6
seen=$("$CARVE" ps --json | python3 -c 'import json, sys
snap = json.load(sys.stdin)
procs = {p["pid"]: p["mps_server"] for g in snap["gpus"] for p in g["processes"]}
escapes = [e["pid"] for e in snap["escapes"]]
print(procs.get(int(sys.argv[1])), int(sys.argv[1]) in escapes)' "$server")
ps_text=$("$CARVE" ps)
wait "$server"
server_rc=$?
wait "$impostor" 2>/dev/null
impostor_rc=$?
check "the MPS server is listed as one and is no escape ($seen), and carve ps says so" \
    '[ "$seen" = "True False" ] && grep -q "^  GPU 0 pid $server user .* command nvidia-cuda-mps" <<<"$ps_text"'
check "escape_policy = kill: the MPS server runs to its end (status $server_rc), a group-writable program of that name is killed (status $impostor_rc)" \
    '[ "$server_rc" -eq 0 ] && [ "$impostor_rc" -eq 137 ]'

# 8. a process that only draws (Vulkan, OpenGL) is in NVML's graphics list and not its compute
# one: carved read only the compute list, so such a process outside every slice held GPU
# memory unseen, in no escape and not in carve ps. One that computes and draws is in both
# lists and is one process.
stop_carved
start_carved 200ms off
CARVE_SIM_PROC_LISTS=graphics LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$BUILD/bench/memhog" \
    --label drawer --max 64 --hold 10 >"$work/drawer.log" 2>&1 & # both killed once checked
drawer=$!
CARVE_SIM_PROC_LISTS=compute,graphics LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$BUILD/bench/memhog" \
    --label both --max 64 --hold 10 >"$work/both.log" 2>&1 &
both=$!
tenants+=("$drawer" "$both")
for _ in $(seq 50); do
    grep -q holding "$work/drawer.log" && grep -q holding "$work/both.log" && break
    sleep 0.1
done
polls 2 # a poll begun after both hold their memory
seen=$("$CARVE" ps --json | python3 -c 'import json, sys
snap = json.load(sys.stdin)
procs = [p["pid"] for g in snap["gpus"] for p in g["processes"]]
escapes = [e["pid"] for e in snap["escapes"]]
print(*(f"{procs.count(int(a))}/{escapes.count(int(a))}" for a in sys.argv[1:]))' "$drawer" "$both")
kill "$drawer" "$both"
wait "$drawer" "$both" 2>/dev/null
check "a graphics-only process and a compute+graphics one outside every slice: each listed once and an escape once (listed/escapes: $seen)" \
    '[ "$seen" = "1/1 1/1" ]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
