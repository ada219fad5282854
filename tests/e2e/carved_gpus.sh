#!/usr/bin/env bash
# carved_gpus.sh - slices made on some of the node's GPUs (the create request's "gpus"), on a
# simulated node of two: a slice's memory and compute apply on its GPUs only, so two slices
# each guaranteeing 60%+ on different GPUs are both made, while a third on a GPU already
# guaranteed 60% is refused (guarantees on one GPU add up to 100% at most), and one on every
# GPU is refused where any of them is full (with the code guarantees_full: `carve slice
# create` exits 2); bad "gpus" are refused saying why; a restart
# adopts the slices on their GPUs, and the log does not call the node's other GPUs new. A
# config slice with no room at the start waits, and keeps its room: a guarantee, a place on
# a full board (64 slices), a place among carved's 1024.
#
#   BUILD=build bash tests/e2e/carved_gpus.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
export CARVE_SIM_DEVICES=2 CARVE_SIM_MEMORY=8GiB
U1=${CARVE_SIM_UUIDS#*,}
# names of this run's own: a carved that drops a slice leaves its objects in /dev/shm
A=gpus-a-$$ B=gpus-b-$$ C=gpus-c-$$ ALL=gpus-all-$$ CAP=gpus-cap-$$ CLI=gpus-cli-$$
CFG=gpus-cfg-$$ CFG2=gpus-cfg2-$$ UAPI=gpus-uapi-$$ MANY=gpus-many-$$
cleanup_extra() {
    local n
    for n in "$A" "$B" "$C" "$ALL" "$CAP" "$CLI" "$CFG" "$CFG2" "$UAPI"; do rm -f /dev/shm/carve.d."$n".*; done
    rm -f /dev/shm/carve.d."$MANY"-*
}

# ask.py: ask(SOCKET, FIELDS) sends carved one create request with those JSON fields (root's:
# an admin's) and returns the reply
cat >"$work/ask.py" <<'EOF'
import json, socket
def ask(path, fields):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    s.sendall(('{"op":"create",%s}\n' % fields).encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)
EOF

# create JSON-FIELDS [code]: one create request; prints "ok" or the error (with `code': the
# refusal's code, "-" when it has none)
create() {
    PYTHONPATH=$work python3 -c 'import sys; from ask import ask
r = ask(sys.argv[1], sys.argv[2])
print(r.get("code", "-") if sys.argv[3] else "ok" if r.get("ok") else r.get("error", "?"))' \
        "$CARVE_SOCKET" "$1" "${2:-}"
}

# devices SLICE: its GPUs in carve slice list --json, "index:cap:compute" each
devices() {
    "$CARVE" slice list --json | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]]
print(" ".join("%d:%d:%s" % (d["index"], d["memory_cap"], d["compute"]) for d in s[0]["devices"]) if s else "missing")' "$1"
}

start_carved 200ms

out=$(create "\"name\":\"$A\",\"compute\":\"60%+\",\"gpus\":[0]")
check "a slice guaranteeing 60%+ on GPU 0 (gpus [0]) is made: $out" '[ "$out" = ok ]'
out=$(create "\"name\":\"$B\",\"compute\":\"60%+\",\"memory\":\"1GiB\",\"gpus\":[\"$U1\"]")
check "another guaranteeing 60%+ on GPU 1 (by UUID) is made too: $out" '[ "$out" = ok ]'
a=$(devices "$A") b=$(devices "$B")
check "each is on its GPU only, its cap and share there ($A: $a; $B: $b)" \
    '[ "$a" = "0:0:60%+" ] && [ "$b" = "1:1073741824:60%+" ]'
out=$(create "\"name\":\"$C\",\"compute\":\"50%+\",\"gpus\":[1]")
check "a third guaranteeing 50%+ on GPU 1 is refused, 110% there: $out" \
    '[[ $out == "GPU 1: "*"60.00%"* ]] && [ "$(devices "$C")" = missing ]'
