#!/bin/bash
# A failure is a failure (CPU path, default config): children whose
# evaluation crashes, reports an error, prints no JSON, gives a NaN or
# infinite score, or carries a kernel harness's "rejected" verdict are
# stored failed with a reason code, counted by reason in the progress line
# and in `kevolve status` (text and JSON), and keep their artifacts; none of
# them is stored ok, owns a MAP-Elites cell, becomes a parent or the best.
# Every child's evaluation gets KEVOLVE_RUN_DIR and KEVOLVE_PARENT_METRICS.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $KV_SOURCE_DIR/tests/data/evaluators/sometimes_fails.py
max_iterations: 60
random_seed: 11
database:
  num_islands: 2
  feature_dimensions: [complexity, a]
  feature_bins: {complexity: 4, a: 8}
evaluator:
  timeout: 20
  max_retries: 0
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"

python3 - "$db" <<'PY' || fail "a failed child was stored as ok, placed, or chosen as a parent"
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
# sometimes_fails.py fails every odd iteration, its way chosen by the iteration mod 12.
codes = {1: "evaluator_crash", 3: "evaluator_error", 5: "non_finite_fitness",
         7: "non_finite_fitness", 9: "wrong_result", 11: "bad_output"}
rows = con.execute("select id, parent_id, iteration, status, reason_code, fitness, features"
                   " from programs where is_migrant = 0").fetchall()
status_of = {r[0]: r[3] for r in rows}
seen = set()
for pid, parent, it, status, code, fitness, features in rows:
    want = codes.get(it % 12) if it else None
    if status in ("duplicate", "rejected"):
        pass  # never evaluated
    elif want:
        assert (status, code) == ("failed", want), (pid, it, status, code, want)
        seen.add(code)
    else:
        assert status == "ok", (pid, it, status, code)
    if status != "ok":
        assert fitness is None and features is None, ("a failure was placed", pid, status)
    if status in ("failed", "timeout", "rejected"):
        assert code, ("no reason code", pid, status)
    if parent:
        assert status_of.get(parent, "ok") == "ok", ("a parent that is not ok", pid, parent)
assert seen == set(codes.values()), ("not every kind of failure was reached", seen)
best = con.execute("select status from programs where fitness is not null order by fitness desc limit 1").fetchone()
assert best[0] == "ok", best
# Failures keep their artifacts (what the prompts show as earlier attempts).
wrong = con.execute("select count(*) from artifacts a join programs p on p.id = a.program_id"
                    " where p.reason_code = 'wrong_result' and a.name = 'reason_detail'").fetchone()[0]
crash = con.execute("select count(*) from artifacts a join programs p on p.id = a.program_id"
                    " where p.reason_code = 'evaluator_crash' and a.name = 'stderr'"
                    " and a.value like '%cannot go on%'").fetchone()[0]
assert wrong >= 1, "the wrong_result verdict lost its artifacts"
assert crash >= 1, "the crash lost its stderr"
PY

# kevolve status: failures by reason code, in text and in JSON, as stored.
expect_exit 0 "$KV" status "$WORK/run" --json
python3 - "$WORK/out.txt" "$db" <<'PY' || fail "status --json does not count failures by reason"
import json, sqlite3, sys
s = json.load(open(sys.argv[1]))
con = sqlite3.connect(sys.argv[2])
want = {(st, code): n for st, code, n in con.execute(
    "select status, reason_code, count(*) from programs where status in ('failed', 'timeout', 'rejected')"
    " group by status, reason_code")}
got = {(r["status"], r["reason"]): r["count"] for r in s["failure_reasons"]}
assert got == want, (got, want)
assert s["by_status"]["failed"] == sum(n for (st, _), n in want.items() if st == "failed")
PY
expect_exit 0 "$KV" status "$WORK/run"
grep -q "failed: non_finite_fitness" "$WORK/out.txt" || fail "status text does not count non_finite_fitness"

# The progress line counts failures by reason.
failed=$(sql "$db" "select count(*) from programs where status in ('failed', 'timeout')")
grep "iteration 60/60" "$WORK/run/logs/kevolve.log" | tail -n 1 | grep -q "failed $failed (" ||
    fail "the last progress line does not count $failed failures by reason: $(grep 'iteration 60/60' "$WORK/run/logs/kevolve.log" | tail -n 1)"

# Every evaluation of a child got the run's folder and its parent's metrics.
python3 - "$db" "$WORK/run" <<'PY' || fail "KEVOLVE_RUN_DIR or KEVOLVE_PARENT_METRICS was wrong"
import json, os, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
run_dir = os.path.realpath(sys.argv[2])
lines = open(os.path.join(run_dir, "env.log")).read().splitlines()
evaluated = con.execute("select count(*) from programs where is_migrant = 0"
                        " and status not in ('duplicate', 'rejected')").fetchone()[0]
assert len(lines) == evaluated and evaluated >= 20, (len(lines), evaluated)
metrics = {i: m for i, m in con.execute("select id, metrics from programs")}
parent_of = {it: p for it, p in con.execute(
    "select iteration, parent_id from programs where is_migrant = 0 and status != 'duplicate'"
    " and status != 'rejected'")}
for line in lines:
    prog, rdir, parent = line.split("|", 2)
    assert os.path.realpath(rdir) == run_dir, line
    it = int(prog.split(".")[0])
    if it == 0:
        assert parent == "none", line
        continue
    want = json.loads(metrics[parent_of[it]])
    assert json.loads(parent) == want, (line, want)
PY
echo "ok"
