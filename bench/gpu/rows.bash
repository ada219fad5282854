# shellcheck shell=bash disable=SC2034  # rows and failures are the sourcing script's
# rows.bash - sourced by the run-*.sh scripts whose report is a table of checks: rows holds
# the table's lines, failures counts the FAIL rows (the script's exit status follows it).
#   row CHECK RESULT PASS|FAIL|MISS|INFO   adds a row and prints it
rows=()
failures=0
row() {
    rows+=("| $1 | $2 | $3 |")
    echo "   $3: $1: $2"
    [ "$3" = FAIL ] && failures=$((failures + 1))
    return 0
}
