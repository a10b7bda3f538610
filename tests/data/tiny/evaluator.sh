#!/bin/sh
# Deterministic evaluator for end-to-end tests. Score = 30 - |A-7| - |B-2| - |C-5|
# from the program's assignments; a program missing one scores 0. Sleeps
# $KV_TEST_EVAL_SLEEP seconds first (to keep evaluations in flight), and
# $KV_TEST_CHILD_SLEEP seconds for any program but the initial one.
[ -n "${KV_TEST_EVAL_SLEEP:-}" ] && sleep "$KV_TEST_EVAL_SLEEP"
if [ -n "${KV_TEST_CHILD_SLEEP:-}" ] && ! cmp -s "$1" "$(dirname "$0")/initial.py"; then
    sleep "$KV_TEST_CHILD_SLEEP"
fi
exec awk '
/^A = / { a = $3; ha = 1 } /^B = / { b = $3; hb = 1 } /^C = / { c = $3; hc = 1 }
function abs(x) { return x < 0 ? -x : x }
END {
    if (!(ha && hb && hc)) { printf "{\"metrics\": {\"combined_score\": 0, \"complete\": 0}}\n"; exit 0 }
    s = 30 - abs(a - 7) - abs(b - 2) - abs(c - 5)
    printf "{\"metrics\": {\"combined_score\": %d, \"complete\": 1, \"a\": %d}, \"artifacts\": {\"params\": \"%d %d %d\"}}\n", s, a, a, b, c
}' "$1"
