#!/usr/bin/env bash
# Issue 21.2 on the GPU machine, in one call: the device's long-lived judge
# (src/judge/judge_server.h) against a judge for each child, side by
# side, and the red team through the long-lived one.
#
# 1. The fast child (prefill_hopper.cu on gqa_attention_search --quick) N
#    times in one batch (`kevolve eval ... A A A`, judged in turn as a run
#    judges its children), with KEVOLVE_JUDGE_SERVER=0 (a judge each) and
#    then 1 (one judge for all), ROUNDS times alternately, after a first
#    batch that compiles and keeps the baseline. Per batch: the median
#    device hold of the children after the first, its timed share, and the
#    steps a long-lived judge pays once (reference, alloc, calibrate,
#    measure); each child's line in $OUT/served-*.txt.
# 2. The red team: every CUDA candidate of bench/redteam_cuda.sh's table,
#    each followed by the honest control ctl_fp32, in one batch through one
#    judge (compiled first on the host's cores). Each hostile candidate's
#    verdict as the table expects, every control after one correct, and
#    which judge (process, child) gave it: a judge that ended is replaced.
# Needs bench/device_pack.sh's .dev (carry it).
# Usage: bench/judge_server_h200.sh   (OUT, N (8), ROUNDS (2), RED optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_judge_server}
N=${N:-8}
ROUNDS=${ROUNDS:-2}
TASK=gqa_attention_search
DIR=tests/data/kernels/redteam/cuda
RED=${RED:-$(sed -n '/^CASES=/,/^EOF/p' bench/redteam_cuda.sh | grep '|' | cut -d'|' -f1 | grep -v '^ctl_fp32$')}
mkdir -p "$OUT"
export KEVOLVE_CACHE_DIR=$OUT/cache
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%FT%TZ)"

# The red team's compiles on the host's cores while the GPU works.
(for n in ctl_fp32 $RED; do echo "$DIR/$n.cu"; done |
    xargs -P "$(nproc)" -I{} "$KV" eval --task $TASK --backend cuda --compile-only --arch sm_90a {} \
        >"$OUT/redteam_compile.log" 2>&1) &
compiles=$!

CHILD=tasks/gqa_attention/cuda/prefill_hopper.cu
batch() { # batch LABEL SERVER: N fast children in one kevolve eval
    local files=() i
    for ((i = 0; i < N; i++)); do files+=("$CHILD"); done
    KEVOLVE_JUDGE_SERVER=$2 "$KV" eval --task $TASK --backend cuda --quick "${files[@]}" \
        >"$OUT/served-$1.json" 2>"$OUT/served-$1.log"
    python3 - "$OUT/served-$1.json" "$1" <<'PY' | tee "$OUT/served-$1.txt" | tail -n 1
import json, statistics, sys
path, label = sys.argv[1:]
rows = []
for line in open(path):
    d = json.loads(line)
    a = d["artifacts"]
    p = a.get("profile_seconds", {})
    h = a.get("device_held_seconds", 0)
    j = a.get("judge", {})
    rows.append((h, p, a.get("verdict"), j))
    once = sum(p.get(k, 0) for k in ("reference", "alloc", "calibrate", "measure"))
    print(f"{label} child {len(rows)} judge {j.get('pid', '-')}/{j.get('child', '-')} {a.get('verdict')} "
          f"held {h:.3f} s timed {p.get('timed', 0):.3f} reference {p.get('reference', 0):.3f} "
          f"alloc {p.get('alloc', 0):.3f} calibrate {p.get('calibrate', 0):.3f} "
          f"measure {p.get('measure', 0):.3f} (those four {once:.3f}) stop {p.get('stop', 0):.3f}")
later = rows[1:] or rows
med = statistics.median(r[0] for r in later)
share = statistics.median(r[1].get("timed", 0) / r[0] for r in later if r[0] > 0)
four = statistics.median(sum(r[1].get(k, 0) for k in ("reference", "alloc", "calibrate", "measure")) for r in later)
ok = sum(r[2] == "correct" for r in rows)
print(f"{label:10s} {len(rows)} children ({ok} correct): after the first, held median {med:.3f} s, "
      f"timed share {share:.0%}, reference+alloc+calibrate+measure {four:.3f} s")
PY
}

echo "-- fast child: one judge each (0) against one for all (1)"
batch warm 1 >/dev/null # compiles, keeps the baseline
for ((r = 0; r < ROUNDS; r++)); do
    batch "each-$r" 0
    batch "served-$r" 1
done

wait "$compiles"
echo "-- red team through one judge ($TASK, each candidate followed by ctl_fp32)"
files=("$DIR/ctl_fp32.cu")
for n in $RED; do files+=("$DIR/$n.cu" "$DIR/ctl_fp32.cu"); done
"$KV" eval --task $TASK --backend cuda --quick --kernel-timeout 5 "${files[@]}" \
    >"$OUT/redteam.json" 2>"$OUT/redteam.log" &
resume_stopped $!
echo "kevolve processes found stopped (and resumed): $STOPS"
python3 bench/redteam_table.py "$OUT/redteam.json" bench/redteam_cuda.sh | tee "$OUT/redteam.txt"
