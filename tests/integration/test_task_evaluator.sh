#!/bin/bash
# evaluator.task: a run evaluates its children with kevolve's built-in kernel
# harness (kevolve re-executed as the worker, each child one job document),
# here the softmax task on the cpu backend; the harness's verdicts and
# per-scenario rows are stored, and a child it rejects is stored failed with
# the harness's reason as its code. The config's settings reach the job.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c
max_iterations: 3
evaluator:
  task: softmax
  backend: cpu
  timeout: 120
YAML
KEVOLVE_KEEP_PROGRAMS=1 expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
[ ! -e "$WORK/run/evaluate.sh" ] || fail "a wrapper script was written: jobs need none"
job=$(ls "$WORK"/run/work/*.c.job.json | head -n 1)
[ -n "$job" ] || fail "no job document in the run's work folder"
# What the config said is in the job, one document: task, backend, the
# one budget (evaluator.timeout), the run folder, the slot channel.
python3 - "$job" "$WORK/run" <<'PY' || fail "the job does not carry the config: $(cat "$job")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["task"] == "softmax" and j["backend"] == "cpu", j
assert j["limits"]["total_s"] == 120, j["limits"]
assert j["run_dir"] == sys.argv[2], j.get("run_dir")
assert j["candidate"].endswith(".c") and j["slot_fd"] == 3, j
PY
[ "$(sql "$db" "select count(*) from scenario_results where program_id = 1")" = 3 ] ||
    fail "the initial program has not a row for each of softmax's three scenarios"
[ "$(sql "$db" "select value from meta where key = 'devices'" | python3 -c 'import json,sys; print(json.load(sys.stdin)["backend"])')" = cpu ] ||
    fail "the manifest does not record the devices"
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
sed -i 's/^  timeout: 120$/  timeout: 120\n  quick: true\n  kernel_timeout: 7\n  scenarios: [decode]/' "$WORK/config.yaml"
sed -i 's/^max_iterations: 3$/max_iterations: 1/' "$WORK/config.yaml"
KEVOLVE_KEEP_PROGRAMS=1 expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run_quick"
job=$(ls "$WORK"/run_quick/work/*.c.job.json | head -n 1)
python3 - "$job" <<'PY' || fail "evaluator.quick, kernel_timeout or scenarios did not reach the job: $(cat "$job")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["quick"] is True and j["limits"]["call_s"] == 7 and j["scenarios"] == ["decode"], j
PY
[ "$(sql "$WORK/run_quick/run.db" "select group_concat(scenario) from scenario_results where program_id = 1")" = decode ] ||
    fail "evaluator.scenarios did not limit the timed scenarios to decode"
# quick without a task has nothing to apply to: a clear error, not a silent no-op.
printf 'initial_program: x.c\nevaluator:\n  quick: true\n' >"$WORK/bad.yaml"
expect_exit 2 "$KV" run --config "$WORK/bad.yaml" --output "$WORK/run_bad"
grep -q "evaluator.quick" "$WORK/err.txt" || fail "no message naming evaluator.quick"

echo "ok"
