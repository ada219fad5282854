#!/usr/bin/env bash
# run-overhead.sh - on a real GPU: what does carve cost a driver call and a training loop?
#
#   bash bench/gpu/run-overhead.sh        (from a bare checkout, on the GPU machine)
#
# 1. bench/overhead.sh: median ns per cuMemAlloc+cuMemFree (4 KiB, 64 MiB) and per empty
#    cuLaunchKernel, plain and in a slice; targets <= 0.1 us added per launch, <= 1 us per
#    allocation.
# 2. bench/gpu/torch_train.py (ResNet-50, batch 64, synthetic data) plain and in a slice,
#    ROUNDS times each (default 4), which goes first alternating by round (the GPU's speed
#    drifts by several percent between runs); the verdict compares the means, target: within 1%.
# The slice's --memory is the GPU's memory less 1 GiB. Writes
# docs/results/<date>-overhead-<gpu>.md. Timing never makes it fail; a run that breaks does.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-4}
WARMUP=${WARMUP:-30}
STEPS=${STEPS:-400}
CARVE="$BUILD/bin/carve"
LOGS="$BUILD/gpu/overhead-logs"

source bench/gpu/gpu-setup.sh run-overhead "$LOGS"
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -n1)
memory="$(( ${total_mib%%[^0-9]*} / 1024 - 1 ))GiB"
report="docs/results/$date-overhead-$slug.md"
broken=0
overhead_broken=0

echo "== driver-call overhead: bash bench/overhead.sh"
if ! BUILD="$BUILD" CARVE_BENCH_MEMORY="$memory" bash bench/overhead.sh >"$LOGS/overhead.txt" 2>"$LOGS/overhead.err"; then
    echo "run-overhead: bench/overhead.sh failed:" >&2
    tail -n 20 "$LOGS/overhead.err" >&2
    broken=1
    overhead_broken=1
fi
cat "$LOGS/overhead.txt"

# images_per_s LOG: the number from torch_train.py's JSON line, or empty.
images_per_s() {
    grep '^{' "$1" | tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])' 2>/dev/null
}

train=(python3 bench/gpu/torch_train.py --warmup "$WARMUP" --steps "$STEPS")
plain_all=()
carve_all=()
train_rows=()
if python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    for r in $(seq "$ROUNDS"); do
        order="plain carve"
        [ $((r % 2)) -eq 0 ] && order="carve plain"
        for mode in $order; do
            log="$LOGS/train-$mode-$r.log"
            if [ "$mode" = plain ]; then cmd=("${train[@]}"); else cmd=("$CARVE" run --memory "$memory" -- "${train[@]}"); fi
            echo "== training round $r, $mode: ${cmd[*]}"
            "${cmd[@]}" >"$log" 2>&1
            ips=$(images_per_s "$log")
            if [ -z "$ips" ]; then
                echo "   failed; last lines:"; tail -n 15 "$log" | sed 's/^/   | /'
                broken=1
                continue
            fi
            echo "   $ips images/s"
            train_rows+=("| $r | $mode | $ips |")
            if [ "$mode" = plain ]; then plain_all+=("$ips"); else carve_all+=("$ips"); fi
        done
    done
    train_note=installed
else
    echo "== training: skipped, PyTorch/torchvision with CUDA not installed"
    train_note="not installed"
fi

train_verdict="-"
ratio="-"
plain_best=
carve_best=
if [ "${#plain_all[@]}" -gt 0 ] && [ "${#carve_all[@]}" -gt 0 ]; then
    read -r plain_best carve_best plain_mean carve_mean ratio best_ratio train_verdict < <(
        python3 - "${plain_all[*]}" "${carve_all[*]}" <<'PY'
import sys
p = [float(x) for x in sys.argv[1].split()]
c = [float(x) for x in sys.argv[2].split()]
pm, cm = sum(p) / len(p), sum(c) / len(c)
print(max(p), max(c), f"{pm:.2f}", f"{cm:.2f}", f"{100 * cm / pm:.2f}",
      f"{100 * max(c) / max(p):.2f}", "PASS" if cm >= 0.99 * pm else "MISS")
PY
    )
fi

{
    echo "# carve overhead on $gpu, $date"
    echo
    echo "- GPU: $gpu"
    echo "- driver: $driver"
    echo "- carve: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
    echo "- command: \`bash bench/gpu/run-overhead.sh\` (slices: \`$CARVE run --memory $memory -- ...\`)"
    echo "- targets: <= 0.1 us (100 ns) added per launch, <= 1 us (1000 ns) added per allocation,"
    echo "  training throughput in a slice within 1% of plain"
    echo
    echo "## Driver calls (bench/overhead.sh, median and p99 ns per call)"
    echo
    echo '```'
    cat "$LOGS/overhead.txt"
    [ "$overhead_broken" -eq 0 ] || cat "$LOGS/overhead.err"
    echo '```'
    echo
    echo "## Training: ResNet-50, batch 64, synthetic data, bf16 autocast ($WARMUP warm-up + $STEPS timed steps, order alternating by round)"
    echo
    if [ "$train_note" = installed ]; then
        echo "| round | run | images/s |"
        echo "| --- | --- | --- |"
        printf '%s\n' "${train_rows[@]}"
        echo
        echo "| | plain images/s | in slice images/s | slice / plain | target | verdict |"
        echo "| --- | --- | --- | --- | --- | --- |"
        echo "| mean | ${plain_mean:--} | ${carve_mean:--} | ${ratio}% | >= 99% | $train_verdict |"
        echo "| best | ${plain_best:--} | ${carve_best:--} | ${best_ratio:--}% | | |"
    else
        echo "not run: PyTorch/torchvision with CUDA not installed"
    fi
} >"$report"

echo
echo "training: mean plain ${plain_mean:--}, in slice ${carve_mean:--} images/s (${ratio}%, $train_verdict)"
echo "report: $report"
[ "$broken" -eq 0 ]
