#!/usr/bin/env bash
# run-driver-facts.sh - on the GPU machine: the driver facts carve's memory accounting rests
# on and no test on the simulated GPU can learn (docs/memory.md, Honest limits), measured by
# build/bench/driver_facts on GPU 0 in a plain process, without carve: what allocations,
# arrays and the context really take, what a VMM handle's retain, export and import hold, what
# cuCtxSetLimit takes at the call, what cuMemFree answers for a bad pointer, whether a managed
# pool may be placed nowhere, whether the pre-3.2 cuMemAlloc/cuArrayCreate are exported, and
# whether the driver leaves SIGBUS's handler alone (libcarve's guard of the board's mappings).
# About 20 s once carve is built.
#
#   bash bench/gpu/run-driver-facts.sh [REPORT]   (default docs/results/<date>-driver-facts.md)
#
# Builds the probe (make BUILD/bench/driver_facts), runs it and writes the report: the GPU,
# its driver, the command, a table of the facts (name, value, how measured) and the probe's
# output as it printed it. Exit status: the probe's (0 every probe ran, 1 a fact is an
# error, 2 no driver or context), or 2 when the build fails. With the simulated GPU's
# nvidia-smi and libraries first in PATH and LD_LIBRARY_PATH it runs there too
# (tests/e2e/driver_facts.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
BUILD=${BUILD%/}
report=${1:-docs/results/$(date -u +%F)-driver-facts.md}
probe=$BUILD/bench/driver_facts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! make -j"$(nproc)" BUILD="$BUILD" "$probe" >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "run-driver-facts: make $probe failed" >&2
    exit 2
fi
mkdir -p "$(dirname "$report")"
timeout 120 "$probe" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"

IFS=, read -r gpu driver < <(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null)
case $rc in
0) verdict="every probe ran" ;;
1) verdict="a fact is an error (a call the measurement needs failed)" ;;
2) verdict="no driver, device or context to probe" ;;
124) verdict="cut off after 120 s" ;;
*) verdict="the probe died" ;;
esac
{
    echo "# Driver facts, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "- GPU: $(echo "${gpu:-unknown}" | xargs); driver: $(echo "${driver:-unknown}" | xargs)"
    echo "- commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "- command: \`bash bench/gpu/run-driver-facts.sh\` ($probe on GPU 0, a plain process: no carve)"
    echo "- exit status: $rc, $verdict"
    echo "- $(grep -c '^fact ' "$work/out") facts; a size taken is the drop in cuMemGetInfo's free memory, per allocation over 64 of them"
    echo
    echo "| fact | value | how measured |"
    echo "| --- | --- | --- |"
    sed -n 's/|/\\|/g; s/^fact \([^ ]*\) = \(.*\)  # \(.*\)$/| `\1` | \2 | \3 |/p' "$work/out"
    echo
    echo "## The probe's output"
    echo
    echo '```text'
    cat "$work/out"
    sed 's/^/stderr: /' "$work/err"
    echo '```'
} >"$report"
echo "run-driver-facts: $report"
exit "$rc"
