#!/usr/bin/env bash
# top.sh - `carve top`: bad options and no carved give a clear error; --once renders a saved
# snapshot (two GPUs, an idle slice, an escape) with the right bars, idle times and sort
# orders, and long slice names whole where the width allows (else cut around `...'); --json gives the snapshot back; against carved --simulate on a private socket
# --once and --json show a tenant and an escape; and, when tmux is installed, the live view
# draws, re-sorts on `s`, shows a slice made while it runs, and quits on `q`.
#
#   BUILD=build bash tests/e2e/top.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
CARVE=$(pwd)/$CARVE # tmux starts carve top in another directory
MEMHOG=$BUILD/bench/memhog
export CARVE_SIM_MEMORY=8GiB CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0
tmux_socket=carve-top-test-$$
cleanup_extra() { tmux -L "$tmux_socket" kill-server 2>/dev/null; }

# 1. help, bad options, no carved
out=$("$CARVE" top --help)
check "carve top --help names the keys and options" '[[ $out == *"q quits"* ]] && [[ $out == *--once* ]] && [[ $out == *--json* ]]'
for args in "--sort size" "--interval 0" "--interval x" "--once --json" "--width 5" "extra"; do
    # shellcheck disable=SC2086  # each case is several words
    err=$("$CARVE" top $args 2>&1)
    rc=$?
    check "carve top $args: exit 2 with a reason ($err)" '[ $rc -eq 2 ] && [[ $err == *"carve top: "* ]] && [[ $err == *"see carve top --help"* ]]'
done
err=$("$CARVE" top --once 2>&1)
rc=$?
check "no carved: --once exits 1 and says where it looked ($err)" '[ $rc -eq 1 ] && [[ $err == *"carved is not running"* ]] && [[ $err == *"$CARVE_SOCKET"* ]]'
err=$("$CARVE" top --once </dev/null >/dev/null 2>&1; "$CARVE" top </dev/null 2>&1)
rc=$?
check "without a terminal the live view says to use --once ($err)" '[ $rc -eq 2 ] && [[ $err == *"--once"* ]]'

# 2. a saved snapshot
GiB=1073741824
cat >"$work/snap.json" <<EOF
{"version": 1, "node": "sim-node-1", "time": 1763900000.5, "simulated": true,
 "gpus": [
  {"index": 0, "uuid": "GPU-0", "name": "NVIDIA H100 80GB HBM3", "memory_total": $((80 * GiB)),
   "memory_used": $((7 * GiB)), "utilization": 41,
   "processes": [
    {"pid": 1001, "used_memory": $((4 * GiB)), "sm_util": 30, "slice": "train", "user": "alice", "command": "python"},
    {"pid": 1002, "used_memory": $((3 * GiB)), "sm_util": 0, "slice": "notebook", "user": "carol", "command": "jupyter"}]},
  {"index": 1, "uuid": "GPU-1", "name": "NVIDIA H100 80GB HBM3", "memory_total": $((80 * GiB)),
   "memory_used": $((14 * GiB)), "utilization": 63,
   "processes": [
    {"pid": 2001, "used_memory": $((12 * GiB)), "sm_util": 55, "slice": "infer", "user": "bob", "command": "vllm"},
    {"pid": 4242, "used_memory": $((2 * GiB)), "sm_util": 8, "slice": null, "user": "mallory", "command": "rogue.py"},
    {"pid": 4343, "used_memory": $((32 * 1048576)), "sm_util": 0, "slice": null, "user": "bob", "command": "nvidia-cuda-mps", "mps_server": true}]}],
 "slices": [
  {"name": "train", "owner": "alice", "uid": 1000, "created": 1, "origin": "config",
   "devices": [{"index": 0, "uuid": "GPU-0", "memory_cap": $((8 * GiB)), "memory_used": $((4 * GiB)),
                "memory_peak": 0, "oom_denials": 2, "compute": "30%", "priority": "batch",
                "compute_share": 28.5, "held_seconds_total": 1, "launches_total": 9}],
   "processes": [{"pid": 1001, "user": "alice", "command": "python", "memory_used": $((4 * GiB))}],
   "idle": false, "idle_seconds": 0.0, "idle_gpu_hours": 0.0, "policy_idle": "report"},
  {"name": "notebook", "owner": "carol", "uid": 1002, "created": 1, "origin": "api",
   "devices": [{"index": 0, "uuid": "GPU-0", "memory_cap": $((4 * GiB)), "memory_used": $((3 * GiB)),
                "memory_peak": 0, "oom_denials": 0, "compute": "", "priority": "normal",
                "compute_share": 0.0, "held_seconds_total": 0, "launches_total": 1}],
   "processes": [{"pid": 1002, "user": "carol", "command": "jupyter", "memory_used": $((3 * GiB))}],
   "idle": true, "idle_seconds": 7260.0, "idle_gpu_hours": 1.5, "policy_idle": "report"},
  {"name": "infer", "owner": "bob", "uid": 1001, "created": 1, "origin": "config",
   "devices": [{"index": 1, "uuid": "GPU-1", "memory_cap": $((16 * GiB)), "memory_used": $((12 * GiB)),
                "memory_peak": 0, "oom_denials": 0, "compute": "40%+", "priority": "latency",
                "compute_share": 52.0, "held_seconds_total": 0, "launches_total": 4}],
   "processes": [{"pid": 2001, "user": "bob", "command": "vllm", "memory_used": $((12 * GiB))}],
   "idle": false, "idle_seconds": 0.0, "idle_gpu_hours": 0.0, "policy_idle": "report"}],
 "escapes": [{"gpu": 1, "uuid": "GPU-1", "pid": 4242, "user": "mallory", "command": "rogue.py",
              "used_memory": $((2 * GiB)), "action": "reported"}],
 "totals": {"escapes": 3, "escapes_killed": 1, "idle_reclaims": 0, "oom_denials": 2}}
