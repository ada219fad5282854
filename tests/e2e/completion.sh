#!/usr/bin/env bash
# completion.sh - bash completion (cli/carve-completion.bash) for this build's carve and
# carved: subcommands, each subcommand's options as its --help lists them, the closed lists
# of values (each named by the help of the option it completes, so that the two cannot
# drift apart), GPU models from `carve plan --models`, slice names from a private carved,
# and carve run's COMMAND completed as a command, not as carve's options.
#
#   BUILD=build bash tests/e2e/completion.sh
# shellcheck disable=SC2034  # the checks read their variables inside eval strings
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/e2e/private_carved.bash
source tests/e2e/private_carved.bash
# shellcheck source=cli/carve-completion.bash
source cli/carve-completion.bash

# offered LINE: what completing LINE offers (the last word is the one completed; a line
# that ends in a space completes an empty word), one a line, sorted; then anything the
# completion wrote to stderr (the user's terminal), as "stderr: ..." lines, which no
# check expects
offered() {
    local line=$1 fn=_carve
    read -r -a COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    [[ ${COMP_WORDS[0]} == *carved ]] && fn=_carved
    COMPREPLY=()
    $fn 2>"$work/completion.err"
    printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort
    sed 's/^/stderr: /' "$work/completion.err"
}
has() { grep -qx -- "$2" <<<"$1"; } # has LIST WORD
words() { echo "$1" | tr '\n' ' '; }

C=$CARVE
out=$(offered "$C ")
check "carve <TAB>: the subcommands ($(words "$out"))" \
    'for w in run slice ps mig plan advise cost top help; do has "$out" $w || exit 1; done'
