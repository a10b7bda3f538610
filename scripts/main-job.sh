#!/bin/sh
# The main job: installs what is missing, builds kevolve, and runs an evolution
# of the shipped example with the built-in mutators (no language model needed).
# Extra arguments go to `kevolve run` (e.g. --iterations 20).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build"
example="$root/examples/matmul_c"
"$root/build/kevolve" run --config "$example/config.yaml" --output "$example/out" --force "$@"
"$root/build/kevolve" status "$example/out"
echo "best program: $example/out/best/ (kevolve best $example/out)"
