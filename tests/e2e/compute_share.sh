#!/usr/bin/env bash
# alone: yes (its checks time the shares tenants get: a busy CPU beside it makes them miss)
# slow: yes (180 s: timed runs of every share group; the gcc build runs it)
# compute_share.sh - compute shares on the simulated GPU: caps and guarantees hold their
# targets for big kernels, small kernels and graph replays; a guarantee uses idle time; a
# batch slice makes room for a latency slice; bad --compute/--priority input is refused.
#
#   BUILD=build bash tests/e2e/compute_share.sh
#
# Shares are measured by bench/compute_load from the work its completed kernels represent
# (the simulated GPU runs carve_sleep kernels for exactly their duration), not from carve's
# books. Each run lasts SECONDS (default 4); window 0 is the learning second (kernel costs
# are measured while the slices already run) and is left out; every later 1-second window
# must be within 5 points of the target and their mean within 2 (for guarantees, the slice's
# part of the work all slices did; see judge_split). A group that misses is run up to twice
# more. The full 30-second runs on a real GPU are bench/gpu/run-compute.sh. The last line is
# `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
LOAD=$BUILD/bench/compute_load
SECONDS_EACH=${SECONDS_EACH:-4}
# the windows left out as learning: the first, or more for a group that says so
export LEARN_WINDOWS=1
# a mean within this many points of the target (empty: 2), for a group that says so
export MEAN_TOL=
passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARVE_SIM_STATE=$work/sim-state CARVE_SIM_MEMORY=80GiB
# a GPU of this run's own, so that its board (/dev/shm/carve-board-<uuid>) is this test's alone
sim_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
export CARVE_SIM_UUIDS=GPU-$sim_uuid
board=/dev/shm/carve-board-${sim_uuid//-/}

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }

# judge TARGET FILE: the windows after the first within 5 points of TARGET, mean within 2 (or
# within MEAN_TOL, for a group that says so).
judge() {
    python3 - "$1" "$2" <<'PY'
import json, os, sys
target, path = float(sys.argv[1]), sys.argv[2]
tol = float(os.environ.get("MEAN_TOL") or 2)
w = [json.loads(l)["share"] for l in open(path) if '"window"' in l]
w = w[int(os.environ["LEARN_WINDOWS"]):]
if not w:
    print("no windows"); sys.exit(1)
mean = sum(w) / len(w)
worst = max(abs(x - target) for x in w)
print(f"windows {', '.join(f'{x:.1f}' for x in w)}; mean {mean:.2f}")
sys.exit(0 if worst <= 5 and abs(mean - target) <= tol else 1)
PY
}

# judge_split TARGET FILE OTHERS...: like judge, but on FILE's part of the work that FILE and
# OTHERS did together in each window. Guarantees that add up to 100% are a split of whatever
# the GPU did; on a loaded CI machine the tenants' own CPU time can leave the simulated GPU
# idle for a moment, which lowers every share alike and says nothing about carve.
judge_split() {
    python3 - "$@" <<'PY'
import json, os, sys
target, paths = float(sys.argv[1]), sys.argv[2:]
def windows(p):
    return {j["window"]: j["share"] for j in map(json.loads, open(p)) if "window" in j}
mine, others = windows(paths[0]), [windows(p) for p in paths[1:]]
w = []
for k in sorted(mine)[int(os.environ["LEARN_WINDOWS"]):]:
    total = mine[k] + sum(o.get(k, 0.0) for o in others)
    if total > 0:
        w.append(100.0 * mine[k] / total)
if not w:
    print("no windows"); sys.exit(1)
mean = sum(w) / len(w)
worst = max(abs(x - target) for x in w)
print(f"parts of the work {', '.join(f'{x:.1f}' for x in w)}; mean {mean:.2f}")
sys.exit(0 if worst <= 5 and abs(mean - target) <= 2 else 1)
PY
}

