#!/usr/bin/env python3
# Test evaluator (executable, run directly): metrics that are NaN or
# infinite, as Python's json.dumps writes them (NaN, Infinity, -Infinity).
import json

print(json.dumps({"metrics": {
    "combined_score": float("nan"),
    "speed": float("inf"),
    "slowness": float("-inf"),
    "ok": 2.0,
    "label": "NaN and Infinity stay text here",
}}))
