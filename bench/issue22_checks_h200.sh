#!/usr/bin/env bash
# Issue 22's GPU checks and issue 21's judge change, in one device call:
#  1. the sliding window's CUDA start on attention_window (quick: every
#     scenario timed once, the held-out windows of 1 to 100 keys, the GPU
#     reference's window path checked against the CPU's on them);
#  2. rope's naive CUDA start, judged in full (in place: the judge's
#     hidden copies, the index draws on the GPU);
#  3. one fast gqa child with the judge before (.dev/bin/kevolve-old) and
#     after the device-side late-change look, alternately, and the red
#     team's late-work and in-place cases (bench/judge_in_place_h200.sh);
#  4. a run with two objectives on the gqa seeds (bench/pareto_h200.sh,
#     PARETO_TASK=gqa), its front and energy figures.
# Usage: bench/issue22_checks_h200.sh   (OUT optional; .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_issue22_checks}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
verdict() { python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['artifacts']; print(a.get('verdict'), a.get('reason',''), a.get('reason_detail','')[:300]); [print('  %-28s %9.2f us  speedup %6.2fx  roofline %5.1f%%' % (s['name'], s['median_us'], s.get('speedup', float('nan')), 100*s.get('roofline_fraction', 0))) for s in a.get('scenarios', []) if 'median_us' in s]; [print('  held-out %-20s tol_ratio %.3f' % (h['name'], h.get('tol_ratio', -1))) for h in a.get('held_out', [])]" "$1" 2>&1; }
t0=$(date +%s)
"$KV" eval --task attention_window --backend cuda --quick --json tasks/gqa_attention/cuda/window_naive.cu >"$OUT/window.json" 2>"$OUT/window.err"
echo "1. window_naive.cu on attention_window: exit $? ($(($(date +%s) - t0)) s)"; verdict "$OUT/window.json"
t0=$(date +%s)
"$KV" eval --task rope --backend cuda --json tasks/rope/cuda/naive.cu >"$OUT/rope.json" 2>"$OUT/rope.err"
echo "2. rope naive.cu: exit $? ($(($(date +%s) - t0)) s)"; verdict "$OUT/rope.json"
echo "3. one fast child, old and new judge"
OUT=$OUT/judge ROUNDS=2 RED="late_stream ctl_fp32 inplace_writes_input inplace_partial" \
    timeout 200 bench/judge_in_place_h200.sh 2>&1 | tail -16
echo "4. two objectives on the gqa seeds"
OUT=$OUT/pareto LIMIT=${LIMIT:-110} PARETO_TASK=gqa bench/pareto_h200.sh 2>&1 | tail -30
tail -3 "$OUT/pareto/run.log"
# Everything back as one file (the device returns few): logs, JSON, the run's store.
rm -rf "$OUT/cache" "$OUT/pareto/cache"
tar -C "$OUT" -czf /tmp/issue22_checks.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/issue22_checks.tgz "$OUT/"
