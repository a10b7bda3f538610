#!/bin/bash
# An evolution with a language model, against the scripted OpenAI-compatible
# test server on loopback that injects faults (429 with Retry-After, 500,
# truncated JSON, non-JSON, empty choices, connection resets, replies with no
# usable diff, edits outside the EVOLVE-BLOCK). The run survives them all:
# every call is stored with its outcome and faults, rejections keep their
# reason, good replies become evaluated children, and the API key is never
# stored. A budget stops a second run cleanly.
. "$(dirname "$0")/lib.sh"

start_server() { # SCRIPT RECORD -> sets PORT, SERVER_PID
    python3 "$KV_SOURCE_DIR/tests/tools/fake_llm_server.py" --script "$1" --record "$2" \
        --idle 60 --no-keepalive >"$WORK/port.txt" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        PORT=$(head -n 1 "$WORK/port.txt" 2>/dev/null || true)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    fail "the test server did not start"
}

start_server "$KV_SOURCE_DIR/tests/data/llm/faults.json" "$WORK/record.jsonl"
cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 14
random_seed: 3
llm:
  api_base: http://127.0.0.1:$PORT/v1
  max_concurrency: 3
  models:
    - name: scripted-model
      weight: 1
      timeout: 5
      retries: 2
      retry_delay: 0.05
      price_input_per_mtok: 1.0
      price_output_per_mtok: 2.0
database:
  num_islands: 2
evaluator:
  parallel_evaluations: 2
YAML
OPENAI_API_KEY=sk-kevolve-test-secret-0123456789 \
    expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"

calls=$(sql "$db" "select count(*) from llm_calls")
[ "$calls" -ge 14 ] || fail "expected 14 model calls stored at least, got $calls"
# Every iteration is accounted for: a stored program or a stored failed call.
missing=$(sql "$db" "with recursive it(i) as (select 1 union all select i + 1 from it where i < 14)
    select count(*) from it where not exists (select 1 from programs where iteration = i and mutator != 'migration')
    and not exists (select 1 from llm_calls where iteration = i)")
[ "$missing" -eq 0 ] || fail "$missing iterations left no trace"
sql "$db" "select error from llm_calls where error is not null" >"$WORK/errors.txt"
grep -q "429" "$WORK/errors.txt" || fail "the 429 fault was not recorded"
grep -q "500" "$WORK/errors.txt" || fail "the 500 fault was not recorded"
ok_children=$(sql "$db" "select count(*) from programs where mutator = 'llm:scripted-model' and status = 'ok'")
[ "$ok_children" -ge 2 ] || fail "too few evaluated children from the model: $ok_children"
sql "$db" "select status_reason from programs where status = 'rejected'" >"$WORK/rejected.txt"
grep -qi "outside" "$WORK/rejected.txt" || fail "an edit outside the EVOLVE-BLOCK was not rejected with its reason"
grep -qi "search" "$WORK/rejected.txt" || fail "a reply without a usable diff was not rejected with its reason"
linked=$(sql "$db" "select count(*) from llm_calls c join programs p on p.id = c.program_id where p.mutator = 'llm:scripted-model'")
[ "$linked" -ge 4 ] || fail "model calls are not linked to the children they produced ($linked)"
cost=$(sql "$db" "select sum(cost_usd) from llm_calls")
python3 -c "import sys; sys.exit(0 if float('$cost') > 0 else 1)" || fail "no cost accounted"
! grep -a -q "sk-kevolve-test-secret" "$db" "$WORK/run/logs/kevolve.log" ||
    fail "the API key reached the store or the log"
python3 - "$WORK/record.jsonl" <<'PY' || fail "requests did not carry the key in the Authorization header"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows and all(r["has_authorization"] for r in rows), rows[:1]
assert all("temperature" in r["body"] for r in rows)
PY
# The rejection reason of an earlier attempt reaches a later prompt on that lineage.
sql "$db" "select user_prompt from llm_calls order by id" | grep -qi "outside" ||
    fail "no prompt shows an earlier rejection reason"
kill $SERVER_PID 2>/dev/null || true

# Budget: each call costs 1000 * 1e-6 * 400 = $0.40 (+ output); a $1 budget stops after a few.
cat >"$WORK/budget.json" <<'JSON'
[{"reply": "no change", "prompt_tokens": 1000, "completion_tokens": 0}]
JSON
start_server "$WORK/budget.json" "$WORK/record2.jsonl"
sed -e "s#127.0.0.1:[0-9]*#127.0.0.1:$PORT#" -e "s/price_input_per_mtok: 1.0/price_input_per_mtok: 400.0/" \
    -e "s/max_iterations: 14/max_iterations: 50/" -e "s/  max_concurrency: 3/  max_concurrency: 1\n  max_budget_usd: 1.0/" \
    "$WORK/config.yaml" >"$WORK/budget.yaml"
expect_exit 0 "$KV" run --config "$WORK/budget.yaml" --output "$WORK/budget"
calls=$(sql "$WORK/budget/run.db" "select count(*) from llm_calls")
[ "$calls" -ge 3 ] && [ "$calls" -le 4 ] || fail "a \$1 budget at \$0.40 a call allowed $calls calls"
sql "$WORK/budget/run.db" "select data from events where kind = 'stopped'" | grep -q "budget" ||
    fail "the run did not say it stopped for the budget"
kill $SERVER_PID 2>/dev/null || true

# LLM feedback: built-in mutators, a grader from llm.evaluator_models; its
# grades become metrics and blend into combined_score with the configured weight.
cat >"$WORK/grades.json" <<'JSON'
[{"reply": "Grades: {\"readability\": 0.9, \"maintainability\": 0.5, \"efficiency\": 0.7, \"correctness\": 1.0, \"reasoning\": \"fine\"}"}]
JSON
start_server "$WORK/grades.json" "$WORK/record3.jsonl"
cat >"$WORK/feedback.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 6
llm:
  api_base: http://127.0.0.1:$PORT/v1
  models:
    - name: builtin:tune
  evaluator_models:
    - name: grader
evaluator:
  use_llm_feedback: true
  llm_feedback_weight: 0.2
database:
  log_prompts: false
YAML
expect_exit 0 "$KV" run --config "$WORK/feedback.yaml" --output "$WORK/feedback"
fdb="$WORK/feedback/run.db"
python3 - "$fdb" <<'PY' || fail "the grades did not become metrics blended into combined_score"
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = [json.loads(m) for (m,) in c.execute("select metrics from programs where status = 'ok' and is_migrant = 0")]
assert rows, "no evaluated program"
for m in rows:
    assert abs(m["llm_feedback"] - 0.775) < 1e-9, m
    assert abs(m["llm_readability"] - 0.9) < 1e-9, m
    want = 0.8 * m["combined_score_before_feedback"] + 0.2 * 0.775
    assert abs(m["combined_score"] - want) < 1e-9, m
n = c.execute("select count(*) from llm_calls where outcome = 'feedback' and program_id is not null").fetchone()[0]
assert n == len(rows), (n, len(rows))
# database.log_prompts: false keeps usage and outcome, not the texts.
kept = c.execute("select count(*) from llm_calls where user_prompt is not null or reply is not null").fetchone()[0]
assert kept == 0, kept
assert c.execute("select count(*) from llm_calls where model = 'grader'").fetchone()[0] == n
PY
kill $SERVER_PID 2>/dev/null || true
echo "ok"
