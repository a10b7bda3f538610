#!/bin/sh
# Evaluator of the matmul example: compiles the candidate with harness.c,
# runs it, and prints the harness's JSON. Usage: evaluator.sh PROGRAM.c
# A candidate that does not compile or crashes is a failure, said as
# kevolve's protocol says it: {"error": WHY, "artifacts": {"reason": CODE,
# ...}}; kevolve stores it failed and never breeds from it (a score of 0
# would be a score).
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

# fail WHY CODE NAME FILE: prints the failure, with the tail of FILE as
# artifact NAME.
fail() {
    python3 -c 'import json, sys
print(json.dumps({"error": sys.argv[1], "metrics": {"correct": 0},
                  "artifacts": {"reason": sys.argv[2], sys.argv[3]: open(sys.argv[4]).read()[-4000:]}}))' "$@"
    exit 0
}

if ! cc -O2 -std=c11 -o "$work/bin" "$1" "$here/harness.c" -lm 2>"$work/cc.log"; then
    fail "the candidate does not compile (the compiler's messages are in artifacts.compiler)" \
        compile_error compiler "$work/cc.log"
fi
"$work/bin" "${MATMUL_N:-256}" "${MATMUL_REPEATS:-3}" >"$work/out.json" 2>"$work/run.log"
status=$?
[ "$status" -eq 0 ] || fail "the candidate crashed (harness exit status $status)" crash stderr "$work/run.log"
cat "$work/out.json"
