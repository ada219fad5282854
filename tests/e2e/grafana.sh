#!/usr/bin/env bash
# san: yes
# grafana.sh - carved/grafana-dashboard.json against a live carved --simulate: the file is a
# dashboard (JSON, panels with queries, unique ids, inside Grafana's 24 columns), and every
# metric its queries and variables name is a family carved's /metrics exports (its # TYPE
# line), so the example dashboard cannot drift from carved's metric names.
#
#   BUILD=build bash tests/e2e/grafana.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
DASHBOARD=${DASHBOARD:-carved/grafana-dashboard.json}

# the names the dashboard uses: every DCGM_FI_* or carve_* word in an expr or a variable query
if python3 - "$DASHBOARD" >"$work/names" 2>"$work/shape" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
problems, exprs, ids = [], [], []
for p in d.get("panels", []):
    ids.append(p.get("id"))
    g = p.get("gridPos", {})
    if g.get("x", 0) + g.get("w", 0) > 24:
        problems.append("panel %r is wider than 24 columns" % p.get("title"))
    if p.get("type") == "row":
        continue
    t = [x.get("expr", "") for x in p.get("targets", [])]
    if not t or not all(t):
        problems.append("panel %r has no query" % p.get("title"))
    exprs += t
for v in d.get("templating", {}).get("list", []):
    if v.get("type") == "query":
        exprs.append(v["query"]["query"] if isinstance(v["query"], dict) else v["query"])
if len(set(ids)) != len(ids):
    problems.append("panel ids repeat: %s" % ids)
names = sorted({n for e in exprs for n in re.findall(r"\b(?:DCGM_FI_\w+|carve_\w+)", e)})
for n in names:
    print(n)
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
then
    ok "$DASHBOARD is a dashboard: $(python3 -c 'import json,sys; print(len([p for p in json.load(open(sys.argv[1]))["panels"] if p["type"] != "row"]))' "$DASHBOARD") panels, each with queries, unique ids, 24 columns"
else
    bad "$DASHBOARD: $(cat "$work/shape")"
fi
count=$(wc -l <"$work/names")
if [ "$count" -ge 15 ]; then
    ok "its queries name $count metrics"
else
    bad "its queries name only $count metrics: $(tr '\n' ' ' <"$work/names")"
fi

port=$(free_port)
start_carved 200ms "127.0.0.1:$port"
# one slice with a cap and a share: every per-slice family then has a sample
"$CARVE" slice create graf --memory 1GiB --compute 25% >/dev/null || bad "carve slice create graf"
sleep 0.5
curl -s --max-time 10 "http://127.0.0.1:$port/metrics" >"$work/metrics"
exported=$(grep -c '^# TYPE ' "$work/metrics")
missing=""
while read -r name; do
    grep -q "^# TYPE $name " "$work/metrics" || missing="$missing $name"
done <"$work/names"
if [ -n "$count" ] && [ "$count" -gt 0 ] && [ -z "$missing" ]; then
    ok "every metric the dashboard names is exported by carved's /metrics ($count of $exported families)"
else
    bad "the dashboard names metrics carved does not export:${missing:- (none read)}"
fi
# the check can fail: a name carved does not have is caught
if ! grep -q "^# TYPE carve_no_such_metric " "$work/metrics"; then
    ok "a name carved does not export (carve_no_such_metric) would be caught"
else
    bad "carve_no_such_metric is exported?"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
