#!/usr/bin/env bash
# run-memcap.sh - on a real GPU: does a 4 GiB carve slice hold for every kind of CUDA program?
#
#   bash bench/gpu/run-memcap.sh          (from a bare checkout, on the GPU machine)
#
# Builds carve and bench/gpu/memcap.cu (with nvcc, static and shared cudart), then runs each
# case under `carve run --memory 4GiB --`: the CUDA runtime program three times (static and
# shared cudart, and through CUDA graphs' allocation nodes), PyTorch (caching
# allocator, expandable_segments and cudaMallocAsync), CuPy, JAX, and nvidia-smi. A case
# passes when it sees the slice (total 4096 MiB; JAX: an allocator limit of at most 4096
# MiB), fits 3 GiB and gets the framework's own out-of-memory error on 2 GiB more;
# nvidia-smi must show 4096 MiB; NVML's process lists (_v3, _v2 and the detail list) in the
# slice must name its tenant and not a process outside it. A framework that is not importable
# gets a "not installed" row. Writes docs/results/<date>-memcap-<gpu>.md and exits nonzero when a case failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CAP=4GiB
CAP_BYTES=$((4 * 1024 * 1024 * 1024))
CASE_TIMEOUT=${CASE_TIMEOUT:-300}
CARVE="$BUILD/bin/carve"
GPUDIR="$BUILD/gpu"
LOGS="$GPUDIR/memcap-logs"

source bench/gpu/gpu-setup.sh run-memcap "$LOGS"
report="docs/results/$date-memcap-$slug.md"

echo "== building bench/gpu/memcap.cu"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvcc_ok=0
if [ -x "$nvcc" ]; then
    cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
    "$nvcc" -O2 -cudart static -o "$GPUDIR/memcap-static" bench/gpu/memcap.cu &&
        "$nvcc" -O2 -cudart shared -Xlinker -rpath -Xlinker "$cuda_home/lib64" \
            -o "$GPUDIR/memcap-shared" bench/gpu/memcap.cu && nvcc_ok=1
fi

rows=()
failed=0
passed=0

# judge LOG EXPECT: read the case's JSON line; print "verdict|sees MiB|fit|oom|error".
judge() {
    python3 - "$1" "$2" "$CAP_BYTES" <<'PY'
import json, sys
log, expect, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l for l in open(log, errors="replace") if l.startswith("{")]
if not lines:
    print("FAIL|-|-|-|no result line"); sys.exit()
r = json.loads(lines[-1])
total = r.get("sees_total") or 0
sees_ok = total == cap if expect == "eq" else 0 < total <= cap
ok = sees_ok and r.get("fit_3g") and r.get("oom_on_2g_more")
yn = lambda b: "yes" if b else "no"
print("|".join(["PASS" if ok else "FAIL", str(total >> 20), yn(r.get("fit_3g")),
                yn(r.get("oom_on_2g_more")), str(r.get("error_type"))]))
PY
}

# run_case NAME EXPECT(eq|le) CMD...: run CMD in a 4 GiB slice and add a table row.
run_case() {
    local name=$1 expect=$2 log="$LOGS/$1.log" rc verdict
    shift 2
    echo "== $name: $CARVE run --memory $CAP -- $*"
    timeout "$CASE_TIMEOUT" "$CARVE" run --memory "$CAP" -- "$@" >"$log" 2>&1
    rc=$?
    tail -n 5 "$log" | sed 's/^/   | /'
    verdict=$(judge "$log" "$expect")
    if [ "$rc" -ne 0 ] && [ "${verdict%%|*}" = PASS ]; then
        verdict="FAIL|${verdict#*|}"
    fi
    if [ "${verdict%%|*}" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    rows+=("| $name | \`carve run --memory $CAP -- $*\` | ${verdict//|/ | } | exit $rc |")
}

not_installed() { # not_installed NAME WHAT
    echo "== $1: skipped, $2 not installed"
    rows+=("| $1 | - | not installed | - | - | - | $2 is not importable/buildable here | - |")
}

# python_has MODULE: importable, and (for GPU frameworks) sees a GPU, outside any slice.
python_has() {
    case "$1" in
    torch) python3 -c 'import torch; assert torch.cuda.is_available()' ;;
    cupy) python3 -c 'import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0' ;;
    jax) python3 -c 'import jax; assert jax.devices("gpu")' ;;
    esac >/dev/null 2>&1
}

if [ "$nvcc_ok" -eq 1 ]; then
    run_case cudart-static eq "$GPUDIR/memcap-static" cudart-static
    run_case cudart-shared eq "$GPUDIR/memcap-shared" cudart-shared
    run_case cudart-graph eq "$GPUDIR/memcap-shared" --graph cudart-graph
