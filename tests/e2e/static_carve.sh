#!/usr/bin/env bash
# clang: yes (carve and its slices as clang built them; docs/internals.md)
# static_carve.sh - the statically linked carve and its dynamically linked twin
# (cli/dynamic_twin.c, cli/module.mk). Where bin/carve is static: `carve run --slice` runs
# without the twin at all; a command that loads NVML is run by lib/carve/carve-dynamic with
# the same arguments and prints what the twin prints, once; without the twin it fails with
# exit status 2 and a message that names it. Where bin/carve is linked dynamically (no
# libc.a, or a sanitizer build) there is no twin, and commands that load NVML run in carve.
#
#   BUILD=build bash tests/e2e/static_carve.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/e2e/private_carved.bash
source tests/e2e/private_carved.bash
TWIN=$BUILD/lib/carve/carve-dynamic

has_interp() { # has_interp FILE: a dynamically linked executable (it names a loader)
    local headers
    headers=$(readelf -l "$1" 2>&1) || return 2
    [[ "$headers" == *"INTERP"* ]]
}

export CARVE_SIM_MIG=1 CARVE_SIM_MODEL=H100-80GB
nosock=$work/nobody.sock # a standalone run: no carved listens here

if has_interp "$CARVE"; then
    check "bin/carve is linked dynamically, so it has no twin" "[ ! -e '$TWIN' ]"
    out=$(CARVE_SOCKET=$nosock "$CARVE" mig list --simulate 2>&1)
    check "a command that loads NVML runs in carve itself" "[[ \"\$out\" == *'MIG on'* ]]"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi

ok "bin/carve is linked statically"
if [ -x "$TWIN" ] && has_interp "$TWIN"; then ok "lib/carve/carve-dynamic is linked dynamically"; else bad "lib/carve/carve-dynamic is missing or static"; fi

# the same command through the hand-over and straight from the twin: the same output, once
a=$(CARVE_SOCKET=$nosock "$CARVE" mig list --simulate 2>&1)
rca=$?
b=$(CARVE_SOCKET=$nosock "$TWIN" mig list --simulate 2>&1)
rcb=$?
check "carve mig list (NVML) prints what carve-dynamic prints (exit $rca and $rcb)" \
    "[ $rca -eq 0 ] && [ $rcb -eq 0 ] && [[ \"\$a\" == *'MIG on'* ]] && [ \"\$a\" = \"\$b\" ]"
out=$(CARVE_SOCKET=$nosock "$CARVE" run --simulate --memory 1GiB -- \
    sh -c 'echo "cap=$CARVE_SLICE parent=$(readlink /proc/$PPID/exe)"; exit 7' 2>&1)
rc=$?
check "a standalone carve run (NVML) is run by carve-dynamic, its command once, exit status kept ($out)" \
    "[ $rc -eq 7 ] && [ \"\$(grep -c '^cap=/.* parent=.*/carve-dynamic$' <<<\"\$out\")\" -eq 1 ]"
mkdir -p "$work/elsewhere"
cp "$CARVE" "$work/elsewhere/carve"
out=$(CARVE_SOCKET=$nosock CARVE_LIBDIR=$BUILD/lib/carve "$work/elsewhere/carve" run --simulate --memory 1GiB -- true 2>&1)
rc=$?
check "a carve copied elsewhere finds carve-dynamic through CARVE_LIBDIR (exit $rc: ${out:0:200})" "[ $rc -eq 0 ]"

# a copy of the build without the twin
tree=$work/tree
mkdir -p "$tree/bin" "$tree/lib"
cp "$CARVE" "$tree/bin/carve"
cp -r "$BUILD/lib/carve" "$tree/lib/carve"
rm -f "$tree/lib/carve/carve-dynamic"

start_carved 1s
"$CARVE" slice create static-test --memory 1GiB >/dev/null 2>&1 || bad "carve slice create"
out=$("$tree/bin/carve" run --simulate --slice static-test -- sh -c 'echo "slice=$CARVE_SLICE"' 2>&1)
rc=$?
check "carve run --slice needs no carve-dynamic (exit $rc: ${out:0:200})" \
    "[ $rc -eq 0 ] && [[ \"\$out\" == 'slice=/carve.d.static-test.'* ]]"
out=$("$tree/bin/carve" run --simulate --memory 1GiB -- true 2>&1)
rc=$?
check "through carved, carve run --memory needs no carve-dynamic (exit $rc: ${out:0:200})" "[ $rc -eq 0 ]"
out=$(CARVE_SOCKET=$nosock "$tree/bin/carve" run --simulate --memory 1GiB -- true 2>&1)
rc=$?
check "without carve-dynamic, a standalone run exits 2 and names it (exit $rc: ${out:0:300})" \
    "[ $rc -eq 2 ] && [[ \"\$out\" == *'lib/carve/carve-dynamic'*'rebuild carve'*'CARVE_LIBDIR'* ]]"
"$CARVE" slice delete static-test >/dev/null 2>&1 || bad "carve slice delete"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
