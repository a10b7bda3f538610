#!/bin/bash
# The device's long-lived judge (src/kernel/judge_server.h), on the cpu
# backend: one judge serves children one after another; a hostile child is
# refused and the judge goes on to judge the next honest one right; the
# references of the correctness trials are kept for the later children,
# never a held-out shape's; an answer carried from one child to the next
# (System V shared memory outlives a runner) passes no check that is not a
# kept one; KEVOLVE_JUDGE_SERVER=0 gives each child a judge of its own.
. "$(dirname "$0")/lib.sh"

B=$KV_SOURCE_DIR/tasks/softmax/cpu/baseline.c
R=$KV_SOURCE_DIR/tests/data/kernels/redteam/cpu
EVAL=("$KV" eval --task softmax --backend cpu --quick)

# Honest, hostile, honest, hostile, hostile, honest: one judge for all.
expect_exit 0 "${EVAL[@]}" "$B" "$R/forge_verdict.c" "$B" "$R/late_thread.c" "$R/reach_parent.c" "$B"
python3 - "$WORK/out.txt" <<'PY' || fail "one judge did not judge them all right: $(cat "$WORK/out.txt")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 6, len(lines)
want = ["ok", "wrong_result", "ok", "async_work_outside_harness_stream", "wrong_result", "ok"]
for d, w in zip(lines, want):
    got = "ok" if d["status"] == "ok" else d["reason_code"]
    assert got == w, (d["candidate"], got, w, d.get("reason"))
honest = [d["artifacts"] for d in lines if d["status"] == "ok"]
assert all(a["verdict"] == "correct" for a in honest)
pids = {a["judge"]["pid"] for a in honest}
assert len(pids) == 1, pids
# The judge counted the refused children too: it went on after each.
assert [a["judge"]["child"] for a in honest] == [1, 3, 6], [a["judge"] for a in honest]
# The first child's references were computed, the later ones' kept; a
# held-out shape's never.
first, later = honest[0], honest[2]
assert all(s["kept_references"] == 0 for s in first["scenarios"]), first["scenarios"]
assert all(s["kept_references"] == s["trials"] for s in later["scenarios"]), later["scenarios"]
assert all(s["kept_references"] == 0 for s in later["held_out"]), later["held_out"]
PY

# Answers carried between children: the teacher leaves each answer in
# shared memory, the cheat computes nothing and replays them. It passes
# the scenarios (their inputs are the teacher's again) and must fail on
# the held-out shapes, drawn afresh for it.
shm_keys() {
    python3 -c '
import os
for l in open("/proc/sysvipc/shm").readlines()[1:]:
    f = l.split()
    if 0x40000000 <= int(f[0]) & 0xffffffff < 0x80000000 and int(f[7]) == os.getuid():
        print(f[1])' 2>/dev/null | sort
}
before=$(shm_keys)
expect_exit 0 "${EVAL[@]}" --stage 1 "$R/replay_across_children_teacher.c" "$R/replay_across_children.c"
made=$(comm -13 <(echo "$before") <(shm_keys))
for id in $made; do ipcrm -m "$id" 2>/dev/null || true; done
[ -n "$made" ] || fail "the teacher left no answer in shared memory: the class is not exercised here"
python3 - "$WORK/out.txt" <<'PY' || fail "an answer carried from the teacher passed: $(cat "$WORK/out.txt")"
import json, sys
teacher, cheat = [json.loads(l) for l in open(sys.argv[1])]
assert teacher["status"] == "ok", teacher.get("reason")
assert cheat["status"] != "ok", "the cheat was judged correct"
assert cheat["reason_code"] == "wrong_on_held_out_shape", cheat.get("reason")
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
