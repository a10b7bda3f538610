#!/bin/bash
# kill -9 in the middle of a run, then `kevolve resume`: nothing already
# evaluated is lost or changed, lineage and islands stay intact, and the run
# finishes its iterations.
. "$(dirname "$0")/lib.sh"

out="$WORK/run"
cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 60
random_seed: 77
database:
  num_islands: 3
  population_size: 40
  feature_dimensions: [complexity, a]
  feature_bins: 4
  migration_interval: 5
evaluator:
  timeout: 10
  parallel_evaluations: 3
YAML
KV_TEST_EVAL_SLEEP=0.2 "$KV" run --config "$WORK/config.yaml" --output "$out" -q &
pid=$!
db="$out/run.db"
for _ in $(seq 1 300); do
    n=$( [ -f "$db" ] && sql "$db" "select count(*) from programs" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 25 ] && break
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
[ "${n:-0}" -ge 25 ] || fail "the run stored only ${n:-0} programs before the kill"

q="select id, parent_id, island, generation, iteration, mutator, status, coalesce(fitness,'nan'), is_migrant, source from programs order by id"
sql "$db" "$q" >"$WORK/before.rows"
before=$(wc -l <"$WORK/before.rows")
last=$(sql "$db" "select max(iteration) from programs")
[ "$last" -lt 60 ] || fail "the run finished before the kill; nothing to resume"

KV_TEST_EVAL_SLEEP=0.01 expect_exit 0 "$KV" resume "$out"
sql "$db" "$q" >"$WORK/after.rows"
head -n "$before" "$WORK/after.rows" | diff "$WORK/before.rows" - >&2 ||
    fail "resume changed or lost programs stored before the kill"
[ "$(sql "$db" "select max(iteration) from programs")" -eq 60 ] || fail "resume did not finish the run"
orphans=$(sql "$db" "select count(*) from programs c where c.parent_id != 0 and not exists (select 1 from programs p where p.id = c.parent_id)")
[ "$orphans" -eq 0 ] || fail "lineage broken after resume"
wrong=$(sql "$db" "select count(*) from programs where iteration > 0 and mutator != 'migration' and island != iteration % 3")
[ "$wrong" -eq 0 ] || fail "children on the wrong island after resume"
sql "$db" "select kind from events" | grep -q resumed || fail "no 'resumed' event"

# resume --iterations N runs N more.
expect_exit 0 "$KV" resume "$db" --iterations 5
[ "$(sql "$db" "select max(iteration) from programs")" -eq 65 ] || fail "--iterations 5 did not run 5 more"
echo "ok"
