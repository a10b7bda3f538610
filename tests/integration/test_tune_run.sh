#!/bin/bash
# tune through the binary: a run refuses an initial program whose tune
# annotation is malformed (naming the file and line), and in a run an axis
# with a condition is moved only in children where the condition holds.
. "$(dirname "$0")/lib.sh"

cp "$TINY/evaluator.sh" "$TINY/config.yaml" "$WORK/"
cfg=$WORK/config.yaml
# The fixed mix of the built-in mutators (this tests tune, not the bandit).
printf 'llm:\n  bandit: false\n' >>"$cfg"

# A condition naming no parameter is an error, not a silently idle axis.
cat >"$WORK/initial.py" <<'PY'
# EVOLVE-BLOCK-START
A = 5  # kevolve: tune 1 2 3 4 5 6 7 8
B = 8  # kevolve: tune 1 2 3 4 5 6 7 8
C = 3  # kevolve: tune 1 2 3 4 5 6 7 8
D = 1  # kevolve: tune 1 2 3 4 when AA >= 6
# EVOLVE-BLOCK-END
print(A, B, C, D)
PY
expect_exit 2 "$KV" run --config "$cfg" --output "$WORK/bad" --iterations 3
grep -q "initial.py: line 5: kevolve: tune: when AA >= 6: no tune parameter named AA" \
    "$WORK/err.txt" || fail "no message naming the line: $(cat "$WORK/err.txt")"
[ ! -f "$WORK/bad/run.db" ] || [ "$(sql "$WORK/bad/run.db" "select count(*) from programs")" = 0 ] ||
    fail "programs were evaluated from a malformed initial program"

sed -i 's/when AA >= 6/when A >= 6/' "$WORK/initial.py"
expect_exit 0 "$KV" run --config "$cfg" --output "$WORK/run" --iterations 40
db=$WORK/run/run.db
python3 - "$db" <<'PY' || fail "a conditional axis moved where its condition did not hold"
import re, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = con.execute("select change_summary, source from programs where mutator = 'tune'").fetchall()
moved_d = multi = 0
for summary, source in rows:
    entries = summary[len("tune: "):].split("; ")
    multi += len(entries) > 1
    if any(e.startswith("D ") for e in entries):
        moved_d += 1
        a = int(re.search(r"^A = (\d+)", source, re.M).group(1))
        assert a >= 6, (summary, a)
assert moved_d > 0, "D never moved: the condition was never met in 40 children"
assert multi > 0, "no tune child moved more than one axis"
print(f"ok: {len(rows)} tune children, {moved_d} moved D, {multi} moved several axes")
PY
