#!/bin/bash
# A run stopped by a fault of its settings takes the fix on resume and goes
# on as the same run: a wrong endpoint corrected in a new config (resume
# --config), on the command line (--api-base) or in the environment
# (OPENAI_API_BASE, for a config that names no endpoint). Each change is
# recorded in the run's manifest; a config that would change what the run
# searched (its islands, its seed, its evaluator) is refused, naming the
# key, and changes nothing.
. "$(dirname "$0")/lib.sh"

SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
cat >"$WORK/good.json" <<'JSON'
{"mode": "cycle", "steps": [
 {"reply": "<<<<<<< SEARCH\nC = 3  # kevolve: tune 1 2 3 4 5 6 7 8\n=======\nC = 5  # kevolve: tune 1 2 3 4 5 6 7 8\n>>>>>>> REPLACE\n"}
]}
JSON
python3 "$KV_SOURCE_DIR/tests/tools/fake_llm_server.py" --script "$WORK/good.json" --port 0 \
    --record "$WORK/record.jsonl" --idle 120 >"$WORK/port.txt" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    LIVE=$(head -n 1 "$WORK/port.txt" 2>/dev/null || true)
    [ -n "$LIVE" ] && break
    sleep 0.05
done
[ -n "$LIVE" ] || fail "the test server did not start"
DEAD=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

config() { # FILE API_BASE_LINE [EXTRA]
    cat >"$1" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 6
random_seed: 9
llm:
$2
  max_concurrency: 2
  models:
    - name: scripted-model
      timeout: 5
      retries: 0
database:
  num_islands: 2
${3:-}
YAML
}
children() { sql "$1" "select distinct iteration from programs where iteration > 0 and is_migrant = 0 order by 1" | tr '\n' ' '; }
meta() { sql "$1" "select value from meta where key = '$2'"; }

# 1. The endpoint in the config is wrong: the run stops, and a plain resume
#    meets the same endpoint.
config "$WORK/wrong.yaml" "  api_base: http://127.0.0.1:$DEAD/v1"
expect_exit 1 "$KV" run --config "$WORK/wrong.yaml" --output "$WORK/a"
grep -q "kevolve resume $WORK/a.*--config FILE" "$WORK/err.txt" ||
    fail "the stop does not say how to resume with a fix: $(cat "$WORK/err.txt")"
expect_exit 1 "$KV" resume "$WORK/a"
first=$(sql "$WORK/a/run.db" "select id || ':' || status from programs where iteration = 0")
text_before=$(meta "$WORK/a/run.db" config_text)

# A config that would change what the run searched is refused, naming the
# key, and nothing is written.
config "$WORK/islands.yaml" "  api_base: http://127.0.0.1:$LIVE/v1"
sed -i 's/num_islands: 2/num_islands: 3/' "$WORK/islands.yaml"
expect_exit 2 "$KV" resume "$WORK/a" --config "$WORK/islands.yaml"
grep -q "database.num_islands (2 -> 3)" "$WORK/err.txt" ||
    fail "the refusal does not name the key: $(cat "$WORK/err.txt")"
config "$WORK/seed.yaml" "  api_base: http://127.0.0.1:$LIVE/v1"
sed -i 's/random_seed: 9/random_seed: 10/' "$WORK/seed.yaml"
expect_exit 2 "$KV" resume "$WORK/a" --config "$WORK/seed.yaml"
grep -q "random_seed (9 -> 10)" "$WORK/err.txt" || fail "a new seed was not refused: $(cat "$WORK/err.txt")"
config "$WORK/evaluator.yaml" "  api_base: http://127.0.0.1:$LIVE/v1"
sed -i "s#^evaluator: .*#evaluator: $KV_SOURCE_DIR/tests/data/evaluators/good.sh#" "$WORK/evaluator.yaml"
expect_exit 2 "$KV" resume "$WORK/a" --config "$WORK/evaluator.yaml"
grep -q "evaluator.program" "$WORK/err.txt" || fail "a new evaluator was not refused: $(cat "$WORK/err.txt")"
[ "$(meta "$WORK/a/run.db" config_text)" = "$text_before" ] || fail "a refused resume changed the manifest"
[ -z "$(children "$WORK/a/run.db")" ] || fail "a refused resume made children"

