#!/usr/bin/env bash
# planner.sh - `carve plan`, `carve advise` and `carve cost` from the command line: the plans
# side by side, JSON and SVG, workloads that fit no GPU, malformed files and specs (exit 2,
# the line and field named), the advisor's traps, the seed article's cost example, and cost
# from carved's measurements (a saved snapshot, then a carved --simulate on a private socket
# and port with a tenant in a slice).
#
#   BUILD=build bash tests/e2e/planner.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
CARVE=$BUILD/bin/carve
# shellcheck source=tests/e2e/tap.bash
. tests/e2e/tap.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
tmp=$(mktemp -d)
daemon=
cleanup() {
    if [ -n "$daemon" ]; then
        # carved keeps its slices across restarts (in /dev/shm): delete ours before it stops
        "$CARVE" slice delete plan-e2e >/dev/null 2>&1
        kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# jq_check DESC FILTER FILE: the jq filter is true on the JSON file.
jq_check() {
    if jq -e "$2" "$3" >/dev/null 2>&1; then ok "$1"; else bad "$1: $(head -c 600 "$3")"; fi
}

cat >"$tmp/w.csv" <<'EOF'
# name,memory,compute,latency,trust,count
name,memory,compute,latency,trust,count
chat,16GiB,30%,strict,trusted,4
embed,6GiB,10%,strict,trusted,8
notebook,8GiB,5%,relaxed,trusted,20
etl,20GiB,40%,relaxed,trusted,6
tenant,30GiB,50%,normal,untrusted,3
EOF

# --- carve plan ---
expect 0 "usage: carve plan WORKLOADS --fleet SPEC" plan --help
expect 0 "carve plan --models [--json]" plan --help
expect 0 "usage: carve plan" help plan
expect 0 "H100-80GB" plan --models
expect 0 "\"model\": \"T4-16GB\"" plan --models --json
expect 0 "carve slices" plan "$tmp/w.csv" --fleet H100-80GB:100@2.49
"$CARVE" plan "$tmp/w.csv" --fleet H100-80GB:100@2.49 --json --assign --svg "$tmp/plan.svg" >"$tmp/plan.json"
rc=$?
[ "$rc" -eq 0 ] && ok "plan --json --assign --svg exits 0" || bad "plan --json exits $rc"
jq_check "JSON: 41 workloads, five plans" '.workloads == 41 and (.plans | length) == 5' "$tmp/plan.json"
jq_check "JSON: whole GPUs use one GPU per workload" '.plans[0].gpus == 41' "$tmp/plan.json"
jq_check "JSON: every plan uses no fewer GPUs than its bound" \
    '[.plans[] | select(.available) | .gpus >= .lower_bound] | all' "$tmp/plan.json"
jq_check "JSON: carve slices need fewer GPUs than time-slicing" \
    '(.plans[] | select(.mechanism == "carve") | .gpus) < (.plans[] | select(.mechanism == "time-slicing") | .gpus)' \
    "$tmp/plan.json"
jq_check "JSON: each plan assigns all 41 workloads" \
    '[.plans[] | (.assignment | length) == 41] | all' "$tmp/plan.json"
jq_check "JSON: MIG gives each workload a profile" \
    '[.plans[] | select(.mechanism == "mig") | .assignment[] | .profile | test("^[0-9]g\\.")] | all' \
    "$tmp/plan.json"
jq_check "JSON: whole GPUs cost 41 x \$2.49" \
    '.plans[0].cost_per_hour > 102.08 and .plans[0].cost_per_hour < 102.10' "$tmp/plan.json"
# the mechanisms planned on threads of their own or one after another: the same plans
"$CARVE" plan "$tmp/w.csv" --fleet A100-80GB:4@3.5,L4@0.8 --json --assign --threads 1 >"$tmp/threads1.json"
"$CARVE" plan "$tmp/w.csv" --fleet A100-80GB:4@3.5,L4@0.8 --json --assign --threads 5 >"$tmp/threads5.json"
if [ -s "$tmp/threads1.json" ] && cmp -s "$tmp/threads1.json" "$tmp/threads5.json"; then
    ok "plan --threads 1 and --threads 5 give the same JSON"
else
    bad "plan --threads 1 and 5 differ: $(diff "$tmp/threads1.json" "$tmp/threads5.json" | head -c 600)"
fi
if grep -q '<svg' "$tmp/plan.svg" && grep -q '</svg>' "$tmp/plan.svg" && grep -q 'chat#1' "$tmp/plan.svg"; then
    ok "plan --svg draws the packing"
else
    bad "plan --svg: $(head -c 300 "$tmp/plan.svg")"
fi
expect 0 "memory fill of the first" plan "$tmp/w.csv" --fleet H100-80GB:100@2.49 --picture
# a name is any printable text: & and < in it must not break the SVG's XML
printf 'name,memory\nR&D <eval>,8GiB\n' >"$tmp/amp.csv"
"$CARVE" plan "$tmp/amp.csv" --fleet H100-80GB --svg "$tmp/amp.svg" -P >/dev/null 2>&1
if ! grep -q "R&D <" "$tmp/amp.svg" && grep -q 'R&amp;D &lt;eval&gt;' "$tmp/amp.svg"; then
    ok "plan --svg escapes & and < in workload names"
else
    bad "plan --svg with & in a name: $(grep -m1 title "$tmp/amp.svg")"
fi
expect 0 "no pool of this fleet can be partitioned" plan "$tmp/w.csv" --fleet L40S:100@1.20
# stdin, JSON input
printf '[{"name": "a", "memory": "8GiB"}, {"name": "b", "memory": "8GiB"}]' >"$tmp/w.json"
expect 0 "2 workloads on" plan - --fleet L4:4@0.80 <"$tmp/w.json"

# a workload larger than every GPU: reported with its line, never dropped; exit 1
printf 'name,memory\nsmall,8GiB\nhuge,200GiB\n' >"$tmp/huge.csv"
expect 1 "line 3 \`huge': needs 204800 MiB (200.0 GiB); the largest GPU of the fleet, L40S-48GB, has 46068 MiB" \
    plan "$tmp/huge.csv" --fleet L4:10@0.80,L40S:2@1.20
"$CARVE" plan "$tmp/huge.csv" --fleet L4:10@0.80 --json >"$tmp/huge.json" 2>/dev/null
jq_check "JSON: the impossible workload is listed with its line" \
    '.impossible[0].workload == "huge" and .impossible[0].line == 3' "$tmp/huge.json"

# malformed input: exit 2, the line and field named
printf 'name,memory,compute\na,8GiB,30%%\nb,8GiB,300%%\n' >"$tmp/bad.csv"
expect 2 "bad.csv:3: field \`compute' (column 3): 300% is more than 100% of a GPU" \
    plan "$tmp/bad.csv" --fleet H100-80GB
# the form of carve run --compute: .5 is half a percent; more than two decimals are refused,
# in a CSV and in JSON alike (JSON's 12.345 was rounded to 12.35, and .5 refused)
printf 'name,memory,compute\na,8GiB,.5\n' >"$tmp/half.csv"
expect 0 "1 workload on H100-80GB" plan "$tmp/half.csv" --fleet H100-80GB
printf 'name,memory,compute\na,8GiB,12.345\n' >"$tmp/fine.csv"
expect 2 "fine.csv:2: field \`compute' (column 3): \`12.345' has more precision than 0.01%" \
    plan "$tmp/fine.csv" --fleet H100-80GB
printf '[{"name": "a", "memory": "8GiB", "compute": 12.345}]\n' >"$tmp/fine.json"
expect 2 "fine.json:1: workload 1: field \`compute': \`12.345' has more precision than 0.01%" \
    plan "$tmp/fine.json" --fleet H100-80GB
printf 'name,memory\na,8GiB,oops\n' >"$tmp/bad2.csv"
expect 2 "bad2.csv:2: 3 fields, but the header has 2 columns" plan "$tmp/bad2.csv" --fleet H100-80GB
printf '[\n {"memory": "8GiB"},\n {"memory": "lots"}\n]\n' >"$tmp/bad.json"
expect 2 "bad.json:3: workload 2: field \`memory'" plan "$tmp/bad.json" --fleet H100-80GB
expect 2 "COUNT \`x' is not a whole number" plan "$tmp/w.csv" --fleet H100-80GB:x
expect 2 "unknown GPU model \`Z9'" plan "$tmp/w.csv" --fleet Z9:4
# a pool without a price beside priced ones was planned as free ($0.00 bound, filled first)
expect 2 "pool L4-24GB has no price while T4-16GB has one (\$0.35/h): it would be planned as free. Give it its price per GPU-hour (L4-24GB:3@PRICE" \
    plan "$tmp/w.csv" --fleet T4:5@0.35,L4:3
# (status 1: the 30 GiB workloads fit neither model) no prices at all, or @0, are fine
expect 1 "T4-16GB (15360 MiB) x 5, L4-24GB (23034 MiB) x 3" plan "$tmp/w.csv" --fleet T4:5,L4:3
expect 1 "L4-24GB (23034 MiB) x 3 at \$0.00/h" plan "$tmp/w.csv" --fleet T4:5@0.35,L4:3@0
expect 2 "--fleet SPEC is required" plan "$tmp/w.csv"
# --models lists the models: a file or a plan's option beside it was ignored, exit 0
expect 2 "--models lists the GPU models and takes no argument; \`extra' is one too many" plan --models extra
expect 2 "\`jobs.csv' is one too many" plan jobs.csv --models --json
expect 2 "--models lists the GPU models and takes only --json; \`--fleet' is for a plan" plan --models --fleet H100-80GB
expect 0 "H100-80GB" plan --models --json
expect 2 "cannot open $tmp/none.csv" plan "$tmp/none.csv" --fleet H100-80GB
expect 2 "--replicas \`0' is not a whole number from 1 to 1024" plan "$tmp/w.csv" --fleet H100-80GB --replicas 0
expect 2 "unknown option" plan "$tmp/w.csv" --fleet H100-80GB --bogus
# an unknown short option inside a word (-Z10, -jZ): it was named as the word before it
expect 2 "unknown option \`-Z'" plan "$tmp/w.csv" --fleet H100-80GB -Zx
expect 2 "unknown option \`-Z'" cost -Z10
expect 2 "unknown option \`-Z'" advise -jZ --gpu H100 --workload batch
# /dev/zero (or an endless pipe) was read until memory ran out: carve plan ran for minutes.
# 300 MiB of NULs stand for it here, so that a carve without the limit ends too.
out=$(head -c 300M /dev/zero | timeout 60 "$CARVE" plan - --fleet H100-80GB 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && [[ $out == *"standard input is larger than 256 MiB"* ]]; then ok "plan - of 300 MiB -> 2: $out"; else bad "plan - of 300 MiB -> $rc (want 2, larger than 256 MiB): ${out:0:300}"; fi
# names are text: UTF-8 is a name (it was refused as a `control character'), Latin-1 and
# control bytes are not, and a count's NAME#N keeps the whole name (it was cut to 40 bytes,
# at a character; two names alike in their first 40 then were one)
printf 'name,memory,count\nmod\303\250le,8GiB,1\n%s\303\251,1GiB,2\n' \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" >"$tmp/utf8.csv"
"$CARVE" plan "$tmp/utf8.csv" --fleet H100-80GB --json --assign >"$tmp/utf8.json" 2>&1
jq_check "plan: a UTF-8 name is planned, NAME#N whole" \
    '[.plans[0].assignment[].workload] == ["mod\u00e8le", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\u00e9#1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\u00e9#2"]' \
    "$tmp/utf8.json"
printf 'name,memory\n\351t\351,8GiB\n' >"$tmp/latin1.csv"
expect 2 "latin1.csv:2: field \`name' (column 1): is not UTF-8 text" plan "$tmp/latin1.csv" --fleet H100-80GB
expect 2 "the custom MODEL's name is not UTF-8 text" plan "$tmp/w.csv" --fleet $'gpu\xff/48GiB'

# --- carve advise ---
expect 0 "usage: carve advise" advise --help
expect 0 "recommended: MIG" advise --gpu H100 --workload inference --trust untrusted
expect 0 "recommended: Whole GPUs" advise --gpu T4 --workload inference --trust untrusted
expect 0 "[mig-gate]" advise --gpu T4 --workload inference --trust untrusted
# H20 and A30 have MIG (carve has no profile table for them); a GPU carve does not know may
# or may not: it said "cannot be partitioned"
expect 0 "check mig: yes, MIG is the recommendation" advise --gpu H20 --workload inference --trust untrusted --check mig
expect 0 "carve has no MIG profile table for it" advise --gpu 'NVIDIA A30' --workload inference --trust untrusted
expect 1 "check mig: UNKNOWN, carve does not know whether RTX PRO 6000 Blackwell has MIG" \
    advise --gpu 'RTX PRO 6000 Blackwell' --workload inference --trust untrusted --check mig
expect 1 "NO, Time-slicing is a trap here (timeslice-online)" \
    advise --gpu L4 --workload inference --latency 50 --check time-slicing
expect 1 "(mps-untrusted)" advise --gpu H100 --workload inference --trust untrusted --check mps
expect 1 "(software-isolation)" advise --gpu A100 --workload notebook --trust untrusted --check carve
expect 1 "(share-training)" advise --gpu H100 --workload training --check mps
expect 0 "1g.20gb instance (19.5 GiB)" advise --gpu A100-80GB --workload notebook --trust untrusted --memory 12GiB
expect 0 "[mig-resize]" advise --gpu H100 --workload inference --latency 40 --changing
expect 0 "Hardware" advise --matrix
"$CARVE" advise --gpu H200 --workload inference --latency 30 --json >"$tmp/advise.json"
jq_check "advise --json: MIG on an H200 for a tight P99" \
    '.recommendation == "mig" and .mig_capable and (.traps | map(.id) | index("timeslice-online"))' \
    "$tmp/advise.json"
expect 2 "--workload \`gaming' is not training, inference, notebook or batch" \
    advise --gpu H100 --workload gaming
expect 2 "--latency \`fast' is not milliseconds" advise --gpu H100 --workload inference --latency fast
expect 2 "--gpu MODEL is required" advise --workload batch
expect 2 "a workload of 204800 MiB (200.0 GiB) does not fit on one H100-80GB (81559 MiB)" \
    advise --gpu H100 --workload inference --trust untrusted --memory 200GiB
expect 0 "larger than A100-40GB's largest MIG instance (7g.40gb, 39.2 GiB)" \
    advise --gpu A100-40GB --workload inference --trust untrusted --memory 39.5GiB

# --- carve cost: the seed article's worked example ---
"$CARVE" cost --mechanism time-slicing >"$tmp/card.txt"
for line in 'Cost / workload / hr     $0.95' 'Baseline cost / hr       $3.50' \
    'Savings per workload     -73%' 'GPU-hrs recovered/day    180' \
    'Time-slicing — suitable for this configuration'; do
    if grep -qF "$line" "$tmp/card.txt"; then ok "cost card: $line"; else bad "cost card lacks '$line': $(cat "$tmp/card.txt")"; fi
done
# GPUs are whole: 3 workloads 4 to a GPU need 1 GPU (it said "0.8 of 3"), in the JSON too
expect 0 "GPUs needed              1 of 3" cost --gpus 3 --mechanism time-slicing
"$CARVE" cost --gpus 3 --mechanism time-slicing --json >"$tmp/cost3.json"
jq_check "cost --json: whole GPUs needed" '.results[0].gpus_needed == 1' "$tmp/cost3.json"
"$CARVE" cost --json >"$tmp/cost.json"
jq_check "cost --json: five mechanisms, time-slicing at 0.951" \
    '(.results | length) == 5 and (.results[0].cost_per_workload_hour * 1000 | floor) == 951' "$tmp/cost.json"
expect 0 "MIG — not available on T4" cost --gpu T4
# a GPU without MIG: the MIG row shows no figures (it showed -67% savings), and the JSON says why
mig_row=$("$CARVE" cost --gpu L4 | grep '^mig ')
if [[ $mig_row == *"not available: L4 has no MIG"* && $mig_row != *%* ]]; then ok "cost --gpu L4: MIG row not available"; else bad "cost --gpu L4: MIG row: $mig_row"; fi
expect 0 "Not available            L4 has no MIG" cost --gpu L4 --mechanism mig
"$CARVE" cost --gpu L4 --json >"$tmp/cost-l4.json"
jq_check "cost --gpu L4 --json: MIG not available, no savings, the reason" \
    '.results[2].mechanism == "mig" and .results[2].available == false and .results[2].savings_pct == null and (.results[2].unavailable_reason | test("L4 has no MIG")) and .results[0].available == true' \
    "$tmp/cost-l4.json"
expect 0 "ask for 160% of one GPU" cost --utilisation 40% --mechanism mps
expect 2 "tenants per GPU 100 is not a whole number from 1 to 64" cost --tenants 100
# a model carve does not know was taken for one without MIG (H20 has MIG; RTX A1000, holding
# "A100", was taken for one with it): refused, with the models carve knows
expect 2 "GPU model \`foo' is not one carve knows: T4, V100, A10, L4, L40S, A100, H100, H200, B200" cost --gpu foo
expect 2 "GPU model \`H20' is not one carve knows" cost --gpu H20
expect 2 "GPU model \`RTX A1000' is not one carve knows" cost --gpu 'RTX A1000'
expect 0 "MIG — not available on Tesla T4" cost --gpu 'Tesla T4'
expect 0 "mig                3          1.17" cost --gpu 'NVIDIA H100 80GB HBM3'
# one is singular: "1 GPUs", "1 tenants" before
expect 0 "1 GPU (A100) at \$3.50/h; 1 tenant per GPU" cost --gpus 1 --tenants 1
jq '.gpus = [.gpus[0]] | .slices = [.slices[0]]' tests/unit/fixtures/carved-state.json >"$tmp/one.json"
expect 0 "measured by carved ($tmp/one.json): 1 tenant, 1.00 per GPU in use" cost --from-metrics "$tmp/one.json"
expect 0 "1 GPU (NVIDIA H100 80GB HBM3) at \$3.50/h; 1 tenant per GPU" cost --from-metrics "$tmp/one.json"
printf 'name,memory\nonly,8GiB\n' >"$tmp/one.csv"
expect 0 "(the longest bar is 1 GPU):" plan "$tmp/one.csv" --fleet H100-80GB:1@2.49 --picture
expect 0 "1 replica and 92% of compute per GPU" plan "$tmp/one.csv" --fleet H100-80GB --replicas 1
expect 0 "1 client per GPU" plan "$tmp/one.csv" --fleet H100-80GB --mps-clients 1
expect 0 "1 slice per GPU" plan "$tmp/one.csv" --fleet H100-80GB --slices 1
"$CARVE" plan "$tmp/one.csv" --fleet H100-80GB:1@2.49 --svg "$tmp/one.svg" >/dev/null
if grep -q '>1 GPU<' "$tmp/one.svg" && grep -q 'carve plan: 1 workload;' "$tmp/one.svg" && ! grep -q '1 GPUs\|1 workloads' "$tmp/one.svg"; then ok "plan --svg: 1 GPU, 1 workload"; else bad "plan --svg: $(grep -o '[0-9]* \(GPUs*\|workloads*\)' "$tmp/one.svg" | sort -u | tr '\n' ' ')"; fi
# counts are whole numbers as written: 1e3 was taken as 1000
expect 2 "--gpus \`1e3' is not a whole number (digits only" cost --gpus 1e3
expect 2 "--tenants \`4.0' is not a whole number (digits only" cost --tenants 4.0
expect 2 "--gpus \`99999999999999999999' is too large (at most 10000000)" cost --gpus 99999999999999999999
expect 0 "1000 GPUs (A100)" cost --gpus 1000
expect 2 "--price \`cheap' is not a number" cost --price cheap
expect 2 "--mechanism \`vgpu' is not one of" cost --mechanism vgpu
# --json must be JSON: a model name that is not UTF-8 was dropped, leaving an empty line and exit 0
expect 2 "is not a GPU model name" cost --gpu $'\xff' --json
# an empty model leaked its JSON string (LeakSanitizer: exit 1 in an ASan build)
expect 2 "--gpu \`' is not a GPU model name" cost --gpu ""
# a lone % was 0%: "utilisation 0% is not above 0%", a value the user never gave
expect 2 "--utilisation \`%' is not a number" cost --utilisation %
# a directory read as an empty file: "not JSON: '[' or '{' expected near end of file"
expect 1 "$tmp is a directory (give carved's socket, a snapshot file or -)" cost --from-metrics "$tmp"

# --- carve cost --from-metrics: a saved snapshot, then a live carved ---
# the usage names --json on both forms, as carve-cost(1) does
out=$("$CARVE" cost --help)
usage_text=$(printf '%s\n' "$out" | sed -n '/--from-metrics \[SOCKET/,/^$/p')
if [[ $usage_text == *"[--json]"* ]]; then ok "cost --help: --from-metrics takes --json"; else bad "cost --help: --from-metrics form lacks [--json]: $usage_text"; fi
expect 0 "3 tenants, 1.50 per GPU in use" cost --from-metrics tests/unit/fixtures/carved-state.json --price 2.49
expect 1 "$tmp/nothing.json: No such file" cost --from-metrics "$tmp/nothing.json"
# a GPU carved measures and carve does not know is not refused: MIG is not available, and why
jq '.gpus[].name = "NVIDIA H20"' tests/unit/fixtures/carved-state.json >"$tmp/h20.json"
expect 0 "mig           not available: carve does not know whether NVIDIA H20 has MIG" cost --from-metrics "$tmp/h20.json"
expect 2 "give only --price and --mechanism" cost --from-metrics tests/unit/fixtures/carved-state.json --tenants 3

export CARVE_SOCKET="$tmp/carved.sock"
# a simulated GPU of our own: its compute board in /dev/shm is named after its UUID, and
# other test runs on this machine (other builds of carve) use the default one
CARVE_SIM_UUIDS=$(printf 'GPU-91a7e2e2-%04x-4e3d-9a7b-%04x%04x%04x' $RANDOM $RANDOM $RANDOM $(($$ % 65536)))
export CARVE_SIM_UUIDS
port=$(free_port)
CARVE_SIM_STATE="$tmp/sim" "$BUILD/bin/carved" --simulate --config /dev/null --socket "$CARVE_SOCKET" \
    --state-dir "$tmp/state" --listen "127.0.0.1:$port" >"$tmp/carved.log" 2>&1 &
daemon=$!
for _ in $(seq 50); do "$CARVE" slice list >/dev/null 2>&1 && break; sleep 0.1; done
"$CARVE" slice create plan-e2e --memory 2GiB --compute 40% >"$tmp/create.log" 2>&1 ||
    bad "carved: slice create failed: $(cat "$tmp/create.log"); carved: $(tail -n 5 "$tmp/carved.log")"
CARVE_SIM_STATE="$tmp/sim" "$CARVE" run --simulate --slice plan-e2e --quiet -- \
    "$BUILD/bench/compute_load" --kind small --seconds 4 --label plan-e2e >"$tmp/tenant.log" 2>&1 &
tenant=$!
sleep 2.5 # the tenant has run for a while and carved has polled
curl -s --max-time 10 "http://127.0.0.1:$port/api/state" |
    "$CARVE" cost --from-metrics - --price 2.49 --json >"$tmp/live-http.json" 2>"$tmp/live-http.err"
jq_check "curl .../api/state | cost --from-metrics -: one tenant on one simulated GPU" \
    '.measured.tenants_seen == 1 and .input.gpus == 1 and .input.price == 2.49 and .input.utilisation_pct > 0' \
    "$tmp/live-http.json"
"$CARVE" cost --from-metrics "$CARVE_SOCKET" --json >"$tmp/live-sock.json" 2>"$tmp/live-sock.err"
jq_check "cost --from-metrics SOCKET: the same tenant through carved's socket" \
    '.measured.tenants_seen == 1 and .measured.source == "carve slices with processes, achieved compute share"' \
    "$tmp/live-sock.json"
wait "$tenant" || bad "the tenant failed: $(tail -n 5 "$tmp/tenant.log")"
"$CARVE" slice delete plan-e2e >/dev/null 2>&1
expect 1 "curl -s http://127.0.0.1:1/api/state | carve cost --from-metrics -" cost --from-metrics http://127.0.0.1:1
# a URL with a path (carved's /metrics, or /api/state itself): the curl it suggests is the
# listener's /api/state, not the path with /api/state after it (was .../metrics/api/state)
expect 1 "curl -s http://127.0.0.1:1/api/state | carve" cost --from-metrics http://127.0.0.1:1/metrics
expect 1 "curl -s https://node:9477/api/state | carve" cost --from-metrics https://node:9477/api/state

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
