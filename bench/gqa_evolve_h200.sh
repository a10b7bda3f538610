#!/usr/bin/env bash
# An evolution of gqa_attention on the H200 with the built-in mutators only
# (tune 80%, crossover 20%; no language model), from the six CUDA seeds
# (one design each, one island each), within one device call. By default on
# gqa_attention_search (every scenario of gqa_attention but the two prefills
# of 8192 rows, where the naive kernel timed beside each child takes 1-2 s
# per call; every child is also checked on the held-out shapes): a child
# costs about 10-20 s of GPU-locked time there, so the minutes hold tens of
# children. The run is stopped gracefully
# (SIGINT: no new children, those in flight finish) at the time limit, and
# killed DRAIN seconds later (default 100).
# Does not build kevolve: KV names the binary (default build/kevolve).
# Usage: bench/gqa_evolve_h200.sh [--minutes M] [--task TASK]   (repo root; OUT optional)
# Writes to $OUT: evolve.log, evolve_summary.json, best.cu (the best kernel).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_gqa_evolve}
KV=${KV:-$ROOT/build/kevolve}
MINUTES=6
TASK=gqa_attention_search
DRAIN=${DRAIN:-100}
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    --task) TASK=$2; shift 2 ;;
    *) echo "usage: $0 [--minutes M] [--task TASK]" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
exec > >(tee "$OUT/evolve.log") 2>&1
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
export KEVOLVE_CACHE_DIR=${KEVOLVE_CACHE_DIR:-/tmp/kevolve_gqa_cache}
WORK=/tmp/kevolve_gqa_evolve_run
rm -rf "$WORK"
mkdir -p "$WORK"
echo "== gqa_attention evolution on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1): task $TASK, $MINUTES min, $(date -u +%FT%TZ)"
"$KV" --version 2>/dev/null | head -1
cat >"$WORK/config.yaml" <<YAML
initial_programs:
  - $ROOT/tasks/gqa_attention/cuda/naive.cu
  - $ROOT/tasks/gqa_attention/cuda/decode_halfwarp.cu
  - $ROOT/tasks/gqa_attention/cuda/decode_split.cu
  - $ROOT/tasks/gqa_attention/cuda/decode_cluster.cu
  - $ROOT/tasks/gqa_attention/cuda/prefill_fa2.cu
  - $ROOT/tasks/gqa_attention/cuda/prefill_hopper.cu
max_iterations: 400
max_code_length: 30000
random_seed: 5
log_level: INFO
llm:
  models:
    - name: builtin:tune
      weight: 0.8
    - name: builtin:crossover
      weight: 0.2
database:
  num_islands: 6
  population_size: 200
  archive_size: 20
  feature_dimensions: [complexity, speedup]
  feature_bins: 8
  migration_interval: 8
  migration_rate: 0.1
  exploration_ratio: 0.2
  exploitation_ratio: 0.7
evaluator:
  task: $TASK
  backend: cuda
  timeout: 300
  max_retries: 0
  parallel_evaluations: 3
  quick: true # fewer trials and shorter timing per child: more children in the minutes
YAML
secs=$((MINUTES * 60))
t0=$(date +%s)
timeout --foreground --signal=INT --kill-after="$DRAIN" "$secs" "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
echo "== kevolve run exited $? after $(($(date +%s) - t0)) s"
"$KV" status "$WORK/run"
"$KV" status "$WORK/run" --json >"$WORK/status.json" 2>/dev/null
"$KV" best "$WORK/run" -o "$OUT/best.cu"
python3 "$ROOT/bench/gqa_evolve_summary.py" "$WORK/run/run.db" "$OUT/evolve_summary.json" \
    --status "$WORK/status.json" --task "$TASK" --minutes "$MINUTES"
grep -E "^#define [A-Z_]+ +[0-9]+ +// kevolve: tune" "$OUT/best.cu" 2>/dev/null
