#!/usr/bin/env bash
# carved.sh - the node daemon on the simulated GPU: config errors name their line; slices
# made by the config and by `carve slice create` are listed, joined with `carve run --slice`
# and capped; `carve ps` sees the tenants and an escape; /metrics has them; a restarted
# carved keeps its slices while a tenant runs on, still capped; and, when run as root with
# no carved of the node's own running, a tenant of another user cannot forge a bigger slice,
# join a slice not open to it, or delete one.
#
#   BUILD=build bash tests/e2e/carved.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
CARVED=$BUILD/bin/carved
MEMHOG=$BUILD/bench/memhog
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
passed=0
failed=0
work=$(mktemp -d)
chmod 755 "$work"
# no context or module memory, so that a tenant gets its whole cap in allocations
export CARVE_SIM_STATE=$work/sim-state CARVE_SIM_MEMORY=8GiB CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0
# a GPU of this run's own: the compute slices' board (/dev/shm/carve-board-<uuid>), which
# outlives carved with the slices by design, is this test's alone and goes with it
sim_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
export CARVE_SIM_UUIDS=GPU-$sim_uuid
daemon=

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# The node's own socket when we may use it (root, and no carved there), else one of this
# run's own: libcarve trusts a carved at the node's socket, or a root one at CARVE_SOCKET, so
# run as root the forgery tests mean something either way.
node_socket=/run/carve/carved.sock
if [ "$(id -u)" -eq 0 ] && ! python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" "$node_socket" 2>/dev/null; then
    export CARVE_SOCKET=$node_socket
else
    export CARVE_SOCKET=$work/carved.sock
fi
trust=0
[ "$(id -u)" -ne 0 ] || trust=1
port=$(free_port)

stop_daemon() {
    if [ -n "$daemon" ]; then
        kill -TERM "$daemon" 2>/dev/null
        wait "$daemon" 2>/dev/null
        daemon=
    fi
}
cleanup() {
    stop_daemon
    # the slices outlive carved by design: take this test's away
    find /dev/shm -maxdepth 1 -name 'carve.d.*' -newer "$work/carved.conf" -delete 2>/dev/null
    rm -f "/dev/shm/carve-board-${sim_uuid//-/}" "/dev/shm/carve-board-${sim_uuid//-/}.activity"
    rm -rf "$work"
}
trap cleanup EXIT

start_daemon() {
    "$CARVED" --simulate --config "$work/carved.conf" --socket "$CARVE_SOCKET" \
        --state-dir "$work/state" --listen "127.0.0.1:$port" >>"$work/carved.log" 2>&1 &
    daemon=$!
    for _ in $(seq 50); do
        "$CARVE" slice list >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "carved did not start:"; sed 's/^/    /' "$work/carved.log"
    return 1
}

# 1. a malformed config: the line and what is wrong, exit status 2
printf 'poll_interval = 1s\nidle_after = 10s\nmemroy = 1GiB\n' >"$work/bad.conf"
err=$("$CARVED" --check-config --config "$work/bad.conf" 2>&1)
rc=$?
check "a bad key is refused with its line number (rc $rc: $err)" '[ $rc -eq 2 ] && [[ $err == *"bad.conf:3"* ]]'
# the options that override the config are checked as its lines are (--check-config said
# "config ok" to each of these, and carved then failed to start or bound every interface)
for opt in "--listen foo" "--listen :9477" "--socket ''" "--state-dir relative"; do
    err=$(eval "\"\$CARVED\" --check-config $opt" 2>&1)
    rc=$?
    check "carved --check-config $opt: refused, exit 2 ($rc: $err)" '[ $rc -eq 2 ] && [[ $err == "carved: ${opt%% *}: "* ]]'
done
# an unknown short option inside a word was named as the word before it: `carved -Zx' said
# "unknown option `build/bin/carved'"
err=$("$CARVED" -Zx 2>&1)
rc=$?
check "carved -Zx: exit 2, names -Z ($rc: $err)" '[ $rc -eq 2 ] && [[ $err == "carved: unknown option \`-Z"* ]]'

