#!/bin/bash
# The command line: help on every subcommand, exit codes, dry runs, config
# errors that name the file, the line, the key and the nearest known key, and
# the JSON of status and best.
. "$(dirname "$0")/lib.sh"

for cmd in run resume status best eval config-keys; do
    expect_exit 0 "$KV" "$cmd" --help
    grep -q "usage: kevolve $cmd" "$WORK/out.txt" || fail "$cmd --help prints no usage"
done
expect_exit 0 "$KV" --help
expect_exit 2 "$KV"
expect_exit 2 "$KV" frobnicate
grep -q "unknown command 'frobnicate'" "$WORK/err.txt" || fail "unknown command not named"
expect_exit 2 "$KV" run
grep -q -- "--config FILE is required" "$WORK/err.txt" || fail "missing --config not explained"
expect_exit 2 "$KV" run --config "$TINY/config.yaml" --iterations abc

# --dry-run prints the effective settings, overrides applied, and runs nothing.
expect_exit 0 "$KV" run --config "$TINY/config.yaml" --dry-run --iterations 7 --seed 99 -o "$WORK/o"
grep -q "max_iterations: 7" "$WORK/out.txt" || fail "dry run does not show the --iterations override"
grep -q "random_seed: 99" "$WORK/out.txt" || fail "dry run does not show the --seed override"
[ ! -e "$WORK/o" ] || fail "dry run created the output folder"

# A misspelt key: file:line, key, suggestion; exit 2.
cat >"$WORK/bad.yaml" <<'YAML'
max_iterations: 5
database:
  num_islands: 2
  migraton_interval: 4
YAML
expect_exit 2 "$KV" run --config "$WORK/bad.yaml" --dry-run
grep -q "bad.yaml:4" "$WORK/err.txt" || fail "error does not name the line: $(cat "$WORK/err.txt")"
grep -q "migraton_interval" "$WORK/err.txt" || fail "error does not name the key"
grep -q "migration_interval" "$WORK/err.txt" || fail "error does not suggest the nearest key"

# A wrong type.
printf 'max_iterations: ten\n' >"$WORK/bad2.yaml"
expect_exit 2 "$KV" run --config "$WORK/bad2.yaml" --dry-run
grep -q "bad2.yaml:1" "$WORK/err.txt" || fail "type error does not name the line"

# Status and best on something that is not a store (3), or nothing (2);
# tests/integration/test_exit_codes.sh checks every command.
echo "not a database" >"$WORK/junk.db"
expect_exit 3 "$KV" status "$WORK/junk.db"
expect_exit 2 "$KV" best "$WORK/missing.db"

# status --json gives numbers as numbers; best --json gives the best
# program as one object (its source inline, or in the -o file).
cat >"$WORK/run.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 6
random_seed: 77
YAML
expect_exit 0 "$KV" run --config "$WORK/run.yaml" --output "$WORK/run" -q
expect_exit 0 "$KV" status "$WORK/run" --json
cp "$WORK/out.txt" "$WORK/status.json"
expect_exit 0 "$KV" best "$WORK/run" --json
cp "$WORK/out.txt" "$WORK/best.json"
expect_exit 0 "$KV" best "$WORK/run" --json -o "$WORK/best.py"
cp "$WORK/out.txt" "$WORK/best_o.json"
python3 - "$WORK/run/run.db" "$WORK/status.json" "$WORK/best.json" "$WORK/best_o.json" "$WORK/best.py" <<'PY' ||
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
s = json.load(open(sys.argv[2]))
for key, want in (("random_seed", 77), ("max_iterations", 6), ("iterations_done", 6)):
    assert s[key] == want and type(s[key]) is int, (key, s[key])
assert isinstance(s["programs"], int) and isinstance(s["best"]["fitness"], float), s
best_id, fit, src, metrics, parent = db.execute(
    "select id, fitness, source, metrics, parent_id from programs where status = 'ok'"
    " order by fitness desc, id limit 1").fetchone()
b = json.load(open(sys.argv[3]))
assert (b["id"], b["fitness"], b["source"]) == (best_id, fit, src), b
assert b["metrics"] == json.loads(metrics) and b["parent_id"] == parent, b
assert b["id"] == s["best"]["id"]
bo = json.load(open(sys.argv[4]))
assert "source" not in bo and bo["output"] == sys.argv[5] and bo["id"] == best_id, bo
assert open(sys.argv[5]).read() == src
PY
    fail "status --json or best --json is wrong"

# config-keys documents the keys the loader reads.
expect_exit 0 "$KV" config-keys
for key in max_iterations migration_interval cascade_thresholds parallel_evaluations feature_bins; do
    grep -q "$key" "$WORK/out.txt" || fail "config-keys does not document $key"
done
echo "ok"
