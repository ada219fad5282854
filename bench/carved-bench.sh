#!/usr/bin/env bash
# carved-bench.sh - carved at scale on the simulated GPU, on a private socket and port:
#   1. SLICES slices (default 1000) made through the socket, one connection each as the
#      CLI does; then `list`, `ps` and GET /metrics with so many slices (time, bytes);
#   2. `carve run --slice bench-0 -- true` started RATE times a second (default 200) for
#      RUNS runs (default 2000), at most INFLIGHT at once (default 64): spawn-to-exit
#      latency percentiles, the rate reached, and failures; then `/bin/true` alone at the
#      same rate, the machine's own ceiling for starting processes;
#   3. the slices deleted again; /dev/shm objects and carved's open fds counted before and
#      after: nothing may be left.
# Prints `key=value` lines and a summary; exit status 1 when anything failed or leaked.
#
#   BUILD=build bash bench/carved-bench.sh
#   SLICES=1000 RATE=200 RUNS=2000 INFLIGHT=64 BUILD=build bash bench/carved-bench.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

BUILD=${BUILD:-build}
SLICES=${SLICES:-1000}
RATE=${RATE:-200}
RUNS=${RUNS:-2000}
INFLIGHT=${INFLIGHT:-64}
CARVE=$(pwd)/$BUILD/bin/carve
CARVED=$BUILD/bin/carved
DRIVER=$BUILD/bench/carved_bench
work=$(mktemp -d)
export CARVE_SIM_STATE=$work/sim-state CARVE_SOCKET=$work/carved.sock
daemon=
status=0

cleanup() {
    if [ -n "$daemon" ]; then
        kill -TERM "$daemon" 2>/dev/null
        wait "$daemon" 2>/dev/null
    fi
    find /dev/shm -maxdepth 1 -name 'carve.d.bench-*' -delete 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
for f in "$CARVE" "$CARVED" "$DRIVER"; do
    [ -x "$f" ] || { echo "carved-bench: $f is not built (make)" >&2; exit 2; }
done

# this run's objects (other carve users on the machine make their own)
shm_count() { find /dev/shm -maxdepth 1 -name 'carve.d.bench-*' | wc -l; }
fd_count() { find "/proc/$daemon/fd" -mindepth 1 -maxdepth 1 | wc -l; }
# carved's CPU time so far (user + system), in seconds
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$daemon/stat"; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'poll_interval = 1s\n' >"$work/carved.conf"
"$CARVED" --simulate --config "$work/carved.conf" --socket "$CARVE_SOCKET" --state-dir "$work/state" \
    --listen "127.0.0.1:$port" >"$work/carved.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do
    "$CARVE" slice list >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 1.2 # one poll, so that the HTTP side has a snapshot
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(uname -r)"
shm_before=$(shm_count)
fd_before=$(fd_count)
rss_before=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")
echo "before: shm_objects=$shm_before carved_fds=$fd_before carved_rss_kib=$rss_before"

"$DRIVER" create "$CARVE_SOCKET" bench "$SLICES" || status=1
"$DRIVER" call "$CARVE_SOCKET" list || status=1
"$DRIVER" call "$CARVE_SOCKET" ps || status=1
sleep 1.2
for _ in 1 2 3; do
    curl -s -o "$work/metrics" -w 'metrics http_code=%{http_code} bytes=%{size_download} seconds=%{time_total}\n' \
        --max-time 30 "http://127.0.0.1:$port/metrics"
done
echo "metrics lines=$(wc -l <"$work/metrics") slice_cap_samples=$(grep -c '^carve_slice_memory_cap_bytes{slice="bench-' "$work/metrics")"
[ "$(grep -c '^carve_slice_memory_cap_bytes{slice="bench-' "$work/metrics")" -eq "$SLICES" ] || status=1
"$CARVE" top --once >"$work/top.txt" 2>&1 || status=1
echo "top --once lines=$(wc -l <"$work/top.txt")"
echo "with slices: shm_objects=$(shm_count) carved_fds=$(fd_count) carved_rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")"

cpu0=$(cpu_seconds)
"$DRIVER" runs "$RATE" "$RUNS" "$INFLIGHT" "$CARVE" run --simulate --quiet --slice bench-0 -- true || status=1
echo "carved cpu_seconds during the runs: $(awk -v a="$cpu0" -v b="$(cpu_seconds)" 'BEGIN {print b - a}')"
# the same start-ups of the command alone: what this machine can start at all, so that a rate
# below RATE can be told apart from a machine that cannot start RATE processes a second
"$DRIVER" runs "$RATE" "$RUNS" "$INFLIGHT" /bin/true | sed 's/^runs /without_carve /' || status=1

"$DRIVER" delete "$CARVE_SOCKET" bench "$SLICES" || status=1
sleep 1.2 # a poll: carved lets go of what it read
shm_after=$(shm_count)
fd_after=$(fd_count)
echo "after: shm_objects=$shm_after carved_fds=$fd_after carved_rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")"
if [ "$shm_after" -ne "$shm_before" ] || [ "$fd_after" -ne "$fd_before" ]; then
    echo "LEAK: shm objects $shm_before -> $shm_after, carved fds $fd_before -> $fd_after"
    status=1
fi
kill -0 "$daemon" 2>/dev/null || { echo "carved died: $(tail -n 5 "$work/carved.log")"; status=1; }
echo "result: $([ "$status" -eq 0 ] && echo ok || echo FAILED)"
exit "$status"
