#!/bin/bash
# Seeds of one design each, sharing their text outside a decode and a
# prefill block (as tasks/gqa_attention/cuda's design seeds): a run started
# from them on two islands pairs them. Migration brings one island's seed to
# the other, and crossover gives a child the decode block of one and the
# prefill block of the other: the program that neither seed is, and that
# scores best. The same with the gqa seeds' own text is in test_gqa_seeds.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/decode.py" <<'EOF'
# One design per block: the evaluator doubles the score of each block that
# holds its design rather than the fallback.
# EVOLVE-BLOCK-START decode
DECODE = "design"
# EVOLVE-BLOCK-END
# EVOLVE-BLOCK-START prefill
PREFILL = "fallback"
# EVOLVE-BLOCK-END
print(DECODE, PREFILL)
EOF
sed -e 's/^DECODE = "design"/DECODE = "fallback"/' -e 's/^PREFILL = "fallback"/PREFILL = "design"/' \
    "$WORK/decode.py" >"$WORK/prefill.py"
cat >"$WORK/evaluator.sh" <<'EOF'
#!/bin/sh
exec awk '/^DECODE = "design"/ { d = 1 } /^PREFILL = "design"/ { p = 1 }
END { printf "{\"metrics\": {\"combined_score\": %d}}\n", (1 + d) * (1 + p) }' "$1"
EOF
chmod +x "$WORK/evaluator.sh"
cat >"$WORK/config.yaml" <<'EOF'
initial_programs: [decode.py, prefill.py]
evaluator: evaluator.sh
max_iterations: 30
random_seed: 3
llm:
  models:
    - name: builtin:crossover
      weight: 1
    - name: builtin:gi
      weight: 1
database:
  num_islands: 2
  population_size: 20
  migration_interval: 2
evaluator:
  timeout: 10
  parallel_evaluations: 1
EOF

expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run" -q
db=$WORK/run/run.db
[ "$(sql "$db" "select group_concat(fitness) from programs where mutator = 'initial' order by island")" = "2.0,2.0" ] ||
    fail "each seed should score 2: $(sql "$db" "select island, fitness from programs where mutator = 'initial'")"
[ "$(sql "$db" "select count(*) from programs where is_migrant = 1")" -ge 1 ] || fail "no migration"
paired=$(sql "$db" "select id from programs where mutator = 'crossover' and status = 'ok' and fitness = 4 order by id limit 1")
[ -n "$paired" ] || fail "no crossover paired the decode design with the prefill design: $(sql "$db" \
    "select id, island, mutator, fitness, status, reason_code from programs order by id")"
src=$(sql "$db" "select source from programs where id = $paired")
want=$(sed 's/^PREFILL = "fallback"/PREFILL = "design"/' "$WORK/decode.py")
[ "$src" = "$want" ] || fail "the paired child is not the decode seed with the prefill seed's block: $src"
# Its parents are the two designs (either order): one holds the decode design,
# the other the prefill design.
parents=$(sql "$db" "select ((select source from programs where id = c.parent_id) like '%DECODE = \"design\"%')
    + ((select source from programs where id = c.other_parent_id) like '%DECODE = \"design\"%')
    from programs c where c.id = $paired")
[ "$parents" = 1 ] || fail "program $paired's parents are not one of each design"
