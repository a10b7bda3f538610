#!/usr/bin/env bash
# Issue 22 on the H200, in one call: the rmsnorm, rmsnorm_add, swiglu and
# rope tasks' naive CUDA starts (and any evolved programs given) judged in full
# by kevolve, beside Qwen3's ops in PyTorch eager and under torch.compile
# (bench/qwen3_ops_torch.py, timed as the harness times) and the memory floor
# (the bytes each call must move at the measured copy bandwidth). Prints
# one table per task: microseconds per call and each program's share of
# the floor.
# Usage: bench/qwen3_ops_h200.sh [TASK=PROGRAM.cu ...]   (OUT optional)
#   e.g. bench/qwen3_ops_h200.sh rmsnorm=/path/best.cu swiglu=/path/best_swiglu.cu
# Needs bench/device_pack.sh's .dev (carry it) and PyTorch.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_qwen3_ops_h200}
mkdir -p "$OUT"
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
progs=("rmsnorm=tasks/rmsnorm/cuda/naive.cu" "rmsnorm_add=tasks/rmsnorm/cuda/naive.cu"
    "swiglu=tasks/swiglu/cuda/naive.cu" "rope=tasks/rope/cuda/naive.cu" "$@")
for p in "${progs[@]}"; do
    task=${p%%=*} file=${p#*=}
    label=$task-$(basename "$file" .cu)
    "$KV" eval --task "$task" --backend cuda --json "$file" >"$OUT/$label.json" 2>"$OUT/$label.err"
    echo "$label: exit $? $(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['artifacts']; print(a.get('verdict'), a.get('reason',''), a.get('reason_detail','')[:200])" "$OUT/$label.json" 2>&1)"
done
python3 bench/qwen3_ops_torch.py "$OUT/torch.json" >"$OUT/torch.log" 2>&1 || tail -5 "$OUT/torch.log"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
torch = json.load(open(os.path.join(out, "torch.json")))
gbps = torch["copy_gbps"]
ours = {}
for f in sorted(glob.glob(os.path.join(out, "*-*.json"))):
    label = os.path.basename(f)[:-5]
    task = label.split("-")[0]
    art = json.load(open(f)).get("artifacts", {})
    for s in art.get("scenarios", []):
        if "median_us" in s:
            ours.setdefault(task, {}).setdefault(label, {})[s["name"]] = s["median_us"]
print(f"{torch['device']}, torch {torch['torch']}, copy {gbps:.0f} GB/s")
for task in ("rmsnorm", "rmsnorm_add", "swiglu", "rope"):
    labels = sorted(ours.get(task, {}))
    print(f"\n{task}: microseconds per call (floor: bytes at the copy bandwidth)")
    print(f"{'scenario':22} {'floor':>7} {'eager':>7} {'compile':>8} " +
          " ".join(f"{l[len(task) + 1:]:>12}" for l in labels) + "  of_floor vs_compile")
    for r in torch["rows"]:
        if r["task"] != task:
            continue
        floor = r["bytes"] / gbps / 1e3
        mine = [ours[task][l].get(r["scenario"]) for l in labels]
        best = min((m for m in mine if m), default=None)
        comp = r.get("compile_us")
        print(f"{r['scenario']:22} {floor:7.2f} {r['eager_us']:7.2f} {comp or float('nan'):8.2f} " +
              " ".join(f"{m or float('nan'):12.2f}" for m in mine) +
              (f"  {floor / best:9.0%} {comp / best if comp else float('nan'):10.2f}x" if best else ""))
PY
