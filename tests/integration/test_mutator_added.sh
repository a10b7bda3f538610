#!/bin/bash
# A mutator is one file and one line: builtin:digit (tests/tools/mutator_digit.c)
# is added to kevolve_extra_mutator by its file and its line in
# src/mutate/registry.c's table alone, and an evolution with it as the only
# arm makes children that are stored as its own and evaluated. The shipped
# kevolve, which lacks that line, refuses it and names the mutators it has.
. "$(dirname "$0")/lib.sh"
KVX=${KV_EXTRA_MUTATOR_BINARY:-${KV_BUILD_DIR:-}/tests/kevolve_extra_mutator}
[ -x "$KVX" ] || fail "no kevolve_extra_mutator binary (KV_EXTRA_MUTATOR_BINARY)"

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
random_seed: 7
database:
  num_islands: 2
evaluator:
  timeout: 10
  parallel_evaluations: 1
llm:
  models:
    - name: builtin:digit
      weight: 1
YAML

out="$WORK/run"
expect_exit 0 "$KVX" run --config "$WORK/config.yaml" --output "$out" --iterations 12
db="$out/run.db"
children=$(sql "$db" "select count(*) from programs where iteration > 0 and mutator != 'migration'")
[ "$children" -eq 12 ] || fail "expected 12 children, got $children"
other=$(sql "$db" "select count(*) from programs where iteration > 0 and mutator not in ('digit', 'migration')")
[ "$other" -eq 0 ] || fail "$other children were made by another mutator than digit"
bad=$(sql "$db" "select count(*) from programs where mutator = 'digit' and change_summary not like 'digit: %'")
[ "$bad" -eq 0 ] || fail "$bad digit children do not say what digit changed"
evaluated=$(sql "$db" "select count(distinct p.id) from programs p join evaluations e on e.program_id = p.id where p.mutator = 'digit' and p.status = 'ok' and e.status = 'ok'")
[ "$evaluated" -gt 0 ] || fail "no digit child was evaluated"
arm=$(sql "$db" "select draws from mutator_stats where arm = 'builtin:digit'")
[ "${arm:-0}" -gt 0 ] || fail "the bandit has no draws of builtin:digit"

# kevolve itself has no such line: the name is refused, with the known ones.
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/plain" --iterations 1
grep -q "builtin:digit" "$WORK/err.txt" || fail "the refusal does not name builtin:digit"
grep -q "known: builtin:tune, builtin:gi, builtin:crossover" "$WORK/err.txt" ||
    fail "the refusal does not list the registered mutators"
echo "ok"
