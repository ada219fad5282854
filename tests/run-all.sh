#!/usr/bin/env bash
# run-all.sh - run every test suite of one build directory and count them.
#
#   bash tests/run-all.sh BUILDDIR
#
# A suite is one process: each executable in BUILDDIR/tests/unit/ (cmocka) and each
# tests/e2e/*.sh run with BUILD=BUILDDIR, each with a timeout of 300 s (the unit tests' was
# 120 s: the planner's test_fleet under ASan took 78-105 s alone, and passed 120 s beside
# three other suites on a 2-CPU machine). Pass or fail is the exit
# status; a suite that leaves carve's objects in /dev/shm fails too. Where it can (as root,
# with unshare), each suite runs in a mount namespace of its own with its own /dev/shm and
# /run/carve (tests/shm-private.sh), so that carve at work elsewhere on the machine (a carved,
# another build's tests, a benchmark) and the suites cannot see or blame each other's
# objects. Then up to CARVE_TEST_JOBS suites (default 4) run at once: most suites wait on
# daemons, ticks and timeouts far more than they compute (on a 2-CPU machine the gcc build's
# e2e suites took 430 s one after another for 130 s of CPU). A script whose first lines carry
# `# alone: yes` (its checks time what shares of the GPU tenants got: a busy CPU beside it
# makes them miss) runs with no other suite beside it. Without a namespace of each suite's
# own, the suites run one at a time.
#
# For a sanitizer build (ASan in its binaries) the e2e scripts are skipped unless their first
# lines carry `# san: yes`: an ASan libcarve cannot be LD_PRELOADed into arbitrary programs.
# With CARVE_TEST_SKIP_SLOW set, the scripts whose first lines carry `# slow: yes` are skipped
# too. With CARVE_TEST_ONLY_MARKED=WORD, only the scripts whose first lines carry
# `# WORD: yes` run (`CARVE_TEST_ONLY_MARKED=clang ... build-clang`: the clang build's unit
# suites and the scripts marked for it, docs/internals.md). Logs go to BUILDDIR/test-logs/,
# and failed.txt there lists the logs of the suites that failed. A line is printed as each
# suite ends; the last line is `N passed, N failed`. Stopped by INT (Ctrl-C) or TERM, it
# stops the suites still running, then dies by that signal (status 130 or 143).
set -uo pipefail

UNIT_TIMEOUT=${UNIT_TIMEOUT:-300}
E2E_TIMEOUT=${E2E_TIMEOUT:-300}
TAIL_LINES=40
# a failed check's line: an e2e script's (tests/e2e/tap.bash) or cmocka's
FAILED_CHECK='^(FAIL - |\[  (FAILED|ERROR) +\] )'

cd "$(dirname "$0")/.." || exit 2

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILDDIR" >&2
    exit 2
fi
build=${1%/}
if [ ! -d "$build" ]; then
    echo "run-all: build directory '$build' does not exist; run make first" >&2
    exit 2
fi
jobs=${CARVE_TEST_JOBS:-4}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    echo "run-all: CARVE_TEST_JOBS must be a whole number of at least 1, not '$jobs'" >&2
    exit 2
fi
if [ -n "${CARVE_TEST_ONLY_MARKED:-}" ] && ! [[ $CARVE_TEST_ONLY_MARKED =~ ^[a-z]+$ ]]; then
    echo "run-all: CARVE_TEST_ONLY_MARKED must be a word of small letters, not '$CARVE_TEST_ONLY_MARKED'" >&2
    exit 2
fi
logdir="$build/test-logs"
mkdir -p "$logdir"
# the logs of this run's failed suites, one path a line, for scripts/test.sh's final summary
failed_list="$logdir/failed.txt"
: >"$failed_list"

passed=0
failed=0
skipped=0
failures=()

