#!/usr/bin/env bash
# deps-folder.sh - for a GPU machine that lacks the -dev packages carve links against and
# cannot fetch them (the lent H200's image: Ubuntu 24.04, no jansson, libmicrohttpd or ncurses
# headers, no network): makes FOLDER here, on Debian 12, with those packages and the
# libraries libmicrohttpd needs unpacked, and FOLDER/env.sh, which a command there sources
# before anything builds:
#
#   bash bench/gpu/deps-folder.sh .gpudeps                 (here: apt-get download, dpkg -x)
#   source .gpudeps/env.sh; bash bench/gpu/run-lease.sh    (there, with the folder carried)
#
# env.sh uses the folder only where a header is missing (GPUDEPS_FORCE=1: always), through
# CPATH, LIBRARY_PATH and an rpath into it, so carve's programs find those libraries there and
# nothing else does; and it builds with WARN=-Wall, not -Werror, so that a newer compiler's
# first warning does not cost the lease (they stay in the build log). About 8 MB.
set -euo pipefail
dir=${1:?usage: bash bench/gpu/deps-folder.sh FOLDER}
packages=(libjansson-dev libjansson4 libmicrohttpd-dev libmicrohttpd12 libncurses-dev libncurses6
    libtinfo6 libgnutls30 libffi8 libgmp10 libhogweed6 libnettle8 libidn2-0 libp11-kit0
    libtasn1-6 libunistring2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}")
rm -rf "$dir"
mkdir -p "$dir/lib" "$work/root"
for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$work/root"
done
cp -a "$work/root/usr/include" "$dir/include"
for libs in "$work/root/usr/lib/x86_64-linux-gnu" "$work/root/lib/x86_64-linux-gnu"; do
    [ ! -d "$libs" ] || cp -a "$libs/." "$dir/lib/"
done
rm -rf "$dir/lib/pkgconfig"
find "$dir/lib" -name '*.a' ! -name libjansson.a -delete # carve links jansson statically
ln -sf libtinfo.so.6 "$dir/lib/libtinfo.so"              # the package's link is absolute
cat >"$dir/env.sh" <<'EOF'
# sourced from the repository's root on the GPU machine, before the build (bench/gpu/deps-folder.sh)
gpudeps=$PWD/.gpudeps
gpudeps_missing=
for h in jansson.h microhttpd.h curses.h; do
    echo "#include <$h>" | cc -E -x c - >/dev/null 2>&1 || gpudeps_missing="$gpudeps_missing $h"
done
echo "gpudeps: headers missing:${gpudeps_missing:- none}; cc: $(cc --version | head -n1)"
if [ -n "$gpudeps_missing" ] || [ "${GPUDEPS_FORCE:-0}" = 1 ]; then
    export CPATH=$gpudeps/include LIBRARY_PATH=$gpudeps/lib
    export LDFLAGS="-L$gpudeps/lib -Wl,-rpath,$gpudeps/lib -Wl,--disable-new-dtags"
    echo "gpudeps: building with $gpudeps"
fi
export MAKEFLAGS='WARN=-Wall'
EOF
sed -i "s|^gpudeps=\$PWD/.gpudeps$|gpudeps=\$PWD/$(basename "$dir")|" "$dir/env.sh"
echo "deps-folder: $dir ($(du -sh "$dir" | cut -f1)); carry it and source $dir/env.sh there"
