#!/usr/bin/env bash
# run-lease.sh - the GPU checks still open, most needed first, in one device call: a lease
# now gives a session 15 minutes of device time in all (the machine's start included) and
# one command at most 10, so each step runs only if its estimate fits what is left of
# BUDGET_S, under a timeout of what is left, and its report is copied out as soon as it ends.
#
#   OUT=/some/folder bash bench/gpu/run-lease.sh      (from a bare checkout, on the GPU machine)
#
# Steps, in order (LEASE_STEPS picks and orders some, comma-separated): the targets still
# missed on the H200 (2026-11-28) first, then the checks that passed there
#   compute-big    10 ms kernels at 30/70 and 4 x 25
#   latency        ResNet-50 beside a matmul loop: alone, plain, --priority, yields 60/90%
#   compute-varying  one kernel whose work varies (every 8th launch 8x longer) at 30/70, 4 x 25
#   compute-small  20 us kernels and graph replays at 30/70 and 4 x 25
#   paths          a 30% slice through each of the driver's launch entry points
#   facts          the driver facts carve's memory accounting rests on (bench/gpu/driver_facts)
#   abi            carve's CUDA/NVML declarations against the toolkit's headers and the driver
#   memcap         every framework held to 4 GiB; NVML's process lists filtered
#   overhead       what a launch and an allocation cost, with and without a limit
#   carved         carved against the real NVML (cap, escape, forgery, idle, restart, kill)
#   mps            carve run --mode mps: one daemon, caps, two clients, stopped
#   mig-check      carve's MIG table against NVML's (read only)
# Each step's report (docs/results/...) and the tail of its log go to OUT (default
# $OUT, else build/gpu/lease-out), with lease.md: each step, its status, its seconds, and
# doctor.txt: `carve doctor` on the node before the first step.
# An MPS control daemon left by a step that was cut off is asked to quit at the end (the
# device's rule: stop what you started). Exits 0 when every step that ran passed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
BUDGET_S=${BUDGET_S:-540}
LEASE_STEPS=${LEASE_STEPS:-compute-big,latency,compute-varying,compute-small,paths,facts,abi,memcap,overhead,carved,mps,mig-check}
OUT=${OUT:-$BUILD/gpu/lease-out}
export BUILD

# step NAME -> "ESTIMATE_SECONDS COMMAND...": the estimates are of an H100 with 16 CPUs,
# the build already done; shorter runs than each script's default, to fit the lease.
step_plan() {
    case $1 in
    abi) echo "15 bash bench/gpu/run-abi-check.sh docs/results/$(date -u +%F)-abi-check.md" ;;
    facts) echo "20 bash bench/gpu/run-driver-facts.sh docs/results/$(date -u +%F)-driver-facts.md" ;;
    compute-big) echo "75 env PARTS=accuracy KINDS=big SECS=15 bash bench/gpu/run-compute.sh" ;;
    latency) echo "170 env PARTS=latency LAT_SECS=10 bash bench/gpu/run-compute.sh" ;;
    carved) echo "90 env RUNS=1000 bash bench/gpu/run-carved.sh" ;;
    mig-check) echo "20 bash bench/gpu/run-mig-check.sh" ;;
    mps) echo "60 env SECS=10 bash bench/gpu/run-mps.sh" ;;
    memcap) echo "120 bash bench/gpu/run-memcap.sh" ;;
    paths) echo "45 env PARTS=paths PATH_SECS=3 bash bench/gpu/run-compute.sh" ;;
    compute-small) echo "100 env PARTS=accuracy KINDS=small,graph SECS=15 bash bench/gpu/run-compute.sh" ;;
    overhead) echo "150 env ROUNDS=1 STEPS=200 bash bench/gpu/run-overhead.sh" ;;
    compute-varying) echo "60 env PARTS=accuracy KINDS=varying SECS=10 bash bench/gpu/run-compute.sh" ;;
    *) return 1 ;;
    esac
}

