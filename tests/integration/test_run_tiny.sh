#!/bin/bash
# A whole run through the binary: every iteration stored, lineage complete,
# children on the island they were sampled for, best/ written, status and
# best reporting the same best program, and a real improvement over the start.
. "$(dirname "$0")/lib.sh"

out="$WORK/run"
expect_exit 0 "$KV" run --config "$TINY/config.yaml" --output "$out" --iterations 40
db="$out/run.db"
[ -f "$db" ] || fail "no run.db"
[ -f "$out/best/best_program.py" ] || fail "no best/best_program.py"
[ -f "$out/logs/kevolve.log" ] || fail "no log file"

iters=$(sql "$db" "select count(distinct iteration) from programs where mutator != 'migration'")
[ "$iters" -eq 41 ] || fail "expected iterations 0..40 stored, got $iters distinct"
orphans=$(sql "$db" "select count(*) from programs c where c.parent_id != 0 and not exists (select 1 from programs p where p.id = c.parent_id)")
[ "$orphans" -eq 0 ] || fail "$orphans programs have a parent that is not stored"
# Children land on the island their iteration sampled for (iteration mod islands).
wrong=$(sql "$db" "select count(*) from programs where iteration > 0 and mutator != 'migration' and island != iteration % 3")
[ "$wrong" -eq 0 ] || fail "$wrong children are on another island than the one sampled for"
migrants=$(sql "$db" "select count(*) from programs where is_migrant = 1")
[ "$migrants" -gt 0 ] || fail "no migration happened in 40 iterations with migration_interval 6"
bad_migrants=$(sql "$db" "select count(*) from programs m join programs o on o.id = m.migrated_from where m.is_migrant = 1 and (o.is_migrant = 1 or o.island = m.island or o.source != m.source)")
[ "$bad_migrants" -eq 0 ] || fail "a migrant was migrated again, stayed home, or changed"

initial=$(sql "$db" "select fitness from programs where mutator = 'initial'")
best=$(sql "$db" "select max(fitness) from programs where status = 'ok'")
# Better than the start. How much better depends on the seed's trajectory:
# 40 children from 16 reached 18-28 of 30 over eleven seeds (2026-11-30),
# so a fixed margin would test the seed, not the search.
python3 -c "import sys; sys.exit(0 if float('$best') > float('$initial') else 1)" ||
    fail "no improvement: initial $initial, best $best"

expect_exit 0 "$KV" best "$db" -o "$WORK/best.py"
cmp -s "$WORK/best.py" "$out/best/best_program.py" || fail "kevolve best and best/ disagree"
expect_exit 0 "$KV" status "$db" --json
python3 - "$WORK/out.txt" "$best" <<'PY' || fail "status --json disagrees with the store"
import json, sys
s = json.load(open(sys.argv[1]))
assert abs(s["best"]["fitness"] - float(sys.argv[2])) < 1e-9, s["best"]
assert s["iterations_done"] == 40, s["iterations_done"]
assert sum(s["by_status"].values()) == s["programs"]
PY
expect_exit 0 "$KV" status "$out"
grep -q "^best " "$WORK/out.txt" || fail "status prints no best line"

# A second run into the same folder is refused without --force.
expect_exit 2 "$KV" run --config "$TINY/config.yaml" --output "$out" --iterations 2
grep -q "kevolve resume" "$WORK/err.txt" || fail "refusal does not point to resume"
echo "ok"
