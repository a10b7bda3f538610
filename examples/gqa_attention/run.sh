#!/bin/sh
# Runs examples/gqa_attention/config.yaml on the best backend present: cuda
# (every kind of call but the two 8192-row prefills, gqa_attention_search)
# when an NVIDIA GPU and nvcc are there,
# otherwise opencl, otherwise cpu (both on the small shapes of
# gqa_attention_small). Extra arguments go to `kevolve run`
# (e.g. --iterations 20 --output out).
# KV names the kevolve binary (default: kevolve on PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
KV=${KV:-kevolve}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
    { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    backend=cuda task=${KV_GQA_TASK:-gqa_attention_search}
elif command -v clinfo >/dev/null 2>&1 && clinfo -l 2>/dev/null | grep -q Platform; then
    backend=opencl task=${KV_GQA_TASK:-gqa_attention_small}
else
    backend=cpu task=${KV_GQA_TASK:-gqa_attention_small}
fi
# Children hold the GPU about 1.7 s each on an H200 when timed in full,
# under 1 s when screened out (quick mode; twelve in flight, so their
# compiles and preparation overlap it; bench/NOTES.md, 2026-12-03), and
# cost about 1 s on PoCL's small shapes (a later --iterations given to
# this script wins).
# CUDA starts from the six seeds of tasks/gqa_attention/cuda (config_cuda.yaml).
echo "gqa_attention example: backend $backend, task $task" >&2
case $backend in
cuda) KV_GQA_TASK=$task exec "$KV" run --config "$here/config_cuda.yaml" --iterations 400 "$@" ;;
opencl) program=opencl/seed.cl iterations=80 ;;
*) program=cpu/seed.c iterations=80 ;;
esac
KV_GQA_PROGRAM=$here/../../tasks/gqa_attention/$program KV_GQA_TASK=$task \
    exec "$KV" run --config "$here/config.yaml" --iterations "$iterations" "$@"
