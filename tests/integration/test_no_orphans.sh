#!/bin/bash
# Nothing an evaluation starts outlives it, nor kevolve: an evaluator that
# leaves a process behind in a new session (setsid) from a double fork, where
# no process-group kill reaches it, loses it when its evaluation ends, and
# when kevolve is killed with kill -9 in the middle of an evaluation.
. "$(dirname "$0")/lib.sh"

# The evaluator writes the escaped process's pid to $KV_TEST_PIDS/<n>.pid
# (one file per evaluation), then scores the program like the tiny one.
cat >"$WORK/evaluator.sh" <<'SH'
#!/bin/sh
n=$(date +%s%N)
( setsid sh -c "echo \$\$ > '$KV_TEST_PIDS/$n.tmp'; mv '$KV_TEST_PIDS/$n.tmp' '$KV_TEST_PIDS/$n.pid'; exec sleep 1000" & )
while [ ! -f "$KV_TEST_PIDS/$n.pid" ]; do sleep 0.02; done
[ -n "${KV_TEST_HANG:-}" ] && { echo $$ > "$KV_TEST_PIDS/evaluator.pid"; exec sleep 1000; }
exec sh "$TINY_EVALUATOR" "$1"
SH
chmod +x "$WORK/evaluator.sh"
export TINY_EVALUATOR=$TINY/evaluator.sh
export KV_TEST_PIDS=$WORK/pids
mkdir -p "$KV_TEST_PIDS"
cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $WORK/evaluator.sh
max_iterations: 4
random_seed: 5
database:
  num_islands: 1
evaluator:
  timeout: 30
  parallel_evaluations: 1
YAML

# alive PIDFILE...: prints the pids of the files that still run.
alive() {
    for f in "$@"; do
        p=$(cat "$f")
        if kill -0 "$p" 2>/dev/null; then echo "$p"; fi
    done
}

# 1. Evaluations that end normally take their escapees with them.
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run1" -q
n=$(ls "$KV_TEST_PIDS"/*.pid | wc -l)
evaluated=$(sql "$WORK/run1/run.db" "select count(*) from programs where is_migrant = 0
    and status not in ('duplicate', 'rejected')")
[ "$evaluated" -ge 2 ] && [ "$n" -ge "$evaluated" ] ||
    fail "expected an escaped process per evaluation ($evaluated), found $n"
left=$(alive "$KV_TEST_PIDS"/*.pid)
[ -z "$left" ] || fail "processes left behind by finished evaluations: $left"
rm -f "$KV_TEST_PIDS"/*

# 2. kill -9 of kevolve while an evaluation hangs: the evaluator and its
# escapee die within seconds.
KV_TEST_HANG=1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run2" -q &
pid=$!
for _ in $(seq 1 500); do
    [ -f "$KV_TEST_PIDS/evaluator.pid" ] && break
    sleep 0.02
done
[ -f "$KV_TEST_PIDS/evaluator.pid" ] || fail "the evaluator never started"
escaped=$(alive "$KV_TEST_PIDS"/*[0-9].pid)
[ -n "$escaped" ] || fail "the escaped process is not running before the kill"
kill -9 $pid
wait $pid 2>/dev/null || true
for _ in $(seq 1 500); do
    left=$(alive "$KV_TEST_PIDS"/*.pid)
    [ -z "$left" ] && break
    sleep 0.02
done
[ -z "$left" ] || fail "processes outlived kevolve's kill -9 by 10 s: $left"
echo "ok"
