#!/usr/bin/env python3
# Test evaluator: scores the tiny program (tests/data/tiny) as its own
# evaluator does (30 - |A-7| - |B-2| - |C-5|; 0 when one is missing), but
# fails, deterministically, on children of odd iterations (the program file
# is named "<iteration>.py"), in a way picked by the iteration mod 12:
#    1: exits 1 (a crash)               3: reports {"error": ...}
#    5: combined_score NaN              7: combined_score Infinity
#    9: a harness-style verdict "rejected" with reason wrong_result
#   11: prints something that is not JSON
# It also appends one line per evaluation to $KEVOLVE_RUN_DIR/env.log:
# "<program file>|<run dir>|<parent metrics file content or 'none'>".
import json
import os
import re
import sys

src = open(sys.argv[1]).read()
vals = {k: int(v) for k, v in re.findall(r"^([ABC]) = (\d+)", src, re.M)}
run_dir = os.environ.get("KEVOLVE_RUN_DIR", "")
parent = os.environ.get("KEVOLVE_PARENT_METRICS")
parent_text = open(parent).read().strip() if parent else "none"
name = os.path.basename(sys.argv[1])
if run_dir:
    with open(os.path.join(run_dir, "env.log"), "a") as f:
        f.write(f"{name}|{run_dir}|{parent_text}\n")
m = re.match(r"(\d+)\.py$", name)
k = int(m.group(1)) % 12 if m else 0
if k == 1:
    print(f"evaluator: cannot go on at iteration {name}", file=sys.stderr)
    sys.exit(1)
if k == 3:
    print(json.dumps({"error": f"iteration {name} is not allowed"}))
    sys.exit(0)
if k == 11:
    print("this is not JSON")
    sys.exit(0)
a, b, c = vals.get("A"), vals.get("B"), vals.get("C")
score = 0 if None in (a, b, c) else 30 - abs(a - 7) - abs(b - 2) - abs(c - 5)
metrics = {"combined_score": score, "a": a if a is not None else 0}
artifacts = {"params": f"{a} {b} {c}"}
if k == 5:
    metrics["combined_score"] = float("nan")
if k == 7:
    metrics["combined_score"] = float("inf")
if k == 9:
    metrics = {"combined_score": 0, "correct": 0}
    artifacts.update(verdict="rejected", reason="wrong_result",
                     reason_detail="output[3] = 1.5, expected 2.0")
print(json.dumps({"metrics": metrics, "artifacts": artifacts}))
