"""The red team's table for a batch judged through one judge: each line of
kevolve eval's output (argv[1]) against the expectation of its candidate in
bench/redteam_cuda.sh's CASES (argv[2]); "as expected: N of M" last, and the
exit status 1 when any line is not as expected. The first line's score (the
honest control ctl_fp32) is the yardstick of "no gain" (1.5x).
Usage: python3 bench/redteam_table.py EVAL_OUTPUT bench/redteam_cuda.sh"""
import fnmatch, json, re, sys
cases = {}
text = open(sys.argv[2]).read()
block = text[text.index("CASES=$(cat <<'EOF'") :]
for line in block.splitlines()[1:]:
    if line == "EOF":
        break
    name, cls, want, reasons = line.split("|")
    cases[name] = (cls, want, [r for r in reasons.split(",") if r])
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = rows[0]["metrics"].get("combined_score", 0) if rows else 0
bad = 0
for d in rows:
    name = d["candidate"].rsplit("/", 1)[-1][:-3]
    a, m = d["artifacts"], d["metrics"]
    verdict = a.get("verdict", d["status"])
    reason = d.get("reason_code") or "-"
    score = m.get("combined_score", 0) or 0
    cls, want, reasons = cases.get(name, ("?", "correct", []))
    if want == "correct":
        ok = verdict == "correct"
    elif want == "reject":
        ok = verdict != "correct" and (not reasons or any(fnmatch.fnmatch(reason, r) for r in reasons))
    elif want == "nogain":
        ok = verdict != "correct" or score <= 1.5 * ref
    elif want == "hang":
        ok = reason == "timeout" or "timeout" in (d.get("reason") or "")
    else:
        ok = True
    bad += not ok
    j = a.get("judge", {})
    print(f"{name:26s} {cls:30s} {verdict or '-':9s} {reason:34s} {score:8.2f} "
          f"judge {j.get('pid', '-')}/{j.get('child', '-')}  want {want:7s} {'yes' if ok else 'NO'}")
print(f"as expected: {len(rows) - bad} of {len(rows)}")
sys.exit(1 if bad else 0)
