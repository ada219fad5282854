#!/usr/bin/env bash
# slow: yes (10 s: memcheck of carved, which the gcc build's run has just checked)
# carved_valgrind.sh - carved --simulate under valgrind's memcheck for a whole working life
# on a private socket: config slices made, `carve slice create` (memory, compute), list,
# `carve run --slice` and `carve run --memory` through it, ps with a tenant and an escape,
# a tenant in a PID namespace of its own SIGKILLed (as root),
# bad requests, a slice made on one GPU ("gpus"), joins that take the slice's table fd (and
# ones that hang up first), /metrics, /api/state and the dashboard page over HTTP, delete,
# and SIGTERM. carved must answer all of
# it, exit 0, and valgrind must report no error (invalid access, uninitialised value) and no
# definitely lost block.
#
#   BUILD=build bash tests/e2e/carved_valgrind.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
MEMHOG=$BUILD/bench/memhog
chmod 755 "$work"
export CARVE_SIM_MEMORY=8GiB CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

for tool in valgrind curl python3; do
    if ! command -v "$tool" >/dev/null; then
        bad "$tool is not installed (scripts/install-deps.sh installs it)"
        finish
    fi
done

port=$(free_port)
cat >"$work/carved.conf" <<CONF
poll_interval = 200ms
idle_after = 10s
[slice shared]
memory = 1GiB
compute = 20%
users = root
CONF
valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite --track-origins=yes --log-file="$work/valgrind.log" \
    "$CARVED" --simulate --config "$work/carved.conf" --socket "$CARVE_SOCKET" \
    --state-dir "$work/state" --listen "127.0.0.1:$port" >"$work/carved.log" 2>&1 &
daemon=$!
up=0
for _ in $(seq 300); do # valgrind starts slowly: up to 30 s
    "$CARVE" slice list >/dev/null 2>&1 && up=1 && break
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.1
done
if [ "$up" = 0 ]; then
    bad "carved under valgrind did not start: $(tail -n 20 "$work/carved.log" "$work/valgrind.log")"
    finish
fi
ok "carved runs under memcheck"

