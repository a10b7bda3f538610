#!/usr/bin/env bash
# Browser test of the dashboard: a real run of the tiny example, served by
# `kevolve serve` and written by `kevolve report`, loaded in headless
# Chromium. Its evaluator fails about a quarter of the children ("does not
# build") and hangs on a few (killed at the time limit), as a real run's do.
# Checks that the tree, the counts, the score chart, the MAP-Elites grids
# (their axes' bin values, numbers that fit their cells),
# the summary and a program's page (a failed one's too) show what `kevolve
# status --json` and the store hold, and that an open page follows a
# running evolution; keeps screenshots in $KV_BUILD_DIR/test-artifacts/.
# Skips (exit 77) when Chromium is not installed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dashboard_lib.sh"

cat >"$WORK/evaluator.sh" <<EOF
#!/bin/sh
# The tiny example's evaluator, but a child whose text's CRC is 0 mod 4
# fails to build and, with KV_TEST_HANG=1, one whose CRC is 1 mod 16 hangs
# until the evaluator's time limit (the initial program always evaluates).
crc=\$(cksum <"\$1" | cut -d' ' -f1)
if ! cmp -s "\$1" '$TINY/initial.py'; then
    if [ \$((crc % 4)) -eq 0 ]; then echo "compile_error: program \$crc does not build" >&2; exit 1; fi
    if [ "\${KV_TEST_HANG:-}" = 1 ] && [ \$((crc % 16)) -eq 1 ]; then sleep 60; fi
fi
exec sh '$TINY/evaluator.sh' "\$1"
EOF
chmod +x "$WORK/evaluator.sh"
sed -e "s#^initial_program: .*#initial_program: $TINY/initial.py#" \
    -e "s#^evaluator: .*#evaluator: $WORK/evaluator.sh#" -e 's/  timeout: 10/  timeout: 2/' \
    "$TINY/config.yaml" >"$WORK/config.yaml"

KV_TEST_HANG=1 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run" --iterations 40 \
    >"$WORK/run.log" 2>&1 || fail "the example run failed: $(tail -5 "$WORK/run.log")"
"$KV" status "$WORK/run" --json >"$WORK/status.json"
FAILED=$(sql "$WORK/run/run.db" "select min(id) from programs where status = 'failed'")
[ -n "$FAILED" ] || fail "the run has no failed child to show (its evaluator fails a quarter)"

serve "$WORK/run/run.db" serve --verbose
case "$URL" in http://127.0.0.1:*) ;; *) fail "serve did not bind 127.0.0.1 by default: $URL" ;; esac

BEST=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["best"]["id"])' "$WORK/status.json")
browser --dump-dom "$URL" >"$WORK/overview.html"
browser --dump-dom "${URL}#/program/$BEST" >"$WORK/program.html"
browser --dump-dom "${URL}#/program/$FAILED" >"$WORK/failed.html"
browser --window-size=1400,1800 --screenshot="$ARTIFACTS/dashboard-overview.png" "$URL" >/dev/null
browser --window-size=1400,1100 --screenshot="$ARTIFACTS/dashboard-program.png" "${URL}#/program/$FAILED" >/dev/null
"$KV" report "$WORK/run" -o "$WORK/report.html" 2>"$WORK/report.err" || fail "report: $(cat "$WORK/report.err")"
browser --dump-dom "file://$WORK/report.html" >"$WORK/report-dom.html"
browser --dump-dom "file://$WORK/report.html#/program/$FAILED" >"$WORK/report-failed.html"
browser --window-size=1400,1800 --screenshot="$ARTIFACTS/dashboard-report.png" "file://$WORK/report.html" >/dev/null
cp "$WORK/report.html" "$ARTIFACTS/dashboard-report.html"
for f in dashboard-overview.png dashboard-program.png dashboard-report.png; do
    [ -s "$ARTIFACTS/$f" ] || fail "no screenshot $f"
done

# The checks read the DOM and compare it with the status summary and the store.
python3 - "$WORK/status.json" "$WORK/run/run.db" "$WORK/overview.html" "$WORK/program.html" \
    "$WORK/report-dom.html" "$WORK/failed.html" "$WORK/report-failed.html" <<'PY' ||
import json, sqlite3, sys
from dashboard_dom import Dom, number

status = json.load(open(sys.argv[1]))
db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
errors = []

def check(what, got, want):
    try:
        same = float(got) == float(want)
    except (TypeError, ValueError):
        same = str(got) == str(want)
    if not same:
        errors.append(f"{what}: page shows {got!r}, expected {want!r}")

