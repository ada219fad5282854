#!/usr/bin/env bash
# slow: yes (69 s: a Slurm cluster started and jobs run to their end; the gcc build runs it)
# slurm.sh - the SPANK plugin end to end: a one-node Slurm cluster on localhost (munged,
# slurmctld, slurmd, all private to a temp dir) whose one simulated GPU is shared by
# gres/shard, and jobs with --gpu-memory/--gpu-compute.
#
#   BUILD=build bash tests/e2e/slurm.sh
#
# Checks: bad values are refused by srun and sbatch before anything is queued; two jobs of
# 2 shards each share the GPU at the same time, each in its own capped slice (one
# allocates past its cap and gets the OOM while the other is unaffected), with the compute
# share taken from the shards; a shard job is refused, saying why, when gres.conf cannot be
# read; a later step asking for other values than the job's slice holds is told so; the
# slices are gone when the jobs end, also after scancel; a step running `carve run --mode
# mps` that scancel kills leaves no MPS run directory (removed at the step's end as the
# job's user, its daemon stopped by signals, no program run: a planted CARVE_MPS_CONTROL
# neither; planted links followed nowhere), and a step's end whose work the user stops
# waits 10 s for it, no more; a slice whose steps were killed is swept
# when slurmd restarts. Then the cluster starts again as a node of two GPUs whose
# Slurm name (slurmd -N) is not its host name, with a gres.conf of NodeName= hostlists: a
# shard job's share comes from the node's lines.
#
# Needs root and Debian's slurmd, slurmctld, slurm-client and munge (scripts/install-deps.sh
# installs them; then this really runs). Where they are missing and cannot be installed
# (no apt-get, no network), it says so and passes as a skip. Each check prints a line; the
# last line is `N passed, N failed`. SLURM_E2E_SESSION='COMMANDS' runs COMMANDS on the
# cluster instead of the checks; SLURM_E2E_KEEP=1 keeps the temp dir (logs) afterwards.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
BUILD=${BUILD%/}
ROOT=$(pwd)
LIB=$ROOT/$BUILD/lib/carve
PLUGIN=$LIB/spank_carve.so
MEMHOG=$ROOT/$BUILD/bench/memhog
CLEANUP=$ROOT/$BUILD/bin/carve-slurm-cleanup
passed=0
failed=0

