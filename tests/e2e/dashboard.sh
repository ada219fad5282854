#!/usr/bin/env bash
# san: yes
# dashboard.sh - carved's HTTP side end to end, through tests/e2e/http_serve with a fixture
# snapshot (two GPUs, three slices, one of them idle, one escape): 503 before the first
# snapshot, /metrics and /api/state after it (the names checked against Prometheus' rules, and
# by `promtool check metrics` where tests/e2e/promtool.bash finds promtool), 404 and 405,
# listen addresses refused with a clear message; then, when chromium is installed, the
# dashboard rendered headless: the DOM must show every slice with its memory, the idle slice
# and the escape; the page must follow the node live (a slice made, memory used, the idle
# slice busy again, the escape gone, while it runs); and a screenshot is kept
# (SCREENSHOT=PATH; default BUILD/test-logs/dashboard.png, beside the test logs of
# tests/run-all.sh; e.g. docs/results/dashboard-sim.png).
#
#   BUILD=build bash tests/e2e/dashboard.sh
#
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
SERVE=$BUILD/tests/e2e/http_serve
SCREENSHOT=${SCREENSHOT-$BUILD/test-logs/dashboard.png}
passed=0
failed=0
dir=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
skip() { echo "skip: $1"; }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
# shellcheck source=tests/e2e/promtool.bash
. tests/e2e/promtool.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash

if [ ! -x "$SERVE" ]; then
    bad "$SERVE is not built (make $SERVE)"
    finish
fi
for tool in curl python3; do
    if ! command -v "$tool" >/dev/null; then
        bad "$tool is needed and not installed"
        finish
    fi
done

GiB=1073741824
cat >"$dir/snap.json" <<EOF
{
  "version": 1, "node": "sim-node-1", "time": 1763900000.5, "simulated": true,
  "gpus": [
    {"index": 0, "uuid": "GPU-00000000-1111-2222-3333-444444444444",
     "pci_bus_id": "00000000:18:00.0", "device": "nvidia0",
     "name": "NVIDIA H100 80GB HBM3", "memory_total": $((80 * GiB)),
     "memory_used": $((9 * GiB)), "utilization": 41,
     "processes": [
       {"pid": 1001, "used_memory": $((4 * GiB)), "sm_util": 30, "slice": "train",
        "user": "alice", "command": "python"},
       {"pid": 1002, "used_memory": $((3 * GiB)), "sm_util": 0, "slice": "notebook",
        "user": "carol", "command": "jupyter"}]},
    {"index": 1, "uuid": "GPU-55555555-6666-7777-8888-999999999999",
     "name": "NVIDIA H100 80GB HBM3", "memory_total": $((80 * GiB)),
     "memory_used": $((14 * GiB)), "utilization": 63,
     "processes": [
       {"pid": 2001, "used_memory": $((12 * GiB)), "sm_util": 55, "slice": "infer",
        "user": "bob", "command": "vllm"},
       {"pid": 4242, "used_memory": $((2 * GiB)), "sm_util": 8, "slice": null,
        "user": "mallory", "command": "rogue.py"}]}
  ],
  "slices": [
    {"name": "train", "owner": "alice", "uid": 1000, "created": 1763890000, "origin": "config",
     "devices": [{"index": 0, "uuid": "GPU-00000000-1111-2222-3333-444444444444",
                  "memory_cap": $((8 * GiB)), "memory_used": $((4 * GiB)),
                  "memory_peak": $((6 * GiB)), "oom_denials": 2, "compute": "30%",
                  "priority": "batch", "compute_share": 28.5, "held_seconds_total": 12.5,
                  "launches_total": 90000}],
     "processes": [{"pid": 1001, "user": "alice", "command": "python",
                    "memory_used": $((4 * GiB))}],
     "idle": false, "idle_seconds": 0.0, "idle_gpu_hours": 0.0, "policy_idle": "report"},
    {"name": "notebook", "owner": "carol", "uid": 1002, "created": 1763880000, "origin": "api",
     "devices": [{"index": 0, "uuid": "GPU-00000000-1111-2222-3333-444444444444",
                  "memory_cap": $((4 * GiB)), "memory_used": $((3 * GiB)),
                  "memory_peak": $((3 * GiB)), "oom_denials": 0, "compute": "",
                  "priority": "normal", "compute_share": 0.0, "held_seconds_total": 0.0,
                  "launches_total": 14}],
     "processes": [{"pid": 1002, "user": "carol", "command": "jupyter",
                    "memory_used": $((3 * GiB))}],
     "idle": true, "idle_seconds": 7260.0, "idle_gpu_hours": 1.5, "policy_idle": "report"},
    {"name": "infer", "owner": "bob", "uid": 1001, "created": 1763895000, "origin": "config",
     "devices": [{"index": 1, "uuid": "GPU-55555555-6666-7777-8888-999999999999",
                  "memory_cap": $((16 * GiB)), "memory_used": $((12 * GiB)),
                  "memory_peak": $((13 * GiB)), "oom_denials": 0, "compute": "40%+",
                  "priority": "latency", "compute_share": 52.0, "held_seconds_total": 0.0,
                  "launches_total": 400000}],
     "processes": [{"pid": 2001, "user": "bob", "command": "vllm",
                    "memory_used": $((12 * GiB))}],
     "idle": false, "idle_seconds": 0.0, "idle_gpu_hours": 0.0, "policy_idle": "report"}
  ],
  "escapes": [{"gpu": 1, "uuid": "GPU-55555555-6666-7777-8888-999999999999", "pid": 4242,
               "user": "mallory", "command": "rogue.py", "used_memory": $((2 * GiB)),
               "action": "reported"}],
  "totals": {"escapes": 3, "escapes_killed": 1, "idle_reclaims": 0, "oom_denials": 2}
}
EOF

