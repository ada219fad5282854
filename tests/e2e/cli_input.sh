#!/usr/bin/env bash
# clang: yes (carve and its slices as clang built them; docs/internals.md)
# cli_input.sh - `carve run` refuses bad input with a clear message and exit status 2, passes
# the command's own status through, and leaves no slice behind; the slice a killed carve run
# left is removed by the user's next carve run.
#
#   BUILD=build bash tests/e2e/cli_input.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
passed=0
failed=0
state_dir=$(mktemp -d)
trap 'rm -rf "$state_dir"' EXIT
export CARVE_SIM_STATE=$state_dir/sim-state CARVE_SIM_MEMORY=80GiB

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }

# expect STATUS FRAGMENT ARGS...: carve ARGS exits STATUS and prints FRAGMENT on stderr.
expect() {
    local want=$1 fragment=$2 err rc
    shift 2
    err=$("$CARVE" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -eq "$want" ] && [[ "$err" == *"$fragment"* ]]; then
        ok "carve $* -> $rc, says '$fragment'"
    else
        bad "carve $* -> $rc (want $want), stderr: $err"
    fi
}

# the slice objects in /dev/shm, one name a line
carve_objects() {
    local f
    for f in /dev/shm/carve.*; do [ -e "$f" ] && echo "${f##*/}"; done | sort
}
shm_before=$(carve_objects)

