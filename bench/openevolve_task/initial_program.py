# A toy task for bench/openevolve_side_by_side.sh: the score peaks when the
# parameters reach their targets, so the fake model's edits (scaling one
# parameter) can improve it. Cheap to evaluate on purpose: the benchmark
# measures the controllers, not the evaluator.
# EVOLVE-BLOCK-START
ALPHA = 3.0
BETA = 40.0
GAMMA = 0.25
STEPS = 120
WIDTH = 16
DEPTH = 5.0


def params():
    return [ALPHA, BETA, GAMMA, STEPS, WIDTH, DEPTH]


# EVOLVE-BLOCK-END
