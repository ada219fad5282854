# shellcheck shell=bash disable=SC2034  # sets gpu, driver, slug, date for the sourcing script
# gpu-setup.sh - sourced by the run-*.sh scripts: checks for a real GPU, builds carve, makes
# the log folder, and sets gpu, driver, slug and date for the report's name.
#   usage: source bench/gpu/gpu-setup.sh NAME LOGDIR   (BUILD set by the caller)
gpu_setup_name=$1
gpu_setup_logs=$2
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$gpu_setup_name: nvidia-smi -L finds no GPU; this needs a real one" >&2
    exit 2
fi
echo "== building carve"
make -j"$(nproc)" BUILD="$BUILD" product || { echo "$gpu_setup_name: make failed" >&2; exit 1; }
rm -rf "$gpu_setup_logs"
mkdir -p "$gpu_setup_logs" docs/results
IFS=, read -r gpu driver < <(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0)
gpu=$(echo "$gpu" | xargs)
driver=$(echo "$driver" | xargs)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9][^a-z0-9]*/-/g; s/^-//; s/-$//')
date=$(date +%Y-%m-%d)
