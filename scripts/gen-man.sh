#!/bin/sh
# Writes kevolve(1) from the help text of the kevolve binary KEVOLVE: the
# synopsis and exit codes of `kevolve --help`, then one section per command
# it lists, each that command's `--help` as it prints it. The build runs it
# (CMakeLists.txt, target kevolve_man), so the page says what the binary does.
# Usage: gen-man.sh KEVOLVE OUT
set -eu
kv=$1
out=$2
version=$("$kv" --version | sed 's/^kevolve //')

# Help text as literal roff: backslashes and hyphens escaped, a leading
# dot or quote (a request to roff) neutralised.
roff() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

commands=$("$kv" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || { echo "gen-man.sh: $kv --help lists no commands" >&2; exit 1; }
{
    # printf, not echo: some shells' echo reads backslashes.
    printf '.TH KEVOLVE 1 "" "kevolve %s" "User Commands"\n' "$version"
    printf '%s\n' ".SH NAME" 'kevolve \- an evolutionary coding agent for GPU kernels' \
        ".SH SYNOPSIS" ".B kevolve" \
        '[\fB\-\-version\fR] [\fB\-\-help\fR] \fICOMMAND\fR [\fIARGS\fR]'
    echo ".SH DESCRIPTION"
    echo "kevolve keeps a population of programs, asks mutators (language models and"
    echo "built-in operators) for edited children, evaluates every child in sandboxed"
    echo "processes and keeps the best and most diverse in islands of MAP-Elites grids."
    echo "Everything a run learns lands in OUTPUT_DIR/run.db."
    echo ".PP"
    echo ".nf"
    "$kv" --help | roff
    echo ".fi"
    echo ".SH COMMANDS"
    for cmd in $commands; do
        echo ".SS $cmd"
        echo ".nf"
        "$kv" "$cmd" --help | roff
        echo ".fi"
    done
    echo ".SH FILES"
    echo ".TP"
    echo ".I OUTPUT_DIR/run.db"
    echo "the run's store (SQLite): every program, its lineage, metrics and artifacts."
    echo ".TP"
    echo ".I OUTPUT_DIR/best/"
    echo "the best program so far and its metrics."
    echo ".TP"
    echo ".I OUTPUT_DIR/logs/kevolve.log"
    echo "the run's log."
} >"$out.tmp"
mv "$out.tmp" "$out"
