#!/bin/bash
# External evaluators say "this program failed, for this reason" as
# OpenEvolve's do: an "error" (why) and artifacts.reason (its code). The
# shipped examples/matmul_c evaluators (shell and Python) say so for a
# candidate that does not compile, computes a wrong result or crashes; such
# a program is stored failed with that code and message, counted as a
# failure by `kevolve status`, and never bred from (no child names it as a
# parent or a second parent), while the run goes on from the good one.
. "$(dirname "$0")/lib.sh"

ex=$KV_SOURCE_DIR/examples/matmul_c
export MATMUL_N=48 MATMUL_REPEATS=1
# Two starting programs that fail, beside the example's own, each with
# EVOLVE-BLOCKs so that only the evaluation can fail them.
sed 's/double s = C\[(size_t)i \* n + j\];/double s = 1.0 + C[(size_t)i * n + j];/' \
    "$ex/initial_program.c" >"$WORK/wrong.c"
sed 's/^    if (LOOP_ORDER == 1)$/    if (LOOP_ORDER == 1) undeclared_name++;/' \
    "$ex/initial_program.c" >"$WORK/broken.c"
cmp -s "$WORK/wrong.c" "$ex/initial_program.c" && fail "wrong.c is the example unchanged"
cmp -s "$WORK/broken.c" "$ex/initial_program.c" && fail "broken.c is the example unchanged"

# check_run DB: the failed starts are stored failed with their codes and
# messages, and nothing descends from them.
check_run() {
    python3 - "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = {src_key: (pid, st, code, reason) for pid, st, code, reason, src_key in con.execute(
    "select id, status, reason_code, status_reason,"
    " case when source like '%undeclared_name++%' then 'broken'"
    "      when source like '%1.0 + C[%' then 'wrong' else 'good' end"
    " from programs where mutator = 'initial'")}
assert rows["good"][1] == "ok", rows
assert rows["broken"][1:3] == ("failed", "compile_error"), rows["broken"]
assert "does not compile" in rows["broken"][3], rows["broken"]
assert rows["wrong"][1:3] == ("failed", "wrong_result"), rows["wrong"]
assert rows["wrong"][3].startswith("wrong result at n="), rows["wrong"]
failed = {rows["broken"][0], rows["wrong"][0]}
bred = con.execute("select id, parent_id, other_parent_id from programs where parent_id in (?, ?)"
                   " or other_parent_id in (?, ?)", (*failed, *failed)).fetchall()
assert not bred, ("children of a failed program", bred)
children = con.execute("select count(*) from programs where iteration > 0").fetchone()[0]
assert children >= 8, ("the run did not go on", children)
PY
}

cat >"$WORK/config.yaml" <<YAML
initial_programs: [$ex/initial_program.c, $WORK/wrong.c, $WORK/broken.c]
evaluator: $ex/evaluator.sh
max_iterations: 10
random_seed: 5
language: c
database:
  num_islands: 3
  feature_dimensions: [complexity, speedup]
  feature_bins: 4
evaluator:
  timeout: 30
  parallel_evaluations: 2
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/sh" -q
check_run "$WORK/sh/run.db" || fail "the shell evaluator's failures were not kept apart"

expect_exit 0 "$KV" status "$WORK/sh" --json
python3 - "$WORK/out.txt" <<'PY' || fail "status does not count the failures by their codes"
import json, sys
s = json.load(open(sys.argv[1]))
codes = {r["reason"] for r in s["failure_reasons"] if r["status"] == "failed"}
assert {"compile_error", "wrong_result"} <= codes, codes
assert s["by_status"]["failed"] >= 2, s["by_status"]
PY

# The Python evaluator speaks the same protocol.
sed "s#^evaluator: .*#evaluator: $ex/evaluator.py#" "$WORK/config.yaml" >"$WORK/py.yaml"
expect_exit 0 "$KV" run --config "$WORK/py.yaml" --output "$WORK/py" -q
check_run "$WORK/py/run.db" || fail "the Python evaluator's failures were not kept apart"

# A candidate that crashes: failed with the code crash, from both evaluators.
sed 's/^    if (LOOP_ORDER == 1)$/    *(volatile int *)0 = 1;\n    if (LOOP_ORDER == 1)/' \
    "$ex/initial_program.c" >"$WORK/crash.c"
for evaluator in evaluator.sh evaluator.py; do
    out=$("$ex/$evaluator" "$WORK/crash.c")
    python3 -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["artifacts"]["reason"] == "crash" and r["error"], r' \
        "$out" || fail "$evaluator does not report a crash as a failure: $out"
done
echo "ok"
