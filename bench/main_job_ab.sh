#!/usr/bin/env bash
# The README's main job with two kevolve binaries side by side, alternately
# (A B, then B A, ...), so that both meet the same machine states: wall
# time, children evaluated per minute, the share correct and the best, per
# run, and the medians per binary. For a change that must not move the main
# job's speed (issue 19: the evaluation job and its device slots).
# Usage (repository root):
#   bench/main_job_ab.sh OLD_KEVOLVE NEW_KEVOLVE [--repeat 2] [--iterations 40]
#       [--backend opencl|cpu|cuda] [--seed 42] [--time-limit S]
#       [--parallel A_N,B_N]
# Each binary runs examples/gqa_attention's command for the backend
# (config.yaml, gqa_attention_small, the OpenCL or C seed; on cuda
# config_cuda.yaml, gqa_attention_search, its six seeds) from the same
# source tree; outputs go under $OUT (default /tmp/kevolve_main_job_ab).
# --time-limit stops each run with SIGINT after S seconds (children per
# minute then count what was judged by then); --parallel sets
# evaluator.parallel_evaluations of each binary's run (cuda's config reads
# KV_GQA_PARALLEL).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_main_job_ab}
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
shift 2
REPEAT=2 ITER=40 BACKEND=opencl SEED=42 LIMIT=0 PAR_A="" PAR_B=""
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) REPEAT=$2; shift 2 ;;
    --iterations) ITER=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --time-limit) LIMIT=$2; shift 2 ;;
    --parallel) PAR_A=${2%,*} PAR_B=${2#*,}; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
config=config.yaml task=gqa_attention_small
case $BACKEND in
opencl) program=opencl/seed.cl ;;
cpu) program=cpu/seed.c ;;
cuda) program="" config=config_cuda.yaml task=gqa_attention_search ;;
*) echo "--backend opencl, cpu or cuda" >&2; exit 2 ;;
esac
rm -rf "$OUT" && mkdir -p "$OUT"
ex=$ROOT/examples/gqa_attention
echo "main job A/B: $BACKEND, $ITER children, seed $SEED, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)" \
    "${PAR_A:+parallel A $PAR_A B $PAR_B}" "${LIMIT#0}"
echo "A $A ($("$A" --version))"
echo "B $B ($("$B" --version))"
printf '%-4s %-3s %8s %10s %8s %8s\n' run bin wall_s children/min correct best
for r in $(seq 1 "$REPEAT"); do
    order="A B"
    [ $((r % 2)) -eq 0 ] && order="B A"
    for which in $order; do
        bin=$A par=$PAR_A
        [ "$which" = B ] && bin=$B par=$PAR_B
        dir=$OUT/$which$r
        export KEVOLVE_CACHE_DIR=$OUT/cache$which # each binary its own compile cache, warm from run 2
        t0=$(date +%s.%N)
        stop=""
        [ "$LIMIT" != 0 ] && stop="timeout --foreground -s INT $LIMIT"
        KV_GQA_PROGRAM=${program:+$ROOT/tasks/gqa_attention/$program} KV_GQA_TASK=$task \
            KV_GQA_PARALLEL=${par:-2} $stop "$bin" run --config "$ex/$config" --iterations "$ITER" \
            --seed "$SEED" --output "$dir" >"$dir.log" 2>&1
        wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
        python3 - "$dir/run.db" "$which" "$r" "$wall" <<'PY' | tee -a "$OUT/runs.txt"
import sqlite3, sys
db, which, r, wall = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
kids = con.execute("select count(*) from programs where iteration > 0 and status in"
                   " ('ok', 'failed', 'timeout')").fetchone()[0]
ok = con.execute("select count(*) from programs where iteration > 0 and status = 'ok'").fetchone()[0]
best = con.execute("select max(fitness) from programs where status = 'ok'").fetchone()[0] or 0
print(f"{r:<4} {which:<3} {wall:8.1f} {60 * kids / wall:10.1f} {ok / max(kids, 1):8.0%} {best:8.3f}")
PY
    done
done
python3 - "$OUT/runs.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for b in ("A", "B"):
    mine = [r for r in rows if r[1] == b]
    print(f"median {b}: wall {statistics.median(float(r[2]) for r in mine):.1f} s, "
          f"{statistics.median(float(r[3]) for r in mine):.1f} children/min")
PY
