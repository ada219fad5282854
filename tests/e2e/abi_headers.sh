#!/usr/bin/env bash
# abi_headers.sh - carve's own declarations of the CUDA driver API and NVML (include/carve/:
# the build needs no toolkit) against NVIDIA's, wherever NVIDIA's are installed: every struct
# size, alignment and member offset and every enum value carve relies on must be theirs.
#  - CUDA: against <cuda.h> of a CUDA 12.8+ toolkit (this project's machines have CUDA 13.0
#    in /usr/local/cuda), bench/gpu/run-abi-check.sh with ABI_FACTS=cuda;
#  - NVML: against the bindgen output of nvml.h that Debian's librust-nvml-wrapper-sys-dev
#    ships (NVML 11.8; scripts/install-deps.sh installs it), ABI_FACTS=nvml-bindings: the
#    facts that NVML has, the newer ones counted as not compared.
# On the GPU machine the full check adds the toolkit's nvml.h, the driver's exports and its
# cuGetProcAddress answers. Where a source is missing, its check says so and passes.
#
#   BUILD=build bash tests/e2e/abi_headers.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

pass=0 fail=0
report=$(mktemp)
trap 'rm -f "$report"' EXIT

# check WHAT MIN_FACTS SOURCE ABI_FACTS: run the comparison, pass on no difference over at
# least MIN_FACTS facts
check() {
    local what=$1 min=$2 source=$3 facts_mode=$4 rc facts
    ABI_FACTS=$facts_mode bash bench/gpu/run-abi-check.sh "$report"
    rc=$?
    facts=$(sed -n 's/^\([0-9]*\) facts;.*/\1/p' "$report")
    if [ "$rc" -eq 0 ] && [ "${facts:-0}" -ge "$min" ]; then
        echo "ok - carve's $what declarations match $source: $facts sizes, offsets and values"
        grep -E "not in these bindings|^grown since" "$report" | sed 's/^/    /'
        pass=$((pass + 1))
    else
        echo "FAIL - carve's $what declarations against $source: exit $rc, ${facts:-no} facts"
        sed 's/^/    /' "$report" | head -n 40
        fail=$((fail + 1))
    fi
}

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME
header=$CUDA_HOME/include/cuda.h
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$header" 2>/dev/null)
if [ -z "$version" ] || [ "$version" -lt 12080 ]; then
    echo "ok - no cuda.h of CUDA 12.8 or later at $header (${version:-none}): not compared"
    pass=$((pass + 1))
else
    check CUDA 150 "$header (CUDA_VERSION $version)" cuda
fi

bindings=${NVML_BINDINGS:-$(ls /usr/share/cargo/registry/nvml-wrapper-sys-*/src/bindings.rs \
                               2>/dev/null | tail -n 1)}
if [ -z "$bindings" ] || [ ! -r "$bindings" ]; then
    echo "ok - no NVML bindings (Debian's librust-nvml-wrapper-sys-dev): NVML not compared"
    pass=$((pass + 1))
else
    NVML_BINDINGS=$bindings check NVML 80 "nvml.h as $bindings has it" nvml-bindings
    # a fact the bindings lack that no newer NVML explains fails, not "not compared": here
    # nvmlUtilization_t, under another name in a copy of the bindings
    sed 's/pub struct nvmlUtilization_st/pub struct nvmlUtilisation_st/' "$bindings" \
        >"$report.rs"
    NVML_BINDINGS=$report.rs ABI_FACTS=nvml-bindings bash bench/gpu/run-abi-check.sh "$report"
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "nor a newer NVML's: sizeof.nvmlUtilization_t" "$report"; then
        echo "ok - a struct missing from the bindings fails the comparison (exit 1), named"
        pass=$((pass + 1))
    else
        echo "FAIL - bindings without nvmlUtilization_t: exit $rc"
        sed 's/^/    /' "$report" | head -n 20
        fail=$((fail + 1))
    fi
    rm -f "$report.rs"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
