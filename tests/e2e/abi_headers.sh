#!/usr/bin/env bash
# abi_headers.sh - carve's own declarations of the CUDA driver API (include/carve/cuda_abi.h:
# the build needs no toolkit) against NVIDIA's <cuda.h>, wherever a CUDA 12.8+ toolkit is
# installed (this project's machines have CUDA 13.0 in /usr/local/cuda): every struct size,
# alignment and member offset and every enum value carve relies on must be the toolkit's.
# bench/gpu/run-abi-check.sh with ABI_FACTS=cuda does the work; on the GPU machine the full
# check adds NVML, the driver's exports and its cuGetProcAddress answers. Where there is no
# such toolkit the check says so and passes.
#
#   BUILD=build bash tests/e2e/abi_headers.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
header=$CUDA_HOME/include/cuda.h
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$header" 2>/dev/null)
if [ -z "$version" ] || [ "$version" -lt 12080 ]; then
    echo "ok - no cuda.h of CUDA 12.8 or later at $header (${version:-none}): not compared"
    echo "1 passed, 0 failed"
    exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
ABI_FACTS=cuda CUDA_HOME=$CUDA_HOME bash bench/gpu/run-abi-check.sh "$report"
rc=$?
facts=$(sed -n 's/^\([0-9]*\) facts;.*/\1/p' "$report")
if [ "$rc" -eq 0 ] && [ "${facts:-0}" -ge 150 ]; then
    echo "ok - carve's CUDA declarations match $header (CUDA_VERSION $version): $facts sizes, offsets and values"
    echo "1 passed, 0 failed"
    exit 0
fi
echo "FAIL - carve's CUDA declarations against $header (CUDA_VERSION $version): exit $rc, ${facts:-no} facts"
sed 's/^/    /' "$report" | head -n 40
echo "0 passed, 1 failed"
exit 1
