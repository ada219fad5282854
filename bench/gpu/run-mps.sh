#!/usr/bin/env bash
# run-mps.sh - on a real GPU: does `carve run --mode mps` run its clients under one MPS
# daemon of its own, hold them to their memory cap and thread share, and stop the daemon?
#
#   bash bench/gpu/run-mps.sh        (from a bare checkout, on the GPU machine; GPU 0)
#
# Checks, each a row of the report:
#  1. MPS's own pinned-memory limit in the form carve writes ("0=2048M"): bench/memhog with
#     the client variables carve sets, without libcarve, under this script's daemon.
#  2. Memory cap: memhog in `carve run --mode mps --memory 4GiB` sees 4096 MiB and is
#     refused at the cap.
#  3. Two concurrent clients (--compute 30% and 70%, bench/compute_load big kernels, SECS
#     seconds): both end well, the MPS control daemon lists one server and both clients
#     while they run, and their shares of the solo rate are near 30 and 70 (+-10 points:
#     MPS limits SMs, not time; reported, not enforced).
#  4. One client at 30% alone: its share of the solo rate (MPS caps it even on an idle GPU).
#  5. The daemon is gone after the last client, also after a client killed with SIGKILL.
# Runs in its own run directory (CARVE_MPS_DIR under /tmp), so the node's MPS, if any, is
# not touched; the GPU's compute mode is read for the report and never changed. A GPU in
# EXCLUSIVE_PROCESS mode with another MPS server on it cannot run a second one: the report
# then shows the daemon's error. Writes docs/results/<date>-mps-<gpu>.md; exits 1 when a
# check fails (shares only print MISS).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
SECS=${SECS:-15}
CARVE="$BUILD/bin/carve"
LOAD="$BUILD/bench/compute_load"
MEMHOG="$BUILD/bench/memhog"
LOGS="$BUILD/gpu/mps-logs"

if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "run-mps: nvidia-cuda-mps-control is not in PATH (it comes with the driver's utilities)" >&2
    exit 2
fi
source bench/gpu/gpu-setup.sh run-mps "$LOGS"
report="docs/results/$date-mps-$slug.md"
CARVE_MPS_DIR=$(mktemp -d /tmp/carve-mps-bench.XXXXXX)
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | xargs)
# by UUID: carve picks the GPU from it, and the solo runs use the same one
export CARVE_MPS_DIR CUDA_VISIBLE_DEVICES=$uuid
compute_mode=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i 0 | xargs)
pipe=$CARVE_MPS_DIR/mps-$uuid/pipe
control() { CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control; }
daemon_pid() { cat "$pipe/nvidia-cuda-mps-control.pid" 2>/dev/null; }
daemon_gone() { local p; p=$(daemon_pid); [ -z "$p" ] || ! kill -0 "$p" 2>/dev/null; }

# shellcheck source=bench/gpu/rows.bash
. bench/gpu/rows.bash
share() { grep '"total_share"' "$1" | tail -n1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_share"])' 2>/dev/null || echo -; }

# MPS's thread share caps the SMs a client's kernels may use, and the device tells the
# client so (fewer SMs): compute_load's default grid (2 blocks an SM it is told of) then
# shrank with the share and each kernel did less in the same 10 ms, so a 30% client got 100%
# of the solo rate (2026-11-28, H200). Every kernel here is a grid that fills each of the
# GPU's own SMs (16 blocks of 128 threads), 4 times over, and is calibrated as such.
json_field() { python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], 0))' "$1"; }
sms=$("$LOAD" --calibrate | json_field sms)
grid=$((${sms:-1} * 16 * 4))
ipu=$("$LOAD" --calibrate --grid "$grid" | json_field iters_per_us)
ipu_arg=(--grid "$grid") # the simulated GPU (a dry run of this script) reports 0 and needs none
python3 -c "import sys; sys.exit(float(sys.argv[1]) <= 0)" "$ipu" 2>/dev/null && ipu_arg+=(--iters-per-us "$ipu")
load() { "$LOAD" --kind big --seconds "$SECS" "${ipu_arg[@]}" "$@"; }
client_sms() { grep '"total_share"' "$1" | tail -n1 | json_field sms 2>/dev/null || echo -; }

