#!/usr/bin/env bash
# run-compute.sh - on a real GPU: are compute shares accurate, and does latency priority
# keep a latency tenant's tail next to a busy batch neighbour?
#
#   bash bench/gpu/run-compute.sh        (from a bare checkout, on the GPU machine)
#
# 1. Accuracy: bench/compute_load (spin kernels whose solo speed --calibrate measures) in
#    slices at 30/70 and 4 x 25 (hard caps), for big kernels (10 ms), small ones (20 us) and
#    graph replays (10 x 20 us), SECS seconds each (default 30, the issue's span); KINDS
#    (big,small,graph) picks some of them, and may name varying too: one kernel whose work
#    varies, 0.5 ms with every 8th launch running 4 ms (compute_load --long-every), and
#    growing: big kernels that run 14 ms instead of 10 from the fifth second on
#    (compute_load --grow-after; its worst window is the change's). Each kind first runs alone, uncapped: a slice's
#    share is its completed work over that solo rate (launch gaps keep 20 us kernels near 80%
#    of the spin loop's calibrated rate even alone, so the raw fraction would blame the cap
#    for them). Per slice: the mean share and the worst 1-second window; targets +-2 and +-5
#    points.
# 2. Latency: ResNet-50 fp16 batch 8 (2 ms think) next to a bf16 8192^2 matmul loop: each
#    alone, plain sharing, MPS, MPS with the batch side at 30% active threads, carve with
#    --priority latency/batch (and with the batch side's rate while it yields at 60% and 80%
#    instead of the default 90%: CARVE_BATCH_YIELD), carve --mode mps --priority latency/batch (MPS
#    client priorities), and carve's pacing inside MPS with client priorities; and a
#    transformer decode loop alone, plain, with carve and with carve --mode mps.
#    Target: p99 <= 1.10x solo while the batch side keeps >= 80% of its solo TFLOP/s; each
#    row gives both ratios.
# 3. Entry points (PARTS=paths, not in the default set): a 30% slice launching through each
#    of the driver's launch entry points in turn, PATH_SECS (5) seconds each.
# Writes docs/results/<date>-compute-<gpu>.md. An MPS control daemon is started with its
# own pipe and log directories and stopped before the script ends; the GPU's compute mode
# and settings are not touched.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
SECS=${SECS:-30}
PATH_SECS=${PATH_SECS:-5}
LAT_SECS=${LAT_SECS:-15}
PARTS=${PARTS:-accuracy,latency,mps,decoder} # which parts run
KINDS=${KINDS:-big,small,graph}               # which kernels the accuracy part runs
for kind in ${KINDS//,/ }; do
    case $kind in
    big | small | graph | varying | growing) ;;
    *) echo "run-compute: KINDS: unknown kind \`$kind'; use big, small, graph, varying, growing (comma-separated)" >&2; exit 2 ;;
    esac
done
CARVE="$BUILD/bin/carve"
LOAD="$BUILD/bench/compute_load"
LOGS="$BUILD/gpu/compute-logs"
export PYTHONUNBUFFERED=1

source bench/gpu/gpu-setup.sh run-compute "$LOGS"
# a run of some parts only gets a report of its own, so that two runs (each within the device's
# 10-minute limit: accuracy, then the rest) do not overwrite each other
parts_suffix=
[ "$PARTS" = accuracy,latency,mps,decoder ] || parts_suffix="-${PARTS//,/-}"
[ "$KINDS" = big,small,graph ] || [[ $PARTS != *accuracy* ]] || parts_suffix+="-${KINDS//,/-}"
report="docs/results/$date-compute-$slug$parts_suffix.md"
ipu=$("$LOAD" --calibrate | python3 -c 'import json,sys; print(json.load(sys.stdin)["iters_per_us"])')
echo "== spin loop: $ipu iterations per us alone"
ipu_arg=(--iters-per-us "$ipu")
[ "$ipu" = 0 ] && ipu_arg=() # the simulated GPU (a dry run): its kernels sleep, nothing to calibrate

