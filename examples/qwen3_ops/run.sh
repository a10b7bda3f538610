#!/bin/sh
# Runs one of examples/qwen3_ops's evolutions: TASK is rmsnorm, rmsnorm_add,
# swiglu or rope (default rmsnorm). With an NVIDIA GPU and nvcc: the CUDA config
# (TASK_cuda.yaml, from naive.cu and vec.cu). Otherwise the same config on
# the cpu backend from the task's C start (cpu/naive.c), which exercises the
# plumbing only. Extra arguments go to `kevolve run` (e.g. --iterations 20
# --output out). KV names the kevolve binary (default: kevolve on PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
KV=${KV:-kevolve}
task=${1:-rmsnorm}
[ $# -gt 0 ] && shift
case $task in
rmsnorm | rmsnorm_add) dir=rmsnorm ;;
swiglu | rope) dir=$task ;;
*) echo "usage: $0 [rmsnorm|rmsnorm_add|swiglu|rope] [kevolve run options]" >&2; exit 2 ;;
esac
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
    { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    echo "qwen3_ops example: $task on cuda, from naive.cu and vec.cu" >&2
    exec "$KV" run --config "$here/${task}_cuda.yaml" "$@"
fi
echo "qwen3_ops example: no GPU; $task on cpu from cpu/naive.c (plumbing only)" >&2
KV_QWEN3_BACKEND=cpu exec "$KV" run "$here/../../tasks/$dir/cpu/naive.c" \
    --config "$here/${task}_cuda.yaml" --iterations 10 "$@"
