#!/usr/bin/env bash
# overhead.sh - what carve adds to a driver call: bench/overhead plain, then inside a slice.
#
#   bash bench/overhead.sh [--json] [--iters N]
#
# On a machine where `nvidia-smi -L` works it uses the real GPU; elsewhere the simulated one
# (plain: LD_LIBRARY_PATH=<sim dir>; in the slice: `carve run --simulate`). The slice's
# --memory is large (the GPU's memory less 1 GiB; CARVE_BENCH_MEMORY overrides), so nothing
# is refused. A third run adds --compute 99% with an hour of lead allowed
# (CARVE_PACE_AHEAD_US), so that every launch takes the pacing path (its cost estimate, the
# slice's clock) and none is held: the `_limit' rows, target 1 us. Prints op, median ns
# without and with carve, the added ns, and the target with PASS/MISS. The targets are for a real GPU; timing never makes this script fail, only a
# benchmark that cannot run does. BUILD selects the build directory (default build).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
json=0
iters=20000
while [ $# -gt 0 ]; do
    case "$1" in
    --json) json=1 ;;
    --iters) iters=${2:?--iters wants a number}; shift ;;
    *) echo "usage: $0 [--json] [--iters N]" >&2; exit 2 ;;
    esac
    shift
done

bench="$BUILD/bench/overhead"
carve="$BUILD/bin/carve"
if [ ! -x "$bench" ] || [ ! -x "$carve" ]; then
    echo "overhead: building ($bench, $carve missing)" >&2
    make -j"$(nproc)" BUILD="$BUILD" product >&2
fi

if nvidia-smi -L >/dev/null 2>&1; then
    mode=real
    total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -n1)
    memory=${CARVE_BENCH_MEMORY:-$(( ${total_mib%%[^0-9]*} / 1024 - 1 ))GiB}
    plain=("$bench")
    slice=("$carve" run --memory "$memory" -- "$bench")
    limited=("$carve" run --memory "$memory" --compute 99% -- "$bench")
else
    mode=simulated
    memory=${CARVE_BENCH_MEMORY:-64GiB}
    sim="$BUILD/lib/carve/sim"
    plain=(env LD_LIBRARY_PATH="$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bench")
    slice=("$carve" run --simulate --memory "$memory" -- "$bench")
    limited=("$carve" run --simulate --memory "$memory" --compute 99% -- "$bench")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "overhead: $mode GPU, $iters iterations; plain run" >&2
"${plain[@]}" --tsv --iters "$iters" >"$tmp/plain"
echo "overhead: in a slice, carve and driver calls alternating: ${slice[*]} --paired" >&2
CARVE_QUIET=1 "${slice[@]}" --paired --tsv --iters "$iters" >"$tmp/carve"
echo "overhead: with a compute limit that never holds: ${limited[*]} --paired" >&2
CARVE_QUIET=1 CARVE_PACE_AHEAD_US=3600000000 "${limited[@]}" --paired --tsv --iters "$iters" >"$tmp/limit"

# Judge what carve adds by the paired run: inside the slice, the benchmark alternates carve's
# wrapper and the driver's own function sample by sample, and "added" is the median of the
# differences between neighbours. Two separate processes differ by more than that on a real
# GPU (the driver's allocation cost drifts by microseconds between runs), so the plain run is
# context, not the verdict.
awk -v json="$json" -v mode="$mode" -v memory="$memory" -F'\t' '
    function target(op) { return op ~ /_limit$/ ? 1000 : op ~ /^launch/ ? 100 : 1000 }
    function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
    FNR == 1 && /^# device/ { device = $2; next }
    NR == FNR { pm[$1] = $3; order[++n] = $1; next }
    FILENAME ~ /limit$/ && /^launch/ { # the same launch ops again, paced but never held
        op = $1 "_limit"; pm[op] = pm[$1]; order[++n] = op
        cm[op] = $3; cp[op] = $4; rm[op] = $5; rp[op] = $6; ad[op] = $7; next }
    FILENAME ~ /limit$/ { next }
    { cm[$1] = $3; cp[$1] = $4; rm[$1] = $5; rp[$1] = $6; ad[$1] = $7 }
    END {
        if (json) {
            printf "{\"device\": %s, \"mode\": \"%s\", \"slice_memory\": \"%s\", \"ops\": [",
                   jstr(device), mode, memory
        } else {
            printf "carve overhead on %s (%s GPU; slice --memory %s)\n\n", device, mode, memory
            printf "%-20s %12s %12s %12s %10s %12s %12s %10s  %s\n", "op", "plain run",
                   "slice:", "slice:", "added", "p99 carve", "p99 driver", "target", "verdict"
            printf "%-20s %12s %12s %12s %10s %12s %12s %10s\n", "", "median ns",
                   "carve ns", "driver ns", "ns", "ns", "ns", "added ns"
        }
        for (i = 1; i <= n; i++) {
            op = order[i]
            if (!(op in cm)) continue
            verdict = ad[op] <= target(op) ? "PASS" : "MISS"
            if (json) {
                printf "%s{\"op\": \"%s\", \"plain_median_ns\": %d, \"carve_median_ns\": %d, " \
                       "\"driver_median_ns\": %d, \"added_ns\": %d, \"carve_p99_ns\": %d, " \
                       "\"driver_p99_ns\": %d, \"target_added_ns\": %d, \"verdict\": \"%s\"}",
                       (i > 1 ? ", " : ""), op, pm[op], cm[op], rm[op], ad[op], cp[op], rp[op],
                       target(op), verdict
            } else {
                printf "%-20s %12d %12d %12d %10d %12d %12d %10s  %s\n", op, pm[op], cm[op],
                       rm[op], ad[op], cp[op], rp[op], "<= " target(op), verdict
            }
        }
        if (json) { print "]}"; exit }
        print ""
        print "added: median over sample pairs of (through carve - driver'"'"'s own call), both in the slice;"
        print "targets: <= 100 ns (0.1 us) added per launch, <= 1000 ns (1 us) per allocation,"
        print "<= 1000 ns per launch that a compute limit does not hold (_limit)"
        if (mode != "real")
            print "(simulated GPU: the targets apply to a real GPU; these figures are informational)"
    }' "$tmp/plain" "$tmp/carve" "$tmp/limit"
