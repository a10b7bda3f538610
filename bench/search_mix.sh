#!/usr/bin/env bash
# How far the built-in mutators get on the gqa example in a fixed number of
# children, for one or more kevolve binaries side by side (e.g. before and
# after a mutator change): for each binary and seed, a run of
# examples/gqa_attention/config.yaml on gqa_attention_small (OpenCL when
# PoCL is present, else the C backend), then the best fitness and how many
# children each mutator made. Runs one after another (timing on 2 cores).
# Usage: bench/search_mix.sh [--iterations N] [--seeds "1 2 3"] KEVOLVE...
#        (repo root; OUT optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_search_mix}
ITER=80
SEEDS="1 2 3"
while [ $# -gt 0 ]; do
    case $1 in
    --iterations) ITER=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--iterations N] [--seeds S] KEVOLVE..." >&2; exit 2; }
mkdir -p "$OUT"
if command -v clinfo >/dev/null 2>&1 && clinfo -l 2>/dev/null | grep -q Platform; then
    prog=$ROOT/tasks/gqa_attention/opencl/seed.cl
else
    prog=$ROOT/tasks/gqa_attention/cpu/seed.c
fi
export KEVOLVE_CACHE_DIR=$OUT/cache
printf '%-28s %5s %10s %s\n' binary seed best "children by mutator"
b=0
for kv in "$@"; do
    for seed in $SEEDS; do
        dir=$OUT/b$b-s$seed
        rm -rf "$dir"
        cfg=$OUT/config-$seed.yaml
        sed "s/^random_seed: .*/random_seed: $seed/" "$ROOT/examples/gqa_attention/config.yaml" >"$cfg"
        (cd "$ROOT/examples/gqa_attention" &&
            KV_GQA_PROGRAM=$prog KV_GQA_TASK=gqa_attention_small \
                "$kv" run --config "$cfg" --iterations "$ITER" --output "$dir" >"$dir.log" 2>&1)
        python3 - "$dir/run.db" "$kv" "$seed" <<'PY'
import sqlite3, sys
db, kv, seed = sys.argv[1:]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
best = con.execute("select max(fitness) from programs where status = 'ok'").fetchone()[0]
mix = dict(con.execute("select coalesce(mutator, '?'), count(*) from programs "
                       "where parent_id is not null group by 1").fetchall())
print(f"{kv[-28:]:28s} {seed:>5s} {best or 0:10.3f} {mix}")
PY
    done
    b=$((b + 1))
done
