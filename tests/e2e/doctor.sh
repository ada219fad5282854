#!/usr/bin/env bash
# doctor.sh - `carve doctor` on the simulated GPU: a ready node passes every check with the
# probe's slice holding (1 GiB seen, 1 GiB more refused, 16 MiB got); a libcarve that does not
# take hold, a GPU in Exclusive_Process or Prohibited compute mode, and no driver are each
# named with what to do (FAIL makes the exit status 1, a warning does not); a running carved
# (the probe's slice then made by it), an MPS control daemon and a Slurm plugstack naming the
# plugin are reported; --json says the same; bad options exit 2.
#
#   BUILD=build bash tests/e2e/doctor.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
# carve doctor looks through /proc for MPS control daemons: in a PID namespace of its own (as
# root) this test sees its own, not those of the suites running beside it (tests/run-all.sh)
if [ "$(id -u)" -eq 0 ] && [ -z "${DOCTOR_OWN_PIDS:-}" ] && unshare -pf --mount-proc true 2>/dev/null; then
    DOCTOR_OWN_PIDS=1 exec unshare -pf --mount-proc bash tests/e2e/doctor.sh "$@"
fi
# shellcheck source=tests/e2e/private_carved.bash
source tests/e2e/private_carved.bash
unset CARVE_LIBDIR CARVE_SIM_COMPUTE_MODE CARVE_MPS_CONTROL SLURM_CONF

line() { grep -m1 "^$1 *$2 " <<<"$3"; } # line STATUS CHECK OUTPUT: that finding's line

out=$("$CARVE" doctor --simulate 2>&1)
rc=$?
check "a ready node: exit 0 and 'no problems found' (exit $rc)" "[ $rc -eq 0 ] && [[ \"\$out\" == *'no problems found'* ]]"
check "carve's libraries: $(line ok carve "$out")" "line ok carve \"\$out\" | grep -q 'libcarve.so in'"
check "the driver: $(line ok driver "$out")" "line ok driver \"\$out\" | grep -q '580.00-sim, CUDA 13.0, 1 GPU'"
check "GPU 0: $(line ok 'gpu 0' "$out")" "line ok 'gpu 0' \"\$out\" | grep -q 'H100.*compute mode Default'"
check "the probe's slice holds: $(line ok slice "$out")" \
    "line ok slice \"\$out\" | grep -q 'saw 1 GiB, was refused 1 GiB more (out of memory) and got 16 MiB'"
check "carved not running is information, not a problem: $(line info carved "$out" | cut -c1-90)" \
    "line info carved \"\$out\" | grep -q 'not running (no one listens on $CARVE_SOCKET)'"
check "/dev/shm: $(line ok /dev/shm "$out")" "line ok /dev/shm \"\$out\" | grep -q 'writable, .* free'"
check "MPS: the simulated GPU's control program: $(line info mps "$out" | cut -c1-90)" \
    "line info mps \"\$out\" | grep -q 'sim/bin/nvidia-cuda-mps-control; no MPS daemon running'"
check "nothing left in /dev/shm by the probe's slice" "! ls /dev/shm | grep -q 'carve-doctor'"

# the same as JSON
json=$("$CARVE" doctor --simulate --json 2>&1)
check "--json: the same findings, 0 problems ($(jq -c '[.problems, .warnings, (.findings | length)]' <<<"$json" 2>&1))" \
    "[ \"\$(jq -r '.problems' <<<\"\$json\")\" = 0 ] && [ \"\$(jq -r '[.findings[] | select(.check == \"slice\")][0].status' <<<\"\$json\")\" = ok ] && [ \"\$(jq '.findings | length' <<<\"\$json\")\" -eq \"\$(grep -c '^[a-zA-Z]' <<<\"\$out\" | awk '{print \$1 - 1}')\" ]"

# CARVE_SOCKET naming a file that is not a socket: said so, not "not running"
touch "$work/not-a-socket"
out=$(CARVE_SOCKET=$work/not-a-socket "$CARVE" doctor --simulate --no-probe 2>&1)
rc=$?
check "CARVE_SOCKET at a plain file: a warning that says so, exit 0 ($(line warn carved "$out" | cut -c1-110))" \
    "[ $rc -eq 0 ] && line warn carved \"\$out\" | grep -q 'not-a-socket is not a socket (CARVE_SOCKET names it)'"

