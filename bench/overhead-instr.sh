#!/usr/bin/env bash
# overhead-instr.sh - what libcarve adds to each allocation, free and launch, counted in
# instructions by callgrind: repeatable to the instruction whatever the machine is doing,
# so it is the overhead figure that means something on the simulated GPU (where the
# timed benchmark, bench/overhead.sh, mostly measures the simulator's mmap).
#
#   bash bench/overhead-instr.sh [--iters N]
#
# Runs build/bench/overhead under valgrind in a slice and prints, per entry point, the
# instructions of libcarve's wrapper (inclusive) minus those of the driver function it calls,
# divided by the number of calls. Needs valgrind (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
ITERS=2000
[ "${1:-}" = "--iters" ] && ITERS=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sim=()
nvidia-smi -L >/dev/null 2>&1 || sim=(--simulate)
export CARVE_SIM_STATE="$out/sim-state"

"$BUILD/bin/carve" run "${sim[@]}" --quiet --memory 8GiB -- \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    "$BUILD/bench/overhead" --iters "$ITERS" >"$out/log" 2>&1 ||
    { cat "$out/log"; exit 1; }
callgrind_annotate --inclusive=yes --tree=calling "$out/cg" >"$out/tree" 2>/dev/null

# cost FUNCTION PATTERN: inclusive instructions of FUNCTION in the code PATTERN matches. A
# function shows twice: as FILE:FN [OBJECT], which leaves out the code inlined into it from
# headers (carve__init, carve__note_ran), and under its file's absolute path, whole: the
# larger is the cost.
cost() {
    grep -E "^ *[0-9,]+ .*\*  .*:$1( |\$)" "$out/tree" | grep -E "$2" |
        awk '{gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0} END {if (m) print m}' || true
}
# calls FUNCTION: how many times libcarve called the driver's FUNCTION.
calls() {
    grep -E ">   .*simgpu.*:$1 \(|>   .*:$1 \(.*libcuda" "$out/tree" | head -n1 |
        sed 's/.*(\([0-9,]*\)x).*/\1/' | tr -d , || true
}

printf '%-16s %8s %12s %14s\n' "entry point" calls "added instr" "per call"
for f in cuMemAlloc_v2 cuMemFree_v2 cuLaunchKernel; do
    wrapped=$(cost "$f" '/libcarve/|libcarve\.so')
    real=$(cost "$f" 'libcuda|/simgpu/')
    n=$(calls "$f")
    if [ -z "$wrapped" ]; then
        printf '%-16s %8s %12s %14s\n' "$f" "${n:--}" "not hooked" 0
        continue
    fi
    added=$((wrapped - real))
    printf '%-16s %8s %12s %14s\n' "$f" "$n" "$added" "$((added / n))"
done
echo "(instructions; a modern core retires several per nanosecond, so 1,000 added"
echo " instructions are well under the 1 us allocation target)"
