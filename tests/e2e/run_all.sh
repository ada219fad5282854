#!/usr/bin/env bash
# run_all.sh - tests/run-all.sh's leak check, on a tree of stand-in suites: a suite that
# leaves an object of carve's in /dev/shm fails, naming it, wherever TMPDIR is (with a
# private /dev/shm per suite, a TMPDIR in /dev/shm hid the list of what was left); an e2e
# script marked `# slow: yes` is skipped with CARVE_TEST_SKIP_SLOW set, and run without;
# with CARVE_TEST_JOBS=3 (as root, where each suite gets a mount namespace) suites run at once,
# each with a /run/carve of its own, and one marked `# alone: yes` runs with none beside it;
# with CARVE_TEST_JOBS=1 one at a time; CARVE_TEST_JOBS=0 is refused; stopped by TERM, it
# stops the suites it runs.
#
#   BUILD=build bash tests/e2e/run_all.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
# shellcheck disable=SC2016  # the checks are strings, eval'd by check()
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

passed=0
failed=0
dir=$(mktemp -d)
leak=carve.0.$$.leaktest
trap 'rm -rf "$dir" "${marks:-}"; rm -f "/dev/shm/$leak"' EXIT

check() { if eval "$2"; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); fi; }

mkdir -p "$dir/tree/tests/e2e" "$dir/tree/build/tests/unit"
cp tests/run-all.sh tests/shm-private.sh "$dir/tree/tests/"
printf '#!/bin/sh\n: >/dev/shm/%s\n' "$leak" >"$dir/tree/build/tests/unit/leaker"
printf '#!/bin/sh\nexit 0\n' >"$dir/tree/build/tests/unit/clean"
chmod +x "$dir/tree/build/tests/unit/leaker" "$dir/tree/build/tests/unit/clean"
for tmp in /tmp /dev/shm; do
    out=$(cd "$dir/tree" && TMPDIR=$tmp bash tests/run-all.sh build 2>&1)
    rm -f "/dev/shm/$leak"
    check "TMPDIR=$tmp: the suite that leaves $leak fails, naming it: $(echo "$out" | grep "unit/leaker ")" \
        '[[ $out == *"unit/leaker"*"FAIL"*"left in /dev/shm: $leak"* ]]'
    check "TMPDIR=$tmp: the clean suite passes: $(echo "$out" | tail -n 1)" \
        '[[ $out == *"unit/clean"*"PASS"* ]] && [[ $out == *"1 passed, 1 failed"* ]]'
done

# the slow marker: two stand-in e2e scripts, one marked, on a tree without unit tests
rm -f "$dir/tree/build/tests/unit/"*
printf '#!/usr/bin/env bash\n# slow: yes (a stand-in)\nexit 0\n' >"$dir/tree/tests/e2e/marked.sh"
printf '#!/usr/bin/env bash\nexit 0\n' >"$dir/tree/tests/e2e/plain.sh"
out=$(cd "$dir/tree" && CARVE_TEST_SKIP_SLOW=1 bash tests/run-all.sh build 2>&1)
check "CARVE_TEST_SKIP_SLOW=1: the marked script is skipped, the other runs: $(echo "$out" | tail -n 1)" \
    '[[ $out == *"e2e/marked"*"skip"* ]] && [[ $out == *"e2e/plain"*"PASS"* ]] && [[ $out == *"1 passed, 0 failed"* ]]'
out=$(cd "$dir/tree" && env -u CARVE_TEST_SKIP_SLOW bash tests/run-all.sh build 2>&1)
check "without it both run: $(echo "$out" | tail -n 1)" \
    '[[ $out == *"e2e/marked"*"PASS"* ]] && [[ $out == *"2 passed, 0 failed"* ]]'
# CARVE_TEST_ONLY_MARKED: only the scripts that carry the word run (the clang build by hand)
printf '#!/usr/bin/env bash\n# clang: yes (a stand-in)\nexit 0\n' >"$dir/tree/tests/e2e/chosen.sh"
out=$(cd "$dir/tree" && CARVE_TEST_ONLY_MARKED=clang bash tests/run-all.sh build 2>&1)
check "CARVE_TEST_ONLY_MARKED=clang: only the script marked '# clang: yes' runs: $(echo "$out" | tail -n 1)" \
    '[[ $out == *"e2e/chosen"*"PASS"* ]] && [[ $out == *"e2e/plain"*"skip"*"not marked \"# clang: yes\""* ]] && [[ $out == *"1 passed, 0 failed"* ]]'
out=$(cd "$dir/tree" && CARVE_TEST_ONLY_MARKED='.*' bash tests/run-all.sh build 2>&1)
rc=$?
check "CARVE_TEST_ONLY_MARKED='.*' is refused (exit $rc): $out" \
    '[ "$rc" -eq 2 ] && [[ $out == *"must be a word of small letters, not '"'.*'"'"* ]]'

# the suites' python3 is Debian's, whatever comes first in PATH (a pyenv shim here took over
# half the CPU of four suites at once)
if [ -x /usr/bin/python3 ]; then
    rm -f "$dir/tree/tests/e2e/"*
    printf '#!/usr/bin/env bash\nreadlink -f "$(command -v python3)" >"$RUN_ALL_PY"\n' \
        >"$dir/tree/tests/e2e/which_python.sh"
    shim=$(mktemp -d)
    printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$shim/python3"
    chmod +x "$shim/python3"
    out=$(cd "$dir/tree" && PATH="$shim:$PATH" RUN_ALL_PY=$dir/py bash tests/run-all.sh build 2>&1)
    check "a python3 first in PATH ($shim/python3): the suites run $(cat "$dir/py" 2>/dev/null)" \
        '[ "$(cat "$dir/py" 2>/dev/null)" = "$(readlink -f /usr/bin/python3)" ]'
    rm -rf "$shim"