# measure KIND SHARE...: one slice per SHARE at once, each running compute_load KIND; the
# logs are $work/KIND.I. Slice I launches through the entry point LAUNCH_APIS[I] names
# (compute_load --launch), cuLaunchKernel when it names none, and runs compute_load --kind
# KINDS[I] instead of KIND when KINDS names one (KIND then only names the logs), with the
# further compute_load options EXTRA[I] (words) when EXTRA names some. A SHARE of the form
# SHARE:PRIORITY runs with --priority PRIORITY too, and `none:PRIORITY' with no --compute. With
# START_GAP (seconds), each slice starts that long after the one before, so that it joins the
# board after it and its window comes after theirs in each period.
LAUNCH_APIS=()
KINDS=()
EXTRA=()
START_GAP=0
measure() {
    local kind=$1 i=0 s pids=()
    shift
    for s in "$@"; do
        [ "$i" -gt 0 ] && sleep "$START_GAP"
        # Tenants of small kernels wait for them by polling (--spin), as CUDA does by default:
        # the simulated GPU's synchronize sleeps, and a VM's late wake-up left a queue of 16 x
        # 20 us empty, the GPU idle as if carve had held the tenant (a 30% slice got 28.5-29.0%
        # beside a 70% one, 2026-11-28). Not those of longer kernels, whose queues outlast a
        # wake-up: with four tenants of 10 ms kernels polling on 2 CPUs, a 25% slice got
        # 11-21% in some window in 3 runs of 6 (0 of 8 without polling).
        local spin=()
        [ "${KINDS[$i]:-$kind}" = small ] && [ -z "${NO_SPIN:-}" ] && spin=(--spin)
        # a limiter that holds a launch for ever fails the check instead of hanging the suite
        local run_args=(--compute "${s%%:*}")
        [[ $s == none:* ]] && run_args=()
        [[ $s == *:* ]] && run_args+=(--priority "${s#*:}")
        timeout -k 5 $((SECONDS_EACH + 30)) "$CARVE" run --simulate --quiet "${run_args[@]}" -- \
            "$LOAD" --kind "${KINDS[$i]:-$kind}" --seconds "$SECONDS_EACH" --label "s$i" \
            --launch "${LAUNCH_APIS[$i]:-kernel}" ${EXTRA[$i]:-} "${spin[@]}" \
            >"$work/$kind.$i" 2>&1 &
        pids+=($!)
        i=$((i + 1))
    done
    wait "${pids[@]}"
}

