#!/usr/bin/env python3
"""Whether one program's spread between evaluations follows the GPU's
clock: for each scenario of bench/judge_spread.sh's verdicts (DIR/pN-R.json),
every evaluation's median with the SM clock and temperature NVML read
after its blocks, and the correlation of the medians with the clock.
Usage: bench/spread_clocks.py DIR"""
import glob
import json
import os
import re
import statistics
import sys

runs = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "p*-*.json"))):
    m = re.match(r"p(\d+)-(\d+)\.json", os.path.basename(path))
    try:
        runs.setdefault(int(m.group(1)), []).append(json.load(open(path)))
    except Exception:
        continue


def corr(x, y):
    if len(x) < 3 or statistics.pstdev(x) == 0 or statistics.pstdev(y) == 0:
        return float("nan")
    mx, my = statistics.mean(x), statistics.mean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (
        len(x) * statistics.pstdev(x) * statistics.pstdev(y))


for prog, evals in sorted(runs.items()):
    rows = {}
    for d in evals:
        for s in d.get("artifacts", {}).get("scenarios", []):
            if "median_us" not in s:
                continue
            t = s.get("telemetry", {}).get("after", {})
            rows.setdefault(s["name"], []).append(
                (s["median_us"], t.get("sm_clock_mhz", 0), t.get("temperature_c", 0),
                 s.get("iqr_us", 0)))
    print(f"program {prog}: median us @ SM MHz after (IQR us), per evaluation; r(median, clock)")
    for name, v in sorted(rows.items(), key=lambda kv: -(max(x[0] for x in kv[1]) / min(x[0] for x in kv[1]))):
        r = corr([x[0] for x in v], [x[1] for x in v])
        print(f"  {name:26s} " + " ".join(f"{x[0]:7.2f}@{x[1]:4d}({x[3]:.2f})" for x in v)
              + f"  r {r:+.2f}")