# start_server ARGS...: http_serve ARGS in the background; waits for its "ready".
start_server() {
    "$SERVE" "$@" >"$dir/serve.out" 2>"$dir/serve.err" &
    server=$!
    for _ in $(seq 100); do
        grep -q '^ready$' "$dir/serve.out" 2>/dev/null && return 0
        kill -0 "$server" 2>/dev/null || break
        sleep 0.05
    done
    return 1
}

stop_server() {
    kill "$server" 2>/dev/null
    wait "$server"
    local rc=$?
    server=""
    return "$rc"
}

# fetch METHOD PATH [CURL ARGS...]: sets code, ctype; body in $dir/body, headers in $dir/head.
fetch() {
    local method=$1 path=$2 out
    shift 2
    out=$(curl -s -X "$method" -o "$dir/body" -D "$dir/head" -w '%{http_code} %{content_type}' \
          --max-time 5 "$@" "http://127.0.0.1:$port$path")
    code=${out%% *}
    ctype=${out#* }
}

# expect_status METHOD PATH CODE [CURL ARGS...]
expect_status() {
    local method=$1 path=$2 want=$3
    shift 3
    fetch "$method" "$path" "$@"
    if [ "$code" = "$want" ]; then
        ok "$method $path -> $code"
    else
        bad "$method $path -> $code (want $want): $(head -c 200 "$dir/body")"
    fi
}

# ---- before the first snapshot ----
port=$(free_port)
if ! start_server --hold "127.0.0.1:$port" "$dir/snap.json"; then
    bad "http_serve did not start on 127.0.0.1:$port: $(cat "$dir/serve.err")"
    finish
fi
ok "http_serve listens on 127.0.0.1:$port"
expect_status GET /metrics 503
expect_status GET /api/state 503
expect_status GET / 200
if [[ "$ctype" == text/html* ]] && grep -q 'id="escapes"' "$dir/body"; then
    ok "GET / is the dashboard page ($ctype, $(wc -c <"$dir/body") bytes)"
else
    bad "GET / content-type '$ctype', body: $(head -c 200 "$dir/body")"
fi
if cmp -s "$dir/body" carved/dashboard.html; then
    ok "the page served is carved/dashboard.html, byte for byte"
else
    bad "the page served differs from carved/dashboard.html"
fi

# ---- after it ----
kill -USR1 "$server"
for _ in $(seq 50); do
    fetch GET /metrics
    [ "$code" = 200 ] && break
    sleep 0.05
done
if [ "$code" = 200 ] && [ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ]; then
    ok "GET /metrics -> 200 after the first snapshot ($ctype)"
else
    bad "GET /metrics -> $code '$ctype' after the first snapshot"
fi
cp "$dir/body" "$dir/metrics"
G0='gpu="0",UUID="GPU-00000000-1111-2222-3333-444444444444"'
G1='gpu="1",UUID="GPU-55555555-6666-7777-8888-999999999999"'
H='Hostname="sim-node-1"'
for line in \
    "# TYPE DCGM_FI_DEV_FB_USED gauge" \
    "DCGM_FI_DEV_FB_USED{$G0,pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",$H} 9216" \
    "DCGM_FI_DEV_FB_FREE{$G1,device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",$H} 67584" \
    "DCGM_FI_DEV_GPU_UTIL{$G1,device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",$H} 63" \
    "carve_slice_memory_used_bytes{slice=\"train\",$G0,$H} $((4 * GiB))" \
    "carve_slice_memory_cap_bytes{slice=\"infer\",$G1,$H} $((16 * GiB))" \
    "carve_slice_compute_share_ratio{slice=\"train\",$G0,$H} 0.285" \
    "carve_slice_compute_target_ratio{slice=\"infer\",$G1,$H} 0.4" \
    "carve_slice_oom_denials_total{slice=\"train\",$G0,$H} 2" \
    "carve_slice_idle{slice=\"notebook\",$H} 1" \
    "carve_slice_idle{slice=\"train\",$H} 0" \
    "carve_slice_idle_gpu_seconds_total{slice=\"notebook\",$H} 5400" \
    "carve_gpu_escapes{$G1,$H} 1" \
    "carve_gpu_escapes{$G0,$H} 0" \
    "carve_gpu_processes{$G1,$H} 2" \
    "carve_escapes_total{$H} 3" \
    "carve_slices{$H} 3"; do
    if grep -qxF -- "$line" "$dir/metrics"; then
        ok "/metrics has: $line"
    else
        bad "/metrics lacks: $line"
    fi
done
dups=$(grep '^# TYPE ' "$dir/metrics" | sort | uniq -d)
if [ -z "$dups" ]; then
    ok "/metrics: one TYPE line per family ($(grep -c '^# TYPE ' "$dir/metrics") families)"
else
    bad "/metrics: TYPE repeated: $dups"
fi

# Prometheus' naming rules, which a linter (promtool check metrics) or an OpenMetrics reader
# applies: HELP then TYPE once per family, before its samples; _total on counters and only
# on them; base units (seconds, not hours: carve_slice_idle_gpu_hours_total); no gauge named
# as a counter's family (carve_escapes beside carve_escapes_total: an OpenMetrics reader
# takes the counter's family as carve_escapes, and finds two); one label set per carve_
# family (the DCGM_FI_ ones follow dcgm-exporter, which leaves out an unknown pci_bus_id)
lint=$(python3 - "$dir/metrics" <<'LINT'
import re, sys
families, labels, problems = {}, {}, []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    m = re.match(r"# (HELP|TYPE) (\S+) (.*)", line)
    if m:
        kind, name, rest = m.groups()
        f = families.setdefault(name, {})
        if kind in f:
            problems.append("%s: a second %s line" % (name, kind))
        if kind == "TYPE" and "HELP" not in f:
            problems.append("%s: TYPE before HELP" % name)
        if kind == "TYPE" and "samples" in f:
            problems.append("%s: TYPE after its samples" % name)
        f[kind] = rest
        continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? \S+$", line)
    if not m:
        problems.append("not a sample line: %r" % line)
        continue
    name = m.group(1)
    if name not in families:
        problems.append("%s: a sample before its HELP and TYPE" % name)
    families.setdefault(name, {})["samples"] = True
    keys = tuple(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"', m.group(3) or ""))
    if name.startswith("carve_") and labels.setdefault(name, keys) != keys:
        problems.append("%s: label sets %s and %s" % (name, labels[name], keys))
for name, f in families.items():
    typ = f.get("TYPE")
    if (typ == "counter") != name.endswith("_total"):
        problems.append("%s: a %s %s _total" % (name, typ, "without" if typ == "counter" else "with"))
    for unit in ("hours", "minutes", "days", "milliseconds", "microseconds", "percent"):
        if re.search(r"(^|_)%s(_|$)" % unit, name):
            problems.append("%s: in %s, not the base unit" % (name, unit))
    if typ == "counter" and families.get(name[:-len("_total")], {}).get("TYPE") not in (None, "counter"):
        problems.append("%s: a %s named as the counter %s's family" % (name[:-len("_total")], families[name[:-len("_total")]]["TYPE"], name))
print("; ".join(problems))
LINT
)
if [ -z "$lint" ]; then
    ok "/metrics follows Prometheus' naming rules (HELP, TYPE, _total, base units, label sets)"
else
    bad "/metrics breaks Prometheus' naming rules: $lint"
fi

# promtool's own lint of the same output, but for dcgm-exporter's camelCase modelName label on
# the DCGM_FI_ families (tests/e2e/promtool.bash says why); a camelCase label on a carve_
# family is still a finding
if [ -n "${PROMTOOL:-}" ]; then
    if promtool_lint "$dir/metrics"; then
        ok "promtool check metrics: no finding but dcgm-exporter's modelName label on the DCGM_FI_ families (exit $lint_rc, $lint_dcgm such lines)"
    else
        bad "promtool check metrics: exit $lint_rc: ${lint_findings//$'\n'/; }"
    fi
    sed 's/^carve_slice_memory_used_bytes{slice=/carve_slice_memory_used_bytes{sliceName=/' "$dir/metrics" >"$dir/metrics-camel"
    promtool_lint "$dir/metrics-camel"
    if grep -qx "carve_slice_memory_used_bytes label names should be written in 'snake_case' not 'camelCase'" <<<"$lint_findings"; then
        ok "promtool check metrics: a carve_ family's label sliceName is a finding (exit $lint_rc)"
    else
        bad "promtool check metrics: a carve_ family's label sliceName is not a finding (exit $lint_rc: ${lint_findings//$'\n'/; })"
    fi
else
    promtool_missing "/metrics is not linted by promtool check metrics (Prometheus' naming rules are checked above)"
fi

fetch GET /api/state
if [ "$code" = 200 ] && [ "$ctype" = application/json ] &&
   python3 - "$dir/body" "$dir/snap.json" <<'EOF'
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if got == want else 1)
EOF
then
    ok "GET /api/state -> 200 application/json, the snapshot published"
else
    bad "GET /api/state -> $code '$ctype': $(head -c 200 "$dir/body")"
fi

expect_status GET /metrics?format=text 200
expect_status GET /nope 404
expect_status GET /api/state/ 404
expect_status GET /index.html 404
expect_status POST /metrics 405 -d 'x=1'
if grep -qi '^Allow: GET, HEAD' "$dir/head"; then
    ok "405 says Allow: GET, HEAD"
else
    bad "405 without Allow: $(tr -d '\r' <"$dir/head" | tr '\n' '|')"
fi
expect_status DELETE /api/state 405
expect_status PUT / 405 -d '<html>'
expect_status HEAD /api/state 200 --head
expect_status GET /metrics 200

# ---- the listen address ----
if stop_server; then
    ok "SIGTERM: http_serve stops the listener and exits 0"
else
    bad "SIGTERM: http_serve exited $?"
fi

# expect_refused ADDR FRAGMENT: http_serve ADDR exits 1 and says FRAGMENT.
expect_refused() {
    local err rc
    err=$(timeout 10 "$SERVE" "$1" "$dir/snap.json" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -eq 1 ] && [[ "$err" == *"$2"* ]] && [[ "$err" == *"\`$1'"* ]]; then
        ok "listen '$1' refused: $err"
    else
        bad "listen '$1' -> $rc (want 1), message lacks '$2' or the address: $err"
    fi
}
expect_refused "9477" "no port"
expect_refused "127.0.0.1:" "not a number in 1-65535"
expect_refused "127.0.0.1:0" "not a number in 1-65535"
expect_refused "127.0.0.1:70000" "not a number in 1-65535"
expect_refused "127.0.0.1:80x" "not a number in 1-65535"
expect_refused "::1:9477" "needs brackets"
expect_refused "[::1" "[ADDR]:PORT"
expect_refused "192.0.2.1:9477" "no interface of this machine has that address"
expect_refused "no-such-host.invalid:9477" "cannot resolve"
port=$(free_port)
start_server "127.0.0.1:$port" "$dir/snap.json" || bad "http_serve did not start again"
expect_refused "127.0.0.1:$port" "Address already in use"
stop_server
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null
then
    port=$(free_port)
    if start_server "[::1]:$port" "$dir/snap.json" &&
       [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://[::1]:$port/metrics")" = 200 ]
    then
        ok "listen '[::1]:$port' serves over IPv6"
    else
        bad "listen '[::1]:$port': $(cat "$dir/serve.err")"
    fi
    stop_server
else
    skip "no IPv6 loopback here; [::1]:PORT not tried"
fi
if start_server off "$dir/snap.json"; then
    ok "listen 'off': nothing started, no error"
else
    bad "listen 'off': $(cat "$dir/serve.err")"
fi
stop_server

# ---- the page in a browser ----
chrome=""
for c in chromium chromium-browser google-chrome; do
    command -v "$c" >/dev/null && chrome=$c && break
done
if [ -z "$chrome" ]; then
    skip "chromium not installed; the dashboard's DOM and screenshot were not checked"
    finish
fi
port=$(free_port)
if ! start_server --tick 10 "127.0.0.1:$port" "$dir/snap.json"; then
    bad "http_serve --tick did not start: $(cat "$dir/serve.err")"
    finish
fi
# chrome_run BUDGET_MS ARGS...: the page, run for BUDGET_MS of virtual time
chrome_run() {
    local budget=$1
    shift
    timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$dir/chrome" --virtual-time-budget="$budget" "$@" \
        "http://127.0.0.1:$port/" 2>>"$dir/chrome.err"
}
chrome_run 5000 --dump-dom >"$dir/dom.html"
if [ -s "$dir/dom.html" ]; then
    ok "$chrome rendered the page ($(wc -c <"$dir/dom.html") bytes of DOM)"
else
    bad "$chrome gave no DOM: $(tail -n 5 "$dir/chrome.err")"
fi
python3 - "$dir/dom.html" "$GiB" >"$dir/dom-checks" 2>&1 <<'EOF'
import sys
from html.parser import HTMLParser

gib = int(sys.argv[2])
class Dom(HTMLParser):
    """elements with their attributes and text, and the id-ed container each sits in"""
    def __init__(self):
        super().__init__()
        self.stack, self.els = [], []
    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "pos": len(self.els),
              "in": [e["attrs"].get("id") for e in self.stack if e["attrs"].get("id")]}
        self.els.append(el)
        if tag not in ("meta", "br", "img", "input", "link", "hr", "col", "wbr"):
            self.stack.append(el)
    def handle_endtag(self, tag):
        if any(e["tag"] == tag for e in self.stack):
            while self.stack.pop()["tag"] != tag:
                pass
    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

dom = Dom()
dom.feed(open(sys.argv[1], encoding="utf-8").read())
els = dom.els
passed = failed = 0
def check(ok, what):
    global passed, failed
    print(("ok - " if ok else "FAIL - ") + "dashboard: " + what)
    if ok: passed += 1
    else: failed += 1
def find(**want):
    return [e for e in els if all(e["attrs"].get(k.replace("_", "-")) == v
                                  for k, v in want.items())]
def by_id(i):
    f = find(id=i)
    return f[0] if f else {"text": "", "attrs": {}}

check(by_id("node")["text"].strip() == "sim-node-1",
      "node name shown (#node '%s')" % by_id("node")["text"].strip())
upd = by_id("updated")
check(upd["attrs"].get("data-time", "").startswith("17639") and upd["text"].strip() != "never",
      "last update shown (#updated '%s')" % upd["text"].strip())
check(by_id("status")["attrs"].get("data-status") == "ok",
      "status is live (#status data-status=%s)" % by_id("status")["attrs"].get("data-status"))
check(len(find(**{"class": "card gpu"})) == 2, "two GPU sections")
for name, gpu, used, cap in (("train", "0", 4, 8), ("notebook", "0", 3, 4), ("infer", "1", 12, 16)):
    rows = [e for e in find(data_slice=name) if "slice" in e["attrs"].get("class", "").split()]
    row = rows[0] if len(rows) == 1 else None
    check(row is not None and name in row["text"] and row["attrs"].get("data-gpu") == gpu,
          "slice %s shown once, under GPU %s" % (name, gpu))
    if row is None:
        continue
    a = row["attrs"]
    check(a.get("data-used") == str(used * gib) and a.get("data-cap") == str(cap * gib),
          "slice %s memory bar data-used=%s data-cap=%s" % (name, a.get("data-used"), a.get("data-cap")))
    want = "%.1f GiB / %.1f GiB" % (used, cap)
    check(want in row["text"], "slice %s reads '%s'" % (name, want))
    fills = [e for e in els[row["pos"]:] if e["attrs"].get("class", "").startswith("fill")]
    width = fills[0]["attrs"].get("style", "") if fills else ""
    check(("width:%.1f%%" % (100.0 * used / cap)) in width,
          "slice %s bar is %.1f%% full (%s)" % (name, 100.0 * used / cap, width))
    charts = [e for e in find(data_slice=name) if e["tag"] == "svg"]
    pts = int(charts[0]["attrs"].get("data-points", "0")) if charts else 0
    check(pts >= 2, "slice %s has a utilisation chart with history (%d points)" % (name, pts))
idle = [e for e in els if "idle" in e["in"] and e["tag"] == "li"]
check([e["attrs"].get("data-slice") for e in idle] == ["notebook"],
      "idle list holds notebook alone (%s)" % [e["text"][:40] for e in idle])
esc = [e for e in els if "escapes" in e["in"] and e["tag"] == "li"]
check(len(esc) == 1 and esc[0]["attrs"].get("data-pid") == "4242" and "4242" in esc[0]["text"]
      and "rogue.py" in esc[0]["text"],
      "escapes list shows pid 4242 (%s)" % [e["text"][:60] for e in esc])
print("dom-checks %d %d" % (passed, failed))
EOF
grep -v '^dom-checks ' "$dir/dom-checks"
read -r _ p f < <(grep '^dom-checks ' "$dir/dom-checks")
if [ -n "${p:-}" ]; then
    passed=$((passed + p))
    failed=$((failed + f))
else
    bad "the DOM checks did not run to the end"
fi

# a node with nothing on it, and a snapshot with everything of the wrong type: the page says
# so and stays live (a script error would leave #status at "connecting" or "error")
echo '{"version": 1, "node": "empty-node", "time": 1763900000, "simulated": false, "gpus": [],
 "slices": [], "escapes": [], "totals": {}}' >"$dir/empty.json"
