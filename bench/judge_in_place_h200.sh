#!/usr/bin/env bash
# Issue 21.1 on the GPU machine, in one call: the judge that checks in place
# (inputs drawn, reference computed and outputs compared on the GPU) against
# the judge before it, side by side, and the red team against the new one.
#
# 1. One fast child (`kevolve eval --task gqa_attention_search --backend cuda
#    --quick` on prefill_hopper.cu), alternately with KV_OLD (the judge
#    before) and KV (the new one), ROUNDS times each, after a first
#    evaluation of each that compiles and keeps the baseline: each line
#    prints the wall and the worker's profile (alloc, fill, upload,
#    reference, run, check, timed).
# 2. bench/redteam_cuda.sh on gqa_attention_decode with the candidates in
#    RED (honest controls, tolerance cheats, the in-place classes, late
#    work), its compiles done while step 1 runs.
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/judge_in_place_h200.sh   (OUT, ROUNDS (2), RED optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_in_place}
ROUNDS=${ROUNDS:-2}
KV_OLD=${KV_OLD:-$ROOT/.dev/bin/kevolve-old}
RED=${RED:-ctl_fp32 ctl_atomics ctl_workspace tol_bf16_accumulate late_stream inplace_writes_input inplace_partial inplace_nondeterministic inplace_cache_by_pointer}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%FT%TZ)"

# The red team's compiles, on the host's cores, while the GPU times step 1.
(TASK=gqa_attention_decode OUT=$OUT/redteam KV=$KV bench/redteam_cuda.sh --compile-only $RED \
    >"$OUT/redteam_compile.log" 2>&1) &
compiles=$!

CHILD=tasks/gqa_attention/cuda/prefill_hopper.cu
one() { # one evaluation with binary $2, labelled $1
    local t0 t1 rc
    t0=$(date +%s%N)
    "$2" eval --task gqa_attention_search --backend cuda --quick "$CHILD" >"$OUT/$1.json" 2>"$OUT/$1.log"
    rc=$?
    t1=$(date +%s%N)
    python3 - "$OUT/$1.json" "$1" "$rc" "$(((t1 - t0) / 1000000))" <<'PY'
import json, sys
path, name, rc, wall = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{name:10s} exit {rc}, no JSON ({e})")
    sys.exit(0)
a, m = d.get("artifacts", {}), d.get("metrics", {})
p = a.get("profile_seconds", {})
w = a.get("worker_seconds", 0)
# The device's share (held from taking it to letting it go; older judges
# held it for the whole worker).
h = a.get("device_held_seconds", w)
print(f"{name:10s} exit {rc} wall {int(wall) / 1000:5.1f} s worker {w:5.1f} s held {h:5.2f} s score {m.get('combined_score', 0):7.2f} "
      f"{a.get('verdict')} {a.get('reason', '')} | " + " ".join(f"{k} {v:.2f}" for k, v in p.items())
      + f" | timed share of held {p.get('timed', 0) / h if h else 0:.0%}"
      # The calls alone: the timed windows less the judge's input writes in them.
      + f" (calls {(p.get('timed', 0) - a.get('profile_check_seconds', {}).get('block_write', 0)) / h if h else 0:.0%})")
looks = a.get("late_looks")
if looks:
    print(f"{'':10s} late looks: at once {looks.get('at_once', 0)}, after the settle {looks.get('after_settle', 0)}; "
          f"waits (us, min/median/p90/max) {looks.get('wait_us')}, limit {looks.get('limit_small_us', 0):.0f} us and more for bytes")
cal = a.get("clock_calibration")
if cal:
    print(f"{'':10s} calibration: " + " ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                            for k, v in cal.items()))
c = a.get("profile_check_seconds")
if c:
    print(f"{'':10s} check by step: " + " ".join(f"{k} {v:.2f}" for k, v in c.items()))
PY
}
echo "== one fast child, old judge and new, alternately (first of each: compile + baseline)"
one new-0 "$KV"
one old-0 "$KV_OLD"
for r in $(seq 1 "$ROUNDS"); do
    one "old-$r" "$KV_OLD"
    one "new-$r" "$KV"
done
wait "$compiles"
echo "== red team (gqa_attention_decode), new judge"
TASK=gqa_attention_decode OUT=$OUT/redteam KV=$KV EVAL_TIMEOUT=90 bench/redteam_cuda.sh $RED 2>&1 |
    tail -n 40
rm -rf "$OUT/cache" "$OUT/redteam/cache" 2>/dev/null
tar -C "$OUT" -czf "$OUT/../in_place_logs.tgz" . 2>/dev/null && mv "$OUT/../in_place_logs.tgz" "$OUT/"
