#!/usr/bin/env bash
# san: yes (no libcarve is preloaded: the ASan carve, simulated NVML and memhog run as they are)
# mig.sh - `carve mig` and `carve run --mode mig` on the simulated GPU's MIG emulation: the
# profile table, plans (impossible requests reported with their reason), a dry-run apply that
# changes nothing, --yes creating instances that list shows, the refusal to destroy an
# instance with a process in it (by destroy and by apply --replace), a command run in an
# instance seeing its MIG device UUID, two users (root and nobody) never given the same
# instance at once, and CUDA_VISIBLE_DEVICES choosing the GPUs or MIG devices to take an
# instance from. Never touches a real GPU: everything is --simulate.
#
#   BUILD=build bash tests/e2e/mig.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
MEMHOG=$BUILD/bench/memhog
# shellcheck source=tests/e2e/tap.bash
. tests/e2e/tap.bash
state_dir=$(mktemp -d)
hog_pid=""
cleanup() {
    [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null
    rm -rf "$state_dir"
}
trap cleanup EXIT
export CARVE_SIM_STATE=$state_dir/sim-state CARVE_SIM_MIG=1 CARVE_SIM_MODEL=H100-80GB
unset CARVE_SIM_NAME CARVE_SIM_MEMORY CUDA_VISIBLE_DEVICES

# check NAME COMMAND...: passes when COMMAND succeeds
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

# json_eval EXPR: evaluates a Python expression over the JSON on stdin (as `j`)
json_eval() {
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

instances() { "$CARVE" mig list --simulate --json | json_eval "len(j[0]['instances'])"; }

# ---- the tables ----
out=$("$CARVE" mig profiles --json)
check "profiles --json: 4 models" test "$(echo "$out" | json_eval 'len(j)')" = 4
check "H100 3g.40gb starts at 0 and 4" test "$(echo "$out" | json_eval \
    "[p['starts'] for m in j if m['model']=='H100-80GB' for p in m['profiles'] if p['name']=='3g.40gb'][0]")" = "[0, 4]"
expect 0 "1g.18gb" mig profiles --gpu H200-141GB
expect 2 "T4-16GB has no MIG" mig profiles --gpu T4
# a family, a board or a GPU with MIG but no table in carve: said as such, not "no MIG model"
expect 2 "ambiguous GPU model \`A100': say A100-40GB or A100-80GB" mig plan --gpu A100 8GiB
expect 2 "carve has no MIG profile table for H100-94GB (it has MIG" mig plan --gpu H100-94GB 8GiB
expect 2 "carve has no MIG profile table for B200-180GB (it has MIG" mig plan --gpu B200 8GiB
expect 2 "carve has no MIG profile table for \`H20' (it has MIG" mig plan --gpu H20 8GiB
expect 2 "no MIG model \`foo': not a GPU carve knows" mig plan --gpu foo 8GiB
for model in A100-40GB A100-80GB H100-80GB H200-141GB; do
    CARVE_SIM_MODEL=$model expect 0 "($model), MIG on: carve's table against NVML" \
        mig profiles --check --simulate
done

# ---- plans ----
expect 0 "3 placed, 0 refused" mig plan --gpu H100-80GB 20GiB,30% 8GiB 8GiB
expect 1 "bigger than any instance" mig plan --gpu H100-80GB 8GiB 100GiB
expect 1 "H100-80GB has no MIG profile 3g.20gb" mig plan --gpu H100-80GB 3g.20gb
expect 0 "3g.20gb" mig plan --gpu A100-40GB 3g.20gb
expect 1 "does not fit beside" mig plan --gpu H100-80GB 4g.40gb 3g.40gb 1g.10gb
# a profile at its limit per GPU is refused for the limit, not for "no free start slot"
expect 1 "4g.40gb: at most 1 per GPU, and the layout has 1 already" mig plan --gpu H100-80GB 4g.40gb 4g.40gb
expect 1 "1g.10gb+me: one instance per GPU has the media engines (+me), and 1g.10gb+me has them already" \
    mig plan --gpu A100-80GB 1g.10gb+me 1g.10gb+me
expect 2 "neither memory nor a share" mig plan --gpu H100-80GB 8XB
expect 2 "at most 100%" mig plan --gpu H100-80GB 120%
expect 2 "no REQUEST given" mig plan --gpu H100-80GB
# a request that looks like an option: the message named the word before it (`H100-80GB')
expect 2 "unknown option \`-5'" mig plan --gpu H100-80GB -5GiB
# strtol took an empty --index as GPU 0, and ` 0' too
expect 2 "--index \`' is not a GPU index from 0 to 15" mig list --simulate --index ""
expect 2 "--index \` 0' is not a GPU index from 0 to 15" mig list --simulate --index " 0"
out=$("$CARVE" mig plan --gpu H100-80GB --json 4g.40gb 3g.40gb)
check "plan --json: 4g at 0, 3g at 4, nothing stranded" test \
    "$(echo "$out" | json_eval "[(p['profile'],p['start']) for p in j['placed']], j['stranded_mib']")" \
    = "[('4g.40gb', 0), ('3g.40gb', 4)] 0"

# ---- apply: a dry run changes nothing; --yes creates ----
expect 0 "no MIG instances" mig list --simulate
expect 2 "no free MIG instance; there is: none; make one with carve mig apply" \
    run --mode mig --simulate -- true
expect 0 "would create 3g.40gb" mig apply --simulate 20GiB,30% 8GiB 8GiB
check "the dry run created nothing" test "$(instances)" = 0
expect 0 "dry run: nothing changed" mig apply --simulate 8GiB
expect 0 "created GI" mig apply --simulate --yes 20GiB,30% 8GiB 8GiB
check "list shows 3 instances" test "$(instances)" = 3
list=$("$CARVE" mig list --simulate --json)
check "each has a MIG device UUID" test "$(echo "$list" | json_eval \
    "all(i['uuid'].startswith('MIG-') for i in j[0]['instances'])")" = True
check "profiles 3g.40gb, 1g.10gb, 1g.10gb" test "$(echo "$list" | json_eval \
    "sorted(i['profile'] for i in j[0]['instances'])")" = "['1g.10gb', '1g.10gb', '3g.40gb']"
expect 1 "does not fit" mig apply --simulate --yes 3g.40gb
check "a refused apply created nothing" test "$(instances)" = 3
expect 0 "beside the instances already there" mig plan --simulate 1g.10gb

# not root: NVML shows the MIG devices but not the GPU instances behind them
export CARVE_SIM_UNPRIVILEGED=1
check "not root: list still shows the 3 instances, slots unknown" test "$("$CARVE" mig list \
    --simulate --json | json_eval "[i['start'] for i in j[0]['instances']]")" = "[None, None, None]"
check "not root: their profiles from the MIG devices" test "$("$CARVE" mig list --simulate \
    --json | json_eval "sorted(i['profile'] for i in j[0]['instances'])")" = "['1g.10gb', '1g.10gb', '3g.40gb']"
expect 1 "needs root here" mig apply --simulate 8GiB
expect 1 "MIG changes need root" mig destroy --simulate --yes --all
seen=$("$CARVE" run --mode mig --simulate --quiet --memory 20GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check "not root: run --mode mig still finds an instance ($seen)" grep -q "^MIG-" <<<"$seen"
unset CARVE_SIM_UNPRIVILEGED
check "nothing changed without root" test "$(instances)" = 3

# ---- run --mode mig ----
small=$(echo "$list" | json_eval "[i['uuid'] for i in j[0]['instances'] if i['profile']=='1g.10gb'][0]")
big=$(echo "$list" | json_eval "[i['uuid'] for i in j[0]['instances'] if i['profile']=='3g.40gb'][0]")
big_gi=$(echo "$list" | json_eval "[i['gpu_instance'] for i in j[0]['instances'] if i['profile']=='3g.40gb'][0]")
seen=$("$CARVE" run --mode mig --simulate --quiet --mig-instance "$small" -- \
    sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check "run --mig-instance: the command sees CUDA_VISIBLE_DEVICES=$small" test "$seen" = "$small"
seen=$("$CARVE" run --mode mig --simulate --quiet --mig-instance "$small" -- nvidia-smi -L)
check "nvidia-smi -L in the command lists MIG 1g.10gb $small" \
    grep -q "MIG 1g.10gb .*(UUID: $small)" <<<"$seen"
seen=$("$CARVE" run --mode mig --simulate --quiet --memory 20GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check "run --memory 20GiB picks the 3g.40gb" test "$seen" = "$big"
seen=$("$CARVE" run --mode mig --simulate --quiet --memory 1GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check "run --memory 1GiB picks a 1g.10gb, the smallest that fits" test \
    "$(echo "$list" | json_eval "[i['profile'] for i in j[0]['instances'] if i['uuid']=='$seen'][0]")" = 1g.10gb
# --compute is a share as in every mode: 30 is 30% (it was read as 30 bytes), and a
# guarantee is refused saying why (30%+ was "unknown unit")
for share in 30 30%; do
    seen=$("$CARVE" run --mode mig --simulate --quiet --compute "$share" -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
    check "run --compute $share picks the 3g.40gb, the smallest with 30% of the SMs ($seen)" test "$seen" = "$big"
done
expect 2 "--compute 30%+: a MIG instance gives a fixed share of the GPU's SMs, not a guarantee with idle time on top; use 30%" \
    run --mode mig --simulate --compute 30%+ -- true
expect 2 "no free MIG instance with at least 20GiB and 50%;" run --mode mig --simulate --memory 20GiB --compute 50 -- true
expect 2 "--compute \`150' is more than 100%; give a share of the GPU's SMs" run --mode mig --simulate --compute 150 -- true
expect 2 "no free MIG instance with at least 50GiB" run --mode mig --simulate --memory 50GiB -- true
# --priority normal (the default) is what an instance gives; latency or batch is refused,
# saying why (it was refused with --slice and --name as "does not apply", normal too)
seen=$("$CARVE" run --mode mig --simulate --quiet --priority normal --memory 20GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
check "run --priority normal --memory 20GiB runs in the 3g.40gb ($seen)" test "$seen" = "$big"
expect 2 "isolated by the hardware: no other work shares its SMs, so --priority batch has nothing to rank; drop it (or give normal)" \
    run --mode mig --simulate --priority batch --memory 20GiB -- true
expect 2 "--slice and --name do not apply" run --mode mig --simulate --name x -- true
# larger than every profile: no instance can exist, so "make one with carve mig apply" was wrong
out=$("$CARVE" run --mode mig --simulate --memory 100GiB -- true 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && [[ $out == *"no MIG profile holds 100GiB, so no MIG instance can (H100-80GB's largest, 7g.80gb, has 79.25 GiB); use another --mode"* && $out != *"carve mig apply"* ]]; then
    ok "run --mode mig --memory 100GiB: no profile holds it"
else
    bad "run --mode mig --memory 100GiB -> $rc: $out"
fi
# a carve run holds its instance even before its command has a GPU process: no second taker
"$CARVE" run --mode mig --simulate --quiet --memory 20GiB -- sleep 10 &
holder=$!
# lock_held UUID: whether a socket holds carve's lock name for MIG device UUID
lock_held() { grep -q " @carve-mig-$1\$" /proc/net/unix; }
for _ in $(seq 100); do
    lock_held "$big" && break
    sleep 0.05
done
expect 2 "no free MIG instance with at least 20GiB" run --mode mig --simulate --memory 20GiB -- true
# nor is it destroyed under the command, which has no GPU process for NVML to list yet
expect 1 "a carve run --mode mig holds it" mig destroy --simulate --yes "$big"
check "the held instance was not destroyed" test "$(instances)" = 3
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# two users at once: the lock of an instance is one for all users. Each user's lock was
# their own (/dev/shm/carve-mig-UID-UUID.lock), so root and nobody were both given the
# 3g.40gb, free for NVML until a command has a process in it. Then one lock file in
# /dev/shm for all users: one that a user left unreadable blocked every other user's carve
# run with no process of theirs; the lock is now an abstract socket name.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    # shellcheck source=tests/e2e/reachable.bash
    . tests/e2e/reachable.bash
    chmod 711 "$state_dir" && chmod o+rw "$state_dir"/sim-state*
    mkdir -m 777 "$state_dir/nb"
    NB=$(reachable_build "$BUILD" "$state_dir/nobody-build")
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env CARVE_SIM_UNPRIVILEGED=1 "$@"; }
    # hold DIR NAME CARVE ARGS...: carve run --mode mig ARGS holding its instance until DIR/NAME.stop
    hold() {
        local dir=$1 name=$2 carve=$3
        shift 3
        "$carve" run --mode mig --simulate --quiet "$@" -- sh -c 'echo "$CUDA_VISIBLE_DEVICES" >"$0/$1.got"
            i=0; while [ ! -e "$0/$1.stop" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' "$dir" "$name"
    }
    got() { for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.05; done; cat "$1" 2>/dev/null; }
    hold "$state_dir" root "$CARVE" --memory 20GiB &
    holder=$!
    seen=$(got "$state_dir/root.got")
    out=$(as_nobody "$NB/bin/carve" run --mode mig --simulate --quiet --memory 20GiB -- \
        sh -c 'echo "nobody got $CUDA_VISIBLE_DEVICES"' 2>&1)
    rc=$?
    check "root holds the 3g.40gb ($seen), nobody asks for 20GiB at once: none free, status $rc ($out)" \
        test "$seen" = "$big" -a "$rc" = 2 -a -z "${out##*no free MIG instance with at least 20GiB*}" \
        -a -z "${out##*$big (held by a carve run)*}"
    out=$(as_nobody "$NB/bin/carve" run --mode mig --simulate --quiet --memory 1GiB -- \
        sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
    check "... nobody asking for 1GiB meanwhile gets another instance ($out)" \
        test -z "${out##MIG-*}" -a "$out" != "$big"
    touch "$state_dir/root.stop"
    wait "$holder"
    # the other way round: nobody's lock holds for root too
    as_nobody bash -c "$(declare -f hold); hold $state_dir/nb nobody $NB/bin/carve --memory 20GiB" &
    holder=$!
    seen=$(got "$state_dir/nb/nobody.got")
    check "nobody holds the 3g.40gb ($seen), by its lock name" lock_held "$big"
    expect 2 "$big (held by a carve run)" run --mode mig --simulate --memory 20GiB -- true
    expect 1 "a carve run --mode mig holds it" mig destroy --simulate --yes "$big"
    touch "$state_dir/nb/nobody.stop"
    wait "$holder"
    check "nobody's carve run ended and let its lock go" test "$(lock_held "$big" && echo held)" = ""
    # files a user leaves where the lock files were hold nothing: each instance's, mode 000
    for uuid in "$big" "$small"; do
        as_nobody sh -c "umask 777; : >/dev/shm/carve-mig-$uuid.lock"
    done
    seen=$("$CARVE" run --mode mig --simulate --quiet --memory 20GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
    check "then root gets it ($seen), past nobody's mode-000 files" test "$seen" = "$big"
    out=$(as_nobody "$NB/bin/carve" run --mode mig --simulate --quiet --memory 1GiB -- \
        sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
    check "... and so does a user who did not make them ($out)" test -z "${out##MIG-*}"
    rm -f "/dev/shm/carve-mig-$big.lock" "/dev/shm/carve-mig-$small.lock"
    chmod 700 "$state_dir"
else
    echo "ok - # SKIP two users at once: needs root and setpriv"
fi
expect 2 "needs --mode mig" run --simulate --mig-instance "$small" -- true
expect 2 "no MIG device MIG-nope" run --mode mig --simulate --mig-instance MIG-nope -- true
# a share given as --memory (or memory as --compute) was taken as the other option
expect 2 "--memory 30%: not a size" run --mode mig --simulate --memory 30% -- true
expect 2 "--compute 8GiB: not a share" run --mode mig --simulate --compute 8GiB -- true
expect 2 "--compute 3g.40gb: not a share" run --mode mig --simulate --compute 3g.40gb -- true
expect 2 "unknown mode \`bogus' (modes: carve, timeslice, mps, mig)" run --mode bogus -- true
expect 3 "" run --mode mig --simulate --quiet -- sh -c 'exit 3'

# a process in the 3g.40gb: it sees the instance's memory, and the instance cannot go
"$CARVE" run --mode mig --simulate --quiet --mig-instance "$big" -- \
    "$MEMHOG" --max 256 --hold 30 >"$state_dir/hog.out" 2>&1 &
hog_pid=$!
for _ in $(seq 100); do grep -q holding "$state_dir/hog.out" && break; sleep 0.1; done
check "the process in the 3g.40gb sees 40448 MiB" grep -q "total 40448 MiB" "$state_dir/hog.out"
check "list names the process" test "$("$CARVE" mig list --simulate --json | json_eval \
    "[i['pids'] for i in j[0]['instances'] if i['uuid']=='$big'][0] != []")" = True
expect 1 "refusing to destroy GPU instance $big_gi" mig destroy --simulate --yes "$big"
expect 1 "(memhog)" mig destroy --simulate --yes "$big_gi"
expect 1 "processes run in it" mig apply --simulate --replace --yes 7g.80gb
check "refusals destroyed nothing" test "$(instances)" = 3
seen=$("$CARVE" run --mode mig --simulate --quiet --memory 20GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1)
check "a busy instance is not chosen for another command" test "$seen" != "$big"
expect 0 "would destroy GI" mig destroy --simulate "$small"
check "destroy without --yes destroyed nothing" test "$(instances)" = 3
expect 0 "destroyed GI" mig destroy --simulate --yes "$small"
check "the free one went" test "$(instances)" = 2
kill "$hog_pid" 2>/dev/null
wait "$hog_pid" 2>/dev/null
hog_pid=""
# the 3g.40gb at 0 is in the plan and stays; the last 1g.10gb goes
out=$("$CARVE" mig apply --simulate --replace --yes 3g.40gb 3g.40gb 2>&1)
check "replace keeps GI $big_gi, destroys the 1g.10gb, creates one 3g.40gb" \
    test "$(echo "$out" | grep -c -e "^keep     GI $big_gi " -e "^destroyed GI .*1g.10gb" \
        -e "^created GI .*3g.40gb")" = 3
list=$("$CARVE" mig list --simulate --json)
check "replace: exactly two 3g.40gb at 0 and 4" test "$(echo "$list" | json_eval \
    "sorted((i['profile'], i['start']) for i in j[0]['instances'])")" = "[('3g.40gb', 0), ('3g.40gb', 4)]"
out=$("$CARVE" mig apply --simulate --replace --yes 3g.40gb 3g.40gb 2>&1)
check "replace again: both kept, nothing destroyed or created" test \
    "$(echo "$out" | grep -c "^keep ")/$(echo "$out" | grep -c -e "^destroyed" -e "^created")" = 2/0
expect 0 "destroyed GI" mig destroy --simulate --yes --all
check "destroy --all: none left" test "$(instances)" = 0

check "carve run left no instance lock behind" test "$(lock_held "$small" || lock_held "$big" &&
    echo held)" = ""

# ---- CUDA_VISIBLE_DEVICES: an instance of the devices the job was given ----
# A job given GPU 1 (Slurm sets CUDA_VISIBLE_DEVICES=1) was run in an instance of GPU 0.
saved_state=$CARVE_SIM_STATE
export CARVE_SIM_STATE=$state_dir/two CARVE_SIM_DEVICES=2
"$CARVE" mig apply --simulate --index 0 --yes 8GiB 8GiB >/dev/null &&
    "$CARVE" mig apply --simulate --index 1 --yes 8GiB 8GiB >/dev/null
list=$("$CARVE" mig list --simulate --json)
on_gpu() { echo "$list" | json_eval "[g['index'] for g in j for i in g['instances'] if i['uuid']=='$1'][0]" 2>/dev/null; }
mig_of() { echo "$list" | json_eval "j[$1]['instances'][$2]['uuid']"; }
g0a=$(mig_of 0 0) g0b=$(mig_of 0 1) g1a=$(mig_of 1 0) g1b=$(mig_of 1 1)
gpu1=$(echo "$list" | json_eval "j[1]['uuid']")
run_in() { CUDA_VISIBLE_DEVICES=$1 "$CARVE" run --mode mig --simulate --quiet --memory 8GiB -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>&1; }
seen=$(run_in 1)
check "2 GPUs with 2 instances each: CUDA_VISIBLE_DEVICES=1 gets an instance of GPU 1 ($seen on GPU $(on_gpu "$seen"))" test "$(on_gpu "$seen")" = 1
seen=$(run_in 0)
check "CUDA_VISIBLE_DEVICES=0: GPU 0's ($seen)" test "$(on_gpu "$seen")" = 0
seen=$(run_in "$gpu1")
check "CUDA_VISIBLE_DEVICES=GPU 1's UUID: GPU 1's ($seen)" test "$(on_gpu "$seen")" = 1
seen=$(run_in "${gpu1:0:17}")
check "CUDA_VISIBLE_DEVICES=${gpu1:0:17} (a prefix): GPU 1's ($seen)" test "$(on_gpu "$seen")" = 1
seen=$(run_in "$g0b")
check "CUDA_VISIBLE_DEVICES=a MIG device: that instance ($seen)" test "$seen" = "$g0b"
seen=$(run_in "$g1b,0")
check "CUDA_VISIBLE_DEVICES=MIG device,0: one of them ($seen)" test -n "$(on_gpu "$seen")"
# GPU 1's instances both held: none free for CUDA_VISIBLE_DEVICES=1, however free GPU 0's are
hold2() {
    CUDA_VISIBLE_DEVICES=$1 "$CARVE" run --mode mig --simulate --quiet -- sh -c 'touch "$0/$1.up"
        i=0; while [ ! -e "$0/held.stop" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' "$state_dir" "$1"
}
rm -f "$state_dir/held.stop"
hold2 "$g1a" & h1=$!
hold2 "$g1b" & h2=$!
for _ in $(seq 100); do [ -e "$state_dir/$g1a.up" ] && [ -e "$state_dir/$g1b.up" ] && break; sleep 0.05; done
CUDA_VISIBLE_DEVICES=1 expect 2 "no free MIG instance with at least 8GiB among the devices CUDA_VISIBLE_DEVICES=1 names; there are: 1g.10gb $g1a (held by a carve run), 1g.10gb $g1b (held by a carve run)" \
    run --mode mig --simulate --memory 8GiB -- true
CUDA_VISIBLE_DEVICES=$g1a expect 2 "$g1a (held by a carve run)" run --mode mig --simulate -- true
touch "$state_dir/held.stop"
wait "$h1" "$h2"
# what is not a device list is refused, not guessed
CUDA_VISIBLE_DEVICES='' expect 2 "CUDA_VISIBLE_DEVICES is empty, which hides every GPU" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=7 expect 2 "CUDA_VISIBLE_DEVICES=7 names GPU 7, which this machine does not have" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=first expect 2 "CUDA_VISIBLE_DEVICES=first: \`first' is not a GPU index as nvidia-smi numbers them" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=0,,1 expect 2 "has an empty entry" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=-1 expect 2 "\`-1' is not a GPU index" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=${gpu1:0:12} expect 2 "\`${gpu1:0:12}' matches 2 GPUs: give more of the UUID" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=GPU-ffff expect 2 "\`GPU-ffff' names no GPU of this machine" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=MIG-nope expect 2 "names MIG device MIG-nope, which this machine does not have" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES="MIG-$gpu1/1/0" expect 2 "is the MIG-GPU-UUID/GI/CI form of drivers before R470" run --mode mig --simulate -- true
CUDA_VISIBLE_DEVICES=1 expect 2 "--mig-instance $g0a is not among the devices CUDA_VISIBLE_DEVICES=1 names" \
    run --mode mig --simulate --mig-instance "$g0a" -- true
seen=$(CUDA_VISIBLE_DEVICES=0 "$CARVE" run --mode mig --simulate --quiet --mig-instance "$g0a" -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
check "--mig-instance of GPU 0 with CUDA_VISIBLE_DEVICES=0: run there ($seen)" test "$seen" = "$g0a"
# GPU 0 lost (NVML counts it, answers nothing for it): GPU 1 is listed and used as before
# (every carve mig command failed on such a node until 2026-11-29, "GPU 0: GPU is lost")
echo 0 >"$state_dir/lost"
on1=$(CARVE_SIM_LOST=$state_dir/lost "$CARVE" mig list --simulate --json 2>&1 | json_eval "[g['index'] for g in j]" 2>&1)
check "GPU 0 lost: carve mig list lists GPU 1 alone ($on1)" test "$on1" = "[1]"
CARVE_SIM_LOST=$state_dir/lost expect 1 "no GPU 0: NVML answers for 1" mig list --simulate --index 0
rm -f "$state_dir/lost"
export CARVE_SIM_STATE=$saved_state
unset CARVE_SIM_DEVICES

# ---- other models and modes ----
CARVE_SIM_MODEL=A100-40GB expect 0 "A100-SXM4-40GB" mig list --simulate
CARVE_SIM_MODEL=A100-40GB expect 0 "would create 3g.20gb" mig apply --simulate 3g.20gb 2g.10gb
CARVE_SIM_MIG=off expect 1 "MIG mode off" mig apply --simulate --yes 8GiB
CARVE_SIM_MIG=off expect 0 "MIG off" mig list --simulate
CARVE_SIM_MIG="" expect 1 "has no MIG" mig apply --simulate 8GiB
# carve run --mode mig on a GPU not in MIG mode says what to do, not "make one with carve mig
# apply" (which refuses there too); with neither --memory nor --compute it names no "anything"
CARVE_SIM_MIG=off expect 2 "no GPU is in MIG mode (GPU 0 has MIG mode off); turn it on with \`nvidia-smi -i 0 -mig 1'" \
    run --mode mig --simulate --memory 8GiB -- true
CARVE_SIM_MIG="" expect 2 "no GPU is in MIG mode (GPU 0 has no MIG); use another --mode" \
    run --mode mig --simulate -- true
check "a refused apply on a GPU without MIG made no file" test ! -s "$CARVE_SIM_STATE.mig"
expect 2 "option \`--yes' does not apply here" mig plan --gpu H100-80GB --yes 8GiB
expect 2 "no subcommand \`frob'" mig frob
expect 0 "carve mig apply" mig --help

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