# --json with a finding that is not UTF-8 (a Latin-1 CARVE_LIBDIR): the finding is still
# there (json_pack refused it, and the FAIL was left out while "problems" counted it)
json=$(CARVE_LIBDIR=$'/nowhere/\xe9' "$CARVE" doctor --simulate --json 2>&1)
check "--json, a FAIL whose message is not UTF-8: listed ($(jq -c '[.problems, ([.findings[] | select(.status == "fail")] | length)]' <<<"$json" 2>&1))" \
    "[ \"\$(jq -c '[.problems, ([.findings[] | select(.status == \"fail\" and .check == \"carve\")] | length)]' <<<\"\$json\")\" = '[1,1]' ]"

# a libcarve that does not take hold: the probe's tenant sees the whole GPU
fake=$work/lib
cp -r "$BUILD/lib/carve" "$fake"
echo 'int carve_doctor_stand_in;' >"$work/nothing.c"
cc -shared -o "$fake/libcarve.so" "$work/nothing.c"
out=$(CARVE_LIBDIR=$fake "$CARVE" doctor --simulate 2>&1)
rc=$?
check "a libcarve that does not take hold: FAIL, exit 1 ($(line FAIL slice "$out" | cut -c1-120))" \
    "[ $rc -eq 1 ] && line FAIL slice \"\$out\" | grep -q 'saw 80 GiB on GPU 0.*did not take hold' && [[ \"\$out\" == *'1 problem, 0 warnings: slice'* ]]"

# the probe cannot be started: the child's reason reaches the finding (it printed into a
# buffer that _exit threw away: "no output")
cat >"$work/noexec.c" <<'EOF'
#include <errno.h>
int execv(const char *path, char *const argv[]) { (void)path; (void)argv; errno = EACCES; return -1; }
EOF
cc -shared -fPIC -o "$work/noexec.so" "$work/noexec.c"
out=$(LD_PRELOAD=$work/noexec.so "$CARVE" doctor --simulate 2>&1)
rc=$?
check "the probe cannot be started: FAIL with the reason, exit 1 ($(line FAIL slice "$out" | cut -c1-140))" \
    "[ $rc -eq 1 ] && line FAIL slice \"\$out\" | grep -q 'cannot run .*: Permission denied'"

# a preload that acts in the probe only (ARGV0 doctor --probe ...), as PROBE_SHIM says:
# noise (400 lines on stderr first) or hang (write its pid and its parent's, then sleep)
cat >"$work/probe_shim.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void probe_shim(void)
{
    char cmd[4096] = "";
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(cmd, 1, sizeof(cmd) - 1, f) : 0;
    if (f)
        fclose(f);
    const char *arg1 = cmd + strlen(cmd) + 1, *what = getenv("PROBE_SHIM");
    if (!what || arg1 >= cmd + n || strcmp(arg1, "doctor") != 0 || strcmp(arg1 + 7, "--probe") != 0)
        return;
    if (strcmp(what, "noise") == 0) {
        for (int i = 0; i < 400; i++)
            fprintf(stderr, "a driver's warning, line %d, of some fifty characters\n", i);
    } else if (strcmp(what, "hang") == 0) {
        FILE *p = fopen(getenv("HANG_PIDFILE"), "w");
        fprintf(p, "%d %d\n", (int)getpid(), (int)getppid());
        fclose(p);
        sleep(120);
    }
}
EOF
cc -shared -fPIC -o "$work/probe_shim.so" "$work/probe_shim.c"

# a probe that writes more than the doctor keeps (8 KiB) before its line: the line, which
# comes last, is still found (the first 8 KiB were kept: "could not run its probe (exit 0)")
out=$(PROBE_SHIM=noise LD_PRELOAD=$work/probe_shim.so "$CARVE" doctor --simulate 2>&1)
rc=$?
check "a probe with 20 KiB of warnings before its line: still ok, exit 0 ($(line '[a-zA-Z]*' slice "$out" | cut -c1-100))" \
    "[ $rc -eq 0 ] && line ok slice \"\$out\" | grep -q 'saw 1 GiB, was refused'"

