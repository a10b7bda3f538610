#!/bin/bash
# One writer per run: while `kevolve run` writes a folder, a resume, a second
# run and a run --force on it are refused (exit 4, naming the holder) and
# change nothing; read-only commands work meanwhile; the lock goes with the
# process, kill -9 included, so the next resume needs no clean-up.
. "$(dirname "$0")/lib.sh"

out="$WORK/run"
cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 30
random_seed: 9
database:
  num_islands: 2
evaluator:
  timeout: 20
  parallel_evaluations: 1
YAML
KV_TEST_EVAL_SLEEP=0.15 "$KV" run --config "$WORK/config.yaml" --output "$out" -q &
pid=$!
db="$out/run.db"
for _ in $(seq 1 400); do
    n=$( [ -f "$db" ] && sql "$db" "select count(*) from programs" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 2 ] && break
    sleep 0.05
done
[ "${n:-0}" -ge 2 ] || fail "the run did not start"
inode=$(stat -c %i "$db")

expect_exit 4 "$KV" resume "$out"
grep -q "is in use" "$WORK/err.txt" || fail "resume while running: $(cat "$WORK/err.txt")"
grep -q "pid $pid" "$WORK/err.txt" || fail "the message does not name the holder: $(cat "$WORK/err.txt")"
expect_exit 4 "$KV" run --config "$WORK/config.yaml" --output "$out" --force
grep -q "is in use" "$WORK/err.txt" || fail "run --force while running: $(cat "$WORK/err.txt")"
expect_exit 4 "$KV" run --config "$WORK/config.yaml" --output "$out"
[ "$(stat -c %i "$db")" = "$inode" ] || fail "the store was replaced under the running run"
expect_exit 0 "$KV" status "$out"
expect_exit 0 "$KV" best "$out" -o "$WORK/best.py"

wait $pid || fail "the first run did not finish cleanly (exit $?)"
dups=$(sql "$db" "select count(*) from (select iteration from programs where mutator != 'migration' group by iteration having count(*) > 1)")
[ "$dups" -eq 0 ] || fail "$dups iterations were written twice"
[ "$(sql "$db" "select max(iteration) from programs")" -eq 30 ] || fail "the run did not finish its iterations"

# Free again once the run is over; and after a kill -9, at once.
expect_exit 0 "$KV" resume "$out" --iterations 2
KV_TEST_EVAL_SLEEP=0.2 "$KV" resume "$out" --iterations 50 -q &
pid=$!
for _ in $(seq 1 200); do
    grep -q "pid=$pid" "$out/run.lock" 2>/dev/null && break
    sleep 0.05
done
grep -q "pid=$pid" "$out/run.lock" || fail "the resume did not take the lock"
kill -9 $pid
wait $pid 2>/dev/null || true
expect_exit 0 "$KV" resume "$out" --iterations 1
echo "ok"
