#!/bin/sh
# The judge's timed-input kernels on this machine's GPU: the specialised
# draw and check of KVJ_QUICK_NORMAL against the generic path and a memset,
# bits compared (bench/judge_gen_speed.cu). Exits non-zero when any bits
# differ. Usage: bench/judge_gen_speed.sh [OUT_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${TMPDIR:-/tmp}/judge_gen_speed}
mkdir -p "$out/inc/kevolve"
cp "$root/src/backend/judge_ops.h" "$root/include/kevolve/task.h" "$out/inc/kevolve/"
arch=${ARCH:-sm_90a}
nvcc -std=c++17 -O3 -arch="$arch" -I"$out/inc" -I"$root/include" \
    -o "$out/judge_gen_speed" "$root/bench/judge_gen_speed.cu"
"$out/judge_gen_speed"