out=$(create "\"name\":\"$ALL\",\"compute\":\"50%+\"")
check "one guaranteeing 50%+ on every GPU (no gpus) is refused too: $out" \
    '[[ $out == "GPU "*"60.00%"* ]] && [ "$(devices "$ALL")" = missing ]'
code=$(create "\"name\":\"$ALL\",\"compute\":\"50%+\"" code) other=$(create "\"name\":\"$ALL\",\"gpus\":[7]" code)
check "the refusal has the code guarantees_full ($code), another refusal none ($other)" \
    '[ "$code" = guarantees_full ] && [ "$other" = - ]'
out=$(create "\"name\":\"$C\",\"compute\":\"40%+\",\"gpus\":[1]")
check "40%+ more on GPU 1 fits (100%): $out" '[ "$out" = ok ] && [ "$(devices "$C")" = "1:0:40%+" ]'
out=$(create "\"name\":\"$CAP\",\"memory\":\"0=1GiB\",\"gpus\":[1]")
check "memory naming a GPU not in gpus is refused: $out" \
    '[[ $out == *"names GPU 0, which is not one of the slice'"'"'s \`gpus'"'"'"* ]]'
bad_ok=0
for req in '"gpus":[7]|this node has no GPU 7' '"gpus":["GPU-00000000-0000-4000-8000-000000000000"]|this node has no GPU GPU-0000' \
    '"gpus":[0,0]|names GPU 0 twice' '"gpus":[]|must be a list' '"gpus":"0"|must be a list' \
    '"gpus":[true]|neither a GPU index nor a UUID' "\"gpus\":[1,\"$U1\"]|names GPU 1 twice, as 1 and as $U1"; do
    out=$(create "\"name\":\"$CAP\",${req%%|*}")
    echo "    ${req%%|*}: $out"
    [[ $out == *"${req#*|}"* ]] || bad_ok=1
done
check "bad gpus are refused, saying why" "[ $bad_ok -eq 0 ]"' && [ "$(devices "$CAP")" = missing ]'

stop_carved
start_carved 200ms
a=$(devices "$A") b=$(devices "$B")
check "after a restart the slices are adopted on their GPUs ($a; $b)" \
    '[ "$a" = "0:0:60%+" ] && [ "$b" = "1:1073741824:60%+" ]'
check "the log does not call the node's other GPUs new to the slices" \
    '! grep -q "came after the slice was made" "$work/carved.log"'
saved=$(python3 -c 'import json,sys; print(sorted((s["name"], s["chosen_gpus"]) for s in json.load(open(sys.argv[1]))["slices"]))' \
    "$work/state/slices.json")
check "slices.json records that they were made on chosen GPUs: $saved" \
    '[[ $saved == *"True"* ]] && [[ $saved != *"False"* ]]'
out=$(create "\"name\":\"$ALL\",\"compute\":\"50%+\"")
check "their guarantees still hold room after the restart: $out" '[[ $out == "GPU "*"%"* ]]'

# the same through carve slice create --gpus
out=$("$CARVE" slice create "$CLI" --compute 50%+ --gpus 0 2>&1)
check "carve slice create --gpus 0 --compute 50%+ beside the 60%+ there: refused, status 2 as bad input ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"GPU 0: "*"60.00%"* ]] && [ "$(devices "$CLI")" = missing ]'
out=$("$CARVE" run --simulate --compute 50%+ -- true 2>&1)
check "carve run --compute 50%+ through carved: refused the same, status 2 ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"GPU "*"60.00%"* ]]'
out=$("$CARVE" slice create "$CLI" --compute 40% --memory 1GiB --gpus " $U1 " 2>&1)
check "carve slice create --gpus UUID --compute 40% (a cap; GPU 1's guarantees are full): on GPU 1 alone ($out; $(devices "$CLI"))" \
    '[ "$(devices "$CLI")" = "1:1073741824:40%" ]'