def check_overview(name, dom):
    if "hidden" not in dom.by_id["error"]["attrs"]:
        errors.append(f"{name}: error shown: {dom.text('error')}")
    stats = dom.by_id.get("tree-stats")
    if not stats:
        errors.append(f"{name}: no tree stats"); return
    a = stats["attrs"]
    check(f"{name}: tree nodes", a.get("data-nodes"), status["programs"])
    edges = db.execute("SELECT count(*) FROM programs c JOIN programs p ON c.parent_id = p.id").fetchone()[0]
    check(f"{name}: tree edges", a.get("data-edges"), edges)
    check(f"{name}: tree migrants", a.get("data-migrants"), status["migrants"])
    check(f"{name}: tree best", a.get("data-best"), status["best"]["id"])
    check(f"{name}: programs card", dom.text("card-programs"), status["programs"])
    check(f"{name}: best card", number(dom.text("card-best")), status["best"]["fitness"])
    check(f"{name}: duplicates card", dom.text("card-duplicate"), status["by_status"]["duplicate"])
    check(f"{name}: seed", dom.text("sum-seed"), status["random_seed"])
    # Every status counted as the store counts it: tree, legend, cards.
    for st in ("ok", "failed", "timeout", "rejected", "duplicate"):
        n = db.execute("SELECT count(*) FROM programs WHERE status = ?", (st,)).fetchone()[0]
        check(f"{name}: tree count of {st}", a.get(f"data-{st}"), n)
        check(f"{name}: legend count of {st}", (dom.by_id.get(f"legend-{st}") or {"attrs": {}})["attrs"].get("data-count"), n)
        check(f"{name}: {st} card", dom.text(f"card-{st}"), n)
    # Failures by reason: one row per (status, reason), adding up to the failures.
    rows = [el for el in dom.find("tr") if el["attrs"].get("data-status") in ("failed", "timeout", "rejected")]
    # (grouped by the reason code, else the reason's first line)
    want = {(st, code or (reason or "").split("\n")[0][:120]) for st, code, reason in db.execute(
        "SELECT status, reason_code, status_reason FROM programs WHERE status IN ('failed', 'timeout', 'rejected')")}
    check(f"{name}: failure reasons", len(rows), len(want))
    # The chart spans the run's iterations, failed children's included.
    check(f"{name}: chart range", dom.attr("chart", "data-max-iteration"),
          db.execute("SELECT max(iteration) FROM programs").fetchone()[0])
    # Chart: one best and one median line per island, and the table's best per island.
    for isl in status["islands"]:
        i = isl["island"]
        if not dom.find("polyline", cls="best", data_island=i):
            errors.append(f"{name}: no best line for island {i}")
        check(f"{name}: chart best of island {i}", number(dom.text(f"chart-best-{i}") or "nan"),
              isl["best_fitness"])
    # Grids: one per island; each filled cell's program sits in that cell with that score.
    boxes = dom.find("div", cls="grid-box")
    check(f"{name}: grids", len(boxes), len(status["islands"]))
    cells = dom.find("div", cls="full")
    if not cells: errors.append(f"{name}: no filled grid cell")
    for c in cells:
        a = c["attrs"]
        row = db.execute("SELECT fitness, json_extract(features, '$.complexity'), json_extract(features, '$.a')"
                         " FROM programs WHERE id = ?", (int(a["data-id"]),)).fetchone()
        check(f"{name}: grid cell of program {a['data-id']}", (float(a["data-fitness"]), int(a["data-x"]), int(a["data-y"])),
              (row[0], row[1], row[2]))
        best_in_cell = db.execute(
            "SELECT max(fitness) FROM programs WHERE status = 'ok' AND island ="
            " (SELECT island FROM programs WHERE id = ?) AND json_extract(features, '$.complexity') = ?"
            " AND json_extract(features, '$.a') = ?",
            (int(a["data-id"]), int(a["data-x"]), int(a["data-y"]))).fetchone()[0]
        check(f"{name}: grid cell ({a['data-x']}, {a['data-y']}) holds the best", float(a["data-fitness"]), best_in_cell)
        # Its number fits the cell: five characters at most (the cells are
        # 34 px wide at 9 px type, and clip whatever would not fit).
        if len(c["text"].strip()) > 5:
            errors.append(f"{name}: cell ({a['data-x']}, {a['data-y']}) shows {c['text']!r}, too long for it")
    # The axes: each bin's lower edge, from the range of values the search
    # saw along the dimension (every placed program's), cut into the bins.
    axes = {"complexity": ("length(cast(source as blob))", 4), "a": ("json_extract(metrics, '$.a')", 8)}
    want_edges = {}
    for dim, (expr, nb) in axes.items():
        lo, hi = db.execute(f"SELECT min({expr}), max({expr}) FROM programs WHERE status = 'ok'"
                            " AND features IS NOT NULL").fetchone()
        want_edges[dim] = [lo + k * (hi - lo) / nb for k in range(nb)]
    for box in boxes:
        i = box["attrs"]["data-island"]
        xs = [el for el in dom.find("span", cls="xtick") if el["pos"] > box["pos"]][:4]
        ys = [el for el in dom.find("span", cls="ytick") if el["pos"] > box["pos"]][:8]
        got_x = [float(el["attrs"]["data-value"]) for el in xs]
        got_y = sorted(float(el["attrs"]["data-value"]) for el in ys)
        if any(abs(g - w) > 1e-9 for g, w in zip(got_x, want_edges["complexity"])) or len(got_x) != 4:
            errors.append(f"{name}: island {i}'s x axis reads {got_x}, expected {want_edges['complexity']}")
        if any(abs(g - w) > 1e-9 for g, w in zip(got_y, want_edges["a"])) or len(got_y) != 8:
            errors.append(f"{name}: island {i}'s y axis reads {got_y}, expected {want_edges['a']}")

