#!/usr/bin/env bash
# install.sh - `make install` and `make uninstall` (install.mk), staged with DESTDIR: every
# program, library, man page, the unit, the bash completion and the shared files land where
# install.mk says; the installed carve runs a command in a slice on the installed libcarve
# and simulated GPU with no CARVE_LIBDIR; the installed carved checks the installed example
# config; carved.service names the installed carved; the completion loads; every man page
# renders without a groff warning, and every carve page a page refers to is installed;
# uninstall leaves nothing behind.
#
#   BUILD=build bash tests/e2e/install.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/e2e/private_carved.bash
source tests/e2e/private_carved.bash
unset CARVE_LIBDIR
export CARVE_SOCKET=$work/nobody.sock # a standalone run: no carved listens here

root=$work/root
prefix=/opt/carve-test # not /usr/local: the unit's path must follow PREFIX
inst=$root$prefix
# under umask 077, as on a hardened root: what is installed has its own modes, not the umask's
make_install() { (umask 077 && make --no-print-directory BUILD="$BUILD" DESTDIR="$root" PREFIX="$prefix" "$@"); }

# -q: the build is up to date, so that install copies this build and compiles nothing
make --no-print-directory -q BUILD="$BUILD" product
rc=$?
check "the build is up to date before install (make -q product: exit $rc)" "[ $rc -eq 0 ]"
if [ $rc -ne 0 ]; then # install would build it, with make's default compiler and flags
    echo "$passed passed, $failed failed (stopped: run make for $BUILD first)"
    exit 1
fi
# a PREFIX with a space: refused before anything is written (its second word was a
# directory made relative to the checkout: carve-install-space/bin and the rest)
out=$(make --no-print-directory BUILD="$BUILD" DESTDIR="$root" PREFIX="/opt/x carve-install-space" install 2>&1)
rc=$?
made=$(ls -d carve-install-space "$root" 2>/dev/null | tr '\n' ' ')
check "make install PREFIX='/opt/x carve-install-space' is refused and writes nothing (exit $rc; made: ${made:-nothing})" \
    "[ $rc -ne 0 ] && [[ \"\$out\" == *'cannot hold a space'* ]] && [ -z '$made' ]"
rm -rf carve-install-space "$root"
make_install install >"$work/install.log" 2>&1
rc=$?
check "make install DESTDIR=... PREFIX=$prefix exits 0 (exit $rc)" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || tail -n 20 "$work/install.log"

expected=(bin/carve bin/carved bin/carve-slurm-cleanup lib/carve/libcarve.so lib/carve/carve-top
    lib/carve/sim/libcuda.so.1 lib/carve/sim/libnvidia-ml.so.1 lib/carve/sim/bin/nvidia-smi
    lib/carve/sim/bin/nvidia-cuda-mps-control lib/carve/sim/bin/nvidia-cuda-mps-server
    share/carve/carved.conf.example share/carve/grafana-dashboard.json share/carve/prometheus-alerts.yml
    lib/systemd/system/carved.service share/man/man1/carve-ps.1
    share/bash-completion/completions/carve)
for opt in carve-dynamic spank_carve.so; do
    [ -e "$BUILD/lib/carve/$opt" ] && expected+=("lib/carve/$opt")
done
for page in docs/man/*.[18]; do
    expected+=("share/man/man${page##*.}/$(basename "$page")")
done
missing=()
for f in "${expected[@]}"; do [ -f "$inst/$f" ] || missing+=("$f"); done
check "every file is installed (${#expected[@]}; missing: ${missing[*]:-none})" "[ ${#missing[@]} -eq 0 ]"
extra=$(cd "$inst" && find . -type f | sed 's|^\./||' | sort | comm -23 - <(printf '%s\n' "${expected[@]}" | sort))
check "nothing else is installed (${extra:-nothing})" "[ -z '$extra' ]"
links=$(for l in lib/carve/sim/libcuda.so lib/carve/sim/libnvidia-ml.so share/bash-completion/completions/carved; do
    readlink "$inst/$l"; done | tr '\n' ' ')
check "the simulated libraries' dev names and carved's completion are relative links ($links)" \
    "[ '$links' = 'libcuda.so.1 libnvidia-ml.so.1 carve ' ]"
wrong_mode=$(cd "$inst" && { find bin lib/carve -type f ! -perm 755; find share -type f ! -perm 644; } | tr '\n' ' ')
check "programs and libraries are 755, the rest 644 (${wrong_mode:-all})" "[ -z '$wrong_mode' ]"
absent=$(for opt in carve-dynamic spank_carve.so; do
    [ -e "$BUILD/lib/carve/$opt" ] || [ ! -e "$inst/lib/carve/$opt" ] || echo "$opt"; done)
check "what this build lacks is not installed (${absent:-as it should})" "[ -z '$absent' ]"

# the installed carve, from where it is, with nothing telling it where its libraries are
out=$("$inst/bin/carve" --version 2>&1)
check "the installed carve runs ($out)" "[ \"\$out\" = \"\$('$CARVE' --version)\" ]"
out=$("$inst/bin/carve" run --simulate --memory 1GiB -- sh -c \
    'grep -o "/[^ ]*/libcarve.so$" /proc/self/maps | sort -u; echo "libs $LD_LIBRARY_PATH"' 2>&1)
