# tap.bash - sourced by e2e scripts (not a test itself: run-all.sh runs tests/e2e/*.sh only):
# their pass/fail counters and the check that a carve command fails as it should.
#   passed, failed          the counts; the script prints "$passed passed, $failed failed"
#   ok DESC, bad DESC       a passed or failed check
#   expect STATUS FRAGMENT ARGS...
#                           "$CARVE" ARGS exits STATUS and prints FRAGMENT (stdout or stderr)
passed=0
failed=0

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }

expect() {
    local want=$1 fragment=$2 out rc
    shift 2
    out=$("$CARVE" "$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ] && [[ "$out" == *"$fragment"* ]]; then
        ok "carve $* -> $rc, says '$fragment'"
    else
        bad "carve $* -> $rc (want $want, '$fragment'), output: ${out:0:600}"
    fi
}
