#!/usr/bin/env bash
# carved_gpuset.sh - a restarted carved adopting its slices after the node's GPUs changed
# between the two runs, on the simulated GPU (CARVE_SIM_DEVICES, CARVE_SIM_UUIDS): the GPUs
# renumbered, one removed, all replaced, the old ones back, a new one added. A slice's caps
# follow its GPUs by UUID, as its tenants enforce them (its terms name GPUs by UUID); a GPU
# the node no longer has is listed as gone (carve slice list, carve ps --json, /metrics) and
# logged with its UUID; the slice is kept, with nothing shown for it on the wrong GPU.
#
#   BUILD=build bash tests/e2e/carved_gpuset.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
export CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0 CARVE_SIM_MEMORY=8GiB
U0=${CARVE_SIM_UUIDS%,*}
U1=${CARVE_SIM_UUIDS#*,}
U2=GPU-$(python3 -c 'import uuid; print(uuid.uuid4())')
GIB=1073741824
# names of this run's own: a carved that drops a slice leaves its objects in /dev/shm, and
# the cleanup removes them by name
ONE=gpuset-one-$$ # made with --memory 1=1GiB: capped on the GPU that was 1 (U1) only
ALL=gpuset-all-$$ # made with --memory 2GiB: capped on every GPU it was made for
tenant=
cleanup_extra() {
    # shellcheck disable=SC2086 # one pid or two
    [ -z "$tenant" ] || kill $tenant 2>/dev/null
    rm -f /dev/shm/carve.d."$ONE".* /dev/shm/carve.d."$ALL".*
}

# gpus SLICE: its devices in carve ps --json, "index:uuid:cap" each, then "gone:" and the
# UUIDs it lists as gone
gpus() {
    "$CARVE" ps --json | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin)["slices"] if x["name"] == sys.argv[1]]
if not s:
    print("missing")
    sys.exit()
s = s[0]
print(" ".join("%d:%s:%d" % (d["index"], d["uuid"], d["memory_cap"]) for d in s["devices"]),
      "gone:" + ",".join(s.get("gpus_gone", ["(no gpus_gone)"])))' "$1"
}

# used SLICE INDEX: what carve ps --json says the slice holds on GPU INDEX
used() {
    "$CARVE" ps --json | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin)["slices"] if x["name"] == sys.argv[1]][0]
print(sum(d["memory_used"] for d in s["devices"] if d["index"] == int(sys.argv[2])))' "$1" "$2"
}