check "carve run preloads the installed libcarve and puts the installed simulated driver first ($out)" \
    "[[ \"\$out\" == '$inst/lib/carve/libcarve.so'\$'\\n''libs $inst/lib/carve/sim'* ]]"
out=$("$inst/bin/carve" run --simulate --memory 1GiB -- "$BUILD/bench/memhog" --max 2048 --hold 0 2>&1)
check "a tenant of the installed carve sees its cap and is refused past it ($(grep -m1 'cuMemGetInfo' <<<"$out"))" \
    "[[ \"\$out\" == *'total 1024 MiB'* ]] && [[ \"\$out\" == *'CUDA_ERROR_OUT_OF_MEMORY'* ]]"
out=$(CARVE_SIM_MIG=1 CARVE_SIM_MODEL=H100-80GB "$inst/bin/carve" mig list --simulate 2>&1)
rc=$?
check "a command that loads NVML runs from the installed tree (exit $rc: ${out:0:80})" \
    "[ $rc -eq 0 ] && [[ \"\$out\" == *'MIG on'* ]]"
out=$("$inst/bin/carve" top --once 2>&1)
check "carve top runs the installed carve-top, which asks carved ($out)" "[[ \"\$out\" == *'carved is not running'* ]]"

out=$("$inst/bin/carved" --check-config --config "$inst/share/carve/carved.conf.example" 2>&1)
rc=$?
check "the installed carved takes the installed example config (exit $rc: $out)" "[ $rc -eq 0 ]"
unit=$inst/lib/systemd/system/carved.service
execs=$(sed -n 's/^Exec\(Start\|Reload\)=\([^ ]*\).*/\2/p' "$unit" | sort -u)
out=$(bash -c 'source "$1"; complete -p carve carved' _ "$inst/share/bash-completion/completions/carved" 2>&1)
check "the installed completion, loaded as carved's, completes carve and carved ($out)" \
    "[[ \"\$out\" == *'-F _carve carve'*'-F _carved carved'* ]]"
check "carved.service starts and checks the installed carved ($execs)" \
    "[ '$execs' = '$prefix/bin/carved' ] && [ -x '$root$prefix/bin/carved' ] && ! grep -q /usr/local '$unit'"

# the man pages: no groff warning, and each carve page they name is there
warnings=""
for page in "$inst"/share/man/man[18]/*; do
    w=$(groff -man -Tutf8 -ww -z -I "$inst/share/man" -s "$page" 2>&1)
    [ -n "$w" ] && warnings+="$(basename "$page"): $w; "
done
check "every installed man page renders without a warning (${warnings:-none})" "[ -z '$warnings' ]"
refs=$(grep -ho '^\.BR carve[a-z\\-]* ([18])' "$inst"/share/man/man[18]/* | tr -d '\\' | sort -u)
dangling=$(while read -r _ name sect; do
    sect=${sect//[()]/}
    [ -f "$inst/share/man/man$sect/$name.$sect" ] || echo "$name($sect)"
done <<<"$refs")
check "every carve page the pages refer to is installed ($(wc -l <<<"$refs") named; missing: ${dangling:-none})" \
    "[ $(wc -l <<<"$refs") -ge 9 ] && [ -z '$dangling' ]"
out=$(groff -man -Tutf8 -I "$inst/share/man" -s "$inst/share/man/man1/carve-ps.1" 2>&1 | grep -c 'carve ps')
check "man carve-ps shows carve-slice(1), where carve ps is ($out lines name it)" "[ '$out' -gt 0 ]"

make_install uninstall >"$work/uninstall.log" 2>&1
rc=$?
[ $rc -eq 0 ] || tail -n 20 "$work/uninstall.log"
left=$(find "$root" ! -type d | sed "s|^$root||")
check "make uninstall exits 0 and leaves no file or link (exit $rc; left: ${left:-none})" "[ $rc -eq 0 ] && [ -z '$left' ]"
check "uninstall removes carve's own directories" "[ ! -e '$inst/lib/carve' ] && [ ! -e '$inst/share/carve' ]"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