for name in ${LEASE_STEPS//,/ }; do
    step_plan "$name" >/dev/null || {
        echo "run-lease: LEASE_STEPS: unknown step \`$name'; the steps are abi, facts, compute-big, latency," \
            "carved, mig-check, mps, memcap, paths, compute-small, overhead, compute-varying" >&2
        exit 2
    }
done
case $BUDGET_S in
'' | *[!0-9]*)
    echo "run-lease: BUDGET_S: \`$BUDGET_S' is not a whole number of seconds" >&2
    exit 2
    ;;
esac
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "run-lease: nvidia-smi -L finds no GPU; this needs a real one (or the simulated" \
        "GPU's nvidia-smi in PATH for a dry run)" >&2
    exit 2
fi

start=$SECONDS
mkdir -p "$OUT/logs" docs/results
stamp=$(mktemp)
# (by command line: a process's name is cut to 15 characters, which the server shares)
mps_daemons() { pgrep -f '(^|/)nvidia-cuda-mps-control( |$)' | sort; }
mps_before=$(mps_daemons)
echo "== building carve (counted in the budget of $BUDGET_S s)"
make -j"$(nproc)" BUILD="$BUILD" product >"$OUT/logs/build.log" 2>&1 || {
    tail -n 30 "$OUT/logs/build.log" >&2
    echo "run-lease: make failed" >&2
    exit 1
}

# the node as carve sees it (driver, GPUs, compute mode, a 1 GiB slice tried): a few seconds
echo "== carve doctor"
timeout 90 "$BUILD/bin/carve" doctor >"$OUT/doctor.txt" 2>&1
doctor_rc=$?
cat "$OUT/doctor.txt"

summary=()
failed=0
for name in ${LEASE_STEPS//,/ }; do
    read -r estimate cmd < <(step_plan "$name")
    left=$((BUDGET_S - (SECONDS - start)))
    if [ "$left" -lt "$estimate" ]; then
        summary+=("| $name | skipped: $left s left, it needs about $estimate | - | \`$cmd\` |")
        echo "== $name: skipped ($left s left, needs about $estimate)"
        continue
    fi
    echo "== $name: $cmd (about $estimate s; $left s left)"
    t0=$SECONDS
    # shellcheck disable=SC2086 # the command is words on purpose
    timeout -k 10 "$left" $cmd >"$OUT/logs/$name.log" 2>&1
    rc=$?
    took=$((SECONDS - t0))
    case $rc in
    0) status=passed ;;
    124 | 137) status="cut off at $left s (no report: the scripts write theirs at the end)" ;;
    *) status="exit $rc" ;;
    esac
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    summary+=("| $name | $status | $took | \`$cmd\` |")
    echo "   $status, ${took} s"
    find docs/results -maxdepth 1 -type f -newer "$stamp" -exec cp {} "$OUT/" \;
    tail -n 60 "$OUT/logs/$name.log" >"$OUT/logs/$name.tail"
done

# an MPS control daemon a cut-off step left behind: quit it through its own pipe directory
for pid in $(mps_daemons | comm -13 <(echo "$mps_before") -); do
    pipe=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^CUDA_MPS_PIPE_DIRECTORY=//p')
    echo "== an MPS control daemon (pid $pid, pipe ${pipe:-default}) was left: quitting it"
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control >/dev/null 2>&1
    sleep 2
    kill "$pid" 2>/dev/null
done
rm -f "$stamp"

IFS=, read -r gpu driver < <(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0)
{
    echo "# GPU lease run, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "- GPU: $(echo "$gpu" | xargs); driver: $(echo "$driver" | xargs)"
    echo "- commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "- command: \`BUDGET_S=$BUDGET_S LEASE_STEPS=$LEASE_STEPS bash bench/gpu/run-lease.sh\`"
    echo "- total: $((SECONDS - start)) s, the build included"
    echo "- \`carve doctor\`: exit $doctor_rc (doctor.txt)"
    echo
    echo "| step | status | seconds | command |"
    echo "| --- | --- | --- | --- |"
    printf '%s\n' "${summary[@]}"
} >"$OUT/lease.md"
cat "$OUT/lease.md"
[ "$failed" -eq 0 ]
