#!/usr/bin/env python3
"""Evaluator of the matmul example in Python: the same protocol as evaluator.sh
(kevolve runs `evaluator.py PROGRAM.c` and reads one JSON object from stdout),
to show that an evaluator can be written in any language. A candidate that
does not compile or crashes is a failure: {"error": WHY, "artifacts":
{"reason": CODE, ...}}, stored failed and never bred from."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    program = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        binary = os.path.join(work, "bin")
        cc = subprocess.run(
            ["cc", "-O2", "-std=c11", "-o", binary, program, os.path.join(HERE, "harness.c"), "-lm"],
            capture_output=True, text=True)
        if cc.returncode != 0:
            print(json.dumps({"error": "the candidate does not compile (the compiler's "
                                       "messages are in artifacts.compiler)",
                              "metrics": {"correct": 0},
                              "artifacts": {"reason": "compile_error", "compiler": cc.stderr[-4000:],
                                            "evaluator": "python"}}))
            return 0
        n = os.environ.get("MATMUL_N", "256")
        reps = os.environ.get("MATMUL_REPEATS", "3")
        run = subprocess.run([binary, n, reps], capture_output=True, text=True)
        if run.returncode != 0:
            print(json.dumps({"error": f"the candidate crashed (harness exit status {run.returncode})",
                              "metrics": {"correct": 0},
                              "artifacts": {"reason": "crash", "stderr": run.stderr[-4000:],
                                            "evaluator": "python"}}))
            return 0
        result = json.loads(run.stdout)
        result["artifacts"]["evaluator"] = "python"
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