acc_rows=()
solo_rows=()
# load_args KIND: compute_load's options for a kind of the accuracy part, into LOAD_ARGS.
load_args() {
    if [ "$1" = varying ]; then
        LOAD_ARGS=(--kind small --kernel-us 500 --long-every 8 --long-us 4000)
    elif [ "$1" = growing ]; then
        LOAD_ARGS=(--kind big --grow-after 5 --grow-us 14000)
    else
        LOAD_ARGS=(--kind "$1")
    fi
}

# solo_share KIND: the raw share this kind reaches alone, with no carve around it.
solo_share() {
    load_args "$1"
    "$LOAD" "${LOAD_ARGS[@]}" --seconds "$SECS" "${ipu_arg[@]}" --label solo >"$LOGS/acc-$1-solo.log" 2>&1
    grep '"total_share"' "$LOGS/acc-$1-solo.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_share"])'
}

# share_row TARGET LOG SOLO: "| mean | mean from window 1 | worst | PASS/MISS | notes |" for
# one slice's log, its windows taken as shares of the solo rate SOLO.
share_row() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
t, path, solo = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
w = [100 * json.loads(l)["share"] / solo for l in open(path) if '"window"' in l]
if not w:
    last = open(path).read().strip().splitlines()[-1:] or ["no output"]
    print(f"| - | - | - | - | {last[0][:120]} |"); sys.exit()
rest = w[1:] or w
mean_all, mean_rest = sum(w) / len(w), sum(rest) / len(rest)
worst = max(rest, key=lambda x: abs(x - t))
ok = abs(mean_rest - t) <= 2 and abs(worst - t) <= 5
print(f"| {mean_all:.2f} | {mean_rest:.2f} | {worst:.1f} (window 0: {w[0]:.1f}) | "
      f"{'PASS' if ok else 'MISS'} | {len(w)} windows |")
PY
}

# accuracy KIND SHARE...: one slice per share at once; a row per slice.
accuracy() {
    local kind=$1 i=0 s pids=()
    shift
    echo "== accuracy: $kind kernels, slices at $* (alone: $solo raw)"
    for s in "$@"; do
        load_args "$kind"
        "$CARVE" run --quiet --compute "$s" -- "$LOAD" "${LOAD_ARGS[@]}" --seconds "$SECS" \
            "${ipu_arg[@]}" --label "s$i" >"$LOGS/acc-$kind-$#-$i.log" 2>&1 &
        pids+=($!)
        i=$((i + 1))
    done
    wait "${pids[@]}"
    i=0
    for s in "$@"; do
        local row
        row=$(share_row "${s%%[%+]*}" "$LOGS/acc-$kind-$#-$i.log" "$solo")
        echo "   slice $i ($s): $row"
        acc_rows+=("| $kind | $* | $i: $s $row")
        i=$((i + 1))
    done
}

