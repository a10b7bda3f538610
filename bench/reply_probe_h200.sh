#!/usr/bin/env bash
# Issue 21 (commit 01eb5c8) on the GPU machine, in one call: the late look with
# no settle where the copies the judge makes at the runner's reply show an
# idle device (src/judge/reply_probe.c), and each arena's canaries checked
# in one launch, against the judge before them.
#   1. bench/judge_in_place_h200.sh: one fast child, the judge before
#      (.dev/bin/kevolve-old) and the new one alternately, ROUNDS each: the
#      device held, the timed share, the checks by step and how many late
#      looks ran at once; then the red team (RED) on the new judge, the
#      late host thread (late_thread.cu) among it.
#   2. bench/kernel_harness_cuda.sh: the harness's rows on the GPU (the
#      memcheck stage's verdict among them) and test_kernel_cuda.
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/reply_probe_h200.sh   (OUT, ROUNDS (3), RED)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_reply_probe}
RED=${RED:-ctl_fp32 ctl_atomics late_stream late_thread replay_hash_cache slow_baseline_stream inplace_writes_input inplace_partial inplace_cache_by_pointer}
mkdir -p "$OUT"
OUT=$OUT/judge ROUNDS=${ROUNDS:-3} RED=$RED bench/judge_in_place_h200.sh
echo "== kernel harness"
KV=$KV KV_TEST_CUDA=$ROOT/.dev/bin/test_kernel_cuda OUT=$OUT/harness bench/kernel_harness_cuda.sh |
    tail -n 30
