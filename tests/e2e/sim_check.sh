#!/usr/bin/env bash
# san: yes
# sim_check.sh - the simulated GPU on its own: tests/e2e/sim_check.c under two
# configurations (one 40 GiB GPU; two GPUs seen in reverse through CUDA_VISIBLE_DEVICES),
# and its nvidia-smi.
#
#   BUILD=build bash tests/e2e/sim_check.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
SIM=$BUILD/lib/carve/sim
passed=0
failed=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

check() { if [ "$2" -eq 0 ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); fi; }

# run_program LABEL ENV...: sim_check with a fresh simulated GPU.
run_program() {
    local label=$1 out rc
    shift
    out=$(env CARVE_SIM_STATE="$dir/state-$label" "$@" "$BUILD/tests/e2e/sim_check" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/    /'
    check "sim_check, $label: $(echo "$out" | tail -n1)" "$rc"
}

run_program one-gpu CARVE_SIM_DEVICES=1 CARVE_SIM_MEMORY=40GiB CARVE_SIM_SMS=108 \
    CARVE_SIM_CTX_MEMORY=300MiB SIM_CHECK_DEVICES=1 SIM_CHECK_TOTAL=$((40 << 30)) \
    SIM_CHECK_SMS=108 SIM_CHECK_CTX=$((300 << 20))
run_program reordered CARVE_SIM_DEVICES=2 CUDA_VISIBLE_DEVICES=1,0 SIM_CHECK_REORDER=1 \
    SIM_CHECK_DEVICES=2 SIM_CHECK_TOTAL=$((80 << 30)) SIM_CHECK_SMS=132 \
    SIM_CHECK_CTX=$((500 << 20))
run_program truncated CARVE_SIM_DEVICES=2 CUDA_VISIBLE_DEVICES=0,7,1 SIM_CHECK_DEVICES=1 \
    SIM_CHECK_TOTAL=$((80 << 30)) SIM_CHECK_SMS=132 SIM_CHECK_CTX=$((500 << 20))
# the GPU time-slicing between processes (CARVE_SIM_TIMESLICE_US), everything else as well
run_program time-sliced CARVE_SIM_DEVICES=1 CARVE_SIM_TIMESLICE_US=1000 SIM_CHECK_TIMESLICE=1 \
    SIM_CHECK_DEVICES=1 SIM_CHECK_TOTAL=$((80 << 30)) SIM_CHECK_SMS=132 \
    SIM_CHECK_CTX=$((500 << 20))

smi=(env CARVE_SIM_STATE="$dir/smi" "$SIM/bin/nvidia-smi")
got=$(CARVE_SIM_MEMORY=40GiB "${smi[@]}" --query-gpu=memory.total --format=csv,noheader,nounits)
[ "$got" = 40960 ]
check "nvidia-smi memory.total for 40 GiB: '$got'" $?
got=$(CARVE_SIM_DEVICES=2 "${smi[@]}" -L | grep -c '^GPU ')
[ "$got" = 2 ]
check "nvidia-smi -L lists 2 GPUs: $got" $?
! "${smi[@]}" --query-gpu=bogus >/dev/null 2>&1
check "nvidia-smi refuses an unknown field" $?

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