if [[ $PARTS == *accuracy* ]]; then
    for kind in ${KINDS//,/ }; do
        solo=$(solo_share "$kind")
        echo "== $kind kernels alone: $solo% of the calibrated rate"
        solo_rows+=("| $kind | $solo |")
        accuracy "$kind" 30% 70%
        accuracy "$kind" 25% 25% 25% 25%
    done
fi

# 3. Entry points (PARTS=paths): one 30% slice of small kernels at a time, launching through
#    each of the driver's launch entry points (compute_load --launch), PATH_SECS seconds each.
path_rows=()
if [[ $PARTS == *paths* ]]; then
    solo=$(SECS=$PATH_SECS solo_share small)
    echo "== entry points: small kernels alone reach $solo% of the calibrated rate"
    for api in kernel kernel-ptsz ex ex-ptsz coop coop-ptsz multi-device launch grid grid-async; do
        "$CARVE" run --quiet --compute 30% -- "$LOAD" --kind small --seconds "$PATH_SECS" \
            "${ipu_arg[@]}" --launch "$api" --label "$api" >"$LOGS/path-$api.log" 2>&1
        path_rows+=("| $api $(share_row 30 "$LOGS/path-$api.log" "$solo")")
        echo "   ${path_rows[-1]}"
    done
fi

lat_rows=()
field() { grep '^{' "$1" | tail -n 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])" 2>/dev/null || echo -; }
declare -A solo_p99 # model -> p99 alone, for the ratios
solo_tflops=
# ratios MODEL P99 TFLOPS: "| p99/solo | batch/solo | met? |"
ratios() {
    python3 - "${solo_p99[$1]:-}" "$2" "$solo_tflops" "$3" <<'PY'
import sys
def num(x):
    try: v = float(x)
    except ValueError: return None
    return v if v == v else None  # nan: no figure
sp, p, st, t = (num(a) for a in sys.argv[1:5])
r = p / sp if sp and p else None
b = t / st if st and t else None
met = "yes" if r is not None and b is not None and r <= 1.10 and b >= 0.80 else "no"
print(f"| {r:.2f}x |" if r else "| - |", f" {100 * b:.1f}% |" if b else " - |", f" {met} |")
PY
}
# pair NAME MODEL LAT_PREFIX BATCH_PREFIX: both tenants, the batch one started first.
pair() {
    local name=$1 model=$2 latp=$3 batchp=$4 b
    echo "== latency: $name ($model)"
    # shellcheck disable=SC2086 # the prefix is words on purpose
    env $batchp python3 bench/gpu/batch_tenant.py --measure-from 10 --measure-seconds "$LAT_SECS" \
        >"$LOGS/batch-$name.log" 2>&1 &
    b=$!
    sleep 3
    # shellcheck disable=SC2086
    env $latp python3 bench/gpu/latency_tenant.py --model "$model" --seconds "$LAT_SECS" \
        >"$LOGS/lat-$name.log" 2>&1
    wait "$b"
    local p99 tflops
    p99=$(field "$LOGS/lat-$name.log" p99_ms)
    tflops=$(field "$LOGS/batch-$name.log" tflops)
    lat_rows+=("| $name | $model | $(field "$LOGS/lat-$name.log" p50_ms) | $p99 | $tflops $(ratios "$model" "$p99" "$tflops")")
    echo "   ${lat_rows[-1]}"
}

if [[ $PARTS == *latency* ]]; then
echo "== latency: alone"
python3 bench/gpu/latency_tenant.py --seconds "$LAT_SECS" >"$LOGS/lat-solo.log" 2>&1
python3 bench/gpu/batch_tenant.py --measure-from 3 --measure-seconds 10 >"$LOGS/batch-solo.log" 2>&1
solo_p99[resnet50]=$(field "$LOGS/lat-solo.log" p99_ms)
solo_tflops=$(field "$LOGS/batch-solo.log" tflops)
lat_rows+=("| each alone | resnet50 | $(field "$LOGS/lat-solo.log" p50_ms) | ${solo_p99[resnet50]} | $solo_tflops | 1.00x | 100% | - |")
echo "   ${lat_rows[-1]}"
pair plain resnet50 "" ""
pair carve resnet50 "$CARVE run --quiet --priority latency --" "$CARVE run --quiet --priority batch --"
for y in 60 80; do
    pair "carve-yield-$y" resnet50 "$CARVE run --quiet --priority latency --" \
        "CARVE_BATCH_YIELD=$y% $CARVE run --quiet --priority batch --"
done
fi

