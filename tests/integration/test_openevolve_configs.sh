#!/bin/bash
# OpenEvolve's configs as they are (tests/data/openevolve, copied unchanged)
# pass `kevolve run --dry-run` with the user's programs and no API key in
# the environment: keys OpenEvolve reads nowhere (max_program_length, an
# evaluation: section) load with a warning, and an API key taken from an
# unset variable is warned about, not an error, as checking a config needs
# no secrets. A real run still needs the key.
. "$(dirname "$0")/lib.sh"

fm=$KV_SOURCE_DIR/tests/data/openevolve/function_minimization
n=0
for cfg in "$KV_SOURCE_DIR"/tests/data/openevolve/configs/*.yaml "$fm/config.yaml"; do
    expect_exit 0 env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENROUTER_API_KEY -u DEEPSEEK_API \
        "$KV" run "$fm/initial_program.py" "$fm/evaluator.py" --config "$cfg" --dry-run
    n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n configs were checked"

cfgs=$KV_SOURCE_DIR/tests/data/openevolve/configs
expect_exit 0 "$KV" run "$fm/initial_program.py" "$fm/evaluator.py" \
    --config "$cfgs/attention_optimization.yaml" --dry-run
grep -q "max_program_length: not read by OpenEvolve" "$WORK/err.txt" ||
    fail "no warning for max_program_length: $(cat "$WORK/err.txt")"
expect_exit 0 "$KV" run "$fm/initial_program.py" "$fm/evaluator.py" \
    --config "$cfgs/attention_optimization_failing.yaml" --dry-run
grep -q "evaluation: a section OpenEvolve does not read" "$WORK/err.txt" ||
    fail "no warning for the evaluation: section: $(cat "$WORK/err.txt")"

anthropic=$cfgs/circle_packing_phase_1_anthropic.yaml
expect_exit 0 env -u ANTHROPIC_API_KEY "$KV" run "$fm/initial_program.py" "$fm/evaluator.py" \
    --config "$anthropic" --dry-run
grep -q "llm.api_key: environment variable ANTHROPIC_API_KEY is not set; checked without it" \
    "$WORK/err.txt" || fail "--dry-run does not name the missing secret: $(cat "$WORK/err.txt")"
grep -q 'api_key: "\*\*\*"\|api_key: null' "$WORK/out.txt" || fail "the dump shows a secret"
# A run needs it, and says which.
expect_exit 2 env -u ANTHROPIC_API_KEY "$KV" run "$fm/initial_program.py" "$fm/evaluator.py" \
    --config "$anthropic" --output "$WORK/run"
grep -q "ANTHROPIC_API_KEY is not set" "$WORK/err.txt" || fail "the run does not name the variable"
[ ! -e "$WORK/run/run.db" ] || fail "a refused run left a store"
echo "ok"