"$CARVE" slice delete "$CLI" >/dev/null 2>&1
out=$("$CARVE" slice create "$CLI" --gpus 0,7 2>&1)
check "carve slice create --gpus 0,7: carved names the GPU it lacks, status 1 ($out)" \
    "[ $? -eq 1 ]"' && [[ $out == *"this node has no GPU 7"* ]]'
for bad in "" "0,,1" "first" "-1" "GPU-" "GPU-xyz" "GPU-abc"; do
    out=$("$CARVE" slice create "$CLI" --gpus "$bad" 2>&1)
    check "carve slice create --gpus '$bad': status 2, nothing asked of carved ($out)" \
        "[ $? -eq 2 ]"' && [[ $out == *"--gpus \`"* ]] && [[ $out == *"is neither a GPU index"* || $out == *"has an empty entry"* ]]'
done

out=$("$CARVE" slice create "$CLI" --gpus 1,0,1 2>&1)
check "carve slice create --gpus 1,0,1: status 2 before carved is asked ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"names GPU 1 twice"* ]]'
out=$("$CARVE" slice create "$CLI" --gpus 1 --memory 0=1GiB 2>&1)
check "carve slice create --gpus 1 --memory 0=1GiB: status 2 before carved is asked ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"--memory 0=1GiB names GPU 0, which --gpus leaves out"* ]]'

# the config's [slice NAME] sections take gpus too, found among the node's GPUs at the start
stop_carved
forget_state
# config_slices GPUS: $CFG guaranteeing 60%+ on GPUS, $CFG2 capped at 1GiB on GPU 1 (by UUID)
# and GPU 0
config_slices() {
    printf '[slice %s]\ncompute = 60%%+\ngpus = %s\n[slice %s]\nmemory = 1GiB\ngpus = %s, 0\n' \
        "$CFG" "$1" "$CFG2" "$U1"
}
start_carved 200ms off "$(config_slices 1)"
a=$(devices "$CFG") b=$(devices "$CFG2")
check "config slices: gpus = 1 is on GPU 1 alone ($a), gpus = UUID-of-GPU-1, 0 on both ($b)" \
    '[ "$a" = "1:0:60%+" ] && [ "$b" = "0:1073741824: 1:1073741824:" ]'
out=$(create "\"name\":\"$C\",\"compute\":\"50%+\",\"gpus\":[0]")
check "a guarantee of 50%+ on GPU 0 fits beside the config's 60%+ on GPU 1: $out" '[ "$out" = ok ]'
stop_carved
start_carved 200ms off "$(config_slices 0)"
a=$(devices "$CFG")
check "a restart whose config moves a kept slice to GPU 0 keeps it on GPU 1 ($a), and the log says how to move it" \
    '[ "$a" = "1:0:60%+" ] && grep -q "slice $CFG: the config (line 2) puts it on other GPUs than the slice kept from before is on" "$work/carved.log"'
check "a kept slice whose config names the same GPUs is not logged as moved" \
    '! grep -q "slice $CFG2: the config (line 5) puts it" "$work/carved.log"'
# a config slice whose guarantee does not fit beside the slices users hold: carved starts
# without it (it stayed down until 2026-11-28), keeps other guarantees off that GPU, and
# makes it at the first poll after room is made
stop_carved
forget_state
start_carved 200ms
out=$(create "\"name\":\"$UAPI\",\"compute\":\"70%+\",\"gpus\":[0]")
check "a slice guaranteeing 70%+ on GPU 0 is made through the API: $out" '[ "$out" = ok ]'
stop_carved
start_carved 200ms off "$(printf '[slice %s]\ncompute = 50%%+\ngpus = 0\n' "$CFG")"
list=$("$CARVE" slice list 2>&1)
check "a new config slice of 50%+ on GPU 0 beside it: carved starts, and the log says why it waits" \
    '[[ $list == *"$UAPI"* ]] && grep -q "slice $CFG: the config'"'"'s \[slice $CFG\] (line 2) cannot be made now: GPU 0: .*70.00%.*carved starts without it" "$work/carved.log"'