# mps and decoder run without latency too (their ratios then lack its solo figures)
if [[ $PARTS == *mps* ]]; then
mps_dir=$(mktemp -d)
export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
# quit goes to this script's daemon only (its own pipe directory, whatever the environment
# holds by then), and waits for it to be gone before carve's own MPS runs start theirs
stop_mps() {
    local pid i
    pid=$(cat "$mps_dir/pipe/nvidia-cuda-mps-control.pid" 2>/dev/null)
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe nvidia-cuda-mps-control >/dev/null 2>&1
    for i in $(seq 50); do # up to 10 s
        { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; } || break
        sleep 0.2
    done
    [ -n "$pid" ] || sleep 2 # no pid file to watch: give it the time it used to get
}
trap stop_mps EXIT
if nvidia-cuda-mps-control -d; then
    sleep 1
    pair mps resnet50 "" ""
    pair mps-batch-30 resnet50 "" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30"
    # carve's pacing (the batch side keeps a short queue while the latency side is active)
    # inside MPS, with MPS client priorities
    pair mps-priority-paced resnet50 "CUDA_MPS_CLIENT_PRIORITY=0 $CARVE run --quiet --priority latency --" \
        "CUDA_MPS_CLIENT_PRIORITY=1 $CARVE run --quiet --priority batch --"
    stop_mps
else
    lat_rows+=("| mps | resnet50 | - | - | nvidia-cuda-mps-control -d failed | - | - | - |")
fi
trap - EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
# carve's own MPS mode (its daemon, started by the first carve run and stopped by the last)
pair mps-priority resnet50 "$CARVE run --quiet --mode mps --priority latency --" \
    "$CARVE run --quiet --mode mps --priority batch --"
fi
if [[ $PARTS == *decoder* ]]; then

python3 bench/gpu/latency_tenant.py --model decoder --seconds "$LAT_SECS" >"$LOGS/lat-dsolo.log" 2>&1
solo_p99[decoder]=$(field "$LOGS/lat-dsolo.log" p99_ms)
lat_rows+=("| alone | decoder | $(field "$LOGS/lat-dsolo.log" p50_ms) | ${solo_p99[decoder]} | - | 1.00x | - | - |")
pair plain-decoder decoder "" ""
pair carve-decoder decoder "$CARVE run --quiet --priority latency --" "$CARVE run --quiet --priority batch --"
if [[ $PARTS == *mps* ]]; then
    pair mps-priority-decoder decoder "$CARVE run --quiet --mode mps --priority latency --" \
        "$CARVE run --quiet --mode mps --priority batch --"
fi
fi

{
    echo "# carve compute shares and latency priority on $gpu, $date"
    echo
    echo "- GPU: $gpu"
    echo "- driver: $driver"
    echo "- command: \`bash bench/gpu/run-compute.sh\` (SECS=$SECS, LAT_SECS=$LAT_SECS, PATH_SECS=$PATH_SECS, PARTS=$PARTS, KINDS=$KINDS)"
    echo "- spin kernel calibration: $ipu iterations per us alone"
    echo
    if [ "${#acc_rows[@]}" -gt 0 ]; then
        echo "## Accuracy (hard caps; completed work over the same kernels' solo rate, per 1-second window)"
        echo
        echo "| kernels | raw share alone (% of calibrated spin rate) |"
        echo "| --- | --- |"
        printf '%s\n' "${solo_rows[@]}"
        echo
        echo "| kernels | slices | slice | mean, all windows | mean, from window 1 | worst window from 1 | +-2 mean, +-5 window | notes |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${acc_rows[@]}"
        echo
    fi
    if [ "${#path_rows[@]}" -gt 0 ]; then
        echo "## Every launch entry point at a 30% cap (small kernels, share of their solo rate)"
        echo
        echo "| entry point | mean, all windows | mean, from window 1 | worst window from 1 | +-2 mean, +-5 window | notes |"
        echo "| --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${path_rows[@]}"
        echo
    fi
    if [ "${#lat_rows[@]}" -gt 0 ]; then
        echo "## Latency next to a batch tenant"
        echo
        echo "| set-up | latency model | p50 ms | p99 ms | batch TFLOP/s | p99 / solo | batch / solo | p99 <= 1.10x and batch >= 80%? |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${lat_rows[@]}"
        echo
    fi
    echo "## Logs (last lines)"
    for log in "$LOGS"/lat-*.log "$LOGS"/batch-*.log; do
        [ -e "$log" ] || continue
        echo
        echo "### $(basename "$log" .log)"
        echo '```'
        tail -n 5 "$log"
        echo '```'
    done
} >"$report"
echo "report: $report"
