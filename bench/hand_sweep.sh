#!/usr/bin/env bash
# The README's main job against a hand sweep of the same axes, side by side
# in one run, on each backend asked for (issue 13.6 and 13.7):
#   1. the hand sweep: POINTS points of the seeds' tune axes (per seed: its
#      own point, then random ones, a fixed draw; not the corners, whose
#      "every axis at its last value" is only a good guess because the lists
#      happen to be ordered from naive to bold), each judged by `kevolve eval
#      --quick` as the main job judges its children; the best is kept. On
#      cuda each point is screened against the sweep's best so far, as the
#      job's children are against their parents (a point that cannot beat
#      it stops after one scenario of each class: the same best, less GPU
#      time);
#   2. the main job: examples/gqa_attention's command for that backend
#      (run.sh's: config.yaml from the C or OpenCL seed on
#      gqa_attention_small for ITERATIONS children, default 80; on cuda
#      config_cuda.yaml from the six seeds on gqa_attention_search, default
#      400), stopped gracefully after MINUTES when given;
#   3. both bests, and the job's best seed, judged again, REPEAT times
#      each, alternately, so the kernels are compared on the same machine
#      state (the best of a search is also the luckiest of its noisy
#      measurements).
# Prints one table per backend: the sweep's and the job's bests, children
# per minute, the median seconds a child held the device (duplicates by
# artifact hold nothing) and the timed calls' share of it, and the share of
# children that compiled and were correct (bench/main_job_stats.py). Logs, stores and the best sources go
# under $OUT. Usage (repository root):
#   KV=build/kevolve bench/hand_sweep.sh [--backends "cpu opencl"] [--points 40]
#       [--iterations N] [--repeat 3] [--seed 1] [--minutes M]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KV=${KV:-$ROOT/build/kevolve}
OUT=${OUT:-/tmp/kevolve_hand_sweep}
AXES=$ROOT/tests/tools/tune_axes.py
BACKENDS="cpu opencl"
POINTS=40
ITER=""
REPEAT=3
SEED=1
MINUTES=""
while [ $# -gt 0 ]; do
    case $1 in
    --backends) BACKENDS=$2; shift 2 ;;
    --points) POINTS=$2; shift 2 ;;
    --iterations) ITER=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    *) echo "usage: $0 [--backends B] [--points N] [--iterations N] [--repeat N] [--seed N]" \
        "[--minutes M]" >&2
        exit 2 ;;
    esac
done
KV=$(cd "$(dirname "$KV")" && pwd)/$(basename "$KV")
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || export PATH=/usr/local/cuda/bin:$PATH

# score FILE BACKEND TASK LOG [PARENT]: the combined_score kevolve eval
# gives FILE (0 when rejected); with PARENT (what kevolve eval printed for
# the parent), screened against it.
score() {
    if [ -n "${5:-}" ] && [ -s "$5" ]; then
        "$KV" eval --task "$3" --backend "$2" --quick --parent "$5" \
            --json "$1" >"$4" 2>"$4.err"
    else
        "$KV" eval --task "$3" --backend "$2" --quick --json "$1" >"$4" 2>"$4.err"
    fi
    python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["metrics"].get("combined_score", 0))
except Exception: print(0)' "$4"
}

have_opencl() {
    command -v clinfo >/dev/null 2>&1 && clinfo -l 2>/dev/null | grep -q Platform
}