# The corrected config: the same run goes on (its initial program, its
# seed) and makes every iteration; the change is in the manifest.
config "$WORK/fixed.yaml" "  api_base: http://127.0.0.1:$LIVE/v1"
sed -i 's/      timeout: 5/      timeout: 8/' "$WORK/fixed.yaml"
expect_exit 0 "$KV" resume "$WORK/a" --config "$WORK/fixed.yaml"
grep -q "resume: llm.api_base: \"http://127.0.0.1:$DEAD/v1\" -> \"http://127.0.0.1:$LIVE/v1\"" "$WORK/err.txt" ||
    fail "the change is not logged: $(cat "$WORK/err.txt")"
[ "$(children "$WORK/a/run.db")" = "1 2 3 4 5 6 " ] || fail "the run did not go on: $(children "$WORK/a/run.db")"
[ "$(sql "$WORK/a/run.db" "select id || ':' || status from programs where iteration = 0")" = "$first" ] ||
    fail "the initial program changed"
python3 - "$WORK/a/run.db" "$WORK/fixed.yaml" "$LIVE" <<'PY' || fail "the manifest does not record the change"
import json, sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
meta = dict(c.execute("select key, value from meta"))
hist = json.loads(meta["config_changes"])
last = hist[-1]
assert last["config_path"] == sys.argv[2], last
keys = {ch["key"]: ch for ch in last["changes"]}
assert keys["llm.api_base"]["to"] == f'"http://127.0.0.1:{sys.argv[3]}/v1"', keys
assert "llm.models" in keys and "8.0" in keys["llm.models"]["to"], keys  # the model's timeout
assert all(ch["resumable"] for ch in last["changes"]), last
assert meta["config_path"] == sys.argv[2] and "timeout: 8" in meta["config_text"], meta["config_path"]
assert f"127.0.0.1:{sys.argv[3]}" in meta["config_effective"]
assert meta["random_seed"] == "9"
PY

# 2. The endpoint given on the command line: --api-base on resume.
config "$WORK/wrong2.yaml" "  api_base: http://127.0.0.1:$DEAD/v1"
expect_exit 1 "$KV" run --config "$WORK/wrong2.yaml" --output "$WORK/b"
expect_exit 0 "$KV" resume "$WORK/b" --api-base "http://127.0.0.1:$LIVE/v1"
[ "$(children "$WORK/b/run.db")" = "1 2 3 4 5 6 " ] || fail "--api-base did not let the run go on"
[ "$(meta "$WORK/b/run.db" cli_api_base)" = "http://127.0.0.1:$LIVE/v1" ] ||
    fail "the endpoint of the command line is not kept for the next resume"

# 3. A config that names no endpoint: OPENAI_API_BASE, read again on resume.
config "$WORK/env.yaml" "  temperature: 0.5"
OPENAI_API_BASE="http://127.0.0.1:$DEAD/v1" expect_exit 1 "$KV" run --config "$WORK/env.yaml" --output "$WORK/c"
OPENAI_API_BASE="http://127.0.0.1:$LIVE/v1" expect_exit 0 "$KV" resume "$WORK/c"
[ "$(children "$WORK/c/run.db")" = "1 2 3 4 5 6 " ] || fail "OPENAI_API_BASE did not let the run go on"
meta "$WORK/c/run.db" config_changes | grep -q "llm.api_base" || fail "the endpoint's change is not recorded"

# A resume with nothing new records nothing.
n=$(python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])))' "$(meta "$WORK/a/run.db" config_changes)")
expect_exit 0 "$KV" resume "$WORK/a" --iterations 2
python3 - "$(meta "$WORK/a/run.db" config_changes)" "$n" <<'PY' || fail "a plain resume recorded more than its iterations"
import json, sys
hist = json.loads(sys.argv[1])
assert len(hist) == int(sys.argv[2]) + 1, hist
assert [c["key"] for c in hist[-1]["changes"]] == ["max_iterations"], hist[-1]
PY
echo "ok"