# A build is a sanitizer build when its binaries carry the ASan runtime hooks.
is_san_build() {
    local f
    for f in "$build/lib/carve/libcarve.so" "$build/bin/carve" "$build"/tests/unit/*; do
        [ -f "$f" ] || continue
        grep -qa '__asan_init' "$f" && return 0
        return 1
    done
    case "$(basename "$build")" in *san*) return 0 ;; esac
    return 1
}

# carve's shared-memory objects: slices (carve.UID.PID.RAND, carved's carve.d.NAME.RAND) and
# compute boards; not the simulated GPU's own state (carve-sim.*), which lasts like a device.
carve_shm() { find /dev/shm -maxdepth 1 -name 'carve*' ! -name 'carve-sim.*' -printf '%f\n' 2>/dev/null | sort; }

# A mount namespace of each suite's own, where one can be made: else the suites share the
# machine's /dev/shm, and what a suite left is told by comparing it before and after.
private_shm=0
if [ "$(id -u)" -eq 0 ] && [ -z "${CARVE_TEST_SHARED_SHM:-}" ] &&
    unshare -m --propagation private bash tests/shm-private.sh /dev/null true 2>/dev/null; then
    private_shm=1
fi
if [ "$private_shm" -eq 0 ] && [ "$jobs" -gt 1 ]; then
    echo "run-all: one suite at a time: no mount namespace of each suite's own here (it needs" \
        "root, unshare and a writable /run; CARVE_TEST_SHARED_SHM unset)"
    jobs=1
fi
if [ "$jobs" -gt 1 ] && { [ "${BASH_VERSINFO[0]}" -lt 5 ] ||
    { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; }; then
    echo "run-all: one suite at a time: bash $BASH_VERSION has no 'wait -n -p' (5.1 has)"
    jobs=1
fi
# beside the logs, not in TMPDIR: a TMPDIR in /dev/shm is not the suite's /dev/shm, and what the
# suite left, written there, was lost (every suite passed the leak check)
scratch=$(mktemp -d "$logdir/run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The suites' python3 is Debian's (scripts/install-deps.sh installs it, with python3-yaml), not
# a version manager's shim found first in PATH: pyenv's python3 is a shell script that starts
# a dozen processes a call, and with the suites' thousands of calls those took over half the
# CPU of four suites at once on a 2-CPU machine (perf, 2026-11-29), and CI 1375 s.
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
    mkdir "$scratch/bin" && ln -s /usr/bin/python3 "$scratch/bin/python3" &&
        PATH="$(cd "$scratch/bin" && pwd):$PATH" && export PATH
fi

# The queue: suite I is names[I], run with limits[I] seconds as cmds[I] (words quoted for
# eval), logged in logs[I]; alone[I] is 1 for a suite that runs with no other.
names=() logs=() limits=() cmds=() alone=()
queue() { # queue NAME LOG LIMIT ALONE CMD...
    local i=${#names[@]}
    names[i]=$1 logs[i]=$2 limits[i]=$3 alone[i]=$4
    shift 4
    cmds[i]=$(printf '%q ' "$@")
}

# run_one I: run suite I (in the background) and write "RC SECONDS" to $scratch/rc.I and the
# objects of carve's it left in /dev/shm, one a line, to $scratch/left.I. A suite that passes
# but leaves objects in /dev/shm fails: they outlive every process (carved_numbers.sh left six
# slices a run until 2026-11-25). A TERM (stop_suites) goes on to the suite's timeout, which
# passes it on to the suite's process group; one that comes before the suite starts keeps it
# from starting.
run_one() {
    local i=$1 rc start before="" tpid="" stopped=0
    local -a cmd
    trap 'stopped=1; [ -z "$tpid" ] || kill -TERM "$tpid" 2>/dev/null' TERM
    eval "cmd=(${cmds[i]})"
    start=$(date +%s)
    if [ "$private_shm" -eq 1 ]; then
        cmd=(unshare -m --propagation private bash tests/shm-private.sh "$scratch/left.$i" "${cmd[@]}")
    else
        before=$(carve_shm)
    fi
    [ "$stopped" -eq 0 ] || exit 143
    timeout --kill-after=10 "${limits[i]}" "${cmd[@]}" >"${logs[i]}" 2>&1 </dev/null &
    tpid=$!
    [ "$stopped" -eq 0 ] || kill -TERM "$tpid" 2>/dev/null
    wait "$tpid"
    rc=$?
    while kill -0 "$tpid" 2>/dev/null; do # the TERM's trap ended the wait, not the suite
        wait "$tpid"
        rc=$?
    done
    [ "$private_shm" -eq 1 ] || comm -13 <(echo "$before") <(carve_shm) >"$scratch/left.$i"
    echo "$rc $(( $(date +%s) - start ))" >"$scratch/rc.$i"
}

# ended I: print suite I's result line and count it.
ended() {
    local i=$1 name=${names[$1]} log=${logs[$1]} limit=${limits[$1]} rc=1 secs=0 left=""
    read -r rc secs <"$scratch/rc.$i"
    [ -f "$scratch/left.$i" ] && left=$(tr '\n' ' ' <"$scratch/left.$i")
    if [ "$rc" -eq 0 ] && [ -n "$left" ]; then
        echo "left in /dev/shm: $left" >>"$log"
        printf '  %-40s FAIL  (passed, but left in /dev/shm: %s)\n' "$name" "$left"
    elif [ "$rc" -eq 0 ]; then
        printf '  %-40s PASS  (%ds)\n' "$name" "$secs"
        passed=$((passed + 1))
        return
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        printf '  %-40s FAIL  (timed out after %ds)\n' "$name" "$limit"
    else
        printf '  %-40s FAIL  (exit %d, %ds)\n' "$name" "$rc" "$secs"
    fi
    failed=$((failed + 1))
    failures+=("$name")
    echo "$log" >>"$failed_list"
    if [ "$rc" -ne 0 ]; then
        # a failed check may come long before the end (cli_edge failed one of 253 in CI, and
        # its last lines were all passes)
        if grep -qE "$FAILED_CHECK" "$log"; then
            echo "  ---- the failed checks in $log (at most 10) ----"
            grep -E "$FAILED_CHECK" "$log" | head -n 10 | cut -c1-400 | sed 's/^/  | /'
        fi
        echo "  ---- last $TAIL_LINES lines of $log ----"
        tail -n "$TAIL_LINES" "$log" | sed 's/^/  | /'
        echo "  ----"
    fi
}

# marked SCRIPT WORD: whether SCRIPT's first lines carry `# WORD: yes`
marked() { head -n 5 "$1" | grep -q "^# $2: yes"; }
san=0
is_san_build && san=1

units=0
for t in "$build"/tests/unit/*; do
    if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
    queue "unit/$(basename "$t")" "$logdir/unit-$(basename "$t").log" "$UNIT_TIMEOUT" 0 "$t"
    units=$((units + 1))
done
scripts=0
for s in tests/e2e/*.sh; do
    [ -f "$s" ] || continue
    scripts=$((scripts + 1))
    name="e2e/$(basename "$s" .sh)"
    if [ "$san" -eq 1 ] && ! marked "$s" san; then
        printf '  %-40s skip  (sanitizer build; not marked "# san: yes")\n' "$name"
        skipped=$((skipped + 1))
        continue
    fi
    if [ -n "${CARVE_TEST_ONLY_MARKED:-}" ] && ! marked "$s" "$CARVE_TEST_ONLY_MARKED"; then
        printf '  %-40s skip  (CARVE_TEST_ONLY_MARKED; not marked "# %s: yes")\n' "$name" \
            "$CARVE_TEST_ONLY_MARKED"
        skipped=$((skipped + 1))
        continue
    fi
    if [ -n "${CARVE_TEST_SKIP_SLOW:-}" ] && marked "$s" slow; then
        printf '  %-40s skip  (CARVE_TEST_SKIP_SLOW; marked "# slow: yes")\n' "$name"
        skipped=$((skipped + 1))
        continue
    fi
    lone=0
    marked "$s" alone && lone=1
    queue "$name" "$logdir/e2e-$(basename "$s" .sh).log" "$E2E_TIMEOUT" "$lone" \
        env BUILD="$build" bash "$s"
done
[ "$units" -gt 0 ] || echo "  (no unit tests built in $build/tests/unit)"
[ "$scripts" -gt 0 ] || echo "  (no end-to-end scripts in tests/e2e)"

# The order of starting: the suites that run alone, then the slow ones (so that the longest
# do not start last and run on by themselves), then the rest as listed.
order=()
for i in "${!names[@]}"; do [ "${alone[i]}" -eq 1 ] && order+=("$i"); done
for i in "${!names[@]}"; do
    [ "${alone[i]}" -eq 0 ] && [[ ${names[i]} == e2e/* ]] && marked "tests/${names[i]}.sh" slow && order+=("$i")
done
for i in "${!names[@]}"; do
    [ "${alone[i]}" -eq 0 ] && ! { [[ ${names[i]} == e2e/* ]] && marked "tests/${names[i]}.sh" slow; } && order+=("$i")
done

echo "== ${#names[@]} suites of $build (tests/unit, tests/e2e), up to $jobs at once"
declare -A running=() # pid -> suite
# Stopped (Ctrl-C, a CI job's end): stop the suites running too, then die by the same signal,
# so that a caller (scripts/test.sh) stops as well rather than go on to its next step.
stop_suites() {
    kill -TERM "${!running[@]}" 2>/dev/null
    wait
}
trap 'stop_suites; trap - INT; kill -INT $$' INT
trap 'stop_suites; trap - TERM; kill -TERM $$' TERM
lone_running=0
next=0
while [ "$next" -lt "${#order[@]}" ] || [ "${#running[@]}" -gt 0 ]; do
    while [ "$next" -lt "${#order[@]}" ] && [ "$lone_running" -eq 0 ]; do
        i=${order[next]}
        if [ "${alone[i]}" -eq 1 ]; then
            [ "${#running[@]}" -eq 0 ] || break
            lone_running=1
        elif [ "${#running[@]}" -ge "$jobs" ]; then
            break
        fi
        run_one "$i" &
        running[$!]=$i
        next=$((next + 1))
    done
    done_pid=
    if [ "$jobs" -eq 1 ]; then
        done_pid=${!running[*]}
        wait "$done_pid"
    else
        wait -n -p done_pid "${!running[@]}"
    fi
    if [ -z "$done_pid" ] || [ -z "${running[$done_pid]:-}" ]; then
        echo "run-all: lost track of the suites running (wait said '$done_pid')" >&2
        exit 2
    fi
    i=${running[$done_pid]}
    unset "running[$done_pid]"
    [ "${alone[i]}" -eq 1 ] && lone_running=0
    ended "$i"
done

if [ "$failed" -gt 0 ]; then
    echo "failed in $build: ${failures[*]}"
fi
[ "$skipped" -gt 0 ] && echo "($skipped skipped)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