EOF
frame=$("$CARVE" top --once --input "$work/snap.json" --width 120)
echo "$frame" >"$work/frame.txt"
# at width 120 a slice's bar has 18 cells: 4/8 GiB is 9, 3/4 and 12/16 GiB are 13.5 -> 14
bar() { printf '[%s%s]' "$(printf "%${1}s" '' | tr ' ' '#')" "$(printf "%$((18 - $1))s" '' | tr ' ' '.')"; }
check "title names the node, the simulated GPU and the sort key" 'grep -q "^carve top - sim-node-1 (simulated GPU) - .* - sort: name$" "$work/frame.txt"'
check "counts: 2 GPUs, 3 slices, 5 processes (an MPS server among them), 1 escape" 'grep -qx "2 GPUs, 3 slices, 5 processes, 1 escape" "$work/frame.txt"'
check "GPU 1's line: utilisation 63%, 14 GiB of 80 GiB" 'grep -q "^GPU 1  NVIDIA H100 80GB HBM3 *util  63%  \[.*\] 14 GiB / 80 GiB  3 procs$" "$work/frame.txt"'
check "train: half-full bar, 4 GiB / 8 GiB, share 28.5% of 30%" 'grep -qF "  train            alice          1  $(bar 9) 4 GiB / 8 GiB" "$work/frame.txt" && grep -q "^  train .* 28.5%     30%  0s$" "$work/frame.txt"'
check "notebook: 3/4 bar and IDLE for 2h01m" 'grep -qF "  notebook         carol          1  $(bar 14) 3 GiB / 4 GiB" "$work/frame.txt" && grep -q "^  notebook .*IDLE 2h01m$" "$work/frame.txt"'
check "infer under GPU 1 with a 12/16 bar and 52.0% of 40%+" 'sed -n "/^GPU 1/,/^$/p" "$work/frame.txt" | grep -qF "  infer            bob            1  $(bar 14) 12 GiB / 16 GiB" && grep -q "^  infer .* 52.0%    40%+  0s$" "$work/frame.txt"'
check "an MPS server: listed as one, not as an escape" 'grep -q "^    1     4343 bob        (mps server) .* nvidia-cuda-mps$" "$work/frame.txt" && ! grep -q "pid 4343" "$work/frame.txt"'
check "the escape: listed as a process with no slice, and under ESCAPES" 'grep -q "^    1     4242 mallory    (escape) .* rogue.py$" "$work/frame.txt" && grep -qx "ESCAPES (GPU processes in no slice, or past their slice'"'"'s cap): 1" "$work/frame.txt" && grep -qx "  GPU 1 pid 4242 user mallory command rogue.py memory 2 GiB: reported" "$work/frame.txt"'
sed 's/"action": "reported"}/"action": "reported", "reason": "over_cap"}/' "$work/snap.json" >"$work/over.json"
check "an escape past its slice's cap says so" \
    '"$CARVE" top --once --input "$work/over.json" --width 120 | grep -qx "  GPU 1 pid 4242 user mallory command rogue.py memory 2 GiB: reported (its slice is past its cap)"'
