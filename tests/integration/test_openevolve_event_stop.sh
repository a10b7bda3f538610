#!/bin/bash
# early_stopping_patience: -1 is OpenEvolve's event-based early stopping: the
# run stops when a child's early_stopping_metric equals convergence_threshold
# (the score of a solved task), and not before (a lower score, or the
# default threshold, does not stop it).
. "$(dirname "$0")/lib.sh"

# The tiny task scores 30 at its optimum; tune reaches 30 well within 500.
cat >"$WORK/event.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 500
random_seed: 5
early_stopping_patience: -1
convergence_threshold: 30
llm:
  models:
    - name: builtin:tune
YAML
expect_exit 0 "$KV" run --config "$WORK/event.yaml" --output "$WORK/e"
db="$WORK/e/run.db"
best=$(sql "$db" "select max(fitness) from programs where status = 'ok'")
last=$(sql "$db" "select max(iteration) from programs")
[ "${best%.*}" = 30 ] || fail "stopped with best $best, not at the solved score 30"
[ "$last" -lt 500 ] || fail "the solved score did not stop the run (iteration $last)"
sql "$db" "select data from events where kind = 'stopped'" | grep -q "convergence_threshold" ||
    fail "no stop event naming the threshold"

# A threshold no program can equal: the run goes to max_iterations.
sed -e "s/convergence_threshold: 30/convergence_threshold: 30.5/" -e "s/max_iterations: 500/max_iterations: 40/" \
    "$WORK/event.yaml" >"$WORK/never.yaml"
expect_exit 0 "$KV" run --config "$WORK/never.yaml" --output "$WORK/n"
last=$(sql "$WORK/n/run.db" "select max(iteration) from programs where mutator != 'migration'")
[ "$last" -eq 40 ] || fail "a threshold never reached still stopped the run at iteration $last"
echo "ok"