cat >"$work/carved.conf" <<CONF
poll_interval = 200ms
idle_after = 10s
[slice shared]
memory = 1GiB
compute = 50+
users = root
[slice closed]
memory = 512MiB
CONF
# a board a user made before carved's first compute slice on the GPU (anyone may make a file in
# /dev/shm; the board is gone after a reboot): carved joined it, and its owner could rewrite
# every share on it (a 10% slice read 100% to libcarve, until 2026-11-28). carved makes a
# board of root's instead.
board_file=/dev/shm/carve-board-${sim_uuid//-/}
planted=0
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    setpriv --reuid 65534 --regid 65534 --clear-groups sh -c ": >'$board_file' && : >'$board_file.activity'" &&
        planted=1
fi
start_daemon || exit 1
if [ "$planted" = 1 ]; then
    owners="$(stat -c %u "$board_file" 2>&1) $(stat -c %u "$board_file.activity" 2>&1)"
    check "a board and activity nobody made first are made again as root's by carved's compute slice (owners: $owners)" \
        '[ "$owners" = "0 0" ] && "$CARVE" slice list | grep -q shared'
fi

list=$("$CARVE" slice list 2>&1)
check "the config's slices are listed" '[[ $list == *shared* ]] && [[ $list == *closed* ]]'
check "carve slice create makes a slice" '"$CARVE" slice create mine --memory 768MiB >/dev/null'
out=$("$CARVE" slice create other --memory 256MiB --users '0, nobody' 2>&1)
check "--users takes numbers and names, spaces around them ($out)" '[[ $out == "slice other made" ]]'
"$CARVE" slice create other-g --memory 256MiB --groups "$(id -gn)" >/dev/null 2>&1
list=$("$CARVE" slice list 2>&1)
joiners=$("$CARVE" slice list --json | python3 -c 'import json, sys
print(*[(s["name"], s["users"], s["groups"]) for s in json.load(sys.stdin) if s["name"] in ("other", "other-g", "closed")])')
check "carve slice list says who may join: users root, nobody; groups $(id -gn); --json too ($joiners)" \
    '[[ $list == *"may join: users root, nobody (and its owner, root, carved'"'"'s admins)"* ]] && [[ $list == *"may join: groups $(id -gn) ("* ]] && [[ $joiners == *"('"'"'other'"'"', ['"'"'root'"'"', '"'"'nobody'"'"'], [])"* ]] && [[ $joiners == *"('"'"'closed'"'"', [], [])"* ]]'
"$CARVE" slice delete other >/dev/null 2>&1
"$CARVE" slice delete other-g >/dev/null 2>&1
out=$("$CARVE" slice create mine --help 2>&1)
rc=$?
check "carve slice create --help prints the slice help (exit $rc)" '[ $rc -eq 0 ] && [[ $out == usage:* ]]'
out=$("$CARVE" slice delete -h 2>&1)
rc=$?
check "carve slice delete -h prints the help and deletes nothing (exit $rc)" \
    '[ $rc -eq 0 ] && [[ $out == usage:* ]] && [[ "$("$CARVE" slice list)" == *mine* ]]'
err=$("$CARVE" slice create mine --memory 1GiB 2>&1)
check "a second slice of the same name is refused: $err" '[[ $err == *"exists already"* ]]'
err=$("$CARVE" slice create big --memory 100GiB 2>&1)
check "a cap bigger than the GPU is refused: $err" '[[ $err == *"more than GPU 0 has"* ]]'
# bad values are bad input, status 2 as carve-slice(1) says (carved refused them: status 1)
for bad_opt in "--memory 8XB:unknown unit" "--memory 8:a number without a unit is bytes" \
    "--compute 101%:more than 100%" "--priority urgent:unknown priority"; do
    err=$("$CARVE" slice create badval ${bad_opt%%:*} 2>&1)
    rc=$?
    check "slice create ${bad_opt%%:*} -> $rc (want 2): $(head -n1 <<<"$err" | cut -c1-80)" \
        '[ $rc -eq 2 ] && [[ $err == *"${bad_opt#*:}"* ]]'
done
check "and no slice badval was made" '! "$CARVE" slice list | grep -q "^badval "'
# a bad name too (carved refused it: status 1)
for bad_name in 'a"b' 'a\b' .. "$(printf 'n%.0s' $(seq 64))"; do
    err=$("$CARVE" slice create "$bad_name" --memory 1GiB 2>&1)
    rc=$?
    check "slice create with the name \`${bad_name:0:12}' -> $rc (want 2): $(head -n1 <<<"$err" | cut -c1-80)" \
        '[ $rc -eq 2 ] && [[ $err == *"is not 1-63 of"* ]]'
done

# 2. a tenant in the config's slice is capped at 1 GiB
out=$("$CARVE" run --simulate --slice shared -- "$MEMHOG" --label t1 --step 128 --hold 0 2>&1)
check "carve run --slice shared: the tenant sees and gets 1 GiB" '[[ $out == *"total 1024 MiB"* ]] && [[ $out == *"got 1024 MiB"* ]]'
out=$("$CARVE" run --slice shared -- "$MEMHOG" --label t1b --step 512 --hold 0 2>&1)
check "without --simulate, a slice of a simulated carved runs on the simulated GPU" '[[ $out == *"(simulated)"* ]] && [[ $out == *"total 1024 MiB"* ]]'
# --slice: nothing is left to undo after the command, so it takes carve's place (one process
# creation fewer per start-up): same pid, its own exit status
sh -c 'echo "$$" >"$1"; exec "$2" run --slice shared -- sh -c "echo \$\$ >\"$1.cmd\"; exit 7"' _ "$work/pid" "$CARVE"
rc=$?
check "carve run --slice runs the command in its own process (pid $(cat "$work/pid") = $(cat "$work/pid.cmd")), exit status $rc" '[ "$(cat "$work/pid")" = "$(cat "$work/pid.cmd")" ] && [ $rc -eq 7 ]'
err=$("$CARVE" run --slice shared -- "$work/no-such-command" 2>&1)
rc=$?
check "carve run --slice with a command that is not there: 127 ($rc, $err)" '[ $rc -eq 127 ] && [[ $err == *"cannot run"* ]]'
err=$("$CARVE" run --simulate --slice nosuch -- true 2>&1)
check "an unknown slice is refused: $err" '[[ $err == *"no slice named"* ]]'
err=$("$CARVE" run --simulate --slice shared --memory 2GiB -- true 2>&1)
check "--slice with --memory is refused: $err" '[[ $err == *"own settings"* ]]'

# 3. carve ps sees a running tenant with its memory, and an escape
# (both held until killed after the restart below)
# (60 s: it must outlive the restart, which came past 20 s under four suites at once)
"$CARVE" run --simulate --slice shared -- "$MEMHOG" --label held --max 256 --hold 60 >"$work/held.log" 2>&1 &
held=$!
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$MEMHOG" --label escape --max 128 --hold 60 >"$work/escape.log" 2>&1 &
escape=$!
# until a poll of carved's has seen both (what the checks below ask), 5 s at most
for _ in $(seq 50); do
    "$CARVE" ps --json 2>/dev/null | python3 -c '
import json,sys; s=json.load(sys.stdin)
sl=[x for x in s["slices"] if x["name"]=="shared"][0]
sys.exit(not (any(p["memory_used"]>=256<<20 for p in sl["processes"]) and
              sl["devices"][0]["memory_used_nvml"] >= 256<<20 and
              any(e["pid"]==int(sys.argv[1]) for e in s["escapes"])))' "$escape" && break
    sleep 0.1
done
ps_json=$("$CARVE" ps --json 2>&1)
check "carve ps --json: the tenant is in slice shared with 256 MiB" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
sl=[x for x in s[\"slices\"] if x[\"name\"]==\"shared\"][0]
assert any(p[\"memory_used\"]>=256<<20 for p in sl[\"processes\"]), sl
' \"\$ps_json\""
check "carve ps --json: the process outside every slice is an escape" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
assert any(e[\"pid\"]==int(sys.argv[2]) for e in s[\"escapes\"]), s[\"escapes\"]
' \"\$ps_json\" $escape"
metrics=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())" "http://127.0.0.1:$port/metrics" 2>&1)
check "/metrics has the slice's cap" '[[ $metrics == *carve_slice_memory_cap_bytes*slice=\"shared\"*1073741824* ]]'
check "/metrics counts the escape" 'grep -q "^carve_gpu_escapes{.*} 1" <<<"$metrics"'
check "an honest tenant's slice is within its cap by NVML too" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
d=[x for x in s[\"slices\"] if x[\"name\"]==\"shared\"][0][\"devices\"][0]
assert not d[\"over_cap\"] and d[\"memory_used_nvml\"] >= 256<<20, d
' \"\$ps_json\""

# 4. restart: the slices stay, the running tenant stays capped, a compute slice keeps its
#    place on the GPU's board (the place its running tenants know)
place() { "$CARVE" ps -j | python3 -c 'import json,sys; print([s for s in json.load(sys.stdin)["slices"] if s["name"]=="paced"][0]["devices"][0]["board_place"])'; }
"$CARVE" slice create before --memory 256MiB --compute 20% >/dev/null
"$CARVE" slice create paced --memory 256MiB --compute 20 >/dev/null
"$CARVE" slice delete before >/dev/null # so that paced's place is not the first free one
place_before=$(place)
"$CARVE" slice create seized --memory 256MiB >/dev/null
saved_shm() { python3 -c 'import json,sys; print([s["shm"] for s in json.load(open(sys.argv[1]))["slices"] if s["name"]==sys.argv[2]][0])' "$work/state/slices.json" "$1"; }
seized_shm=$(saved_shm seized)
"$CARVE" slice create squat --memory 640MiB >/dev/null # a config section takes it below
stop_daemon
# while carved is down, another user owns the objects under seized's saved name (after a
# reboot anyone could make them first, with a bigger cap in them): they must not be adopted
root=0
[ "$(id -u)" -eq 0 ] && root=1 && chown 65534 "/dev/shm$seized_shm" "/dev/shm$seized_shm.terms"
# the config edited while carved was down: closed's cap and idle policy (its mtime kept, which
# the clean-up's -newer test reads)
# and a new section, [slice squat], whose name a slice made through the API holds already
cp -p "$work/carved.conf" "$work/carved.conf.before"
{
    sed 's/^memory = 512MiB$/memory = 384MiB\nidle_policy = reclaim/' "$work/carved.conf.before"
    printf '[slice squat]\nmemory = 128MiB\nusers = root\n'
} >"$work/carved.conf"
touch -r "$work/carved.conf.before" "$work/carved.conf"
start_daemon || exit 1
squat=$(python3 -c 'import json,sys; print(" ".join("%s %s" % (s["origin"], s["memory"]) for s in json.load(open(sys.argv[1]))["slices"] if s["name"] == "squat"))' "$work/state/slices.json")
check "a new config section takes its name from a slice made through the API, and says so ($squat)" \
    '[ "$squat" = "config 128MiB" ] && grep -q "the config'"'"'s \[slice squat\] (line [0-9]*) takes the name from the slice uid [0-9]* made (api)" "$work/carved.log"'
# and its name stays the config's while the slice is deleted (to apply an edit at a restart)
"$CARVE" slice delete squat >/dev/null 2>&1
err=$("$CARVE" slice create squat --memory 640MiB 2>&1)
check "a config section's name is refused to carve slice create: $err" \
    '[[ $err == *"\`squat'"'"' is the config'"'"'s [slice squat] (line "*"): carved makes it at its start; choose another name"* ]]'
list=$("$CARVE" slice list 2>&1)
check "after a restart the slices are still there" '[[ $list == *shared* ]] && [[ $list == *mine* ]]'
new_shm=$(saved_shm seized)
if [ "$root" -eq 1 ]; then
    check "objects under a saved name that carved did not make are not adopted: seized is made anew ($seized_shm, now $new_shm)" \
        'grep -q "slice seized: the objects $seized_shm are not carved'"'"'s (its table belongs to uid 65534" "$work/carved.log" && [ -n "$new_shm" ] && [ "$new_shm" != "$seized_shm" ]'
    rm -f "/dev/shm$seized_shm" "/dev/shm$seized_shm.terms"
else
    echo "# skip - objects of another user under a saved name: needs root to chown"
fi
"$CARVE" slice delete seized >/dev/null
ready=$(grep "ready:" "$work/carved.log" | tail -n 1)
check "the start-up line counts the slices kept from before, not only the config's ($ready)" \
    '[[ $ready =~ \ ([0-9]+)\ slices\ \(([0-9]+)\ from\ the\ config\) ]] && [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]'
check "an edited [slice] section: its new cap is logged as not applied to the kept slice" \
    'grep -q "slice closed: the config (line [0-9]*) asks memory .384MiB.*kept from before has .512MiB" "$work/carved.log" &&
     ! grep -q "slice shared: the config" "$work/carved.log"'
policy=$("$CARVE" ps --json | python3 -c 'import json,sys; print([s for s in json.load(sys.stdin)["slices"] if s["name"]=="closed"][0]["policy_idle"])')
check "an edited [slice] section: its idle policy applies after the restart ($policy)" '[ "$policy" = reclaim ]'
place_after=$(place)
computes=$("$CARVE" slice list -j | python3 -c 'import json,sys; print(" ".join("%s %s" % (s["name"], s["devices"][0]["compute"]) for s in sorted(json.load(sys.stdin), key=lambda s: s["name"]) if s["name"] in ("paced", "shared")))')
table=$("$CARVE" slice list | grep -c ' 20% ')
check "COMPUTE reads as carve writes shares, whatever was typed (\`50+' in the config, \`--compute 20'): $computes" \
    '[ "$computes" = "paced 20% shared 50%+" ] && [ "$table" -eq 1 ]'
check "a compute slice keeps its board place across the restart ($place_before, then $place_after)" '[ "$place_before" -ge 0 ] && [ "$place_before" = "$place_after" ]'
"$CARVE" slice delete paced >/dev/null
check "the tenant kept running through the restart" 'kill -0 "$held" && grep -q "holding 256 MiB" "$work/held.log"'
kill "$escape" "$held" 2>/dev/null
wait "$escape" "$held" 2>/dev/null
out=$("$CARVE" run --simulate --slice mine -- "$MEMHOG" --label t2 --step 128 --hold 0 2>&1)
check "a slice made before the restart still caps (768 MiB)" '[[ $out == *"got 768 MiB"* ]]'

# 4a. a second carved started beside the running one (a slip, or two unit files) must change
# nothing: it adopted the slices, made its config's slices in /dev/shm and rewrote
# slices.json, and only then found the socket taken (exit 1). The running carved, at its next
# save, dropped the new slice from slices.json, and its objects were left in /dev/shm.
printf 'poll_interval = 1s\n[slice second]\nmemory = 128MiB\n' >"$work/second.conf"
saved_before=$(cat "$work/state/slices.json")
err=$(timeout 10 "$CARVED" --simulate --config "$work/second.conf" --socket "$CARVE_SOCKET" \
    --state-dir "$work/state" --listen off 2>&1)
rc=$?
check "a second carved on the same state dir refuses to start, exit 1 ($rc: $(tail -n1 <<<"$err"))" \
    '[ $rc -eq 1 ] && [[ $err == *"another carved"* ]]'
check "and changes nothing: slices.json as it was, no slice \`second' in /dev/shm" \
    '[ "$(cat "$work/state/slices.json")" = "$saved_before" ] && ! ls /dev/shm | grep -q "^carve\.d\.second\."'

# 4c. SIGHUP, the classic reload: it ended carved on the spot (no handler; the man page said
# it did nothing), counters unsaved and its socket left. carved reads its config only at
# start: it runs on, and says whether the file as it is now would load.
kill -HUP "$daemon"
for _ in $(seq 50); do grep -q "SIGHUP: carved reads its config only at start" "$work/carved.log" && break; sleep 0.1; done
check "SIGHUP: carved runs on and says the config is read only at start" \
    '"$CARVE" slice list >/dev/null && grep -q "SIGHUP: carved reads its config only at start.*loads as it is now: restart carved" "$work/carved.log"'
cp -p "$work/carved.conf" "$work/carved.conf.good"
echo 'poll_interval = 5ms' >>"$work/carved.conf"
touch -r "$work/carved.conf.good" "$work/carved.conf" # the clean-up's -newer test reads it
kill -HUP "$daemon"
for _ in $(seq 50); do grep -q "SIGHUP: .*carved.conf would not load now" "$work/carved.log" && break; sleep 0.1; done
check "SIGHUP with a broken config: carved runs on and names the bad line" \
    '"$CARVE" slice list >/dev/null && grep -q "SIGHUP: .*carved.conf would not load now: .*carved.conf:[0-9]*: .poll_interval" "$work/carved.log"'
cp -p "$work/carved.conf.good" "$work/carved.conf"

# 4b. a tenant that rewrites its slice's usage counters gets past libcarve, not past carved:
#     NVML shows the slice over its cap, and its process is an escape
# it holds 15 s, killed once checked (4 s ran out before the checks under four suites at once)
"$CARVE" run --slice shared -- "$BUILD/tests/e2e/mem_forge" 512 15 >"$work/forge.log" 2>&1 &
forger=$!
for _ in $(seq 50); do grep -q forged "$work/forge.log" && break; sleep 0.1; done
# until a poll of carved's has found it over its cap (what the checks below ask), 3 s at most
for _ in $(seq 30); do
    "$CARVE" ps --json 2>/dev/null | python3 -c '
import json,sys; s=json.load(sys.stdin)
sys.exit(not any(e["command"]=="mem_forge" and e["reason"]=="over_cap" for e in s["escapes"]))' && break
    sleep 0.1
done
ps_json=$("$CARVE" ps --json 2>&1)
ps_text=$("$CARVE" ps 2>&1)
check "a tenant that forged its counters is caught: $(grep forged "$work/forge.log")" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
d=[x for x in s[\"slices\"] if x[\"name\"]==\"shared\"][0][\"devices\"][0]
assert d[\"over_cap\"] and d[\"memory_used_nvml\"] > d[\"memory_cap\"] and d[\"memory_used\"] < d[\"memory_cap\"], d
e=[e for e in s[\"escapes\"] if e[\"command\"]==\"mem_forge\"]
assert e and e[0][\"reason\"]==\"over_cap\" and e[0][\"slice\"]==\"shared\", s[\"escapes\"]
' \"\$ps_json\""
check "carve ps names the slice over its cap" '[[ $ps_text == *"in slice shared, over its cap: reported"* ]]'
kill "$forger" 2>/dev/null # done with
wait "$forger"
check "the carved log says so" 'grep -q "slice shared holds .* over its cap" "$work/carved.log"'

# 5. a run without --slice goes through carved and its slice ends with it
out=$("$CARVE" run --simulate --memory 256MiB -- "$MEMHOG" --label t3 --step 64 --hold 0 2>&1)
list=$("$CARVE" slice list --json 2>&1)
check "carve run --memory through carved caps (256 MiB) and leaves no slice" '[[ $out == *"got 256 MiB"* ]] && ! [[ $list == *memhog* ]]'

# a slice named as carve run names the one it asks for (NAME-PID): carve run still runs
# (the name was predictable, so another user could make carve run fail, exit 2)
# shellcheck disable=SC2016  # $$ is the inner shell's pid, which carve run then has
out=$(CARVE="$CARVE" sh -c '"$CARVE" slice create taken-$$ >/dev/null && exec "$CARVE" run --name taken --memory 256MiB -- echo ran' 2>&1)
check "carve run --memory when a slice has its name and pid: it runs ($out)" '[ "$out" = ran ]'

# 6. trust: a tenant of another user (nobody)
# A slice's objects are in /dev/shm for anyone to list and open, and CARVE_SLICE is the
# tenant's: nobody points it at `closed' (not open to it). With carved at the node's socket,
# libcarve asks carved, which refuses; carved itself does not count the process as the
# slice's tenant but as an escape (it was counted in the slice, within its cap and share).
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    # shellcheck source=tests/e2e/reachable.bash
    . tests/e2e/reachable.bash
    NB=$(reachable_build "$BUILD" "$work/nobody-build") # nobody's way to the build
    # in_slice_as_nobody SHM CMD...: CMD as nobody under libcarve, CARVE_SLICE at SHM
    in_slice_as_nobody() {
        local shm=$1
        shift
        setpriv --reuid=65534 --regid=65534 --clear-groups env CARVE_SLICE="$shm" \
            LD_PRELOAD="$NB/lib/carve/libcarve.so" LD_LIBRARY_PATH="$NB/lib/carve/sim" "$@"
    }
    closed_shm=$(python3 -c 'import json,sys
print([s["shm"] for s in json.load(open(sys.argv[1]))["slices"] if s["name"] == "closed"][0])' "$work/state/slices.json")
    chmod o+rw "$CARVE_SIM_STATE" # the simulated GPU's device files, as /dev/nvidia* are
    in_slice_as_nobody "$closed_shm" "$NB/bench/memhog" --label intruder --max 128 --hold 3 >"$work/intruder.log" 2>&1 &
    intruder=$!
    # refused (trust): it ends at once; else a poll of carved's lists it, 1.5 s in
    for _ in $(seq 15); do [ "$trust" = 1 ] && ! kill -0 "$intruder" 2>/dev/null && break; sleep 0.1; done
    ps_json=$("$CARVE" ps --json 2>&1)
    ps_text=$("$CARVE" ps 2>&1)
    wait "$intruder"
    intruder_rc=$?
    chmod o-rw "$CARVE_SIM_STATE"
    if [ "$trust" = 1 ]; then
        check "CARVE_SLICE at a slice not open to the user: libcarve asks carved, no GPU context (rc $intruder_rc: $(head -n1 "$work/intruder.log"))" \
            '[ $intruder_rc -ne 0 ] && grep -q "carved refuses slice \"closed\" to this process: slice .closed. is not open to you" "$work/intruder.log"'
    else
        check "CARVE_SLICE at a slice not open to the user: carved counts an escape, not a tenant of the slice" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
e=[e for e in s[\"escapes\"] if e[\"pid\"]==int(sys.argv[2])]
assert e and e[0][\"reason\"]==\"not_allowed\" and e[0][\"slice\"]==\"closed\", s[\"escapes\"]
d=[x for x in s[\"slices\"] if x[\"name\"]==\"closed\"][0][\"devices\"][0]
assert d[\"memory_used_nvml\"]==0, d
' \"\$ps_json\" $intruder"
        check "carve ps says so" '[[ $ps_text == *"user nobody command memhog in slice closed, not open to its user: reported"* ]]'
    fi
fi
if [ "$trust" = 1 ] && command -v setpriv >/dev/null; then
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env CARVE_SOCKET="$CARVE_SOCKET" "$@"; }
    err=$(as_nobody "$CARVE" run --simulate --slice closed -- true 2>&1)
    check "nobody cannot join a slice not open to it: $err" '[[ $err == *"not open to you"* ]]'
    err=$(as_nobody "$CARVE" slice delete shared 2>&1)
    check "nobody cannot delete the config's slice: $err" '[[ $err == *"belongs to"* ]]'
    # slurm-JOBID is the Slurm plugin's: a user who took a coming job's name failed its step
    err=$(as_nobody "$CARVE" slice create slurm-99 --memory 256MiB 2>&1)
    check "nobody cannot make a slice named slurm-JOBID: $err" '[[ $err == *"names slurm-* are the Slurm plugin"* ]]'
    # 16 slices with compute settings a user (each a place on the boards, 64 for all users:
    # one user's 64 took every place until 2026-11-29); one without them still goes
    made=0
    for i in $(seq 16); do as_nobody "$CARVE" slice create "nb$i" --priority batch >/dev/null 2>&1 && made=$((made + 1)); done
    err=$(as_nobody "$CARVE" slice create nb17 --priority batch 2>&1)
    plain=$(as_nobody "$CARVE" slice create nbplain --memory 128MiB 2>&1 && echo made)
    check "nobody's 17th slice with compute settings is refused ($made made before: $err), one without them is made" \
        '[ "$made" = 16 ] && [[ $err == *"you hold 16 slices with compute settings, the most a user may"* ]] && [[ $plain == *made* ]]'
    for i in $(seq 16) plain; do as_nobody "$CARVE" slice delete "nb$i" >/dev/null 2>&1; done
    # a slice nobody makes itself, without carved, and points CARVE_SLICE at: refused
    forged=$(as_nobody env CARVE_SIM_STATE="/tmp/carve-sim-nobody.$$" CARVE_SOCKET="$work/none.sock" \
        "$NB/bin/carve" run --simulate --memory 4GiB -- "$NB/bench/memhog" --label forged --max 128 --hold 0 2>&1)
    rm -f "/tmp/carve-sim-nobody.$$"
    check "a slice not made by carved gets no GPU context while carved runs" '[[ $forged == *"was not made by carved"* ]]'
    terms=$(find /dev/shm -maxdepth 1 -name 'carve.d.shared.*.terms' | head -1)
    check "nobody cannot write the terms (caps) of a slice: $terms" '! as_nobody sh -c "echo x >> \"$0\"" "$terms" 2>/dev/null'
    # a tenant of another user that may join: its libcarve cannot open the table by name (0600,
    # carved's) and maps the fd carved hands over with its answer to the join
    "$CARVE" slice create opento --memory 256MiB --users nobody >/dev/null
    chmod o+rw "$CARVE_SIM_STATE"
    out=$(as_nobody "$NB/bin/carve" run --slice opento -- "$NB/bench/memhog" --label other --step 64 --hold 0 2>&1)
    opento_shm=$(saved_shm opento)
    check "nobody, let into a slice, runs in it through the table's fd from carved: $(echo "$out" | tail -n 1)" \
        '[[ $out == *"total 256 MiB"* ]] && [[ $out == *"got 256 MiB"* ]] && ! as_nobody test -w "/dev/shm$opento_shm"'
    # a tenant out of file descriptors: the table carved sent was dropped by the kernel (no fd
    # to put it in) and libcarve blamed the slice's owner ("another user's"); with none free
    # at all, it waited 10 s for a carved that was running
    starved1=$(in_slice_as_nobody "$opento_shm" "$NB/tests/e2e/fd_starved" 1 2>&1)
    starved0=$(in_slice_as_nobody "$opento_shm" "$NB/tests/e2e/fd_starved" 0 2>&1)
    check "a tenant with one file descriptor free is told it cannot receive the table: $(echo "$starved1" | head -n 1)" \
        '[[ $starved1 == *"no free file descriptor to receive the slice'"'"'s table from carved"* ]] && [[ $starved1 != *"context 0"* ]]'
    check "a tenant with none free is told it cannot ask carved: $(echo "$starved0" | head -n 1)" \
        '[[ $starved0 == *"no free file descriptor to ask carved with"* ]] && [[ $starved0 != *"context 0"* ]]'
    # a tenant that starts while carved restarts waits for it (up to 10 s) and then runs; one
    # that starts while carved stays down gets no GPU context, saying why
    # across_restart LOG CMD...: CMD in opento as nobody, started while carved is down and
    # restarted 1.5 s later; its status
    across_restart() {
        local log=$1 pid
        shift
        stop_daemon
        in_slice_as_nobody "$opento_shm" "$@" >"$log" 2>&1 &
        pid=$!
        sleep 1.5
        start_daemon || exit 1
        wait "$pid"
    }
    across_restart "$work/late.log" "$NB/bench/memhog" --label late --step 64 --hold 0
    late_rc=$?
    check "a tenant that starts while carved is down runs once carved is back (rc $late_rc: $(tail -n 1 "$work/late.log"))" \
        '[ "$late_rc" -eq 0 ] && grep -q "got 256 MiB" "$work/late.log"'
    # one that forks while a thread of its waits there: the child was left waiting for a
    # thread it does not have, forever (until 2026-11-27); it does its own init, and runs
    across_restart "$work/fork.log" "$NB/tests/e2e/fork_init"
    fork_rc=$?
    check "a tenant that forks while its init waits for carved: the child runs too (rc $fork_rc: $(grep -v '^thread' "$work/fork.log" | tail -n 1))" \
        '[ "$fork_rc" -eq 0 ] && grep -q "^thread: context 0" "$work/fork.log" && grep -q "^child: context 0" "$work/fork.log"'
    stop_daemon
    start=$SECONDS
    err=$(in_slice_as_nobody "$opento_shm" "$NB/bench/memhog" --label down --step 64 --hold 0 2>&1)
    waited=$((SECONDS - start))
    # a slice of carve run alone (root's, its table 0600): nobody is refused at once, waiting
    # for no carved
    CARVE_SOCKET="$work/none.sock" "$CARVE" run --simulate --memory 256MiB -- sleep 20 &
    alone=$!
    alone_shm=
    for _ in $(seq 50); do
        alone_shm=$(tr '\0' '\n' <"/proc/$(pgrep -P "$alone" sleep)/environ" 2>/dev/null | sed -n 's/^CARVE_SLICE=//p')
        [ -n "$alone_shm" ] && break
        sleep 0.1
    done
    start=$SECONDS
    err_alone=$(in_slice_as_nobody "$alone_shm" "$NB/bench/memhog" --label alone --step 64 --hold 0 2>&1)
    waited_alone=$((SECONDS - start))
    kill "$alone" 2>/dev/null
    wait "$alone" 2>/dev/null
    start_daemon || exit 1
    chmod o-rw "$CARVE_SIM_STATE"
    check "another user's slice of carve run alone ($alone_shm) is refused at once (${waited_alone} s), carved or not: $(echo "$err_alone" | head -n 1)" \
        '[ -n "$alone_shm" ] && [[ $err_alone == *"Permission denied: the slice is another user'"'"'s"* ]] && [ "$waited_alone" -le 2 ]'
    check "one that starts while carved stays down gets no GPU context after ${waited} s: $(echo "$err" | head -n 1)" \
        '[[ $err == *"the slice'"'"'s table is carved'"'"'s, and carved does not answer"* ]] && [ "$waited" -ge 9 ]'
    "$CARVE" slice delete opento >/dev/null 2>&1
    # a slice's table is carved's (0600): a tenant maps the fd carved hands it at its join, so
    # a user who may not join can neither write it nor truncate it (any user could, 0666,
    # until 2026-11-27: every tenant's process died of SIGBUS)
    "$CARVE" slice create cut --memory 256MiB >/dev/null
    cut_shm=$(saved_shm cut)
    err=$(as_nobody truncate -s 0 "/dev/shm$cut_shm" 2>&1)
    check "nobody cannot truncate a slice's table: $err" \
        '[[ $err == *"Permission denied"* ]] && [ "$(stat -c %s "/dev/shm$cut_shm")" -gt 0 ]'
    check "a slice's table is carved's alone: $(stat -c '%U %a' "/dev/shm$cut_shm")" \
        '[ "$(stat -c %a "/dev/shm$cut_shm")" = 600 ]'
    # a tenant may still (it holds the table's fd): carved, which maps it, died of SIGBUS at
    # its next poll; now it makes the slice anew and goes on. root stands in for the tenant.
    # remade LOGGED: until carved has logged LOGGED and saved cut under a new name, 3 s at most
    remade() {
        for _ in $(seq 30); do # carved's next poll
            grep -q "$1" "$work/carved.log" && [ "$(saved_shm cut 2>/dev/null)" != "$cut_shm" ] &&
                return
            sleep 0.1
        done
    }
    truncate -s 0 "/dev/shm$cut_shm"
    remade "slice cut: its objects $cut_shm were truncated"
    check "a slice's table truncated by a tenant: carved goes on and makes the slice anew ($cut_shm, now $(saved_shm cut 2>/dev/null))" \
        'kill -0 "$daemon" && grep -q "slice cut: its objects $cut_shm were truncated" "$work/carved.log" && [ "$(saved_shm cut)" != "$cut_shm" ] && "$CARVE" slice list | grep -q "^cut "'
    # or overwrite its head (magic and version): libcarve refused every later join, and carved
    # kept the slice as it was (until 2026-11-28)
    cut_shm=$(saved_shm cut)
    printf '\0\0\0\0\0\0\0\0\0\0\0\0' | dd of="/dev/shm$cut_shm" bs=12 count=1 conv=notrunc 2>/dev/null
    remade "slice cut: the head of its table $cut_shm was overwritten"
    check "a slice's table whose head a tenant overwrote: carved makes the slice anew ($cut_shm, now $(saved_shm cut 2>/dev/null))" \
        'kill -0 "$daemon" && grep -q "slice cut: the head of its table $cut_shm was overwritten" "$work/carved.log" && [ "$(saved_shm cut)" != "$cut_shm" ] && "$CARVE" slice list | grep -q "^cut "'
    "$CARVE" slice delete cut >/dev/null 2>&1
    # one user cannot take every slice (1024) and so refuse everyone else's carve run
    made=0
    for i in $(seq 65); do
        err=$(as_nobody "$CARVE" slice create "hog$i" 2>&1) && made=$((made + 1))
    done
    check "nobody makes 64 slices, and the 65th is refused ($made: $err)" '[ $made -eq 64 ] && [[ $err == *"you hold 64 slices, the most a user may"* ]]'
    check "and root still may make one" '"$CARVE" slice create hog-root >/dev/null && "$CARVE" slice delete hog-root >/dev/null'
    for i in $(seq 64); do as_nobody "$CARVE" slice delete "hog$i" >/dev/null; done
else
    echo "skip - trust checks (need root)"
fi

check "carve slice delete removes a slice" '"$CARVE" slice delete mine >/dev/null && ! "$CARVE" slice list | grep -q "^mine "'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