else
    not_installed cudart-static nvcc
    not_installed cudart-shared nvcc
    not_installed cudart-graph nvcc
fi
if python_has torch; then
    run_case torch eq env -u PYTORCH_CUDA_ALLOC_CONF python3 bench/gpu/torch_memcap.py
    run_case torch-expandable eq env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
        python3 bench/gpu/torch_memcap.py
    run_case torch-async eq env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
        python3 bench/gpu/torch_memcap.py
else
    not_installed torch "PyTorch (with CUDA)"
fi
if python_has cupy; then
    run_case cupy eq python3 bench/gpu/cupy_memcap.py
else
    not_installed cupy CuPy
fi
if python_has jax; then
    run_case jax le env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 bench/gpu/jax_memcap.py
else
    not_installed jax "JAX (with CUDA)"
fi

echo "== nvidia-smi in the slice"
smi_total=$("$CARVE" run --memory "$CAP" -- nvidia-smi --query-gpu=memory.total \
    --format=csv,noheader,nounits -i 0 2>&1 | head -n1 | xargs)
"$CARVE" run --memory "$CAP" -- nvidia-smi >"$LOGS/nvidia-smi.log" 2>&1
if [ "$smi_total" = 4096 ]; then smi=PASS; passed=$((passed + 1)); else smi=FAIL; failed=$((failed + 1)); fi
echo "   memory.total in the slice: $smi_total MiB ($smi)"
rows+=("| nvidia-smi | \`carve run --memory $CAP -- nvidia-smi --query-gpu=memory.total\` | $smi | $smi_total | - | - | - | want 4096 |")

# NVML's process lists in a slice name the slice's tenant and not a process outside it: the
# compute, graphics and MPS lists in their _v3, _v2 and unversioned forms, and the detail
# list of late R535 on in each mode (tests/e2e/nvml_list). A compute tenant is in no graphics or
# MPS list on a real GPU, so those rows are INFO unless the outsider shows up (FAIL).
NVML_LISTS="v3 v2 v1 graphics-v3 graphics-v2 graphics-v1 mps-v3 mps-v2 mps-v1 detail detail-graphics detail-mps"
echo "== NVML's process lists in the slice"
memhog=$BUILD/bench/memhog
"$memhog" --label outsider --max 256 --hold 8 >"$LOGS/outsider.log" 2>&1 &
outsider=$!
sleep 2
lists=$("$CARVE" run --memory "$CAP" -- sh -c '"$0" --label insider --max 256 --hold 4 \
    >/dev/null 2>&1 & sleep 2; echo "insider $!"
    for api in $2; do echo "$api $("$1" $api 2>&1 | tr "\n" " ")"; done; wait' \
    "$memhog" "$BUILD/tests/e2e/nvml_list" "$NVML_LISTS")
wait "$outsider"
insider=$(echo "$lists" | sed -n 's/^insider //p')
for api in $NVML_LISTS; do
    listed=$(echo "$lists" | sed -n "s/^$api //p")
    if echo "$listed" | grep -qw "$outsider"; then
        verdict=FAIL; failed=$((failed + 1))
    elif [ -n "$insider" ] && echo "$listed" | grep -qw "$insider"; then
        verdict=PASS; passed=$((passed + 1))
    else
        verdict=INFO # not listed there (a graphics or MPS list), or pids of another namespace
    fi
    echo "   $api: $listed(tenant $insider, outsider $outsider): $verdict"
    rows+=("| nvml-$api | \`nvml_list $api\` in the slice, beside a process outside it | $verdict | - | - | - | - | listed: $listed; tenant $insider, outside $outsider |")
done

{
    echo "# carve memcap on $gpu, $date"
    echo
    echo "- GPU: $gpu"
    echo "- driver: $driver"
    echo "- carve: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
    echo "- command: \`bash bench/gpu/run-memcap.sh\`; every case runs as \`$CARVE run --memory $CAP -- ...\`"
    echo "- a case passes when it sees the slice (total 4096 MiB; JAX: allocator limit <= 4096 MiB),"
    echo "  fits 3 GiB, and gets the framework's own out-of-memory error on 2 GiB more"
    echo
    echo "| case | command | result | sees MiB | fit 3 GiB | OOM on +2 GiB | error type | notes |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "$passed passed, $failed failed"
    echo
    echo "## Output of each case (last 40 lines)"
    for log in "$LOGS"/*.log; do
        [ -f "$log" ] || continue
        echo
        echo "### $(basename "$log" .log)"
        echo '```'
        tail -n 40 "$log"
        echo '```'
    done
} >"$report"

echo
echo "report: $report"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
