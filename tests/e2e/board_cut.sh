#!/usr/bin/env bash
# board_cut.sh - a GPU's board objects cut short (truncated) under running paced tenants, on
# the simulated GPU. The activity object is mode 0666 (every tenant of the GPU notes its
# launches in it), and so is the settings table of a board of `carve run` alone: any local
# user can truncate them, and each tenant that maps them then died of SIGBUS at its next
# launch (and `carve run` at its leave). Now each goes on and keeps its cap: two slices, 30%
# and 50%, for 6 s. Another user truncates the activity every 20 ms for 2 s; the tenants map
# it again within a second (lengthening it). Then both objects, for 1 s: the slices run on
# alone with their caps, and the last to leave removes the board.
#
#   BUILD=build bash tests/e2e/board_cut.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
LOAD=$BUILD/bench/compute_load
passed=0
failed=0
work=$(mktemp -d)
cutter=
cleanup() {
    [ -n "$cutter" ] && kill "$cutter" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
export CARVE_SIM_STATE=$work/sim-state
# a GPU of this run's own, so that its board is this test's alone
sim_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
export CARVE_SIM_UUIDS=GPU-$sim_uuid
settings=/dev/shm/carve-board-${sim_uuid//-/}
activity=$settings.activity

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }

# as another user where this one may switch (root): the object is anyone's to cut
as_other=()
[ "$(id -u)" -eq 0 ] && as_other=(setpriv --reuid 65534 --regid 65534 --clear-groups)

for share in 30 50; do
    CARVE_PACE_DEBUG=1 timeout -k 5 60 "$CARVE" run --simulate --quiet --compute "$share%" -- \
        "$LOAD" --kind small --seconds 6 --label "s$share" >"$work/out$share" 2>&1 &
    eval "pid$share=\$!"
done

for _ in $(seq 100); do
    [ -e "$activity" ] && break
    sleep 0.05
done
# cut OBJECT... for S seconds, every 20 ms, as the other user; prints how many times
cut_for() {
    local seconds=$1
    shift
    "${as_other[@]}" bash -c 'end=$((SECONDS + $1)); cuts=0; shift
        while [ "$SECONDS" -lt "$end" ]; do
            for f in "$@"; do : >"$f" && cuts=$((cuts + 1)); done
            sleep 0.02
        done
        echo "$cuts"' _ "$seconds" "$@" 2>&1 &
    cutter=$!
    wait "$cutter"
    cutter=
}
sleep 0.5
cuts=$(cut_for 2 "$activity")
sleep 1.5 # a tenant maps the object again within a second of the last cut
size=$(stat -c %s "$activity" 2>&1)
table_cuts=$(cut_for 1 "$settings" "$activity")

for share in 30 50; do
    eval "wait \$pid$share"
    rc=$?
    total=$(sed -n 's/.*"total_share": \([0-9.]*\).*/\1/p' "$work/out$share")
    again=$(sed -n 's/^carve pace: device 0: board cut, mapped again \([0-9]*\) times.*/\1/p' \
        "$work/out$share")
    # the most of a 1 s window: a slice whose place the cut took off the board went on at
    # 100% (50% in the last two windows for the 30% slice) before it kept its own settings
    most=$(sed -n 's/.*"window": [0-9]*, "share": \([0-9.]*\).*/\1/p' "$work/out$share" |
        sort -n | tail -n 1)
    said=$(grep -v '"window"' "$work/out$share" | paste -sd ' ' -)
    if [ "$rc" -eq 0 ] && [ "${again:-0}" -ge 1 ] && [ -n "$total" ] && [ -n "$most" ] &&
        awk -v t="$total" -v m="$most" -v s="$share" 'BEGIN { exit !(t <= s + 2 && m <= s + 5) }'; then
        ok "the $share% slice ran through $cuts cuts of the activity and $table_cuts of both objects, mapped them again $again times, and kept its cap ($total%, at most $most% a second)"
    else
        bad "the $share% slice under $cuts cuts of the activity and $table_cuts of both objects: status $rc (135: SIGBUS), mapped again ${again:-no} times, share ${total:-none}, at most ${most:-none} a second (cap $share): $said"
    fi
done

if [ "$size" = 4096 ]; then
    ok "the activity object is whole again after the cuts (4096 bytes)"
else
    bad "the activity object after the cuts: $size (want 4096)"
fi

left=$(ls "$settings" "$activity" 2>/dev/null)
if [ -z "$left" ]; then
    ok "the last slice to leave removed the board that stayed cut"
else
    bad "the board's objects are left: $left"
    rm -f "$settings" "$activity"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
