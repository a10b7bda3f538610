#!/usr/bin/env bash
# The main job against a hand sweep of the same axes, on the CPU path
# (gqa_attention_small; the cpu backend and, when PoCL is present, the
# opencl one, which is what a machine set up by the README runs), side by
# side in one run:
#   1. the hand sweep: POINTS points of the seed's tune axes (the seed's own,
#      then random ones, a fixed draw; not the corners, whose "every axis at
#      its last value" is only a good guess because the lists happen to be
#      ordered from naive to bold) each judged by `kevolve eval --quick` as
#      the main job judges its children; the best is kept;
#   2. the main job: examples/gqa_attention/config.yaml from the same seed
#      for ITERATIONS children (run.sh's settings for that backend);
#   3. both bests judged again, REPEAT times each, alternately, so the two
#      kernels are compared on the same machine state (the best of a
#      search is also the luckiest of its noisy measurements).
# Prints one table per backend; logs, stores and the best sources go under
# $OUT. Usage (repository root):
#   KV=build/kevolve bench/cpu_hand_sweep.sh [--backends "cpu opencl"]
#       [--points 40] [--iterations 80] [--repeat 3] [--seed 1]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KV=${KV:-$ROOT/build/kevolve}
OUT=${OUT:-/tmp/kevolve_cpu_hand_sweep}
AXES=$ROOT/tests/tools/tune_axes.py
BACKENDS="cpu opencl"
POINTS=40
ITER=80
REPEAT=3
SEED=1
while [ $# -gt 0 ]; do
    case $1 in
    --backends) BACKENDS=$2; shift 2 ;;
    --points) POINTS=$2; shift 2 ;;
    --iterations) ITER=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "usage: $0 [--backends B] [--points N] [--iterations N] [--repeat N] [--seed N]" >&2
        exit 2 ;;
    esac
done
KV=$(cd "$(dirname "$KV")" && pwd)/$(basename "$KV")
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache

# score FILE BACKEND LOG: the combined_score kevolve eval gives FILE (0 when rejected).
score() {
    "$KV" eval --task gqa_attention_small --backend "$2" --quick --json "$1" >"$3" 2>"$3.err"
    python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["metrics"].get("combined_score", 0))
except Exception: print(0)' "$3"
}

have_opencl() {
    command -v clinfo >/dev/null 2>&1 && clinfo -l 2>/dev/null | grep -q Platform
}

echo "$($KV --version 2>/dev/null | head -1), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
for backend in $BACKENDS; do
    case $backend in
    cpu) seed=$ROOT/tasks/gqa_attention/cpu/seed.c ext=c ;;
    opencl)
        have_opencl || { echo "opencl: no OpenCL platform, skipped"; continue; }
        seed=$ROOT/tasks/gqa_attention/opencl/seed.cl ext=cl ;;
    *) echo "unknown backend $backend" >&2; exit 2 ;;
    esac
    dir=$OUT/$backend
    rm -rf "$dir"
    mkdir -p "$dir/sweep"

    # 1. The hand sweep.
    t0=$(date +%s)
    python3 "$AXES" random "$seed" "$POINTS" "$SEED" >"$dir/points.txt"
    best=0 best_point="" i=0
    while read -r point; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        python3 "$AXES" set "$seed" "$dir/sweep/p$i.$ext" $point
        s=$(score "$dir/sweep/p$i.$ext" "$backend" "$dir/sweep/p$i.json")
        echo "$s $point" >>"$dir/sweep.txt"
        if python3 -c "import sys; sys.exit(0 if $s > $best else 1)"; then
            best=$s best_point=$point
            cp "$dir/sweep/p$i.$ext" "$dir/hand_best.$ext"
        fi
    done <"$dir/points.txt"
    sweep_s=$(($(date +%s) - t0))

    # 2. The main job: run.sh's command for this backend.
    t0=$(date +%s)
    (cd "$ROOT/examples/gqa_attention" &&
        KV_GQA_PROGRAM=$seed KV_GQA_TASK=gqa_attention_small \
            "$KV" run --config config.yaml --iterations "$ITER" --output "$dir/run" \
            >"$dir/run.log" 2>&1)
    run_s=$(($(date +%s) - t0))
    "$KV" best "$dir/run" -o "$dir/run_best.$ext" >/dev/null 2>&1

    # 3. Both bests again, alternately.
    hand_again="" run_again=""
    for r in $(seq "$REPEAT"); do
        hand_again="$hand_again $(score "$dir/hand_best.$ext" "$backend" "$dir/again_hand$r.json")"
        run_again="$run_again $(score "$dir/run_best.$ext" "$backend" "$dir/again_run$r.json")"
    done

    python3 - "$dir/run/run.db" "$backend" "$best" "$best_point" "$sweep_s" "$run_s" \
        "$hand_again" "$run_again" "$(wc -l <"$dir/sweep.txt")" <<'PY'
import sqlite3, statistics, sys
db, backend, best, point, sweep_s, run_s, hand_again, run_again, npoints = sys.argv[1:]
best = float(best)
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
rows = con.execute("select iteration, fitness, mutator from programs where status = 'ok' "
                   "and fitness is not null order by iteration").fetchall()
children = con.execute("select count(*) from programs where iteration > 0 "
                       "and mutator != 'migration'").fetchone()[0]
correct = con.execute("select count(*) from programs where iteration > 0 and mutator != 'migration' "
                      "and json_extract(metrics, '$.correct') = 1").fetchone()[0]
start = next((f for it, f, _ in rows if it == 0), 0)
run_best = max((f for _, f, _ in rows), default=0)
reached = next((it for it, f, _ in rows if f >= best), None)
mix = dict(con.execute("select coalesce(mutator, '?'), count(*) from programs where iteration > 0 "
                       "and mutator != 'migration' group by 1").fetchall())
h = [float(x) for x in hand_again.split()]
r = [float(x) for x in run_again.split()]
print(f"\n== {backend}: gqa_attention_small, speedup over the naive kernel (geometric mean) ==")
print(f"hand sweep: {npoints} points in {sweep_s} s; best {best:.2f} at {point}")
print(f"main job:   {children} children in {run_s} s ({correct} correct; {mix}); "
      f"start {start:.2f}, best {run_best:.2f}; "
      + (f"reached the hand sweep's best at child {reached}" if reached is not None
         else "did not reach the hand sweep's best"))
print(f"again, {len(h)} each, alternately: hand sweep's best median {statistics.median(h):.2f} "
      f"{h}; main job's best median {statistics.median(r):.2f} {r}")
PY
done
