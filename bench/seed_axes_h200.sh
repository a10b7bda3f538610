#!/usr/bin/env bash
# The CUDA seeds' tune axes on a GPU: every value of every axis, one axis
# at a time from the seed's own point, and a few random points of all axes
# (tune_axes.py sample), compiled on the host's cores, then judged for
# correctness (`kevolve eval --stage 1 --quick`: every scenario and the
# held-out shapes) one after another. A seed's header says "each value a
# correct kernel": a point rejected here is a bug of the seed, not of the
# search. Prints one line per rejected point and a count per seed.
# Usage (device, .dev carried): bench/seed_axes_h200.sh  (OUT, SEEDS, RANDOM_POINTS (4))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_seed_axes}
RANDOM_POINTS=${RANDOM_POINTS:-4}
g=tasks/gqa_attention/cuda
SEEDS=${SEEDS:-"$g/decode_halfwarp.cu $g/decode_split.cu $g/decode_cluster.cu $g/prefill_fa2.cu $g/prefill_hopper.cu $g/naive.cu"}
AXES=tests/tools/tune_axes.py
export KEVOLVE_CACHE_DIR=$OUT/cache
mkdir -p "$OUT/points"
: >"$OUT/points.txt"
for seed in $SEEDS; do
    name=$(basename "$seed" .cu)
    k=0
    { python3 "$AXES" list "$seed" | while read -r axis default values; do
        for v in $values; do [ "$v" = "$default" ] || echo "$axis=$v"; done
    done
      python3 "$AXES" sample "$seed" $((RANDOM_POINTS + 1)) 7 | tail -n "$RANDOM_POINTS"; } |
        while read -r point; do
            k=$((k + 1))
            # shellcheck disable=SC2086
            python3 "$AXES" set "$seed" "$OUT/points/$name-$k.cu" $point
            echo "$name $k $point" >>"$OUT/points.txt"
        done
done
echo "== $(wc -l <"$OUT/points.txt") points of $(echo $SEEDS | wc -w) seeds, $(date -u +%FT%TZ)"
# Compiles first, on every core (a cache the judged runs then hit).
ls "$OUT"/points/*.cu | xargs -P "$(nproc)" -I{} "$KV" eval --task gqa_attention_search \
    --backend cuda --compile-only {} >/dev/null 2>&1
bad=0
while read -r name k point; do
    "$KV" eval --task gqa_attention_search --backend cuda --quick --stage 1 \
        "$OUT/points/$name-$k.cu" >"$OUT/$name-$k.json" 2>"$OUT/$name-$k.log"
    verdict=$(python3 -c 'import json,sys
try:
    a = json.load(open(sys.argv[1]))["artifacts"]
    print(a.get("verdict"), a.get("reason", ""), (a.get("reason_detail") or "")[:160])
except Exception as e:
    print("no-json", e)' "$OUT/$name-$k.json")
    case $verdict in correct*) ;; *) bad=$((bad + 1)); echo "REJECTED $name [$point]: $verdict" ;; esac
done <"$OUT/points.txt"
echo "== rejected: $bad of $(wc -l <"$OUT/points.txt")"
rm -rf "$OUT/cache"
