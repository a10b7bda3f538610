#!/bin/bash
# OpenEvolve users switch without editing anything: OpenEvolve's own
# function-minimisation example (its initial_program.py, evaluator.py and
# config.yaml, unchanged, in tests/data/openevolve) evolves under
# `kevolve run` against a local OpenAI-compatible server. The only overrides
# are on the command line (--api-base, --output) and in the environment (a
# python3 with numpy first on PATH, a dummy key); the files are checked
# unchanged afterwards. The evaluator runs through kevolve's runner, with
# OpenEvolve's cascade (evaluate_stage1, then evaluate_stage2 above the
# config's threshold of 1.3) and its EvaluationResult artifacts. The same
# project then runs with the built-in mutators alone, no model at all.
. "$(dirname "$0")/lib.sh"

EX=$KV_SOURCE_DIR/tests/data/openevolve/function_minimization
pybin=$("$KV_SOURCE_DIR/tests/tools/python_numpy.sh" 2>"$WORK/py.err") || {
    echo "SKIP: no python3 with numpy: $(tail -n 1 "$WORK/py.err")"
    exit 77
}
before=$(cd "$EX" && sha256sum initial_program.py evaluator.py config.yaml)

cat >"$WORK/script.json" <<'JSON'
{"mode": "cycle", "steps": [{"action": "edit_number", "factors": [2.0, 0.5, 1.5, 0.75]}]}
JSON
python3 "$KV_SOURCE_DIR/tests/tools/fake_llm_server.py" --script "$WORK/script.json" \
    --record "$WORK/record.jsonl" --idle 120 >"$WORK/port.txt" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do
    PORT=$(head -n 1 "$WORK/port.txt" 2>/dev/null || true)
    [ -n "$PORT" ] && break
    sleep 0.05
done
[ -n "$PORT" ] || fail "the test server did not start"

# As OpenEvolve is run: initial program, evaluator, --config.
cd "$EX"
PATH="$pybin:$PATH" OPENAI_API_KEY=sk-kevolve-fake \
    expect_exit 0 "$KV" run initial_program.py evaluator.py --config config.yaml \
    --api-base "http://127.0.0.1:$PORT/v1" --output "$WORK/run"
cd - >/dev/null
db="$WORK/run/run.db"
grep -q "an OpenEvolve module" "$WORK/err.txt" || fail "the evaluator did not run as an OpenEvolve module"

after=$(cd "$EX" && sha256sum initial_program.py evaluator.py config.yaml)
[ "$before" = "$after" ] || fail "the example's files changed"
[ -z "$(ls "$EX")" ] || [ "$(ls "$EX" | sort | tr '\n' ' ')" = "config.yaml evaluator.py initial_program.py " ] ||
    fail "kevolve wrote into the example's folder: $(ls "$EX")"

python3 - "$db" "$WORK/record.jsonl" <<'PY' || fail "the example did not evolve as OpenEvolve's would"
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select id, mutator, status, status_reason, metrics from programs "
                 "where is_migrant = 0 order by id").fetchall()
init = rows[0]
assert init[1] == "initial" and init[2] == "ok", init
m = json.loads(init[4])
# Stage 1 of OpenEvolve's cascade: evaluate_stage1's metrics, from its EvaluationResult.
assert m["runs_successfully"] == 1.0 and 0 < m["combined_score"] < 2, m
kids = [r for r in rows if r[1].startswith("llm:")]
assert len(kids) == 10, [r[:4] for r in rows]  # config.yaml's max_iterations
models = {r[1] for r in kids}
assert models <= {"llm:gpt-5-mini", "llm:gpt-5-nano"}, models
ok = [r for r in kids if r[2] == "ok"]
assert len(ok) >= 3, [r[:4] for r in kids]  # the rest: duplicates of concurrent edits
for r in ok:
    assert "combined_score" in json.loads(r[4]), r
# The children are the server's edits of the program (iterations scaled).
src = [s for (s,) in c.execute("select source from programs where mutator like 'llm:%' and status = 'ok'")]
assert any("iterations=1000," not in s and "iterations=" in s for s in src), src[:1]
# Stages: every OK program has stage 1; stage 2 (evaluate) ran exactly when stage 1 reached 1.3.
stages = {}
for pid, stage, metrics in c.execute("select program_id, stage, metrics from evaluations order by stage"):
    stages.setdefault(pid, []).append((stage, json.loads(metrics) if metrics else {}))
for pid, st in stages.items():
    assert st[0][0] == 1
    if len(st) > 1:
        assert st[0][1]["combined_score"] >= 1.3 and st[1][0] == 2, st
    else:
        assert st[0][1].get("combined_score", 0) < 1.3, st
# EvaluationResult artifacts reached the store.
names = {n for (n,) in c.execute("select name from artifacts where program_id = ?", (init[0],))}
assert "stage1_result" in names and "distance_to_global" in names, names
# Requests: the config's system message, the reasoning models' parameters.
reqs = [json.loads(l) for l in open(sys.argv[2])]
assert len(reqs) == 10, len(reqs)
for r in reqs:
    body = r["body"]
    assert "specializing in optimization algorithms" in body["messages"][0]["content"]
    assert body["model"] in ("gpt-5-mini", "gpt-5-nano")
    assert "max_completion_tokens" in body and "temperature" not in body, body.keys()
    assert r["has_authorization"]
PY

# The same project with the built-in mutators only, as the README shows:
# no endpoint, no key, no call.
cd "$EX"
PATH="$pybin:$PATH" expect_exit 0 env -u OPENAI_API_KEY \
    "$KV" run initial_program.py evaluator.py --config config.yaml \
    --primary-model builtin:gi --secondary-model builtin:crossover --output "$WORK/builtin"
cd - >/dev/null
python3 - "$WORK/builtin/run.db" <<'PY' || fail "the built-in mutators alone did not run the project"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
assert c.execute("select count(*) from llm_calls").fetchone()[0] == 0
muts = {m for (m,) in c.execute("select mutator from programs where iteration > 0 and is_migrant = 0")}
assert muts and muts <= {"gi", "crossover"}, muts
assert c.execute("select count(*) from programs where iteration > 0 and is_migrant = 0").fetchone()[0] == 10
PY
[ "$before" = "$(cd "$EX" && sha256sum initial_program.py evaluator.py config.yaml)" ] ||
    fail "the example's files changed"
echo "ok"
