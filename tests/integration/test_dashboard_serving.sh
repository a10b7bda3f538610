#!/usr/bin/env bash
# Browser test of the dashboard's serving, on a real run of the tiny
# example: an open page notices when `kevolve run --force` replaces the
# store it shows (instead of saying "live"), a page on a deleted store says
# so, a server error is shown as one (not "server unreachable"), 300 idle
# connections do not stop a page from loading, and a flood of connections
# beyond the server's limits leaves only kevolve's own, rate-limited lines
# on its standard error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dashboard_lib.sh"

run_tiny() {
    "$KV" run --config "$TINY/config.yaml" --output "$WORK/run" --iterations "$1" "${@:2}" \
        >>"$WORK/run.log" 2>&1 || fail "the example run failed: $(tail -5 "$WORK/run.log")"
}
run_tiny 12

# --- A page open while the store is replaced. The page polls every 200 ms
# (of virtual time; Chromium waits for each answer in real time) and stops
# once it has seen another store; Chromium then ends by its own budget. The
# store is replaced once the server has answered the page's first load and
# a poll (serve --verbose logs each request).
serve "$WORK/run/run.db" main --verbose
browser --virtual-time-budget=100000000 --dump-dom "${URL}?poll=200" >"$WORK/replaced.html" &
BROWSER_PID=$!
for _ in $(seq 600); do
    [ "$(grep -c 'GET /api/programs ' "$WORK/main.err")" -ge 2 ] && break
    sleep 0.1
done
[ "$(grep -c 'GET /api/programs ' "$WORK/main.err")" -ge 2 ] ||
    fail "the page did not load and poll within 60 s: $(tail -3 "$WORK/main.err")"
run_tiny 6 --force
wait $BROWSER_PID || fail "Chromium did not finish on the page of a replaced store"
python3 - "$WORK/replaced.html" <<'PY' || fail "the open page did not notice the replaced store"
import sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
state, text = d.attr("live", "data-state"), d.text("live")
print(f"open page after run --force: [{state}] {text}; {d.text('error')}")
ok = state == "replaced" and "replaced" in text and "live" not in text.split(":")[0]
sys.exit(0 if ok and "Reload" in (d.text("error") or "") else 1)
PY
# A page loaded now shows the new run (12 iterations before, 6 now).
browser --dump-dom "$URL" >"$WORK/new.html"
python3 - "$WORK/new.html" "$WORK/run/run.db" <<'PY' || fail "a page loaded after the replacement does not show the new run"
import sqlite3, sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
n = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True).execute("select count(*) from programs").fetchone()[0]
print(f"new page: [{d.attr('live', 'data-state')}] {d.text('card-programs')} programs (store: {n})")
sys.exit(0 if d.attr("live", "data-state") == "live" and d.text("card-programs") == str(n) else 1)
PY

# --- A deleted store: the page says so and is not live.
python3 - "$WORK/run/run.db" "$WORK/keep.db" <<'PY'
import sqlite3, sys
sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))
PY
rm -f "$WORK/run/run.db" "$WORK/run/run.db-wal" "$WORK/run/run.db-shm"
browser --dump-dom "$URL" >"$WORK/deleted.html"
python3 - "$WORK/deleted.html" <<'PY' || fail "the page on a deleted store does not say so"
import sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
print(f"deleted store: [{d.attr('live', 'data-state')}] {d.text('live')}; {d.text('error')}")
sys.exit(0 if d.attr("live", "data-state") == "gone" and "run.db" in (d.text("error") or "") else 1)
PY
stop_server "$SERVER_PID"

# --- A malformed store: the server answers 500 and the page says that, with
# the store's message, not "server unreachable".
python3 - "$WORK/keep.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DROP TABLE llm_calls")
db.commit()
PY
serve "$WORK/keep.db" malformed
browser --dump-dom "$URL" >"$WORK/malformed.html"
python3 - "$WORK/malformed.html" <<'PY' || fail "a server error is not shown as one"
import sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
live, err = d.text("live"), d.text("error") or ""
print(f"malformed store: [{d.attr('live', 'data-state')}] {live}; {err}")
ok = d.attr("live", "data-state") == "error" and "500" in live and "no such table: llm_calls" in err
sys.exit(0 if ok and "unreachable" not in live else 1)
PY
stop_server "$SERVER_PID"

# --- 300 idle connections (a third of them stalled mid-request) held open
# while a page loads: it loads, live, with every program.
run_tiny 4 --force
serve "$WORK/run/run.db" idle
python3 - "$URL" 300 60 >"$WORK/holder.out" 2>&1 <<'PY' &
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
socks = []
for i in range(int(sys.argv[2])):
    s = socket.create_connection((u.hostname, u.port))
    if i % 3 == 0:
        s.send(b"GET /api/summ")
    socks.append(s)
print("holding", len(socks), flush=True)
time.sleep(float(sys.argv[3]))
PY
HOLDER_PID=$!
for _ in $(seq 100); do grep -q holding "$WORK/holder.out" && break; sleep 0.1; done
grep -q "holding 300" "$WORK/holder.out" || fail "could not open 300 connections: $(cat "$WORK/holder.out")"
browser --dump-dom "$URL" >"$WORK/idle.html"
kill "$HOLDER_PID" 2>/dev/null || true
wait "$HOLDER_PID" 2>/dev/null || true
python3 - "$WORK/idle.html" "$WORK/run/run.db" <<'PY' || fail "300 idle connections stopped the page"
import sqlite3, sys
from dashboard_dom import Dom
d = Dom(open(sys.argv[1]).read())
n = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True).execute("select count(*) from programs").fetchone()[0]
print(f"with 300 idle connections: [{d.attr('live', 'data-state')}] {d.text('live')}")
sys.exit(0 if d.attr("live", "data-state") == "live" and d.attr("tree-stats", "data-nodes") == str(n) else 1)
PY

# --- More connections than the server takes from one address: what the
# library says goes through kevolve's log, a few lines, not thousands.
python3 - "$URL" "$WORK/idle.err" <<'PY' || fail "the connection flood test could not run"
import re, resource, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
limit = int(re.search(r"up to \d+ connections \((\d+) from one address\)", open(sys.argv[2]).read()).group(1))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = limit + 200
if hard != resource.RLIM_INFINITY and hard < want + 64:
    print(f"SKIP flood: {want} connections need more descriptors than this shell allows ({hard})")
    sys.exit(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (want + 64, hard))
socks = [socket.create_connection((u.hostname, u.port)) for _ in range(want)]
time.sleep(1)
print(f"held {len(socks)} connections against a limit of {limit} from one address")
PY
stop_server "$SERVER_PID"
python3 - "$WORK/idle.err" <<'PY' || fail "serve's standard error has raw library lines or a flood of them"
import sys
lines = open(sys.argv[1]).read().splitlines()
raw = [l for l in lines if not l.startswith("kevolve: ")]
lib = [l for l in lines if "libmicrohttpd" in l]
print(f"serve's stderr: {len(lines)} lines, {len(lib)} from libmicrohttpd, {len(raw)} not kevolve's")
sys.exit(0 if not raw and len(lines) < 40 else 1)
PY
echo "PASS: dashboard serving"
