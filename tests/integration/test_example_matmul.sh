#!/bin/bash
# The shipped example: the built-in mutators measurably speed up the matmul
# within a short run (speedup over the naive loop, timed side by side), and
# the Python evaluator speaks the same protocol.
. "$(dirname "$0")/lib.sh"

ex=$KV_SOURCE_DIR/examples/matmul_c
expect_exit 0 "$KV" run --config "$ex/config.yaml" --output "$WORK/sh" --iterations 30
db="$WORK/sh/run.db"
initial=$(sql "$db" "select fitness from programs where mutator = 'initial'")
best=$(sql "$db" "select max(fitness) from programs where status = 'ok'")
python3 -c "import sys; sys.exit(0 if float('$best') >= 1.3 * float('$initial') else 1)" ||
    fail "the built-in mutators did not improve the example: initial $initial, best $best"

MATMUL_N=96 expect_exit 0 "$KV" run --config "$ex/config_python_evaluator.yaml" --output "$WORK/py" --iterations 4
sql "$WORK/py/run.db" "select value from artifacts where name = 'evaluator'" | grep -q python ||
    fail "the Python evaluator's artifact is missing"
[ "$(sql "$WORK/py/run.db" "select count(*) from programs where status = 'ok'")" -ge 2 ] ||
    fail "the Python evaluator evaluated too few programs"
echo "ok"
