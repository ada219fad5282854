#!/usr/bin/env bash
# run-carved.sh - carved on a real GPU: does the node daemon see, through the driver's NVML,
# what it sees on the simulated GPU? A carved of this script's own (private socket, state
# directory and port; GPU 0; poll every 500 ms) and bench/memhog as the tenant:
#  1. a tenant of `carve run --slice` is held to the slice's 2 GiB, and carve ps shows it with
#     NVML's memory for the slice, not over the cap;
#  2. a process that carve does not govern (memhog without libcarve) is an escape in carve ps
#     and in /metrics; /metrics carries the GPU's memory under DCGM's names;
#  3. a tenant that zeroes its slice's usage counters (tests/e2e/mem_forge) is caught from
#     NVML: the slice is over its cap and the process an escape of reason over_cap;
#  4. a slice holding memory with no kernel for idle_after (10 s, carved's least) is flagged idle, and with
#     idle_policy = reclaim its process is ended;
#  5. carved restarted while a tenant holds memory: the slice is listed again, the tenant
#     still runs and is still refused past the cap;
#  6. escape_policy = kill: an escape is killed within two polls;
#  7. start-ups: `carve run --slice` of /bin/true asked RATE a second (default 200) for RUNS
#     (default 2000), at most 16 in flight, then /bin/true alone at the same rate.
# Writes docs/results/<date>-carved-<gpu>.md; exits 1 when a check fails.
#
#   bash bench/gpu/run-carved.sh            (on the GPU machine, from a bare checkout)
#   SIMULATE=1 bash bench/gpu/run-carved.sh (a dry run of the script on the simulated GPU)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
RATE=${RATE:-200}
RUNS=${RUNS:-2000}
SIMULATE=${SIMULATE:-}
CARVE="$BUILD/bin/carve"
CARVED="$BUILD/bin/carved"
MEMHOG="$BUILD/bench/memhog"
FORGE="$BUILD/tests/e2e/mem_forge"
DRIVER="$BUILD/bench/carved_bench"
LOGS="$BUILD/gpu/carved-logs"

sim=()
if [ -n "$SIMULATE" ]; then
    make -j"$(nproc)" BUILD="$BUILD" product >/dev/null || { echo "run-carved: make failed" >&2; exit 1; }
    rm -rf "$LOGS"
    mkdir -p "$LOGS" docs/results
    gpu="simulated GPU" driver=sim slug=simulated date=$(date +%Y-%m-%d)
    sim=(--simulate)
    export CARVE_SIM_STATE=$LOGS/sim-state CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0
    # what a plain process on the simulated GPU loads instead of the driver
    export LD_LIBRARY_PATH=$BUILD/lib/carve/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PATH=$BUILD/lib/carve/sim/bin:$PATH # its nvidia-smi
else
    source bench/gpu/gpu-setup.sh run-carved "$LOGS"
fi
make -j"$(nproc)" BUILD="$BUILD" "$FORGE" "$DRIVER" >/dev/null || { echo "run-carved: make of $FORGE failed" >&2; exit 1; }
report="docs/results/$date-carved-$slug.md"
work=$(mktemp -d /tmp/carve-carved-bench.XXXXXX)
touch "$work/started"
export CARVE_SOCKET=$work/carved.sock
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
daemon=
pids=()

stop_daemon() {
    if [ -n "$daemon" ]; then
        kill -TERM "$daemon" 2>/dev/null
        wait "$daemon" 2>/dev/null
        daemon=
    fi
}
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    "$CARVE" slice delete g-held >/dev/null 2>&1
    "$CARVE" slice delete g-forge >/dev/null 2>&1
    stop_daemon
    # the slices outlive carved by design (the config's g-idle too): this run's go
    find /dev/shm -maxdepth 1 -name 'carve.d.g-*' -newer "$work/started" -delete 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# start_daemon ESCAPE_POLICY: carved with this run's config