fi

# a failed check far from the end of its suite's log is shown, not only the log's last lines
rm -f "$dir/tree/tests/e2e/"*
printf '#!/usr/bin/env bash\necho "FAIL - the early one"\nfor i in $(seq 60); do echo "ok - $i"; done\nexit 1\n' \
    >"$dir/tree/tests/e2e/early.sh"
out=$(cd "$dir/tree" && bash tests/run-all.sh build 2>&1)
check "a failed check 60 lines before the end of its log is shown: $(echo "$out" | grep -c 'the early one') time(s)" \
    '[[ $out == *"failed checks in"*"FAIL - the early one"*"last 40 lines"* ]]'

# Suites at once. Two stand-ins meet: each marks its start and waits up to 3 s for the
# other's mark, so both pass only when they run at the same time. Each also writes a file
# into /run/carve and passes only when the other's is not there (a /run/carve of its own),
# and marks itself busy while it runs. A third, marked `# alone: yes`, fails when it sees a
# busy mark or the other two see it running.
rm -f "$dir/tree/tests/e2e/"*
# not under TMPDIR: a TMPDIR in /dev/shm is not the stand-ins' /dev/shm
marks=$(mktemp -d -p /tmp run_all-marks.XXXXXX)
export RUN_ALL_MARKS=$marks
for pair in "a b" "b a"; do
    read -r me other <<<"$pair"
    cat >"$dir/tree/tests/e2e/meet_$me.sh" <<SH
#!/usr/bin/env bash
m=\$RUN_ALL_MARKS
touch "\$m/busy.$me" "\$m/started.$me" || exit 3
echo $me >"/run/carve/stand-in.$me.$$" || exit 3
for _ in \$(seq 30); do [ -e "\$m/started.$other" ] && break; sleep 0.1; done
[ -e "\$m/started.$other" ] || { echo "$other never started beside me"; rm -f "\$m/busy.$me"; exit 1; }
sleep 0.3
rc=0
[ -e "/run/carve/stand-in.$other.$$" ] && { echo "$other's file is in my /run/carve"; rc=4; }
[ -e "\$m/alone" ] && { echo "the lone suite ran beside me"; rc=5; }
rm -f "\$m/busy.$me"
exit \$rc
SH
done
cat >"$dir/tree/tests/e2e/lone.sh" <<'SH'
#!/usr/bin/env bash
# alone: yes (a stand-in)
m=$RUN_ALL_MARKS
touch "$m/alone" || exit 3
sleep 0.5
busy=$(cd "$m" && ls busy.* 2>/dev/null)
rm -f "$m/alone"
[ -z "$busy" ] || { echo "ran beside $busy"; exit 1; }
SH
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
    out=$(cd "$dir/tree" && CARVE_TEST_JOBS=3 bash tests/run-all.sh build 2>&1)
    check "CARVE_TEST_JOBS=3: the two stand-ins meet, the lone one runs by itself, each /run/carve is its own: $(echo "$out" | tail -n 1)" \
        '[[ $out == *"up to 3 at once"* ]] && [[ $out == *"3 passed, 0 failed"* ]]'
    [[ $out == *"3 passed, 0 failed"* ]] || echo "$out" | sed 's/^/    /'
    check "nothing the stand-ins wrote is left in the machine's /run/carve" \
        '! compgen -G "/run/carve/stand-in.*.$$" >/dev/null'
    rm -f "$marks/"*
    # one at a time: whichever starts first waits for the other in vain
    out=$(cd "$dir/tree" && CARVE_TEST_JOBS=1 bash tests/run-all.sh build 2>&1)
    check "CARVE_TEST_JOBS=1: one suite at a time (one stand-in waits in vain): $(echo "$out" | tail -n 1)" \
        '[[ $out == *"up to 1 at once"* ]] && [[ $out == *"never started beside me"* ]] && [[ $out == *"2 passed, 1 failed"* ]]'
    rm -f "$marks/"* "/run/carve/stand-in."*".$$"
else
    echo "skip - suites at once: not root, or no unshare (run-all.sh then runs them one at a time)"
fi
out=$(cd "$dir/tree" && CARVE_TEST_JOBS=0 bash tests/run-all.sh build 2>&1)
rc=$?
check "CARVE_TEST_JOBS=0 is refused (exit $rc), naming it: $out" \
    '[ "$rc" -eq 2 ] && [[ $out == *"CARVE_TEST_JOBS must be a whole number of at least 1, not '"'0'"'"* ]]'

# Stopped, it stops its suites: one that sleeps, and whose sleep would outlive run-all.sh
rm -f "$dir/tree/tests/e2e/"* "$marks/"*
cat >"$dir/tree/tests/e2e/sleeper.sh" <<'SH'
#!/usr/bin/env bash
sleep 60 &
echo $! >"$RUN_ALL_MARKS/sleep.pid"
wait
SH
(cd "$dir/tree" && exec bash tests/run-all.sh build >"$dir/stopped.out" 2>&1) &
runner=$!
for _ in $(seq 50); do [ -s "$marks/sleep.pid" ] && break; sleep 0.1; done
kill -TERM "$runner"
wait "$runner"
rc=$?
sleeper=$(cat "$marks/sleep.pid" 2>/dev/null)
# gone, or a zombie that init has yet to reap
alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "${st%% *}" != Z ]; }
for _ in $(seq 30); do [ -n "$sleeper" ] && alive "$sleeper" || break; sleep 0.1; done
check "TERM: run-all.sh ends by it (status $rc) and its suite's sleep (pid ${sleeper:-none}) is gone" \
    '[ "$rc" -eq 143 ] && [ -n "$sleeper" ] && ! alive "$sleeper"'
[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