check() { # check NAME RC
    if [ "$2" -eq 0 ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); fi
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
skip() {
    echo "skip - $1"
    echo "0 passed, 0 failed"
    exit 0
}

if [ "$(id -u)" -ne 0 ]; then
    skip "slurm.sh needs root (slurmd runs jobs as their users); run it as root"
fi
need=(slurmd slurmctld srun sbatch scontrol squeue scancel munged)
missing() { local c; for c in "${need[@]}"; do command -v "$c" >/dev/null || { echo "$c"; return; }; done; }
if [ -n "$(missing)" ]; then
    echo "slurm.sh: $(missing) is missing; installing slurmd slurmctld slurm-client munge"
    if ! command -v apt-get >/dev/null || ! apt-get update >/dev/null 2>&1 ||
        ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            slurmd slurmctld slurm-client munge >/dev/null 2>&1; then
        skip "the Slurm packages (slurmd slurmctld slurm-client munge) cannot be installed here"
    fi
fi
for f in "$MEMHOG" "$CLEANUP" "$LIB/libcarve.so" "$LIB/sim/libnvidia-ml.so.1"; do
    if [ ! -e "$f" ]; then echo "FAIL - $f is missing: run make BUILD=$BUILD"; echo "0 passed, 1 failed"; exit 1; fi
done
if [ ! -e "$PLUGIN" ]; then
    echo "FAIL - $PLUGIN is missing: install libslurm-dev (scripts/install-deps.sh), then make BUILD=$BUILD"
    echo "0 passed, 1 failed"
    exit 1
fi

T=$(mktemp -d /tmp/carve-slurm.XXXXXX)
chmod 755 "$T"
# jobs run as their users (nobody among them), who must reach the build by absolute paths
# shellcheck source=tests/e2e/reachable.bash
. tests/e2e/reachable.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
JOB_BUILD=$(reachable_build "$BUILD" "$T/build")
LIB=$JOB_BUILD/lib/carve
PLUGIN=$LIB/spank_carve.so
MEMHOG=$JOB_BUILD/bench/memhog
CLEANUP=$JOB_BUILD/bin/carve-slurm-cleanup
pids=()
two_uuids= # the UUIDs of the simulated GPUs of the second part (9.)
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    # MPS daemons of 5c. and 5d. that a failed check (or 5d.'s stopped step end) may have
    # left: only those, by their recorded pids; 5d.'s ignore SIGTERM
    for p in $(sed -n 's/^start pid=\([0-9]*\).*/\1/p' "$T/out/sim-mps.mps" "$T/out/sim-mps-stop.mps" 2>/dev/null); do
        kill -KILL "$p" 2>/dev/null
    done
    # slices the test's jobs may have left (a failed check), the boards of the two GPUs of
    # the second part, then the temp dir
    find /dev/shm -maxdepth 1 -name "carve.slurm.*" -newer "$T/stamp" -delete 2>/dev/null
    # and the slices of nobody's carve runs in 5c.'s steps, which Slurm kills by SIGKILL
    # after KillWait (by design): one killed before it removed its slice leaves it until
    # nobody's next carve run or a carved sweeps it (carved.md, "Slices of killed carve
    # runs"), and the last ones here have no next run
    local shm pid
    while read -r shm; do
        pid=${shm#carve.65534.}
        pid=${pid%%.*}
        [ -e "/proc/$pid" ] || rm -f "/dev/shm/$shm"
    done < <(find /dev/shm -maxdepth 1 -name "carve.65534.*" -newer "$T/stamp" -printf '%f\n' 2>/dev/null)
    for p in ${two_uuids//,/ }; do
        p=${p#GPU-}
        rm -f "/dev/shm/carve-board-${p//-/}" "/dev/shm/carve-board-${p//-/}.activity"
    done
    [ -n "${SLURM_E2E_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
touch "$T/stamp"
mkdir -p "$T/etc" "$T/state" "$T/spool" "$T/log" "$T/munge" "$T/carve" "$T/out"

# A private munged: its own key and socket.
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$T/munge"
chmod 600 "$T/munge/munge.key"
munged --force --foreground --socket="$T/munge/munge.sock" --key-file="$T/munge/munge.key" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/log/munged.log" \
    --seed-file="$T/munge/seed" >"$T/log/munged.out" 2>&1 &
pids+=($!)

HOST=$(hostname -s)
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port "$CTLD_PORT")
export SLURM_CONF=$T/etc/slurm.conf
# The simulated GPU (one H100-like device, 8 GiB) as slurmstepd and the jobs see it; carved
# is pointed nowhere so the plugin makes its slices itself.
export CARVE_SIM_STATE=$T/sim-state CARVE_SIM_MEMORY=8GiB CARVE_SOCKET=$T/no-carved.sock

# gres/gpu wants a device file; any character device will do for a node without cgroups.
mknod "$T/nvidia0" c 1 3 2>/dev/null || touch "$T/nvidia0"
cat >"$SLURM_CONF" <<EOF
ClusterName=carvetest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmdDebug=verbose
SlurmctldDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu,shard
PlugStackConfig=$T/etc/plugstack.conf
KillWait=2
MessageTimeout=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:1,shard:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
cat >"$T/etc/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=$T/nvidia0
Name=shard Count=4 File=$T/nvidia0
EOF
cat >"$T/etc/plugstack.conf" <<EOF
required $PLUGIN simulate state_dir=$T/carve
EOF

# cgroup v2 without systemd managing the node (a container): slurmd makes its own cgroup
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nCgroupAutomount=yes\n' >"$T/etc/cgroup.conf"
fi

start_slurmctld() {
    slurmctld -D -i -f "$SLURM_CONF" >>"$T/log/slurmctld.out" 2>&1 &
    slurmctld_pid=$!
    pids+=("$slurmctld_pid")
}
NODE=$HOST # the node's Slurm name (slurmd -N)
start_slurmd() { # start_slurmd [VAR=VALUE...]: with these in its environment too
    env "$@" slurmd -D -N "$NODE" -f "$SLURM_CONF" >>"$T/log/slurmd.out" 2>&1 &
    slurmd_pid=$!
    pids+=("$slurmd_pid")
}
start_slurmctld
start_slurmd

# wait until the node takes jobs
up=1
for _ in $(seq 1 60); do
    if sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then up=0; break; fi
    sleep 0.5
done
check "munged, slurmctld and slurmd are up on localhost (node $HOST)" "$up"
if [ "$up" -ne 0 ]; then
    for f in "$T"/log/*; do echo "--- $f"; tail -20 "$f"; done
    finish
fi

cd "$T/out" || exit 2
export CARVE_QUIET=0
if [ -n "${SLURM_E2E_SESSION:-}" ]; then
    # a session of one's own on the test's cluster instead of the checks (docs/slurm.md's
    # example); the variables it can use: MEMHOG CLEANUP T
    export MEMHOG CLEANUP T PATH=$JOB_BUILD/bin:$PATH
    bash -c "$SLURM_E2E_SESSION"
    finish
fi

# listing FIELD JOB: a field of the job's slice as carve-slurm-cleanup --dry-run sees it
listing() {
    "$CLEANUP" --state-dir "$T/carve" --dry-run --json |
        python3 -c 'import json,sys; f,j=sys.argv[1],int(sys.argv[2]); print(next((str(x[f]) for x in json.load(sys.stdin)["jobs"] if x["job"]==j), "none"))' "$1" "$2"
}
slice_gone() { # slice_gone JOB: neither its record nor its shared memory is left
    [ ! -e "$T/carve/job-$1" ] && [ -z "$(find /dev/shm -maxdepth 1 -name "carve.slurm.$1.*" -print -quit)" ]
}
wait_for() { # wait_for TENTHS CMD...: until CMD succeeds
    local n=$1
    shift
    while [ "$n" -gt 0 ]; do "$@" && return 0; sleep 0.1; n=$((n - 1)); done
    return 1
}
job_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
running() { [ "$(job_state "$1")" = RUNNING ]; }
gone() { [ -z "$(job_state "$1")" ]; }
submit() { sbatch --parsable "$@" | cut -d';' -f1; }

# 1. Bad values stop srun, sbatch and salloc before anything is queued.
out=$(srun --gpu-memory=lots true 2>&1)
rc=$?
check "srun --gpu-memory=lots is refused (rc $rc): $(echo "$out" | head -1 | cut -c1-90)" \
    "$([ "$rc" -ne 0 ] && echo "$out" | grep -q "carve: --gpu-memory=lots: invalid size"; echo $?)"
out=$(sbatch --gpu-compute=150% --wrap true 2>&1)
rc=$?
check "sbatch --gpu-compute=150% is refused (rc $rc): $(echo "$out" | head -1 | cut -c1-90)" \
    "$([ "$rc" -ne 0 ] && echo "$out" | grep -q "carve: --gpu-compute=150%: "; echo $?)"
out=$(salloc --gpu-memory=0 true 2>&1)
rc=$?
check "salloc --gpu-memory=0 is refused (rc $rc): $(echo "$out" | head -1 | cut -c1-90)" \
    "$([ "$rc" -ne 0 ] && echo "$out" | grep -q "carve: --gpu-memory=0: "; echo $?)"
queued=$(squeue -h | wc -l)
check "nothing was queued by the refused submissions ($queued jobs)" "$([ "$queued" -eq 0 ]; echo $?)"

# A step the plugin refuses: its reason reaches srun's stderr through Slurm's I/O forwarding,
# which once lost it (rc 1 and no line, 2026-11-27, a fresh clone's full run), and slurmstepd
# writes it to slurmd.log. So the reason is looked for in either; the log's matching lines are
# counted before the step, so that an earlier step's line does not count.
why_lines() { grep -c -- "$1" "$T/log/slurmd.log"; }
more_why_lines() { [ "$(why_lines "$1")" -gt "$2" ]; }
refused() { # refused RC OUT WHY LINES_BEFORE: the step failed, and why
    [ "$1" -ne 0 ] || return 1
    echo "$2" | grep -q -- "$3" || wait_for 50 more_why_lines "$3" "$4"
}
# 1b. A value the node cannot give (more than its GPU has) fails the job's tasks, saying why.
why="carve: job [0-9]*: --gpu-memory 100G is more than GPU 0 has"
before=$(why_lines "$why")
out=$(srun --gpu-memory=100G true 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "srun --gpu-memory=100G on an 8 GiB GPU: the task fails (rc $rc) with carve's reason" \
    "$(refused "$rc" "$out" "$why" "$before"; echo $?)"

# 2. Two jobs of 2 shards each share the GPU at once, each in its own capped slice.
a=$(submit --gres=shard:2 --gpu-memory=2G -o A.out --wrap "$MEMHOG --label A --max 4096 --hold 6")
b=$(submit --gres=shard:2 --gpu-memory=3G -o B.out --wrap "$MEMHOG --label B --max 1024 --hold 6")
in_slice() { grep -qs '^step ' "$T/carve/job-$1"; } # the job's first task is in its slice
both() { running "$a" && running "$b" && in_slice "$a" && in_slice "$b"; }
wait_for 200 both
check "jobs $a and $b (2 of the GPU's 4 shards each) run at the same time" "$?"
mem_a=$(listing memory "$a") mem_b=$(listing memory "$b")
cmp_a=$(listing compute "$a") cmp_b=$(listing compute "$b")
if [ "$cmp_b" = none ] || [ "$mem_b" = none ]; then
    "$CLEANUP" --state-dir "$T/carve" --dry-run --json; ls -la "$T/carve"; squeue
fi
check "their slices: memory $mem_a and $mem_b, compute $cmp_a and $cmp_b (2 of 4 shards)" \
    "$([ "$mem_a" = "2 GiB" ] && [ "$mem_b" = "3 GiB" ] && [ "$cmp_a" = "50%+" ] && [ "$cmp_b" = "50%+" ]; echo $?)"
wait_for 300 gone "$a" && wait_for 100 gone "$b"
check "both jobs ended" "$?"
sed 's/^/    A: /' A.out
sed 's/^/    B: /' B.out
check "job $a sees a 2048 MiB GPU, gets the OOM past its cap and carve's OOM line" \
    "$(grep -q '^\[A\] cuMemGetInfo at start: total 2048 MiB' A.out &&
       grep -q '^\[A\] got 1536 MiB in 6 allocations; allocation 7: CUDA_ERROR_OUT_OF_MEMORY' A.out &&
       grep -q "^carve: slice \"slurm-$a\" out of memory on GPU 0: cap 2 GiB" A.out; echo $?)"
check "job $b sees a 3072 MiB GPU and gets all it asked for, unaffected" \
    "$(grep -q '^\[B\] cuMemGetInfo at start: total 3072 MiB' B.out &&
       grep -q '^\[B\] got 1024 MiB in 4 allocations; stopped at the --max limit' B.out &&
       ! grep -q 'out of memory' B.out; echo $?)"
check "both slices are gone after the jobs" "$(slice_gone "$a" && slice_gone "$b"; echo $?)"

# 3. An explicit share beats the shards; shards alone enforce their fraction; no option,
#    no shards: no slice.
out=$(srun --gres=shard:1 --gpu-compute=10% "$CLEANUP" --state-dir "$T/carve" --dry-run 2>&1)
check "srun --gres=shard:1 --gpu-compute=10%: the slice has compute 10%, no memory cap" \
    "$(echo "$out" | grep -Eq 'memory - +compute 10% +1/1 steps alive'; echo $?)"
echo "$out" | sed 's/^/    /'
out=$(srun --gres=shard:1 "$CLEANUP" --state-dir "$T/carve" --dry-run 2>&1)
check "srun --gres=shard:1 alone: compute 25%+ (1 of 4 shards)" \
    "$(echo "$out" | grep -Eq 'compute 25%\+ +1/1 steps alive'; echo $?)"
# a guarantee holds room other jobs' guarantees are refused: only within Slurm's allocation
why="carve: job [0-9]*: --gpu-compute=50%+ guarantees more than the job's 1 of 4 shards"
before=$(why_lines "$why")
out=$(srun --gres=shard:1 --gpu-compute=50%+ true 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "srun --gres=shard:1 --gpu-compute=50%+: the task fails (rc $rc), 1 of 4 shards give 25%+" \
    "$(refused "$rc" "$out" "$why" "$before"; echo $?)"
why="no GPU and no shard on this node.*(--gpu-compute=30%)"
before=$(why_lines "$why")
out=$(srun --gpu-compute=30%+ true 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "srun --gpu-compute=30%+ with no GPU and no shard: the task fails (rc $rc), a cap is offered" \
    "$(refused "$rc" "$out" "$why" "$before"; echo $?)"
# what the user exports does not count as Slurm's: SLURM_STEP_GPUS and SLURM_SHARDS_ON_NODE
# do not reach the plugin, and an srun step's SLURM_JOB_GPUS (its caller's) is not read
for var in SLURM_STEP_GPUS=0 SLURM_SHARDS_ON_NODE=4 SLURM_JOB_GPUS=0; do
    before=$(why_lines "$why")
    out=$(env "$var" srun --gpu-compute=30%+ true 2>&1)
    rc=$?
    echo "$out" | sed 's/^/    /'
    check "$var srun --gpu-compute=30%+ (exported by the user): no guarantee (rc $rc)" \
        "$(refused "$rc" "$out" "$why" "$before"; echo $?)"
done
# gres.conf (the GPU's shard count) unreadable: a shard job's step is refused, naming the
# file, the errno text and the share it would have lost, in its stderr and slurmd's log; a
# cap needs no count. plugstack.conf is read again by each step's slurmstepd.
cp "$T/etc/plugstack.conf" "$T/etc/plugstack.conf.good"
echo "required $PLUGIN simulate state_dir=$T/carve gres_conf=$T/etc/missing.conf" >"$T/etc/plugstack.conf"
why="cannot read $T/etc/missing.conf (plugstack.conf's gres_conf=) for the shard count of a GPU: No such file or directory; without it the job's 1 shard gives no compute share, so its tasks are not started"
before=$(why_lines "$why")
out=$(srun --gres=shard:1 true 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "gres_conf= unreadable: srun --gres=shard:1 fails (rc $rc), naming the file and errno" \
    "$(refused "$rc" "$out" "$why" "$before" && grep -qF "$why" "$T/log/slurmd.log"; echo $?)"
out=$(srun --gres=shard:1 --gpu-compute=10% "$CLEANUP" --state-dir "$T/carve" --dry-run 2>&1)
check "gres_conf= unreadable: srun --gres=shard:1 --gpu-compute=10% (a cap) still runs capped" \
    "$(echo "$out" | grep -Eq 'compute 10% +1/1 steps alive'; echo $?)"
mv "$T/etc/plugstack.conf.good" "$T/etc/plugstack.conf"
g=$(submit --gres=gpu:1 --gpu-compute=100%+ -o G.out --wrap 'echo "batch $CARVE_SLICE"')
wait_for 300 gone "$g"
sed 's/^/    G: /' G.out
check "sbatch --gres=gpu:1 --gpu-compute=100%+: the batch step (Slurm's SLURM_JOB_GPUS) gets it" \
    "$(grep -q '^batch /carve.slurm' G.out && ! grep -q 'carve: job' G.out; echo $?)"
out=$(srun env 2>&1)
check "a job without carve options or shards runs outside carve" \
    "$(! echo "$out" | grep -q '^CARVE_SLICE=' && ! echo "$out" | grep -q 'libcarve'; echo $?)"

# 4. The batch step and an srun step of one job share the job's slice.
j=$(submit --gpu-memory=1G -o J.out --wrap 'echo "batch $CARVE_SLICE"; srun sh -c '\''echo "step $CARVE_SLICE"'\''')
wait_for 200 gone "$j"
batch=$(sed -n 's/^batch //p' J.out) step=$(sed -n 's/^step //p' J.out)
check "job $j: the batch step and its srun step are in one slice ($batch, $step)" \
    "$([ -n "$batch" ] && [ "$batch" = "$step" ]; echo $?)"
check "job $j's slice is gone" "$(slice_gone "$j"; echo $?)"

# 4b'. A later step's options that the job's slice does not hold: the step runs in the
#      slice as it is, and its stderr and slurmd's log say which options were not applied
#      and what the slice holds.
l=$(submit --gpu-memory=1G -o L.out --wrap "srun --gpu-memory=2G $MEMHOG --label L --max 4096 --hold 0; srun --gpu-memory=1024M true")
wait_for 300 gone "$l"
sed 's/^/    L: /' L.out
note="carve: job $l: this step's --gpu-memory=2G is not applied: the job's slice slurm-$l on this node was made by an earlier step of the job and holds GPU 0: memory cap 1 GiB, no compute share"
check "job $l's srun --gpu-memory=2G in a 1 GiB slice: told on its stderr, once, with both values" \
    "$([ "$(grep -cF "$note" L.out)" -eq 1 ] && grep -q '^\[L\] cuMemGetInfo at start: total 1024 MiB' L.out; echo $?)"
check "job $l: the note is in slurmd's log too; the step asking 1024M (the slice's 1 GiB) is told nothing" \
    "$(grep -qF "$note" "$T/log/slurmd.log" && [ "$(grep -c 'not applied' L.out)" -eq 1 ]; echo $?)"

# 4a. The plugin prepends to the job's own lists and keeps all of them, also one longer than
#     4 KiB (an LD_LIBRARY_PATH of site modules; the simulated GPU's lib dir goes first).
long=/nonexistent/$(printf 'm%.0s' $(seq 1 5000))
out=$(LD_LIBRARY_PATH="$long:/keep/this" srun --gpu-memory=1G sh -c 'echo "${#LD_LIBRARY_PATH} ${LD_LIBRARY_PATH##*:}"' 2>&1)
check "a 5 KiB LD_LIBRARY_PATH reaches the task whole, after carve's entry ($out)" \
    "$(echo "$out" | grep -q ' /keep/this$'; echo $?)"

# 4b. salloc's options reach the steps run in the allocation.
out=$(salloc --gpu-memory=1G srun "$MEMHOG" --label S --max 2048 --hold 0 2>&1)
check "salloc --gpu-memory=1G, then srun: the step sees a 1024 MiB GPU and is capped" \
    "$(echo "$out" | grep -q '^\[S\] cuMemGetInfo at start: total 1024 MiB' &&
       echo "$out" | grep -q '^\[S\] got 512 MiB in 2 allocations; allocation 3: CUDA_ERROR_OUT_OF_MEMORY'; echo $?)"

# 5. scancel: the slice of a cancelled job is removed.
c=$(submit --gpu-memory=1G -o C.out --wrap "sleep 60")
wait_for 200 in_slice "$c"
check "job $c runs in a slice before scancel" "$?"
scancel "$c"
wait_for 150 gone "$c" && wait_for 50 slice_gone "$c"
check "after scancel, job $c's slice is gone" "$?"

# 5b. A job of another user: its processes write the slice's table (given to the job's
#     user), the terms stay root's, and the cap holds. The user has its own simulated GPU
#     state (root's is private), the same GPU as slurmstepd sees.
chmod 1777 "$T/out"
u=$(submit --uid=nobody --gid=nogroup --gpu-memory=1G -o "$T/out/U.out" \
    --export=ALL,CARVE_SIM_STATE="$T/out/sim-nobody" \
    --wrap "ls -ln /dev/shm/\${CARVE_SLICE#/} /dev/shm/\${CARVE_SLICE#/}.terms; $MEMHOG --label U --max 2048 --hold 0")
wait_for 300 gone "$u"
sed 's/^/    U: /' U.out
table_uid=$(awk 'NR == 1 { print $3 }' U.out) terms_uid=$(awk 'NR == 2 { print $3 }' U.out)
check "job $u of user nobody: the table is nobody's ($table_uid), the terms root's ($terms_uid)" \
    "$([ "$table_uid" = 65534 ] && [ "$terms_uid" = 0 ]; echo $?)"
check "job $u of user nobody is capped at 1 GiB" \
    "$(grep -q '^\[U\] cuMemGetInfo at start: total 1024 MiB' U.out &&
       grep -q "^carve: slice \"slurm-$u\" out of memory on GPU 0: cap 1 GiB" U.out; echo $?)"
check "job $u's slice is gone" "$(slice_gone "$u"; echo $?)"

# 5c. carve run --mode mps in job steps that Slurm kills: the commands ignore SIGTERM, so
#     after KillWait their carve runs die by SIGKILL and can neither stop the step's MPS
#     daemon nor remove the step's run directory; the plugin's step end does, as the job's user
#     (nobody, whose directories are in the shared, sticky base's 65534/). The daemons
#     outlive their steps here (proctrack/linuxproc does not follow a daemon; a cgroup would
#     end them) and are stopped by SIGTERM from the step's end, which runs no program: the
#     simulated control program notes each of its runs (`ran'), and the job's environment
#     names a CARVE_MPS_CONTROL of its own (a wrapper of the simulated one that notes its
#     runs), which the job's carve runs use and the step's end must not. The batch script's
#     carve run (mps-UUID-jJOB) goes the same way. The step plants a link, and a directory
#     holding links, of the step's names to a directory of root's: nothing of root's is
#     removed, the link is left.
chmod 711 "$T/munge" # nobody's srun in the job signs its requests with munge
MPSBASE=$T/m         # short: the pipe directory's path may be 90 characters at most
mkdir -m 1777 "$MPSBASE"
VICTIM=$T/victim
mkdir -p "$VICTIM/pipe" "$VICTIM/log"
touch "$VICTIM/pipe/keep" "$VICTIM/log/keep" "$VICTIM/clients" "$VICTIM/lock"
victim_intact() {
    [ -f "$VICTIM/pipe/keep" ] && [ -f "$VICTIM/log/keep" ] && [ -f "$VICTIM/clients" ] &&
        [ -f "$VICTIM/lock" ] && [ "$(stat -c %U "$VICTIM")" = root ]
}
MPSREC=$T/out/sim-mps # the simulated nvidia-cuda-mps-control's record: $MPSREC.mps
NB=$MPSBASE/65534
PLANTED=$T/out/planted-control # the job's CARVE_MPS_CONTROL, noting its runs in $PLANTED.log
cat >"$PLANTED" <<CTL
#!/bin/sh
echo "\$(id -u) \$*" >>"$PLANTED.log"
exec $LIB/sim/bin/nvidia-cuda-mps-control "\$@"
CTL
chmod 755 "$PLANTED"
planted_runs() { cat "$PLANTED.log" 2>/dev/null | wc -l; }
control_runs() { grep -c '^ran ' "$MPSREC.mps" 2>/dev/null; }
# shellcheck disable=SC2016 # expanded by the step's shell
plant='u=$(dirname "$(dirname "$CUDA_MPS_PIPE_DIRECTORY")"); s=j$SLURM_JOB_ID.$SLURM_STEP_ID
e=$u/mps-GPU-eeeeeeee-eeee-eeee-eeee-eeeeeeeeeeee-$s
ln -s '"$VICTIM"' "$u/mps-GPU-ffffffff-ffff-ffff-ffff-ffffffffffff-$s"
mkdir "$e" && ln -s '"$VICTIM"'/pipe "$e/pipe" && ln -s '"$VICTIM"'/log "$e/log"'
# the script ignores SIGTERM too (what it starts inherits that) and waits, so that what it
# started stays its own (linuxproc kills a step's descendants) until KillWait's SIGKILL;
# step 0's tasks start with Slurm's defaults, and its command ignores SIGTERM itself
cat >"$T/out/mps-job.sh" <<JOB
#!/bin/sh
trap "" TERM
$JOB_BUILD/bin/carve run --simulate --mode mps -q -- sleep 60 &
srun $JOB_BUILD/bin/carve run --simulate --mode mps -q -- sh -c '$plant
trap "" TERM; echo up; exec sleep 60' &
wait
JOB
q=$(submit --uid=nobody --gid=nogroup -o "$T/out/Q.out" \
    --export=ALL,CARVE_SIM_STATE="$MPSREC",CARVE_MPS_DIR="$MPSBASE",CARVE_MPS_CONTROL="$PLANTED" "$T/out/mps-job.sh")
step_dirs() { find "$NB" -mindepth 1 -maxdepth 1 -type d -name "mps-*-j$q*" -printf '%f\n' 2>/dev/null | sort; }
mps_up() {
    [ "$(step_dirs | wc -l)" -eq 3 ] && grep -qs '^up$' "$T/out/Q.out" &&
        [ "$(grep -c '^start ' "$MPSREC.mps" 2>/dev/null)" -eq 2 ]
}
wait_for 300 mps_up
up=$?
daemons=$(sed -n 's/^start pid=\([0-9]*\) .*/\1/p' "$MPSREC.mps" 2>/dev/null | tr '\n' ' ')
check "job $q of nobody: its batch script and its step 0 run carve run --mode mps, a daemon each ($daemons), in $(step_dirs | sed 's/^mps-GPU-[0-9a-f-]*-j/...-j/' | tr '\n' ' '), through the job's CARVE_MPS_CONTROL ($(planted_runs) runs)" \
    "$([ "$up" -eq 0 ] && [ "$(planted_runs)" -ge 2 ]; echo $?)"
ran_before=$(control_runs) planted_before=$(planted_runs)
scancel "$q"
mps_gone() { [ -z "$(step_dirs)" ]; }
# the step ends after KillWait and Slurm's own waits: the job leaves squeue before it does
wait_for 300 gone "$q" && wait_for 300 mps_gone
rc=$?
sed 's/^/    Q: /' "$T/out/Q.out"
grep "carve: job $q " "$T/log/slurmd.log" | sed 's/^/    slurmd: /'
left=$(step_dirs | tr '\n' ' ')
check "after scancel, no mps-*-j$q.0 nor mps-*-j$q directory is left in $NB (${left:-none})" "$rc"
# running PID: not gone, nor a zombie (an orphaned daemon's reaper here may be slow)
running_pid() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "${st%% *}" != Z ]; }
termed=0
for d in $daemons; do
    grep -q "^signal TERM pid=$d " "$MPSREC.mps" && ! grep -q "^quit pid=$d " "$MPSREC.mps" &&
        ! running_pid "$d" && termed=$((termed + 1))
done
check "the two daemons, which outlived their steps, were stopped by SIGTERM at the steps' ends (no quit) and are gone ($termed of 2)" \
    "$([ "$termed" -eq 2 ] &&
       grep -q "carve: job $q step 0: removed $NB/mps-GPU-.*-j$q.0, after stopping its MPS control daemon (pid [0-9]*) by signal, which outlived the step" "$T/log/slurmd.log" &&
       grep -q "carve: job $q step batch: removed $NB/mps-GPU-.*-j$q, after stopping its MPS control daemon (pid [0-9]*) by signal" "$T/log/slurmd.log"; echo $?)"
ran_after=$(control_runs) planted_after=$(planted_runs)
check "no program ran at the steps' ends: the simulated control program ran $ran_before times before scancel and $ran_after after, the job's CARVE_MPS_CONTROL $planted_before and $planted_after" \
    "$([ "$ran_before" -gt 0 ] && [ "$ran_after" -eq "$ran_before" ] && [ "$planted_after" -eq "$planted_before" ]; echo $?)"
link=$NB/mps-GPU-ffffffff-ffff-ffff-ffff-ffffffffffff-j$q.0
check "the planted link, and the links in a planted directory, removed nothing of root's $VICTIM; the link is left, and named" \
    "$(victim_intact && [ "$(readlink "$link")" = "$VICTIM" ] &&
       grep -qF "carve: job $q step 0: $link is not a directory (a symbolic link), so not carve's: left as it is" "$T/log/slurmd.log"; echo $?)"
