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
# divided by the number of calls; then the launch again in a slice with --compute 99% and an
# hour of lead, so that every launch is paced (charged, sampled one in 64 once warm) and none
# is held: what a launch that a limit does not hold back costs, driver calls libcarve makes
# for it (the current context, events of its samples) included. Needs valgrind
# (scripts/install-deps.sh installs it).
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

# run NAME CARVE-RUN-OPTIONS...: the bench under callgrind in such a slice, into $out/NAME.tree
run() {
    local name=$1
    shift
    "$BUILD/bin/carve" run "${sim[@]}" --quiet "$@" -- \
        valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" \
        "$BUILD/bench/overhead" --iters "$ITERS" >"$out/$name.log" 2>&1 ||
        { cat "$out/$name.log"; exit 1; }
    callgrind_annotate --inclusive=yes --tree=calling "$out/$name.cg" >"$out/$name.tree" 2>/dev/null
}

# cost TREE FUNCTION PATTERN: inclusive instructions of FUNCTION in the code PATTERN matches.
# A function shows twice: as FILE:FN [OBJECT], which leaves out the code inlined into it from
# headers (carve__init, carve__note_ran), and under its file's absolute path, whole: the
# larger is the cost.
cost() {
    grep -E "^ *[0-9,]+ .*\*  .*:$2( |\$)" "$out/$1.tree" | grep -E "$3" |
        awk '{gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0} END {if (m) print m}' || true
}
# calls TREE FUNCTION: how many times libcarve called the driver's FUNCTION.
calls() {
    grep -E ">   .*simgpu.*:$2 \(|>   .*:$2 \(.*libcuda" "$out/$1.tree" | head -n1 |
        sed 's/.*(\([0-9,]*\)x).*/\1/' | tr -d , || true
}

# row TREE FUNCTION LABEL
row() {
    local wrapped real n added
    wrapped=$(cost "$1" "$2" '/libcarve/|libcarve\.so')
    real=$(cost "$1" "$2" 'libcuda|/simgpu/')
    n=$(calls "$1" "$2")
    if [ -z "$wrapped" ]; then
        printf '%-22s %8s %12s %14s\n' "$3" "${n:--}" "not hooked" 0
        return
    fi
    added=$((wrapped - real))
    printf '%-22s %8s %12s %14s\n' "$3" "$n" "$added" "$((added / n))"
}

run plain --memory 8GiB
CARVE_PACE_AHEAD_US=3600000000 run limit --memory 8GiB --compute 99%
printf '%-22s %8s %12s %14s\n' "entry point" calls "added instr" "per call"
for f in cuMemAlloc_v2 cuMemFree_v2 cuLaunchKernel; do
    row plain "$f" "$f"
done
row limit cuLaunchKernel "cuLaunchKernel (limit)"
echo "(instructions; a modern core retires several per nanosecond, so 1,000 added"
echo " instructions are well under the 1 us targets for an allocation and for a launch"
echo " that a limit does not hold)"