# the subcommands carve's own help lists are those offered
listed=$("$C" --help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 { print $1 }' | sort)
check "the subcommands are the ones carve --help lists ($(words "$listed"))" \
    "[ \"\$(offered '$C ' | grep -v '^-')\" = \"\$listed\" ]"
out=$(offered "$C r")
check "carve r<TAB>: run ($(words "$out"))" '[ "$out" = run ]'

for sub in run slice ps mig plan advise cost top doctor; do
    out=$(offered "$C $sub --")
    n=$(grep -c . <<<"$out")
    opt_lines=$("$C" "$sub" --help | grep -o '^ *\(-[[:alnum:]], \)\{0,1\}--[a-z][a-z-]*' | grep -o -- '--[a-z-]*' | sort -u)
    missing=$(comm -13 <(echo "$out") <(echo "$opt_lines") | tr '\n' ' ')
    check "carve $sub --<TAB>: $n options, each option line of its help among them (missing: ${missing:-none})" \
        "[ $n -ge 2 ] && has \"\$out\" --help && [ -z '$missing' ]"
done
out=$(offered "$C run --me")
check "carve run --me<TAB>: --memory ($(words "$out"))" '[ "$out" = --memory ]'
out=$(offered "$C slice --")
check "carve slice's options come from its usage lines ($(words "$out"))" \
    'for w in --memory --compute --priority --users --groups --json; do has "$out" $w || exit 1; done'

# a closed list: completing OPTION of SUB offers exactly WORDS, and SUB's help names each
closed() { # closed "SUB OPTION" "WORDS" HELP_LINES_PATTERN
    local out expected help missing="" w
    out=$(offered "$C $1 ")
    expected=$(tr ' ' '\n' <<<"$2" | sort)
    help=$("$C" ${1%% *} --help | grep -A3 -- "$3")
    for w in $2; do [[ $help == *"$w"* ]] || missing+="$w "; done
    check "carve $1 <TAB>: $(words "$out")(and its help names each: missing ${missing:-none})" \
        "[ \"\$out\" = \"\$expected\" ] && [ -z '$missing' ]"
}
closed "run --mode" "$_carve_modes" '--mode'
closed "run --priority" "$_carve_priorities" '--priority'
closed "advise --workload" "$_carve_workloads" '--workload'
closed "advise --trust" "$_carve_trusts" '--trust'
closed "advise --check" "whole $_carve_mechanisms" '--check'
closed "cost --mechanism" "$_carve_mechanisms" '--mechanism'
closed "top --sort" "$_carve_sort_keys" '--sort'
# --opt=value: bash makes `=' a word of its own ("--sort=" is --sort, =; "--mode=t" is
# --mode, =, t), and the value is completed as after --opt
out=$(offered "$C top --sort =")
check "carve top --sort=<TAB>: the sort keys ($(words "$out"))" '[ "$(words "$out")" = "idle memory name share " ]'
out=$(offered "$C run --mode = t")
check "carve run --mode=t<TAB>: timeslice ($(words "$out"))" '[ "$out" = timeslice ]'
# the values carve takes: advise accepts each workload, trust and mechanism it is offered
bad_values=""
for w in $_carve_workloads; do "$C" advise --gpu H100 --workload "$w" >/dev/null 2>&1 || bad_values+="workload=$w "; done
for t in $_carve_trusts; do "$C" advise --gpu H100 --workload batch --trust "$t" >/dev/null 2>&1 || bad_values+="trust=$t "; done
for m in whole $_carve_mechanisms; do
    "$C" advise --gpu H100 --workload batch --check "$m" >/dev/null 2>&1
    [ $? -le 1 ] || bad_values+="check=$m "
done
check "carve advise takes every value offered (refused: ${bad_values:-none})" "[ -z '$bad_values' ]"

out=$(offered "$C advise --gpu ")
check "carve advise --gpu <TAB>: models and families from carve plan --models ($(words "$out" | cut -c1-80)...)" \
    'has "$out" H100 && has "$out" H100-80GB && has "$out" T4-16GB'
out=$(offered "$C mig profiles --gpu ")
bad_values=""
for g in $out; do "$C" mig profiles --gpu "$g" >/dev/null 2>&1 || bad_values+="$g "; done
check "carve mig --gpu <TAB>: the models with MIG tables, each taken by carve mig ($(words "$out"); refused: ${bad_values:-none})" \
    'has "$out" H100-80GB && has "$out" H200-141GB && ! has "$out" T4-16GB && [ -z "$bad_values" ]'
out=$(offered "$C mig ")
check "carve mig <TAB>: its actions ($(words "$out"))" \
    '[ "$(words "$out")" = "apply destroy list plan profiles " ]'
out=$(offered "$C help ")
check "carve help <TAB>: the subcommands" 'has "$out" advise && has "$out" top'

# carve run's command: completed as a command, never with carve's options
out=$(offered "$C run --memory 1GiB -- bas")
check "carve run ... -- bas<TAB>: commands (bash among $(grep -c . <<<"$out"))" 'has "$out" bash'
out=$(offered "$C run -- ls --me")
check "carve run -- ls --me<TAB>: not carve's --memory ($(words "$out"))" '! has "$out" --memory'
# without `--': the first word that is neither an option nor an option's value
out=$(offered "$C run --memory 1GiB -q bas")
check "carve run --memory 1GiB -q bas<TAB>: commands ($(grep -c . <<<"$out") offered)" 'has "$out" bash && ! has "$out" --memory'
out=$(offered "$C run --memory = 1GiB bas")
check "carve run --memory=1GiB bas<TAB>: commands ($(grep -c . <<<"$out") offered)" 'has "$out" bash'
out=$(offered "$C run -n job ls --me")
check "carve run -n job ls --me<TAB>: ls's, not carve's --memory ($(words "$out"))" '! has "$out" --memory'
# every option of carve run that takes a value (its help: "-x, --opt VALUE") is skipped
# with its value: its value is not taken for the command
valued=$("$C" run --help | sed -n 's/^ *-[[:alpha:]], \(--[a-z-]*\) [A-Z].*/\1/p')
wrong=""
for o in $valued; do has "$(offered "$C run $o bas")" bash && wrong+="$o "; done
check "carve run OPTION bas<TAB>: no command offered as the value of any of $(words "$valued")(offered for: ${wrong:-none})" \
    "[ \$(wc -w <<<'$valued') -ge 6 ] && [ -z '$wrong' ]"
out=$(offered "$C run --name ")
check "carve run --name <TAB>: a value of the user's own, not a command ($(grep -c . <<<"$out") offered)" '[ -z "$out" ]'

# slice names, from carved
out=$(offered "$C slice delete ")
check "carve slice delete <TAB> with no carved: nothing, no error ($(words "$out"))" '[ -z "$out" ]'
start_carved 1s
"$C" slice create alpha --memory 256MiB >/dev/null
"$C" slice create beta --memory 256MiB >/dev/null
# a slice a carve run made for its one command is no slice to join or delete by name
"$C" run --simulate --memory 256MiB --name runner -- sleep 3 &
runner=$!
for _ in $(seq 50); do "$C" slice list 2>/dev/null | grep -q '^runner-' && break; sleep 0.1; done
out=$(offered "$C slice delete ")
check "carve slice delete <TAB>: carved's slices, not carve run's own ($(words "$out"); listed: $("$C" slice list | awk 'NR > 1 { printf "%s ", $1 }'))" \
    '[ "$(words "$out")" = "alpha beta " ] && "$C" slice list | grep -q "^runner-"'
wait "$runner"
out=$(offered "$C run --slice al")
check "carve run --slice al<TAB>: alpha ($(words "$out"))" '[ "$out" = alpha ]'
out=$(offered "$C slice ")
check "carve slice <TAB>: create, list, delete ($(words "$out"))" '[ "$(words "$out")" = "create delete list " ]'
"$C" slice delete alpha >/dev/null
"$C" slice delete beta >/dev/null

out=$(offered "$CARVED --")
check "carved --<TAB>: its options ($(words "$out"))" \
    'for w in --config --simulate --socket --state-dir --listen --check-config --help; do has "$out" $w || exit 1; done'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
