#!/bin/bash
# The mutators' bandit through the binary: each arm's statistics are the
# record of its children (draws: the children it made; successes: those that
# beat their parent; failures: those that failed or were rejected), written
# with every result, so they survive kill -9 and resume; `kevolve status`
# shows them in text and JSON; and gi, whose line edits of the tiny program
# never beat their parent, ends up with fewer draws than tune; a mutator
# that cannot act shows no share of the next draws.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 60
random_seed: 21
llm:
  models:
    - name: builtin:tune
      weight: 1
    - name: builtin:gi
      weight: 1
database:
  num_islands: 2
evaluator:
  timeout: 10
  parallel_evaluations: 2
YAML

# consistent DB: the stored statistics agree with the stored children.
consistent() {
    python3 - "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
fit = {i: f for i, f in con.execute("select id, fitness from programs")}
stats = {a: (d, s, f, w) for a, d, s, f, w in con.execute(
    "select arm, draws, successes, failures, weight from mutator_stats")}
assert set(stats) == {"builtin:tune", "builtin:gi"}, stats
for arm, (draws, succ, fails, weight) in stats.items():
    rows = con.execute("select parent_id, status, fitness from programs where iteration > 0"
                       " and is_migrant = 0 and mutator = ?", (arm.split(":")[1],)).fetchall()
    want_s = sum(1 for p, st, f in rows if st == "ok" and f is not None and f > fit[p])
    want_f = sum(1 for p, st, f in rows if st in ("failed", "timeout", "rejected"))
    assert (draws, succ, fails) == (len(rows), want_s, want_f), (arm, draws, succ, fails,
                                                                 len(rows), want_s, want_f)
assert abs(sum(w for *_, w in stats.values()) - 1) < 1e-6, stats
PY
}

KV_TEST_EVAL_SLEEP=0.05 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run" -q &
pid=$!
db="$WORK/run/run.db"
for _ in $(seq 1 400); do
    n=$([ -f "$db" ] && sql "$db" "select count(*) from programs" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 20 ] && break
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
consistent "$db" || fail "the statistics disagree with the children after kill -9"
expect_exit 0 "$KV" resume "$WORK/run"
consistent "$db" || fail "the statistics disagree with the children after resume"
[ "$(sql "$db" "select sum(draws) from mutator_stats")" -eq 60 ] ||
    fail "the arms do not account for the 60 iterations"
[ "$(sql "$db" "select draws from mutator_stats where arm = 'builtin:gi'")" -lt \
    "$(sql "$db" "select draws from mutator_stats where arm = 'builtin:tune'")" ] ||
    fail "gi, which never improves the tiny program, was not drawn less than tune"

expect_exit 0 "$KV" status "$WORK/run" --json
python3 - "$WORK/out.txt" "$db" <<'PY' || fail "status --json does not show the mutators' statistics"
import json, sqlite3, sys
s = json.load(open(sys.argv[1]))
con = sqlite3.connect(sys.argv[2])
want = {a: (d, su, f) for a, d, su, f in con.execute(
    "select arm, draws, successes, failures from mutator_stats")}
got = {m["arm"]: (m["draws"], m["successes"], m["failures"]) for m in s["mutators"]}
assert got == want, (got, want)
PY
expect_exit 0 "$KV" status "$WORK/run"
grep -q "builtin:tune" "$WORK/out.txt" && grep -q "share" "$WORK/out.txt" ||
    fail "status text does not show the mutators: $(cat "$WORK/out.txt")"

# A mutator that cannot act (tune, on a program with no annotated value)
# passes its draws on: it shows no share of the next draws, and the others'
# shares add up to all of them.
sed 's/  # kevolve: tune.*$//' "$TINY/initial.py" >"$WORK/plain.py"
grep -q "kevolve: tune" "$WORK/plain.py" && fail "plain.py still has tune annotations"
cat >"$WORK/plain.yaml" <<YAML
initial_program: $WORK/plain.py
evaluator: $TINY/evaluator.sh
max_iterations: 20
random_seed: 5
database:
  num_islands: 2
YAML
expect_exit 0 "$KV" run --config "$WORK/plain.yaml" --output "$WORK/plain" -q
expect_exit 0 "$KV" status "$WORK/plain" --json
python3 - "$WORK/out.txt" <<'PY' || fail "a mutator that cannot act shows a share of the draws"
import json, sys
arms = {m["arm"]: m for m in json.load(open(sys.argv[1]))["mutators"]}
assert arms["builtin:tune"]["draws"] == 0, arms
assert arms["builtin:tune"]["weight"] == 0, arms
assert abs(sum(m["weight"] for m in arms.values()) - 1) < 1e-6, arms
assert arms["builtin:gi"]["draws"] > 0 and arms["builtin:gi"]["weight"] > 0, arms
PY
expect_exit 0 "$KV" status "$WORK/plain"
grep -E "builtin:tune +0 +0 +0 +0 +0%" "$WORK/out.txt" >/dev/null ||
    fail "status text shows a share for tune: $(grep builtin:tune "$WORK/out.txt")"
echo "ok"