# objects SLICE: the slice's shared-memory objects in /dev/shm; kept SLICE: those that
# carved's state names (its table and terms)
objects() { find /dev/shm -maxdepth 1 -name "carve.d.$1.*" | sort | tr '\n' ' '; }
kept() {
    python3 -c 'import json, sys
for s in json.load(open(sys.argv[1]))["slices"]:
    if s["name"] == sys.argv[2]: print("/dev/shm%s /dev/shm%s.terms " % (s["shm"], s["shm"]), end="")' \
        "$work/state/slices.json" "$1"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# 1. two GPUs, U0 and U1
export CARVE_SIM_DEVICES=2 CARVE_SIM_UUIDS=$U0,$U1
start_carved 200ms off $'escape_policy = kill\n'
"$CARVE" slice create "$ONE" --memory 1=1GiB >/dev/null
"$CARVE" slice create "$ALL" --memory 2GiB >/dev/null
got=$(gpus "$ONE")
check "made on two GPUs: $got" "[ \"\$got\" = '0:$U0:0 1:$U1:$GIB gone:' ]"
stop_carved

# 2. renumbered: U1 is GPU 0 now, U0 GPU 1. carved showed GPU 0's cap and use from the
# slice's first GPU (U0), and with escape_policy = kill killed a tenant on U0 (uncapped)
# for passing the 1 GiB cap the slice has on U1.
export CARVE_SIM_UUIDS=$U1,$U0
start_carved 200ms off $'escape_policy = kill\n'
got=$(gpus "$ONE")
check "renumbered: the cap follows its GPU's UUID ($got)" \
    "[ \"\$got\" = '0:$U1:$GIB 1:$U0:0 gone:' ]"
check "renumbered: the log says where the GPU went" \
    "grep -q \"slice $ONE: its GPU $U1 was GPU 1 when the slice was made and is GPU 0 now\" \"\$work/carved.log\""
# a tenant on each GPU: on GPU 0 (U1, capped) 512 MiB, counted by the slice; on GPU 1 (U0,
# no cap) 2 GiB
CUDA_VISIBLE_DEVICES=0 "$CARVE" run --slice "$ONE" -- "$BUILD/bench/memhog" --label u1 \
    --step 256 --max 512 --hold 3 >"$work/u1.log" 2>&1 &
tenant=$!
CUDA_VISIBLE_DEVICES=1 "$CARVE" run --slice "$ONE" -- "$BUILD/bench/memhog" --label u0 \
    --step 512 --max 2048 --hold 3 >"$work/u0.log" 2>&1 &
tenant="$tenant $!"
for _ in $(seq 50); do
    grep -q holding "$work/u0.log" && grep -q holding "$work/u1.log" && break
    sleep 0.1
done
sleep 0.6 # three polls
got=$(used "$ONE" 0)
check "renumbered: its use shows on the GPU it is on (GPU 0: $got bytes)" \
    "[ \"\$got\" = $((GIB / 2)) ]"
rc=0
for t in $tenant; do wait "$t" || rc=$?; done
tenant=
check "renumbered: a tenant on its uncapped GPU holding 2 GiB is not killed (exit $rc)" \
    "[ $rc = 0 ] && grep -q 'holding 2048 MiB' \"\$work/u0.log\""
check "renumbered: nothing killed" "! grep -q killed \"\$work/carved.log\""
stop_carved

# 3. U0 removed: U1 is the only GPU. The slice naming GPU 1 was dropped (its objects left in
# /dev/shm), and the one capped everywhere showed U0's books as U1's.
export CARVE_SIM_DEVICES=1 CARVE_SIM_UUIDS=$U1
port=$(free_port)
start_carved 200ms "127.0.0.1:$port" $'escape_policy = kill\n'
got=$(gpus "$ONE")
check "GPU removed: the slice is kept, its GPU listed as gone ($got)" \
    "[ \"\$got\" = '0:$U1:$GIB gone:$U0' ]"
got=$(gpus "$ALL")
check "GPU removed: the other slice too ($got)" "[ \"\$got\" = '0:$U1:$((2 * GIB)) gone:$U0' ]"
check "GPU removed: the log names the slice and the gone GPU's UUID" \
    "grep -q \"slice $ONE: its GPU $U0 (GPU 0 when the slice was made) is not on this node now\" \"\$work/carved.log\""
"$CARVE" slice list >"$work/list"
check "GPU removed: carve slice list shows the gone GPU" \
    "grep -q -- \"- gone: $U0\" \"\$work/list\" && [ \$(grep -c 'gone: ' \"\$work/list\") = 2 ]"
curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$work/metrics"
check "GPU removed: /metrics counts the gone GPU" \
    "grep -q '^carve_slice_gpus_gone{slice=\"$ONE\",.*} 1\$' \"\$work/metrics\""
check "GPU removed: /metrics has no series of the slice on the gone GPU" \
    "! grep -q 'UUID=\"$U0\"' \"\$work/metrics\""
check "GPU removed: the slice's objects in /dev/shm are the ones carved keeps ($(objects "$ONE"))" \
    "[ \"\$(objects \"$ONE\")\" = \"\$(kept \"$ONE\")\" ]"
stop_carved

# 4. replaced: the only GPU is one the slices never had. They are kept, on no GPU here.
export CARVE_SIM_UUIDS=$U2
start_carved 200ms off
got=$(gpus "$ALL")
check "GPU replaced: no cap shown on the new GPU, both old ones gone ($got)" \
    "[ \"\$got\" = ' gone:$U0,$U1' ]"
"$CARVE" slice list >"$work/list"
check "GPU replaced: carve slice list still has a row for the slice" \
    "grep -q \"^$ALL \" \"\$work/list\""
check "GPU replaced: the log says the new GPU is not the slice's" \
    "grep -q \"slice $ALL: GPU 0 ($U2) came after the slice was made\" \"\$work/carved.log\""
stop_carved

# 5. the old GPUs back, in their first order: the slice is whole again
export CARVE_SIM_DEVICES=2 CARVE_SIM_UUIDS=$U0,$U1
start_carved 200ms off
got=$(gpus "$ONE")
check "GPUs back: as it was made ($got)" "[ \"\$got\" = '0:$U0:0 1:$U1:$GIB gone:' ]"
stop_carved

# 6. a GPU added before them: the slice's caps stay on its own GPUs, now 1 and 2
export CARVE_SIM_DEVICES=3 CARVE_SIM_UUIDS=$U2,$U0,$U1
start_carved 200ms off
got=$(gpus "$ALL")
check "GPU added: its caps on its GPUs, none shown on the new one ($got)" \
    "[ \"\$got\" = '1:$U0:$((2 * GIB)) 2:$U1:$((2 * GIB)) gone:' ]"
stop_carved

echo "# carved_gpuset: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
