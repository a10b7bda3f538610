#!/usr/bin/env bash
# The gqa_attention float64 GPU reference (tasks/gqa_attention/cuda/
# reference_f64.cu), old against new, on the H200 in one device call of
# about a minute: builds bench/reference_f64_h200.cu with both versions
# compiled in (each in a namespace of its own), then runs it: every shape of
# gqa_attention_search, gqa_attention's 8192-row prefills, every held-out
# shape, windowed, multi-query and multi-head shapes; three input laws;
# o and os compared element by element with the judge's cross-check rule;
# times (median of 3 after a warm-up) and speedups. Exit status non-zero if
# any shape differs (or on a build or CUDA error).
# Usage: bench/reference_f64_h200.sh [--quick] [NAME_SUBSTRING...]   (repo root)
#   OLD_SRC=FILE  the old reference (default: git show OLD_REV:..., else, on
#                 a machine without the repository's history, this tree's
#                 file compiled with REFERENCE_F64_GENERAL: its general
#                 kernel, the one before the tiled kernel)
#   OLD_REV=REV   default bcf981e (the last commit before the tiled kernel)
# Writes $OUT/reference_f64.txt (the table) and $OUT/reference_f64_build.txt
# (nvcc's ptxas report: registers and spills of both).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_reference_f64}
W=/tmp/kevolve_reference_f64_work
OLD_REV=${OLD_REV:-bcf981e}
REF=tasks/gqa_attention/cuda/reference_f64.cu
rm -rf "$W"
mkdir -p "$OUT" "$W"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
cd "$ROOT" || exit 2

OLD_GENERAL=""
if [ -n "${OLD_SRC:-}" ]; then
    cp "$OLD_SRC" "$W/reference_f64_old.cu" || exit 2
elif ! git show "$OLD_REV:$REF" >"$W/reference_f64_old.cu" 2>/dev/null; then
    cp "$REF" "$W/reference_f64_old.cu"
    OLD_GENERAL=-DOLD_GENERAL
    echo "old: $REF's general kernel (no $OLD_REV here)"
fi
cp "$REF" "$W/reference_f64_new.cu"

echo "== building ($(nvcc --version | tail -1))"
if ! nvcc -O3 -std=c++17 -arch=sm_90a -lineinfo -Xptxas -v -Iinclude -Itasks \
    -DOLD_SRC="\"$W/reference_f64_old.cu\"" -DNEW_SRC="\"$W/reference_f64_new.cu\"" ${OLD_GENERAL:+"$OLD_GENERAL"} \
    -o "$W/reference_f64_bench" bench/reference_f64_h200.cu >"$OUT/reference_f64_build.txt" 2>&1; then
    cat "$OUT/reference_f64_build.txt"
    exit 2
fi
# Registers and spills of the references' kernels (old and new).
awk '/Compiling entry function/ { f = $0; sub(/.*function .\x27?/, "", f); sub(/\x27? for.*/, "", f) }
     /spill stores/ { sp = $5 " B spill stores, " $9 " B spill loads" }
     /Used [0-9]+ registers/ && f ~ /ref_(old|new)/ { print f ": " $5 " registers, " sp }' \
    "$OUT/reference_f64_build.txt"

timeout 170 "$W/reference_f64_bench" "$@" | tee "$OUT/reference_f64.txt"
exit "${PIPESTATUS[0]}"
