#!/usr/bin/env bash
# Browser test of the dashboard on a kernel task: a real run of the main
# job's example (examples/gqa_attention/run.sh: task gqa_attention_small on
# the OpenCL or CPU backend, a few iterations), served and written as a
# report, loaded in headless Chromium. A program's page shows its change
# against the parent before anything else, then the harness's per-scenario
# table (the same scenarios, times and speedups as the store's artifacts),
# with the raw metrics folded away; the overview shows the effective task
# and backend, the store's path, every status counted as the store counts
# it, the whole iteration range and the best program's speedup per
# scenario with its time and roofline fraction beside it, and the tools the
# run used (PoCL on OpenCL, no nvcc off CUDA). Screenshots go to
# $KV_BUILD_DIR/test-artifacts/.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dashboard_lib.sh"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: a GPU is present: run.sh would pick cuda (bench/ covers it)"
    exit 77
fi
KV="$KV" "$KV_SOURCE_DIR/examples/gqa_attention/run.sh" --iterations 3 --output "$WORK/gqa" \
    >"$WORK/run.out" 2>"$WORK/run.err" || fail "the gqa example run failed: $(tail -5 "$WORK/run.err")"
BACKEND=$(sed -n 's/^gqa_attention example: backend \([a-z]*\), task .*/\1/p' "$WORK/run.err")
DB="$WORK/gqa/run.db"
# The page to check: the best OK child (it has a parent, so a change, and
# the harness's scenarios). Children that break the kernel fail: resume a
# little longer when none passed yet.
best_child() {
    sql "$DB" "select id from programs where parent_id is not null and status = 'ok'
               order by fitness desc, id limit 1"
}
for _ in 1 2 3; do
    [ -n "$(best_child)" ] && break
    "$KV" resume "$WORK/gqa" --iterations 2 >>"$WORK/run.out" 2>>"$WORK/run.err" ||
        fail "resuming the gqa example failed: $(tail -5 "$WORK/run.err")"
done
PROGRAM=$(best_child)
[ -n "$PROGRAM" ] || fail "the run stored no OK child in 9 iterations"

serve "$DB" kernel
browser --dump-dom "${URL}#/program/$PROGRAM" >"$WORK/program.html"
browser --dump-dom "$URL" >"$WORK/overview.html"
browser --window-size=1400,1500 --screenshot="$ARTIFACTS/dashboard-kernel-program.png" "${URL}#/program/$PROGRAM" >/dev/null
browser --window-size=1400,2200 --screenshot="$ARTIFACTS/dashboard-kernel-overview.png" "$URL" >/dev/null
"$KV" report "$WORK/gqa" -o "$WORK/report.html" 2>"$WORK/report.err" || fail "report: $(cat "$WORK/report.err")"
browser --dump-dom "file://$WORK/report.html#/program/$PROGRAM" >"$WORK/report-program.html"
browser --dump-dom "file://$WORK/report.html" >"$WORK/report-overview.html"
stop_server "$SERVER_PID"

python3 - "$DB" "$PROGRAM" "$BACKEND" "$WORK"/{program,overview,report-program,report-overview}.html <<'PY' ||
import json, sqlite3, sys
from dashboard_dom import Dom, Checks, number

db_path, program, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3]
db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
c = Checks()

def check_program(name, d):
    head = d.by_id.get("program-head")
    c.eq(f"{name}: program id", head["attrs"].get("data-id") if head else None, program)
    # The change first: the diff, then the scenarios, then the raw metrics.
    order = [d.pos("program-change"), d.pos("program-scenarios"), d.pos("metrics")]
    c.true(f"{name}: diff, scenarios and metrics not in that order: {order}",
           None not in order and order[0] < order[1] < order[2])
    c.true(f"{name}: the diff shows no changed line",
           d.find("tr", cls="add") or d.find("tr", cls="del"))
    c.true(f"{name}: the raw metrics are not folded away", "open" not in d.by_id["raw-metrics"]["attrs"])
    # The scenario table: the harness's scenarios, in order, with their speedups.
    want = json.loads(db.execute("select value from artifacts where program_id = ? and name = 'scenarios'",
                                 (program,)).fetchone()[0])
    table = d.pos("scenarios")
    rows = [el for el in d.find("tr") if "data-scenario" in el["attrs"]
            and table is not None and el["pos"] > table][:len(want)]
    c.eq(f"{name}: scenario rows", [r["attrs"]["data-scenario"] for r in rows], [s["name"] for s in want])
    cells = [el for el in d.find("td", cls="speed") if el["attrs"].get("data-key") == "speedup"]
    for s, cell in zip(want, cells):
        c.eq(f"{name}: speedup of {s['name']}", number(cell["text"]), float(f"{s['speedup']:.3g}"))
    c.eq(f"{name}: speedup cells", len(cells), len(want))
    # The error against the tolerance, as the harness reports it (tol_ratio).
    errs = [el for el in d.find("td") if el["attrs"].get("data-key") == "error"][:len(want)]
    for s, cell in zip(want, errs):
        if s.get("tol_ratio", 0) >= 1e-4:
            shown = str(float("%.2g" % s["tol_ratio"])) + " of tolerance"
            c.true(f"{name}: error of {s['name']} not shown as {shown!r}: {cell['text']!r}",
                   shown in cell["text"])
    c.true(f"{name}: no roofline bar", d.find("span", cls="roof"))

