#!/usr/bin/env bash
# Issue 21 on the GPU machine, in one call (about 7 minutes): the judge whose
# telemetry reads run beside its work and whose quick blocks last 20 ms
# (KV, .dev/bin/kevolve) against the one before (KV_OLD,
# .dev/bin/kevolve-old), side by side.
#   1. bench/judge_in_place_h200.sh, ROUNDS (2): one fast child, old and
#      new alternately, with its profile; then the red team (RED, the 15 of
#      commit 01eb5c8's call 4) against the new judge.
#   2. bench/hold_gaps.py on the new judge's fast children.
#   3. bench/judge_spread.sh, K (5) quick evaluations each of commit 01eb5c8's
#      best and the Hopper prefill seed, with the new judge, then (OLD_SPREAD
#      1) the old.
#   4. (HARNESS 1) bench/kernel_harness_cuda.sh with the new binaries.
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/judge_blocks_h200.sh  (OUT, ROUNDS (2), K (5), RED, OLD_SPREAD
#        (1), HARNESS (1))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_judge_blocks}
BEST=bench/results/h200-2026-12-02-late-look/call3_run_best.cu
SEED=tasks/gqa_attention/cuda/prefill_hopper.cu
RED=${RED:-ctl_fp32 ctl_bf16_p ctl_single_block ctl_workspace late_stream late_thread replay_hash_cache replay_skip_written slow_baseline_stream inplace_partial inplace_nondeterministic inplace_writes_input reach_copy_reference tol_fp16_accumulate outlive_setsid}
mkdir -p "$OUT"
OUT=$OUT/judge ROUNDS=${ROUNDS:-2} RED=$RED bench/judge_in_place_h200.sh
for f in "$OUT"/judge/new-[1-9]*.json; do
    echo "== $f"
    python3 bench/hold_gaps.py "$f"
done
echo "== spread, new judge"
OUT=$OUT/spread_new K=${K:-5} bench/judge_spread.sh "$BEST" "$SEED"
if [ "${OLD_SPREAD:-1}" = 1 ]; then
    echo "== spread, old judge"
    OUT=$OUT/spread_old KV=$ROOT/.dev/bin/kevolve-old K=${K:-5} bench/judge_spread.sh "$BEST" "$SEED"
fi
if [ "${HARNESS:-1}" = 1 ]; then
    echo "== kernel harness"
    KV=$ROOT/.dev/bin/kevolve KV_TEST_CUDA=$ROOT/.dev/bin/test_kernel_cuda OUT=$OUT/harness \
        bench/kernel_harness_cuda.sh 2>&1 | tail -n 30
fi
