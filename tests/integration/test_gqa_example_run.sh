#!/bin/bash
# The main job's path: examples/gqa_attention/run.sh picks the best backend
# present off a GPU (opencl through PoCL when clinfo lists a platform, else
# cpu), the small shapes' task, the harness's quick mode from the example's
# config, and its own default number of iterations unless one is given; the
# run's children are judged by the harness and stored.
. "$(dirname "$0")/lib.sh"

ex=$KV_SOURCE_DIR/examples/gqa_attention
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: a GPU is present: run.sh would pick cuda (bench/ covers it)"
    exit 77
fi
expect_exit 0 env KV="$KV" KEVOLVE_KEEP_PROGRAMS=1 "$ex/run.sh" --iterations 2 --output "$WORK/out"
backend=$(sed -n 's/^gqa_attention example: backend \([a-z]*\), task .*/\1/p' "$WORK/err.txt")
case $backend in
opencl) command -v clinfo >/dev/null && clinfo -l 2>/dev/null | grep -q Platform ||
    fail "run.sh picked opencl without an OpenCL platform" ;;
cpu) ! { command -v clinfo >/dev/null && clinfo -l 2>/dev/null | grep -q Platform; } ||
    fail "run.sh picked cpu although clinfo lists an OpenCL platform" ;;
*) fail "run.sh named no backend: $(head -c 300 "$WORK/err.txt")" ;;
esac
job=$(ls "$WORK"/out/work/*.job.json | head -n 1)
python3 - "$job" <<'PY' || fail "the example's job is not the quick small-shape harness: $(cat "$job")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["task"] == "gqa_attention_small" and j["backend"] == "auto" and j["quick"] is True, j
PY
db="$WORK/out/run.db"
[ "$(sql "$db" "select json_extract(metrics, '\$.correct') from programs where mutator = 'initial'")" = 1 ] ||
    fail "the $backend seed was not judged correct"
[ "$(sql "$db" "select count(*) from programs where mutator != 'initial'")" -ge 1 ] ||
    fail "no child was stored"
"$KV" status "$WORK/out" --json >"$WORK/status.json"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(str(s["max_iterations"]) != "2")' \
    "$WORK/status.json" || fail "a later --iterations did not win over run.sh's default: $(cat "$WORK/status.json")"

# The same folder again with --force: a fresh run, its judge's verdicts too
# (the old run's kept verdicts once made the new seed a duplicate of a
# program no longer stored, and the run stopped at its start).
mkdir -p "$WORK/out/artifacts" # none kept where Landlock is missing
touch "$WORK/out/artifacts/left-by-the-old-run.json"
expect_exit 0 env KV="$KV" "$ex/run.sh" --iterations 1 --output "$WORK/out" --force
[ ! -e "$WORK/out/artifacts/left-by-the-old-run.json" ] ||
    fail "--force left the replaced run's verdicts in artifacts/"
[ "$(sql "$db" "select status || ' ' || json_extract(metrics, '\$.correct') from programs where mutator = 'initial'")" = "ok 1" ] ||
    fail "the seed of the run forced into the same folder was not judged afresh: $(sql "$db" "select status, status_reason from programs")"

echo "ok"
