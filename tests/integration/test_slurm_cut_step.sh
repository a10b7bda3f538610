#!/bin/bash
# A Slurm step ended from outside while its evaluator ran on, without Slurm
# (a stand-in srun, evaluator.srun): srun can exit 0 after a cancel when the
# signal killed a child of the evaluator but not the evaluator, which then
# answered from a cut run (seen in test_slurm under load). Such a run is
# lost: started again, the answer stored the second run's, and said so.
# srun's start-up retry messages before a step that then runs do not make
# a run lost.
. "$(dirname "$0")/lib.sh"

# The stand-in: drops srun's options up to "--", runs the rest, and on its
# first call says what srun and slurmstepd say after a cancel, exiting 0.
cat >"$WORK/srun" <<'SH'
#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
if [ -n "${CUT_MARK:-}" ] && [ ! -e "$CUT_MARK" ]; then
    : >"$CUT_MARK"
    "$@"
    echo "srun: Job step aborted: Waiting up to 32 seconds for job step to finish." >&2
    echo "slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT 2026-12-03T05:01:53 ***" >&2
    echo "Killed" >&2
    exit 0
fi
[ -z "${RETRY_NOTE:-}" ] || echo "srun: Job step creation temporarily disabled, retrying (Requested nodes are busy)" >&2
exec "$@"
SH
chmod +x "$WORK/srun"
# The evaluator answers 0.25 while its stand-in step is being cut, 1.5 after.
cat >"$WORK/eval.sh" <<'SH'
#!/bin/sh
if [ -n "${CUT_MARK:-}" ] && [ ! -e "$CUT_MARK.answered" ]; then
    : >"$CUT_MARK.answered"
    echo '{"combined_score": 0.25}'
else
    echo '{"combined_score": 1.5}'
fi
SH
chmod +x "$WORK/eval.sh"
printf 'x = 1\n' >"$WORK/start.py"
cat >"$WORK/cut.yaml" <<YAML
initial_program: $WORK/start.py
evaluator: $WORK/eval.sh
max_iterations: 0
evaluator:
  timeout: 60
  max_retries: 0
  launcher: slurm
  srun: $WORK/srun
YAML

# 1. The cut run that exited 0 is started again; its answer is not kept.
CUT_MARK=$WORK/cut.mark expect_exit 0 "$KV" run --config "$WORK/cut.yaml" --output "$WORK/cut"
grep -q "the launcher lost its run (slurmstepd-n1: error: \*\*\* STEP 4.0 ON n1 CANCELLED AT" \
    "$WORK/err.txt" || fail "the cut run was not reported as lost: $(cat "$WORK/err.txt")"
[ -e "$WORK/cut.mark.answered" ] || fail "the evaluator never ran in the cut step"
got=$(sql "$WORK/cut/run.db" "select status, fitness from programs where mutator = 'initial'")
[ "$got" = "ok|1.5" ] || fail "the stored verdict is not the second run's: $got"

# 2. srun's retry message before a step that then ran: the answer stands.
RETRY_NOTE=1 expect_exit 0 "$KV" run --config "$WORK/cut.yaml" --output "$WORK/retry"
! grep -q "lost its run" "$WORK/err.txt" || fail "a retried start counted as lost: $(cat "$WORK/err.txt")"
got=$(sql "$WORK/retry/run.db" "select status, fitness from programs where mutator = 'initial'")
[ "$got" = "ok|1.5" ] || fail "the run after srun's retry was not stored: $got"
echo "PASS"
