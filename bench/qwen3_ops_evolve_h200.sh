#!/usr/bin/env bash
# Issue 22 on the H200, in one device call: evolves rmsnorm, rmsnorm_add
# and swiglu in turn (examples/qwen3_ops/TASK_cuda.yaml: built-in mutators
# only, from naive.cu and vec.cu), each stopped gracefully after LIMIT
# seconds (SIGINT: no new children, those in flight finish; killed DRAIN
# seconds later), writes each run's best program, then judges naive, the
# vec seed and the evolved best in full beside PyTorch eager, torch.compile
# and the memory floor (bench/qwen3_ops_h200.sh: one table per task).
# About 3 x (LIMIT + 15) s of evolution and 2-3 min of table: under 8 min
# at the default LIMIT.
# Usage: bench/qwen3_ops_evolve_h200.sh   (OUT, LIMIT (90), DRAIN (20) optional; .dev carried)
# Dry path without a GPU: KV_QWEN3_BACKEND=cpu KV=build/kevolve LIMIT=20
#   bench/qwen3_ops_evolve_h200.sh  (cpu/naive.c seeds; each best judged on
#   the cpu backend instead of the table).
# Writes to $OUT: TASK.log, TASK.status, TASK/best.cu, table/ and table.txt.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
[ -n "${KV:-}" ] || . bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_qwen3_ops_evolve}
LIMIT=${LIMIT:-90}
DRAIN=${DRAIN:-20}
BACKEND=${KV_QWEN3_BACKEND:-cuda}
rm -rf "$OUT"
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache KV_QWEN3_BACKEND=$BACKEND
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "== ${gpu:-no GPU}, backend $BACKEND, $LIMIT s per task, $(date -u +%FT%TZ)"
bests=()
for task in rmsnorm rmsnorm_add swiglu; do
    dir=$task
    [ "$task" = rmsnorm_add ] && dir=rmsnorm
    seed=()
    [ "$BACKEND" = cuda ] || seed=("tasks/$dir/cpu/naive.c")
    t0=$(date +%s)
    timeout --signal=INT --kill-after="$DRAIN" "$LIMIT" "$KV" run "${seed[@]}" \
        --config "examples/qwen3_ops/${task}_cuda.yaml" --output "$OUT/run_$task" -q \
        >"$OUT/$task.log" 2>&1
    rc=$?
    "$KV" status "$OUT/run_$task" >"$OUT/$task.status" 2>&1
    ext=cu
    [ "$BACKEND" = cuda ] || ext=c
    mkdir -p "$OUT/$task"
    best=$OUT/$task/best.$ext
    "$KV" best "$OUT/run_$task" -o "$best" 2>"$OUT/$task/best.err"
    echo "$task: run exit $rc after $(($(date +%s) - t0)) s;" \
        "$(grep -E '^programs' "$OUT/$task.status" | head -1);" \
        "best $(tr '\n' ' ' <"$OUT/$task/best.err" | cut -c1-160)"
    grep -E "^#define [A-Z_]+ +[0-9]+ +// kevolve: tune" "$best" | sed 's/^/    /'
    bests+=("$task=$best")
done
if [ "$BACKEND" != cuda ]; then
    for b in "${bests[@]}"; do
        "$KV" eval --task "${b%%=*}" --backend "$BACKEND" --quick --json "${b#*=}" >"$OUT/eval_${b%%=*}.json" 2>&1
        echo "${b%%=*} best on $BACKEND: eval exit $?"
    done
    exit 0
fi
OUT=$OUT/table bench/qwen3_ops_h200.sh "${bests[@]}" \
    rmsnorm=tasks/rmsnorm/cuda/vec.cu rmsnorm_add=tasks/rmsnorm/cuda/vec.cu \
    swiglu=tasks/swiglu/cuda/vec.cu | tee "$OUT/table.txt"
