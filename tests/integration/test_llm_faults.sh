#!/bin/bash
# Stop for the right reasons: a language-model fault that will not heal by
# retrying (the endpoint unreachable after its retries, 401, an unknown
# model) stops the run with exit 1 and a message naming the model and the
# fault, having spent no iteration, and `kevolve resume` continues where the
# run truly stopped; transient faults (429, 500) back off and the iteration
# is asked again, not counted; a model that keeps failing transiently stops
# the run after llm.give_up_after calls. The progress line counts only
# iterations finished, so it never goes back when a fault drops calls.
. "$(dirname "$0")/lib.sh"

SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT

start_server() { # SCRIPT [PORT] -> sets PORT, SERVER_PID (a fresh record)
    : >"$WORK/record.jsonl"
    python3 "$KV_SOURCE_DIR/tests/tools/fake_llm_server.py" --script "$1" --port "${2:-0}" \
        --record "$WORK/record.jsonl" --idle 120 >"$WORK/port.txt" 2>"$WORK/server.err" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        PORT=$(head -n 1 "$WORK/port.txt" 2>/dev/null || true)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    fail "the test server did not start"
}
stop_server() {
    kill $SERVER_PID 2>/dev/null || true
    wait $SERVER_PID 2>/dev/null || true
    SERVER_PID=
    : >"$WORK/port.txt"
}

# A reply whose diff makes a child of the tiny program.
cat >"$WORK/good.json" <<'JSON'
{"mode": "cycle", "steps": [
 {"reply": "<<<<<<< SEARCH\nC = 3  # kevolve: tune 1 2 3 4 5 6 7 8\n=======\nC = 5  # kevolve: tune 1 2 3 4 5 6 7 8\n>>>>>>> REPLACE\n"}
]}
JSON
config() { # PORT ITERATIONS -> config.yaml
    cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: $2
random_seed: 9
llm:
  api_base: http://127.0.0.1:$1/v1
  max_concurrency: 2
  give_up_after: 3
  models:
    - name: scripted-model
      timeout: 5
      retries: 1
      retry_delay: 0.05
database:
  num_islands: 2
YAML
}
# progress_ok OUT: the progress lines of the run in OUT count iterations
# finished: within each session (run or resume) they never go back, and
# none counts more than the store holds finished when it ends (a child
# stored, or a call spent), however many calls a fault dropped.
progress_ok() {
    python3 - "$1/logs/kevolve.log" "$1/run.db" <<'PY'
import re, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
done = con.execute("select count(distinct i) from (select iteration i from programs where"
                   " iteration > 0 and is_migrant = 0 union select iteration from llm_calls"
                   " where outcome like 'error%')").fetchone()[0]
last = 0
for line in open(sys.argv[1]):
    if " info: run: " in line or " info: resuming " in line:
        last = 0
    m = re.search(r" info: iteration (\d+)/\d+ ", line)
    if m:
        x = int(m.group(1))
        assert last <= x <= done, (line, last, done)
        last = x
PY
}
# children DB: the iterations that left a program, one per line.
children() { sql "$1" "select distinct iteration from programs where iteration > 0 and is_migrant = 0 order by 1"; }

# 1. The endpoint is down: a free port with nobody listening.
start_server "$WORK/good.json"
port=$PORT
stop_server
config "$port" 6
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/down"
grep -q "scripted-model" "$WORK/err.txt" && grep -qi "connect" "$WORK/err.txt" ||
    fail "the message does not name the model and the fault: $(cat "$WORK/err.txt")"
grep -q "kevolve resume" "$WORK/err.txt" || fail "the message does not say how to go on"
[ -z "$(children "$WORK/down/run.db")" ] || fail "iterations were spent while the endpoint was down"
sql "$WORK/down/run.db" "select outcome from llm_calls" | grep -q "^fatal:" ||
    fail "the fatal call was not recorded"
# The endpoint comes back on the same port: resume makes all 6 iterations.
start_server "$WORK/good.json" "$port"
expect_exit 0 "$KV" resume "$WORK/down"
[ "$(children "$WORK/down/run.db" | tr '\n' ' ')" = "1 2 3 4 5 6 " ] ||
    fail "resume did not continue where the run stopped: $(children "$WORK/down/run.db" | tr '\n' ' ')"
