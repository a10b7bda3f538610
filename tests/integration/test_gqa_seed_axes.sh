#!/bin/bash
# The gqa_attention seeds for the CPU backends can be searched: cpu/seed.c
# and opencl/seed.cl declare their design axes for tune, every axis switches
# real code, and a sample of points (each seed's own, every axis at its first
# and at its last value, random ones: 8 for C, 5 for OpenCL, each eval
# about 8 s of one core at the long held-out decode) compiles and is judged
# correct by `kevolve eval --stage 1` (held-out shapes included); while the
# task's baselines stay the naive kernels, without axes. The OpenCL half
# skips when no OpenCL platform is found. About two and a half minutes on
# two cores. The kernel timeout is raised: PoCL compiles a kernel at its
# first launch, which on a loaded machine can take longer than the
# harness's 5 s default.
. "$(dirname "$0")/lib.sh"

tasks=$KV_SOURCE_DIR/tasks/gqa_attention
axes=$KV_SOURCE_DIR/tests/tools/tune_axes.py
export KEVOLVE_CACHE_DIR=$WORK/cache

# The baselines are the naive kernels, and they declare nothing to tune.
for b in cpu/naive.c opencl/naive.cl; do
    grep -q "\"gqa_attention/$b\"" "$tasks/gqa_attention.c" || fail "$b is not the task's baseline"
    ! grep -q "kevolve: tune" "$tasks/$b" || fail "the baseline $b declares tune axes"
done

# The code of FILE after the preprocessor: for OpenCL, the device half and
# the host half.
preprocess() {
    case $1 in
    *.cl)
        cc -E -P -x c -D__OPENCL_VERSION__=120 -I"$KV_SOURCE_DIR/include" "$1"
        cc -E -P -x c -DCL_TARGET_OPENCL_VERSION=120 -I"$KV_SOURCE_DIR/include" "$1" ;;
    *) cc -E -P -x c -I"$KV_SOURCE_DIR/include" "$1" ;;
    esac
}

# SEED NPOINTS EXT BACKEND: checks NPOINTS points of SEED.
check_seed() {
    seed=$1 n=$2 ext=$3 backend=$4
    python3 "$axes" list "$seed" >"$WORK/axes.txt"
    [ "$(wc -l <"$WORK/axes.txt")" -ge 8 ] || fail "$seed declares only $(wc -l <"$WORK/axes.txt") axes"
    # Every value of every axis changes the code the compiler sees (after
    # the preprocessor: an axis defined and never used would not), from the
    # seed's own point or from the point with every axis at its last value
    # (where the axes that only mean something under another one, `when
    # SERIAL` say, are live).
    python3 "$axes" last "$seed" >"$WORK/last.txt"
    # shellcheck disable=SC2046
    python3 "$axes" set "$seed" "$WORK/last.$ext" $(cat "$WORK/last.txt")
    while read -r name default values; do
        for base in "$seed" "$WORK/last.$ext"; do
            for v in $values; do
                python3 "$axes" set "$base" "$WORK/one.$ext" "$name=$v"
                preprocess "$WORK/one.$ext" | cksum >"$WORK/code.$v.$(basename "$base")"
            done
        done
        for v in $values; do
            [ "$v" = "$default" ] && continue
            cmp -s "$WORK/code.$v.$(basename "$seed")" "$WORK/code.$default.$(basename "$seed")" &&
                cmp -s "$WORK/code.$v.last.$ext" "$WORK/code.$default.last.$ext" &&
                fail "$name=$v changes no code of $seed (from its own point or the last one)"
        done
        rm -f "$WORK"/code.*
    done <"$WORK/axes.txt"
    python3 "$axes" sample "$seed" "$n" 11 >"$WORK/points.txt"
    checked=0
    while read -r point; do
        # shellcheck disable=SC2086
        python3 "$axes" set "$seed" "$WORK/p.$ext" $point
        set +e
        "$KV" eval --task gqa_attention_small --backend "$backend" --stage 1 --quick --json \
            --kernel-timeout 60 \
            "$WORK/p.$ext" >"$WORK/p.json" 2>"$WORK/p.err"
        rc=$?
        set -e
        [ $rc -eq 0 ] || fail "$point: kevolve eval exited $rc: $(head -c 600 "$WORK/p.err")"
        grep -q '"verdict":"correct"' "$WORK/p.json" ||
            fail "$(basename "$seed") at $point: $(head -c 800 "$WORK/p.json")"
        checked=$((checked + 1))
    done <"$WORK/points.txt"
    echo "ok: $(basename "$seed"): $checked points correct"
}

check_seed "$tasks/cpu/seed.c" 8 c cpu

set +e
"$KV" eval --task gqa_attention_small --backend opencl --stage 1 --quick --json \
    "$tasks/opencl/naive.cl" >"$WORK/probe.json" 2>"$WORK/probe.err"
rc=$?
set -e
if [ $rc -ne 0 ] && grep -qiE "no OpenCL|not built|opencl" "$WORK/probe.err"; then
    echo "SKIP (opencl half): no OpenCL platform: $(head -c 300 "$WORK/probe.err")"
    exit 0
fi
[ $rc -eq 0 ] || fail "the naive OpenCL kernel: kevolve eval exited $rc: $(head -c 600 "$WORK/probe.err")"
check_seed "$tasks/opencl/seed.cl" 5 cl opencl