# the doctor ended (a Ctrl-C, timeout(1)) while its probe hangs: the probe and its slice
# end with it (the probe was in a process group of its own, out of their reach: it and the
# carve run above it stayed, holding their slice)
PROBE_SHIM=hang HANG_PIDFILE=$work/hang.pid LD_PRELOAD=$work/probe_shim.so timeout 3 "$CARVE" doctor --simulate >/dev/null 2>&1
probe_pid=none run_pid=none # never 0 below: kill 0 is this script's own process group
[ -s "$work/hang.pid" ] && read -r probe_pid run_pid <"$work/hang.pid"
for _ in $(seq 30); do
    kill -0 "$probe_pid" 2>/dev/null || kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
done
left=$(for p in "$probe_pid" "$run_pid"; do kill -0 "$p" 2>/dev/null && ps -o pid=,args= -p "$p" | cut -c1-60; done | tr '\n' ' ')
check "the doctor killed while its probe hangs: the probe ($probe_pid) and its carve run end too (left: ${left:-none})" \
    "[ '$probe_pid' != none ] && [ -z '$left' ]"
for p in "$probe_pid" "$run_pid"; do kill "$p" 2>/dev/null; done

# a static carve whose twin is missing (a copy without lib/carve/carve-dynamic): a FAIL that
# names it, not the twin's exit 2 at the doctor's first dlopen with no report at all
if [ -e "$BUILD/lib/carve/carve-dynamic" ]; then
    mkdir -p "$work/copy/bin"
    cp -r "$BUILD/lib" "$work/copy/"
    cp "$CARVE" "$work/copy/bin/"
    rm "$work/copy/lib/carve/carve-dynamic"
    out=$("$work/copy/bin/carve" doctor --simulate 2>&1)
    rc=$?
    check "a static carve without carve-dynamic: FAIL naming it, exit 1 ($(line FAIL carve "$out" | cut -c1-100))" \
        "[ $rc -eq 1 ] && line FAIL carve \"\$out\" | grep -q 'copy/bin/../lib/carve/carve-dynamic cannot be run' && [[ \"\$out\" == *'1 problem'* ]]"
else
    ok "a static carve without carve-dynamic: skipped (this carve is linked dynamically)"
fi

# compute modes
out=$(CARVE_SIM_COMPUTE_MODE=3 "$CARVE" doctor --simulate --no-probe 2>&1)
rc=$?
check "Exclusive_Process: a warning naming MPS and nvidia-smi -c DEFAULT, exit 0 ($(line warn 'gpu 0' "$out" | cut -c1-100))" \
    "[ $rc -eq 0 ] && line warn 'gpu 0' \"\$out\" | grep -q \"Exclusive_Process.*--mode mps.*nvidia-smi -i 0 -c DEFAULT\""
check "--no-probe: the slice is not tried" "line info slice \"\$out\" | grep -q 'not tried (--no-probe)'"
out=$(CARVE_SIM_COMPUTE_MODE=2 "$CARVE" doctor --simulate --no-probe 2>&1)
rc=$?
check "Prohibited: FAIL, exit 1 ($(line FAIL 'gpu 0' "$out" | cut -c1-100))" \
    "[ $rc -eq 1 ] && line FAIL 'gpu 0' \"\$out\" | grep -q 'Prohibited: no process may use it'"
out=$(CARVE_SIM_MIG=1 CARVE_SIM_MODEL=H100-80GB "$CARVE" doctor --simulate 2>&1)
check "MIG on: said, and the probe not tried on GPU 0 ($(line info slice "$out" | cut -c1-80))" \
    "line ok 'gpu 0' \"\$out\" | grep -q 'MIG on' && line info slice \"\$out\" | grep -q 'MIG mode'"

# CUDA's device 0 is not NVML's 0 under CUDA_VISIBLE_DEVICES: the finding names the GPU the
# probe ran on, by the UUID it reports
out=$(CARVE_SIM_DEVICES=2 CUDA_VISIBLE_DEVICES=1 "$CARVE" doctor --simulate 2>&1)
check "two GPUs, CUDA_VISIBLE_DEVICES=1: the probe's slice is said to be on GPU 1 ($(line ok slice "$out" | cut -c1-60))" \
    "line ok slice \"\$out\" | grep -q 'slice on GPU 1:'"

# a driver without GPUs
out=$(CARVE_SIM_DEVICES=0 "$CARVE" doctor --simulate 2>&1)
rc=$?
check "a driver that lists no GPU: FAIL, exit 1, the slice not tried ($(line FAIL driver "$out" | cut -c1-80))" \
    "[ $rc -eq 1 ] && line FAIL driver \"\$out\" | grep -q 'lists no GPU' && line info slice \"\$out\" | grep -q 'no GPU to try it on'"

