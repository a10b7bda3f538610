#!/bin/bash
# Same seed, same config, a deterministic evaluator and one worker give the
# same lineage and scores; another seed gives another run.
. "$(dirname "$0")/lib.sh"

q="select id, parent_id, other_parent_id, island, generation, iteration, mutator, status, coalesce(fitness, 'nan'), change_summary from programs order by id"
for name in a b; do
    expect_exit 0 "$KV" run --config "$TINY/config.yaml" --output "$WORK/$name" --iterations 30 --seed 5
    sql "$WORK/$name/run.db" "$q" >"$WORK/$name.rows"
done
expect_exit 0 "$KV" run --config "$TINY/config.yaml" --output "$WORK/c" --iterations 30 --seed 6
sql "$WORK/c/run.db" "$q" >"$WORK/c.rows"
[ "$(wc -l <"$WORK/a.rows")" -gt 30 ] || fail "too few programs stored"
diff "$WORK/a.rows" "$WORK/b.rows" >&2 || fail "two runs with the same seed differ"
! cmp -s "$WORK/a.rows" "$WORK/c.rows" || fail "a different seed gave the very same run"
echo "ok"
