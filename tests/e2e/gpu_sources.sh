#!/usr/bin/env bash
# gpu_sources.sh - what the GPU machine compiles, compiled here first, so that a lease of a
# few minutes is not spent on a typo: each PTX kernel carve's benchmarks hand the driver
# (bench/*.c's *_ptx strings, JIT-compiled on the GPU) assembled by ptxas for sm_90 (H100,
# H200); bench/gpu/memcap.cu built by nvcc with static and shared cudart, as run-memcap.sh
# builds it; every bench/gpu/*.py compiled by Python. ptxas and nvcc come with the CUDA
# toolkit in /usr/local/cuda on this project's machines; where they are missing that part
# says so and passes.
#
#   BUILD=build bash tests/e2e/gpu_sources.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ptxas=$(command -v ptxas || echo "$CUDA_HOME/bin/ptxas")
nvcc=$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")

# each `static const char NAME_ptx[] = "..." "...";' of bench/*.c, as a .ptx file
python3 - "$work" bench/*.c <<'PY'
import ast, re, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    text = open(path).read()
    for m in re.finditer(r"static const char (\w+_ptx)\[\] =((?:\s*\"(?:[^\"\\]|\\.)*\")+)\s*;", text):
        body = "".join(ast.literal_eval(s) for s in re.findall(r"\"(?:[^\"\\]|\\.)*\"", m.group(2)))
        name = path.split("/")[-1].replace(".c", "") + "." + m.group(1)
        open("%s/%s.ptx" % (out, name), "w").write(body)
PY
kernels=("$work"/*.ptx)
declared=$(cat bench/*.c | grep -c '_ptx\[\] =')
if [ ! -e "${kernels[0]}" ] || [ "${#kernels[@]}" -ne "$declared" ]; then
    bad "PTX kernels read from bench/*.c: ${#kernels[@]} of the $declared declared (the extraction is broken)"
elif [ -x "$ptxas" ]; then
    for k in "${kernels[@]}"; do
        if err=$("$ptxas" -arch=sm_90 -o "$work/out.cubin" "$k" 2>&1); then
            ok "ptxas -arch=sm_90 assembles $(basename "$k" .ptx)"
        else
            bad "ptxas -arch=sm_90 refuses $(basename "$k" .ptx): $err"
        fi
    done
else
    ok "no ptxas at $ptxas: the ${#kernels[@]} PTX kernels are not assembled here"
fi

if [ -x "$nvcc" ]; then
    for cudart in static shared; do
        if err=$("$nvcc" -O2 -cudart "$cudart" -o "$work/memcap-$cudart" bench/gpu/memcap.cu 2>&1); then
            ok "nvcc builds bench/gpu/memcap.cu with $cudart cudart"
        else
            bad "nvcc cannot build bench/gpu/memcap.cu with $cudart cudart: $(head -n 5 <<<"$err")"
        fi
    done
else
    ok "no nvcc at $nvcc: bench/gpu/memcap.cu is not built here"
fi

for py in bench/gpu/*.py; do
    if err=$(python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
        "$py" "$work/out.pyc" 2>&1); then
        ok "python3 compiles $py"
    else
        bad "python3 cannot compile $py: $err"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
