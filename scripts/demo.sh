#!/usr/bin/env bash
# demo.sh - carve's main job in one minute: two memory slices sharing one GPU.
#
#   bash scripts/demo.sh
#
# Installs dependencies, builds, and uses the real GPU when `nvidia-smi -L` works, the
# simulated one (`carve run --simulate`) otherwise. Two tenants run at once, in a 2 GiB and a
# 3 GiB slice; each prints the memory it sees, allocates 256 MiB at a time until it is
# refused, and holds what it got. Meanwhile nvidia-smi runs outside any slice (the whole GPU)
# and inside a 2 GiB slice (the slice's view).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
CARVE="$BUILD/bin/carve"
MEMHOG="$BUILD/bench/memhog"
SIM="$BUILD/lib/carve/sim"
HOLD_S=8

heading() { printf '\n=== %s ===\n' "$*"; }
indent() { sed 's/^/    /'; }

heading "setting up: dependencies and build"
bash scripts/install-deps.sh
make -j2 BUILD="$BUILD" >/dev/null || { echo "build failed (errors above); fix and rerun"; exit 1; }
echo "built $CARVE and $MEMHOG"

if nvidia-smi -L >/dev/null 2>&1; then
    mode="real GPU: $(nvidia-smi -L | head -n1)"
    sim=()
    smi=(nvidia-smi)
else
    mode="simulated GPU, since nvidia-smi -L finds none here"
    sim=(--simulate)
    smi=(env LD_LIBRARY_PATH="$SIM" "$SIM/bin/nvidia-smi")
    # a fresh simulated GPU for this demo, shared by the tenants and nvidia-smi
    statedir=$(mktemp -d "${TMPDIR:-/tmp}/carve-demo.XXXXXX")
    export CARVE_SIM_STATE="$statedir/sim-state"
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/carve-demo-logs.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$logs" "${statedir:-}"
}
trap cleanup EXIT

heading "two tenants, one GPU ($mode)"
start_tenant() { # start_tenant NAME MEMORY
    local cmd=("$CARVE" run "${sim[@]}" --name "$1" --memory "$2" --
               "$MEMHOG" --label "$1" --step 256 --hold "$HOLD_S")
    echo "\$ ${cmd[*]} &"
    "${cmd[@]}" >"$logs/$1.log" 2>&1 &
    pids+=($!)
}
start_tenant tenant-A 2GiB
start_tenant tenant-B 3GiB

# Wait until both hold their memory (or one has ended), at most 60 s.
for _ in $(seq 600); do
    ready=0
    for i in 0 1; do
        log="$logs/tenant-$([ "$i" = 0 ] && echo A || echo B).log"
        if grep -q 'holding' "$log" 2>/dev/null || ! kill -0 "${pids[$i]}" 2>/dev/null; then
            ready=$((ready + 1))
        fi
    done
    [ "$ready" -eq 2 ] && break
    sleep 0.1
done

for t in tenant-A tenant-B; do
    heading "$t so far"
    indent <"$logs/$t.log"
done

heading "nvidia-smi outside any slice: the whole GPU, both tenants' memory in use"
echo "\$ ${smi[*]}"
"${smi[@]}" 2>&1 | indent || echo "    (nvidia-smi failed)"

heading "nvidia-smi inside a 2 GiB slice: the slice's view"
echo "\$ $CARVE run ${sim[*]} --memory 2GiB -- nvidia-smi"
"$CARVE" run "${sim[@]}" --memory 2GiB -- nvidia-smi 2>&1 | indent ||
    echo "    (nvidia-smi in the slice failed)"

status=0
for i in 0 1; do
    wait "${pids[$i]}" || status=1
done
pids=()

heading "summary"
for t in tenant-A tenant-B; do
    got=$(sed -n 's/.* got \([0-9]*\) MiB in .*/\1/p' "$logs/$t.log" | head -n1)
    case "$t" in tenant-A) cap=2048 ;; *) cap=3072 ;; esac
    echo "$t: slice of $cap MiB, allocated ${got:-?} MiB before the out-of-memory"
done
if [ "$status" -ne 0 ]; then
    echo "a tenant failed; its full output:"
    for t in tenant-A tenant-B; do indent <"$logs/$t.log"; done
    exit 1
fi
echo "each tenant was held to its own slice while both shared the GPU"
echo "(a slice also counts the tenant's CUDA context: see 'free at start' above)"
