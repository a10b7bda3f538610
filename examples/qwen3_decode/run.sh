#!/bin/sh
# Runs one of examples/qwen3_decode's evolutions: BLOCK is qkv, attn, o, mlp or
# post (o and mlp as one block; default o). With an NVIDIA GPU and nvcc: the CUDA config (BLOCK_cuda.yaml,
# from BLOCK_naive.cu and the fused seed). Otherwise the same config on the
# cpu backend from the task's C start (cpu/BLOCK_naive.c), which exercises
# the plumbing only (the 14B shapes take a naive C start tens of seconds a
# child). Extra arguments go to `kevolve run` (e.g. --iterations 20
# --output out). KV names the kevolve binary (default: kevolve on PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
KV=${KV:-kevolve}
block=${1:-o}
[ $# -gt 0 ] && shift
case $block in
qkv | attn | o | mlp | post) ;;
*) echo "usage: $0 [qkv|attn|o|mlp|post] [kevolve run options]" >&2; exit 2 ;;
esac
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
    { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    echo "qwen3_decode example: $block on cuda, from ${block}_naive.cu and the fused seed" >&2
    exec "$KV" run --config "$here/${block}_cuda.yaml" "$@"
fi
echo "qwen3_decode example: no GPU; $block on cpu from cpu/${block}_naive.c (plumbing only)" >&2
KV_QWEN3_BACKEND=cpu exec "$KV" run "$here/../../tasks/qwen3_decode/cpu/${block}_naive.c" \
    --config "$here/${block}_cuda.yaml" --iterations 3 "$@"
