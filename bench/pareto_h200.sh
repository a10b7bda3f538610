#!/usr/bin/env bash
# Issue 22 on the H200: a run with two objectives, speedup and energy
# (evaluator.energy), stopped after LIMIT seconds; then the run's front
# (`kevolve best --pareto`), each front program's energy figures with their
# error bound, and `kevolve status`. On swiglu from its naive CUDA start,
# or (PARETO_TASK=gqa) on gqa_attention_search from the six seeds of
# examples/gqa_attention/config_cuda.yaml, whose designs differ (a decode
# memory-bound one, a prefill tensor-core one), on one decode and one
# prefill scenario.
# Usage: bench/pareto_h200.sh   (OUT, LIMIT (100), PARETO_TASK optional; .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_pareto_h200}
LIMIT=${LIMIT:-100}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
if [ "${PARETO_TASK:-swiglu}" = gqa ]; then
    g=$ROOT/tasks/gqa_attention/cuda
    start="initial_programs: [$g/naive.cu, $g/decode_halfwarp.cu, $g/decode_split.cu, $g/decode_cluster.cu, $g/prefill_fa2.cu, $g/prefill_hopper.cu]"
    task=gqa_attention_search islands=6 scen="[decode_16x8_b8_l8192, prefill_16x8_s2048]"
else
    start="initial_program: $ROOT/tasks/swiglu/cuda/naive.cu"
    task=swiglu islands=2 scen="[decode_i17408_t8, prefill_i3072_t2048]"
fi
cat >"$OUT/config.yaml" <<YAML
$start
max_iterations: 60
random_seed: 3
max_code_length: 30000
objectives: [speedup, energy]
database:
  num_islands: $islands
evaluator:
  task: $task
  backend: cuda
  quick: true
  energy: true
  scenarios: $scen
  timeout: 300
  parallel_evaluations: 4
YAML
timeout --foreground -s INT "$LIMIT" "$KV" run --config "$OUT/config.yaml" --output "$OUT/run" >"$OUT/run.log" 2>&1
echo "run exit $? ($(grep -c 'iteration' "$OUT/run.log") progress lines)"
"$KV" status "$OUT/run" | grep -E "^programs|^best|^pareto"
"$KV" best "$OUT/run" --pareto
python3 - "$OUT/run/run.db" <<'PY'
import json, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for pid, art in con.execute("select program_id, value from artifacts where name = 'scenarios'"):
    for s in json.loads(art):
        e = s.get("energy")
        if e and "joules" in e:
            print(f"program {pid:3d} {s['name']:22s} {s['median_us']:8.2f} us {s['energy_uj']:9.1f} uJ "
                  f"{s['power_w']:6.1f} W +-{100 * e['rel_err']:.1f}% ({e['counter_moves']} moves)")
PY
