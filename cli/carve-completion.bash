# carve-completion.bash - bash completion for carve and carved. `make install` puts it in
# PREFIX/share/bash-completion/completions/ (as carve, and carved beside it); to try it
# from a checkout: source cli/carve-completion.bash.
#
# The options come from each command's --help, GPU models from `carve plan --models` and
# slice names from carved, so they follow the program; the few closed lists of values below
# are checked against carve's help by tests/e2e/completion.sh.
# shellcheck shell=bash

_carve_modes="carve timeslice mps mig"
_carve_priorities="latency batch normal"
_carve_workloads="training inference notebook batch"
_carve_trusts="team untrusted"
_carve_mechanisms="time-slicing mps mig hami carve" # advise --check takes whole too
_carve_sort_keys="name memory share idle"
_carve_subcommands="run slice ps mig plan advise cost top doctor help"

# _carve_options PROGRAM [SUBCOMMAND]: the long options its --help names, in its usage lines
# (up to the first blank line) and its option lines ("  -m, --memory SPEC ..."), and --help
_carve_options() {
    {
        "$@" --help 2>/dev/null |
            sed -n -e '1,/^$/p' -e '/^ *\(-[[:alnum:]], \)\{0,1\}--[a-z]/p' |
            grep -o -- '--[a-z][a-z-]*'
        echo --help
    } | sort -u
}

# _carve_models CARVE: GPU models and their families, as carve plan and advise take them
_carve_models() {
    "$1" plan --models 2>/dev/null | awk 'NR > 1 { print $1; print $2 }' | sort -u
}

# _carve_mig_models CARVE: the models carve has MIG profile tables of
_carve_mig_models() {
    "$1" mig profiles 2>/dev/null | sed -n 's/^\([^ ][^ ]*\) (NVML name.*/\1/p'
}

# _carve_slices CARVE: the names of carved's slices that one joins by name (none when carved
# does not answer): not those a carve run made for its one command (origin "run")
_carve_slices() {
    "$1" slice list --json 2>/dev/null | awk '
        /^    "name": "/ { name = $0; sub(/^    "name": "/, "", name); sub(/",?$/, "", name) }
        /^    "origin": "/ && $0 !~ /"run"/ { print name }'
}

_carve_reply() { # _carve_reply WORDS...: the words that start with the current word
    local IFS=$'\n'
    # shellcheck disable=SC2207 # compgen's words are one a line
    COMPREPLY=($(compgen -W "$*" -- "$cur"))
}

# --opt=value: bash makes `=' a word of its own; the value is completed as after --opt
_carve_equals() {
    if [ "$cur" = "=" ]; then
        cur=""
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi
}

_carve() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local carve=${COMP_WORDS[0]} sub="" action="" i
    # shellcheck disable=SC2088 # a ~ as typed, which the shell has not expanded
    [[ $carve == "~/"* ]] && carve=$HOME/${carve#"~/"}
    COMPREPLY=()
    _carve_equals

    if [ "$COMP_CWORD" -eq 1 ]; then
        _carve_reply $_carve_subcommands --help --version
        return
    fi
    sub=${COMP_WORDS[1]}
    # carve run's COMMAND, after `--' or without it at the first word that is neither an
    # option nor an option's value (carve run's options stop there: getopt's "+"):
    # complete it as its own command line
    local start=0
    if [ "$sub" = run ]; then
        for ((i = 2; i <= COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
            --) start=$((i + 1)); break ;;
            -m | --memory | -c | --compute | -p | --priority | -n | --name | -S | --slice | \
                -M | --mode | -I | --mig-instance) # and its value, unless given as --opt=value
                [ "${COMP_WORDS[i + 1]:-}" = "=" ] || i=$((i + 1)) ;;
            =) i=$((i + 1)) ;; # --opt=value: bash makes `=' a word of its own
            -*) ;;
            *) start=$i; break ;;
            esac
        done
    fi
    if [ "$start" -gt 0 ] && [ "$start" -le "$COMP_CWORD" ]; then
        if declare -F _command_offset >/dev/null; then
            _command_offset "$start" # bash-completion's: the command's own completion
        elif [ "$start" -eq "$COMP_CWORD" ]; then
            _carve_reply "$(compgen -c -- "$cur")"
        else
            compopt -o default 2>/dev/null
        fi
        return
    fi
    # the first word after the subcommand that is not an option: slice's and mig's action
    for ((i = 2; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in -*) ;; *) action=${COMP_WORDS[i]}; break ;; esac
    done

    case "$sub $prev" in
    "run --mode" | "run -M") _carve_reply $_carve_modes; return ;;
    "run --priority" | "run -p" | "slice --priority" | "slice -p") _carve_reply $_carve_priorities; return ;;
    "run --slice" | "run -S") _carve_reply "$(_carve_slices "$carve")"; return ;;
    "advise --gpu" | "advise -g" | "cost --gpu" | "cost -G" | "plan --fleet" | "plan -f")
        _carve_reply "$(_carve_models "$carve")"; return ;;
    "mig --gpu" | "mig -g") _carve_reply "$(_carve_mig_models "$carve")"; return ;;
    "advise --workload" | "advise -w") _carve_reply $_carve_workloads; return ;;
    "advise --trust" | "advise -t") _carve_reply $_carve_trusts; return ;;
    "advise --check" | "advise -k") _carve_reply whole $_carve_mechanisms; return ;;
    "cost --mechanism" | "cost -m") _carve_reply $_carve_mechanisms; return ;;
    "top --sort" | "top -s") _carve_reply $_carve_sort_keys; return ;;
    "top --input" | "top -f" | "plan --svg" | "plan -s" | "cost --from-metrics" | "cost -M")
        compopt -o default 2>/dev/null; return ;;
    "run --memory" | "run -m" | "run --compute" | "run -c" | "run --name" | "run -n" | \
        "slice --memory" | "slice --compute" | "slice --users" | "slice --groups")
        return ;; # a value of the user's own
    esac

    if [[ $cur == -* ]]; then
        _carve_reply "$(_carve_options "$carve" "$sub")"
        return
    fi
    case "$sub" in
    help) [ "$COMP_CWORD" -eq 2 ] && _carve_reply $_carve_subcommands ;;
    slice)
        if [ -z "$action" ]; then
            _carve_reply create list delete
        elif [ "$action" = delete ]; then
            _carve_reply "$(_carve_slices "$carve")"
        fi
        ;;
    mig) [ -z "$action" ] && _carve_reply profiles plan apply list destroy ;;
    plan) compopt -o default 2>/dev/null ;; # the workload file
    esac
}

_carved() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    _carve_equals
    case "$prev" in
    --config | -c | --socket | -S | --state-dir | -d) compopt -o default 2>/dev/null; return ;;
    --listen | -l) return ;;
    esac
    _carve_reply "$(_carve_options "${COMP_WORDS[0]}")"
}

complete -F _carve carve
complete -F _carved carved
