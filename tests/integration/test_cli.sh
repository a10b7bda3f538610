#!/bin/bash
# The command line: help on every subcommand, exit codes, dry runs, and config
# errors that name the file, the line, the key and the nearest known key.
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

# config-keys documents the keys the loader reads.
expect_exit 0 "$KV" config-keys
for key in max_iterations migration_interval cascade_thresholds parallel_evaluations feature_bins; do
    grep -q "$key" "$WORK/out.txt" || fail "config-keys does not document $key"
done
echo "ok"