check_overview("served page", Dom(open(sys.argv[3]).read()))
check_overview("static report", Dom(open(sys.argv[5]).read()))

prog = Dom(open(sys.argv[4]).read())
best = status["best"]
head = prog.by_id.get("program-head")
check("program page: id", head["attrs"].get("data-id") if head else None, best["id"])
check("program page: score", number(prog.text("program-fitness") or "nan"), best["fitness"])
metric = [el for el in prog.find("td") if el["attrs"].get("data-key") == "combined_score"]
check("program page: combined_score", number(metric[0]["text"]) if metric else None, best["metrics"]["combined_score"])
src = db.execute("SELECT source FROM programs WHERE id = ?", (best["id"],)).fetchone()[0]
lines = [el["text"] for el in prog.find("span", cls="l")]
check("program page: source lines", len(lines), len(src.split("\n")))
if not prog.find("tr", cls="add") and not prog.find("tr", cls="del"):
    errors.append("program page: the diff against the parent shows no change")
if not (prog.pos("program-change") or 0) < (prog.pos("metrics") or 0):
    errors.append("program page: the change is not above the metrics")

# A failed child's page says it failed, and why, in the served page and the report.
fid, reason = db.execute("SELECT id, status_reason FROM programs WHERE status = 'failed' ORDER BY id LIMIT 1").fetchone()
for name, path in (("failed page", sys.argv[6]), ("report's failed page", sys.argv[7])):
    d = Dom(open(path).read())
    check(f"{name}: id", d.attr("program-head", "data-id"), fid)
    check(f"{name}: status", d.attr("program-head", "data-status"), "failed")
    badge = [el for el in d.find("span", cls="badge") if el["attrs"].get("data-status") == "failed"]
    if not badge:
        errors.append(f"{name}: no 'failed' badge")
    if reason not in (d.text("program-failure") or ""):
        errors.append(f"{name}: the failure panel lacks the reason {reason!r}: {d.text('program-failure')!r}")
    check(f"{name}: score", d.text("program-fitness"), "–")

if errors:
    print("\n".join(errors))
    sys.exit(1)
print("dashboard shows the run's numbers: tree, counts, chart, grids, summary, program pages, report")
PY
    fail "the dashboard shows wrong numbers (see above)"

# Live in the browser: with the page open, the programs a running resume adds
# appear on it without a reload (the page polls; its count grows past the
# count it first loaded). The resume starts once the page has loaded
# (serve --verbose logs each request).
loads=$(grep -c 'GET /api/programs ' "$WORK/serve.err" || true)
browser --virtual-time-budget=1000000 --dump-dom "${URL}?poll=250" >"$WORK/live.html" &
BROWSER_PID=$!
for _ in $(seq 600); do
    [ "$(grep -c 'GET /api/programs ' "$WORK/serve.err")" -gt "$loads" ] && break
    sleep 0.1
done
KV_TEST_EVAL_SLEEP=0.4 "$KV" resume "$WORK/run" --iterations 20 >"$WORK/resume_live.log" 2>&1 &
RESUME_PID=$!
wait $BROWSER_PID || fail "Chromium failed on the live page"
wait $RESUME_PID || fail "the resumed run behind the live page failed"
python3 - "$WORK/live.html" <<'PY' || fail "the open page did not pick up new programs by itself"
import re, sys
html = open(sys.argv[1]).read()
initial = int(re.search(r'data-initial-programs="(\d+)"', html).group(1))
live = int(re.search(r'id="live"[^>]*>live · (\d+) programs', html).group(1))
print(f"live page: {initial} programs at load, {live} after polling")
sys.exit(0 if live > initial else 1)
PY

# Live: programs added by a resumed run appear in the API while serving.
before=$(python3 -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1]+"api/summary"))["max_id"])' "$URL")
"$KV" resume "$WORK/run" --iterations 5 >"$WORK/resume.log" 2>&1 || fail "resume failed"
after=$(python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1]+"api/programs?since="+sys.argv[2])); print(len(d["programs"]))' "$URL" "$before")
[ "$after" -ge 5 ] || fail "after resuming 5 iterations the server shows $after new programs"
stop_server "$SERVER_PID"
echo "PASS: dashboard (screenshots in $ARTIFACTS)"
