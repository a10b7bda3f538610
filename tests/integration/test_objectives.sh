#!/bin/bash
# Two objectives on a kernel task (speedup and error: the share of the
# tolerance used) in a CPU run: the run keeps them in its store; `kevolve
# status` says how many programs are on the front; `kevolve best --pareto`
# lists exactly the programs no other beats on both (checked against the
# stored metrics), --objectives computes another front after the fact, and
# `--objective error` writes the most accurate program. A config with one
# objective, or an unknown one, is refused before anything runs.
. "$(dirname "$0")/lib.sh"

objectives_config "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"

expect_exit 0 "$KV" status "$WORK/run"
grep -q "^pareto     [1-9][0-9]* programs on the front of speedup,error" "$WORK/out.txt" ||
    fail "status does not show the front: $(cat "$WORK/out.txt")"

expect_exit 0 "$KV" best "$WORK/run" --pareto --json
python3 - "$WORK/out.txt" "$WORK/run/run.db" <<'PY' || fail "the front listed is not the front"
import json, sqlite3, sys
listed = {p["id"] for p in json.load(open(sys.argv[1]))}
con = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
vals = {}
for pid, m in con.execute("select id, metrics from programs where status = 'ok'"):
    m = json.loads(m)
    err = max(v for k, v in m.items() if k.endswith("_tol_ratio"))
    vals[pid] = (m.get("speedup", m["combined_score"]), err)
def beats(a, b):
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])
front = {p for p in vals if not any(beats(vals[q], vals[p]) for q in vals if q != p)}
assert listed == front, (listed, front)
assert len(vals) >= 2
PY

# Another front after the fact, and the best on one objective.
expect_exit 0 "$KV" best "$WORK/run" --pareto --objectives speedup,min:decode_i3072_t64_median_us
grep -q "programs on the front" "$WORK/err.txt" || fail "no front counted: $(cat "$WORK/err.txt")"
expect_exit 0 "$KV" best "$WORK/run" --objective error -o "$WORK/accurate.c"
grep -q "best on error: program" "$WORK/err.txt" || fail "no word on the best: $(cat "$WORK/err.txt")"
grep -q "kv_launch" "$WORK/accurate.c" || fail "the most accurate program was not written"
expect_exit 2 "$KV" best "$WORK/run" --objective fastness
grep -q "fastness" "$WORK/err.txt" || fail "an unknown objective was not named"

# One objective, or an unknown one, is refused by the config check.
for objectives in "[speedup]" "[speedup, fastness]"; do
    sed "s/^objectives: .*/objectives: $objectives/" "$WORK/config.yaml" >"$WORK/bad.yaml"
    expect_exit 2 "$KV" run --config "$WORK/bad.yaml" --output "$WORK/bad"
    grep -q "objectives" "$WORK/err.txt" || fail "no word on objectives: $(cat "$WORK/err.txt")"
done
echo "ok"
