#!/usr/bin/env bash
# How much one program's verdict moves from one evaluation to the next:
# each program of PROGS judged K times, alternately (`kevolve eval --quick`,
# as an evolution judges its children), then per scenario the median time
# of every evaluation and its spread (max / min - 1), and the same for
# combined_score. The main job's "best against best seed, judged again"
# is only as sharp as this spread (5% on the H200 in commit 01eb5c8, 6.5-8.4%
# over five evaluations in commit d94eae3).
# QUICK=0 judges in full (15 blocks a scenario, not 5): whether the spread
# is the blocks' or each evaluation's.
# Usage: bench/judge_spread.sh PROG...   (KV (build/kevolve), K (5), TASK
#        (gqa_attention_search), BACKEND (cuda), QUICK (1), OUT
#        (/tmp/kevolve_spread))
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KV=${KV:-$ROOT/build/kevolve}
K=${K:-5}
TASK=${TASK:-gqa_attention_search}
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-/tmp/kevolve_spread}
QUICK=${QUICK:-1}
mode=--quick
[ "$QUICK" = 0 ] && mode=
[ $# -ge 1 ] || { echo "usage: $0 PROG..." >&2; exit 2; }
mkdir -p "$OUT"
echo "== $TASK on $BACKEND${mode:+ ($mode)}, $K evaluations each, alternately, $(date -u +%FT%TZ)"
for r in $(seq 1 "$K"); do
    n=0
    for prog in "$@"; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        "$KV" eval --task "$TASK" --backend "$BACKEND" $mode --json "$prog" \
            >"$OUT/p$n-$r.json" 2>"$OUT/p$n-$r.log" || echo "p$n run $r: exit $?"
    done
done
python3 - "$OUT" "$K" "$@" <<'PY'
import json, sys
out, k, progs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for n, prog in enumerate(progs, 1):
    runs = []
    for r in range(1, k + 1):
        try:
            runs.append(json.load(open(f"{out}/p{n}-{r}.json")))
        except Exception as e:
            print(f"{prog}: evaluation {r} has no verdict ({e})")
    scores = [d.get("metrics", {}).get("combined_score", 0) for d in runs]
    print(f"\n{prog}: combined_score " + " ".join(f"{s:.2f}" for s in scores)
          + (f"  spread {max(scores) / min(scores) - 1:.1%}" if scores and min(scores) > 0 else ""))
    rows = {}
    for d in runs:
        for s in d.get("artifacts", {}).get("scenarios", []):
            if "median_us" in s:
                rows.setdefault(s["name"], []).append(s["median_us"])
    for name, v in sorted(rows.items(), key=lambda kv: -(max(kv[1]) / min(kv[1]))):
        print(f"  {name:28s} " + " ".join(f"{x:9.2f}" for x in v)
              + f"  us  spread {max(v) / min(v) - 1:6.1%}")
PY
