#!/usr/bin/env bash
# run-all.sh - run every test suite of one build directory and count them.
#
#   bash tests/run-all.sh BUILDDIR
#
# A suite is one process: each executable in BUILDDIR/tests/unit/ (cmocka, timeout 120 s),
# then each tests/e2e/*.sh run with BUILD=BUILDDIR (timeout 300 s). Pass or fail is the exit
# status; a suite that leaves carve's objects in /dev/shm fails too. Where it can (as root,
# with unshare), each suite runs with a /dev/shm of its own (tests/shm-private.sh), so that
# carve at work elsewhere on the machine (a carved, another build's tests, a benchmark) and
# the suites cannot see or blame each other's objects. For a sanitizer build (ASan in its
# binaries) the e2e scripts are skipped unless their first lines carry `# san: yes`: an ASan
# libcarve cannot be LD_PRELOADed into arbitrary programs. With CARVE_TEST_SKIP_SLOW set, the
# scripts whose first lines carry `# slow: yes` are skipped too (scripts/test.sh sets it for
# its second build, to keep CI under 15 minutes). Logs go to BUILDDIR/test-logs/, and failed.txt there lists the
# logs of the suites that failed. The last line is `N passed, N failed`.
set -uo pipefail

UNIT_TIMEOUT=${UNIT_TIMEOUT:-120}
E2E_TIMEOUT=${E2E_TIMEOUT:-300}
TAIL_LINES=40

cd "$(dirname "$0")/.." || exit 2

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILDDIR" >&2
    exit 2
fi
build=${1%/}
if [ ! -d "$build" ]; then
    echo "run-all: build directory '$build' does not exist; run make first" >&2
    exit 2
fi
logdir="$build/test-logs"
mkdir -p "$logdir"
# the logs of this run's failed suites, one path a line, for scripts/test.sh's final summary
failed_list="$logdir/failed.txt"
: >"$failed_list"

passed=0
failed=0
skipped=0
failures=()

# A build is a sanitizer build when its binaries carry the ASan runtime hooks.
is_san_build() {
    local f
    for f in "$build/lib/carve/libcarve.so" "$build/bin/carve" "$build"/tests/unit/*; do
        [ -f "$f" ] || continue
        grep -qa '__asan_init' "$f" && return 0
        return 1
    done
    case "$(basename "$build")" in *san*) return 0 ;; esac
    return 1
}

# carve's shared-memory objects: slices (carve.UID.PID.RAND, carved's carve.d.NAME.RAND) and
# compute boards; not the simulated GPU's own state (carve-sim.*), which lasts like a device.
carve_shm() { find /dev/shm -maxdepth 1 -name 'carve*' ! -name 'carve-sim.*' -printf '%f\n' 2>/dev/null | sort; }

# A /dev/shm of each suite's own, where a mount namespace can be made: else the suites share
# the machine's, and what a suite left is told by comparing it before and after.
private_shm=0
if [ "$(id -u)" -eq 0 ] && [ -z "${CARVE_TEST_SHARED_SHM:-}" ] &&
    unshare -m --propagation private mount -t tmpfs none /dev/shm 2>/dev/null; then
    private_shm=1
fi
# beside the logs, not in TMPDIR: a TMPDIR in /dev/shm is not the suite's /dev/shm, and what the
# suite left, written there, was lost (every suite passed the leak check)
shm_left=$(mktemp "$logdir/shm-left.XXXXXX")
trap 'rm -f "$shm_left"' EXIT

# run_suite NAME LOG TIMEOUT CMD...: run one suite, print its result line, count it. A suite
# that passes but leaves objects of carve's in /dev/shm fails: they outlive every process
# (carved_numbers.sh left six slices a run until 2026-11-25).
run_suite() {
    local name=$1 log=$2 limit=$3 rc start secs before left
    shift 3
    start=$(date +%s)
    if [ "$private_shm" -eq 1 ]; then
        : >"$shm_left"
        timeout --kill-after=10 "$limit" unshare -m --propagation private \
            bash tests/shm-private.sh "$shm_left" "$@" >"$log" 2>&1 </dev/null
        rc=$?
        left=$(tr '\n' ' ' <"$shm_left")
    else
        before=$(carve_shm)
        timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1 </dev/null
        rc=$?
        left=$(comm -13 <(echo "$before") <(carve_shm) | tr '\n' ' ')
    fi
    secs=$(( $(date +%s) - start ))
    if [ "$rc" -eq 0 ] && [ -n "$left" ]; then
        echo "left in /dev/shm: $left" >>"$log"
        printf '  %-40s FAIL  (passed, but left in /dev/shm: %s)\n' "$name" "$left"
        failed=$((failed + 1))
        failures+=("$name")
        echo "$log" >>"$failed_list"
        return
    fi
    if [ "$rc" -eq 0 ]; then
        printf '  %-40s PASS  (%ds)\n' "$name" "$secs"
        passed=$((passed + 1))
        return
    fi
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        printf '  %-40s FAIL  (timed out after %ds)\n' "$name" "$limit"
    else
        printf '  %-40s FAIL  (exit %d, %ds)\n' "$name" "$rc" "$secs"
    fi
    failed=$((failed + 1))
    failures+=("$name")
    echo "$log" >>"$failed_list"
    echo "  ---- last $TAIL_LINES lines of $log ----"
    tail -n "$TAIL_LINES" "$log" | sed 's/^/  | /'
    echo "  ----"
}

echo "== unit tests ($build/tests/unit)"
found=0
for t in "$build"/tests/unit/*; do
    if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
    found=1
    name="unit/$(basename "$t")"
    run_suite "$name" "$logdir/unit-$(basename "$t").log" "$UNIT_TIMEOUT" "$t"
done
[ "$found" -eq 1 ] || echo "  (none built)"

echo "== end-to-end tests (tests/e2e, BUILD=$build)"
# marked SCRIPT WORD: whether SCRIPT's first lines carry `# WORD: yes`
marked() { head -n 5 "$1" | grep -q "^# $2: yes"; }
san=0
is_san_build && san=1
found=0
for s in tests/e2e/*.sh; do
    [ -f "$s" ] || continue
    found=1
    name="e2e/$(basename "$s" .sh)"
    if [ "$san" -eq 1 ] && ! marked "$s" san; then
        printf '  %-40s skip  (sanitizer build; not marked "# san: yes")\n' "$name"
        skipped=$((skipped + 1))
        continue
    fi
    if [ -n "${CARVE_TEST_SKIP_SLOW:-}" ] && marked "$s" slow; then
        printf '  %-40s skip  (CARVE_TEST_SKIP_SLOW; marked "# slow: yes")\n' "$name"
        skipped=$((skipped + 1))
        continue
    fi
    run_suite "$name" "$logdir/e2e-$(basename "$s" .sh).log" "$E2E_TIMEOUT" \
        env BUILD="$build" bash "$s"
done
[ "$found" -eq 1 ] || echo "  (none)"

if [ "$failed" -gt 0 ]; then
    echo "failed in $build: ${failures[*]}"
fi
[ "$skipped" -gt 0 ] && echo "($skipped skipped)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
