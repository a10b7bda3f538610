#!/bin/bash
# The warm pool of evaluator.python_pool never outlives kevolve: after
# `kill -9` of the kevolve process alone (not its group), the pool's manager
# and its workers, busy evaluating or not, are gone within a few seconds; and
# `kevolve resume` starts a new pool and goes on. Pooled evaluations are
# served through `kevolve pyeval-client`, the client in C.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/evaluator.py" <<'PY'
import importlib.util, time
def evaluate(path):
    spec = importlib.util.spec_from_file_location("p", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    time.sleep(0.3)
    return {"combined_score": float(m.A + m.B + m.C + m.D)}
PY
cat >"$WORK/initial.py" <<'PY'
# EVOLVE-BLOCK-START
A = 1  # kevolve: tune 1 2 3 4 5 6 7 8 9
B = 1  # kevolve: tune 1 2 3 4 5 6 7 8 9
C = 1  # kevolve: tune 1 2 3 4 5 6 7 8 9
D = 1  # kevolve: tune 1 2 3 4 5 6 7 8 9
# EVOLVE-BLOCK-END
PY
cat >"$WORK/config.yaml" <<YAML
initial_program: initial.py
evaluator: evaluator.py
max_iterations: 5000  # many distinct children: it must still run at the kill
llm:
  models:
    - name: builtin:tune
evaluator:
  python_pool: true
  parallel_evaluations: 2
YAML
pool_procs() { pgrep -f "$WORK/run/work/kevolve_openevolve_runner.py" || true; }

"$KV" run --config "$WORK/config.yaml" --output "$WORK/run" >"$WORK/run.log" 2>&1 &
kv_pid=$!
evaluated() { sql "$WORK/run/run.db" "select count(*) from programs where status = 'ok'" 2>/dev/null || echo 0; }
for _ in $(seq 1 400); do
    [ "$(pool_procs | wc -l)" -ge 3 ] && [ -s "$WORK/run/run.db" ] && [ "$(evaluated)" -ge 2 ] && break
    sleep 0.05
done
[ "$(pool_procs | wc -l)" -ge 3 ] || fail "the pool (a manager and 2 workers) did not start: $(cat "$WORK/run.log")"
[ "$(evaluated)" -ge 2 ] || fail "the run evaluated too little before the kill: $(cat "$WORK/run.log")"
# Pooled evaluations go through kevolve's own client (no interpreter to start).
seen=""
for _ in $(seq 1 100); do
    seen=$(pgrep -f "pyeval-client $WORK/run/work/python_pool.sock" || true)
    [ -n "$seen" ] && break
    sleep 0.05
done
[ -n "$seen" ] || fail "no 'kevolve pyeval-client' process served a pooled evaluation"
sleep 0.3 # evaluations in flight
kill -9 "$kv_pid"
wait "$kv_pid" 2>/dev/null || true
for _ in $(seq 1 100); do
    [ -z "$(pool_procs)" ] && break
    sleep 0.05
done
left=$(pool_procs)
if [ -n "$left" ]; then
    kill -9 $left 2>/dev/null || true
    fail "pool processes outlived kevolve: $left"
fi
expect_exit 0 "$KV" resume "$WORK/run" --iterations 3
[ -z "$(pool_procs)" ] || fail "the resumed run left its pool running"
echo "ok"
