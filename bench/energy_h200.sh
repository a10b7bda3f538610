#!/usr/bin/env bash
# Issue 22.3 on the H200, in one call: energy per call from NVML's counter
# (kevolve eval --energy) on swiglu's naive start (every scenario) and on
# gqa_attention_search's naive kernel and prefill_hopper.cu (a decode and a
# prefill scenario), each judged twice, alternately, so that the spread
# between two measurements of the same kernel shows beside the difference
# between kernels; the counter's step, the error of counting calls by
# block, and the mean power per scenario. Then the new tasks' naive CUDA
# starts (attention_mqa, attention_mha) judged once, quick.
# Usage: bench/energy_h200.sh   (OUT optional; .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_energy_h200}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
show() { # LABEL FILE: one line per scenario
    python3 - "$1" "$2" <<'PY'
import json, sys
label, path = sys.argv[1:]
try:
    a = json.load(open(path))["artifacts"]
except Exception as e:
    print(f"{label}: no JSON ({e})"); sys.exit(0)
if a.get("verdict") != "correct":
    print(f"{label}: {a.get('verdict')} {a.get('reason')} {a.get('reason_detail', '')[:200]}"); sys.exit(0)
for s in a.get("scenarios", []):
    e = s.get("energy", {})
    if "energy_uj" in s:
        print(f"{label:24s} {s['name']:26s} {s['median_us']:9.2f} us {s['energy_uj']:10.1f} uJ "
              f"{s['power_w']:6.1f} W  +-{100 * e['rel_err']:.2f}%  moves {e['counter_moves']} "
              f"every {e['move_every_s'] * 1e3:.0f} ms  window per call {e['per_call_us']:.2f} us "
              f"runner {100 * e['runner_share']:.1f}%")
    else:
        print(f"{label:24s} {s['name']:26s} {s.get('median_us', 0):9.2f} us  energy: {e.get('absent', 'none')}")
PY
}
echo "== swiglu naive, every scenario, twice"
for r in 1 2; do
    "$KV" eval --task swiglu --backend cuda --quick --energy tasks/swiglu/cuda/naive.cu \
        >"$OUT/swiglu-$r.json" 2>"$OUT/swiglu-$r.log"
    show "swiglu naive #$r" "$OUT/swiglu-$r.json"
done
echo "== gqa_attention_search: naive and prefill_hopper, alternately, twice"
SC=decode_16x8_b8_l8192,decode_40x8_b1_l32768,prefill_40x8_s2048
for r in 1 2; do
    for k in naive prefill_hopper; do
        "$KV" eval --task gqa_attention_search --backend cuda --quick --energy --scenarios "$SC" \
            "tasks/gqa_attention/cuda/$k.cu" >"$OUT/gqa-$k-$r.json" 2>"$OUT/gqa-$k-$r.log"
        show "gqa $k #$r" "$OUT/gqa-$k-$r.json"
    done
done
echo "== attention_mqa and attention_mha, naive, quick"
for t in attention_mqa attention_mha; do
    "$KV" eval --task "$t" --backend cuda --quick tasks/gqa_attention/cuda/naive.cu \
        >"$OUT/$t.json" 2>"$OUT/$t.log"
    tail -n +1 "$OUT/$t.log" | grep -E "verdict|us \(IQR" | head -8
done
