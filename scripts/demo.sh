#!/usr/bin/env bash
# demo.sh - carve's main job in one minute: slices of one GPU, for memory and for compute,
# and the node daemon that owns them.
#
#   bash scripts/demo.sh
#
# Installs dependencies, builds, and uses the real GPU when `nvidia-smi -L` works, the
# simulated one (`carve run --simulate`) otherwise. First `carve doctor` says whether the
# node is ready (the driver, the GPU, a real 1 GiB slice). Part 1: two tenants run at once,
# in a 2 GiB and a 3 GiB slice; each prints the memory it sees, allocates 256 MiB at a time
# until it is refused, and holds what it got. Meanwhile nvidia-smi runs outside any slice
# (the whole GPU) and inside a 2 GiB slice (the slice's view). Part 2: two tenants that
# would each keep the GPU busy run with 30% and 70% compute caps and report what they got.
# Part 3: carved, the node daemon, runs on the simulated GPU on a private socket and port
# (it never touches the node's own /run/carve): slices made through it, a tenant in one,
# `carve ps`, and a few lines of its Prometheus metrics.
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
    # carved saves its state as it stops: removed under it, the state directory could come
    # back non-empty and rm fail (a fresh clone's demo, 2026-11-28)
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$logs" "${statedir:-}"
}
trap cleanup EXIT

heading "is this node ready? ($mode)"
echo "\$ $CARVE doctor ${sim[*]}"
"$CARVE" doctor "${sim[@]}" | indent || echo "    (carve doctor found a problem: the parts below may fail)"

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

heading "compute shares: two busy tenants capped at 30% and 70% of the GPU's time"
LOAD="$BUILD/bench/compute_load"
share_pids=()
for share in 30% 70%; do
    echo "\$ $CARVE run ${sim[*]} --compute $share -- $LOAD --kind small --seconds 4 --label cap-$share &"
    "$CARVE" run "${sim[@]}" --quiet --compute "$share" -- "$LOAD" --kind small --seconds 4 \
        --label "cap-$share" >"$logs/share-$share.log" 2>&1 &
    share_pids+=($!)
    pids+=($!)
done
for pid in "${share_pids[@]}"; do wait "$pid" || status=1; done
pids=()
for share in 30% 70%; do
    # the first second learns kernel costs; what counts is the whole run's share of GPU time
    got=$(python3 -c 'import json,sys; print([json.loads(l)["total_share"] for l in open(sys.argv[1]) if "total_share" in l][-1])' "$logs/share-$share.log" 2>/dev/null || echo "?")
    echo "slice capped at $share: got $got% of the GPU's time over 4 s (learning second included)"
done
[ "$status" -eq 0 ] || { echo "a compute tenant failed:"; indent <"$logs/share-30%.log"; indent <"$logs/share-70%.log"; exit 1; }

heading "the node daemon: carved on the simulated GPU (private socket and port)"
export CARVE_SOCKET="$logs/carved.sock"
port=$((20000 + RANDOM % 20000))
daemon_state="$logs/carved-state"
CARVE_SIM_STATE="$logs/carved-sim" "$BUILD/bin/carved" --simulate --config /dev/null \
    --socket "$CARVE_SOCKET" --state-dir "$daemon_state" --listen "127.0.0.1:$port" \
    >"$logs/carved.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do "$CARVE" slice list >/dev/null 2>&1 && break; sleep 0.1; done
demo_cmd() { echo "\$ $*"; "$@" 2>&1 | indent; }
demo_cmd "$CARVE" slice create team-a --memory 2GiB --compute 30%
demo_cmd "$CARVE" slice create team-b --memory 1GiB
CARVE_SIM_STATE="$logs/carved-sim" "$CARVE" run --slice team-a -- "$MEMHOG" --label in-team-a \
    --step 256 --hold 3 >"$logs/team-a.log" 2>&1 &
tenant=$!
for _ in $(seq 50); do grep -q holding "$logs/team-a.log" 2>/dev/null && break; sleep 0.1; done
demo_cmd "$CARVE" slice list
sleep 1.2 # one poll of carved's NVML monitor
demo_cmd "$CARVE" ps
echo "\$ curl http://127.0.0.1:$port/metrics | grep carve_slice_memory"
python3 - "$port" <<'PY' | grep -E '^carve_slice_memory' | head -n 6 | indent || true
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode())
PY
echo "(the dashboard is served at http://127.0.0.1:$port/ while carved runs; here it stops now)"
wait "$tenant" || true
echo "tenant in team-a: $(grep -o 'got [0-9]* MiB[^;]*' "$logs/team-a.log" | head -n1)"
# carved keeps slices across its restarts by design; a demo leaves nothing behind
demo_cmd "$CARVE" slice delete team-a
demo_cmd "$CARVE" slice delete team-b
