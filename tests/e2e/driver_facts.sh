#!/usr/bin/env bash
# san: yes (no libcarve: the probe and the simulated GPU only)
# driver_facts.sh - bench/gpu/driver_facts, the probe a GPU lease runs (`facts` step of
# bench/gpu/run-lease.sh) for the driver facts carve's memory accounting rests on, against
# the simulated GPU: it ends with status 0, prints every fact once, and gives the simulated
# driver's known answers, so that a probe that breaks fails here and not on the lease. Then
# on a simulated GPU too small for one of its sizes: that fact is an error, the status 1,
# and every other probe still runs and answers right. Last, bench/gpu/run-driver-facts.sh
# (the lease's step) writes its report.
#
#   BUILD=build bash tests/e2e/driver_facts.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
BUILD=${BUILD%/}
SIM=$BUILD/lib/carve/sim
PROBE=$BUILD/bench/driver_facts
MIB=$((1024 * 1024))
CTX=$((300 * MIB))
SMS=100
passed=0
failed=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

check() { # check DESC RC
    if [ "$2" -eq 0 ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); return 1; fi
}

for f in "$PROBE" "$SIM/libcuda.so.1" "$SIM/libnvidia-ml.so.1"; do
    if [ ! -e "$f" ]; then echo "FAIL - $f is missing: run make BUILD=$BUILD"; echo "0 passed, 1 failed"; exit 1; fi
done

# every fact the probe prints, in its order
names=(context.nvml_device_delta context.nvml_process_used context.cuMemGetInfo_used
    cuMemAlloc.taken.1 cuMemAlloc.taken.512 cuMemAlloc.taken.4096 cuMemAlloc.taken.1048576
    cuMemAlloc.taken.1048577 cuMemAlloc.taken.2097153 cuMemAlloc.taken.20971521
    cuMemAlloc.step.1 cuMemAlloc.step.513 cuMemAlloc.step.4097 cuMemAlloc.step.65537
    cuMemAlloc.step.262145 cuMemAlloc.step.524289
    cuMemAllocPitch.pitch.1000
    cuArrayCreate.taken.1x1_u8 cuArrayGetMemoryRequirements.result.1x1_u8
    cuArrayCreate.taken.1000x1000_f32 cuArrayGetMemoryRequirements.result.1000x1000_f32
    cuMemFree.result.freed_twice cuMemFree.result.never_allocated
    vmm.held.after_create vmm.held.after_map vmm.retain.same_handle vmm.held.after_retain
    vmm.held.after_release_created vmm.held.after_unmap vmm.held.after_release_retained
    share.held.after_create share.import.same_handle share.held.after_import
    share.nvml.after_import share.held.after_release_original
    share.nvml.after_release_original share.held.after_release_import share.held.after_close
    cuCtxSetLimit.taken.stack_4096 cuCtxSetLimit.taken.heap_256MiB
    cuCtxSetLimit.given_back.defaults cuMemPoolCreate.result.managed_nowhere
    managed.nvml.after_alloc managed.held.after_touch managed.nvml.after_touch
    cuMemAlloc_v1.exported cuArrayCreate_v1.exported cuMemAlloc_v1.result.1MiB
    signal.sigbus_kept)

# probe LABEL ENV...: the probe on a fresh simulated GPU; its output in $dir/LABEL, status in rc
probe() {
    local label=$1
    shift
    env CARVE_SIM_STATE="$dir/state-$label" CARVE_SIM_CTX_MEMORY=$CTX CARVE_SIM_SMS=$SMS \
        LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" "$PROBE" \
        >"$dir/$label" 2>"$dir/$label.err"
    rc=$?
    sed 's/^/    /' "$dir/$label" "$dir/$label.err"
}
# value LABEL NAME: the fact's value ("" when missing)
value() { sed -n "s/^fact $2 = \\(.*\\)  # .*/\\1/p" "$dir/$1"; }
# every_fact LABEL: 0 when each name is there once and nothing else is a fact
every_fact() {
    local n bad=0
    for n in "${names[@]}"; do
        [ "$(grep -c "^fact $n = " "$dir/$1")" -eq 1 ] || { echo "    missing or twice: $n"; bad=1; }
    done
    [ "$(grep -c '^fact ' "$dir/$1")" -eq "${#names[@]}" ] || { echo "    facts: $(grep -c '^fact ' "$dir/$1"), want ${#names[@]}"; bad=1; }
    return "$bad"
}
# expect LABEL NAME WANT...: the fact's value is WANT (several names: each)
expect() {
    local label=$1 want=$2 n got bad=0 list=""
    shift 2
    for n in "$@"; do
        got=$(value "$label" "$n")
        [ "$got" = "$want" ] || bad=1
        list+=" $n=$got"
    done
    check "$label:$list (want $want)" "$bad"
}

probe full
check "full: exits 0 (status $rc)" "$rc"
every_fact full
check "full: all ${#names[@]} facts, each once" $?
! grep -q '^fact .* = error ' "$dir/full"
check "full: no fact is an error" $?
grep -q '^# driver_facts: GPU 0 .*(simulated), driver .*, NVML yes' "$dir/full"
check "full: the header names the GPU, the driver and NVML" $?