echo '{"node": 5, "time": "x", "gpus": [7, null, {"index": "0"}, {"index": 3, "processes": 1}],
 "slices": [1, null, {"name": 5, "devices": [{"index": 3, "memory_used": "lots"}]},
 {"name": "x", "idle": true, "devices": "none"}], "escapes": [null, {"pid": {}}]}' >"$dir/odd.json"
# GPUs NVML does not answer for: lost while carved ran, lost since before it started (not in
# its list, no UUID), and one that answers now but that carved does not watch until restarted
echo '{"version": 1, "node": "lost-node", "time": 1763900000, "simulated": true, "gpus": [
 {"index": 0, "uuid": "GPU-00000000-1111-2222-3333-444444444444", "name": "NVIDIA H100 80GB HBM3",
  "memory_total": 85899345920, "memory_used": 0, "utilization": 0, "lost": true, "unlisted": false,
  "processes": []},
 {"index": 1, "uuid": "", "name": "", "memory_total": 0, "memory_used": 0, "utilization": 0,
  "lost": true, "unlisted": true, "nvml_answer": "GPU is lost", "processes": []},
 {"index": 2, "uuid": "GPU-55555555-6666-7777-8888-999999999999", "name": "NVIDIA H100 80GB HBM3",
  "memory_total": 85899345920, "memory_used": 0, "utilization": 0, "lost": false, "unlisted": true,
  "nvml_answer": "success", "processes": []}],
 "slices": [], "escapes": [], "totals": {}}' >"$dir/lost.json"
