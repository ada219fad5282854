#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages carve needs to build and test.
#
# Idempotent: a package already installed (dpkg -s) is left alone, and apt-get runs only
# when something is missing. Runs as root, or through sudo when that is available.
set -euo pipefail

# The one list. Build: compilers and make; jansson (carved's socket protocol and state
# files) and libmicrohttpd (carved's metrics and dashboard). Tests: cmocka (unit), valgrind (leak checks),
# python3 (e2e helpers), procps (ps/pgrep in e2e scripts), shellcheck (the shell scripts).
# Not in the list: promtool, fetched last (see the end).
PACKAGES=(
    build-essential
    clang
    make
    pkg-config
    libjansson-dev
    libmicrohttpd-dev
    libcmocka-dev
    libncurses-dev      # carve top's live terminal view
    libclang-rt-14-dev
    valgrind
    python3
    procps
    curl                # e2e: carved's HTTP side (dashboard.sh, grafana.sh, carved_valgrind.sh); bench/carved-bench.sh
    shellcheck
    libslurm-dev slurmd slurmctld slurm-client munge # slurm/: spank.h for the plugin; the e2e test's one-node cluster
    jq # tests/e2e/planner.sh checks the --json output of carve plan, advise and cost
    python3-yaml        # tests/e2e/prometheus_rules.sh reads carved's example alerting rules
    groff-base          # tests/e2e/install.sh renders every man page with warnings on
    librust-nvml-wrapper-sys-dev # tests/e2e/abi_headers.sh: NVML 11.8's nvml.h as bindgen read it (source only, no Rust toolchain)
    tmux                # tests/e2e/top.sh drives carve top's live view in a terminal
    chromium            # tests/e2e/dashboard.sh renders the dashboard headless
    fonts-dejavu-core   # a font for chromium's screenshot of the dashboard
)

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
else
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "install-deps: missing ${missing[*]}; not root and no sudo: install them as root" >&2
        exit 1
    fi

    echo "install-deps: installing ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
fi

# promtool (tests/e2e/prometheus_rules.sh, dashboard.sh): not `apt-get install prometheus`,
# whose postinst starts a Prometheus server; taken out of the package into deps/bin instead
# (install-promtool.sh says how). It never fails: the tests say when promtool is missing.
bash "$(dirname "$0")/install-promtool.sh"
