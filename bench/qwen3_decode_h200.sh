#!/usr/bin/env bash
# The fused decode kernels of the qwen3_decode tasks on the GPU machine, in
# one device call: nvcc builds each task's seed (tasks/qwen3_decode/cuda)
# into a shared object; `kevolve eval` judges each seed (its naive start
# timed beside it as the baseline), one line a task with its verdict, time
# and roofline share per scenario; then bench/qwen3_decode_fused.py runs
# Qwen3 with them against PyTorch and torch.compile. Logs and JSON in OUT.
# Usage: bench/qwen3_decode_h200.sh   (OUT; MODEL (0.6B), CONTEXTS (1024),
#        BATCHES (1), COMPILE (default; empty: none), DEADLINE (300 s for the model
#        part), EVAL (1: judge the seeds first), with .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/kevolve_decode_out}
W=/tmp/kevolve_decode
rm -rf "$W" && mkdir -p "$W" "$OUT"
. bench/device_env.sh
SEEDS="qkv:qkv_cluster o:o_fused mlp:mlp_fused"
for s in $SEEDS; do
    f=${s#*:}
    nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a \
        -Iinclude -Itasks -o "$W/$f.so" -x cu "tasks/qwen3_decode/cuda/$f.cu" >"$W/$f.nvcc.log" 2>&1 &
done
wait
for s in $SEEDS; do [ -f "$W/${s#*:}.so" ] || { cat "$W/${s#*:}.nvcc.log"; exit 1; }; done
if [ "${EVAL:-1}" = 1 ]; then
    for s in $SEEDS; do
        t=${s%%:*} f=${s#*:}
        timeout 150 "$KV" eval --task "qwen3_decode_$t" ${QUICK:+--quick} --cache-dir "$W/cache" \
            "tasks/qwen3_decode/cuda/$f.cu" >"$OUT/eval_$t.json" 2>"$OUT/eval_$t.log"
        python3 - "$OUT/eval_$t.json" "$t" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    m, a = d.get("metrics", d), d.get("artifacts", {})
    print(f"{sys.argv[2]:4s} verdict {a.get('verdict')} {a.get('reason', '')} {str(a.get('reason_detail', ''))[:300]}")
    for s in sorted({k[:-len("_median_us")] for k in m if k.endswith("_median_us")}):
        print(f"     {s:10s} {m[s + '_median_us']:9.2f} us  roofline {m.get(s + '_roofline_fraction', 0):5.1%}  "
              f"x naive {m.get(s + '_speedup', 0):6.2f}  tol {m.get(s + '_tol_ratio', 0):.2f}")
PY
    done
fi
python3 bench/qwen3_decode_fused.py "$OUT/model.json" --qkv "$W/qkv_cluster.so" --o "$W/o_fused.so" \
    --mlp "$W/mlp_fused.so" --model "${MODEL:-0.6B}" --contexts "${CONTEXTS:-1024}" \
    --batches "${BATCHES:-1}" --compile "${COMPILE-default}" --deadline "${DEADLINE:-300}" \
    2>"$OUT/model.err" | tee "$OUT/model.log"
tail -5 "$OUT/model.err"
