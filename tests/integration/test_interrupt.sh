#!/bin/bash
# SIGINT stores the work in flight and stops with exit 130; the run resumes.
# A second SIGINT stops at once, killing evaluations in flight.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 1000
evaluator:
  timeout: 30
  parallel_evaluations: 2
YAML
db="$WORK/a/run.db"
KV_TEST_EVAL_SLEEP=0.3 "$KV" run --config "$WORK/config.yaml" --output "$WORK/a" -q &
pid=$!
for _ in $(seq 1 100); do
    [ -f "$db" ] && [ "$(sql "$db" "select count(*) from programs" 2>/dev/null || echo 0)" -ge 4 ] && break
    sleep 0.1
done
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ $rc -eq 130 ] || fail "first SIGINT: exit $rc, expected 130"
sql "$db" "select kind from events" | grep -q interrupted || fail "no 'interrupted' event"
# The children in flight were evaluated and stored: the last iterations have no gap.
gaps=$(sql "$db" "select count(*) from (select iteration from programs where mutator != 'migration' group by iteration) t")
maxit=$(sql "$db" "select max(iteration) from programs")
[ "$gaps" -eq $((maxit + 1)) ] || fail "iterations in flight were lost: $gaps distinct of 0..$maxit"

# Second SIGINT: evaluations that would take 30 s are cut short.
KV_TEST_CHILD_SLEEP=29.5 "$KV" run --config "$WORK/config.yaml" --output "$WORK/b" -q &
pid=$!
sleep 1.5
kill -INT $pid
sleep 0.5
kill -INT $pid
start=$(date +%s)
set +e
wait $pid
rc=$?
set -e
[ $rc -eq 130 ] || fail "second SIGINT: exit $rc, expected 130"
[ $(($(date +%s) - start)) -lt 5 ] || fail "second SIGINT did not stop at once"
sleep 0.2
! pgrep -f "sleep 29.5" >/dev/null || fail "evaluators survived the stop"
echo "ok"