# A CARVE_MPS_DIR naming a directory of root's (through a link) that holds a run directory
# of the job's name: as nobody, the batch script's end looks in BASE/65534 (BASE is not
# nobody's) and leaves root's alone; the same job of root's, whose directory that is, has it
# removed. Run as root, the first would have removed it too.
mkdir -m 755 "$T/rootbase"
ln -s "$T/rootbase" "$T/out/mpslink"
for who in nobody root; do
    r=$(submit --hold --uid="$who" -o /dev/null --export=ALL,CARVE_MPS_DIR="$T/out/mpslink" --wrap true)
    rd=$T/rootbase/mps-GPU-dddddddd-dddd-dddd-dddd-dddddddddddd-j$r
    mkdir -m 700 "$rd" "$rd/pipe" "$rd/log"
    touch "$rd/clients" "$rd/lock" "$rd/pipe/keep"
    scontrol release "$r"
    wait_for 300 gone "$r"
    if [ "$who" = nobody ]; then
        check "job $r of nobody, CARVE_MPS_DIR a link to root's $T/rootbase: root's mps-...-j$r is left whole" \
            "$([ -f "$rd/pipe/keep" ] && [ -f "$rd/clients" ] && ! grep -q "carve: job $r " "$T/log/slurmd.log"; echo $?)"
    else
        wait_for 50 test ! -e "$rd"
        check "the same as root's job $r: root's own mps-...-j$r goes at the batch script's end" \
            "$([ ! -e "$rd" ] && grep -qF "carve: job $r step batch: removed $T/out/mpslink/${rd##*/}" "$T/log/slurmd.log"; echo $?)"
    fi
done

# 5d. The step's end waits for its child (the job's user's, who may stop it) 10 s at most:
#     a job of nobody whose daemon ignores SIGTERM (CARVE_SIM_MPS_IGNORE_TERM=1: the child
#     waits 1 s before SIGKILL) is cancelled, and the daemon stops (SIGSTOP, as the user
#     could) the child that sends it SIGTERM (CARVE_SIM_MPS_STOP_SENDER=1), recording it:
#     nobody's slurmstepd under a slurmstepd. The step's end kills it 10 s after it began,
#     and says so. (The test used to find that child by polling `ps` and stop it itself;
#     on a loaded machine the polls missed the second it lives.)
cat >"$T/out/mps-stop.sh" <<JOB
#!/bin/sh
trap "" TERM
$JOB_BUILD/bin/carve run --simulate --mode mps -q -- sh -c 'echo up; exec sleep 60' &
wait
JOB
z=$(submit --uid=nobody --gid=nogroup -o "$T/out/Z.out" \
    --export="ALL,CARVE_SIM_STATE=$T/out/sim-mps-stop,CARVE_MPS_DIR=$MPSBASE,CARVE_SIM_MPS_IGNORE_TERM=1,CARVE_SIM_MPS_STOP_SENDER=1" "$T/out/mps-stop.sh")
zdirs() { find "$NB" -mindepth 1 -maxdepth 1 -type d -name "mps-*-j$z" -printf '%f\n' 2>/dev/null; }
wait_for 300 eval '[ -n "$(zdirs)" ] && grep -qs "^up$" "$T/out/Z.out"'
# the step end's child, as the daemon stopped it: nobody's, named slurmstepd (no program),
# a slurmstepd's child; "PID TIME" (a SIGTERM of root's slurmstepd is recorded as failed)
end_child() {
    sed -n 's/^stopped sender=\([0-9]*\) comm=slurmstepd uid=65534 parent=slurmstepd at=\([0-9.]*\) pipe=.*/\1 \2/p' \
        "$T/out/sim-mps-stop.mps" 2>/dev/null | head -n 1
}
scancel "$z"
stopped=
wait_for 600 eval 'stopped=$(end_child); [ -n "$stopped" ]'
child=${stopped% *} stopped_at=${stopped#* }
said="carve: job $z step batch: the removal of the step's MPS run directories took longer than 10 s; stopped it"
wait_for 900 grep -qF "$said" "$T/log/slurmd.log"
rc=$?
# from the stop to the log's line, by their own times (the test may see either late)
said_at=$(grep -F "$said" "$T/log/slurmd.log" | head -n 1 | sed -n 's/^\[\([^]]*\)\].*/\1/p')
said_at=$(date -d "${said_at:-now}" +%s.%N 2>/dev/null || date +%s.%N)
waited=$(awk -v a="$stopped_at" -v b="$said_at" 'BEGIN { printf "%.1f", b - a }')
grep "carve: job $z " "$T/log/slurmd.log" | sed 's/^/    slurmd: /'
check "job $z: the step end's child (pid ${child:-none}), stopped, was killed within 10 s of the step's end (${waited} s after the stop), and that is said in slurmd's log" \
    "$([ -n "$child" ] && [ "$rc" -eq 0 ] && awk -v w="$waited" 'BEGIN { exit !(w <= 12) }' && ! running_pid "$child"; echo $?)"
for p in $(sed -n 's/^start pid=\([0-9]*\).*/\1/p' "$T/out/sim-mps-stop.mps" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null # the daemon the stopped step end left, ignoring SIGTERM
done
rm -rf "${NB:?}"/mps-*-j"$z"

# 6. A job whose slurmstepd is killed (no exit hook runs) while slurmd is down: slurmd's
#    restart sweeps its slice away.
k=$(submit --gpu-memory=1G -o K.out --wrap "sleep 60")
wait_for 200 in_slice "$k"
stepd=$(awk '$1 == "step" { print $2; exit }' "$T/carve/job-$k" 2>/dev/null)
kill "$slurmd_pid"
wait "$slurmd_pid" 2>/dev/null
if [ -n "$stepd" ]; then
    tasks=$(pgrep -P "$stepd")
    kill -KILL "$stepd" $tasks 2>/dev/null
fi
sleep 0.5
check "job $k's slurmstepd ($stepd) killed with slurmd down: its slice is left over" \
    "$([ -n "$stepd" ] && ! slice_gone "$k"; echo $?)"
# slurmd comes back with carved running on the node (a private socket): from now on the
# plugin asks carved for the jobs' slices
CARVE=$ROOT/$BUILD/bin/carve
"$ROOT/$BUILD/bin/carved" --simulate --socket "$T/carved.sock" --state-dir "$T/carved" \
    --listen off >"$T/log/carved.log" 2>&1 &
carved_pid=$!
pids+=("$carved_pid")
export CARVE_SOCKET=$T/carved.sock
wait_for 50 test -S "$CARVE_SOCKET"
start_slurmd
wait_for 150 slice_gone "$k"
check "slurmd's restart sweeps job $k's slice away" "$?"
scancel "$k" 2>/dev/null

# 7. Through carved: the job's slice is carved's, seen by carve slice list, and deleted
#    when the job ends.
carved_slices() { "$CARVE" slice list --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(sorted(s["name"] + "=" + str(s["devices"][0]["memory_cap"]) for s in json.load(sys.stdin))))'; }
# sleep 8: its record is read while it runs (with 3 s it had ended by then once, under four
# suites at once, 2026-11-29)
d=$(submit --gres=shard:1 --gpu-memory=1G -o D.out --wrap "sleep 8; $MEMHOG --label D --max 2048 --hold 0")
wait_for 200 in_slice "$d"
listed=$(carved_slices)
check "with carved running, job $d's slice is carved's: $listed" \
    "$(echo "$listed" | grep -q "slurm-$d="; grep -q "^carved slurm-$d\$" "$T/carve/job-$d"; echo $?)"
wait_for 300 gone "$d"
sed 's/^/    D: /' D.out
check "job $d is capped at 1 GiB by carved's slice" \
    "$(grep -q '^\[D\] cuMemGetInfo at start: total 1024 MiB' D.out &&
       grep -q "^carve: slice \"slurm-$d\" out of memory on GPU 0: cap 1 GiB" D.out; echo $?)"
wait_for 50 slice_gone "$d"
listed=$(carved_slices)
check "job $d's slice left carved when the job ended (carved lists: '${listed}')" \
    "$(slice_gone "$d" && ! echo "$listed" | grep -q "slurm-$d="; echo $?)"
# 7b. A job of another user through carved: the plugin asks for the slice as root, and the
#     job's user must be let in (until 2026-11-29 its tasks were refused it and got no GPU
#     context: the jobs above run as root). The job exports an empty CARVE_SOCKET (the jobs
#     above inherit this script's): the plugin gives its tasks the socket of the carved it
#     asked, which is not the node's default here (they looked at the default until
#     2026-11-29, and could not open carved's table)
e=$(submit --uid=nobody --gid=nogroup --gpu-memory=1G -o "$T/out/E.out" \
    --export=ALL,CARVE_SOCKET=,CARVE_SIM_STATE="$T/out/sim-nobody-carved" \
    --wrap "$MEMHOG --label E --max 2048 --hold 0")
wait_for 300 gone "$e"
sed 's/^/    E: /' "$T/out/E.out"
check "job $e of user nobody through carved is capped at 1 GiB" \
    "$(grep -q '^\[E\] cuMemGetInfo at start: total 1024 MiB' "$T/out/E.out" &&
       grep -q "^carve: slice \"slurm-$e\" out of memory on GPU 0: cap 1 GiB" "$T/out/E.out"; echo $?)"
wait_for 50 slice_gone "$e"
# 8. A record the sweep cannot read (a write cut short) is listed, not skipped: an admin's
#    carve-slurm-cleanup must not say the node has no slice; exit status 1.
printf 'carve-slurm 1\nshm /carve.slurm.999.00000001\ncarved -\nstep 12' >"$T/carve/job-999"
out=$("$CLEANUP" --state-dir "$T/carve" 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "carve-slurm-cleanup lists a damaged record with why and exits 1 (rc $rc)" \
    "$([ "$rc" -eq 1 ] && echo "$out" | grep -q "^job 999 .*record cannot be read: $T/carve/job-999 is damaged" && [ -e "$T/carve/job-999" ]; echo $?)"
rm -f "$T/carve/job-999"

# 9. The node again, now with two GPUs of 4 shards each, under a Slurm name that is not its
#    host name (slurmd -N cn07, NodeHostname=$HOST), with the gres.conf a cluster shares
#    among its nodes: NodeName= hostlists. slurmctld and slurmd start anew (new state: the
#    node is another); carved is stopped, so the plugin makes the slices itself.
kill "$slurmd_pid" "$slurmctld_pid" "$carved_pid" 2>/dev/null
wait "$slurmd_pid" "$slurmctld_pid" "$carved_pid" 2>/dev/null
slurmd_pid=
NODE=cn07
export CARVE_SOCKET=$T/no-carved.sock CARVE_SIM_STATE=$T/sim-state2
# GPUs of this run's own: a guarantee joins the board of its GPU's UUID in /dev/shm
two_uuids=$(python3 -c 'import uuid; print("GPU-%s,GPU-%s" % (uuid.uuid4(), uuid.uuid4()))')
mknod "$T/nvidia1" c 1 3 2>/dev/null || touch "$T/nvidia1"
mkdir -p "$T/state2" "$T/spool2"
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port "$CTLD_PORT")
sed -i -e "s|^SlurmctldPort=.*|SlurmctldPort=$CTLD_PORT|" -e "s|^SlurmdPort=.*|SlurmdPort=$SLURMD_PORT|" \
    -e "s|^StateSaveLocation=.*|StateSaveLocation=$T/state2|" \
    -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$T/spool2|" \
    -e "s|^NodeName=.*|NodeName=$NODE NodeHostname=$HOST NodeAddr=127.0.0.1 CPUs=8 Gres=gpu:2,shard:8 State=UNKNOWN|" \
    "$SLURM_CONF"
# 8 CPUs whatever the machine has (config_overrides), so that four jobs run at once
printf 'FirstJobId=1000\nSlurmdParameters=config_overrides\n' >>"$SLURM_CONF"
# the host name's line is another node's: were it read for this node, 2 shards would be 2 of
# 8 (25%+), not 2 of 4
cat >"$T/etc/gres.conf" <<GRES
AutoDetect=off
NodeName=cn[01-16],login1 Name=gpu File=$T/nvidia0
NodeName=cn[01-16],login1 Name=gpu File=$T/nvidia1
NodeName=login1,cn[01-16] Name=shard Count=4 File=$T/nvidia0
NodeName=login1,cn[01-16] Name=shard Count=4 File=$T/nvidia1
NodeName=$HOST Name=shard Count=16
GRES
# start_node VAR=VALUE...: slurmd (again) with the simulated GPUs these variables give it,
# which its slurmstepd processes, and so the plugin, see; the jobs, which take srun's and
# sbatch's environment, see them too. Waits until the node takes jobs.
node_up() { sinfo -h -n "$NODE" -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; }
start_node() {
    if [ -n "$slurmd_pid" ] && kill "$slurmd_pid" 2>/dev/null; then wait "$slurmd_pid" 2>/dev/null; fi
    start_slurmd "$@"
    # shellcheck disable=SC2163 # the arguments are NAME=VALUE words, exported as such
    export "$@"
    wait_for 300 node_up
}
start_slurmctld
start_node CARVE_SIM_DEVICES=2 CARVE_SIM_UUIDS="$two_uuids"
up=$?
check "slurmctld and slurmd are up again: node $NODE (on host $HOST), 2 GPUs, 8 shards" "$up"
if [ "$up" -ne 0 ]; then
    for f in "$T"/log/slurm*.log; do echo "--- $f"; tail -20 "$f"; done
    finish
fi
out=$(srun --gres=shard:2 "$CLEANUP" --state-dir "$T/carve" --dry-run 2>&1)
echo "$out" | sed 's/^/    /'
check "node $NODE, gres.conf's NodeName=cn[01-16],login1: srun --gres=shard:2 gets 2 of 4 shards (50%+)" \
    "$(echo "$out" | grep -Eq 'compute 50%\+ +1/1 steps alive'; echo $?)"
out=$(SLURMD_NODENAME=$HOST srun --gres=shard:2 "$CLEANUP" --state-dir "$T/carve" --dry-run 2>&1)
check "SLURMD_NODENAME=$HOST exported by the user: the node's own name still counts (50%+)" \
    "$(echo "$out" | grep -Eq 'compute 50%\+ +1/1 steps alive'; echo $?)"

# 10. A job given GPU 1 whose tasks' NVML sees that GPU alone, numbered 0, as under
#     ConstrainDevices=yes (a devices cgroup; this node has none, so slurmd's simulated GPUs
#     and the jobs' are that view: one GPU, GPU 1's UUID). A job without carve options holds
#     GPU 0, so that Slurm gives the next ones GPU 1. The slice is on the job's GPU, and the
#     shards per GPU are gres.conf's 8 over the node's 2 GPUs, not over the 1 NVML lists.
#     CUDA is pointed at GPU 0 as Slurm does under ConstrainDevices (here it sets
#     CUDA_VISIBLE_DEVICES=1).
start_node CARVE_SIM_DEVICES=1 CARVE_SIM_UUIDS="${two_uuids#*,}"
h=$(submit --gres=gpu:1 -o H.out --wrap "echo held \$SLURM_JOB_GPUS; sleep 60")
wait_for 200 running "$h"
out=$(srun --gres=gpu:1 --gpu-memory=1G sh -c "echo gpus \$SLURM_STEP_GPUS; CUDA_VISIBLE_DEVICES=0 $MEMHOG --label V --max 2048 --hold 0" 2>&1)
echo "$out" | sed 's/^/    V: /'
check "job $h holds GPU 0 ($(cat H.out)); srun --gres=gpu:1 --gpu-memory=1G gets GPU 1, seen as NVML's 0: capped" \
    "$(echo "$out" | grep -q '^gpus 1$' && echo "$out" | grep -q '^\[V\] cuMemGetInfo at start: total 1024 MiB' &&
       echo "$out" | grep -q 'out of memory on GPU 0: cap 1 GiB'; echo $?)"
