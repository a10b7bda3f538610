#!/bin/bash
# The device's long-lived judge (src/judge/judge_server.h), on the cpu
# backend: one judge serves children one after another; a hostile child is
# refused and the judge goes on to judge the next honest one right; nothing
# passes from one child to the next: every child's correctness inputs are
# its own (none can be answered in advance by an earlier child), no object
# that outlives a runner can be made (key store, System V and POSIX IPC,
# /dev/shm, files' metadata), so an answer left by a teacher reaches no
# later child; the timed work is checked on every input distribution, so a
# timed path that differs from the checked one fails;
# KEVOLVE_JUDGE_SERVER=0 gives each child a judge of its own.
. "$(dirname "$0")/lib.sh"

B=$KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c
R=$KV_SOURCE_DIR/tests/data/kernels/redteam/cpu
EVAL=("$KV" eval --task softmax --backend cpu --quick)

shm_keys() {
    python3 -c '
import os
for l in open("/proc/sysvipc/shm").readlines()[1:]:
    f = l.split()
    if 0x40000000 <= int(f[0]) & 0xffffffff < 0x80000000 and int(f[7]) == os.getuid():
        print(f[1])' 2>/dev/null | sort
}
before=$(shm_keys)
# Honest and hostile interleaved, one judge for all: a forged verdict, late
# work, the judge within reach, a probe of every object that would outlive
# a runner, a timed path unlike the checked one, and the answers a teacher
# leaves in System V shared memory for the child after it.
expect_exit 0 "${EVAL[@]}" "$B" "$R/forge_verdict.c" "$B" "$R/late_thread.c" "$R/reach_parent.c" \
    "$B" "$R/carry_probe.c" "$R/timed_path_clamps.c" "$B" \
    "$R/replay_across_children_teacher.c" "$R/replay_across_children.c"
made=$(comm -13 <(echo "$before") <(shm_keys))
for id in $made; do ipcrm -m "$id" 2>/dev/null || true; done
[ -z "$made" ] || fail "a candidate left System V shared memory behind: $made"
python3 - "$WORK/out.txt" <<'PY' || fail "one judge did not judge them all right: $(cat "$WORK/out.txt")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 11, len(lines)
want = ["ok", "wrong_result", "ok", "async_work_outside_harness_stream", "wrong_result", "ok",
        "ok", "timed_output_wrong", "ok", "ok", "wrong_result"]
for d, w in zip(lines, want):
    got = "ok" if d["status"] == "ok" else d["reason_code"]
    assert got == w, (d["candidate"], got, w, d.get("reason"), d["artifacts"].get("runner_output"))
honest = [d["artifacts"] for d in lines if d["status"] == "ok"]
assert all(a["verdict"] == "correct" for a in honest)
pids = {a["judge"]["pid"] for a in honest}
assert len(pids) == 1, pids
# The judge counted the refused children too: it went on after each.
assert [a["judge"]["child"] for a in honest] == [1, 3, 6, 7, 9, 10], [a["judge"] for a in honest]
# Every runner had the system-call filter.
assert all("seccomp" in a["isolation"] for a in honest), [a["isolation"] for a in honest]
# Every child's correctness inputs were drawn for it alone.
seen = {}
for a in honest:
    for s in a["scenarios"]:
        fp = s["inputs_fingerprint"]
        assert fp not in seen, (s["name"], "the inputs of child", a["judge"]["child"],
                                "were child", seen[fp], "'s")
        seen[fp] = a["judge"]["child"]
PY

# A judge of its own for each child, as before, when asked.
KEVOLVE_JUDGE_SERVER=0 expect_exit 0 "${EVAL[@]}" "$B" "$R/forge_verdict.c" "$B"
python3 - "$WORK/out.txt" <<'PY' || fail "KEVOLVE_JUDGE_SERVER=0: $(cat "$WORK/out.txt")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [d["status"] == "ok" for d in lines] == [True, False, True], lines
assert all("judge" not in d["artifacts"] for d in lines)
PY
echo PASS
