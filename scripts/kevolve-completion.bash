# bash completion of kevolve (installed by `cmake --install` as
# share/bash-completion/completions/kevolve; or `source` this file). The
# commands and each command's options come from the binary's own help
# (`kevolve --help`, `kevolve COMMAND --help`), so they are always the ones
# it has; the values of options with a fixed set are listed; files and
# folders elsewhere.

# _kevolve_help KEVOLVE [COMMAND]: the help text (nothing when it fails).
_kevolve_help() {
    "$@" --help 2>/dev/null
}

_kevolve() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local kv=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]:-} words
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        words=$(_kevolve_help "$kv" | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
        COMPREPLY=($(compgen -W "$words --help --version" -- "$cur"))
        return 0
    fi
    case $prev in
    --backend | -b)
        COMPREPLY=($(compgen -W "auto cpu opencl cuda" -- "$cur"))
        return 0
        ;;
    --log-level)
        COMPREPLY=($(compgen -W "debug info warning error" -- "$cur"))
        return 0
        ;;
    --task)
        # The known tasks, as `kevolve eval` names them for an unknown one.
        words=$("$kv" eval --task "" /dev/null 2>&1 | sed -n 's/.*(known: \(.*\))$/\1/p' | tr -d ,)
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return 0
        ;;
    --iterations | -n | --seed | -s | --target-score | -t | --port | -p | --host | --top | \
        --api-base | --primary-model | --secondary-model | --stage | --timeout | \
        --kernel-timeout | --arch | --baseline-max-age | --lock-wait | --screen-keep | \
        --device | --device-wait | --scenarios)
        return 0 # a value of the user's own
        ;;
    esac
    if [[ $cur == -* ]]; then
        words=$(_kevolve_help "$kv" "$cmd" | grep -o -- '--[a-z][a-z-]*' | sort -u)
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
}
complete -o filenames -o bashdefault -F _kevolve kevolve
