#!/bin/bash
# A short evolution of the gqa_attention task on OpenCL (PoCL in CI) at the
# small shapes of gqa_attention_small, from the seed (the naive kernel with
# its tune axes), with the built-in tune and crossover mutators: the harness
# judges the start
# correct, tune children are built, checked on every scenario and held-out
# shape and timed, and their per-scenario metrics land in the store.
# Skips (77) when no OpenCL platform is found.
. "$(dirname "$0")/lib.sh"

ex=$KV_SOURCE_DIR/examples/gqa_attention
seed=$KV_SOURCE_DIR/tasks/gqa_attention/opencl/seed.cl
set +e
"$KV" eval --task gqa_attention_small --backend opencl --stage 1 --quick --json "$seed" \
    >"$WORK/probe.json" 2>"$WORK/probe.err"
rc=$?
set -e
if [ $rc -ne 0 ]; then
    if grep -qiE "no OpenCL|not built|opencl" "$WORK/probe.err"; then
        echo "SKIP: no OpenCL platform: $(head -c 300 "$WORK/probe.err")"
        exit 77
    fi
    cat "$WORK/probe.err" >&2
    fail "kevolve eval of the OpenCL seed failed (exit $rc)"
fi
grep -q '"correct":1' "$WORK/probe.json" || fail "the OpenCL seed was rejected: $(head -c 600 "$WORK/probe.json")"

expect_exit 0 "$KV" run --config "$ex/config_ci.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
[ "$(sql "$db" "select json_extract(metrics, '\$.correct') from programs where mutator = 'initial'")" = 1 ] ||
    fail "the start was not judged correct"
n=$(sql "$db" "select count(*) from programs where mutator like '%tune%' and json_extract(metrics, '\$.correct') = 1")
[ "$n" -ge 2 ] || fail "too few correct tune children: $n"
sql "$db" "select metrics from programs where mutator like '%tune%' and json_extract(metrics, '\$.correct') = 1 limit 1" |
    grep -q '"decode_40x8_b2_l200_speedup"' || fail "no per-scenario speedup stored for a tune child"
echo "ok: $(sql "$db" "select count(*) from programs") programs, best $(sql "$db" "select max(fitness) from programs where status = 'ok'")"

# A failure is a failure on the OpenCL path, with the default config: a
# scripted model rewrites the naive kernel into a child that does not
# compile and one that computes a wrong result; the harness rejects both,
# and both are stored failed with the harness's reason code, never ok,
# never placed, never a parent.
naive=$KV_SOURCE_DIR/tasks/gqa_attention/opencl/naive.cl
python3 - "$naive" "$WORK/script.json" <<'PY'
import json, re, sys
src = open(sys.argv[1]).read()
start = src.index("EVOLVE-BLOCK-START")
line_end = src.index("\n", start) + 1
broken = src[:line_end] + "#error kevolve test: this child must not compile\n" + src[line_end:]
wrong, n = re.subn(r"\* LOG2E;", "* LOG2E * 1.5f;", src, count=1)
assert n == 1, "the naive kernel's qscale line moved: update this test"
fence = lambda text: {"reply": "Here it is:\n```opencl\n" + text + "```\n"}
json.dump({"mode": "order", "steps": [fence(broken), fence(wrong)]}, open(sys.argv[2], "w"))
PY
python3 "$KV_SOURCE_DIR/tests/tools/fake_llm_server.py" --script "$WORK/script.json" --idle 600 \
    >"$WORK/port.txt" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do
    port=$(head -n 1 "$WORK/port.txt" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || fail "the scripted model did not start"
cat >"$WORK/failing.yaml" <<YAML
initial_program: $naive
max_iterations: 2
max_code_length: 120000
diff_based_evolution: false
language: opencl
llm:
  api_base: http://127.0.0.1:$port/v1
  max_concurrency: 1
  models:
    - name: scripted
      timeout: 30
database:
  num_islands: 1
evaluator:
  task: gqa_attention_small
  backend: opencl
  quick: true
  timeout: 300
  max_retries: 0
YAML
expect_exit 0 "$KV" run --config "$WORK/failing.yaml" --output "$WORK/failing"
fdb="$WORK/failing/run.db"
python3 - "$fdb" <<'PY' || fail "a child the harness rejected was stored ok, placed, or became a parent"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("select id, parent_id, status, reason_code, fitness, features, mutator"
                   " from programs order by id").fetchall()
children = [r for r in rows if r[6] != "initial"]
assert len(children) == 2, rows
codes = sorted(r[3] or "" for r in children)
assert codes == ["compile_error", "wrong_result"], rows
status = {r[0]: r[2] for r in rows}
for pid, parent, st, code, fitness, features, _ in children:
    assert st == "failed" and fitness is None and features is None, (pid, st, fitness, features)
    assert status[parent] == "ok", ("a parent that is not ok", pid, parent)
PY
expect_exit 0 "$KV" status "$WORK/failing"
grep -q "failed: compile_error" "$WORK/out.txt" && grep -q "failed: wrong_result" "$WORK/out.txt" ||
    fail "status does not count the harness's failures by reason: $(cat "$WORK/out.txt")"
echo "ok: the harness's rejections are failures"
