#!/bin/bash
# Say it before running: mistakes that would make a run silently useless are
# errors at the start (exit 2, naming the key, the value and what is
# expected), and the evaluator's unreadable output is named precisely.
. "$(dirname "$0")/lib.sh"

base() {
    cat <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 3
evaluator:
  timeout: 20
YAML
}

# An initial program over max_code_length: every child would be rejected.
{ base; echo "max_code_length: 100"; } >"$WORK/short.yaml"
expect_exit 2 "$KV" run --config "$WORK/short.yaml" --output "$WORK/o1" -q
grep -q "is [0-9]* characters, over max_code_length (100)" "$WORK/err.txt" ||
    fail "no max_code_length error: $(cat "$WORK/err.txt")"
[ ! -e "$WORK/o1" ] || fail "a refused start created its output folder"
expect_exit 2 "$KV" run --config "$WORK/short.yaml" --dry-run
grep -q "over max_code_length" "$WORK/err.txt" || fail "--dry-run misses max_code_length"

# The default fits real kernels: a flagship CUDA seed, larger than
# OpenEvolve's default (10000) that would have refused it.
seed=$KV_SOURCE_DIR/tasks/gqa_attention/cuda/prefill_hopper.cu
[ "$(wc -c <"$seed")" -gt 10000 ] || fail "the CUDA seed is not the large kernel this test expects"
base >"$WORK/default.yaml"
expect_exit 0 "$KV" run "$seed" "$TINY/evaluator.sh" --config "$WORK/default.yaml" --dry-run

# A feature dimension the evaluator does not report: an error after the
# first evaluation naming it and the metrics that exist; nothing left behind.
{ base; printf 'database:\n  feature_dimensions: [complexity, a_metric_that_does_not_exist]\n'; } >"$WORK/dims.yaml"
expect_exit 2 "$KV" run --config "$WORK/dims.yaml" --output "$WORK/o2" -q
grep -q "'a_metric_that_does_not_exist' is not a metric the evaluator reports" "$WORK/err.txt" ||
    fail "unknown dimension not named: $(cat "$WORK/err.txt")"
grep -q "its numeric metrics: .*combined_score" "$WORK/err.txt" ||
    fail "the metrics that exist are not listed: $(cat "$WORK/err.txt")"
[ ! -e "$WORK/o2/run.db" ] || fail "the refused run left its store behind"
{ base; printf 'database:\n  feature_dimensions: [complexity, a]\n'; } >"$WORK/dims_ok.yaml"
expect_exit 0 "$KV" run --config "$WORK/dims_ok.yaml" --output "$WORK/o2" -q

# Absurd sizes.
for kv in "database:|  num_islands: 100000000" "database:|  population_size: 2000000000" \
    "evaluator:|  parallel_evaluations: 100000" "max_code_length: 2000000000"; do
    { base | grep -v "^evaluator:$" | grep -v "^  timeout"; echo "$kv" | tr '|' '\n'; } >"$WORK/big.yaml"
    expect_exit 2 "$KV" run --config "$WORK/big.yaml" --dry-run
    grep -q "must be at most" "$WORK/err.txt" || fail "'$kv' accepted: $(cat "$WORK/err.txt")"
    grep -q "big.yaml:[0-9]" "$WORK/err.txt" || fail "'$kv': no line: $(cat "$WORK/err.txt")"
done

# A wrong type in a key given twice: an error, wherever it comes.
{ base | grep -v "^evaluator: "; printf 'evaluator: %s\nevaluator: [a]\n' "$TINY/evaluator.sh"; } >"$WORK/twice.yaml"
expect_exit 2 "$KV" run --config "$WORK/twice.yaml" --dry-run
grep -q "twice.yaml:[0-9]*: evaluator: expected a path, got a list" "$WORK/err.txt" ||
    fail "evaluator: [a] after a path: $(cat "$WORK/err.txt")"

# Evaluator output over the cap, or not UTF-8: said so, not "not JSON".
cat >"$WORK/big_output.py" <<'PY'
import json
print(json.dumps({"metrics": {"combined_score": 1.0}, "artifacts": {"log": "x" * (5 << 20)}}))
PY
cat >"$WORK/not_utf8.py" <<'PY'
import sys
sys.stdout.buffer.write(b'{"metrics": {"combined_score": 1.0}, "artifacts": {"log": "caf\xe9"}}\n')
PY
base >"$WORK/plain.yaml"
expect_exit 1 "$KV" run "$TINY/initial.py" "$WORK/big_output.py" --config "$WORK/plain.yaml" --output "$WORK/o3" -q
grep -q "over the 4 MiB cap" "$WORK/err.txt" || fail "oversized output: $(cat "$WORK/err.txt")"
expect_exit 1 "$KV" run "$TINY/initial.py" "$WORK/not_utf8.py" --config "$WORK/plain.yaml" --output "$WORK/o4" -q
grep -q "not valid UTF-8 (byte 0xe9 at offset" "$WORK/err.txt" || fail "non-UTF-8 output: $(cat "$WORK/err.txt")"
echo "ok"
