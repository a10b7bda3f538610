#!/usr/bin/env bash
# Hand sweep of the naive CUDA kernel's design axes on the GPU machine: each
# argument is a variant, axis settings joined by commas (e.g.
# WARP_DECODE=1,SHARE_KV=1,SPLIT=0); each is derived from
# tasks/gqa_attention/cuda/naive.cu by sed, compiled with bench/gqa_sweep.cu
# (all variants in parallel), checked on small shapes and timed on every
# scenario. For exploring quickly; quoted numbers come from the harness.
# Usage: bench/gqa_sweep.sh [--only decode|prefill] VARIANT...   (OUT optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_gqa_sweep}
ONLY=all
if [ "${1:-}" = --only ]; then ONLY=$2; shift 2; fi
mkdir -p "$OUT"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
ARCH=${ARCH:-sm_90a}
i=0
for variant in "$@"; do
    src="$OUT/v$i.cu"
    sedargs=()
    IFS=, read -ra sets <<<"$variant"
    for kv in "${sets[@]}"; do
        sedargs+=(-e "s/^#define ${kv%%=*} [0-9]* /#define ${kv%%=*} ${kv#*=} /")
    done
    sed "${sedargs[@]}" "$ROOT/tasks/gqa_attention/cuda/naive.cu" >"$src"
    (nvcc -O3 -arch=$ARCH -std=c++17 -I"$ROOT/include" -DCANDIDATE="\"$src\"" \
        "$ROOT/bench/gqa_sweep.cu" -o "$OUT/v$i" >"$OUT/v$i.build.log" 2>&1 ||
        echo "build of $variant failed" >>"$OUT/v$i.build.log") &
    i=$((i + 1))
done
wait
i=0
for variant in "$@"; do
    echo "== $variant"
    if [ -x "$OUT/v$i" ]; then
        timeout ${VARIANT_TIMEOUT:-60} "$OUT/v$i" "$ONLY" || echo "(exit $?)"
    else
        tail -5 "$OUT/v$i.build.log"
    fi
    i=$((i + 1))
done
