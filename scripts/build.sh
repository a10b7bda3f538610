#!/bin/sh
# Configures and builds kevolve into BUILD_DIR (default: build/). Extra
# arguments go to cmake's configure step (e.g. -DKV_SANITIZE=ON).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$root/build"}
[ $# -gt 0 ] && shift
cmake -S "$root" -B "$dir" -G Ninja -DKV_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
