#!/usr/bin/env bash
# install-promtool.sh - promtool, Prometheus's checker of rule files and /metrics output, for
# the tests (tests/e2e/prometheus_rules.sh, dashboard.sh), in deps/bin/promtool.
#
#   bash scripts/install-promtool.sh        (scripts/install-deps.sh runs it)
#
# Not `apt-get install prometheus`: that package's postinst starts a Prometheus server
# (`invoke-rc.d ... prometheus start || exit 1`), which a test machine has no use for, and a
# server that fails to start fails the install. The tests need promtool alone: this fetches
# Debian 12's package without installing it (`apt-get download`, no root needed once apt's
# lists exist) and takes usr/bin/promtool out of it. deps/ is ignored by git and kept by
# `make clean`.
#
# Idempotent: a promtool on PATH, or a deps/bin/promtool that runs, is left alone. It does
# not fail: where promtool cannot be had (no apt lists and neither root nor sudo without a
# password to fetch them, no network, not Debian) it says so and exits 0, and the tests say
# that promtool is missing (scripts/test.sh makes that a failure: tests/e2e/promtool.bash).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

DEST=deps/bin/promtool
PACKAGE=prometheus

if command -v promtool >/dev/null 2>&1; then
    echo "install-promtool: promtool is on PATH ($(command -v promtool)); nothing to fetch"
    exit 0
fi
if [ -x "$DEST" ] && "$DEST" --version >/dev/null 2>&1; then
    echo "install-promtool: $DEST present"
    exit 0
fi
for tool in apt-get dpkg-deb tar; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-promtool: no $tool here; promtool not fetched (the tests will say so)" >&2
        exit 0
    fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# as root apt warns that _apt cannot write to the private directory and downloads as root
download() { (cd "$tmp" && apt-get download "$PACKAGE") >>"$tmp/log" 2>&1; }

if ! download; then
    # no candidate: apt's lists are missing (install-deps updates them only when a package
    # is missing), so fetch them where we may
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo -n) # no password prompt for what is optional
    else
        as_root=(false)
    fi
    if ! { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >>"$tmp/log" 2>&1 &&
           download; }; then
        echo "install-promtool: apt-get download $PACKAGE failed; promtool not fetched (the tests will say so):" >&2
        tail -n 5 "$tmp/log" | sed 's/^/  | /' >&2
        exit 0
    fi
fi

debs=("$tmp"/"$PACKAGE"_*.deb)
mkdir -p "$tmp/x" "$(dirname "$DEST")"
if ! dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C "$tmp/x" ./usr/bin/promtool ||
   ! "$tmp/x/usr/bin/promtool" --version >/dev/null 2>&1; then
    echo "install-promtool: no working usr/bin/promtool in ${debs[0]##*/}; promtool not fetched" >&2
    exit 0
fi
# the whole file or none: copied beside DEST first, then renamed over it
if ! { cp "$tmp/x/usr/bin/promtool" "$DEST.new" && mv -f "$DEST.new" "$DEST"; }; then
    rm -f "$DEST.new"
    echo "install-promtool: cannot write $DEST; promtool not fetched" >&2
    exit 0
fi
echo "install-promtool: $DEST from ${debs[0]##*/} ($("$DEST" --version 2>&1 | head -n 1))"