stop_server
for fixture in empty odd lost; do
    port=$(free_port)
    start_server "127.0.0.1:$port" "$dir/$fixture.json" || bad "http_serve $fixture.json"
    chrome_run 3000 --dump-dom >"$dir/dom-$fixture.html"
    stop_server
    dom=$(tr -d '\n' <"$dir/dom-$fixture.html")
    case $fixture in
    empty) want=('data-status="ok"' 'id="no-gpus"' '<ul id="idle"><li class="empty">none</li></ul>'
                 '<ul id="escapes"><li class="empty">none</li></ul>' '>empty-node<') ;;
    odd) want=('data-status="ok"' 'data-gpu="3"' 'no slices on this GPU'
               '<li class="idle-slice" data-slice="x">') ;;
    lost) want=('data-status="ok"' 'data-state="lost">LOST: NVML answers nothing for it'
                'data-state="lost">LOST since before carved started' 'GPU 1 · unknown'
                'data-state="unlisted">not watched: NVML did not answer for it at carved') ;;
    esac
    missing=""
    for w in "${want[@]}"; do [[ "$dom" == *"$w"* ]] || missing="$missing '$w'"; done
    if [ -z "$missing" ]; then
        ok "dashboard with the $fixture snapshot: ${want[*]}"
    else
        bad "dashboard with the $fixture snapshot lacks$missing"
    fi
