#!/usr/bin/env bash
# slow: yes (17-19 s: memcheck of code the gcc build's run has just checked)
# valgrind.sh - carve run, libcarve and the simulated GPU under valgrind's memcheck: no
# invalid access, no use of uninitialised memory, no definite leak.
#
#   BUILD=build bash tests/e2e/valgrind.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
passed=0
failed=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export CARVE_SIM_STATE=$dir/state
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
# Where bin/carve is linked statically, a standalone `carve run` is run by its dynamically
# linked twin (cli/dynamic_twin.c), the same code; memcheck sees the heap of a dynamically
# linked program only (it replaces malloc through the loader), so the twin is the one checked.
CARVE=$BUILD/bin/carve
if [[ "$(readelf -l "$CARVE" 2>&1)" != *INTERP* ]] && [ -x "$BUILD/lib/carve/carve-dynamic" ]; then
    CARVE=$BUILD/lib/carve/carve-dynamic
fi

if ! command -v valgrind >/dev/null; then
    echo "FAIL - valgrind is not installed (scripts/install-deps.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
fi

# vg LABEL EXPECTED-STATUS CMD...
vg() {
    local label=$1 want=$2 rc
    shift 2
    "$@" >"$dir/out" 2>&1
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        echo "ok - $label (exit $rc)"
        passed=$((passed + 1))
    else
        echo "FAIL - $label: exit $rc, want $want"
        sed 's/^/    /' "$dir/out" | tail -n 30
        failed=$((failed + 1))
    fi
}

vg "carve run under memcheck ($CARVE)" 0 "${VG[@]}" "$CARVE" run --simulate --memory 1GiB -- true
vg "carve doctor under memcheck (its probe runs outside valgrind's reach)" 0 \
    "${VG[@]}" "$CARVE" doctor --simulate --no-probe
vg "carve run refusing bad input under memcheck" 2 \
    "${VG[@]}" "$CARVE" run --simulate --memory 8XB -- true
vg "a tenant (libcarve + simulated GPU) under memcheck" 0 \
    "$CARVE" run --simulate --quiet --memory 4GiB -- \
    "${VG[@]}" "$BUILD/tests/e2e/mem_gpa"
# (fewer racing launches than mem_slice.sh's 200000: under memcheck they took 14-55 s)
vg "graph memory (libcarve + simulated GPU) under memcheck" 0 \
    env CARVE_SIM_CTX_MEMORY=0 MEM_GRAPH_RACE_LAUNCHES=5000 "$CARVE" run --simulate --quiet --memory 1GiB -- \
    "${VG[@]}" "$BUILD/tests/e2e/mem_graph"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