# carve's libraries not found: what depends on them says so instead of misleading
out=$(CARVE_LIBDIR=$work/nowhere "$CARVE" doctor --simulate 2>&1)
rc=$?
check "no carve libraries: FAIL, exit 1, and the slice, MPS and Slurm say why they were not looked at" \
    "[ $rc -eq 1 ] && line FAIL carve \"\$out\" | grep -q 'nowhere' && line info slice \"\$out\" | grep -q 'checks above did not pass' && line info mps \"\$out\" | grep -q 'not looked at' && line info slurm \"\$out\" | grep -q 'not looked at'"

# no driver: only where this machine has none
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
    out=$("$CARVE" doctor 2>&1)
    rc=$?
    check "no driver: FAIL naming --simulate, exit 1, no probe ($(line FAIL driver "$out" | cut -c1-90))" \
        "[ $rc -eq 1 ] && line FAIL driver \"\$out\" | grep -q 'no NVIDIA driver found.*use --simulate' && line info slice \"\$out\" | grep -q 'checks above did not pass'"
else
    ok "no driver: skipped (this machine has libnvidia-ml.so.1)"
fi

# an MPS control daemon someone runs, by its executable's name
cp "$(command -v sleep)" "$work/nvidia-cuda-mps-control"
"$work/nvidia-cuda-mps-control" 30 &
mps_pid=$!
cleanup_extra() { kill "$mps_pid" 2>/dev/null; }
sleep 0.2
out=$("$CARVE" doctor --simulate --no-probe 2>&1)
check "a running MPS control daemon is named ($(line info mps "$out" | cut -c1-140))" \
    "line info mps \"\$out\" | grep -q \"running: .*pid $mps_pid (uid $(id -u), yours)\""
kill "$mps_pid"
wait "$mps_pid" 2>/dev/null

# Slurm: a plugstack that names the plugin, where the plugin is built
if [ -e "$BUILD/lib/carve/spank_carve.so" ]; then
    echo "required $PWD/$BUILD/lib/carve/spank_carve.so" >"$work/plugstack.conf"
    out=$(SLURM_CONF=$work/slurm.conf "$CARVE" doctor --simulate --no-probe 2>&1)
    check "Slurm: the plugstack beside SLURM_CONF names the plugin ($(line ok slurm "$out" | cut -c1-80))" \
        "line ok slurm \"\$out\" | grep -q '$work/plugstack.conf names'"
    echo "# required spank_carve.so" >"$work/plugstack.conf"
    out=$(SLURM_CONF=$work/slurm.conf "$CARVE" doctor --simulate --no-probe 2>&1)
    check "Slurm: a commented-out line does not count" "line info slurm \"\$out\" | grep -q 'does not name it'"
else
    out=$("$CARVE" doctor --simulate --no-probe 2>&1)
    check "Slurm: the plugin is not built, and it says so" "line info slurm \"\$out\" | grep -q 'not built'"
fi

# a running carved: reported, and the probe's slice goes through it
start_carved 1s
out=$("$CARVE" doctor --simulate 2>&1)
rc=$?
check "carved running: ok, its slices and escapes counted ($(line ok carved "$out" | cut -c1-100))" \
    "[ $rc -eq 0 ] && line ok carved \"\$out\" | grep -q 'running on $CARVE_SOCKET (on the simulated GPU): 0 slices, 0 escapes'"
check "the probe's slice, made by carved, holds: $(line ok slice "$out" | cut -c1-60)" \
    "line ok slice \"\$out\" | grep -q 'saw 1 GiB, was refused'"

# bad input
out=$("$CARVE" doctor --bogus 2>&1)
rc=$?
check "an unknown option: exit 2, named ($out)" "[ $rc -eq 2 ] && [[ \"\$out\" == *\"unknown option \\\`--bogus'\"* ]]"
out=$("$CARVE" doctor extra 2>&1)
rc=$?
check "an argument: exit 2 ($out)" "[ $rc -eq 2 ] && [[ \"\$out\" == *'unexpected argument'* ]]"
out=$("$CARVE" doctor --help 2>&1)
check "--help names every option" "for o in --simulate --no-probe --json --help; do [[ \"\$out\" == *\"\$o\"* ]] || exit 1; done"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
