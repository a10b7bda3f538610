#!/bin/bash
# evaluator.task: a run evaluates its children with kevolve's built-in kernel
# harness (kevolve re-executed as the worker), here the softmax task on the
# cpu backend; the harness's verdicts and per-scenario metrics are stored.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c
max_iterations: 3
evaluator:
  task: softmax
  backend: cpu
  timeout: 120
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
grep -q "eval --task softmax --backend cpu" "$WORK/run/evaluate.sh" || fail "no harness wrapper"
[ "$(sql "$db" "select json_extract(metrics, '\$.correct') from programs where mutator = 'initial'")" = 1 ] ||
    fail "the baseline was not judged correct by the harness"
n=$(sql "$db" "select count(*) from programs where status = 'ok' and json_extract(metrics, '\$.combined_score') is not null")
[ "$n" -ge 2 ] || fail "too few programs judged by the harness: $n"

# evaluator.quick passes the harness's quick mode to every child's evaluation.
sed -i 's/^  timeout: 120$/  timeout: 120\n  quick: true/' "$WORK/config.yaml"
sed -i 's/^max_iterations: 3$/max_iterations: 1/' "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run_quick"
grep -q "eval --task softmax --backend cpu --quick" "$WORK/run_quick/evaluate.sh" ||
    fail "evaluator.quick did not reach the harness wrapper"
# quick without a task has nothing to apply to: a clear error, not a silent no-op.
printf 'initial_program: x.c\nevaluator:\n  quick: true\n' >"$WORK/bad.yaml"
expect_exit 2 "$KV" run --config "$WORK/bad.yaml" --output "$WORK/run_bad"
grep -q "evaluator.quick" "$WORK/err.txt" || fail "no message naming evaluator.quick"

echo "ok"
