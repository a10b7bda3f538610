#!/usr/bin/env bash
# Builds kevolve (Release) on this machine and packs it for the GPU machine,
# which has no build dependencies: .dev/bin holds the binaries, .dev/lib the
# shared libraries they need beyond the C library. Carry .dev with the
# device call and prefix commands with `. bench/device_env.sh`.
# Usage: bench/device_pack.sh [EXTRA_TARGETS...]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-dev
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target kevolve test_kernel_cuda "$@" -j "$(nproc)" >/dev/null
rm -rf "$ROOT/.dev"
mkdir -p "$ROOT/.dev/bin" "$ROOT/.dev/lib"
cp "$BUILD/kevolve" "$BUILD/tests/test_kernel_cuda" "$ROOT/.dev/bin/"
for t in "$@"; do
    f=$(find "$BUILD" -type f -name "$t" -perm -u+x | head -n 1)
    [ -n "$f" ] && cp "$f" "$ROOT/.dev/bin/"
done
# Every library the binaries load, but the C library's own and the GPU
# driver's (the device machine has its own).
for b in "$ROOT"/.dev/bin/*; do
    ldd "$b" | awk '/=>/ {print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | ld-linux* | libcuda.so* | libnvidia*) ;;
    *) cp -L "$lib" "$ROOT/.dev/lib/" ;;
    esac
done
# What the binaries were built from (the task files are embedded in them):
# bench/device_env.sh refuses a tree whose sources differ.
(cd "$ROOT" && git ls-files -co --exclude-standard CMakeLists.txt src include tasks |
    sort | xargs sha256sum >.dev/SOURCES.sha256)
du -sh "$ROOT/.dev"
