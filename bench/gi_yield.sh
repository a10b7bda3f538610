#!/usr/bin/env bash
# How many of the gi mutator's children compile: N children of each seed
# (bench/gi_yield.c, seeds 1..N), each compiled for syntax and types as the
# harness would (C: cc; OpenCL: the device part with clang's OpenCL C and
# the host part with cc; CUDA: nvcc for sm_90a, with the task headers;
# Python: parsed, as OpenEvolve's examples are programs in Python). Children that compile can still be wrong; ones
# that do not are evaluations spent on nothing.
# MODE=crossover: each child is a crossover of two variants of the seed
# (two gi and two tune edits each), counted only where both parents
# compile.
# JUDGE=TASK: each child that compiles is also judged (`kevolve eval --task
# TASK --quick`, the backend the seed's suffix names: .c cpu, .cl opencl,
# .cu cuda), and the table adds how many were correct, and of the
# deletions how many took a one-line if and how many of those were correct.
# BIN names another build's gi_yield, to set two versions of gi side by side.
# Usage (repository root, after `cmake --build build --target gi_yield`):
#   [MODE=crossover] [JUDGE=TASK] bench/gi_yield.sh [N (200)] [SEED ...]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-200}
shift || true
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=("$ROOT/tasks/gqa_attention/cpu/seed.c"
    "$ROOT/tasks/gqa_attention/opencl/seed.cl")
BIN=${BIN:-$ROOT/build/bench/gi_yield}
OUT=${OUT:-/tmp/kevolve_gi_yield}
MODE=${MODE:-gi}
JUDGE=${JUDGE:-}
KV=${KV:-$ROOT/build/kevolve}
command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH

# compiles FILE: 0 when it compiles.
compiles() {
    case $1 in
    *.c) cc -std=gnu17 -fsyntax-only -I"$ROOT/include" "$1" 2>/dev/null ;;
    *.cl) clang -x cl -cl-std=CL1.2 -fsyntax-only -Xclang -finclude-default-header \
        -D__OPENCL_VERSION__=120 "$1" 2>/dev/null &&
        cc -x c -std=gnu17 -fsyntax-only -I"$ROOT/include" "$1" 2>/dev/null ;;
    *.cu) nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -c -o /dev/null -I"$ROOT/include" -I"$ROOT/tasks" -x cu \
        "$1" >/dev/null 2>&1 ;;
    *.py) python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$1" 2>/dev/null ;;
    *) return 1 ;;
    esac
}

# judged FILE: 0 when kevolve judges FILE correct on $JUDGE.
judged() {
    case $1 in *.c) b=cpu ;; *.cl) b=opencl ;; *.cu) b=cuda ;; *) return 1 ;; esac
    "$KV" eval --task "$JUDGE" --backend "$b" --quick --json "$1" 2>/dev/null |
        python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["metrics"].get("correct") == 1 else 1)'
}

# one_line_if SEED SUMMARY: 0 when SUMMARY deletes a one-line if of SEED.
one_line_if() {
    line=$(printf '%s\n' "$2" | sed -n 's/^.*gi: delete line \([0-9]*\).*$/\1/p')
    [ -n "$line" ] && sed -n "${line}p" "$1" | grep -qE '^[[:space:]]*if[ (]'
}

if [ -n "$JUDGE" ]; then
    printf '| seed | children | compile | correct | deletions of a one-line if | of those correct |\n'
    printf '|---|---|---|---|---|---|\n'
else
    printf '| seed | children | compile | share |\n|---|---|---|---|\n'
fi
for seed in "${SEEDS[@]}"; do
    dir=$OUT/$(basename "$seed")
    rm -rf "$dir"
    mkdir -p "$dir"
    compiles "$seed" || { echo "$seed does not compile itself: skipped" >&2; continue; }
    "$BIN" "$seed" "$N" "$dir" "$MODE" >/dev/null || exit 1
    made=0 ok=0 right=0 ifs=0 ifs_right=0
    for child in "$dir"/child*; do
        [ -e "$child" ] || continue
        if [ "$MODE" = crossover ]; then
            k=${child##*/child}
            compiles "$dir/parenta$k" && compiles "$dir/parentb$k" || continue
        fi
        made=$((made + 1))
        compiles "$child" || continue
        ok=$((ok + 1))
        echo "ok $(basename "$child")" >>"$dir/compiled.txt"
        [ -n "$JUDGE" ] || continue
        k=${child##*/child}
        k=${k%%.*}
        is_if=0
        one_line_if "$seed" "$(sed -n "${k}p" "$dir/summaries.txt")" && is_if=1
        ifs=$((ifs + is_if))
        if judged "$child"; then
            right=$((right + 1))
            ifs_right=$((ifs_right + is_if))
        fi
    done
    if [ -n "$JUDGE" ]; then
        printf '| %s | %d | %d | %d (%d%%) | %d | %d |\n' "$(basename "$seed")" "$made" "$ok" \
            "$right" $((made ? 100 * right / made : 0)) "$ifs" "$ifs_right"
    else
        printf '| %s | %d | %d | %d%% |\n' "$(basename "$seed")" "$made" "$ok" \
            $((made ? 100 * ok / made : 0))
    fi
done
