#!/usr/bin/env bash
# Issue 22 on the H200, in one device call:
#  1. four evolutions at once, LIMIT seconds each (examples/qwen3_ops:
#     rmsnorm, rmsnorm_add, swiglu, rope from naive.cu and vec.cu, built-in
#     mutators only; one cache folder, so the GPU lock in it lets one judge
#     time at a time while the compiles overlap), stopped with SIGINT;
#  2. each run's best exported with --torch (rmsnorm, swiglu, rope);
#  3. PyTorch's ops timed, eager and under torch.compile, and the copy
#     bandwidth for the floor (bench/qwen3_ops_torch.py);
#  4. one table per task: naive, vec seed and best (as the run timed them)
#     beside eager, torch.compile and the floor (bench/qwen3_ops_table.py);
#  5. Qwen3-0.6B with the exports in it (bench/qwen3_ops_model.py): decode
#     steps in a CUDA graph at batch 1 and 8, context 1,024 and 8,192,
#     against PyTorch's own ops, and a greedy-token check.
# Everything comes back as one archive, $OUT/qwen3_ops_all.tgz.
# Usage: bench/qwen3_ops_all_h200.sh   (OUT, LIMIT (150), DRAIN (25) optional; .dev carried)
#   TASKS (the four) to evolve fewer; SEQUENTIAL=1: one evolution after the
#   other, LIMIT each (at once, the four runs' seeds wait for each other's
#   judging and few children follow); PARTS (evolve,export,torch,table,model)
#   to run fewer steps.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_qwen3_ops_all}
LIMIT=${LIMIT:-150}
DRAIN=${DRAIN:-25}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%FT%TZ)"
tasks=${TASKS:-rmsnorm rmsnorm_add swiglu rope}
PARTS=${PARTS:-evolve,export,torch,table,model}
part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
t0=$(date +%s)
for t in $tasks; do
    part evolve || break
    timeout --foreground --signal=INT --kill-after="$DRAIN" "$LIMIT" "$KV" run \
        --config "examples/qwen3_ops/${t}_cuda.yaml" --output "$OUT/run_$t" >"$OUT/$t.log" 2>&1 &
    [ -n "${SEQUENTIAL:-}" ] && wait
done
wait
echo "1. evolutions: $(($(date +%s) - t0)) s"
for t in $tasks; do
    "$KV" status "$OUT/run_$t" 2>&1 | grep -E "^programs|^best" | sed "s/^/   $t: /"
    "$KV" best "$OUT/run_$t" -o "$OUT/best_$t.cu" >/dev/null 2>&1 &&
        grep -E "^#define [A-Z_]+ +[0-9]+ +// kevolve: tune" "$OUT/best_$t.cu" | tr -s ' ' | cut -d' ' -f2,3 |
        tr '\n' ' ' | sed "s/^/   $t best axes: /"
    echo
done
t0=$(date +%s)
for t in rmsnorm swiglu rope; do
    part export || break
    timeout 200 "$KV" export "$OUT/run_$t" -o "$OUT/lib_$t" --torch --quick >"$OUT/export_$t.log" 2>&1 &
done
wait
echo "2. exports: $(($(date +%s) - t0)) s; $(for t in rmsnorm swiglu rope; do [ -s "$OUT/lib_$t/manifest.json" ] && echo -n "$t ok " || echo -n "$t FAILED ($(tail -1 "$OUT/export_$t.log" | cut -c1-200)) "; done)"
t0=$(date +%s)
part torch && timeout 240 python3 bench/qwen3_ops_torch.py "$OUT/torch.json" >"$OUT/torch.log" 2>&1 || tail -5 "$OUT/torch.log"
echo "3. PyTorch's ops: $(($(date +%s) - t0)) s"
part table && python3 bench/qwen3_ops_table.py "$OUT/torch.json" $(for t in $tasks; do echo "$t=$OUT/run_$t"; done) |
    tee "$OUT/table.txt"
t0=$(date +%s)
libs=()
for t in rmsnorm swiglu rope; do
    [ -s "$OUT/lib_$t/manifest.json" ] && libs+=("--$t" "$OUT/lib_$t")
done
part model && timeout 300 python3 bench/qwen3_ops_model.py "$OUT/model.json" "${libs[@]}" >"$OUT/model.log" 2>&1
echo "5. Qwen3-0.6B with the exports: exit $? after $(($(date +%s) - t0)) s"
grep -vE "^W[0-9]{4}|Warning|warn\(" "$OUT/model.log" | tail -14
rm -rf "$OUT/cache" "$OUT"/lib_*/torch/build 2>/dev/null
tar -C "$OUT" -czf /tmp/qwen3_ops_all.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/qwen3_ops_all.tgz "$OUT/"