expect 2 "no command \`nope' (commands: run slice" help nope
out=$("$CARVE" help help 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [[ $out == "usage: carve <command>"* ]]; then ok "carve help help: carve's own help, status 0"; else bad "carve help help -> $rc: $out"; fi
expect 2 "unknown unit" run --simulate --memory 8XB -- true
expect 2 "zero" run --simulate --memory 0 -- true
expect 2 "negative" run --simulate --memory -1 -- true
expect 2 "empty" run --simulate --memory "" -- true
expect 2 "more than GPU 0 has (80 GiB)" run --simulate --memory 100TiB -- true
expect 2 "carve run: --memory 100GiB is more than GPU 0 has (80 GiB)" \
    run --simulate --memory 100GiB -- true
expect 2 "0=100 GiB is more than GPU 0 has (80 GiB)" run --simulate --memory 0=100GiB -- true
CARVE_SIM_DEVICES=2 expect 2 "has 2 GPUs (0-1)" run --simulate --memory 0=1G,3=1G -- true
expect 2 "names GPU 3, but this machine has 1 GPU" run --simulate --memory 3=1G -- true
expect 2 "named twice" run --simulate --memory 0=1G,0=2G -- true
expect 2 "no command given" run --simulate --memory 1G
expect 2 "needs a value" run --simulate --memory
expect 2 "contains a space" run --simulate --memory "8 G" -- true
# a bare number is bytes: `8' meant as 8 GiB was an 8-byte cap (nvidia-smi showed 0 MiB)
expect 2 "8 bytes, less than 1 MiB (a number without a unit is bytes); give a unit, e.g. 8GiB" \
    run --simulate --memory 8 -- true
expect 2 "512 bytes, less than 1 MiB" run --simulate --memory 0=512B -- true
expect 2 "less than 1 MiB" run --simulate --mode mps --memory 8 -- true
expect 2 "less than 1 MiB" run --simulate --mode mig --memory 8 -- true
expect 2 "less than 1 MiB" advise --gpu H100 --workload notebook --memory 8
expect 0 "" run --simulate --memory 1048576 -- true
expect 2 "GPU index \`x' is not a number" run --simulate --memory x=1G -- true
expect 2 "expected SIZE (every GPU) or IDX=SIZE" run --simulate --memory 0=1G, -- true
expect 2 "no command \`bogus'" help bogus
expect 2 "unknown option" run --simulate --bogus -- true
# a short option inside a word is named itself, not the word before it (was `run', `x', `top')
expect 2 "carve run: unknown option \`-Z'" run --simulate -Z10 -- true
expect 2 "carve slice create: unknown option \`-Z'" slice create x -Zq
expect 2 "carve top: unknown option \`-Z'" top -Zx
expect 2 "carve top: unknown option \`--nope'" top --nope
# a byte past ASCII inside a word came as a negative optopt: `--simulate' was named instead
expect 2 "carve run: unknown option \`-"$'\xff'"'" run --simulate $'-\xff\xfe' -- true
expect 2 "unknown command" frobnicate
expect 127 "cannot run" run --simulate --memory 1GiB -- /nonexistent/command
expect 7 "" run --simulate --memory 1GiB -- sh -c 'exit 7'
expect 143 "" run --simulate --memory 1GiB -- sh -c 'kill -TERM $$'
expect 0 "" run --simulate --memory 512MiB -- true
expect 0 "" run --simulate --memory 512MiB true
expect 0 "" --help
expect 0 "" --version
expect 0 "" run --help
expect 0 "" help run

CARVE_LIBDIR=/nonexistent "$CARVE" run --memory 1G -- true 2>"$state_dir/err"
rc=$?
if [ "$rc" -eq 2 ] && { grep -q 'no NVIDIA driver found.*use --simulate' "$state_dir/err" ||
                        grep -q 'libcarve.so not found' "$state_dir/err"; }; then
    ok "no driver and no --simulate -> 2: $(head -n1 "$state_dir/err")"
else
    bad "no driver and no --simulate -> $rc (want 2): $(cat "$state_dir/err")"
fi

# a lib directory with the simulated GPU but no libcarve.so
if [ -d "$BUILD/lib/carve/sim" ]; then
    mkdir -p "$state_dir/libdir" && cp -r "$BUILD/lib/carve/sim" "$state_dir/libdir/"
    CARVE_LIBDIR=$state_dir/libdir expect 2 "libcarve.so not found" run --simulate -- true
else
    bad "no simulated GPU at $BUILD/lib/carve/sim (run make)"
fi

if grep -q ENVIRONMENT <<<"$("$CARVE" run --help)"; then
    ok "run --help has an ENVIRONMENT section"
else
    bad "run --help lacks ENVIRONMENT"
fi

# a SIGTERM sent to carve reaches the command, and carve ends with its status
"$CARVE" run --simulate --memory 1GiB -- sleep 30 &
carve_pid=$!
sleep 0.5
kill -TERM "$carve_pid"
wait "$carve_pid"
rc=$?
if [ "$rc" -eq 143 ]; then
    ok "SIGTERM to carve is forwarded: status $rc"
else
    bad "SIGTERM to carve: status $rc, want 143"
fi

if "$CARVE" --version | grep -Eq '^carve [0-9]+\.[0-9]+\.[0-9]+$'; then
    ok "--version prints carve X.Y.Z"
else
    bad "--version: $("$CARVE" --version)"
fi

# a signal carve run's parent ignores (nohup, a background job) stays ignored for the command:
# carve run neither forwards it nor gives it back its default
out=$( (trap '' HUP; "$CARVE" run --simulate --memory 1GiB -- sh -c 'kill -HUP $$; echo survived') 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$out" = survived ]; then
    ok "an ignored SIGHUP stays ignored for the command (status $rc)"
else
    bad "an ignored SIGHUP stays ignored for the command: status $rc, output: $out"
fi

# an option given twice takes its last value (docs/man/carve-run.1, OPTIONS)
twice=$("$CARVE" run --simulate --quiet --memory 1GiB --memory 2GiB -- \
    "$BUILD/lib/carve/sim/bin/nvidia-smi" --query-gpu=memory.total --format=csv,noheader 2>&1)
if [ "$(echo "$twice" | head -n1)" = "2048 MiB" ]; then
    ok "--memory 1GiB --memory 2GiB: the last counts ($twice)"
else
    bad "--memory 1GiB --memory 2GiB: nvidia-smi in the slice says $twice, want 2048 MiB"
fi
# a mode with no priority takes the default asked for by name, and says what it does instead
# of latency or batch (it offered "mps for a thread limit" for a priority)
expect 0 "" run --simulate --mode timeslice --priority normal -- true
expect 2 "--mode timeslice leaves the GPU's time to the driver, which gives every process its turn alike, so --priority latency cannot be given with it: drop it (or give normal)" \
    run --simulate --mode timeslice --priority latency -- true
# the last value is the one checked: --priority was refused for a value the last overrides
expect 0 "" run --simulate --compute bogus --compute 30% -- true
expect 0 "" run --simulate --priority urgent --priority latency -- true
expect 2 "--priority: unknown priority \`urgent'; use latency, batch or normal" \
    run --simulate --priority latency --priority urgent -- true

# a carve run killed by SIGKILL cannot remove its slice: with no carved to sweep it, the
# user's next carve run does (its maker runs no more), and leaves a live run's alone
slice_of() { (cd /dev/shm && ls carve."$(id -u)"."$1".* 2>/dev/null | tr '\n' ' '); }
CARVE_SOCKET=$state_dir/none.sock "$CARVE" run --simulate --memory 1GiB -- sleep 60 >/dev/null 2>&1 &
killed=$!
CARVE_SOCKET=$state_dir/none.sock "$CARVE" run --simulate --memory 1GiB -- sleep 60 >/dev/null 2>&1 &
alive=$!
# each has made its slice whole once it has started its command
for _ in $(seq 50); do pgrep -P "$killed" >/dev/null && pgrep -P "$alive" >/dev/null && break; sleep 0.1; done
command_pid=$(pgrep -P "$killed")
kill -KILL "$killed" # first: with its command gone first, carve run removes its slice itself
wait "$killed" 2>/dev/null
[ -z "$command_pid" ] || kill -KILL "$command_pid"
orphan=$(slice_of "$killed")
CARVE_SOCKET=$state_dir/none.sock "$CARVE" run --simulate -- true
if [ -n "$orphan" ] && [ -z "$(slice_of "$killed")" ] && [ -n "$(slice_of "$alive")" ]; then
    ok "the next carve run removed the killed run's slice ($orphan) and left the live one's"
else
    bad "the killed run's slice was '$orphan', is '$(slice_of "$killed")'; the live one's is '$(slice_of "$alive")'"
fi
kill -TERM "$alive" # carve run passes it on, and removes its slice
wait "$alive" 2>/dev/null

# objects that appeared during the run and whose creator (/carve.UID.PID.RAND) is gone are
# ours, left behind; a live creator's belongs to a test running beside this one
left=""
for obj in $(comm -13 <(echo "$shm_before") <(carve_objects)); do
    pid=$(echo "$obj" | cut -d. -f3)
    [ -d "/proc/$pid" ] || left="$left $obj"
done
if [ -z "$left" ]; then
    ok "no slice object left in /dev/shm"
else
    bad "slice objects left:$left"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
