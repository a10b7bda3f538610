#!/usr/bin/env bash
# The flagship's seeds on the H200, in one device call of under 9 minutes:
#  1. builds, in parallel: kevolve (unless KV names a binary) and the fast
#     driver bench/gqa_flagship.cu once per seed and variant below (a
#     variant is a seed with some of its axes set by sed);
#  2. runs each driver in its own process, with a timeout: checks against a
#     float64 GPU reference on small and awkward shapes and (where asked) on
#     every scenario, then times the scenarios of its design (CUDA graphs
#     over rotated inputs). A driver that crashes or hangs loses only its own
#     rows: the shapes it did not finish are rerun one per process;
#  3. judges every seed with the real harness, `kevolve eval --task
#     gqa_attention_search --backend cuda --quick` (every scenario but the
#     two 8192-row prefills, and the held-out shapes; the naive kernel timed
#     beside it), two at a time;
#  4. PyTorch's cuDNN and flash on every scenario (bench/gqa_sdpa.py) when
#     torch is there and time is left, else the numbers recorded on
#     2026-11-30 (bench/results/h200-2026-11-30b/sdpa.json);
#  5. prints the tables (bench/gqa_flagship_table.py).
# Usage: bench/gqa_flagship_h200.sh   (repo root; OUT, KV, DEADLINE optional)
#   KV=path/to/kevolve  a prebuilt kevolve of this tree (the device has no
#                       build dependencies of its own); without it, cmake
#                       builds one, and the harness step is skipped if that fails
#   DEADLINE=510        seconds after which the remaining steps are skipped
#   ONLY="split hopper" run only these variants
#   VARIANTS_FILE=F     the variants from F (same columns as VARIANTS below; a
#                       seed with a '/' is a path); bench/gqa_h200.sh uses it
#   HARNESS=0           skip step 3
#   HARNESS_TASK=T      the task of step 3 (gqa_attention: the 8192-row prefills
#                       too, about 2 minutes a seed: the naive kernel is timed
#                       beside each and their float64 references are big)
#   NAIVE=naive         the variant shown as the naive start (not "ours")
# Writes to $OUT (8 files at most, for the device tool): flagship.log (all
# of the output), kernels.log (every driver's lines), harness.jsonl (one
# verdict per seed), sdpa.json, table.json, logs.tar.gz (build logs, the
# variants' sources).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_flagship}
DEADLINE=${DEADLINE:-510}
W=/tmp/kevolve_flagship_work
rm -rf "$W"
mkdir -p "$OUT" "$W/src" "$W/bin" "$W/logs"
exec > >(tee "$OUT/flagship.log") 2>&1
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
left() { echo $((DEADLINE - $(elapsed))); }
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
export KEVOLVE_CACHE_DIR=$W/cache
echo "== gqa flagship on $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1), $(date -u +%FT%TZ)"
nvcc --version | tail -1
cd "$ROOT" || exit 1
git log -1 --format='tree at %h %s' 2>/dev/null

