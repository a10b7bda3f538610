#!/bin/bash
# evaluator.task: a run evaluates its children with kevolve's built-in kernel
# harness (kevolve re-executed as the worker), here the softmax task on the
# cpu backend; the harness's verdicts and per-scenario metrics are stored, and
# a child it rejects is stored failed with the harness's reason as its code.
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
n=$(sql "$db" "select count(*) from programs where json_extract(metrics, '\$.correct') is not null")
[ "$n" -ge 2 ] || fail "too few programs judged by the harness: $n"
# A child the harness rejected is a failure with the harness's reason code, never ok.
bad=$(sql "$db" "select count(*) from programs p where status = 'ok' and (json_extract(metrics, '\$.correct') = 0
    or exists (select 1 from artifacts a where a.program_id = p.id and a.name = 'verdict' and a.value = 'rejected'))")
[ "$bad" -eq 0 ] || fail "$bad children rejected by the harness were stored ok"
sql "$db" "select p.reason_code, a.value from programs p join artifacts a on a.program_id = p.id
    where a.name = 'reason' and p.status = 'failed'" | while IFS='|' read -r code reason; do
    [ "$code" = "$reason" ] || fail "stored reason code '$code' is not the harness's '$reason'"
done

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
