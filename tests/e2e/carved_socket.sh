#!/usr/bin/env bash
# carved_socket.sh - a carved on a socket other than the node's (carved --socket, CARVE_SOCKET):
# libcarve in another user's tenant trusts it when root answers there, so a user let into a
# slice runs in it (it got `Permission denied ... carved does not answer at
# /run/carve/carved.sock' while carved ran); a socket another user serves is not trusted: the
# tenant's libcarve does not ask it, and says which carved it looked for.
#
#   BUILD=build bash tests/e2e/carved_socket.sh   (as root; skipped otherwise)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "ok - skipped: needs root and setpriv (tenants of another user)"
    echo "1 passed, 0 failed"
    exit 0
fi
# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
# shellcheck source=tests/e2e/reachable.bash
. tests/e2e/reachable.bash
# no context or module memory, so that a tenant gets its whole cap in allocations
export CARVE_SIM_CTX_MEMORY=0 CARVE_SIM_MODULE_MEMORY=0
OPEN=socket-open-$$
fake=
cleanup_extra() {
    [ -z "$fake" ] || kill "$fake" 2>/dev/null
    rm -f /dev/shm/carve.d."$OPEN".*
}
chmod 755 "$work"
NB=$(reachable_build "$BUILD" "$work/nobody-build")
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

start_carved 200ms
# made 0666 by bind under carved's umask, not by a chmod of the path after it (which follows a
# symlink put there in between)
check "carved's socket is a socket anyone may connect to: $(stat -c '%F %a' "$CARVE_SOCKET")" \
    '[ "$(stat -c %F "$CARVE_SOCKET")" = socket ] && [ "$(stat -c %a "$CARVE_SOCKET")" = 666 ]'
"$CARVE" slice create "$OPEN" --memory 256MiB --users nobody >/dev/null || bad "carve slice create $OPEN"
shm=$(python3 -c 'import json, sys
print([s["shm"] for s in json.load(open(sys.argv[1]))["slices"] if s["name"] == sys.argv[2]][0])' \
    "$work/state/slices.json" "$OPEN")
touch "$CARVE_SIM_STATE"
chmod o+rw "$CARVE_SIM_STATE" # the simulated GPU's device files, as /dev/nvidia* are

out=$(as_nobody env CARVE_SOCKET="$CARVE_SOCKET" "$NB/bin/carve" run --slice "$OPEN" -- \
    "$NB/bench/memhog" --label other --step 64 --hold 0 2>&1)
echo "$out" | sed 's/^/    /'
check "nobody, let into a slice of root's carved on $CARVE_SOCKET, runs in it capped at 256 MiB: $(echo "$out" | tail -n 1)" \
    '[[ $out == *"total 256 MiB"* ]] && [[ $out == *"got 256 MiB"* ]]'

# a carved of nobody's own: it would vouch for whatever it likes. It logs what it is asked.
# setpriv itself in the background (not as_nobody, a function: its subshell would be $!)
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$work/fake.sock" \
    "$work/fake.log" >/dev/null 2>&1 <<'PY' &
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
open(log, "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    with open(log, "a") as f:
        f.write(data.decode(errors="replace") + "\n")
    try:
        c.sendall(b'{"ok":true,"slice":"x","shm":"/x"}\n')
    except OSError:
        pass
    c.close()
PY
fake=$!
chmod 777 "$work" # nobody's server makes its socket there
for _ in $(seq 50); do [ -S "$work/fake.sock" ] && break; sleep 0.1; done
chmod 755 "$work"
err=$(as_nobody env CARVE_SOCKET="$work/fake.sock" CARVE_SLICE="$shm" \
    LD_PRELOAD="$NB/lib/carve/libcarve.so" LD_LIBRARY_PATH="$NB/lib/carve/sim" \
    "$NB/bench/memhog" --label fake --step 64 --max 128 --hold 0 2>&1)
rc=$?
check "CARVE_SOCKET at a socket nobody serves: no GPU context (rc $rc), and libcarve says it trusts a carved elsewhere only as root: $(echo "$err" | head -n 1)" \
    '[ $rc -ne 0 ] && [[ $err == *"nor does a carved running as root at $work/fake.sock"* ]]'
check "nobody's server was not asked to let the tenant in: $(tr '\n' ' ' <"$work/fake.log")" \
    '! grep -q join "$work/fake.log"'
chmod o-rw "$CARVE_SIM_STATE"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