echo "$($KV --version 2>/dev/null | head -1), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
for backend in $BACKENDS; do
    gqa=$ROOT/tasks/gqa_attention
    case $backend in
    cpu) seeds=("$gqa/cpu/seed.c") ext=c task=gqa_attention_small config=config.yaml iter=80 ;;
    opencl)
        have_opencl || { echo "opencl: no OpenCL platform, skipped"; continue; }
        seeds=("$gqa/opencl/seed.cl") ext=cl task=gqa_attention_small config=config.yaml iter=80 ;;
    cuda)
        if ! nvidia-smi -L >/dev/null 2>&1; then
            echo "cuda: no NVIDIA GPU, skipped"
            continue
        fi
        seeds=("$gqa/cuda/naive.cu" "$gqa/cuda/decode_halfwarp.cu" "$gqa/cuda/decode_split.cu"
            "$gqa/cuda/decode_cluster.cu"
            "$gqa/cuda/prefill_fa2.cu" "$gqa/cuda/prefill_hopper.cu")
        ext=cu task=gqa_attention_search config=config_cuda.yaml iter=400 ;;
    *) echo "unknown backend $backend" >&2; exit 2 ;;
    esac
    [ -n "$ITER" ] && iter=$ITER
    dir=$OUT/$backend
    rm -rf "$dir"
    mkdir -p "$dir/sweep"

    # 1. The hand sweep: the points shared out among the seeds.
    t0=$(date +%s)
    best=0 best_point="" i=0 k=0
    per=$(((POINTS + ${#seeds[@]} - 1) / ${#seeds[@]}))
    for seed in "${seeds[@]}"; do
        k=$((k + 1))
        python3 "$AXES" random "$seed" "$per" "$((SEED + k))" >"$dir/points$k.txt"
        while read -r point; do
            i=$((i + 1))
            [ "$i" -le "$POINTS" ] || break
            # shellcheck disable=SC2086
            python3 "$AXES" set "$seed" "$dir/sweep/p$i.$ext" $point
            parent=""
            [ "$backend" = cuda ] && parent=$dir/best_verdict.json
            s=$(score "$dir/sweep/p$i.$ext" "$backend" "$task" "$dir/sweep/p$i.json" "$parent")
            echo "$s $(basename "$seed") $point" >>"$dir/sweep.txt"
            screened=$(python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["metrics"].get("screened_out", 0))
except Exception: print(1)' "$dir/sweep/p$i.json")
            if [ "$screened" = 0 ] && python3 -c "import sys; sys.exit(0 if $s > $best else 1)"; then
                best=$s best_point="$(basename "$seed") $point"
                cp "$dir/sweep/p$i.$ext" "$dir/hand_best.$ext"
                cp "$dir/sweep/p$i.json" "$dir/best_verdict.json"
            fi
        done <"$dir/points$k.txt"
    done
    sweep_s=$(($(date +%s) - t0))

    # 2. The main job: run.sh's command for this backend.
    t0=$(date +%s)
    stop=()
    [ -n "$MINUTES" ] && stop=(timeout --foreground --signal=INT --kill-after=120 "$((MINUTES * 60))")
    (cd "$gqa/../../examples/gqa_attention" &&
        KV_GQA_PROGRAM=${seeds[0]} KV_GQA_TASK=$task \
            "${stop[@]}" "$KV" run --config "$config" --iterations "$iter" --output "$dir/run" \
            >"$dir/run.log" 2>&1)
    run_s=$(($(date +%s) - t0))
    "$KV" best "$dir/run" -o "$dir/run_best.$ext" >/dev/null 2>&1

    # The best seed as the job judged it (its best initial program).
    python3 "$ROOT/bench/best_seed_source.py" "$dir/run/run.db" >"$dir/seed_best.$ext"

    # 3. The three bests again, alternately.
    hand_again="" run_again="" seed_again=""
    for r in $(seq "$REPEAT"); do
        hand_again="$hand_again $(score "$dir/hand_best.$ext" "$backend" "$task" \
            "$dir/again_hand$r.json")"
        run_again="$run_again $(score "$dir/run_best.$ext" "$backend" "$task" \
            "$dir/again_run$r.json")"
        seed_again="$seed_again $(score "$dir/seed_best.$ext" "$backend" "$task" \
            "$dir/again_seed$r.json")"
    done

    python3 "$ROOT/bench/hand_sweep_table.py" "$dir/run/run.db" "$backend" "$task" "$best" \
        "$best_point" "$sweep_s" "$run_s" "$hand_again" "$run_again" "$(wc -l <"$dir/sweep.txt")" \
        "${#seeds[@]}" "$seed_again"
done