# name  seed  time(decode|prefill|all|none)  check(small|all)  axes (NAME=V,...)
VARIANTS="
naive        naive.cu            none    small  -
halfwarp     decode_halfwarp.cu  decode  all    -
split        decode_split.cu     all     all    -
split_w4g1   decode_split.cu     decode  small  GROUPS=1
split_w8g1   decode_split.cu     decode  small  WARPS=8,GROUPS=1
split_w8g2   decode_split.cu     decode  small  WARPS=8
split_mg1    decode_split.cu     decode  small  MIN_GROUPS=1
cluster      decode_cluster.cu   all     all    -
cluster_c8   decode_cluster.cu   decode  small  CLUSTER=8
cluster_c16  decode_cluster.cu   decode  small  CLUSTER=16
cluster_w8   decode_cluster.cu   decode  small  WARPS=8
cluster_g1   decode_cluster.cu   decode  small  GROUPS=1
fa2          prefill_fa2.cu      prefill all    -
fa2_nosplit  prefill_fa2.cu      prefill small  KSPLIT=1
hopper       prefill_hopper.cu   all     all    -
hopper_ovl   prefill_hopper.cu   prefill all    OVERLAP=1
hopper_ovl3  prefill_hopper.cu   prefill small  OVERLAP=1,STAGES=3
hopper_bn64  prefill_hopper.cu   prefill small  BN=64
"
[ -n "${VARIANTS_FILE:-}" ] && VARIANTS=$(cat "$VARIANTS_FILE")
SEEDS="naive.cu decode_halfwarp.cu decode_split.cu decode_cluster.cu prefill_fa2.cu prefill_hopper.cu"
selected() { [ -z "${ONLY:-}" ] || case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# ---- 1. builds ----
if [ -z "${KV:-}" ] && [ "${HARNESS:-1}" != 0 ]; then
    (
        GEN=""
        command -v ninja >/dev/null && GEN="-G Ninja"
        cmake -S "$ROOT" -B "$W/build" $GEN -DCMAKE_BUILD_TYPE=Release >"$W/logs/cmake.log" 2>&1 &&
            timeout 300 cmake --build "$W/build" --target kevolve -j 12 >"$W/logs/build.log" 2>&1 &&
            echo "kevolve built" >"$W/kevolve.ok"
    ) &
    KV_BUILD_PID=$!
    KV=$W/build/kevolve
fi
echo "$VARIANTS" | while read -r name seed _ _ axes; do
    [ -n "$name" ] || continue
    selected "$name" || continue
    sedargs=(-e "")
    if [ "$axes" != - ]; then
        IFS=, read -ra sets <<<"$axes"
        for kv in "${sets[@]}"; do
            sedargs+=(-e "s/^#define ${kv%%=*} [0-9]* /#define ${kv%%=*} ${kv#*=} /")
        done
    fi
    case $seed in */*) path=$seed ;; *) path=tasks/gqa_attention/cuda/$seed ;; esac
    sed "${sedargs[@]}" "$path" >"$W/src/$name.cu"
    echo "$name"
done >"$W/names"
cat "$W/names" | xargs -P 8 -I{} sh -c \
    'timeout 240 nvcc -O3 -std=c++17 -lineinfo -Xptxas -v -gencode arch=compute_90a,code=sm_90a \
     -Iinclude -Itasks -DCANDIDATE="\"'"$W"'/src/{}.cu\"" bench/gqa_flagship.cu -o '"$W"'/bin/{} \
     >'"$W"'/logs/{}.build.log 2>&1 || echo "build of {} failed"'
for name in $(cat "$W/names"); do
    regs=$(grep -E "Used [0-9]+ registers" "$W/logs/$name.build.log" | sed -E 's/.*Used ([0-9]+) registers.*/\1/' | sort -n | tail -1)
    spills=$(grep -Eo "[0-9]+ bytes spill stores" "$W/logs/$name.build.log" | sort -n | tail -1)
    echo "built $name: max ${regs:-?} registers, ${spills:-no spill report}"
done
echo "== drivers built after $(elapsed) s"

# ---- 2. the drivers, each in its own process ----
: >"$OUT/kernels.log"
first=1
run_driver() { # name time check [shape]: prefixed lines into kernels.log
    local name=$1 tm=$2 ck=$3 only=${4:-} extra=()
    [ -n "$only" ] && extra=(--only "$only")
    [ $first = 1 ] && extra+=(--bw) && first=0
    timeout "${DRIVER_TIMEOUT:-90}" "$W/bin/$name" --time "$tm" --check "$ck" "${extra[@]}" 2>&1 |
        sed "s/^/$name /" | tee -a "$OUT/kernels.log"
    return "${PIPESTATUS[0]}"
}
# A seed whose first variant hung (timeout) is not run again in other variants.
: >"$W/hung"
echo "$VARIANTS" | while read -r name seed tm ck _; do
    [ -n "$name" ] && [ -x "$W/bin/$name" ] || continue
    if [ "$(left)" -lt 200 ]; then
        # In the log too: the tables then say that "ours" is not the best of all.
        echo "$name SKIPPED deadline" | tee -a "$OUT/kernels.log"
        continue
    fi
    if grep -qx "$seed" "$W/hung"; then
        echo "$name: skipped ($seed hung in an earlier variant)"
        continue
    fi
    echo "== $name (time $tm, check $ck)"
    run_driver "$name" "$tm" "$ck"
    rc=$?
    [ $rc = 124 ] && echo "$seed" >>"$W/hung"
    if [ $rc -ge 2 ]; then # a crash or a hang: the shapes it did not report, one per process
        echo "$name: exit $rc; rerunning the shapes it did not finish, one by one"
        misses=0
        for s in $("$W/bin/$name" --list); do
            grep -q "^$name [A-Z]* $s " "$OUT/kernels.log" && continue
            [ "$(left)" -lt 150 ] || [ $misses -ge 2 ] && break
            DRIVER_TIMEOUT=25 run_driver "$name" "$tm" "$ck" "$s" >/dev/null
            rc=$?
            if grep -q "^$name [A-Z]* $s " "$OUT/kernels.log"; then
                misses=0
            else
                misses=$((misses + 1))
                echo "$name FAILED $s (exit $rc, no output: crash or hang)" | tee -a "$OUT/kernels.log"
            fi
        done
    fi
done
echo "== drivers done after $(elapsed) s"

# ---- 3. the harness's verdict on every seed ----
: >"$OUT/harness.jsonl"
[ -n "${KV_BUILD_PID:-}" ] && wait "$KV_BUILD_PID"
if [ "${HARNESS:-1}" = 0 ]; then
    echo "harness step skipped (HARNESS=0)"
elif [ ! -x "$KV" ]; then
    echo "no kevolve binary ($KV): harness step skipped (give KV=...; build log in logs.tar.gz)"
elif [ "$(left)" -lt 100 ]; then
    echo "harness step skipped (deadline)"
else
    judge() { # seed
        local s=$1 t=$(date +%s)
        timeout 170 "$KV" eval --task "${HARNESS_TASK:-gqa_attention_search}" --backend cuda --quick --json \
            "tasks/gqa_attention/cuda/$s" >"$W/harness_$s.json" 2>"$W/logs/harness_$s.err"
        local rc=$?
        python3 - "$W/harness_$s.json" "$s" "$rc" "$(($(date +%s) - t))" "$W/logs/harness_$s.err" <<'PY' >>"$OUT/harness.jsonl"
import json, sys
path, seed, rc, secs, errp = sys.argv[1:6]
try:
    d = json.load(open(path))
except Exception:
    d = {"error": open(errp).read()[-2000:]}
d["seed"], d["exit"], d["seconds"] = seed, int(rc), int(secs)
print(json.dumps(d))
PY
        echo "harness $s: exit $rc after $(($(date +%s) - t)) s"
    }
    set -- $SEEDS
    while [ $# -gt 0 ]; do
        [ "$(left)" -lt 60 ] && { echo "harness: $* skipped (deadline)"; break; }
        judge "$1" &
        pids=$!
        if [ $# -gt 1 ]; then
            judge "$2" &
            pids="$pids $!"
        fi
        wait $pids # by pid: a bare wait would also wait for the tee of the log
        shift $(($# > 1 ? 2 : 1))
    done
fi
echo "== harness done after $(elapsed) s"

# ---- 4. PyTorch, side by side ----
if [ "${SDPA:-1}" = 1 ] && [ "$(left)" -gt 130 ] && python3 -c "import torch" 2>/dev/null; then
    PYTHONUNBUFFERED=1 timeout $(($(left) - 20)) python3 bench/gqa_sdpa.py "$OUT/sdpa.json" ||
        echo "gqa_sdpa.py failed or ran out of time ($?)"
fi
if [ ! -s "$OUT/sdpa.json" ]; then
    echo "PyTorch not timed in this call: the table uses bench/results/h200-2026-11-30b/sdpa.json"
    cp bench/results/h200-2026-11-30b/sdpa.json "$OUT/sdpa.json"
    echo '{"recorded": "2026-11-30"}' >"$W/sdpa_recorded"
fi
echo "== sdpa done after $(elapsed) s"

# ---- 5. tables ----
python3 bench/gqa_flagship_table.py "$OUT" "$W/sdpa_recorded" ${NAIVE:+--naive "$NAIVE"}
tar -czf "$OUT/logs.tar.gz" -C "$W" logs src names 2>/dev/null
echo "== total $(elapsed) s"
