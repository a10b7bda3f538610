#!/bin/bash
# Several starting programs (initial_programs): each is evaluated and stored
# as an initial program on island i mod num_islands, the run goes on from
# all of them (islands past the seeds start from any island's programs), a
# seed that fails among good ones is stored failed while the others run, a
# malformed one stops the run before it starts, the single-program key and
# the list cannot be mixed, and a program named on the command line
# replaces the list.
. "$(dirname "$0")/lib.sh"

cp "$TINY/evaluator.sh" "$TINY/initial.py" "$WORK/"
cp "$TINY/initial.py" "$WORK/a.py"                                        # score 30-6-6-2 = 16
sed -e 's/^A = 1 /A = 6 /' -e 's/^B = 8 /B = 3 /' "$TINY/initial.py" >"$WORK/b.py" # 30-1-1-2 = 26
config() { # PROGRAMS-LINE
    cat >"$WORK/config.yaml" <<EOF
$1
evaluator: evaluator.sh
max_iterations: 6
random_seed: 7
database:
  num_islands: 3
  population_size: 50
  feature_dimensions: [complexity, a]
  feature_bins: 4
  migration_interval: 100
evaluator:
  timeout: 10
  parallel_evaluations: 2
EOF
}

config "initial_programs: [a.py, b.py]"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --dry-run
grep -q "$WORK/a.py" "$WORK/out.txt" && grep -q "$WORK/b.py" "$WORK/out.txt" ||
    fail "--dry-run does not show both programs as absolute paths: $(cat "$WORK/out.txt")"

out="$WORK/run"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$out"
db="$out/run.db"
seeds=$(sql "$db" "select island, iteration, status, fitness from programs where mutator = 'initial' order by island")
[ "$seeds" = "$(printf '0|0|ok|16.0\n1|0|ok|26.0')" ] ||
    fail "want a.py on island 0 (16) and b.py on island 1 (26), got: $seeds"
[ "$(sql "$db" "select source from programs where mutator = 'initial' and island = 1")" = "$(cat "$WORK/b.py")" ] ||
    fail "island 1's initial program is not b.py"
children=$(sql "$db" "select count(*) from programs where iteration > 0")
[ "$children" -ge 6 ] || fail "expected 6 children, got $children"
# Island 2 had no seed: its children descend from the other islands' programs.
[ "$(sql "$db" "select count(*) from programs where island = 2 and iteration > 0")" -ge 1 ] ||
    fail "no child on the island without a seed"
best=$(sql "$db" "select max(fitness) from programs where status = 'ok'")
python3 -c "import sys; sys.exit(0 if float('$best') >= 26 else 1)" || fail "best $best is below b.py's 26"
grep -q "initial programs: 2 of 2 evaluated" "$out/logs/kevolve.log" || fail "the log does not report both seeds"

# A seed that fails its evaluation among good ones: stored failed with its
# reason, warned about, and the run goes on from the others.
cat >"$WORK/failing_evaluator.sh" <<'EOF'
#!/bin/sh
grep -q FAIL_ME "$1" && { echo "this seed is broken" >&2; exit 3; }
exec sh "$(dirname "$0")/evaluator.sh" "$1"
EOF
{ cat "$WORK/a.py"; echo "# FAIL_ME"; } >"$WORK/c.py"
config "initial_programs: [c.py, b.py]"
sed -i 's/^evaluator: evaluator.sh/evaluator: failing_evaluator.sh/' "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run2" --iterations 2
[ "$(sql "$WORK/run2/run.db" "select status != 'ok' from programs where mutator = 'initial' order by island")" = "$(printf '1\n0')" ] ||
    fail "the failing seed was not stored as failed beside the good one"
grep -q "initial program 1 of 2 did not evaluate" "$WORK/err.txt" ||
    fail "no warning names the failing seed: $(cat "$WORK/err.txt")"

# Every seed failing: the run cannot start.
config "initial_programs: [c.py]"
sed -i 's/^evaluator: evaluator.sh/evaluator: failing_evaluator.sh/' "$WORK/config.yaml"
expect_exit 1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run3" --iterations 2

# A malformed seed is a usage error before anything runs, naming the file.
printf '# EVOLVE-BLOCK-START\nA = 1\n' >"$WORK/bad.py"
config "initial_programs: [b.py, bad.py]"
expect_exit 2 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run6" --iterations 2
grep -q "bad.py" "$WORK/err.txt" || fail "the error does not name the malformed seed: $(cat "$WORK/err.txt")"

# Not both keys.
config "$(printf 'initial_program: a.py\ninitial_programs: [b.py]')"
expect_exit 2 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run4"
grep -q "initial_programs" "$WORK/err.txt" || fail "the error does not name initial_programs: $(cat "$WORK/err.txt")"

# A program on the command line replaces the list.
config "initial_programs: [a.py, b.py]"
expect_exit 0 "$KV" run "$WORK/b.py" --config "$WORK/config.yaml" --output "$WORK/run5" --iterations 1
[ "$(sql "$WORK/run5/run.db" "select count(*) from programs where mutator = 'initial'")" = 1 ] ||
    fail "the command line's program did not replace initial_programs"
echo "ok"