out=$(srun --gres=shard:2 sh -c "echo gpus \$SLURM_STEP_GPUS; $CLEANUP --state-dir $T/carve --dry-run" 2>&1)
echo "$out" | sed 's/^/    /'
check "srun --gres=shard:2 on GPU 1, NVML seeing 1 GPU: 2 of the GPU's 4 shards (50%+), not of 8" \
    "$(echo "$out" | grep -q '^gpus 1$' && echo "$out" | grep -Eq 'compute 50%\+ +1/1 steps alive'; echo $?)"
scancel "$h"
wait_for 150 gone "$h"

# 11. Through carved on the node of two GPUs (4 shards each), seen whole again: four jobs of
#     2 shards each, two on each GPU as Slurm places them, run at once, each slice on its
#     job's GPU alone with 50%+ there (a slice's guarantee used to hold room on every GPU of
#     the node: jobs 2 and 4 of 4 ran, 1 and 3 were refused, `GPU 0: --compute 50%+: the
#     slices on this GPU already hold guarantees of 100.00%'). Then a cap by Slurm's number
#     (--gpu-memory=1=1G) on a job given GPU 1 lands on carved's GPU 1.
export CARVE_SOCKET=$T/carved.sock
start_node CARVE_SIM_DEVICES=2 CARVE_SIM_UUIDS="$two_uuids" # (carved sees these too)
"$ROOT/$BUILD/bin/carved" --simulate --socket "$T/carved.sock" --state-dir "$T/carved2" \
    --listen off >"$T/log/carved2.log" 2>&1 &
