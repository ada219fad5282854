# private_carved.bash - sourced by the e2e scripts that run a carved of their own (not a test
# itself: run-all.sh runs tests/e2e/*.sh only). After sourcing, with the script's directory
# the repository root:
#   BUILD, CARVE, CARVED        the build under test
#   work                        a private directory, removed at exit
#   CARVE_SOCKET, CARVE_SIM_STATE, CARVE_SIM_UUIDS
#                               carved's socket, the simulated GPU's state and two GPU UUIDs
#                               of this run's own (compute slices share a board per GPU UUID in
#                               /dev/shm, and the simulated GPU's default UUID is the same for
#                               every carve build on the machine)
#   daemon                      the script sets it to carved's pid; stopped at exit
#   ok, bad, check, passed, failed
#   cleanup_extra               a function the script may define, run first at exit
#   start_carved POLL [LISTEN] [MORE]
#                               writes $work/carved.conf (poll_interval = POLL, then the lines
#                               MORE), starts carved (HTTP on LISTEN, default off) into $daemon,
#                               waits for its socket
#   stop_carved                 SIGTERM to $daemon, and waits for it
#   forget_state                with carved stopped: removes the slices its state dir kept
#                               and the state dir, so that the next carved starts empty
#   slice_field NAME EXPR       EXPR, in python, of slice NAME in carve ps --json (s the slice,
#                               d its first device, snap the snapshot)
#   wait_field NAME EXPR WANT [TENTHS]
#                               until slice_field prints WANT: 5 s (or TENTHS tenths) at most
#   polls [N]                   waits until carved has finished N polls (default 2) begun
#                               after the call (10 s at most; status 1 if it has not): for a
#                               check that something did not happen, instead of a sleep
# At exit the slices this run's carved kept (its state dir says which) and this run's board
# are removed.
BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
CARVED=$BUILD/bin/carved
passed=0
failed=0
work=$(mktemp -d)
export CARVE_SIM_STATE=$work/sim-state CARVE_SOCKET=$work/carved.sock
# GPUs of this test's own (two, for the tests that set CARVE_SIM_DEVICES=2: the second took
# the default simulated UUID, and a compute slice's board on it was left in /dev/shm)
sim_uuids=$(python3 -c 'import uuid; print(uuid.uuid4(), uuid.uuid4())')
export CARVE_SIM_UUIDS=GPU-${sim_uuids% *},GPU-${sim_uuids#* }
daemon=

start_carved() {
    printf 'poll_interval = %s\n%s' "$1" "${3:-}" >"$work/carved.conf"
    "$CARVED" --simulate --config "$work/carved.conf" --socket "$CARVE_SOCKET" \
        --state-dir "$work/state" --listen "${2:-off}" >"$work/carved.log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do
        "$CARVE" slice list >/dev/null 2>&1 && return 0
        sleep 0.1
    done
}

slice_field() {
    "$CARVE" ps --json | python3 -c 'import json, sys
snap = json.load(sys.stdin)
s = [s for s in snap["slices"] if s["name"] == sys.argv[1]][0]
d = s["devices"][0] if s["devices"] else None
print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

wait_field() {
    for _ in $(seq "${4:-50}"); do [ "$(slice_field "$1" "$2")" = "$3" ] && return 0; sleep 0.1; done
    return 1
}

# carved's snapshot time, which each poll sets (the wall clock, so it may step, but it changes)
snapshot_time() {
    "$CARVE" ps --json 2>/dev/null | sed -n 's/^  "time": \([0-9.]*\).*/\1/p' # top-level: indented 2
}

# A snapshot is made at the end of a poll: the first that changes may be of a poll begun
# before the call, the ones after it are not.
polls() {
    local want=$((${1:-2} + 1)) last now end=$((SECONDS + 10))
    last=$(snapshot_time)
    while [ "$SECONDS" -lt "$end" ]; do
        sleep 0.05
        now=$(snapshot_time)
        if [ -n "$now" ] && [ "$now" != "$last" ]; then
            want=$((want - 1))
            [ "$want" -eq 0 ] && return 0
            last=$now
        fi
    done
    return 1
}

stop_carved() {
    kill -TERM "$daemon" && wait "$daemon"
}

# The slices this run's carved kept, by the names it saved in its state dir.
remove_kept_slices() {
    [ -f "$work/state/slices.json" ] || return 0
    python3 -c 'import json, sys
for s in json.load(open(sys.argv[1])).get("slices", []): print(s["shm"])' \
        "$work/state/slices.json" 2>/dev/null | while read -r shm; do
        case $shm in /carve.d.*) rm -f "/dev/shm$shm" "/dev/shm$shm.terms" ;; esac
    done
}

forget_state() {
    remove_kept_slices
    rm -rf "$work/state"
}

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
cleanup() {
    if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
    if [ -n "$daemon" ]; then
        kill -TERM "$daemon" 2>/dev/null
        wait "$daemon" 2>/dev/null
    fi
    # this run's slices, by the names its carved saved: every carve.d.* newer than this run's
    # start took the slices of the other carved tests running beside it too (their tenants
    # then ran outside them, and a restarted carved made their slices again, counters at 0)
    remove_kept_slices
    local u
    for u in $sim_uuids; do
        rm -f "/dev/shm/carve-board-${u//-/}" "/dev/shm/carve-board-${u//-/}.activity"
    done
    rm -rf "$work"
}
trap cleanup EXIT
