#!/usr/bin/env bash
# Where one evaluation's seconds go on the GPU machine: `kevolve eval` of the
# gqa decode task in quick mode (what every child of an evolution costs) for
# the naive kernel and for the tensor-core decode seed, each printed with
# the worker's profile (alloc, fill, upload, reference, run, check, timed);
# then the host cost of drawing one big input set (harness_prep) on all cores.
# Does not build kevolve: KV names the binary, PREP harness_prep.
# Usage: bench/gqa_eval_profile.sh   (repo root; OUT, TASK (gqa_attention_decode),
#        PROGS ("naive tensor_core") optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_gqa_profile}
KV=${KV:-$ROOT/build/kevolve}
PREP=${PREP:-$ROOT/build/bench/harness_prep}
TASK=${TASK:-gqa_attention_decode}
mkdir -p "$OUT"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
export KEVOLVE_CACHE_DIR=${KEVOLVE_CACHE_DIR:-/tmp/kevolve_gqa_cache}
NAIVE=$ROOT/tasks/gqa_attention/cuda/naive.cu
TC=$ROOT/tasks/gqa_attention/cuda/decode_split.cu
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%FT%TZ)"
for name in ${PROGS:-naive tensor_core}; do
    prog=$NAIVE
    [ "$name" = tensor_core ] && prog=$TC
    t0=$(date +%s%N)
    "$KV" eval --task "$TASK" --backend cuda --quick "$prog" >"$OUT/eval_$name.json" 2>"$OUT/eval_$name.log"
    rc=$?
    t1=$(date +%s%N)
    python3 - "$OUT/eval_$name.json" "$name" "$rc" "$(((t1 - t0) / 1000000))" <<'PY'
import json, sys
path, name, rc, wall = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{name}: exit {rc}, no JSON ({e})")
    sys.exit(0)
a, m = d.get("artifacts", {}), d.get("metrics", {})
prof = a.get("profile_seconds", {})
print(f"{name}: exit {rc}, wall {int(wall) / 1000:.1f} s, worker {a.get('worker_seconds', 0):.1f} s, "
      f"score {m.get('combined_score')}, verdict {a.get('verdict')}, cached compile {a.get('compile_cached')}")
print("   " + "  ".join(f"{k} {v:.2f}" for k, v in prof.items())
      + f"  other {a.get('worker_seconds', 0) - sum(prof.values()):.2f}")
PY
done
echo "== harness_prep (one big input set, all cores)"
"$PREP" "$TASK" decode_40x8_b32_l4096 0 0 2>&1 | tee "$OUT/harness_prep.txt"
