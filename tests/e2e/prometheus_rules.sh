#!/usr/bin/env bash
# san: yes
# prometheus_rules.sh - carved/prometheus-alerts.yml against a live carved --simulate: the
# file is a Prometheus rule file (groups of rules, each with an alert name of its own, an
# expr, a severity, a summary, a `for' Prometheus reads), every metric its expressions name
# is a family carved's /metrics exports (or Prometheus's own `up'), and every
# {{ $labels.X }} its annotations use is a label the series of its expression carry, so that
# the example alerts cannot drift from carved's names. A copy with a misspelt metric and one
# with a misspelt label are each refused. With promtool (tests/e2e/promtool.bash finds it:
# on PATH, or in deps/bin, where scripts/install-deps.sh puts it from Debian 12's prometheus
# package, so CI runs it) it checks the file, runs its unit tests
# (tests/e2e/prometheus-alerts.test.yml: which alerts fire on given series) and lints the live
# carved's /metrics (`promtool check metrics`; dashboard.sh lints its fixture's). Without
# promtool these checks pass saying they were not run, or fail where CARVE_REQUIRE_PROMTOOL
# is set and not 0 (scripts/test.sh sets it, and so CI).
#
#   BUILD=build bash tests/e2e/prometheus_rules.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash
# shellcheck source=tests/e2e/promtool.bash
. tests/e2e/promtool.bash
# shellcheck source=tests/e2e/free_port.bash
. tests/e2e/free_port.bash
RULES=${RULES:-carved/prometheus-alerts.yml}

port=$(free_port)
start_carved 200ms "127.0.0.1:$port"
# one slice with a cap and a share: every per-slice family then has a sample
"$CARVE" slice create rules --memory 1GiB --compute 25% >/dev/null || bad "carve slice create rules"
sleep 0.5
curl -s --max-time 10 "http://127.0.0.1:$port/metrics" >"$work/metrics"

# judge FILE: prints what is wrong with the rule file, one line each, and "rules N" last
judge() {
    python3 - "$1" "$work/metrics" <<'PY'
import re, sys, yaml
rules_path, metrics_path = sys.argv[1], sys.argv[2]
labels = {"up": {"job", "instance"}}  # Prometheus's own series for a scrape target
for line in open(metrics_path):
    m = re.match(r"^([A-Za-z_:][\w:]*)\{(.*)\} ", line)
    if m:
        labels.setdefault(m.group(1), set()).update(re.findall(r"(\w+)=\"", m.group(2)))
    elif re.match(r"^([A-Za-z_:][\w:]*) ", line):
        labels.setdefault(line.split()[0], set())
problems, names, count = [], set(), 0
doc = yaml.safe_load(open(rules_path))
groups = doc.get("groups") if isinstance(doc, dict) else None
if not isinstance(groups, list) or not groups:
    problems.append("no groups")
for g in groups or []:
    for r in g.get("rules", []):
        count += 1
        name = r.get("alert")
        if not name or name in names:
            problems.append("an alert without a name of its own: %r" % name)
        names.add(name)
        expr = r.get("expr", "")
        used = set(re.findall(r"\b(?:carve_\w+|DCGM_FI_\w+|up)\b(?!\s*\()", expr))
        if not used:
            problems.append("%s: its expr names no metric of carved's: %r" % (name, expr))
        for metric in used:
            if metric not in labels:
                problems.append("%s: %s is not exported by carved" % (name, metric))
        if r.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
            problems.append("%s: severity %r" % (name, r.get("labels", {}).get("severity")))
        if "for" in r and not re.fullmatch(r"\d+[smhd]", str(r["for"])):
            problems.append("%s: for %r is not a duration" % (name, r["for"]))
        notes = r.get("annotations", {})
        if not notes.get("summary"):
            problems.append("%s: no summary" % name)
        have = set().union(*(labels.get(m, set()) for m in used)) if used else set()
        for text in notes.values():
            for label in re.findall(r"\$labels\.(\w+)", text):
                if label not in have:
                    problems.append("%s: {{ $labels.%s }} is not a label of %s" %
                                    (name, label, ", ".join(sorted(used))))
for p in problems:
    print(p)
print("rules %d" % count)
PY
}

out=$(judge "$RULES" 2>&1)
n=$(sed -n 's/^rules //p' <<<"$out")
check "$RULES: $n alerting rules, each named once, with a severity, a summary and a valid 'for'; every metric and label they use is carved's (${out//$'\n'/; })" \
    "[ \"\${n:-0}\" -ge 6 ] && [ \"\$(grep -vc '^rules ' <<<\"\$out\")\" -eq 0 ]"

# the check can fail: a misspelt metric, a misspelt label
sed 's/carve_gpu_escapes > 0/carve_gpu_escape > 0/' "$RULES" >"$work/bad-metric.yml"
out=$(judge "$work/bad-metric.yml" 2>&1)
check "a rule naming carve_gpu_escape (not exported) is caught ($(grep -m1 -v '^rules' <<<"$out"))" \
    "grep -q 'carve_gpu_escape is not exported' <<<\"\$out\""
sed 's/{{ \$labels.slice }} on/{{ $labels.slice_name }} on/' "$RULES" >"$work/bad-label.yml"
out=$(judge "$work/bad-label.yml" 2>&1)
check "an annotation naming \$labels.slice_name (no such label) is caught ($(grep -m1 -v '^rules' <<<"$out"))" \
    "grep -q 'slice_name }} is not a label' <<<\"\$out\""

if [ -n "${PROMTOOL:-}" ]; then
    out=$("$PROMTOOL" check rules "$RULES" 2>&1)
    rc=$?
    check "promtool check rules ($PROMTOOL): exit $rc, $(tail -n 1 <<<"$out")" "[ $rc -eq 0 ] && [[ \"\$out\" == *SUCCESS* ]]"
    # rule_files in the test file are relative to it: promtool reads them from there
    out=$("$PROMTOOL" test rules tests/e2e/prometheus-alerts.test.yml 2>&1)
    rc=$?
    check "promtool test rules (which alerts fire on given series): exit $rc" "[ $rc -eq 0 ]"
    [ $rc -eq 0 ] || head -n 20 <<<"$out"
    if promtool_lint "$work/metrics"; then
        ok "promtool check metrics on the live carved's /metrics: no finding but dcgm-exporter's modelName label on the DCGM_FI_ families (exit $lint_rc, $lint_dcgm such lines)"
    else
        bad "promtool check metrics on the live carved's /metrics: exit $lint_rc: ${lint_findings//$'\n'/; }"
    fi
else
    promtool_missing "the expressions' syntax, tests/e2e/prometheus-alerts.test.yml and the lint of /metrics are not run (the names are checked)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
