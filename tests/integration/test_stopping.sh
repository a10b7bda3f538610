#!/bin/bash
# A run stops early when the target score is reached, or when the best score
# has not improved within early_stopping_patience iterations; both exit 0 and
# say why.
. "$(dirname "$0")/lib.sh"

expect_exit 0 "$KV" run --config "$TINY/config.yaml" --output "$WORK/t" --iterations 500 --target-score 24
db="$WORK/t/run.db"
best=$(sql "$db" "select max(fitness) from programs where status = 'ok'")
last=$(sql "$db" "select max(iteration) from programs")
python3 -c "import sys; sys.exit(0 if float('$best') >= 24 else 1)" || fail "stopped below the target: $best"
[ "$last" -lt 500 ] || fail "target reached but the run went on to iteration $last"
sql "$db" "select data from events where kind = 'stopped'" | grep -q "target score reached" ||
    fail "no 'target score reached' stop event"

# Patience 3 with a threshold no step can beat: stops 3 iterations after the start.
cat >"$WORK/patience.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 200
early_stopping_patience: 3
convergence_threshold: 100
YAML
expect_exit 0 "$KV" run --config "$WORK/patience.yaml" --output "$WORK/p"
last=$(sql "$WORK/p/run.db" "select max(iteration) from programs")
[ "$last" -eq 3 ] || fail "early stopping after patience 3 stopped at iteration $last"
sql "$WORK/p/run.db" "select data from events where kind = 'stopped'" | grep -q "early stopping" ||
    fail "no early stopping event"
echo "ok"
