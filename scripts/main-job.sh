#!/bin/sh
# The main job: installs what is missing, builds kevolve, and runs an evolution
# of the flagship example, Qwen3's grouped-query attention, with the built-in
# mutators (no language model needed) on the best backend present: CUDA on an
# NVIDIA GPU, else OpenCL (PoCL on the CPU), else plain C.
# Extra arguments go to `kevolve run` (e.g. --iterations 10).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build"
example="$root/examples/gqa_attention"
KV="$root/build/kevolve" "$example/run.sh" --output "$example/out" --force "$@"
"$root/build/kevolve" status "$example/out"
echo "best program: $example/out/best/ ($root/build/kevolve best $example/out)"
echo "kevolve on the PATH: cmake --install $root/build --prefix ~/.local (README: Putting kevolve on the PATH)"
