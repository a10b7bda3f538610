#!/bin/bash
# Two objectives on a kernel task (speedup and error: the share of the
# tolerance used) in a CPU run: the run keeps them in its store; `kevolve
# status` says how many programs are on the front; `kevolve best --pareto`
# lists exactly the programs no other beats on both (checked against the
# stored metrics), --objectives computes another front after the fact, and
# `--objective error` writes the most accurate program. A child the screen
# stopped after a few scenarios (metrics.screened_out; made here from a
# stored program, with a speedup and an error that would beat every other)
# is on no front and no best on an objective, stays in the store, and the
# dashboard's data lists it as screened (issue 45.2). A config with one
# objective, or an unknown one, is refused before anything runs.
. "$(dirname "$0")/lib.sh"

objectives_config "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"

# A partial measurement that would beat every whole one.
screened=$(python3 - "$WORK/run/run.db" <<'PY'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
src, m = con.execute("select id, metrics from programs where status = 'ok' order by id desc limit 1").fetchone()
m = json.loads(m)
m.update({"screened_out": 1, "speedup": 1e6, "combined_score": 1e6})
for k in list(m):
    if k.endswith("_tol_ratio"):
        m[k] = 0.0
cols = [r[1] for r in con.execute("pragma table_info(programs)") if r[1] not in ("id", "metrics")]
cur = con.execute(f"insert into programs({', '.join(cols)}, metrics) select {', '.join(cols)}, ? "
                  "from programs where id = ?", (json.dumps(m), src))
con.commit()
print(cur.lastrowid)
PY
)

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
    if m.get("screened_out"):
        continue  # measured on a few scenarios only
    err = max(v for k, v in m.items() if k.endswith("_tol_ratio"))
    vals[pid] = (m.get("speedup", m["combined_score"]), err)
def beats(a, b):
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])
front = {p for p in vals if not any(beats(vals[q], vals[p]) for q in vals if q != p)}
assert listed == front, (listed, front)
assert len(vals) >= 2
PY
grep -q "screened out after a few scenarios" "$WORK/err.txt" || fail "the screened child is not counted: $(cat "$WORK/err.txt")"
expect_exit 0 "$KV" best "$WORK/run" --objective speedup
grep -q "best on speedup: program" "$WORK/err.txt" || fail "$(cat "$WORK/err.txt")"
grep -q "best on speedup: program $screened," "$WORK/err.txt" && fail "the screened child is the best on speedup"
[ "$(sql "$WORK/run/run.db" "select status from programs where id = $screened")" = ok ] ||
    fail "the screened child left the store"
expect_exit 0 "$KV" report "$WORK/run" -o "$WORK/report.html"
python3 - "$WORK/report.html" "$screened" <<'PY' || fail "the dashboard does not mark the screened child"
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r"window\.KV_DATA = (.*?);</script>", html, re.S).group(1))
o = data["/api/objectives"]
pid = int(sys.argv[2])
assert pid in o["screened"], o["screened"]
assert any(r[0] == pid for r in o["programs"]), "the screened child is not drawn"
PY

# The best's line on standard error is short; --json has every metric.
expect_exit 0 "$KV" best "$WORK/run"
line=$(grep "^best: program" "$WORK/err.txt" || true)
[ -n "$line" ] && [ ${#line} -lt 300 ] || fail "best's line (${#line} characters): $line"
grep -q "combined_score .*metrics in all: --json prints them" "$WORK/err.txt" || fail "$line"
expect_exit 0 "$KV" best "$WORK/run" --json
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metrics"]; assert len(m) > 10, m' \
    "$WORK/out.txt" || fail "best --json lacks the metrics"

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
