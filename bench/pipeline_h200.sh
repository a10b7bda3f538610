#!/usr/bin/env bash
# Issue 21.3 on the GPU machine, in one call: the judge that prepares
# (contexts, the candidate's process) before it holds the device and lets
# go when its device work ends, against the judge before it.
#   1. bench/judge_in_place_h200.sh: one fast child, old judge and new,
#      alternately (ROUNDS each): wall, worker, device held, the profile
#      and the checks by step; then the red team (RED) on the new judge.
#   2. bench/seed_axes_h200.sh (PARTS "axes"): every value of every tune
#      axis of the CUDA seeds judged for correctness.
#   3. The README's main job (examples/gqa_attention, config_cuda.yaml, the
#      six seeds on gqa_attention_search) with PARALLEL in flight, stopped
#      with SIGINT after MINUTES (the evaluations in flight finish), then
#      bench/main_job_stats.py on its store: children per minute, device
#      held per child and the timed share of it, compile, prepare and wait,
#      the share correct; then its best and its best seed judged again,
#      REPEAT times each, alternately (quick, as the job judged them).
#   4. PARTS "ref": bench/reference_f64_h200.sh, the tasks' float64
#      reference against the one before it on every scenario and held-out
#      shape (same values to 1e-9 of the scale, and the times).
#   5. PARTS "decode": bench/gqa_flagship_h200.sh on the decode seeds'
#      variants (DECODE_ONLY) beside PyTorch's cuDNN and flash, no harness.
# Needs bench/device_pack.sh's .dev (carry it) with .dev/bin/kevolve-old.
# Usage: bench/pipeline_h200.sh  (OUT, ROUNDS (2), RED, MINUTES (4),
#        PARALLEL (12), ITER (400), REPEAT (3), PARTS ("judge job"),
#        DECODE_ONLY)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_pipeline}
MINUTES=${MINUTES:-4}
PARALLEL=${PARALLEL:-12}
ITER=${ITER:-400}
PARTS=${PARTS:-judge job}
RED=${RED:-ctl_fp32 ctl_atomics late_stream replay_hash_cache replay_skip_written slow_baseline_stream outlive_setsid}
mkdir -p "$OUT"
case " $PARTS " in *" ref "*)
    OUT=$OUT/ref bench/reference_f64_h200.sh ;;
esac
case " $PARTS " in *" judge "*)
    OUT=$OUT/judge RED=$RED bench/judge_in_place_h200.sh ;;
esac
case " $PARTS " in *" decode "*)
    OUT=$OUT/decode HARNESS=0 DEADLINE=${DECODE_DEADLINE:-300} \
        ONLY=${DECODE_ONLY:-"halfwarp split split_mg1 cluster cluster_c8 cluster_c16 cluster_w8 cluster_g1"} \
        bench/gqa_flagship_h200.sh ;;
esac
case " $PARTS " in *" axes "*)
    OUT=$OUT/axes bench/seed_axes_h200.sh ;;
esac
case " $PARTS " in *" job "*)
    echo "== main job: $PARALLEL in flight, stopped after $MINUTES min, $(date -u +%FT%TZ)"
    export KEVOLVE_CACHE_DIR=$OUT/job_cache
    t0=$(date +%s.%N)
    # --foreground: the interrupt reaches kevolve alone, which finishes the
    # evaluations in flight; sent to the whole group it also killed every
    # worker at once, and one evaluation still timing saw a dozen contexts
    # torn down around it (a kernel 40% faster than it is, 2026-12-02).
    (cd examples/gqa_attention && KV_GQA_PARALLEL=$PARALLEL \
        timeout --foreground --signal=INT --kill-after=180 "$((MINUTES * 60))" \
        "$KV" run --config config_cuda.yaml --iterations "$ITER" --output "$OUT/run" \
        >"$OUT/run.log" 2>&1)
    run_s=$(python3 -c "import time; print(time.time() - $t0)")
    tail -n 3 "$OUT/run.log"
    python3 bench/main_job_stats.py "$OUT/run/run.db" "$run_s" | tee "$OUT/job_stats.txt"
    "$KV" best "$OUT/run" -o "$OUT/run_best.cu" >/dev/null 2>&1
    python3 "$ROOT/bench/best_seed_source.py" "$OUT/run/run.db" >"$OUT/seed_best.cu"
    score() { # FILE LOG: the combined_score of a quick evaluation (0 when rejected)
        "$KV" eval --task gqa_attention_search --backend cuda --quick --json "$1" >"$2" 2>"$2.err"
        python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["metrics"].get("combined_score", 0))
except Exception: print(0)' "$2"
    }
    best_again="" seed_again=""
    for r in $(seq "${REPEAT:-3}"); do
        best_again="$best_again $(score "$OUT/run_best.cu" "$OUT/again_best$r.json")"
        seed_again="$seed_again $(score "$OUT/seed_best.cu" "$OUT/again_seed$r.json")"
    done
    python3 - "$best_again" "$seed_again" <<'PY' | tee -a "$OUT/job_stats.txt"
import statistics, sys
b = [float(x) for x in sys.argv[1].split()]
s = [float(x) for x in sys.argv[2].split()]
print(f"  judged again, alternately: the job's best {[round(x, 2) for x in b]} (median "
      f"{statistics.median(b):.2f}), its best seed {[round(x, 2) for x in s]} (median "
      f"{statistics.median(s):.2f}): {statistics.median(b) / statistics.median(s):.3f}x")
PY
    rm -rf "$OUT/job_cache"
    ;;
esac
