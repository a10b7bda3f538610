#!/bin/sh
# Evaluator of the matmul example: compiles the candidate with harness.c,
# runs it, and prints the harness's JSON. Usage: evaluator.sh PROGRAM.c
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
if ! cc -O2 -std=c11 -o "$work/bin" "$1" "$here/harness.c" -lm 2>"$work/cc.log"; then
    # A candidate that does not compile is a result, not a crash: score 0, log kept.
    python3 -c 'import json,sys; print(json.dumps({"metrics": {"combined_score": 0, "correct": 0}, "artifacts": {"compiler": open(sys.argv[1]).read()[-4000:]}}))' "$work/cc.log"
    exit 0
fi
exec "$work/bin" "${MATMUL_N:-256}" "${MATMUL_REPEATS:-3}"
