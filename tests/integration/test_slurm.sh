#!/bin/bash
# evaluator.launcher: slurm on a real one-node Slurm (Debian's slurmctld,
# slurmd and munge, started for this test by scripts/slurm-local.sh and
# stopped after it):
# 1. a kernel-task run (softmax on the cpu backend) whose every evaluation
#    is a job step of the allocation kevolve runs in: each stored with its
#    job and step, the seed correct, the device lock named after the host;
# 2. an evaluation whose step is cancelled from outside (scancel, as an
#    administrator or a preemption would) is started again and stored with
#    the evaluator's answer, never as the candidate's failure;
# 3. an interrupted run (SIGINT) leaves no step of kevolve's behind.
# Skips (77), saying why, where Slurm cannot start (not root, packages
# missing: scripts/install-deps.sh installs them).
. "$(dirname "$0")/lib.sh"

why=$("$KV_SOURCE_DIR/scripts/slurm-local.sh" why-not)
if [ -n "$why" ]; then
    echo "SKIP: no Slurm here: $why"
    exit 77
fi
SL=$WORK/slurm
trap '"$KV_SOURCE_DIR/scripts/slurm-local.sh" stop "$SL" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
line=$("$KV_SOURCE_DIR/scripts/slurm-local.sh" start "$SL" 2>"$WORK/slurm.err") ||
    fail "Slurm did not start: $(cat "$WORK/slurm.err")"
eval "$line"
export SLURM_CONF
steps() { squeue -h -s -o '%i %j' 2>/dev/null | grep -c kevolve-eval || true; }
# wait_for_step ERRFILE: until one of kevolve's steps runs (fails after 20 s).
wait_for_step() {
    for _ in $(seq 1 100); do
        [ "$(steps)" -ge 1 ] && return 0
        sleep 0.2
    done
    fail "the evaluation never became a step: $(cat "$1")"
}

# 1. A kernel-task run inside an allocation (salloc), every evaluation a step.
cat >"$WORK/kernel.yaml" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c
max_iterations: 3
random_seed: 7
evaluator:
  task: softmax
  backend: cpu
  quick: true
  timeout: 120
  parallel_evaluations: 2
  launcher: slurm
  slurm_time: 300
YAML
expect_exit 0 salloc --quiet -n 2 --time=10 "$KV" run --config "$WORK/kernel.yaml" \
    --output "$WORK/kernel"
db="$WORK/kernel/run.db"
n=$(sql "$db" "select count(*) from programs where mutator != 'migration'")
[ "$n" -eq 4 ] || fail "expected the seed and 3 children stored, got: $(sql "$db" "select id, status, reason_code from programs")"
seed=$(sql "$db" "select status from programs where mutator = 'initial'")
[ "$seed" = ok ] || fail "the seed was not correct through Slurm: $seed"
sql "$db" "select a.value from artifacts a where a.name = 'slurm'" >"$WORK/slurm_artifacts.txt"
python3 - "$WORK/slurm_artifacts.txt" "$n" <<'PY' || fail "evaluations without their Slurm step: $(cat "$WORK/slurm_artifacts.txt")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[2])
# every evaluation that reached the judge (a duplicate by artifact may not)
assert len(rows) >= 1 and len(rows) <= n, rows
jobs = {r["job"] for r in rows}
steps = {(r["job"], r["step"]) for r in rows}
assert len(jobs) == 1, f"every step in the one allocation: {jobs}"
assert len(steps) == len(rows), f"each evaluation a step of its own: {rows}"
assert all(r.get("node") for r in rows), rows
PY
host=$(hostname)
ls "$HOME/.cache/kevolve/kernels/device-cpu-0-$host.lock" >/dev/null 2>&1 ||
    ls "${KEVOLVE_CACHE_DIR:-$HOME/.cache/kevolve/kernels}"/device-cpu-0-"$host"*.lock >/dev/null 2>&1 ||
    fail "no device lock named after the host $host"
[ "$(steps)" -eq 0 ] || fail "steps left running after the run: $(squeue -s)"

# 2. A step cancelled from outside: the evaluator below takes 20 s on its
# first call for a program and answers at once after; the test cancels
# that step while it runs.
cat >"$WORK/slow_once.sh" <<'SH'
#!/bin/sh
mark="$1.seen"
if [ ! -e "$mark" ]; then
    : >"$mark"
    sleep 20
fi
echo '{"combined_score": 1.5}'
SH
chmod +x "$WORK/slow_once.sh"
printf 'x = 1\n' >"$WORK/start.py"
cat >"$WORK/external.yaml" <<YAML
initial_program: $WORK/start.py
evaluator: $WORK/slow_once.sh
max_iterations: 0
evaluator:
  timeout: 60
  max_retries: 0
  launcher: slurm
YAML
KEVOLVE_KEEP_PROGRAMS=1 "$KV" run --config "$WORK/external.yaml" --output "$WORK/external" \
    >"$WORK/external.out" 2>"$WORK/external.err" &
run=$!
wait_for_step "$WORK/external.err"
sleep 1
step=$(squeue -h -s -o '%i %j' | awk '/kevolve-eval/ {print $1; exit}')
scancel "$step"
wait "$run" || fail "the run failed after its step was cancelled: $(cat "$WORK/external.err")"
grep -q "the launcher lost its run" "$WORK/external.err" ||
    fail "the lost run was not reported: $(cat "$WORK/external.err")"
row=$(sql "$WORK/external/run.db" "select status, fitness from programs where mutator = 'initial'")
[ "$row" = "ok|1.5" ] || fail "the evaluation lost to Slurm was not started again: $row"

# 3. An interrupted run leaves no step behind.
cat >"$WORK/sleepy.sh" <<'SH'
#!/bin/sh
sleep 60
echo '{"combined_score": 1}'
SH
chmod +x "$WORK/sleepy.sh"
sed "s|$WORK/slow_once.sh|$WORK/sleepy.sh|" "$WORK/external.yaml" >"$WORK/sleepy.yaml"
"$KV" run --config "$WORK/sleepy.yaml" --output "$WORK/sleepy" >/dev/null 2>"$WORK/sleepy.err" &
run=$!
wait_for_step "$WORK/sleepy.err"
kill -INT "$run"
sleep 0.5
kill -INT "$run" 2>/dev/null || true # the second interrupt stops at once
wait "$run" || true
for _ in $(seq 1 50); do
    [ "$(steps)" -eq 0 ] && break
    sleep 0.2
done
[ "$(steps)" -eq 0 ] || fail "an interrupted run left its step: $(squeue -s)"
echo "ok"
