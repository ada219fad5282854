#!/usr/bin/env bash
# clang: yes (the interposer as clang built it; docs/internals.md)
# pace_contexts.sh - libcarve's timing samples (libcarve/pace.c's event pairs) across contexts
# that go, on the simulated GPU: a primary context reset (a sample in flight, or none), or
# released for the last time (after a release that leaves it), and retained again under the
# same handle; a created context destroyed with every event pair in flight in it, beside
# another, and its handle made again. Sampling goes on in the contexts after (tests/e2e/
# pace_ctx: its kernel shapes launched ten times have 5 samples or more in CARVE_PACE_DEBUG's
# lines), and no event of a context that went is used: the simulated driver, with
# CARVE_SIM_STALE_EVENTS=abort, aborts on such a use (checked first on its own).
#
#   BUILD=build bash tests/e2e/pace_contexts.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
PROG=$BUILD/tests/e2e/pace_ctx
passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARVE_SIM_STATE=$work/sim-state
# a GPU of this run's own, so that its compute board is this test's alone
sim_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
export CARVE_SIM_UUIDS=GPU-$sim_uuid

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }

# the simulated driver catches a use of an event whose context went: refused, or aborted
out=$(timeout -k 5 30 "$CARVE" run --simulate --quiet -- "$PROG" stale 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then
    ok "events of a destroyed and of a reset context are refused: $out"
else
    bad "events of a destroyed and of a reset context (status $rc): $out"
fi
out=$(CARVE_SIM_STALE_EVENTS=abort timeout -k 5 30 "$CARVE" run --simulate --quiet -- "$PROG" stale 2>&1)
rc=$?
if [ "$rc" -eq 134 ] && [[ $out == *"cuEventQuery on an event whose context was destroyed"* ]]; then
    ok "with CARVE_SIM_STALE_EVENTS=abort such a use aborts, naming the call"
else
    bad "with CARVE_SIM_STALE_EVENTS=abort, status $rc (want 134): $out"
fi

# Before libcarve forgot a context's event pairs when it went, each of these aborted (a
# pending sample's event queried after the context went; in idle, the old context's events
# recorded in the new one), and without the abort the shapes after it got no sample (reset,
# idle, release: one key sampled; destroy: none).
for mode in reset idle release destroy; do
    out=$(CARVE_SIM_STALE_EVENTS=abort CARVE_PACE_DEBUG=1 timeout -k 5 60 \
        "$CARVE" run --simulate --quiet --compute 100% -- "$PROG" "$mode" 2>&1)
    rc=$?
    sampled=$(grep -cE '^carve pace: key [0-9a-f]+ est [0-9]+ ns, ([5-9]|[1-9][0-9]+) samples(;.*)?$' \
        <<<"$out")
    once=$(grep -cE '^carve pace: key [0-9a-f]+ est [0-9]+ ns, 1 samples(;.*)?$' <<<"$out")
    said=$(grep -v '^carve pace: ' <<<"$out" | paste -sd ' ' -)
    # release: a release that leaves the context comes first, a sample in flight across it
    # (the one key sampled once: taken after it) and a shape sampled after it
    want=2 want_once=$once
    [ "$mode" = release ] && want=3 want_once=1
    if [ "$rc" -eq 0 ] && [ "$sampled" -eq "$want" ] && [ "$once" -eq "$want_once" ]; then
        ok "$mode: sampled on after the context went, no event of it used ($sampled keys of 5+ samples, $once of 1; $said)"
    else
        bad "$mode: status $rc, $sampled keys of 5+ samples, $once of 1 (want 0, $want and $want_once): $said"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
