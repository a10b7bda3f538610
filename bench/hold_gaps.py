#!/usr/bin/env python3
"""Where one evaluation's device hold went that no step names: per
scenario, the seconds its check and its timing spanned ("wall") against
the steps they name; then the hold against every scenario's wall and the
steps outside them (measure, calibrate, load, stop). From `kevolve eval
--json` output.
Usage: bench/hold_gaps.py OUT.json"""
import json
import sys

d = json.load(open(sys.argv[1]))
a = d.get("artifacts", {})
held = a.get("device_held_seconds", 0)
prof = a.get("profile_seconds", {})
rows = a.get("scenarios", []) + a.get("held_out", [])
print(f"{'scenario':28s} {'wall ms':>8s} {'steps ms':>9s} {'gap ms':>7s}  largest steps")
walls = steps_all = 0.0
for s in rows:
    p = dict(s.get("profile_seconds", {}))
    wall = p.pop("wall", 0)
    steps = sum(p.values())
    walls += wall
    steps_all += steps
    top = sorted(p.items(), key=lambda kv: -kv[1])[:3]
    print(f"{s.get('name', '?'):28s} {wall * 1e3:8.1f} {steps * 1e3:9.1f} {(wall - steps) * 1e3:7.1f}  "
          + " ".join(f"{k} {v * 1e3:.1f}" for k, v in top))
outside = {k: prof.get(k, 0) for k in ("measure", "calibrate", "load", "stop", "baseline")}
rest = held - walls - sum(outside.values())
print(f"held {held:.3f} s: scenarios' walls {walls:.3f} (their steps {steps_all:.3f}, gaps "
      f"{walls - steps_all:.3f}); " + " ".join(f"{k} {v:.3f}" for k, v in outside.items())
      + f"; outside all of these {rest:.3f}; unnamed {prof.get('unnamed', 0):.3f}, "
      f"telemetry {prof.get('telemetry', 0):.3f}")
