#!/usr/bin/env bash
# The judge on the H200, in one device call (issue 11): the runner's sandbox
# there, the CUDA unit test (honest kernels pass, the old red team fails for
# its reasons), the new red team (bench/redteam_cuda.sh, when present), the
# naive kernel against itself (the score the baseline's calibration should
# give), and what the separation costs per child: the same child judged by
# the worker of before the judge (KV_OLD, a binary of commit e2487bb) and by
# the judge, with the baseline timed afresh and with it kept.
# Usage (device, repo root): . bench/device_env.sh; OUT=... bench/judge_h200.sh
#   KV_OLD=.dev/bin/kevolve-old   the old binary (optional: no cost table without it)
#   KV_OLD_SEED=.dev/naive-old.cu the naive kernel of that commit (today's needs
#                                 headers the old harness does not provide); it
#                                 and a fast point of it go through both, for a
#                                 like-with-like cost
#   DEADLINE=540                  seconds after which the remaining steps are skipped
# Writes to $OUT: judge.log, cost.json, and the red team's files.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/kevolve_judge}
DEADLINE=${DEADLINE:-540}
mkdir -p "$OUT"
exec > >(tee "$OUT/judge.log") 2>&1
T0=$(date +%s)
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
KV=${KV:-$ROOT/.dev/bin/kevolve}
export KEVOLVE_CACHE_DIR=/tmp/kevolve_judge_cache KV_SOURCE_DIR=$ROOT KEVOLVE_BINARY=$KV
echo "== judge on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ), kernel $(uname -r)"
python3 -c 'import ctypes; print("landlock abi", ctypes.CDLL(None).syscall(444, None, 0, 1))'

# field FILE EXPR: a value from a verdict's JSON.
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null || echo "?"; }

echo "== 1. the CUDA unit test (the old red team, honest kernels, the device reference)"
timeout 300 .dev/bin/test_kernel_cuda >"$OUT/test_kernel_cuda.log" 2>&1
echo "test_kernel_cuda exit $? ($(grep -cE '^\[       OK' "$OUT/test_kernel_cuda.log") ok)"
grep -E "FAILED|ERROR|red team" "$OUT/test_kernel_cuda.log" | head -20

if [ -x bench/redteam_cuda.sh ] && [ "$(left)" -gt 200 ]; then
    echo "== 2. the new red team"
    OUT=$OUT/redteam DEADLINE=$(($(left) - 150)) timeout $(($(left) - 140)) bench/redteam_cuda.sh 2>&1 | tail -45
fi

seed=tasks/gqa_attention/cuda/naive.cu
echo "== 3. cost per child and the naive kernel against itself (gqa_attention_search, --quick)"
run() { # NAME BINARY ARGS...: one evaluation, its verdict in $OUT/NAME.json
    local name=$1 bin=$2
    shift 2
    local t=$(date +%s.%N)
    timeout 600 "$bin" eval --task gqa_attention_search --backend cuda --quick \
        --run-dir "$RUN_DIR" "$@" "$seed" \
        >"$OUT/$name.json" 2>"$OUT/$name.err"
    echo "$name: exit $? in $(python3 -c "print(round($(date +%s.%N) - $t, 1))") s: $(tail -1 "$OUT/$name.err")"
}
RUN_DIR=/tmp/kevolve_judge_run
rm -rf "$RUN_DIR" && mkdir -p "$RUN_DIR"
# The baseline timed afresh, then kept for the rest (as in a run).
[ "$(left)" -gt 120 ] && run judge_fresh "$KV" --fresh-baseline
# The same source again is a duplicate by artifact: a copy with a new comment.
{ cat "$seed"; echo "// the same code"; } >/tmp/same.cu
[ "$(left)" -gt 60 ] && seed=/tmp/same.cu run judge_dup "$KV"
# Cost per child, like with like: each old seed through the old worker and
# through the judge (its baseline kept): the naive kernel, and a fast child
# (the old seed at the hand sweep's point: SPLIT 0, MMA 1, MMA_DECODE 1,
# MMAD_KW 32, MMAD_STAGES 2).
if [ -n "${KV_OLD:-}" ]; then
    old_seed=${KV_OLD_SEED:-.dev/naive-old.cu}
    sed -e 's/^#define SPLIT 1 /#define SPLIT 0 /' -e 's/^#define MMA 0 /#define MMA 1 /' \
        -e 's/^#define MMA_DECODE 0 /#define MMA_DECODE 1 /' -e 's/^#define MMAD_KW 16 /#define MMAD_KW 32 /' \
        -e 's/^#define MMAD_STAGES 3 /#define MMAD_STAGES 2 /' "$old_seed" >/tmp/fast-old.cu
    for pair in "naive:$old_seed" "fast:/tmp/fast-old.cu"; do
        seed=${pair#*:}
        [ "$(left)" -gt 90 ] && KEVOLVE_CACHE_DIR=/tmp/kevolve_old_cache run "old_${pair%%:*}" "$KV_OLD"
        [ "$(left)" -gt 60 ] && run "judge_${pair%%:*}" "$KV"
    done
    seed=tasks/gqa_attention/cuda/naive.cu
fi
python3 - "$OUT" <<'PY' | tee "$OUT/cost.txt"
import json, os, sys
out = sys.argv[1]
rows = {}
for name in ("judge_fresh", "judge_dup", "old_naive", "judge_naive", "old_fast", "judge_fast"):
    p = os.path.join(out, name + ".json")
    try:
        d = json.load(open(p))
    except Exception:
        continue
    a, m = d.get("artifacts", {}), d.get("metrics", {})
    rows[name] = {"worker_s": a.get("worker_seconds"), "score": m.get("combined_score"),
                  "verdict": a.get("verdict"), "reason": a.get("reason"),
                  "profile": a.get("profile_seconds"), "dup": a.get("duplicate_of_artifact"),
                  "isolation": a.get("isolation"), "calibration": a.get("clock_calibration")}
json.dump(rows, open(os.path.join(out, "cost.json"), "w"), indent=1)
print("%-12s %10s %8s %s" % ("run", "locked s", "score", "verdict"))
for k, r in rows.items():
    print("%-12s %10s %8s %s %s" % (k, r["worker_s"] and round(r["worker_s"], 1), r["score"] and round(r["score"], 3),
                                    r["verdict"], r["reason"] or ("dup" if r["dup"] else "")))
for k, r in rows.items():
    print(k, "profile", r["profile"])
# Where the judge's time goes, scenario by scenario (the fast child).
try:
    d = json.load(open(os.path.join(out, "judge_fast.json")))
    for sc in d["artifacts"].get("scenarios", []) + d["artifacts"].get("held_out", []):
        p = sc.get("profile_seconds", {})
        print("%-28s %6.2f s  %s" % (sc.get("name"), sum(p.values()),
              " ".join("%s %.2f" % (k, v) for k, v in sorted(p.items(), key=lambda kv: -kv[1]) if v >= 0.01)))
except Exception as e:
    print("no per-scenario profile:", e)
if "judge_fresh" in rows:
    print("isolation:", rows["judge_fresh"]["isolation"])
    print("calibration:", rows["judge_fresh"]["calibration"])
PY
echo "== done in $(($(date +%s) - T0)) s"
