#!/usr/bin/env bash
# Side-by-side table of gqa_attention on the H200, in one device call: for
# each of the 20 scenarios, the naive start, our best (per scenario: the
# fastest correct program of an evolution's store, or of the kernels given),
# PyTorch's cuDNN and flash (and FlashInfer's decode and FlashAttention-3
# when importable: bench/NOTES.md says why they are not carried), the floor
# (decode: K and V bytes at the read bandwidth measured in the call;
# prefill: causal flops at the measured bf16 matmul rate) and the ratios.
#
# Ours and the naive start are checked and timed by bench/gqa_flagship.cu
# (float64 GPU reference on every scenario, CUDA graphs over rotated inputs,
# the way bench/gqa_sdpa.py times PyTorch), each program in its own process
# (bench/gqa_flagship_h200.sh does the work, without its harness step).
#
# Usage: bench/gqa_h200.sh [RUN ...]   (repo root; OUT optional)
#   RUN  an evolution's output folder or run.db: for each scenario its
#        correct program with the lowest stored median time (for the two
#        8192-row prefills, when the run's task lacked them, its best at the
#        2048-row prefill of the same heads); or a kernel .cu, taken as is.
#   With no RUN: the seeds of tasks/gqa_attention/cuda but the naive baseline.
#   PICK="SCENARIO ..." takes a run's programs only for those scenarios
#   (each program is still timed on all 20): a store's fastest at the two
#   B=1 L=1,024 decodes in two candidates' time, not fourteen's.
# Writes to $OUT: flagship.log (the tables), kernels.log, sdpa.json,
# table.json, candidates.json (which program was picked for which
# scenario), logs.tar.gz.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_gqa_bench}
W=/tmp/kevolve_gqa_h200
rm -rf "$W"
mkdir -p "$OUT" "$W/cand"
cd "$ROOT" || exit 1
if [ $# -eq 0 ]; then
    set -- tasks/gqa_attention/cuda/decode_halfwarp.cu tasks/gqa_attention/cuda/decode_split.cu \
        tasks/gqa_attention/cuda/decode_cluster.cu \
        tasks/gqa_attention/cuda/prefill_fa2.cu tasks/gqa_attention/cuda/prefill_hopper.cu
fi
python3 - "$W/cand" "$OUT/candidates.json" "${PICK:-}" "$@" <<'PY' || exit 1
import json, os, shutil, sqlite3, sys
dest, report, pick, runs = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
SCEN = [f"decode_{h}x8_b{b}_l{l}" for h in (16, 40)
        for b, l in ((1, 128), (1, 1024), (1, 8192), (1, 32768), (8, 8192), (32, 4096))]
SCEN += [f"{k}_{h}x8_{s}" for h in (16, 40)
         for k, s in (("prefill", "s512"), ("prefill", "s2048"), ("chunked", "q512_l8192"),
                      ("prefill", "s8192"))]
unknown = [s for s in pick if s not in SCEN]
if unknown:
    sys.exit(f"PICK names no scenario of the table: {' '.join(unknown)}")
picked = {}
for run in runs:
    if run.endswith(".cu"):
        name = os.path.basename(run)[:-3]
        shutil.copy(run, os.path.join(dest, name + ".cu"))
        picked[name] = {"from": run, "scenarios": "all"}
        continue
    db = os.path.join(run, "run.db") if os.path.isdir(run) else run
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    progs = []
    for pid, src, metrics in con.execute(
            "select id, source, metrics from programs where status = 'ok' and metrics is not null"):
        m = json.loads(metrics)
        if m.get("correct") == 1:
            progs.append((pid, src, m))
    # A name the shell's globs see: no leading dot (a carried ".devrun").
    tag = os.path.basename(os.path.dirname(os.path.abspath(db))).lstrip(".") or "run"
    for s in pick or SCEN:
        key = s if any(f"{s}_median_us" in m for _, _, m in progs) else s.replace("s8192", "s2048")
        timed = [(m[f"{key}_median_us"], pid, src) for pid, src, m in progs
                 if isinstance(m.get(f"{key}_median_us"), (int, float))]
        best = min(timed) if timed else None
        if not best:
            continue
        name = f"{tag}_p{best[1]}"
        with open(os.path.join(dest, name + ".cu"), "w") as f:
            f.write(best[2])
        picked.setdefault(name, {"from": db, "program": best[1], "scenarios": []})
        picked[name]["scenarios"].append(s if key == s else f"{s} (by {key})")
json.dump(picked, open(report, "w"), indent=1)
for k, v in picked.items():
    print(f"candidate {k}: {v['from']}, best at {v['scenarios']}")
PY
{
    echo "naive $ROOT/tasks/gqa_attention/cuda/naive.cu all small -"
    for f in "$W"/cand/*.cu; do
        echo "$(basename "$f" .cu) $f all all -"
    done
} >"$W/variants"
VARIANTS_FILE=$W/variants HARNESS=0 NAIVE=naive DEADLINE=${DEADLINE:-540} OUT=$OUT \
    exec bash "$ROOT/bench/gqa_flagship_h200.sh"
