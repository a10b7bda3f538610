#!/usr/bin/env python3
"""Tables of bench/gqa_flagship_h200.sh, from the files it wrote to OUT:
kernels.log (lines "VARIANT CHECK name err/tol X unwritten N ok|WRONG|FAIL"
and "VARIANT TIME name US us ..." of bench/gqa_flagship.cu, "VARIANT BW read
N GB/s", "VARIANT FAILED name ..."), harness.jsonl (one `kevolve eval`
verdict per seed) and sdpa.json (bench/gqa_sdpa.py). Prints:

  1. correctness: per variant, the shapes checked and the worst err/tol;
  2. times: every scenario against every variant (us; '!' marks a variant
     that failed a check, whose times do not count);
  3. the best correct variant per scenario beside cuDNN, flash and the
     floor (decode: K and V bytes at the read bandwidth measured in this
     call; prefill: causal flops at the bf16 matmul rate of sdpa.json);
  4. the harness's verdict per seed.
With --naive NAME, variant NAME is the naive start: its own column in 3,
never "ours". Columns for FlashInfer and FlashAttention-3 appear when
sdpa.json has their times. Writes OUT/table.json.
Usage: gqa_flagship_table.py OUT [RECORDED_MARKER] [--naive NAME]"""
import json
import os
import re
import sys

args = sys.argv[1:]
naive = None
if "--naive" in args:
    i = args.index("--naive")
    naive = args[i + 1]
    del args[i:i + 2]
out = args[0]
recorded = len(args) > 1 and os.path.exists(args[1])