check "carved's totals" 'grep -qx "carved'"'"'s totals: 3 escapes seen, 1 killed, 0 idle reclaims" "$work/frame.txt"'
check "the slices' refusals, on a line of their own" 'grep -qx "allocations refused at a cap by the slices there now: 2" "$work/frame.txt"'
check "no line is wider than --width" '[ "$(awk "length > 120" "$work/frame.txt" | wc -l)" -eq 0 ]'
# names longer than 16 (carve run's COMMAND-PID-RANDOM): both were cut to `compute_load-163'
sed -e 's/"train"/"compute_load-1637-0a1b2c3d"/g' -e 's/"notebook"/"compute_load-1638-99ffee00"/g' \
    "$work/snap.json" >"$work/long.json"
"$CARVE" top --once --input "$work/long.json" --width 140 >"$work/long140.txt"
check "--width 140: the long names whole, on the slices' and the processes' lines" \
    '[ "$(grep -c "^  compute_load-1637-0a1b2c3d alice  *1  \[" "$work/long140.txt")" -eq 1 ] &&
     [ "$(grep -c "^  compute_load-1638-99ffee00 carol  *1  \[" "$work/long140.txt")" -eq 1 ] &&
     grep -q "^    0     1001 alice      compute_load-1637-0a1b2c3d  *4 GiB" "$work/long140.txt" &&
     grep -q "^  SLICE                      OWNER " "$work/long140.txt"'
"$CARVE" top --once --input "$work/long.json" --width 100 >"$work/long100.txt"
cut=$(sed -n '/^GPU 0/,/^$/p' "$work/long100.txt" | awk '$1 ~ /^comput/ {printf "%s ", $1}')
check "--width 100: the names cut around ... keep their ends, two texts ($cut)" \
    '[ "$cut" = "compute...a1b2c3d compute...9ffee00 " ]'
check "--width 100: no line wider than 100" '[ "$(awk "length > 100" "$work/long100.txt" | wc -l)" -eq 0 ]'
order() { "$CARVE" top --once --input "$work/snap.json" --sort "$1" | sed -n '/^GPU 0/,/^$/p' | awk '$1 ~ /^(train|notebook)$/ {printf "%s ", $1}'; }
for want in "name:notebook train " "memory:train notebook " "share:train notebook " "idle:notebook train "; do
    got=$(order "${want%%:*}")
    check "--sort ${want%%:*}: GPU 0's slices in order '${want#*:}' (got '$got')" '[ "$got" = "${want#*:}" ]'
done
"$CARVE" top --json --input "$work/snap.json" >"$work/snap-out.json"
check "--json --input gives the snapshot back unchanged" 'python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))" "$work/snap.json" "$work/snap-out.json"'
echo '{"version": 1, "node": 5, "gpus": [7, {"index": "x", "processes": 3}], "slices": [null, {"devices": "no"}], "escapes": {}}' >"$work/odd.json"
check "a snapshot of odd types renders without a crash" '"$CARVE" top --once --input "$work/odd.json" >/dev/null'
echo '{"gpus": [' >"$work/broken.json"
err=$("$CARVE" top --once --input "$work/broken.json" 2>&1)
rc=$?
check "a broken file: exit 1 naming the file and line ($err)" '[ $rc -eq 1 ] && [[ $err == *"broken.json:"* ]]'
err=$("$CARVE" top --once --input "$work/missing.json" 2>&1)
rc=$?
# was "missing.json:-1: unable to open ...": no line -1
check "a missing file: exit 1, its name and why, no line number ($err)" \
    '[ $rc -eq 1 ] && [[ $err == "carve top: unable to open $work/missing.json: No such file or directory"* ]]'

# a directory read as an empty file: "'[' or '{' expected near end of file"
err=$("$CARVE" top --once --input "$work" 2>&1)
rc=$?
check "a directory: exit 1, it is a directory ($err)" \
    '[ $rc -eq 1 ] && [[ $err == "carve top: $work is a directory"* ]]'

# 3. against carved --simulate
printf 'poll_interval = 200ms\nidle_after = 10s\n[slice shared]\nmemory = 1GiB\n' >"$work/carved.conf"
"$CARVED" --simulate --config "$work/carved.conf" --socket "$CARVE_SOCKET" --state-dir "$work/state" \
    --listen off >>"$work/carved.log" 2>&1 &
daemon=$!
for _ in $(seq 50); do
    "$CARVE" top --once >/dev/null 2>&1 && break
    sleep 0.1
done
"$CARVE" slice create mine --memory 768MiB --compute 30% >/dev/null
"$CARVE" run --simulate --slice shared -- "$MEMHOG" --label held --max 256 --hold 4 >"$work/held.log" 2>&1 &
held=$!
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$MEMHOG" --label escape --max 128 --hold 4 >"$work/escape.log" 2>&1 &
escape=$!
# both hold their memory, then carved polls once more (a fixed 1.5 s was short on a loaded
# machine: the slice showed no process yet)
for _ in $(seq 100); do
    grep -q holding "$work/held.log" && grep -q holding "$work/escape.log" && break
    sleep 0.1
done
sleep 0.5
"$CARVE" top --once --width 120 >"$work/live.txt" 2>&1
check "live --once: slice shared with 1 process and a 1 GiB cap" 'grep -q "^  shared .* 1  \[.*\] .* / 1 GiB" "$work/live.txt"'
check "live --once: slice mine, 768 MiB, target 30%" 'grep -q "^  mine .* 0 / 768 MiB .*30%" "$work/live.txt"'
check "live --once: the escape's pid $escape" 'grep -q "^  GPU 0 pid $escape user .* command memhog" "$work/live.txt"'
"$CARVE" top --json >"$work/live.json"
check "live --json: a snapshot with the tenant in shared and the escape" "python3 -c '
import json,sys; s=json.load(open(sys.argv[1]))
sl=[x for x in s[\"slices\"] if x[\"name\"]==\"shared\"][0]
assert len(sl[\"processes\"])==1 and any(e[\"pid\"]==int(sys.argv[2]) for e in s[\"escapes\"])
' \"$work/live.json\" $escape"
wait "$held" "$escape"

# 4. the live view in a terminal
if command -v tmux >/dev/null; then
    screen() { tmux -L "$tmux_socket" capture-pane -p -t top; }
    wait_for() { # wait_for PATTERN: up to 5 s for the screen to show it
        for _ in $(seq 50); do
            screen | grep -q -- "$1" && return 0
            sleep 0.1
        done
        return 1
    }
    tmux -L "$tmux_socket" new-session -d -s top -x 130 -y 40 \
        "env TERM=xterm-256color CARVE_SOCKET='$CARVE_SOCKET' '$CARVE' top --interval 0.3; echo \"exit=\$?\" >'$work/top.exit'; sleep 30"
    check "the live view draws the title and the slices" 'wait_for "sort: name" && wait_for "^  shared " && wait_for "^  mine "'
    check "the last line names the keys" 'screen | grep -q "q quit   s sort"'
    tmux -L "$tmux_socket" send-keys -t top s
    check "s: the sort key becomes memory" 'wait_for "sort: memory"'
    tmux -L "$tmux_socket" send-keys -t top s
    check "s again: share" 'wait_for "sort: share"'
    "$CARVE" slice create late --memory 256MiB >/dev/null
    check "a slice made while it runs appears (live update)" 'wait_for "^  late "'
    "$CARVE" slice delete late >/dev/null
    check "and goes when deleted" 'for _ in $(seq 30); do screen | grep -q "^  late " || break; sleep 0.1; done; ! screen | grep -q "^  late "'
    tmux -L "$tmux_socket" send-keys -t top q
    for _ in $(seq 50); do [ -s "$work/top.exit" ] && break; sleep 0.1; done
    check "q quits with status 0 ($(cat "$work/top.exit" 2>/dev/null))" 'grep -qx "exit=0" "$work/top.exit" 2>/dev/null'
else
    echo "skip - the live view (tmux is not installed; scripts/install-deps.sh installs it)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
