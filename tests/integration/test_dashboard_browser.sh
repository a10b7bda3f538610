#!/usr/bin/env bash
# Browser test of the dashboard: a real run of the tiny example, served by
# `kevolve serve` and written by `kevolve report`, loaded in headless
# Chromium. Checks that the tree, the score chart, the MAP-Elites grids, the
# summary and a program's page show the numbers `kevolve status --json` and
# the store hold, and keeps screenshots in $KV_BUILD_DIR/test-artifacts/.
# Skips (exit 77) when Chromium is not installed.
. "$(dirname "$0")/lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
fi
ARTIFACTS=${KV_BUILD_DIR:-$WORK}/test-artifacts
mkdir -p "$ARTIFACTS"

SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# browser ARGS... URL: headless Chromium with a fresh profile; the page's
# timers and fetches run for 5 s of virtual time before the DOM is taken.
browser() {
    timeout 90 "$CHROMIUM" --headless --disable-gpu --no-sandbox --hide-scrollbars \
        --user-data-dir="$WORK/profile" --virtual-time-budget=5000 "$@" 2>>"$WORK/chromium.log"
}

"$KV" run --config "$TINY/config.yaml" --output "$WORK/run" --iterations 40 >"$WORK/run.log" 2>&1 ||
    fail "the example run failed: $(tail -5 "$WORK/run.log")"
"$KV" status "$WORK/run" --json >"$WORK/status.json"

"$KV" serve "$WORK/run/run.db" --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
for _ in $(seq 50); do
    [ -s "$WORK/serve.out" ] && break
    sleep 0.1
done
URL=$(head -1 "$WORK/serve.out" | sed -n 's/^serving .* at \(http:[^ ]*\)$/\1/p')
[ -n "$URL" ] || fail "serve printed no URL: $(cat "$WORK/serve.out" "$WORK/serve.err")"
case "$URL" in http://127.0.0.1:*) ;; *) fail "serve did not bind 127.0.0.1 by default: $URL" ;; esac

browser --dump-dom "$URL" >"$WORK/overview.html"
browser --dump-dom "${URL}#/program/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["best"]["id"])' "$WORK/status.json")" \
    >"$WORK/program.html"
browser --window-size=1400,1800 --screenshot="$ARTIFACTS/dashboard-overview.png" "$URL" >/dev/null
browser --window-size=1400,1400 --screenshot="$ARTIFACTS/dashboard-program.png" "${URL}#/program/1" >/dev/null
"$KV" report "$WORK/run" -o "$WORK/report.html" 2>"$WORK/report.err" || fail "report: $(cat "$WORK/report.err")"
browser --dump-dom "file://$WORK/report.html" >"$WORK/report-dom.html"
browser --window-size=1400,1800 --screenshot="$ARTIFACTS/dashboard-report.png" "file://$WORK/report.html" >/dev/null
cp "$WORK/report.html" "$ARTIFACTS/dashboard-report.html"
for f in dashboard-overview.png dashboard-program.png dashboard-report.png; do
    [ -s "$ARTIFACTS/$f" ] || fail "no screenshot $f"
done

# The checks read the DOM with Python's HTML parser and compare it with the
# status summary and the store.
python3 - "$WORK/status.json" "$WORK/run/run.db" "$WORK/overview.html" "$WORK/program.html" \
    "$WORK/report-dom.html" <<'PY' || fail "the dashboard shows wrong numbers (see above)"
import json, re, sqlite3, sys
from html.parser import HTMLParser

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

class Dom(HTMLParser):
    """Elements by id (attributes and text) and every element with its class."""
    def __init__(self, text):
        super().__init__()
        self.by_id, self.all, self.stack = {}, [], []
        self.feed(text)
    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.all.append(el)
        if tag in ("br", "img", "input", "meta", "link", "polyline", "line"):
            if "id" in el["attrs"]: self.by_id[el["attrs"]["id"]] = el
            return
        self.stack.append(el)
        if "id" in el["attrs"]: self.by_id[el["attrs"]["id"]] = el
    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag: break
    def handle_data(self, data):
        for el in self.stack: el["text"] += data
    def text(self, id):
        return self.by_id[id]["text"].strip() if id in self.by_id else None
    def find(self, tag=None, cls=None, **attrs):
        out = []
        for el in self.all:
            if tag and el["tag"] != tag: continue
            if cls and cls not in el["attrs"].get("class", "").split(): continue
            if any(el["attrs"].get(k.replace("_", "-")) != str(v) for k, v in attrs.items()): continue
            out.append(el)
        return out

def number(text):
    return float(re.sub(r"[^0-9.eE+-]", "", text))

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
if not prog.find("span", cls="add") and not prog.find("span", cls="del"):
    errors.append("program page: the diff against the parent shows no change")

if errors:
    print("\n".join(errors))
    sys.exit(1)
print("dashboard shows the run's numbers: tree, chart, grids, summary, program page, report")
PY

# Live in the browser: with the page open, the programs a running resume adds
# appear on it without a reload (the page polls; its count grows past the
# count it first loaded).
KV_TEST_EVAL_SLEEP=0.4 "$KV" resume "$WORK/run" --iterations 20 >"$WORK/resume_live.log" 2>&1 &
RESUME_PID=$!
sleep 0.5
timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$WORK/profile-live" \
    --virtual-time-budget=1000000 --dump-dom "${URL}?poll=250" >"$WORK/live.html" 2>>"$WORK/chromium.log"
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
kill "$SERVER_PID"
wait "$SERVER_PID" || fail "serve exited $? on SIGTERM"
SERVER_PID=
echo "PASS: dashboard (screenshots in $ARTIFACTS)"