# 1. MPS's own limit, with a daemon of this script's (the same kind of directories carve uses)
echo "== 1. MPS's pinned-memory limit alone (0=2048M), no libcarve"
own=$(mktemp -d /tmp/carve-mps-own.XXXXXX)
mkdir -p "$own/pipe" "$own/log"
if CUDA_VISIBLE_DEVICES=$uuid CUDA_MPS_PIPE_DIRECTORY=$own/pipe CUDA_MPS_LOG_DIRECTORY=$own/log \
    nvidia-cuda-mps-control -d; then
    sleep 1
    CUDA_VISIBLE_DEVICES=$uuid CUDA_MPS_PIPE_DIRECTORY=$own/pipe CUDA_MPS_LOG_DIRECTORY=$own/log \
        CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M "$MEMHOG" --max 8192 --hold 0 >"$LOGS/own-limit.log" 2>&1
    got=$(sed -n 's/.*got \([0-9]*\) MiB.*/\1/p' "$LOGS/own-limit.log")
    [ -n "$got" ] && [ "$got" -le 2048 ] && [ "$got" -ge 1024 ]
    ok=$?
    row "MPS alone, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M" "memhog got ${got:-?} MiB" "$([ "$ok" -eq 0 ] && echo PASS || echo FAIL)"
    own_pid=$(cat "$own/pipe/nvidia-cuda-mps-control.pid" 2>/dev/null)
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$own/pipe nvidia-cuda-mps-control >/dev/null 2>&1
    # gone before carve's own daemon starts on the same GPU (up to 10 s)
    for _ in $(seq 50); do
        { [ -n "$own_pid" ] && kill -0 "$own_pid" 2>/dev/null; } || break
        sleep 0.2
    done
    [ -n "$own_pid" ] || sleep 2
else
    row "MPS alone" "nvidia-cuda-mps-control -d failed (compute mode $compute_mode)" FAIL
fi
rm -rf "$own"

# 2. the cap
echo "== 2. memory cap under --mode mps"
"$CARVE" run --mode mps --memory 4GiB -- "$MEMHOG" --max 8192 --hold 0 >"$LOGS/cap.log" 2>&1
rc=$?
sees=$(sed -n 's/.*when full: total \([0-9]*\) MiB.*/\1/p' "$LOGS/cap.log")
grep -q 'out of memory on GPU 0: cap 4 GiB' "$LOGS/cap.log" && [ "$rc" -eq 0 ] && [ "$sees" = 4096 ]
ok=$?
row "carve run --mode mps --memory 4GiB memhog" "status $rc, sees ${sees:-?} MiB, OOM line: $(grep -c 'out of memory' "$LOGS/cap.log")" "$([ "$ok" -eq 0 ] && echo PASS || echo FAIL)"
row "daemon stopped after the client" "pid file: $(daemon_pid || true)" "$(daemon_gone && echo PASS || echo FAIL)"

# 3. solo, then two concurrent clients
echo "== 3. solo rate, then 30% and 70% at once"
load --label solo >"$LOGS/solo.log" 2>&1
solo=$(share "$LOGS/solo.log")
"$CARVE" run --quiet --mode mps --compute 30% -- "$LOAD" --kind big --seconds "$SECS" "${ipu_arg[@]}" --label c30 >"$LOGS/c30.log" 2>&1 &
p30=$!
"$CARVE" run --quiet --mode mps --compute 70% -- "$LOAD" --kind big --seconds "$SECS" "${ipu_arg[@]}" --label c70 >"$LOGS/c70.log" 2>&1 &
p70=$!
sleep $((SECS / 2))
servers=$(echo get_server_list | control 2>&1 | tr '\n' ' ')
server=$(echo "$servers" | awk '{print $1}')
clients=$( [ -n "$server" ] && echo "get_client_list $server" | control 2>&1 | tr '\n' ' ')
daemons=$(find "$CARVE_MPS_DIR" -name nvidia-cuda-mps-control.pid | wc -l)
# where NVML lists the MPS server and its clients (carved takes the server, by its file, for
# no escape; docs/carved.md): pid:command of each list, from outside any slice
nvml_names() { # nvml_names LIST
    local pid
    for pid in $("$BUILD/tests/e2e/nvml_list" "$1" 2>/dev/null); do
        printf '%s:%s ' "$pid" "$(ps -o comm= -p "$pid" 2>/dev/null || echo '?')"
    done
}
nvml_compute=$(nvml_names v3)
nvml_mps=$(nvml_names mps-v3)
wait "$p30"; r30=$?
wait "$p70"; r70=$?
row "two clients end well" "status $r30 and $r70" "$([ "$r30" -eq 0 ] && [ "$r70" -eq 0 ] && echo PASS || echo FAIL)"
nclients=$(echo "$clients" | wc -w)
row "one daemon, one server, both clients while they ran" "$daemons daemon(s); servers: ${servers:-none}; clients: ${clients:-none}" \
    "$([ "$daemons" -eq 1 ] && [ "$(echo "$servers" | wc -w)" -eq 1 ] && [ "$nclients" -ge 2 ] && echo PASS || echo FAIL)"