def load_json(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception:
        return {}


checks, times, failed, order, skipped = {}, {}, {}, [], []
read_gbps = None
try:
    lines = open(os.path.join(out, "kernels.log")).read().splitlines()
except OSError:
    lines = []
for ln in lines:
    f = ln.split()
    if len(f) < 3:
        continue
    var, kind = f[0], f[1]
    if var not in order and kind in ("CHECK", "TIME", "FAILED"):
        order.append(var)
    if kind == "SKIPPED":
        skipped.append(var)
    elif kind == "BW" and len(f) >= 4:
        read_gbps = float(f[3])
    elif kind == "CHECK" and len(f) >= 8:
        err = float(f[4]) if f[4] not in ("-1.000",) else None
        checks.setdefault(var, {})[f[2]] = (f[7], err, " ".join(f[8:]))
    elif kind == "TIME" and len(f) >= 4:
        times.setdefault(var, {})[f[2]] = float(f[3])
    elif kind == "FAILED":
        failed.setdefault(var, []).append(f[2])

SCEN = [s for s in ["decode_16x8_b1_l128", "decode_16x8_b1_l1024", "decode_16x8_b1_l8192",
                    "decode_16x8_b1_l32768", "decode_16x8_b8_l8192", "decode_16x8_b32_l4096",
                    "decode_40x8_b1_l128", "decode_40x8_b1_l1024", "decode_40x8_b1_l8192",
                    "decode_40x8_b1_l32768", "decode_40x8_b8_l8192", "decode_40x8_b32_l4096",
                    "prefill_16x8_s512", "prefill_16x8_s2048", "chunked_16x8_q512_l8192",
                    "prefill_40x8_s512", "prefill_40x8_s2048", "chunked_40x8_q512_l8192",
                    "prefill_16x8_s8192", "prefill_40x8_s8192"]]


def shape(name):
    m = re.match(r"(decode|prefill|chunked)_(\d+)x(\d+)_(?:b(\d+)_l(\d+)|s(\d+)|q(\d+)_l(\d+))", name)
    kind, hq, hkv = m.group(1), int(m.group(2)), int(m.group(3))
    if kind == "decode":
        return 1, hq, hkv, int(m.group(4)), int(m.group(5))
    if kind == "prefill":
        s = int(m.group(6))
        return s, hq, hkv, 1, s
    return int(m.group(7)), hq, hkv, 1, int(m.group(8))


def floor_us(name, mm_tflops):
    sq, hq, hkv, b, l = shape(name)
    if sq == 1:
        return 4.0 * b * hkv * l * 128 / ((read_gbps or 4267.0) * 1e9) * 1e6
    pairs = sq * (l - sq) + sq * (sq + 1) / 2
    return 4.0 * b * hq * pairs * 128 / (mm_tflops * 1e12) * 1e6


def bad(var):
    return any(v[0] != "ok" for v in checks.get(var, {}).values()) or bool(failed.get(var))


# 1. correctness
print("\n== correctness (float64 GPU reference; err/tol <= 1 and every output written)")
for var in order:
    c = checks.get(var, {})
    worst = max((v[1] for v in c.values() if v[1] is not None), default=None)
    wrong = [f"{k} ({v[0]} {v[1]} {v[2]})" for k, v in c.items() if v[0] != "ok"]
    print(f"{var:14s} {len(c):3d} shapes checked, worst err/tol "
          f"{worst if worst is not None else 'n/a'}"
          + (f"; WRONG: {'; '.join(wrong)[:600]}" if wrong else "")
          + (f"; no output (crash/hang): {', '.join(failed[var])}" if failed.get(var) else ""))

# 2. every variant's times
timed = [v for v in order if times.get(v)]
print("\n== times (us; ! = the variant failed a check)")
print(f"{'scenario':26s}" + "".join(f"{v[:11]:>12s}" for v in timed))
for s in SCEN:
    row = f"{s:26s}"
    for v in timed:
        t = times[v].get(s)
        row += f"{(f'{t:.1f}' + ('!' if bad(v) else '')) if t else '-':>12s}"
    print(row)

# 3. best correct variant beside PyTorch
sdpa = load_json("sdpa.json")
mm = sdpa.get("matmul_tflops") or 745.0
src = "recorded 2026-11-30 (bench/results/h200-2026-11-30b)" if recorded else "measured in this call"
print(f"\n== best correct variant per scenario; cuDNN and flash {src}; read {read_gbps or 0:.0f} GB/s "
      f"(this call), bf16 matmul {mm:.0f} TFLOP/s; 'vs' = their time / ours (> 1: ours faster)")
if skipped:
    print(f"!! {len(skipped)} variant(s) not timed (deadline): {' '.join(skipped)}; 'ours' is the "
          "best of those timed, not of all the variants given")
others = [k for k in ("flashinfer", "fa3")
          if any(isinstance(v.get(k), (int, float)) for v in sdpa.get("scenarios", {}).values())]
print(f"{'scenario':26s}" + (f" {'naive':>10s}" if naive else "") + f" {'ours':>9s} {'variant':12s} "
      f"{'floor':>8s} {'floor%':>6s} {'cuDNN':>9s} {'flash':>9s}" + "".join(f" {k:>10s}" for k in others)
      + f" {'vs cuDNN':>8s} {'vs flash':>8s} {'vs best':>8s}")
rows = []
for s in SCEN:
    cands = [(times[v][s], v) for v in timed if s in times[v] and not bad(v) and v != naive]
    us, var = min(cands) if cands else (None, None)
    t = sdpa.get("scenarios", {}).get(s, {})
    cd, fl, fu = t.get("cudnn"), t.get("flash"), floor_us(s, mm)
    nv = times.get(naive, {}).get(s) if naive else None
    theirs = [x for x in [cd, fl] + [t.get(k) for k in others] if isinstance(x, (int, float))]
    rows.append({"scenario": s, "naive_us": nv, "ours_us": us, "variant": var, "floor_us": fu,
                 "cudnn_us": cd, "flash_us": fl, **{k + "_us": t.get(k) for k in others},
                 "all": {v: times[v].get(s) for v in timed}})
    fmt = lambda x, w=9: f"{x:{w}.1f}" if isinstance(x, (int, float)) else f"{'n/a':>{w}s}"
    rat = lambda a, b: f"{b / a:8.2f}" if a and b else f"{'n/a':>8s}"
    print(f"{s:26s}" + (f" {fmt(nv, 10)}" if naive else "") + f" {fmt(us)} {var or '-':12s} {fmt(fu, 8)} "
          f"{(f'{100 * fu / us:5.0f}%' if us else '   n/a')} {fmt(cd)} {fmt(fl)}"
          + "".join(f" {fmt(t.get(k), 10)}" for k in others)
          + f" {rat(us, cd)} {rat(us, fl)} {rat(us, min(theirs) if theirs else None)}")

# 4. the harness
print("\n== kevolve eval --task gqa_attention_search --backend cuda --quick, per seed")
harness = []
try:
    for ln in open(os.path.join(out, "harness.jsonl")):
        harness.append(json.loads(ln))
except OSError:
    pass
for h in harness:
    a, m = h.get("artifacts", {}), h.get("metrics", {})
    verdict = a.get("verdict") or ("error: " + str(h.get("error", ""))[-300:].replace("\n", " "))
    print(f"{h['seed']:22s} {verdict:10s} score {m.get('combined_score', 'n/a')!s:>10.8s} "
          f"exit {h['exit']} {h['seconds']:4d} s {a.get('reason') or ''} "
          f"{str(a.get('reason_detail') or '')[:300]}")
json.dump({"read_gbps": read_gbps, "matmul_tflops": mm, "sdpa_recorded": recorded, "rows": rows,
           "checks": {v: {k: list(x) for k, x in c.items()} for v, c in checks.items()},
           "failed": failed, "harness": [{k: h.get(k) for k in ("seed", "exit", "seconds", "metrics")}
                                         | {"verdict": h.get("artifacts", {}).get("verdict"),
                                            "reason": h.get("artifacts", {}).get("reason")}
                                         for h in harness]},
          open(os.path.join(out, "table.json"), "w"), indent=1)
