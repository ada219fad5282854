#!/usr/bin/env bash
# clang: yes (the interposer as clang built it; docs/internals.md)
# bench_overhead.sh - bench/overhead.sh still runs and reports every op it promises: the
# allocation pairs, an empty launch, and that launch again under a compute limit that never
# holds it (the `_limit' row), each with integer figures and its target. Timing is not
# judged here (the simulated GPU's figures mean little); the GPU run judges the targets.
#
#   BUILD=build bash tests/e2e/bench_overhead.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
out=$(mktemp)
errs=$(mktemp)
trap 'rm -f "$out" "$errs"' EXIT
passed=0
failed=0
check() {
    if eval "$2"; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); return 1; fi
}

BUILD=$BUILD bash bench/overhead.sh --json --iters 2000 >"$out" 2>"$errs"
rc=$?
check "bench/overhead.sh --json ends with status 0 ($rc)" '[ $rc -eq 0 ]' || tail -n 20 "$errs"
ops=$(jq -r '[.ops[].op] | join(" ")' "$out" 2>/dev/null)
check "it reports alloc_free_4k, alloc_free_64m, launch_empty, launch_graph and their _limit rows ($ops)" \
    '[ "$ops" = "alloc_free_4k alloc_free_64m launch_empty launch_graph launch_empty_limit launch_graph_limit" ]'
check "every op has integer medians, p99s and added ns, and a verdict" \
    'jq -e "all(.ops[]; ([.plain_median_ns, .carve_median_ns, .driver_median_ns, .added_ns, .carve_p99_ns, .driver_p99_ns] | all(type == \"number\" and . == floor)) and (.verdict == \"PASS\" or .verdict == \"MISS\"))" "$out" >/dev/null'
targets=$(jq -r '[.ops[] | "\(.op)=\(.target_added_ns)"] | join(" ")' "$out" 2>/dev/null)
check "targets: 1 us per allocation pair, 0.1 us per launch, 1 us per launch under a limit ($targets)" \
    '[ "$targets" = "alloc_free_4k=1000 alloc_free_64m=1000 launch_empty=100 launch_graph=100 launch_empty_limit=1000 launch_graph_limit=1000" ]'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
