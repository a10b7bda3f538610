#!/usr/bin/env python3
"""Where one evaluation's timed windows went, scenario by scenario: the
candidate's calls (blocks x calls per block x the median), the judge's
input writes in those windows (the device's clock, per block), and what
the writes are against the calls. From `kevolve eval --json` output.
Usage: bench/scenario_shares.py OUT.json"""
import json
import sys

d = json.load(open(sys.argv[1]))
a = d.get("artifacts", {})
rows = [s for s in a.get("scenarios", []) if "median_us" in s]
print(f"{'scenario':28s} {'blocks':>6s} {'calls':>6s} {'median us':>10s} "
      f"{'calls ms':>9s} {'writes ms':>9s} {'writes/calls':>12s}")
tc = tw = 0.0
for s in rows:
    blocks, n, med = s.get("blocks", 0), s.get("calls_per_block", 0), s["median_us"]
    w = s.get("input_writes_us", {}).get("device_median", 0)
    calls_ms, writes_ms = blocks * n * med / 1e3, blocks * w / 1e3
    tc += calls_ms
    tw += writes_ms
    print(f"{s['name']:28s} {blocks:6d} {n:6d} {med:10.2f} {calls_ms:9.2f} {writes_ms:9.2f} "
          f"{writes_ms / calls_ms if calls_ms else 0:12.2f}")
print(f"{'all (counted blocks)':28s} {'':6s} {'':6s} {'':10s} {tc:9.1f} {tw:9.1f} "
      f"{tw / tc if tc else 0:12.2f}")
p = a.get("profile_seconds", {})
c = a.get("profile_check_seconds", {})
h = a.get("device_held_seconds", 0)
print(f"held {h:.3f} s; timed windows {p.get('timed', 0):.3f} s, of which the judge's writes "
      f"{c.get('block_write', 0):.3f} s")
