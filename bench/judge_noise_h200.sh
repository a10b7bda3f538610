#!/usr/bin/env bash
# Issue 21 on the GPU machine, in one call (about 4 minutes): where a fast
# child's unnamed hold goes, and whether one program's 6.5-8.4% spread from
# one evaluation to the next (commit d94eae3) is its few blocks' or each
# evaluation's.
#   1. bench/judge_in_place_h200.sh, ROUNDS 1, no red team: the profile with
#      its telemetry and unnamed steps.
#   2. bench/judge_spread.sh, quick, K (5) each of commit 01eb5c8's best and the
#      Hopper prefill seed, alternately.
#   3. bench/judge_spread.sh in full (QUICK=0), KFULL (3) of the seed.
#   4. bench/hold_gaps.py on step 1's evaluations, bench/spread_clocks.py on
#      steps 2 and 3 (the medians against the SM clock).
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/judge_noise_h200.sh  (OUT, K (5), KFULL (3))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_judge_noise}
BEST=bench/results/h200-2026-12-02-late-look/call3_run_best.cu
SEED=tasks/gqa_attention/cuda/prefill_hopper.cu
mkdir -p "$OUT"
OUT=$OUT/judge ROUNDS=1 RED=ctl_fp32 bench/judge_in_place_h200.sh
OUT=$OUT/quick K=${K:-5} bench/judge_spread.sh "$BEST" "$SEED"
OUT=$OUT/full K=${KFULL:-3} QUICK=0 bench/judge_spread.sh "$SEED"
# Where the fast child's hold went that no step names, and whether the
# spread follows the SM clock.
for f in "$OUT"/judge/new-*.json; do
    echo "== $f"
    python3 bench/hold_gaps.py "$f"
done
echo "== quick"
python3 bench/spread_clocks.py "$OUT/quick"
echo "== full"
python3 bench/spread_clocks.py "$OUT/full"