start_daemon() {
    cat >"$work/carved.conf" <<CONF
poll_interval = 500ms
idle_after = 10s
escape_policy = $1
[slice g-idle]
memory = 1GiB
idle_policy = reclaim
CONF
    "$CARVED" "${sim[@]}" --config "$work/carved.conf" --socket "$CARVE_SOCKET" --state-dir "$work/state" \
        --listen "127.0.0.1:$port" >>"$LOGS/carved.log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do
        "$CARVE" slice list >/dev/null 2>&1 && return 0
        kill -0 "$daemon" 2>/dev/null || break
        sleep 0.1
    done
    echo "run-carved: carved did not start:" >&2
    tail -n 20 "$LOGS/carved.log" >&2
    exit 1
}

# shellcheck source=bench/gpu/rows.bash
. bench/gpu/rows.bash
verdict() { [ "$1" -eq 0 ] && echo PASS || echo FAIL; }
# json_check JSON PYTHON: PYTHON's expression on j (the parsed JSON) is true
json_check() { python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$1" 2>/dev/null; }
# wait_for N SECONDS COMMAND...: COMMAND succeeds within SECONDS (tried every 0.25 s)
wait_for() {
    local tries=$(($1 * 4))
    shift
    for _ in $(seq "$tries"); do
        "$@" && return 0
        sleep 0.25
    done
    return 1
}
# ends_within SECONDS LOG CMD...: CMD (a memhog) in the background; once it holds its memory,
# waits up to SECONDS for carved to end it. Sets took (seconds); 0 when a signal ended it.
ends_within() {
    local limit=$1 log=$2 pid t0 rc
    shift 2
    "$@" >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
    if ! wait_for 20 grep -q holding "$log"; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        took="never (it did not hold its memory: $(tail -n 2 "$log" | tr '\n' ' '))"
        return 2
    fi
    t0=$(date +%s.%N)
    wait_for "$limit" sh -c '! kill -0 "$1" 2>/dev/null' _ "$pid"
    rc=$?
    took=$(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$t0")
    wait "$pid" 2>/dev/null
    status=$?
    # ended by a signal (carved's), not by itself
    [ "$rc" -eq 0 ] && [ "$status" -ge 128 ] && return 0
    took="$took (exit status $status)"
    return 1
}
slice_get() { # slice_get NAME EXPR: EXPR on s, slice NAME of carve ps --json (d: its GPU 0)
    "$CARVE" ps --json | python3 -c 'import json,sys
s=[x for x in json.load(sys.stdin)["slices"] if x["name"]==sys.argv[1]]
if s:
    s=s[0]; d=s["devices"][0]; print(eval(sys.argv[2]))' "$1" "$2"
}
is_escape() { # is_escape PID [REASON]
    "$CARVE" ps --json | python3 -c 'import json,sys; e=[x for x in json.load(sys.stdin)["escapes"] if x["pid"]==int(sys.argv[1])]; sys.exit(0 if e and (len(sys.argv)<3 or e[0].get("reason")==sys.argv[2]) else 1)' "$@"
}
metrics() { curl -s --max-time 10 "http://127.0.0.1:$port/metrics"; }
mib() { echo $(($1 >> 20)); }

start_daemon report
echo "== carved on $gpu, driver $driver"

# 1. a capped tenant, seen by carve ps with NVML's memory
echo "== 1. a tenant in a 2 GiB slice"
"$CARVE" slice create g-held --memory 2GiB >/dev/null || row "carve slice create g-held" "failed" FAIL
"$CARVE" run "${sim[@]}" --slice g-held -- "$MEMHOG" --label held --step 128 --max 8192 --hold 45 >"$LOGS/held.log" 2>&1 &
held=$!
pids+=("$held")
wait_for 20 grep -q holding "$LOGS/held.log"
got=$(sed -n 's/.*got \([0-9]*\) MiB.*/\1/p' "$LOGS/held.log")
sees=$(sed -n 's/.*at start: total \([0-9]*\) MiB.*/\1/p' "$LOGS/held.log" | head -n1)
[ -n "$got" ] && [ "$got" -le 2048 ] && [ "$got" -ge 1024 ]
rc=$?
row "a tenant of carve run --slice (2 GiB) allocates until refused" "sees ${sees:-?} MiB, got ${got:-?} MiB" "$(verdict $rc)"
sleep 1.2 # two polls
# what NVML itself lists, beside the tenant's pid here: in a PID namespace (a container) the
# two differ, and carved cannot match them (docs/carved.md's limits)
apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1 | paste -sd ';')
row "NVML's compute processes (nvidia-smi --query-compute-apps), the tenant's pid here" \
    "${apps:-none}; the tenant: pid $(pgrep -f -- '--label held' | tr '\n' ' ')(carve run $held)" INFO
used_nvml=$(slice_get g-held 'd["memory_used_nvml"]')
over=$(slice_get g-held 'd["over_cap"]')
[ -n "$used_nvml" ] && [ "$used_nvml" -gt 0 ] && [ "$over" = False ]
rc=$?
row "carve ps: the slice's memory as NVML counts it, within the cap" "memory_used_nvml $(mib "${used_nvml:-0}") MiB, over_cap $over" "$(verdict $rc)"

# 2. an escape, and /metrics
echo "== 2. an escape and the metrics"
env -u LD_PRELOAD "$MEMHOG" --label escape --max 512 --hold 8 >"$LOGS/escape.log" 2>&1 &
escape=$!
pids+=("$escape")
wait_for 20 grep -q holding "$LOGS/escape.log"
wait_for 5 is_escape "$escape"
rc=$?
row "a process outside every slice is an escape in carve ps" "pid $escape" "$(verdict $rc)"
m=$(metrics)
grep -q '^carve_gpu_escapes{.*} [1-9]' <<<"$m"
rc=$?
row "/metrics counts it (carve_gpu_escapes)" "$(grep '^carve_gpu_escapes{' <<<"$m" | head -n1)" "$(verdict $rc)"
fb=$(grep -E '^DCGM_FI_DEV_FB_USED\{' <<<"$m" | head -n1)
[ -n "$fb" ] && [ "$(awk '{print $NF}' <<<"$fb" | cut -d. -f1)" -gt 0 ]
rc=$?
row "/metrics: the GPU's memory under DCGM's name" "${fb:-none}" "$(verdict $rc)"
wait "$escape" 2>/dev/null

# 3. a tenant that forges its counters
echo "== 3. a tenant that zeroes its usage counters"
"$CARVE" slice create g-forge --memory 1GiB >/dev/null
"$CARVE" run "${sim[@]}" --slice g-forge -- "$FORGE" 512 6 >"$LOGS/forge.log" 2>&1 &
forger=$!
pids+=("$forger")
wait_for 20 grep -q forged "$LOGS/forge.log"
wait_for 5 is_escape "$forger" over_cap
rc=$?
row "a forger is caught from NVML: over its cap, an escape of reason over_cap" \
    "$(grep -m1 forged "$LOGS/forge.log"); NVML $(mib "$(slice_get g-forge 'd["memory_used_nvml"]' || echo 0)") MiB for a 1024 MiB cap" "$(verdict $rc)"
wait "$forger" 2>/dev/null
"$CARVE" slice delete g-forge >/dev/null

# 4. idle: flagged, and reclaimed where the slice's policy says so
echo "== 4. idle slices"
ends_within 20 "$LOGS/idle.log" "$CARVE" run "${sim[@]}" --slice g-idle -- "$MEMHOG" --label idle --max 256 --hold 30
rc=$?
row "a slice with memory and no kernel for 10 s, idle_policy reclaim: its process is ended" \
    "ended $took s after it began to hold" "$(verdict $rc)"
flagged=$(slice_get g-held '(s["idle"], s["idle_seconds"], s["policy_idle"])')
[[ "$flagged" == "(True, "*"'report')" ]]
rc=$?
row "the held slice (no kernel since its allocations) is flagged idle, policy report, not ended" "(idle, idle_seconds, policy): ${flagged:-?}; pid $held alive: $(kill -0 "$held" 2>/dev/null && echo yes || echo no)" "$(verdict $rc)"
wait "$held" 2>/dev/null

# 5. restart
echo "== 5. carved restarted under a running tenant"
"$CARVE" run "${sim[@]}" --slice g-held -- "$MEMHOG" --label through --step 128 --max 1024 --hold 10 >"$LOGS/through.log" 2>&1 &
through=$!
pids+=("$through")
wait_for 20 grep -q holding "$LOGS/through.log"
stop_daemon
start_daemon report
wait_for 5 sh -c '"$1" slice list 2>/dev/null | grep -q g-held' _ "$CARVE"
rc=$?
row "the slice is listed again after the restart" "$("$CARVE" slice list 2>&1 | grep g-held | tr -s ' ')" "$(verdict $rc)"
kill -0 "$through" 2>/dev/null
rc=$?
row "the tenant ran on through the restart" "pid $through" "$(verdict $rc)"
out=$("$CARVE" run "${sim[@]}" --slice g-held -- "$MEMHOG" --label after --step 128 --max 8192 --hold 0 2>&1)
after=$(sed -n 's/.*got \([0-9]*\) MiB.*/\1/p' <<<"$out")
[ -n "$after" ] && [ "$after" -le 1024 ]
rc=$?
row "a second tenant after the restart gets only what is left of the cap" "got ${after:-?} MiB (the first holds 1024 of 2048)" "$(verdict $rc)"
wait "$through" 2>/dev/null

# 6. escape_policy = kill
echo "== 6. escape_policy = kill"
stop_daemon
start_daemon kill
ends_within 5 "$LOGS/victim.log" env -u LD_PRELOAD "$MEMHOG" --label victim --max 256 --hold 30
rc=$?
row "an escape is killed (poll 500 ms)" "$took s after it held memory" "$(verdict $rc)"
stop_daemon
start_daemon report

# 7. start-ups
echo "== 7. start-ups: $RATE/s asked, $RUNS runs"
startups=$("$DRIVER" runs "$RATE" "$RUNS" 16 "$(realpath "$CARVE")" run "${sim[@]}" --quiet --slice g-held -- /bin/true)
echo "$startups"
alone=$("$DRIVER" runs "$RATE" "$RUNS" 16 /bin/true)
rate=$(sed -n 's/.*achieved_per_second=\([0-9.]*\).*/\1/p' <<<"$startups")
errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$startups")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.98 * float(sys.argv[2]) and sys.argv[3] == '0' else 1)" "${rate:-0}" "$RATE" "${errors:-1}"
rc=$?
row "carve run --slice start-ups, $RATE/s asked, at most 16 in flight" "$(cut -d' ' -f3- <<<"$startups")" "$(verdict $rc)"
row "/bin/true alone at the same rate (the machine's own ceiling)" "$(cut -d' ' -f3- <<<"$alone")" INFO
"$CARVE" slice delete g-held >/dev/null

# what carved said of NVML's pids: whether it runs in a PID namespace of its own, whether
# the utilisation samples named the listed processes, escapes it would not kill
pid_words=$(grep -hE "PID namespace of its own|utilisation samples name no process|is not a CUDA process here" \
    "$LOGS/carved.log" | sed 's/^[^ ]* carved: //' | sort -u | paste -sd ';')
[ -n "$pid_words" ] || pid_words="nothing said: NVML's pids are carved's own"
row "carved on NVML's pids (its PID namespace, samples that name no listed process, escapes not killed)" \
    "$pid_words" INFO

{
    echo "# carved on $gpu ($date)"
    echo
    echo "Driver $driver; $(nproc) CPUs. Command: \`${SIMULATE:+SIMULATE=1 }bash bench/gpu/run-carved.sh\` (RATE=$RATE, RUNS=$RUNS),"
    echo "at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown). carved polls every 500 ms; idle_after 10 s."
    echo
    echo "| check | result | verdict |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "carved's log:"
    echo
    echo '```'
    tail -n 30 "$LOGS/carved.log"
    echo '```'
} >"$report"
echo "== report: $report ($failures failed)"
[ "$failures" -eq 0 ]