done
# live: the node changes while the page runs (http_serve --then, on SIGUSR2) and the page
# must follow without a reload: slice late appears, train uses 6 GiB, notebook is busy again
# and the escape is gone; late's chart is shorter than train's, so the page saw both states.
python3 - "$dir/snap.json" "$dir/snap2.json" "$GiB" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); gib = int(sys.argv[3])
train = s["slices"][0]; train["devices"][0]["memory_used"] = 6 * gib
train["processes"][0]["memory_used"] = 6 * gib
nb = s["slices"][1]; nb["idle"] = False; nb["idle_seconds"] = 0.0
late = json.loads(json.dumps(nb)); late.update(name="late", owner="dave", processes=[])
late["devices"][0].update(memory_cap=2 * gib, memory_used=gib)
s["slices"].append(late)
s["escapes"] = []
s["gpus"][1]["processes"] = [p for p in s["gpus"][1]["processes"] if p["pid"] != 4242]
json.dump(s, open(sys.argv[2], "w"))
EOF
# The server switches to the second state once the page has polled 5 times, whatever the
# machine's speed; Chromium runs four minutes of the page's time (less than the five minutes
# its charts keep) as fast as the fetches allow.
port=$(free_port)
start_server --tick 10 --then "$dir/snap2.json" --after 5 "127.0.0.1:$port" "$dir/snap.json" ||
    bad "http_serve --then did not start: $(cat "$dir/serve.err")"