carved_pid=$!
pids+=("$carved_pid")
wait_for 50 test -S "$CARVE_SOCKET"
# slices SLICE...: each slice's GPUs in carve slice list, "index:compute" each
slices() {
    "$CARVE" slice list --json 2>/dev/null | python3 -c '
import json, sys
got = {s["name"]: " ".join("%d:%s" % (d["index"], d["compute"]) for d in s["devices"]) for s in json.load(sys.stdin)}
print(", ".join("%s=%s" % (n, got.get(n, "none")) for n in sys.argv[1:]))' "$@"
}
four=()
for n in 1 2 3 4; do
    four+=("$(submit --gres=shard:2 -o "F$n.out" --wrap 'echo "gpus $SLURM_JOB_GPUS slice $CARVE_SLICE"; sleep 5')")
done
all_in() { local j; for j in "${four[@]}"; do running "$j" && in_slice "$j" || return 1; done; }
wait_for 200 all_in
ran=$?
listed=$(slices "${four[@]/#/slurm-}")
check "four jobs of 2 shards on 2 GPUs of 4 shards run at once through carved (${four[*]}): $listed" \
    "$([ "$ran" -eq 0 ] && [ "$(echo "$listed" | grep -oE '=[01]:50%\+(,|$)' | wc -l)" -eq 4 ]; echo $?)"
