#!/usr/bin/env bash
# Issue 21 (commit d94eae3) on the GPU machine, in one call: the judge's timed
# inputs drawn and checked by kernels specialised to KVJ_QUICK_NORMAL's
# dtype, against the generic kernels before them.
#   1. bench/judge_gen_speed.sh: the draw and the check alone on 1 GiB,
#      specialised against generic against a memset, bits compared.
#   2. bench/judge_in_place_h200.sh: one fast child, the judge before
#      (.dev/bin/kevolve-old) and the new one alternately (ROUNDS each),
#      then the red team (RED) on the new one; the last new evaluation's
#      scenarios by bench/scenario_shares.py (calls against writes).
#   3. bench/judge_spread.sh on SPREAD (K evaluations each, alternately).
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/judge_inputs_h200.sh  (OUT, ROUNDS (2), RED, K (5), SPREAD)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_judge_inputs}
RED=${RED:-ctl_fp32 ctl_bf16_p inplace_writes_input inplace_partial late_thread}
SPREAD=${SPREAD:-bench/results/h200-2026-12-02-late-look/call3_run_best.cu tasks/gqa_attention/cuda/prefill_hopper.cu}
mkdir -p "$OUT"
echo "== the draw and the check alone"
bench/judge_gen_speed.sh "$OUT/gen" 2>&1 | tee "$OUT/gen_speed.txt"
OUT=$OUT/judge ROUNDS=${ROUNDS:-2} RED=$RED bench/judge_in_place_h200.sh
last=$(ls "$OUT"/judge/new-*.json | sort | tail -n 1)
echo "== scenarios of $(basename "$last")"
python3 bench/scenario_shares.py "$last"
echo "== one program judged again and again"
# shellcheck disable=SC2086
OUT=$OUT/spread K=${K:-5} bench/judge_spread.sh $SPREAD
