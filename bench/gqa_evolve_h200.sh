#!/usr/bin/env bash
# An evolution of gqa_attention on the H200 with the built-in mutators only
# (tune 80%, crossover 20%; no language model), from the naive CUDA kernel,
# within one device call. By default on gqa_attention_search (every scenario
# of gqa_attention but the two prefills of 8192 rows, where the naive kernel
# timed beside each child takes 1-2 s per call; every child is also checked
# on the held-out shapes): a child costs about 10-20 s of GPU-locked time
# there, so the minutes hold tens of children. The run is stopped gracefully
# (SIGINT: no new children, those in flight finish) at the time limit, and
# killed DRAIN seconds later (default 100).
# Does not build kevolve: KV names the binary (default build/kevolve).
# Usage: bench/gqa_evolve_h200.sh [--minutes M] [--task TASK]   (repo root; OUT optional)
# Writes to $OUT: evolve.log, evolve_summary.json, best.cu (the best kernel).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_gqa_evolve}
KV=${KV:-$ROOT/build/kevolve}
MINUTES=6
TASK=gqa_attention_search
DRAIN=${DRAIN:-100}
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    --task) TASK=$2; shift 2 ;;
    *) echo "usage: $0 [--minutes M] [--task TASK]" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
exec > >(tee "$OUT/evolve.log") 2>&1
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
export KEVOLVE_CACHE_DIR=${KEVOLVE_CACHE_DIR:-/tmp/kevolve_gqa_cache}
WORK=/tmp/kevolve_gqa_evolve_run
rm -rf "$WORK"
mkdir -p "$WORK"
echo "== gqa_attention evolution on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1): task $TASK, $MINUTES min, $(date -u +%FT%TZ)"
"$KV" --version 2>/dev/null | head -1
cat >"$WORK/config.yaml" <<YAML
initial_program: $ROOT/tasks/gqa_attention/cuda/naive.cu
max_iterations: 400
max_code_length: 120000
random_seed: 5
log_level: INFO
llm:
  models:
    - name: builtin:tune
      weight: 0.8
    - name: builtin:crossover
      weight: 0.2
database:
  num_islands: 2
  population_size: 200
  archive_size: 20
  feature_dimensions: [complexity, speedup]
  feature_bins: 8
  migration_interval: 8
  migration_rate: 0.1
  exploration_ratio: 0.2
  exploitation_ratio: 0.7
evaluator:
  task: $TASK
  backend: cuda
  timeout: 300
  max_retries: 0
  parallel_evaluations: 3
  quick: true # fewer trials and shorter timing per child: more children in the minutes
YAML
secs=$((MINUTES * 60))
t0=$(date +%s)
timeout --signal=INT --kill-after="$DRAIN" "$secs" "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
echo "== kevolve run exited $? after $(($(date +%s) - t0)) s"
"$KV" status "$WORK/run"
"$KV" status "$WORK/run" --json >"$WORK/status.json" 2>/dev/null
"$KV" best "$WORK/run" -o "$OUT/best.cu"
python3 - "$WORK/run/run.db" "$WORK/status.json" "$OUT/evolve_summary.json" "$TASK" "$MINUTES" <<'PY'
import json, sqlite3, sys
db, status, out, task, minutes = sys.argv[1:]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
rows = con.execute("select id, parent_id, mutator, status, fitness, change_summary, metrics, "
                   "eval_seconds from programs order by id").fetchall()
by_id = {r[0]: r for r in rows}
ok = [r for r in rows if r[3] == "ok" and r[4] is not None]
best = max(ok, key=lambda r: r[4]) if ok else None
lineage = []
p = best
while p is not None:
    lineage.append({"id": p[0], "mutator": p[2], "fitness": p[4], "change": p[5]})
    p = by_id.get(p[1])
reasons = {}
for r in rows:
    if r[3] != "ok":
        reasons[r[3]] = reasons.get(r[3], 0) + 1
# Why children scored zero: the harness's verdict (reason code and detail).
rejected = {}
for pid, name, value in con.execute("select program_id, name, value from artifacts where name in "
                                    "('reason', 'reason_detail') order by program_id"):
    rejected.setdefault(pid, {})[name] = value
summary = {"task": task, "minutes": float(minutes), "programs": len(rows), "ok": len(ok),
           "not_ok_by_status": reasons,
           "initial_fitness": rows[0][4] if rows else None,
           "best_id": best[0] if best else None, "best_fitness": best[4] if best else None,
           "best_lineage": lineage[::-1],
           "rejections": {str(k): v for k, v in rejected.items()}}
if best:
    m = json.loads(best[6])
    summary["best_scenarios"] = {k[:-len("_median_us")]: {"us": v, "speedup": m.get(k[:-len("_median_us")] + "_speedup")}
                                 for k, v in m.items() if k.endswith("_median_us")}
try:
    summary["status"] = json.load(open(status))
except Exception:
    pass
json.dump(summary, open(out, "w"), indent=1)
print(f"\nprograms {len(rows)}, ok {len(ok)}, initial {summary['initial_fitness']}, "
      f"best #{summary['best_id']} fitness {summary['best_fitness']}")
print("lineage of the best:")
for s in summary["best_lineage"]:
    print(f"  #{s['id']:<4} {s['mutator'] or '':10s} {s['fitness'] if s['fitness'] is not None else '-':<10} {s['change'] or ''}")
codes = {}
for v in rejected.values():
    codes[v.get("reason", "?")] = codes.get(v.get("reason", "?"), 0) + 1
print("rejections by reason:", codes or "none")
for pid, v in list(rejected.items())[:3]:
    print(f"  #{pid}: {v.get('reason')}: {(v.get('reason_detail') or '')[:300]}")
if best:
    print(f"\n{'scenario':28s} {'us':>10s} {'speedup':>8s}")
    for k, v in summary["best_scenarios"].items():
        print(f"{k:28s} {v['us']:10.2f} {v['speedup'] or 0:8.2f}x")
PY
grep -E "^#define [A-Z_]+ +[0-9]+ +// kevolve: tune" "$OUT/best.cu" 2>/dev/null
