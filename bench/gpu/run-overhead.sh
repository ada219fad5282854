#!/usr/bin/env bash
# run-overhead.sh - on a real GPU: what does carve cost a driver call and a training loop?
#
#   bash bench/gpu/run-overhead.sh        (from a bare checkout, on the GPU machine)
#
# 1. bench/overhead.sh: median ns per cuMemAlloc+cuMemFree (4 KiB, 64 MiB) and per empty
#    cuLaunchKernel, plain and in a slice; targets <= 0.1 us added per launch, <= 1 us per
#    allocation.
# 2. bench/gpu/torch_train.py (ResNet-50, batch 64, synthetic data) plain and in a slice,
#    alternating, ROUNDS times each (default 3), best images/s of each; target: within 1%.
# The slice's --memory is the GPU's memory less 1 GiB. Writes
# docs/results/<date>-overhead-<gpu>.md. Timing never makes it fail; a run that breaks does.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-20}
STEPS=${STEPS:-100}
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
plain_best=
carve_best=
train_rows=()
if python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    for r in $(seq "$ROUNDS"); do
        for mode in plain carve; do
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
            if [ "$mode" = plain ]; then
                plain_best=$(python3 -c "print(max(float('$ips'), float('${plain_best:-0}')))")
            else
                carve_best=$(python3 -c "print(max(float('$ips'), float('${carve_best:-0}')))")
            fi
        done
    done
    train_note=installed
else
    echo "== training: skipped, PyTorch/torchvision with CUDA not installed"
    train_note="not installed"
fi

train_verdict="-"
ratio="-"
if [ -n "$plain_best" ] && [ -n "$carve_best" ]; then
    ratio=$(python3 -c "print(f'{100 * $carve_best / $plain_best:.2f}')")
    train_verdict=$(python3 -c "print('PASS' if $carve_best >= 0.99 * $plain_best else 'MISS')")
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
    echo "## Training: ResNet-50, batch 64, synthetic data, bf16 autocast ($WARMUP warm-up + $STEPS timed steps)"
    echo
    if [ "$train_note" = installed ]; then
        echo "| round | run | images/s |"
        echo "| --- | --- | --- |"
        printf '%s\n' "${train_rows[@]}"
        echo
        echo "| best plain images/s | best in slice images/s | slice / plain | target | verdict |"
        echo "| --- | --- | --- | --- | --- |"
        echo "| ${plain_best:--} | ${carve_best:--} | ${ratio}% | >= 99% | $train_verdict |"
    else
        echo "not run: PyTorch/torchvision with CUDA not installed"
    fi
} >"$report"

echo
echo "training: plain ${plain_best:--}, in slice ${carve_best:--} images/s (${ratio}%, $train_verdict)"
echo "report: $report"
[ "$broken" -eq 0 ]