progress_ok "$WORK/down" || fail "the progress line counted iterations that did not finish"
stop_server

# 2. 401: not retried, the run stops at once.
cat >"$WORK/unauthorized.json" <<'JSON'
[{"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}]
JSON
start_server "$WORK/unauthorized.json"
config "$PORT" 6
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/auth"
grep -q "scripted-model" "$WORK/err.txt" && grep -q "HTTP 401" "$WORK/err.txt" ||
    fail "the message does not name the model and HTTP 401: $(cat "$WORK/err.txt")"
[ -z "$(children "$WORK/auth/run.db")" ] || fail "iterations were spent on a 401"
[ "$(wc -l <"$WORK/record.jsonl")" -le 2 ] || fail "a 401 was retried: $(wc -l <"$WORK/record.jsonl") requests"
sql "$WORK/auth/run.db" "select data from events where kind = 'stopped'" | grep -q '"fault":true' ||
    fail "the stop event does not say a fault stopped the run"
stop_server

# 3. An unknown model (404) is as final.
cat >"$WORK/unknown.json" <<'JSON'
[{"status": 404, "body": {"error": {"message": "The model `scripted-model` does not exist"}}}]
JSON
start_server "$WORK/unknown.json"
config "$PORT" 4
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/unknown"
grep -q "HTTP 404" "$WORK/err.txt" || fail "no HTTP 404 in the message: $(cat "$WORK/err.txt")"
stop_server

# 4. 429 and 500 (each past the request's one retry), then answers: every
# iteration is made once, none is spent on the faults, and the run ends well.
cat >"$WORK/transient.json" <<'JSON'
{"mode": "order", "steps": [
 {"status": 429, "headers": {"Retry-After": "0"}, "body": {"error": {"message": "rate limited"}}},
 {"status": 429, "headers": {"Retry-After": "0"}, "body": {"error": {"message": "rate limited"}}},
 {"status": 500, "body": "internal error"},
 {"status": 500, "body": "internal error"},
 {"reply": "<<<<<<< SEARCH\nC = 3  # kevolve: tune 1 2 3 4 5 6 7 8\n=======\nC = 5  # kevolve: tune 1 2 3 4 5 6 7 8\n>>>>>>> REPLACE\n"}
]}
JSON
start_server "$WORK/transient.json"
config "$PORT" 5
sed -i 's/max_concurrency: 2/max_concurrency: 1/' "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/transient"
db=$WORK/transient/run.db
[ "$(children "$db" | tr '\n' ' ')" = "1 2 3 4 5 " ] ||
    fail "transient faults spent or lost iterations: $(children "$db" | tr '\n' ' ')"
[ "$(sql "$db" "select count(*) from programs where iteration > 0 and is_migrant = 0")" -eq 5 ] ||
    fail "an iteration was made twice"
retried=$(sql "$db" "select count(*) from llm_calls where outcome like 'retry:%'")
[ "$retried" -eq 2 ] || fail "expected 2 calls given back by transient faults, found $retried"
sql "$db" "select error from llm_calls where outcome like 'retry:%'" | grep -q "429" ||
    fail "the 429 was not recorded"
progress_ok "$WORK/transient" || fail "the progress line went back or ran ahead"
stop_server

# 5. A model that only ever fails transiently stops the run after
# llm.give_up_after calls in a row, naming it.
cat >"$WORK/broken.json" <<'JSON'
[{"status": 503, "body": "unavailable"}]
JSON
start_server "$WORK/broken.json"
config "$PORT" 5
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/broken"
grep -q "scripted-model" "$WORK/err.txt" && grep -q "3 calls in a row" "$WORK/err.txt" ||
    fail "the run did not give up naming the model: $(cat "$WORK/err.txt")"
[ -z "$(children "$WORK/broken/run.db")" ] || fail "iterations were spent on transient faults"
progress_ok "$WORK/broken" || fail "the progress line counted iterations given back"
stop_server
echo "ok"
