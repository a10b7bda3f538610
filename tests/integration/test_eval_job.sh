#!/bin/bash
# One typed job from the command line to the device: `kevolve eval`'s
# options write one job document (--print-job), `--job FILE` runs one (what
# a run hands its workers), a broken job is refused naming its key, the
# job's one budget (limits.total_s) bounds the whole evaluation whatever
# the per-call limit, and `kevolve devices` lists what each backend sees
# (the indices a job's device names).
. "$(dirname "$0")/lib.sh"
export KEVOLVE_CACHE_DIR="$WORK/cache"
base="$KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c"

# devices: the cpu backend is always there, as device 0.
expect_exit 0 "$KV" devices
grep -q "^cpu:" "$WORK/out.txt" || fail "kevolve devices lists no cpu backend: $(cat "$WORK/out.txt")"
expect_exit 0 "$KV" devices --json --backend cpu
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[0]["backend"] == "cpu" and d[0]["devices"][0]["index"] == 0, d' \
    "$WORK/out.txt" || fail "kevolve devices --json: $(cat "$WORK/out.txt")"
expect_exit 2 "$KV" devices --backend metal
grep -q "unknown backend 'metal' (cpu, opencl, cuda or auto)" "$WORK/err.txt" ||
    fail "no message naming the backends: $(cat "$WORK/err.txt")"

# The options write a job; running it gives the same kind of verdict.
expect_exit 0 "$KV" eval --task softmax --backend cpu --quick --timeout 120 --kernel-timeout 4 \
    --scenarios decode,square --print-job "$base"
cp "$WORK/out.txt" "$WORK/job.json"
python3 - "$WORK/job.json" "$base" <<'PY' || fail "the printed job: $(cat "$WORK/job.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["task"] == "softmax" and j["backend"] == "cpu" and j["candidate"] == sys.argv[2], j
assert j["limits"]["total_s"] == 120 and j["limits"]["call_s"] == 4, j["limits"]
assert j["scenarios"] == ["decode", "square"] and j["quick"] is True, j
PY
expect_exit 0 "$KV" eval --job "$WORK/job.json" --json
python3 - "$WORK/out.txt" <<'PY' || fail "the job's verdict: $(head -c 600 "$WORK/out.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["metrics"]["correct"] == 1, d["artifacts"].get("reason_detail")
timed = [s["name"] for s in d["artifacts"]["scenarios"] if "median_us" in s]
assert timed == ["decode", "square"], timed
PY

# A broken job is a usage error naming the key; --job takes nothing else.
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["timeout"]=5; json.dump(j, open(sys.argv[2], "w"))' \
    "$WORK/job.json" "$WORK/bad.json"
expect_exit 2 "$KV" eval --job "$WORK/bad.json"
grep -q "job.timeout: unknown key" "$WORK/err.txt" || fail "no message naming the key: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" eval --job "$WORK/job.json" --quick
grep -q "\-\-job takes the whole evaluation from its file" "$WORK/err.txt" || fail "$(cat "$WORK/err.txt")"
expect_exit 1 "$KV" eval --task softmax --backend cpu --quick --scenarios nosuch "$base"
grep -q "scenario 'nosuch' is neither a scenario nor a tag of task softmax" "$WORK/err.txt" ||
    fail "an unknown scenario was not named: $(cat "$WORK/err.txt")"

# A device the backend lacks is the harness's error, not a verdict.
expect_exit 1 "$KV" eval --task softmax --backend cpu --quick --device 3 "$base"
grep -q "no CPU device 3" "$WORK/err.txt" || fail "no message for device 3: $(cat "$WORK/err.txt")"

# One budget: a kernel that never returns, allowed 60 s a call, is stopped
# by the job's 12 s for the whole evaluation (the candidate's process gets
# no more than what is left of it): a timeout, the candidate's verdict.
# 12 s leaves room for the compile and the baseline under ASan on a busy
# 2-core machine; 60 s a call would outlast it five times.
start=$(date +%s)
expect_exit 0 "$KV" eval --task softmax --backend cpu --quick --timeout 12 --kernel-timeout 60 \
    "$KV_SOURCE_DIR/tests/data/kernels/cpu/hang.c"
took=$(($(date +%s) - start))
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["artifacts"]; assert a["reason"] == "timeout", a' \
    "$WORK/out.txt" || fail "the budget did not end the evaluation: $(cat "$WORK/out.txt")"
[ "$took" -le 30 ] || fail "the evaluation took $took s under a budget of 12 s"
echo "ok"
