#!/usr/bin/env bash
# Issue 21 on the GPU machine, in one call (about 9 minutes): the judge of
# commit 827d61f (telemetry read beside the work, 20 ms quick blocks, held-out
# shapes checked where their data is) on one fast child against commit
# d94eae3's, the red team with the held-out cheats, and, when the new judge gave
# a verdict, the README's main job of 7 minutes judged as bench/NOTES.md
# reports it (bench/pipeline_h200.sh PARTS=job).
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/judge_job_h200.sh  (OUT, RED, MINUTES (7), REPEAT (3))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_judge_job}
RED=${RED:-ctl_fp32 ctl_bf16_p late_stream replay_hash_cache tol_fp16_accumulate inplace_writes_input inplace_writes_input_held shape_tuned_tail}
mkdir -p "$OUT"
OUT=$OUT/judge ROUNDS=1 RED=$RED bench/judge_in_place_h200.sh
if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))["metrics"]["combined_score"]' \
    "$OUT/judge/new-1.json" 2>/dev/null; then
    echo "== the new judge gave no verdict: no main job"
    tail -n 30 "$OUT/judge/new-1.log"
    exit 1
fi
python3 bench/hold_gaps.py "$OUT/judge/new-1.json"
OUT=$OUT/pipe PARTS=job MINUTES=${MINUTES:-7} PARALLEL=12 REPEAT=${REPEAT:-3} bench/pipeline_h200.sh
