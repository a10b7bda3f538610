#!/usr/bin/env bash
# The gqa design seeds, and every child that pairs one decode design with
# one prefill design (what crossover makes once migration brings them onto
# one island), judged as an evolution judges a child (`kevolve eval --quick`
# on gqa_attention_search), K times each, alternately: the verdict, the
# combined score and each scenario's median time, side by side. Also the
# two axes that say which calls a design takes (decode_cluster's MAX_L,
# prefill_hopper's MIN_TILES) at one value each, alone and paired.
# Usage (GPU machine, .dev packed by bench/device_pack.sh):
#   . bench/device_env.sh; OUT=/tmp/p1 K=2 bench/gqa_pairings_h200.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KV=${KV:-$ROOT/build/kevolve}
K=${K:-2}
OUT=${OUT:-/tmp/kevolve_pairings}
TASK=${TASK:-gqa_attention_search}
SEEDS=$ROOT/tasks/gqa_attention/cuda
P=$OUT/progs
mkdir -p "$P" "$OUT/evals"
echo "== gqa design pairings on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null), $(date -u +%FT%TZ)"
python3 - "$SEEDS" "$P" <<'PY'
import pathlib, re, sys
seeds, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
START, END = "// EVOLVE-BLOCK-START", "// EVOLVE-BLOCK-END"

def blocks(text):
    """[(start, end)] of the text inside each block."""
    spans, pos = [], 0
    while (s := text.find(START, pos)) >= 0:
        s = text.index("\n", s) + 1
        e = text.index(END, s)
        spans.append((s, e))
        pos = e
    return spans

def axis(text, name, value):
    new, n = re.subn(rf"^#define {name} \S+", f"#define {name} {value}", text, flags=re.M)
    assert n == 1, name
    return new

def pair(dec, pre):
    """Decode seed DEC with the prefill block of PRE."""
    _, (qs, qe) = blocks(dec)
    _, (ps, pe) = blocks(pre)
    return dec[:qs] + pre[ps:pe] + dec[qe:]

src = {n: (seeds / f"{n}.cu").read_text() for n in
       ["decode_halfwarp", "decode_split", "decode_cluster", "prefill_fa2", "prefill_hopper"]}
src["cluster_L2048"] = axis(src["decode_cluster"], "MAX_L", 2048)
src["hopper_T4"] = axis(src["prefill_hopper"], "MIN_TILES", 4)
progs = dict(src)
for d in ["decode_halfwarp", "decode_split", "decode_cluster", "cluster_L2048"]:
    for p in ["prefill_fa2", "prefill_hopper", "hopper_T4"]:
        if d == "decode_halfwarp" and p == "hopper_T4":
            continue
        progs[f"{d.replace('decode_', '')}_with_{p.replace('prefill_', '')}"] = pair(src[d], src[p])
for name, text in progs.items():
    (out / f"{name}.cu").write_text(text)
print(f"{len(progs)} programs in {out}")
PY
# Compiles first, eight at a time (the cache then serves the evaluations).
# ARCH (e.g. sm_90a) compiles without a GPU: K=0 ARCH=sm_90a checks them all.
ls "$P"/*.cu | xargs -P "${JOBS:-8}" -I{} sh -c \
    '"$0" eval --task "$1" --backend cuda --compile-only ${2:+--arch "$2"} --json "{}" >/dev/null 2>&1 ||
        echo "compile failed: {}"' "$KV" "$TASK" "${ARCH:-}"
for r in $(seq 1 "$K"); do
    for f in "$P"/*.cu; do
        n=$(basename "$f" .cu)
        "$KV" eval --task "$TASK" --backend cuda --quick --json "$f" >"$OUT/evals/$n-$r.json" \
            2>"$OUT/evals/$n-$r.log" || echo "$n run $r: exit $? ($(tail -1 "$OUT/evals/$n-$r.log"))"
    done
done
python3 - "$OUT/evals" "$K" <<'PY'
import json, pathlib, statistics, sys
d, k = pathlib.Path(sys.argv[1]), int(sys.argv[2])
names = sorted({p.name.rsplit("-", 1)[0] for p in d.glob("*.json")})
res = {}
for n in names:
    runs = []
    for r in range(1, k + 1):
        try:
            runs.append(json.loads((d / f"{n}-{r}.json").read_text()))
        except Exception:
            pass
    res[n] = runs
print(f"\n{'program':28s} verdicts                 scores")
for n in names:
    v = [("ok" if r.get("metrics", {}).get("correct") else r.get("artifacts", {}).get("reason", "?")) for r in res[n]]
    s = [r.get("metrics", {}).get("combined_score", 0) for r in res[n]]
    print(f"{n:28s} {' '.join(v):24s} {' '.join(f'{x:7.2f}' for x in s)}")
scen = []
for n in names:
    for r in res[n]:
        for s in r.get("artifacts", {}).get("scenarios", []):
            if "median_us" in s and s["name"] not in scen:
                scen.append(s["name"])
print("\nmedian us per scenario (median over the evaluations)")
short = {n: n[:14] for n in names}  # the table is wide: names cut to 14
print(f"{'scenario':26s}" + "".join(f"{short[n]:>15s}" for n in names))
for sc in scen:
    row = []
    for n in names:
        v = [s["median_us"] for r in res[n] for s in r.get("artifacts", {}).get("scenarios", [])
             if s.get("name") == sc and "median_us" in s]
        row.append(f"{statistics.median(v):15.2f}" if v else f"{'-':>15s}")
    print(f"{sc:26s}" + "".join(row))
PY
