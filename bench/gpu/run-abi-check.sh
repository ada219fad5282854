#!/usr/bin/env bash
# run-abi-check.sh - on the GPU machine: do carve's own CUDA driver and NVML declarations
# (include/carve/) agree with NVIDIA's <cuda.h> and <nvml.h> and with the installed driver?
#
#   bash bench/gpu/run-abi-check.sh [REPORT]   (from the repository root; REPORT or stdout)
#
# Builds bench/gpu/abi-check.c twice, against the toolkit's headers (CUDA_HOME, default
# /usr/local/cuda, else the toolkit of the nvcc in PATH; CUDA 12.8 or later) and with
# -DCARVE_SIDE against carve's, runs both and diffs their "name value" lines: struct sizes,
# alignments and offsets, enum and macro values, whether libcuda.so.1 / libnvidia-ml.so.1
# export each entry point carve declares, and what the driver's cuGetProcAddress answers for
# each row of include/carve/driver_entries.def
# (needs a GPU; "unavailable" without one). Exit status: 0 the same, 1 a difference, 2 the
# build failed.
#
# ABI_FACTS=cuda compares the CUDA driver API's sizes, alignments, offsets and values alone,
# against <cuda.h> only: NVML's side is carve's own header standing in for <nvml.h> (the
# toolkit of a machine without a driver may have none), and what the libraries export and
# cuGetProcAddress answers are left out. No GPU needed: tests/e2e/abi_headers.sh runs it
# wherever a CUDA 12.8+ toolkit is installed.
#
# ABI_FACTS=nvml-bindings compares NVML's sizes, alignments, offsets and values alone, against
# the bindgen output of an nvml.h that Debian's librust-nvml-wrapper-sys-dev ships
# (NVML_BINDINGS, default its bindings.rs: NVML 11.8) instead of a toolkit, read by
# bench/gpu/nvml-bindings-facts.py. What that older NVML lacks is left out and counted; the
# profile counts that grew since it (NVML_*_INSTANCE_PROFILE_COUNT) may be larger on carve's
# side. No toolkit, no GPU.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

report=${1:-/dev/stdout}
# the toolkit: CUDA_HOME, else /usr/local/cuda, else where the nvcc in PATH lives (a machine
# whose toolkit came some other way has no /usr/local/cuda)
if [ -z "${CUDA_HOME:-}" ]; then
    CUDA_HOME=/usr/local/cuda
    if [ ! -e "$CUDA_HOME/include/cuda.h" ] && nvcc_path=$(command -v nvcc); then
        CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")
    fi
fi
FACTS=${ABI_FACTS:-all}
CC=${CC:-gcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# every entry point carve declares, as SYM(lib, name) lines for abi-check.c
{
    grep -ho '^CUresult cu[A-Za-z0-9_]*(' include/carve/cuda_abi.h |
        sed 's/^CUresult \(.*\)(/SYM(cuda_lib, \1)/'
    grep -ho '^\(nvmlReturn_t\|const char \*\)[ ]*nvml[A-Za-z0-9_]*(' include/carve/nvml*.h |
        sed 's/^.*\(nvml[A-Za-z0-9_]*\)(/SYM(nvml_lib, \1)/'
} >"$work/syms.h"

flags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Icommon
       "-DABI_SYMS=\"$work/syms.h\"")
toolkit_inc=(-I"$CUDA_HOME/include")
case $FACTS in
all | nvml-bindings) ;;
cuda)
    mkdir -p "$work/nvml-stand-in"
    echo '#include "carve/nvml_mig_abi.h"' >"$work/nvml-stand-in/nvml.h"
    toolkit_inc=(-I"$work/nvml-stand-in" "${toolkit_inc[@]}") # before a toolkit's own nvml.h
    ;;
*)
    echo "run-abi-check: ABI_FACTS=$FACTS: all, cuda or nvml-bindings" >&2
    exit 2
    ;;
esac
# both sides, from one copy of abi-check.c; a value the toolkit's headers do not declare (an
# older or newer header's name: CUDA 13.0's nvml.h has no NVML_PROCESS_MODE_*) is taken out of
# that copy, on both sides, and named in the report as not compared
cp bench/gpu/abi-check.c "$work/abi-check.c"
build_failed() {
    { echo "run-abi-check: build failed"; cat "$work/build.log"; } >"$report"
    exit 2
}
LC_ALL=C "$CC" "${flags[@]}" -Ibench/gpu -DCARVE_SIDE -o "$work/carve-side" \
    "$work/abi-check.c" common/entries.c -ldl 2>"$work/build.log" || build_failed
not_declared=()
until [ "$FACTS" = nvml-bindings ] ||
    LC_ALL=C "$CC" "${flags[@]}" -Ibench/gpu "${toolkit_inc[@]}" -o "$work/toolkit-side" \
        "$work/abi-check.c" -ldl 2>"$work/build.log"; do
    names=$(sed -n "s/.*error: '\([A-Za-z_][A-Za-z0-9_]*\)' undeclared.*/\1/p" "$work/build.log" |
        sort -u)
    taken=0
    for name in $names; do
        grep -q "VAL($name);" "$work/abi-check.c" || continue
        sed -i "s/VAL($name);//g" "$work/abi-check.c"
        not_declared+=("$name")
        taken=1
    done
    [ "$taken" -eq 1 ] || build_failed
