"""Evaluator of the toy task, an OpenEvolve module run unchanged by both
systems. Each evaluation appends one line to $BENCH_EVAL_LOG, so that the
benchmark can count the children evaluated, whatever the controller stored."""
import importlib.util
import math
import os

TARGETS = [7.0, 10.0, 1.0, 500.0, 64.0, 2.0]


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    values = program.params()
    err = sum(abs(math.log(max(v, 1e-9) / t)) for v, t in zip(values, TARGETS))
    log = os.environ.get("BENCH_EVAL_LOG")
    if log:
        with open(log, "a") as f:
            f.write("%d %.6f\n" % (os.getpid(), err))
    return {"combined_score": 1.0 / (1.0 + err), "error_sum": err}