live_start=$(date +%s.%N)
chrome_run 240000 --dump-dom >"$dir/dom-live.html"
stop_server
live_secs=$(awk -v a="$live_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
if [ -s "$dir/dom-live.html" ]; then
    python3 - "$dir/dom-live.html" "$GiB" >"$dir/live-checks" 2>&1 <<'EOF'
import sys
from html.parser import HTMLParser
gib = int(sys.argv[2])
class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
dom = open(sys.argv[1], encoding="utf-8").read()
t = Tags()
t.feed(dom)
def row(name):
    r = [a for tag, a in t.tags if a.get("data-slice") == name and "slice" in a.get("class", "").split()]
    return r[0] if len(r) == 1 else {}
def points(name):
    r = [a for tag, a in t.tags if tag == "svg" and a.get("data-slice") == name]
    return int(r[0].get("data-points", 0)) if r else 0
late, train = row("late"), row("train")
checks = [
    (late.get("data-gpu") == "0" and late.get("data-used") == str(gib) and late.get("data-cap") == str(2 * gib),
     "slice late appeared under GPU 0 with 1 GiB of 2 GiB (%s)" % {k: v for k, v in late.items() if k.startswith("data-")}),
    (train.get("data-used") == str(6 * gib), "train's bar moved to 6 GiB (data-used=%s)" % train.get("data-used")),
    ("1.0 GiB / 2.0 GiB" in dom and "6.0 GiB / 8.0 GiB" in dom, "the new numbers are on the page"),
    ('<ul id="idle"><li class="empty">none</li></ul>' in dom, "notebook left the idle list"),
    ('<ul id="escapes"><li class="empty">none</li></ul>' in dom, "the escape left the escapes list"),
    (0 < points("late") < points("train"),
     "late's chart is shorter than train's (%d < %d points): the page saw both states"
     % (points("late"), points("train"))),
]
for ok, what in checks:
    print(("ok - " if ok else "FAIL - ") + "dashboard live: " + what)
EOF
    cat "$dir/live-checks"
    p=$(grep -c '^ok - ' "$dir/live-checks")
    f=$(grep -c '^FAIL - ' "$dir/live-checks")
    passed=$((passed + p))
    failed=$((failed + f))
    [ $((p + f)) -eq 6 ] || bad "live update: the DOM checks did not run: $(tail -n 3 "$dir/live-checks")"
    echo "    (the live run took $live_secs s)"
else
    bad "live update: chromium gave no DOM: $(tail -n 5 "$dir/chrome.err")"
fi

port=$(free_port)
start_server --tick 10 "127.0.0.1:$port" "$dir/snap.json" || bad "http_serve restarted"

# twenty polls, so that the charts show some history
chrome_run 20000 --screenshot="$dir/dashboard.png" --window-size=1280,900 >/dev/null
if [ "$(head -c 8 "$dir/dashboard.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
then
    ok "screenshot taken ($(wc -c <"$dir/dashboard.png") bytes of PNG)"
    if [ -n "$SCREENSHOT" ]; then
        mkdir -p "$(dirname "$SCREENSHOT")" && cp "$dir/dashboard.png" "$SCREENSHOT" &&
            echo "    (copied to $SCREENSHOT)"
    fi
else
    bad "no screenshot: $(tail -n 5 "$dir/chrome.err")"
fi
stop_server
finish