done
# what was taken out of the toolkit's side goes from carve's too
if [ "${#not_declared[@]}" -gt 0 ]; then
    LC_ALL=C "$CC" "${flags[@]}" -Ibench/gpu -DCARVE_SIDE -o "$work/carve-side" \
        "$work/abi-check.c" common/entries.c -ldl 2>"$work/build.log" || build_failed
fi
"$work/carve-side" >"$work/carve.txt"
absent=0
if [ "$FACTS" = nvml-bindings ]; then
    bindings=${NVML_BINDINGS:-$(ls /usr/share/cargo/registry/nvml-wrapper-sys-*/src/bindings.rs \
                                   2>/dev/null | tail -n 1)}
    grep -E '^(sizeof|alignof|offsetof|value)\.' "$work/carve.txt" | grep -i nvml \
        >"$work/carve.nvml"
    if ! python3 bench/gpu/nvml-bindings-facts.py "${bindings:-none}" \
            <(cut -d' ' -f1 "$work/carve.nvml") >"$work/bindings.txt" 2>"$work/build.log"; then
        { echo "run-abi-check: NVML bindings ${bindings:-none} unreadable"; cat "$work/build.log"; } \
            >"$report"
        exit 2
    fi
    absent=$(grep -c '^absent\.' "$work/bindings.txt")
    # what NVML 11.8 lacks is newer: ProcessDetail and the process modes (12.2), the newer
    # profile IDs, and struct-version macros (function-like, which bindgen does not
    # translate). Any other fact missing there is a name carve or the reader got wrong.
    newer='nvmlProcessDetail|NVML_PROCESS_MODE_|_REV[12]$|_GFX$|_NO_ME$|_ALL_ME$|^value\.nvml[A-Za-z]*_v[0-9]+$'
    unexpected=$(sed -n 's/^absent\.//p' "$work/bindings.txt" | grep -Ev "$newer")
    # the facts that NVML has; counts of profiles may have grown since (carve's side larger)
    awk 'NR == FNR { if ($1 !~ /^absent\./) have[$1] = $2; next }
         ($1 in have) { if ($1 ~ /_INSTANCE_PROFILE_COUNT$/ && $2 + 0 > have[$1] + 0) {
                            print $1 " grew from " have[$1] " to " $2 > "/dev/stderr"; have[$1] = $2 }
                        print $1 " " have[$1] > TOOLKIT; print > CARVE }' \
        TOOLKIT="$work/toolkit.txt" CARVE="$work/carve.txt.new" "$work/bindings.txt" \
        "$work/carve.nvml" 2>"$work/grew.txt"
    mv "$work/carve.txt.new" "$work/carve.txt"
else
    "$work/toolkit-side" >"$work/toolkit.txt"
fi
if [ "$FACTS" = cuda ]; then # the CUDA declarations' facts: no NVML name, no sym or gpa line
    for side in carve toolkit; do
        grep -E '^(sizeof|alignof|offsetof|value)\.' "$work/$side.txt" | grep -vi nvml \
            >"$work/$side.cuda" || true
        mv "$work/$side.cuda" "$work/$side.txt"
    done
fi

cuda_version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_HOME/include/cuda.h" 2>/dev/null)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)
{
    echo "# ABI check, $(date -u +%Y-%m-%dT%H:%MZ)"
    if [ "$FACTS" = nvml-bindings ]; then
        nvml=$(sed -n 's/^pub const NVML_API_VERSION: u32 = \([0-9]*\);/\1/p' "$bindings")
        echo "NVML bindings $bindings (NVML_API_VERSION ${nvml:-?}), facts: $FACTS"
        echo "$(wc -l <"$work/carve.txt") facts; '-' carve, '+' NVML's; $absent of carve's NVML facts are not in these bindings (a newer NVML's)"
        sed 's/^/grown since: /' "$work/grew.txt"
        [ -z "$unexpected" ] || echo "$unexpected" | sed 's/^/not in the bindings, nor a newer NVML'"'"'s: /'
    else
        echo "cuda.h CUDA_VERSION ${cuda_version:-?} ($CUDA_HOME), driver ${driver:-none}, facts: $FACTS"
        echo "$(wc -l <"$work/carve.txt") facts; '-' carve, '+' toolkit and driver"
    fi
    [ "${#not_declared[@]}" -eq 0 ] ||
        echo "not declared by the toolkit's headers, not compared: ${not_declared[*]}"
    if diff -u --label carve --label toolkit "$work/carve.txt" "$work/toolkit.txt"; then
        echo "no difference"
    fi
} >"$report"
# the status leaves out the one difference known (bench/gpu/README.md); the report keeps it
known='^gpa\.cuStreamBeginCapture@10000 '
[ -z "${unexpected:-}" ] &&
    cmp -s <(grep -v "$known" "$work/carve.txt") <(grep -v "$known" "$work/toolkit.txt")