def check_overview(name, d):
    c.eq(f"{name}: task", d.text("fact-task").split()[0], "gqa_attention_small")
    c.eq(f"{name}: backend", d.text("fact-backend").split()[0], backend)
    c.eq(f"{name}: store", d.text("fact-store"), db_path)
    c.true(f"{name}: unexpanded ${{VAR}} in the facts", "${" not in d.by_id["facts"]["text"])
    c.true(f"{name}: the effective config is not shown",
           'task: "gqa_attention_small"' in (d.text("config-effective") or ""))
    stats = d.by_id["tree-stats"]["attrs"]
    for st in ("ok", "failed", "timeout", "rejected", "duplicate"):
        n = db.execute("select count(*) from programs where status = ?", (st,)).fetchone()[0]
        c.eq(f"{name}: tree count of {st}", stats.get(f"data-{st}"), n)
        c.eq(f"{name}: legend count of {st}", d.attr(f"legend-{st}", "data-count"), n)
    c.eq(f"{name}: failed card", d.text("card-failed"),
         db.execute("select count(*) from programs where status = 'failed'").fetchone()[0])
    c.eq(f"{name}: chart range", d.attr("chart", "data-max-iteration"),
         db.execute("select max(iteration) from programs").fetchone()[0])
    names = {s["name"] for s in json.loads(db.execute(
        "select value from artifacts where name = 'scenarios' order by program_id limit 1").fetchone()[0])}
    lines = {el["attrs"].get("data-scenario") for el in d.find("polyline", cls="scen")}
    c.eq(f"{name}: speedup chart lines", sorted(lines), sorted(names))
    # The per-scenario table: the best program's time and roofline fraction
    # beside its speedups, as its harness measured them.
    best = db.execute("select id from programs where status = 'ok' and fitness = (select max(fitness)"
                      " from programs where status = 'ok') order by iteration, id limit 1").fetchone()[0]
    scen = {s["name"]: s for s in json.loads(db.execute(
        "select value from artifacts where program_id = ? and name = 'scenarios'", (best,)).fetchone()[0])}
    table = d.pos("speedup-table")
    rows = [el for el in d.find("tr") if "data-scenario" in el["attrs"] and table is not None
            and el["pos"] > table]
    c.eq(f"{name}: scenario rows of the overview's table", len(rows), len(scen))
    for key in ("median_us", "roofline_fraction"):
        cells = [el for el in d.find("td") if el["attrs"].get("data-key") == key and table is not None
                 and el["pos"] > table]
        c.eq(f"{name}: {key} cells", len(cells), len(scen))
        for row, cell in zip(rows, cells):
            c.eq(f"{name}: {key} of {row['attrs']['data-scenario']}", cell["attrs"].get("data-value"),
                 scen[row["attrs"]["data-scenario"]][key])
        c.true(f"{name}: a {key} cell shows nothing", all(cl["text"].strip() not in ("", "–") for cl in cells))
    # Tools: nvcc only where CUDA ran; the OpenCL implementation where OpenCL did.
    tools = {el["attrs"]["data-tool"]: el["text"] for el in d.find("dd") if "data-tool" in el["attrs"]}
    c.true(f"{name}: Tools lists nvcc on a {backend} run: {tools}",
           backend == "cuda" or not any("nvcc" in k for k in tools))
    if backend == "opencl":
        c.true(f"{name}: Tools does not name the OpenCL implementation: {tools}",
               "PoCL" in tools.get("opencl", ""))
    # Devices: the run's device 0, with its evaluations, in rotation.
    devs = [el for el in d.find("tr") if "data-device" in el["attrs"]]
    c.true(f"{name}: no device rows", len(devs) >= 1)
    c.true(f"{name}: device 0 not shown in rotation: {[r['text'] for r in devs]}",
           any(r["attrs"]["data-device"] == "0" and "in rotation" in r["text"] for r in devs))

for name, path, check in [("served program page", sys.argv[4], check_program),
                          ("served overview", sys.argv[5], check_overview),
                          ("report program page", sys.argv[6], check_program),
                          ("report overview", sys.argv[7], check_overview)]:
    check(name, Dom(open(path).read()))
sys.exit(c.report(f"kernel dashboard ({backend}, program {program}): change first, scenario table, facts, counts"))
PY
    fail "the kernel dashboard shows wrong or misplaced data (see above)"
echo "PASS: dashboard on a kernel task (screenshots in $ARTIFACTS)"