s30=$(share "$LOGS/c30.log")
s70=$(share "$LOGS/c70.log")
verdict=$(python3 -c "import sys; s,a,b=map(float,sys.argv[1:]); print('PASS' if abs(100*a/s-30)<=10 and abs(100*b/s-70)<=10 else 'MISS')" "$solo" "$s30" "$s70" 2>/dev/null || echo MISS)
row "SMs each client's device reports (30%, 70%; the GPU has $sms)" "$(client_sms "$LOGS/c30.log"), $(client_sms "$LOGS/c70.log")" INFO
row "shares of the solo rate at 30%/70% together" "$(python3 -c "import sys; s,a,b=map(float,sys.argv[1:]); print(f'{100*a/s:.1f} / {100*b/s:.1f} (solo raw {s})')" "$solo" "$s30" "$s70" 2>/dev/null || echo "$s30 / $s70 of $solo")" "$verdict"
row "daemon stopped after the last client" "pid file: $(daemon_pid || true)" "$(daemon_gone && echo PASS || echo FAIL)"
row "NVML's lists while the two clients ran (pid:command)" "compute: ${nvml_compute:-none}; MPS: ${nvml_mps:-none}; server ${server:-?}" INFO

# 4. 30% alone
echo "== 4. 30% alone"
"$CARVE" run --quiet --mode mps --compute 30% -- "$LOAD" --kind big --seconds "$SECS" "${ipu_arg[@]}" --label a30 >"$LOGS/a30.log" 2>&1
a30=$(share "$LOGS/a30.log")
verdict=$(python3 -c "import sys; s,a=map(float,sys.argv[1:]); print('PASS' if abs(100*a/s-30)<=10 else 'MISS')" "$solo" "$a30" 2>/dev/null || echo MISS)
row "30% alone: share of the solo rate" "$(python3 -c "import sys; s,a=map(float,sys.argv[1:]); print(f'{100*a/s:.1f}')" "$solo" "$a30" 2>/dev/null || echo "$a30")" "$verdict"

# 5. a client killed with SIGKILL
echo "== 5. a SIGKILLed client"
"$CARVE" run --quiet --mode mps --compute 50% -- sh -c 'echo $$ >"$0/victim.pid"; exec "$@"' \
    "$LOGS" "$LOAD" --kind big --seconds 60 "${ipu_arg[@]}" >"$LOGS/killed.log" 2>&1 &
pk=$!
sleep 5
kill -KILL "$(cat "$LOGS/victim.pid")"
wait "$pk"
rk=$?
sleep 1
row "carve run of a SIGKILLed client" "status $rk (137 expected)" "$([ "$rk" -eq 137 ] && echo PASS || echo FAIL)"
row "daemon stopped after the killed client" "pid file: $(daemon_pid || true)" "$(daemon_gone && echo PASS || echo FAIL)"

{
    echo "# carve run --mode mps on $gpu ($date)"
    echo
    echo "Driver $driver; GPU 0 ($uuid), compute mode $compute_mode (read, not changed)."
    echo "Command: \`bash bench/gpu/run-mps.sh\` (SECS=$SECS); run directory $CARVE_MPS_DIR."
    echo "compute_load big kernels (10 ms spin loops, grids of $grid blocks of 128 threads), $ipu"
    echo "iterations/us calibrated alone."
    echo
    echo "| check | result | verdict |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Logs: $LOGS (not kept in the repository). MPS's control log: $CARVE_MPS_DIR/mps-$uuid/log/control.log."
    echo
    echo '```'
    tail -n 20 "$CARVE_MPS_DIR/mps-$uuid/log/control.log" 2>/dev/null
    echo '```'
} >"$report"
echo "== report: $report ($failures failed)"
[ "$failures" -eq 0 ]
