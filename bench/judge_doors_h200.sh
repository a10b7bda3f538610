#!/usr/bin/env bash
# Issue 42 on the GPU machine: the judge's new doors closed (nothing passes
# from one child to the next, the timed work is the checked work), measured
# beside the build before them (OLD) in one call per part.
#   red:  the red team through one judge (bench/redteam_cuda.sh's CASES,
#         each followed by the honest control ctl_fp32, in one kevolve eval
#         batch as a run's children are judged) on this build; then the
#         cases new in issue 42 (NEW_CASES) the same way on OLD, which let
#         them through. Tables: $OUT/red-new.txt, $OUT/red-old.txt.
#   hold: the fast child (prefill_hopper.cu on gqa_attention_search
#         --quick) N times through one judge, OLD and this build
#         alternately, ROUNDS each: the median device hold after the first
#         and its timed share ($OUT/hold-*.txt).
#   job:  the README's main job (bench/pipeline_h200.sh's "job" part) for
#         MINUTES on OLD, then on this build: children judged a minute, the
#         share correct, the best against its best seed ($OUT/job-*/).
# Needs bench/device_pack.sh's .dev (carry it) and OLD's packed binary
# (default .dev-old/bin/kevolve: carry .dev-old too).
# Usage: bench/judge_doors_h200.sh  (OUT, PARTS ("red hold"), OLD, N (6),
#        ROUNDS (2), MINUTES (4), REPEAT (1), RED (every case), RED_OLD (1:
#        the new cases on OLD too))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
NEW=$KV
OLD=${OLD:-$ROOT/.dev-old/bin/kevolve}
OUT=${OUT:-/tmp/kevolve_judge_doors}
PARTS=${PARTS:-red hold}
N=${N:-6}
ROUNDS=${ROUNDS:-2}
TASK=gqa_attention_search
DIR=tests/data/kernels/redteam/cuda
NEW_CASES="graph_variant_outliers carry_slab_teacher carry_slab"
RED=${RED:-$(sed -n '/^CASES=/,/^EOF/p' bench/redteam_cuda.sh | grep '|' | cut -d'|' -f1 | grep -v '^ctl_fp32$')}
mkdir -p "$OUT"
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%FT%TZ)"
echo "   new: $("$NEW" --version 2>&1 | head -1); old: $("$OLD" --version 2>&1 | head -1)"

# redteam LABEL BINARY NAMES...: one batch through one judge, its table.
redteam() {
    local label=$1 bin=$2 n files=("$DIR/ctl_fp32.cu")
    shift 2
    export KEVOLVE_CACHE_DIR=$OUT/cache-$label # a build's compiles and verdicts its own
    for n in "$@"; do files+=("$DIR/$n.cu" "$DIR/ctl_fp32.cu"); done
    # The compiles on the host's cores first (each a cache hit in the batch).
    printf '%s\n' "${files[@]}" | sort -u |
        xargs -P "$(nproc)" -I{} "$bin" eval --task $TASK --backend cuda --compile-only \
            --arch sm_90a {} >"$OUT/red-$label-compile.log" 2>&1
    "$bin" eval --task $TASK --backend cuda --quick --kernel-timeout 5 "${files[@]}" \
        >"$OUT/red-$label.json" 2>"$OUT/red-$label.log" &
    resume_stopped $!
    echo "-- red team through one judge, $label build: kevolve processes stopped (resumed): $STOPS"
    python3 bench/redteam_table.py "$OUT/red-$label.json" bench/redteam_cuda.sh |
        tee "$OUT/red-$label.txt"
}

# hold LABEL BINARY: N fast children in one batch; a line each, then the
# median hold after the first and its timed share.
hold() {
    local files=() i
    export KEVOLVE_CACHE_DIR=$OUT/cache-new
    [ "$2" = "$OLD" ] && KEVOLVE_CACHE_DIR=$OUT/cache-old
    for ((i = 0; i < N; i++)); do files+=(tasks/gqa_attention/cuda/prefill_hopper.cu); done
    "$2" eval --task $TASK --backend cuda --quick "${files[@]}" >"$OUT/hold-$1.json" \
        2>"$OUT/hold-$1.log"
    python3 - "$OUT/hold-$1.json" "$1" <<'PY' | tee "$OUT/hold-$1.txt" | tail -n 1
import json, statistics, sys
path, label = sys.argv[1:]
rows = []
for line in open(path):
    a = json.loads(line)["artifacts"]
    p = a.get("profile_seconds", {})
    rows.append((a.get("device_held_seconds", 0), p, a.get("verdict")))
    print(f"{label} child {len(rows)} {a.get('verdict')} held {rows[-1][0]:.3f} s timed "
          f"{p.get('timed', 0):.3f} reference {p.get('reference', 0):.3f} check {p.get('check', 0):.3f}")
later = rows[1:] or rows
med = statistics.median(r[0] for r in later)
share = statistics.median(r[1].get("timed", 0) / r[0] for r in later if r[0] > 0)
ok = sum(r[2] == "correct" for r in rows)
print(f"{label:8s} {len(rows)} children ({ok} correct): after the first, held median {med:.3f} s, "
      f"timed share {share:.0%}")
PY
}

case " $PARTS " in *" red "*)
    redteam new "$NEW" $RED
    [ "${RED_OLD:-1}" = 1 ] && redteam old "$OLD" $NEW_CASES
    ;;
esac
case " $PARTS " in *" hold "*)
    echo "-- the fast child through one judge: old and new alternately"
    hold warm-old "$OLD" >/dev/null # compiles, keeps the baseline
    hold warm-new "$NEW" >/dev/null
    for ((r = 0; r < ROUNDS; r++)); do
        hold "old-$r" "$OLD"
        hold "new-$r" "$NEW"
    done
    ;;
esac
case " $PARTS " in *" job "*)
    for b in old new; do
        bin=$OLD
        [ $b = new ] && bin=$NEW
        echo "-- main job, $b build"
        KEVOLVE_BINARY=$bin PARTS=job OUT=$OUT/job-$b MINUTES=${MINUTES:-4} REPEAT=${REPEAT:-1} \
            bash bench/pipeline_h200.sh 2>&1 | tail -n 12
    done
    ;;
esac