check "carve slice list says it waits, and why ($(echo "$list" | grep waiting))" \
    '[[ $list == *"waiting: the config'"'"'s [slice $CFG] (line 2) is not made yet: GPU 0: "*"70.00%"* ]]'
waiting=$("$CARVE" ps --json | python3 -c 'import json, sys; print(",".join(w["name"] for w in json.load(sys.stdin)["config_waiting"]))')
check "carve ps --json lists it under config_waiting ($waiting)" '[ "$waiting" = "$CFG" ]'
code=$(create "\"name\":\"$C\",\"compute\":\"20%+\",\"gpus\":[0]" code)
out=$(create "\"name\":\"$C\",\"compute\":\"20%+\",\"gpus\":[0]")
check "a user's 20%+ on GPU 0, though it fits, is refused while the config's waits ($code: $out)" \
    '[ "$code" = guarantees_full ] && [[ $out == "GPU 0: the config'"'"'s [slice $CFG] (line 2) waits for room for its guarantee of 50%+ there"* ]]'
out=$(create "\"name\":\"$C\",\"compute\":\"20%+\",\"gpus\":[1]")
out2=$(create "\"name\":\"$CAP\",\"compute\":\"20%\",\"gpus\":[0]")
check "20%+ on GPU 1, and a 20% cap on GPU 0, are made ($out; $out2)" '[ "$out" = ok ] && [ "$out2" = ok ]'
"$CARVE" slice delete "$UAPI" >/dev/null 2>&1
polls 3
a=$(devices "$CFG")
check "once the 70%+ slice is deleted, the config's is made at a poll ($a), and said" \
    '[ "$a" = "0:0:50%+" ] && grep -q "slice $CFG: the config'"'"'s \[slice $CFG\] (line 2) is made now" "$work/carved.log" && ! "$CARVE" slice list | grep -q waiting'
out=$(create "\"name\":\"$ALL\",\"compute\":\"20%+\",\"gpus\":[0]")
check "then a user's 20%+ on GPU 0 is made again, beside its 50%+: $out" '[ "$out" = ok ]'
# places kept for the config's slices that wait for one: a slice going leaves its place to
# them, not to the next user to ask (until 2026-11-28 a user's create right after a delete
# took it, and a section could wait for good), on a full board and among carved's 1024
stop_carved
forget_state
start_carved 200ms
# make_many PREFIX COUNT JSON-FIELDS: COUNT creates named PREFIX-N, one connection each;
# prints how many were made, then the first refusal
make_many() {
    PYTHONPATH=$work python3 -c 'import sys; from ask import ask
made, why = 0, ""
for i in range(int(sys.argv[3])):
    r = ask(sys.argv[1], "\"name\":\"%s-%d\",%s" % (sys.argv[2], i, sys.argv[4]))
    if not r.get("ok"):
        why = r.get("error", "?")
        break
    made += 1
print(made, why)' "$CARVE_SOCKET" "$1" "$2" "$3"
}
out=$(make_many "$MANY" 64 '"compute":"1%","gpus":[0]')
check "64 slices capped at 1% fill GPU 0's board: $out" '[ "$out" = "64 " ]'
stop_carved
start_carved 200ms off "$(printf '[slice %s]\ncompute = 5%%\ngpus = 0\n[slice %s]\npriority = latency\ngpus = 0\n' "$CFG" "$CFG2")"
check "two config slices with compute settings on GPU 0 wait for a place on its board" \
    '[ "$("$CARVE" slice list | grep -c "waiting: ")" -eq 2 ]'
"$CARVE" slice delete "$MANY-0" >/dev/null 2>&1
out=$(create "\"name\":\"$C\",\"compute\":\"1%\",\"gpus\":[0]")
check "a place freed on the board: a user's 1% on GPU 0 is refused, kept for the config ($out)" \
    '[[ $out == "GPU 0: its board holds "*" slices with compute settings of 64, and carved keeps "*" for the config'"'"'s slices that wait for room"* ]]'
