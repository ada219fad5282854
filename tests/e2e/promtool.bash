# promtool.bash - sourced by the e2e scripts that run promtool, Prometheus's checker (not a
# test itself: run-all.sh runs tests/e2e/*.sh only). Needs the caller's ok and bad, and the
# repository root as the current directory. After sourcing:
#   PROMTOOL            the promtool to run, an absolute path: $PROMTOOL if set, else the one
#                       on PATH, else deps/bin/promtool (scripts/install-promtool.sh, which
#                       scripts/install-deps.sh runs, takes it from Debian 12's package);
#                       empty where there is none
#   promtool_missing TEXT
#                       the check for a script without promtool: a pass saying what was not
#                       run (TEXT), or a failure where CARVE_REQUIRE_PROMTOOL is set and
#                       not 0: scripts/test.sh sets it, its install-deps being there to
#                       provide promtool
#   promtool_lint FILE  `promtool check metrics` on FILE (a /metrics body); true when it
#                       finds nothing but DCGM_CAMEL. Sets lint_rc (promtool's status: 0
#                       clean, 3 findings, 1 unreadable), lint_findings (what else it said,
#                       one a line) and lint_dcgm (how many DCGM_CAMEL lines it said)
#
# DCGM_CAMEL: carved exports the GPUs' DCGM_FI_* families under dcgm-exporter's names and
# labels, modelName among them (docs/carved.md, Metrics), so that dashboards and alerts made
# for dcgm-exporter read them unchanged; promtool's lint wants label names in snake_case.
# That finding is kept out for the DCGM_FI_ families only: a carve_ family with a camelCase
# label still fails.
DCGM_CAMEL="^DCGM_FI_[A-Z0-9_]+ label names should be written in 'snake_case' not 'camelCase'\$"

if [ -z "${PROMTOOL:-}" ]; then
    if command -v promtool >/dev/null 2>&1; then
        PROMTOOL=$(command -v promtool)
    elif [ -x deps/bin/promtool ]; then
        PROMTOOL=$PWD/deps/bin/promtool
    fi
fi

promtool_missing() {
    if [ "${CARVE_REQUIRE_PROMTOOL:-0}" != 0 ]; then
        bad "promtool is not installed, and CARVE_REQUIRE_PROMTOOL is set, as scripts/test.sh sets it (scripts/install-deps.sh fetches it into deps/bin: see what it said; CARVE_REQUIRE_PROMTOOL=0 runs without it): $1"
    else
        ok "promtool is not installed here (bash scripts/install-promtool.sh fetches it): $1"
    fi
}

promtool_lint() {
    local out
    out=$("$PROMTOOL" check metrics <"$1" 2>&1)
    lint_rc=$?
    # shellcheck disable=SC2034 # the caller's message reads it
    lint_dcgm=$(grep -cE "$DCGM_CAMEL" <<<"$out")
    lint_findings=$(grep -vE "$DCGM_CAMEL" <<<"$out")
    { [ "$lint_rc" -eq 0 ] || [ "$lint_rc" -eq 3 ]; } && [ -z "$lint_findings" ]
}