for j in "${four[@]}"; do wait_for 300 gone "$j"; done
for n in 1 2 3 4; do sed "s/^/    F$n: /" "F$n.out"; done
placed=$(sed -n 's/^gpus \([01]\) .*/\1/p' F1.out F2.out F3.out F4.out | sort | tr -d '\n')
check "each of the four ran in its slice, two on each GPU ($placed), none refused" \
    "$(! grep -q 'carve: job' F1.out F2.out F3.out F4.out && [ "$placed" = 0011 ] &&
       [ "$(cat F1.out F2.out F3.out F4.out | grep -c ' slice /carve.d.slurm-')" -eq 4 ]; echo $?)"
h=$(submit --gres=gpu:1 -o H2.out --wrap "sleep 60")
wait_for 200 running "$h"
m=$(submit --gres=gpu:1 --gpu-memory=1=1G -o M.out --wrap "echo gpus \$SLURM_JOB_GPUS; sleep 3; $MEMHOG --label M --max 2048 --hold 0")
wait_for 200 in_slice "$m"
listed=$("$CARVE" slice list --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join("%d:%d" % (d["index"], d["memory_cap"]) for s in json.load(sys.stdin) if s["name"] == sys.argv[1] for d in s["devices"]))' "slurm-$m")
wait_for 300 gone "$m"
sed 's/^/    M: /' M.out
check "job $m on GPU 1 with --gpu-memory=1=1G: carved's slice is on GPU 1 alone, capped ($listed)" \
    "$([ "$listed" = "1:1073741824" ] && grep -q '^gpus 1$' M.out &&
       grep -q '^\[M\] cuMemGetInfo at start: total 1024 MiB' M.out; echo $?)"
scancel "$h"
wait_for 150 gone "$h"

if [ "$failed" -ne 0 ]; then
    echo "    --- slurmd.log (carve lines)"
    grep -i carve "$T/log/slurmd.log" | tail -20 | sed 's/^/    /'
fi
finish