polls 3
a=$(devices "$CFG")
check "the config's first is made there at a poll ($a), its second still waits" \
    '[ "$a" = "0:0:5%" ] && "$CARVE" slice list | grep -q "waiting: the config'"'"'s \[slice $CFG2\]"'
out=$(make_many "$MANY-mem" 1024 '"memory":"1MiB"')
check "users make slices up to 1023 of carved's 1024, one kept for the config's waiting slice ($out)" \
    '[[ $out == "959 carved holds 1023 slices of its 1024, and keeps 1 place for the config'"'"'s slices that wait for room"* ]]'
stop_carved
forget_state
printf 'poll_interval = 200ms\n[slice %s]\nmemory = 1GiB\n[slice %s]\ngpus = 0, 7\n' "$CFG2" "$CFG" \
    >"$work/bad.conf"
out=$(timeout 20 "$CARVED" --simulate --config "$work/bad.conf" --socket "$CARVE_SOCKET" \
    --state-dir "$work/state" --listen off 2>&1)
rc=$?
check "a config slice on a GPU the node lacks: carved does not start, status 2, saying which ($(echo "$out" | tail -n 1))" \
    '[ $rc -eq 2 ] && [[ $out == *"the config'"'"'s [slice $CFG] (line 4): gpus: this node has no GPU 7"* ]]'
check "and the config's slice before it, made, is removed again (no /dev/shm/carve.d.$CFG2.*, none in slices.json)" \
    '! ls /dev/shm/carve.d."$CFG2".* 2>/dev/null && ! grep -qs "$CFG2" "$work/state/slices.json"'
# an HTTP address another program holds: carved does not start, before it makes any slice
busy=$(free_port)
# its holder says when it listens: a sleep of 0.5 s was too short beside other suites on 2
# CPUs, and carved took the port first (and started)
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
time.sleep(30)' "$busy" >"$work/holder.out" 2>&1 &
holder=$!
for _ in $(seq 200); do grep -q ready "$work/holder.out" && break; sleep 0.05; done
printf 'poll_interval = 200ms\n[slice %s]\nmemory = 1GiB\n' "$CFG2" >"$work/busy.conf"
out=$(timeout 20 "$CARVED" --simulate --config "$work/busy.conf" --socket "$CARVE_SOCKET" \
    --state-dir "$work/state" --listen "127.0.0.1:$busy" 2>&1)
rc=$?
kill "$holder" 2>/dev/null
check "an HTTP port in use: carved exits 1 ($(echo "$out" | tail -n 1)) having made no slice of the config and written no slices.json" \
    "[ $rc -eq 1 ]"' && ! ls /dev/shm/carve.d."$CFG2".* 2>/dev/null && ! grep -qs "$CFG2" "$work/state/slices.json"'
out=$("$CARVED" --config "$work/bad.conf" --check-config --simulate 2>&1)
check "carved --check-config --simulate refuses gpus = 0, 7 on the simulated node of two, status 2 ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"the config'"'"'s [slice $CFG] (line 4): gpus: this node has no GPU 7"* ]]'
out=$(env CARVE_LIBDIR="$work/nowhere" "$CARVED" --config "$work/bad.conf" --check-config --simulate 2>&1)
check "without NVML, carved --check-config takes it, saying the GPUs are found at start ($(echo "$out" | head -n 1 | cut -c1-80)...)" \
    "[ $? -eq 0 ]"' && [[ $out == *"are not checked here"*"carved finds them when it starts"* ]]'

printf '[slice %s]\ngpus = 0 1\n' "$CFG" >"$work/bad.conf"
out=$("$CARVED" --config "$work/bad.conf" --check-config 2>&1)
check "carved --check-config refuses gpus = 0 1, status 2 ($out)" \
    "[ $? -eq 2 ]"' && [[ $out == *"bad.conf:2: gpus: \`0 1'"'"' is neither a GPU index"* ]]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
