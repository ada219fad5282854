#!/usr/bin/env bash
# carved_unpaced.sh - carved tells the paced slices of a GPU when work that no slice paces
# runs there (a slice with neither share nor priority, a process outside carve), on the
# simulated GPU. libcarve cannot see such work, and took the cost samples it lengthened for
# clean ones: a 30% cap of uniform 200 us kernels beside it was charged as if they varied,
# and got 22.6% (2026-11-27). With carved's word it holds 30%.
#
#   BUILD=build bash tests/e2e/carved_unpaced.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash

unpaced=
cleanup_extra() { kill "$unpaced" 2>/dev/null; }

start_carved 200ms off

# the unpaced neighbour: one 300 us kernel at a time, for longer than the capped slice runs
"$CARVE" run --quiet -- "$BUILD/bench/compute_load" --kind small --kernel-us 300 --depth 1 \
    --seconds 9 >"$work/unpaced.log" 2>&1 &
unpaced=$!
polls 2 || bad "carved made no two polls in 10 s"
"$CARVE" run --quiet --compute 30% -- "$BUILD/bench/compute_load" --kind small --kernel-us 200 \
    --seconds 6 >"$work/capped.log" 2>&1
verdict=$(python3 - "$work/capped.log" <<'PY'
import json, sys
w = [json.loads(l)["share"] for l in open(sys.argv[1]) if '"window"' in l][1:]
if not w:
    print("no windows"); sys.exit(1)
mean = sum(w) / len(w)
print(f"windows {', '.join(f'{x:.1f}' for x in w)}; mean {mean:.2f}")
sys.exit(0 if abs(mean - 30) <= 2 and max(abs(x - 30) for x in w) <= 5 else 1)
PY
)
rc=$?
check "a 30% cap of uniform kernels beside a busy slice with no share holds 30% ($verdict)" \
    "[ $rc -eq 0 ]"
wait "$unpaced" 2>/dev/null
unpaced=

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
