#!/usr/bin/env bash
# san: yes (no carve program runs: run-all.sh itself on suites of its own)
# run_all.sh - tests/run-all.sh's leak check, on a tree of stand-in suites: a suite that
# leaves an object of carve's in /dev/shm fails, naming it, wherever TMPDIR is (with a
# private /dev/shm per suite, a TMPDIR in /dev/shm hid the list of what was left); an e2e
# script marked `# slow: yes` is skipped with CARVE_TEST_SKIP_SLOW set, and run without.
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
trap 'rm -rf "$dir"; rm -f "/dev/shm/$leak"' EXIT

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
out=$(cd "$dir/tree" && env -u CARVE_TEST_SKIP_SLOW bash tests/run-all.sh build 2>&1) # test.sh sets it for clang
check "without it both run: $(echo "$out" | tail -n 1)" \
    '[[ $out == *"e2e/marked"*"PASS"* ]] && [[ $out == *"2 passed, 0 failed"* ]]'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
