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

echo "ok"