check "slice create with memory and compute" '"$CARVE" slice create mine --memory 768MiB --compute 30% >/dev/null'
check "a refused create (cap bigger than the GPU)" '! "$CARVE" slice create big --memory 100GiB 2>/dev/null'
check "slice list shows both slices" '"$CARVE" slice list | grep -q "^shared " && "$CARVE" slice list | grep -q "^mine "'
out=$("$CARVE" run --simulate --slice shared -- "$MEMHOG" --label t1 --step 128 --hold 0 2>&1)
check "carve run --slice shared is capped at 1 GiB" '[[ $out == *"got 1024 MiB"* ]]'
out=$("$CARVE" run --simulate --memory 256MiB -- "$MEMHOG" --label t2 --step 64 --hold 0 2>&1)
check "carve run --memory through carved is capped at 256 MiB" '[[ $out == *"got 256 MiB"* ]]'
# both hold 15 s and are ended once checked (4 s ran out before /metrics was read under four
# suites at once, 2026-11-29)
"$CARVE" run --simulate --slice mine -- "$MEMHOG" --label held --max 128 --hold 15 >"$work/held.log" 2>&1 &
held=$!
LD_LIBRARY_PATH=$BUILD/lib/carve/sim "$MEMHOG" --label escape --max 64 --hold 15 >"$work/escape.log" 2>&1 &
escape=$!
sleep 2
ps_json=$("$CARVE" ps --json 2>&1)
check "carve ps sees the tenant in mine and the escape" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
sl=[x for x in s[\"slices\"] if x[\"name\"]==\"mine\"][0]
assert len(sl[\"processes\"])==1 and any(e[\"pid\"]==int(sys.argv[2]) for e in s[\"escapes\"])
' \"\$ps_json\" $escape"
check "carve ps (text) and carve top --once" '"$CARVE" ps >/dev/null && "$CARVE" top --once >/dev/null'
metrics=$(curl -s --max-time 30 "http://127.0.0.1:$port/metrics")
check "/metrics has the slices and the escape" '[[ $metrics == *"carve_slice_memory_cap_bytes{slice=\"mine\""* ]] && grep -q "^carve_gpu_escapes{.*} 1" <<<"$metrics"'
check "/api/state is the snapshot" 'curl -s --max-time 30 "http://127.0.0.1:$port/api/state" | python3 -c "import json,sys; assert json.load(sys.stdin)[\"version\"] == 1"'
# whole replies first, then the match: `curl | grep -q' under pipefail fails whenever grep has
# its line and exits while curl (slow under valgrind) still writes the rest
page=$(curl -s --max-time 30 "http://127.0.0.1:$port/")
check "/ is the dashboard page" '[[ $page == *"id=\"escapes\""* ]]'
check "a 404 and a 405" '[ "$(curl -s -o /dev/null -w "%{http_code}" --max-time 30 "http://127.0.0.1:$port/nope")" = 404 ] && [ "$(curl -s -o /dev/null -w "%{http_code}" -X POST --max-time 30 "http://127.0.0.1:$port/metrics")" = 405 ]'
kill "$held" "$escape" 2>/dev/null
wait "$held" "$escape"
sleep 0.5
# carved runs under memcheck: on a loaded machine a reply can take many seconds, hence 30 s
metrics=$(curl -s --max-time 30 "http://127.0.0.1:$port/metrics")
escapes_total=$(grep -o '^carve_escapes_total{.*} [0-9]*$' <<<"$metrics" | grep -o '[0-9]*$')
check "the escape, seen in many polls, counts once (carve_escapes_total ${escapes_total:-missing})" '[ "$escapes_total" = 1 ]'
# a tenant in a PID namespace of its own (a container's first process: pid 1 there), as root:
# carved finds it by /proc, lists it by its host pid, and gives its slot back once SIGKILLed
if [ "$(id -u)" -eq 0 ] && unshare -p -f -m --mount-proc --kill-child true 2>/dev/null; then
    unshare -p -f -m --mount-proc --kill-child "$CARVE" run --simulate --slice mine -- \
        "$MEMHOG" --label boxed --max 128 --hold 4 >"$work/boxed.log" 2>&1 &
    boxed=$!
    sleep 2
    inner=$(pgrep -P "$boxed")
    ps_json=$("$CARVE" ps --json 2>&1)
    check "a container's tenant (pid 1 there) is listed by its host pid (${inner:-none})" "python3 -c '
import json,sys; s=json.loads(sys.argv[1])
p=[x for x in s[\"slices\"] if x[\"name\"]==\"mine\"][0][\"processes\"]
assert [(x[\"pid\"], x[\"namespace_pid\"]) for x in p]==[(int(sys.argv[2]), 1)], p
' \"\$ps_json\" \"\$inner\""
    kill -KILL "$inner"
    wait "$boxed" 2>/dev/null
    gone=0
    for _ in $(seq 50); do
        "$CARVE" ps --json 2>/dev/null | python3 -c 'import json,sys
sys.exit([x for x in json.load(sys.stdin)["slices"] if x["name"] == "mine"][0]["processes"] != [])' && gone=1 && break
        sleep 0.2
    done
    check "SIGKILLed, its slot is given back by carved" '[ "$gone" = 1 ]'
else
    echo "skip - a tenant in a PID namespace of its own (needs root and unshare -p)"
fi
replies=$(python3 - "$CARVE_SOCKET" <<'EOF'
import socket, sys
for raw in (b"junk\n", b"[1]\n", b'{"op":"create","name":"x","\xc3\xc0":1}\n', b'{"op":"x"}\x00\n',
            b'{"op":"list","pad":"' + b"x" * 70000 + b'"}\n', b'{"op":"li', b'{"op":"ps"}\n' * 20,
            b'{"op":"create","name":"y","gpus":[9]}\n',
            b'{"op":"create","name":"ongpu","compute":"10%+","gpus":[0]}\n',
            b'{"op":"delete","name":"ongpu"}\n'):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sys.argv[1])
    s.sendall(raw)
    if raw.startswith(b'{"op":"ps"}'):
        s.close()  # hangs up without reading
        continue
    if not raw.endswith(b"\n"):
        s.shutdown(socket.SHUT_WR)
    print(s.recv(1 << 20).decode("utf-8", "replace").strip()[:60])
EOF
)
check "seven bad requests, seven error replies; a slice on GPU 0 (\"gpus\") made and deleted ($(tr '\n' ' ' <<<"$replies" | cut -c1-120)...)" \
    '[ "$(grep -c "\"ok\":false" <<<"$replies")" -eq 7 ] && [ "$(grep -c "\"ok\":true" <<<"$replies")" -eq 2 ]'
# joins that ask for the table, as libcarve's do: carved sends an fd with its yes
# (send_with_fd) and closes its copy once sent, or when the client hangs up first
fds_before=$(find "/proc/$daemon/fd" -mindepth 1 -maxdepth 1 | wc -l)
handed=$(python3 - "$CARVE_SOCKET" <<'EOF'
import os, socket, stat, sys
req = b'{"op":"join","name":"shared","table":true}\n'
got = 0
for i in range(10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sys.argv[1])
    s.sendall(req)
    if i % 2:  # hangs up without reading: carved's copy of the fd must still be closed
        s.close()
        continue
    msg, fds, _, _ = socket.recv_fds(s, 4096, 4)
    st = os.fstat(fds[0]) if fds else None
    if msg.startswith(b'{"ok":true') and len(fds) == 1 and stat.S_ISREG(st.st_mode) and st.st_size > 0:
        got += 1
    for fd in fds:
        os.close(fd)
    s.close()
print(got)
EOF
)
sleep 1 # the hung-up clients are dropped at carved's next turn of its loop
fds_after=$(find "/proc/$daemon/fd" -mindepth 1 -maxdepth 1 | wc -l)
check "joins with the table: 5 of 5 readers got its fd ($handed), carved holds as many fds after 10 joins as before ($fds_before, $fds_after)" \
    '[ "$handed" = 5 ] && [ "$fds_after" -eq "$fds_before" ]'
check "slice delete" '"$CARVE" slice delete mine >/dev/null && ! "$CARVE" slice list | grep -q "^mine "'
check "a refused delete (no such slice)" '! "$CARVE" slice delete mine 2>/dev/null'

kill -TERM "$daemon"
wait "$daemon"
rc=$?
daemon=
check "SIGTERM: carved under memcheck exits 0 (got $rc; 99 = valgrind found errors)" '[ $rc -eq 0 ]'
summary=$(grep -E "ERROR SUMMARY|definitely lost|in use at exit" "$work/valgrind.log" | sed 's/^==[0-9]*== //' | tr '\n' ';')
check "valgrind: no errors ($summary)" 'grep -q "ERROR SUMMARY: 0 errors" "$work/valgrind.log"'
check "valgrind: no definite leak" '! grep -qE "definitely lost: [1-9]" "$work/valgrind.log"'
if [ "$failed" -gt 0 ]; then
    echo "---- valgrind log ----"
    sed 's/^/    /' "$work/valgrind.log" | tail -n 80
fi
finish