expect full "$CTX" context.nvml_device_delta context.nvml_process_used context.cuMemGetInfo_used
# the simulated driver takes what driver 580 took on an H200 (carve/driver_pages.h): up to
# 1 MiB a slot in 512 B steps in 2 MiB pages, each page whole while a slot of it is taken;
# past 1 MiB whole pages. Per allocation of n: the pages n of them fill, over n.
pages_each() { # pages_each SIZE N
    local per_page=$((2 * MIB / (($1 + 511) / 512 * 512)))
    echo $((($2 + per_page - 1) / per_page * 2 * MIB / $2))
}
expect full "$(pages_each 1 64)" cuMemAlloc.taken.1 cuMemAlloc.taken.512 cuMemAlloc.taken.4096
expect full "$MIB" cuMemAlloc.taken.1048576
expect full $((2 * MIB)) cuMemAlloc.taken.1048577
expect full $((4 * MIB)) cuMemAlloc.taken.2097153
expect full $((22 * MIB)) cuMemAlloc.taken.20971521
# thousands of each small size (4096, or 256 MiB's worth): the H200's own figures come out
for size in 1 513 4097 65537 262145 524289; do
    n=$((size < 65536 ? 4096 : 256 * MIB / size))
    expect full "$(pages_each $size $n)" "cuMemAlloc.step.$size"
done
expect full 1024 cuMemAllocPitch.pitch.1000
expect full 512 cuArrayCreate.taken.1x1_u8                     # rows of 512 B
expect full $((4 * MIB)) cuArrayCreate.taken.1000x1000_f32     # 4096 B x 1000 rows, 2 MiB pages
# as driver 580: no answer for an array made without deferred mapping
expect full CUDA_ERROR_INVALID_VALUE cuArrayGetMemoryRequirements.result.1x1_u8 \
    cuArrayGetMemoryRequirements.result.1000x1000_f32
expect full CUDA_ERROR_INVALID_VALUE cuMemFree.result.freed_twice cuMemFree.result.never_allocated
expect full yes vmm.retain.same_handle
expect full $((64 * MIB)) vmm.held.after_create vmm.held.after_map vmm.held.after_retain \
    vmm.held.after_release_created vmm.held.after_unmap # held while the retain's reference is
expect full 0 vmm.held.after_release_retained
# the simulated driver has no cuMemExportToShareableHandle
expect full unsupported share.held.after_create share.import.same_handle share.held.after_import \
    share.nvml.after_import share.held.after_release_original share.nvml.after_release_original \
    share.held.after_release_import share.held.after_close
stack=$(((4096 - 1024) * 2048 * SMS)) # a stack per thread the GPU holds at once, beyond 1 KiB
heap=$((256 * MIB - 8 * MIB))
expect full "$stack" cuCtxSetLimit.taken.stack_4096
expect full "$heap" cuCtxSetLimit.taken.heap_256MiB
expect full $((stack + heap)) cuCtxSetLimit.given_back.defaults
expect full CUDA_SUCCESS cuMemPoolCreate.result.managed_nowhere
# the simulated driver places managed memory on the GPU at once; as driver 580's, its NVML
# leaves it out of the process's usage
expect full $((256 * MIB)) managed.held.after_touch
expect full 0 managed.nvml.after_alloc managed.nvml.after_touch
expect full no cuMemAlloc_v1.exported cuArrayCreate_v1.exported
expect full unsupported cuMemAlloc_v1.result.1MiB
expect full yes signal.sigbus_kept

# 1 GiB less the context's 300 MiB: 64 allocations of 20 MiB + 1 cannot fit, the rest can
probe small CARVE_SIM_MEMORY=1GiB CARVE_SIM_SMS=10 # (a stack of 60 MiB then fits)
[ "$rc" -eq 1 ]
check "small: exits 1, a fact is an error (status $rc)" $?
every_fact small
check "small: still all ${#names[@]} facts, each once" $?
expect small "error CUDA_ERROR_OUT_OF_MEMORY" cuMemAlloc.taken.20971521
[ "$(grep -c '^fact .* = error ' "$dir/small")" -eq 1 ]
check "small: that is the only error" $?
# the allocations made before the refusal were freed: the VMM probe after it sees its own
expect small $((64 * MIB)) vmm.held.after_create vmm.held.after_unmap
expect small 0 vmm.held.after_release_retained
grep -q '^# driver_facts: 1 error$' "$dir/small"
check "small: the last line counts 1 error" $?

# the lease's step: bench/gpu/run-driver-facts.sh's report, with the simulated nvidia-smi
PATH="$SIM/bin:$PATH" LD_LIBRARY_PATH="$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    CARVE_SIM_STATE="$dir/state-report" BUILD=$BUILD bash bench/gpu/run-driver-facts.sh \
    "$dir/report.md" >"$dir/report.log" 2>&1
rc=$?
rows=$(grep -c '^| `' "$dir/report.md" 2>/dev/null)
gpu=$(grep -c '^- GPU: NVIDIA .*(simulated); driver: [0-9]' "$dir/report.md" 2>/dev/null)
[ "$rc" -eq 0 ] && [ "${rows:-0}" -eq "${#names[@]}" ] && [ "${gpu:-0}" -eq 1 ] &&
    grep -q '^- command: `bash bench/gpu/run-driver-facts.sh`' "$dir/report.md"
check "run-driver-facts.sh: status $rc, a report with the GPU, its driver, the command and ${rows:-no} rows of facts" $? ||
    tail -n 20 "$dir/report.log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
