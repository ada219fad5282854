#!/usr/bin/env bash
# run-mig-check.sh - on a real GPU, read only: does carve's MIG profile table for this model
# agree with what the driver's NVML says, and what does carve see of the GPU's MIG state?
#
#   bash bench/gpu/run-mig-check.sh   (from a bare checkout, on the GPU machine; GPU 0)
#
# Rows of the report:
#  1. MIG mode as nvidia-smi reports it (current and pending).
#  2. `carve mig profiles --check -i 0`: profile IDs, compute slices, counts, placements and
#     memory against NVML (status 1 when anything but memory differs). With MIG mode off the
#     driver may not answer the profile queries; the row then shows its word.
#  3. `carve mig list -i 0`: the instances carve sees (none with MIG mode off).
#  4. `carve mig plan -i 0 30GiB 15GiB 8GiB`: a plan against this GPU's free slots,
#     changing nothing (plan never applies).
# Never enables or disables MIG, creates or destroys an instance, or changes any setting of
# the card. Writes docs/results/<date>-mig-check-<gpu>.md; exits 1 when the table check
# finds a difference in anything but memory, 2 without a GPU.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE="$BUILD/bin/carve"
LOGS="$BUILD/gpu/mig-logs"
source bench/gpu/gpu-setup.sh run-mig-check "$LOGS"
report="docs/results/$date-mig-check-$slug.md"

# shellcheck source=bench/gpu/rows.bash
. bench/gpu/rows.bash
# run NAME CMD...: CMD's output into $LOGS/NAME.log, its status into rc
run() {
    local name=$1
    shift
    "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
}
first() { head -n "${2:-3}" "$LOGS/$1.log" | tr '\n' ' ' | sed 's/|/\\|/g; s/  */ /g'; }

mode=$(nvidia-smi --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader -i 0 2>&1 | xargs)
row "MIG mode (current, pending) by nvidia-smi" "${mode:-?}" INFO

run check "$CARVE" mig profiles --check --index 0
# status 1 is both "a difference" (the table was printed) and "no answer" (an error line)
if [ "$rc" -eq 0 ]; then
    verdict=PASS
elif grep -q "carve's table against NVML" "$LOGS/check.log"; then
    verdict=FAIL
else
    verdict=INFO # the driver did not answer (no MIG, or not with MIG mode off): no verdict
fi
profiles=$(grep -cE '^  [0-9]+g\.' "$LOGS/check.log")
differ=$(grep -E '^  [0-9]+g\.' "$LOGS/check.log" | grep -cvE '^ +[^ ]+ +ok +ok +ok +ok ')
row "carve mig profiles --check -i 0 (status $rc)" \
    "$(first check 1); $profiles profiles, $differ differ in ID, slices, count or starts" "$verdict"

run list "$CARVE" mig list --index 0
row "carve mig list -i 0 (status $rc)" "$(first list 3)" INFO

run plan "$CARVE" mig plan --index 0 30GiB 15GiB 8GiB
row "carve mig plan -i 0 30GiB 15GiB 8GiB (status $rc; plans only)" "$(first plan 1)" INFO

{
    echo "# MIG profile table check on $gpu ($date)"
    echo
    echo "Driver $driver. Command: \`bash bench/gpu/run-mig-check.sh\`, at commit"
    echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown). Read only: MIG mode and instances are not changed."
    echo
    echo "| check | result | verdict |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    for name in check list plan; do
        echo
        echo "\`$name\` output:"
        echo
        echo '```'
        head -n 60 "$LOGS/$name.log"
        echo '```'
    done
} >"$report"
echo "== report: $report ($failures failed)"
[ "$failures" -eq 0 ]
