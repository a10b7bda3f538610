#!/usr/bin/env bash
# Browser test of the dashboard's Pareto front (issue 22.5): a CPU run with
# two objectives (speedup and error), served and loaded in headless
# Chromium. The panel shows one dot per program that has both values, the
# front's in black: the same programs `kevolve best --pareto` lists; each
# dot links to its program. Written as a static report, the page draws the
# same front. A run without objectives shows no panel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dashboard_lib.sh"

objectives_config "$WORK/config.yaml"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
expect_exit 0 "$KV" best "$WORK/run" --pareto --json
cp "$WORK/out.txt" "$WORK/front.json"

check_page() { # HTML: the panel drawn, its front the CLI's
    python3 - "$1" "$WORK/front.json" "$WORK/run/run.db" <<'PY'
import json, sqlite3, sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
front = {p["id"] for p in json.load(open(sys.argv[2]))}
ok = sqlite3.connect(f"file:{sys.argv[3]}?mode=ro", uri=True).execute(
    "select count(*) from programs where status = 'ok'").fetchone()[0]
panel = d.by_id.get("pareto-panel")
assert panel and "hidden" not in panel["attrs"], "the panel is hidden"
dots = d.find("circle")
drawn = {int(c["attrs"]["data-id"]) for c in dots if c["attrs"].get("class") == "front"}
rest = [c for c in dots if c["attrs"].get("class") == "pt"]
print(f"page: {len(drawn)} on the front, {len(rest)} behind it; CLI front {sorted(front)}; {ok} ok")
assert drawn == front, (drawn, front)
assert len(drawn) + len(rest) == ok
links = [a for a in d.find("a") if a["attrs"].get("href", "").startswith("#/program/")]
assert len(links) >= ok
assert "programs on the front of speedup and error" in d.text("pareto-caption")
PY
}

serve "$WORK/run/run.db" main
browser --dump-dom "$URL" >"$WORK/served.html"
check_page "$WORK/served.html" || fail "the served page's front is wrong"
stop_server "$SERVER_PID"

expect_exit 0 "$KV" report "$WORK/run" -o "$WORK/report.html"
browser --dump-dom "file://$WORK/report.html" >"$WORK/report.dom.html"
check_page "$WORK/report.dom.html" || fail "the report's front is wrong"

# Without objectives: no panel.
sed '/^objectives:/d' "$WORK/config.yaml" >"$WORK/plain.yaml"
expect_exit 0 "$KV" run --config "$WORK/plain.yaml" --output "$WORK/plain"
serve "$WORK/plain/run.db" plain
browser --dump-dom "$URL" >"$WORK/plain.html"
python3 - "$WORK/plain.html" <<'PY' || fail "a run without objectives shows a Pareto panel"
import sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
sys.exit(0 if "hidden" in d.by_id["pareto-panel"]["attrs"] else 1)
PY
stop_server "$SERVER_PID"
echo "ok"