# verdicts KIND SHARE...: one line per slice with a share, "ok ..." or "FAIL ...", for the last
# measure.
verdicts() {
    local kind=$1 i=0 s n=$(($# - 1)) target line others j
    shift
    for s in "$@"; do
        target=${s%%[%+]*}
        if [[ $s == none:* ]]; then # no share to judge it by
            i=$((i + 1))
            continue
        elif [[ ${s%%:*} == *+ ]]; then
            others=()
            for ((j = 0; j < n; j++)); do [ "$j" -ne "$i" ] && others+=("$work/$kind.$j"); done
            line=$(judge_split "$target" "$work/$kind.$i" "${others[@]}")
        else
            line=$(judge "$target" "$work/$kind.$i")
        fi
        local rc=$? name="$i ($s${LAUNCH_APIS[$i]:+, ${LAUNCH_APIS[$i]}})"
        if [ "$rc" -eq 0 ]; then
            echo "ok slice $name got $line"
        else
            echo "FAIL slice $name got $line; log: $(tail -n 3 "$work/$kind.$i" | tr '\n' ' ')"
        fi
        i=$((i + 1))
    done
}

# shares KIND SHARE...: measure and judge; a group that misses is measured again, up to three
# times in all, since a 2-CPU CI machine running other suites can starve the tenants for a
# second. A limiter that is wrong misses every time. (A 30% slice of 10 ms kernels used to
# settle into one kernel per turn at 20%, 4 runs in 30, until a turn's sampled first launch
# waited for the hand-over: libcarve/pace.c, take_turn.)
shares() {
    local result first="" try
    measure "$@"
    result=$(verdicts "$@")
    for try in second third; do
        [[ $result == *FAIL* ]] || break
        first="$first (passed on the $try try; before: $(echo "$result" | tr '\n' ' '))"
        measure "$@"
        result=$(verdicts "$@")
    done
    while read -r verdict rest; do
        if [ "$verdict" = ok ]; then
            ok "$1 kernels, slices at ${*:2}: $rest$first"
        else
            bad "$1 kernels, slices at ${*:2}: $rest"
        fi
    done <<<"$result"
}

# Four slices of big (10 ms) kernels took several seconds to learn their costs before a key's
# third unmeasured launch waited for its first sample (libcarve/pace.c, learn_first): their
# windows 1 and 2 got 0-10%.
for kind in big small graph; do
    shares "$kind" 30% 70%
    shares "$kind" 25% 25% 25% 25%
done
shares small 30%+ 70%+

# Small kernels beside big ones: the 30% slice of big (10 ms) kernels runs its second kernel
# past its 15 ms window now and then, into the small slice's window after it; that window
# used to end on time all the same, and the 30% slice of small (20 us) kernels got 22-25% in
# every window. Now a window moves on by the others' work that ran into it (libcarve/pace.c,
# window_late). The big slice starts first so that its window comes first: the other way
# round its overrun falls into the idle 40% and hurts no one.
KINDS=(big small)
START_GAP=0.3
shares mixed 30% 30%
# Shares that add up to 100% leave no idle time to move into: the big slice, held back later
# for its overrun, left part of its window unused, and a 70% slice of small kernels beside it
# got 62.6-66.0% (either order). Now the window after it may start early in that part, while
# its slice is behind its share (libcarve/pace.c, window_given), and a window moves on only
# into idle time (window_moved).
shares mixed 30% 70%
KINDS=(small big)
shares mixed 70% 30%
KINDS=()
START_GAP=0

# One kernel and grid whose work varies from launch to launch (a loop count as argument):
# charged the low end of its samples, a 30% cap of 0.5 ms kernels, every 8th running 20 ms,
# used the whole GPU, and a 70% cap of 0.1 ms kernels, every 4th running 1 ms, took 78%
# beside a 30% slice, which got 22% (2026-11-27). Now such a key is sampled at every launch
# and charged what its samples measure (libcarve/pace.c, take_clean).
KINDS=(small small)
EXTRA=("--kernel-us 500 --long-every 8 --long-us 20000")
shares varying 30%
EXTRA=("--kernel-us 100 --long-every 4 --long-us 1000")
shares varying 70% 30%
# The varying kind of bench/gpu/run-compute.sh (0.5 ms kernels, every 8th 4 ms) on every
# slice: the mean a varying key is charged followed its samples from a turn's edge too
# (a turn's first launch, one that runs over), which met the others' work, and came out
# 1.0-1.3 ms for 0.94 ms of work: four 25% slices got 21.9-23.5% (three tries), the 30% slice
# 25.8% when the tenants polled, 29.1% when not (2026-11-29). Now only the turns' middles move it (libcarve/pace.c, take_sample). Two
# learning seconds: four slices find their keys varying within 1-2 s, and the second second
# of one of them was 11.8% or 41% in about one try of three. Not polling: four tenants
# polling on 2 CPUs starved one another (a 25% slice had a window of 10.5%).
KINDS=(small small small small)
NO_SPIN=1
LEARN_WINDOWS=2
SECONDS_SAVED=$SECONDS_EACH
SECONDS_EACH=$((SECONDS_EACH + 1))
EXTRA=("--kernel-us 500 --long-every 8 --long-us 4000" "--kernel-us 500 --long-every 8 --long-us 4000"
       "--kernel-us 500 --long-every 8 --long-us 4000" "--kernel-us 500 --long-every 8 --long-us 4000")
shares varying-8th 30% 70%
shares varying-8th 25% 25% 25% 25%
# The same on a GPU that time-slices between processes (2 ms slices). A varying key's launches
# are charged its mean, and squared when their samples come in; the board kept the queue end
# the means gave, and a slice held for its next window looked at its samples only when it
# launched again. The slice after it started its turn while that work still ran, and took
# its samples beside it for clean: the 30% slice got 23.0% (22.5-24.1% in 8-10 s runs by
# hand, as on the H200 on 2026-11-28), four 25% slices 18.0-21.9%. Now the board follows the
# squared queue clock, and a held slice squares its samples while it waits (libcarve/pace.c,
# queue_corrected, take_turn): 28.3-29.3 / 68.9-70.7% and 23.2-24.3% by hand (2026-11-29),
# within 2 points but with little to spare, so these two groups are held to 3.5 (MEAN_TOL),
# which the old pacer misses by far.
MEAN_TOL=3.5
CARVE_SIM_TIMESLICE_US=2000 shares varying-8th-time-sliced 30% 70%
CARVE_SIM_TIMESLICE_US=2000 shares varying-8th-time-sliced 25% 25% 25% 25%
MEAN_TOL=
NO_SPIN=
LEARN_WINDOWS=1
SECONDS_EACH=$SECONDS_SAVED
KINDS=()
EXTRA=()

# On a GPU that time-slices between processes (here CARVE_SIM_TIMESLICE_US, 2 ms slices), a
# slice's kernel that meets another slice's overrun runs beside it, stretched, and so does
# the overrun. A turn's first launch counted as clean when its own stream was still busy:
# four 25% slices of 10 ms kernels had their keys marked varying, charged means of 12-14 ms,
# and got 16-23% from about the third second; their estimates rose to 12.5 ms on such
# samples (the H200's 14.7-18.1% at three of four 25% caps, 2026-11-28). Now a turn's edge
# only ever lowers an estimate (libcarve/pace.c, sample_kind). Ten seconds: it took 3-6.
KINDS=(big big big big)
SECONDS_SAVED=$SECONDS_EACH
SECONDS_EACH=10
CARVE_SIM_TIMESLICE_US=2000 shares big-time-sliced 25% 25% 25% 25%
SECONDS_EACH=$SECONDS_SAVED
KINDS=()

# A kernel that gets longer for good (compute_load --grow-after: 10 ms, then 14 ms from 2 s
# on), in a 30% slice that runs it once a turn (its 15 ms window holds one):
# every sample of it came from a turn's edge, which never raised an estimate, and the slice
# took 42% beside the 70% one, with or without time slices, for as long as it ran
# (2026-11-29). Now a long window of such samples all above the estimate raises it
# (libcarve/pace.c, shut_window). The windows of the three seconds after the change are left
# out as learning. Not run under time slices here: the 30% slice gets its share there too,
# but the 70% one, whose samples met the other's overruns while its estimate was low, is
# found varying and got 65-67% for some seconds in one run of three
# (docs/results/2026-11-29-compute-growing-simulated.md).
KINDS=(big big)
EXTRA=("--grow-after 2 --grow-us 14000" "")
SECONDS_SAVED=$SECONDS_EACH
SECONDS_EACH=8
LEARN_WINDOWS=5
shares big-growing 30% 70%
SECONDS_EACH=$SECONDS_SAVED
LEARN_WINDOWS=1
KINDS=()
EXTRA=()

# Two processes of one slice lengthen each other's samples as another slice would: taken for
# clean ones, they marked uniform 200 us kernels as varying, and a 90% cap of two such
# processes got 76-80% (2026-11-27, review). Samples count only while one process (and one
# stream of it) launches (libcarve/pace.c, one_launcher).
two_processes() { # 6 seconds: the marking took 1-3
    timeout -k 5 36 "$CARVE" run --simulate --quiet --compute 90% -- sh -c \
        "'$LOAD' --spin --kind small --kernel-us 200 --seconds 6 --label a >'$work/two.0' &
         '$LOAD' --spin --kind small --kernel-us 200 --seconds 6 --label b >'$work/two.1'; wait"
    python3 - "$work/two.0" "$work/two.1" <<'PY'
import json, sys
a, b = ([json.loads(l)["share"] for l in open(p) if '"window"' in l][1:] for p in sys.argv[1:])
w = [x + y for x, y in zip(a, b)]
if not w:
    print("FAIL no windows"); sys.exit(1)
mean = sum(w) / len(w)
ok = max(abs(x - 90) for x in w) <= 5 and abs(mean - 90) <= 2
print(f"{'ok' if ok else 'FAIL'} windows {', '.join(f'{x:.1f}' for x in w)}; mean {mean:.2f}")
PY
}
result=$(two_processes) || result=$(two_processes) || result=$(two_processes)
if [[ $result == ok* ]]; then
    ok "a 90% cap of two processes of small kernels together: ${result#ok }"
else
    bad "a 90% cap of two processes of small kernels together: ${result#FAIL }"
fi

# Caps are not checked against guarantees: past the period, a guarantee keeps its share and
# the caps get the rest. Scaled in proportion with the cap, and the cap's share clock run at
# its full 50%, a 60% guarantee of small kernels beside a busy 50% cap of big ones got 49.6%
# and the cap 50.0% (2026-11-27). The cap's part is 40%.
oversubscribed() {
    KINDS=(small big)
    measure over 60%+ 50%
    KINDS=()
    local g c
    g=$(judge_split 60 "$work/over.0" "$work/over.1") && c=$(judge 40 "$work/over.1") &&
        echo "ok guarantee got $g; cap got $c" && return 0
    echo "FAIL guarantee (60%+) got $g; cap (50%, 40% left to it) got ${c:-(not judged)}"
    return 1
}
result=$(oversubscribed) || result=$(oversubscribed) || result=$(oversubscribed)
if [[ $result == ok* ]]; then
    ok "a 60%+ guarantee of small kernels beside a 50% cap of big ones: ${result#ok }"
else
    bad "a 60%+ guarantee of small kernels beside a 50% cap of big ones: ${result#FAIL }"
fi

# A batch slice yielding to a busy latency slice with no share was held to no run-ahead:
# each small kernel slept on its own, a wake-up took longer than the kernel, and a 60%+ batch
# guarantee of 20 us kernels got 6-12% of the GPU (2026-11-27). Now a small kernel's yield
# lead is 8 of them (libcarve/pace.c, lead), and a batch guarantee yields no further than its
# guarantee (common/compute.c). The latency slice has no share and is not held, so the
# guarantee is not kept beside it (about 50% here, docs/compute.md): at least 40% is asked.
yield_small() {
    KINDS=(small small)
    measure yield 60%+:batch none:latency
    KINDS=()
    python3 - "$work/yield.0" <<'PY'
import json, sys
w = [json.loads(l)["share"] for l in open(sys.argv[1]) if '"window"' in l][1:]
mean = sum(w) / len(w) if w else 0
print(f"{'ok' if w and min(w) >= 40 else 'FAIL'} windows {', '.join(f'{x:.1f}' for x in w)}; mean {mean:.2f}")
PY
}
result=$(yield_small)
[[ $result == ok* ]] || result=$(yield_small)
if [[ $result == ok* ]]; then
    ok "a 60%+ batch guarantee of small kernels yielding to a busy latency slice: ${result#ok }"
else
    bad "a 60%+ batch guarantee of small kernels yielding to a busy latency slice (want 40% or more): ${result#FAIL }"
fi

# Every launch entry point is held, not only cuLaunchKernel (every group above): nine slices
# at 10% take turns, each launching through another of the driver's entry points, the
# deprecated ones it still exports included. One that libcarve let through unpaced took 99%
# of the GPU alone at a 30% cap (2026-11-25, before libcarve wrapped the multi-device and
# pre-CUDA-4.0 launches) and would leave the others short here.
LAUNCH_APIS=(kernel-ptsz ex ex-ptsz coop coop-ptsz multi-device launch grid grid-async)
shares small 10% 10% 10% 10% 10% 10% 10% 10% 10%
LAUNCH_APIS=()

# A multi-device launch is charged on each of its GPUs, in each stream's own context, and the
# caller's current context is left as it was: 1 ms kernels on two simulated GPUs at once in a
# 25% slice (tests/e2e/launch_multi; before libcarve wrapped the call, each GPU ran at 100%).
uuid2=$(python3 -c 'import uuid; print(uuid.uuid4())')
if out=$(CARVE_SIM_DEVICES=2 CARVE_SIM_UUIDS="GPU-$sim_uuid,GPU-$uuid2" timeout -k 5 60 \
    "$CARVE" run --simulate --quiet --compute 25% -- "$BUILD/tests/e2e/launch_multi" 25 2>&1); then
    ok "a multi-device launch on two GPUs in a 25% slice: $out"
else
    bad "a multi-device launch on two GPUs in a 25% slice: $out"
fi

# a tenant that forges a far queue end for every slice on the board (the activity object is
# every tenant's to write)
forge_queue_ends() { # for 5 s: every entry's queue end (the second word of its 64 bytes) 2^62
    python3 - "$board.activity" <<'PY'
import mmap, os, struct, sys, time
end = time.time() + 5
# made, and sized (the joiner truncates it to its size after creating it)
while (not os.path.exists(sys.argv[1]) or os.path.getsize(sys.argv[1]) < 64 * 64) and \
        time.time() < end:
    time.sleep(0.05)
rounds = 0
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    while time.time() < end:
        for i in range(64):
            m[i * 64 + 8:i * 64 + 16] = struct.pack("<Q", 1 << 62)
        rounds += 1
        time.sleep(0.1)
print(rounds)
PY
}
# The shares hold, for small and big kernels, measured up to three times as the groups above:
# a queue end forged far past its slice's last launch is passed over (common/board.c,
# queue_end_plausible). Believed, it moved every window's end on by its whole width; the 70%
# slice of big kernels ran into the 30% one's window, whose samples it lengthened until they
# marked its key varying, and the 30% slice got 15-16% in 3 runs of 20 (2026-11-28). A
# limiter that holds a slice for ever, or never paces, fails too.
forged_once() { # forged_once KIND: measure KIND at 30% 70% beside the forger
    forge_queue_ends >"$work/forged" 2>&1 &
    local forger=$!
    measure "$1" 30% 70%
    wait "$forger"
    forged=$(cat "$work/forged")
    [[ $forged =~ ^[0-9]+$ ]] && [ "$forged" -gt 10 ]
}
for kind in small big; do
    forged_first=""
    forged_once "$kind" || forged="$forged (too few rounds)"
    result=$(verdicts "$kind" 30% 70%)
    for try in second third; do
        [[ $result == *FAIL* ]] || break
        forged_first="$forged_first (passed on the $try try; before: $(echo "$result" | tr '\n' ' '))"
        forged_once "$kind" || forged="$forged (too few rounds)"
        result=$(verdicts "$kind" 30% 70%)
    done
    while read -r verdict rest; do
        if [ "$verdict" = ok ] && [[ $forged =~ ^[0-9]+$ ]]; then
            ok "$kind kernels at 30% 70% beside queue ends forged $forged times: $rest$forged_first"
        else
            bad "$kind kernels at 30% 70% beside forged queue ends (forger: $forged): $rest"
        fi
    done <<<"$result"
done

# a guarantee alone takes the idle GPU; next to a 50% cap it takes what the cap leaves
total() { python3 -c 'import json,sys; print([json.loads(l)["total_share"] for l in open(sys.argv[1]) if "total_share" in l][-1])' "$1"; }
"$CARVE" run --simulate --quiet --compute 20%+ -- "$LOAD" --kind big --seconds 2 >"$work/g.alone"
t=$(total "$work/g.alone")
if python3 -c "import sys; sys.exit(0 if $t >= 90 else 1)"; then
    ok "a 20%+ guarantee alone uses the idle GPU: $t%"
else
    bad "a 20%+ guarantee alone got $t%, want >= 90%"
fi
# up to three tries, as the groups above: a window of 39-44% came in about one run of five
# on the 2-vCPU VM, with every other window at 50.0 (2026-11-27, -28)
guarantee_beside_cap() {
    "$CARVE" run --simulate --quiet --compute 50% -- "$LOAD" --kind big --seconds 3 >"$work/c50" &
    local cap_pid=$!
    "$CARVE" run --simulate --quiet --compute 20%+ -- "$LOAD" --kind big --seconds 3 >"$work/g20"
    wait "$cap_pid"
    judge 50 "$work/g20"
}
earlier=''
beside_ok=1
for try in first second third; do
    line=$(guarantee_beside_cap) && beside_ok=0 && break
    earlier="$earlier; $try try: $line"
done
if [ "$beside_ok" -eq 0 ]; then
    ok "a 20%+ guarantee next to a busy 50% cap takes the other 50%: $line${earlier:+ (before$earlier)}"
else
    bad "a 20%+ guarantee next to a busy 50% cap, three tries$earlier (want 50)"
fi

# latency priority: a batch slice keeps a short queue while a latency slice is active
p99() { python3 -c 'import json,sys; print([json.loads(l)["p99_us"] for l in open(sys.argv[1]) if "p99_us" in l][-1])' "$1"; }
pair_latency() { # pair_latency TAG LATENCY_OPTS BATCH_OPTS (options split on spaces)
    # shellcheck disable=SC2086
    "$CARVE" run --simulate --quiet $3 -- "$LOAD" --kind big --seconds 3 >"$work/batch.$1" &
    local b=$!
    sleep 0.3
    # shellcheck disable=SC2086
    "$CARVE" run --simulate --quiet $2 -- "$LOAD" --kind latency --seconds 2 >"$work/lat.$1"
    wait "$b"
}
pair_latency plain "" ""
pair_latency prio "--priority latency" "--priority batch"
plain_p99=$(p99 "$work/lat.plain")
prio_p99=$(p99 "$work/lat.prio")
if python3 -c "import sys; sys.exit(0 if $prio_p99 * 2 < $plain_p99 else 1)"; then
    ok "latency p99 next to a batch slice: $plain_p99 us plain, $prio_p99 us with priorities"
else
    bad "priorities did not cut the latency p99 by half: $plain_p99 us plain, $prio_p99 us"
fi

# input
expect() { # expect FRAGMENT ARGS...: carve run ARGS exits 2 naming FRAGMENT
    local fragment=$1 err rc
    shift
    err=$("$CARVE" run --simulate "$@" -- true 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && [[ "$err" == *"$fragment"* ]]; then
        ok "carve run $* -> 2, says '$fragment'"
    else
        bad "carve run $* -> $rc (want 2 and '$fragment'): $err"
    fi
}
expect "is zero" --compute 0
expect "is zero" --compute 0%
expect "more than 100%" --compute 101%
expect "is negative" --compute -5%
expect "is not a percentage" --compute abc
expect "is not a percentage" --compute 30%%
expect "unknown priority \`urgent'" --priority urgent
expect "needs a value" --compute
"$CARVE" run --simulate --compute 60%+ -- sleep 3 &
holder=$!
sleep 0.5
expect "already hold guarantees of 60.00%" --compute 50%+
if "$CARVE" run --simulate --compute 40%+ -- true && "$CARVE" run --simulate --compute 50% -- true; then
    ok "next to a 60%+ guarantee, 40%+ and a 50% cap are accepted"
else
    bad "next to a 60%+ guarantee, 40%+ or a 50% cap was refused"
fi
wait "$holder"

if [ ! -e "$board" ] && [ ! -e "$board.activity" ]; then
    ok "the GPU's board is gone from /dev/shm after the last slice"
else
    bad "left in /dev/shm: $(ls "$board"*)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
