#!/bin/bash
# A finished run on a read-only file system (an archive, a shared results
# folder) is readable: status, best, report and serve read it where SQLite
# cannot create the WAL index beside it. A run that stopped with writes
# still in its -wal and no index is refused with a message that says why
# and what to do, not "unable to open database file". The read-only file
# system is a read-only bind mount in a mount namespace of our own
# (`unshare -rm`, no root needed where user namespaces are allowed).
. "$(dirname "$0")/lib.sh"

if ! unshare -rm sh -c "mount --bind -o ro '$WORK' '$WORK'" 2>/dev/null; then
    echo "SKIP: cannot make a read-only bind mount here (unshare -rm + mount)"
    exit 77
fi

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 8
random_seed: 4
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/runs/done" -q
# (Nothing may read the store before the read-only part: a reader leaves
# the WAL index behind, and SQLite can read with one that exists.)
[ ! -e "$WORK/runs/done/run.db-shm" ] || fail "a finished run left its WAL index (the test needs none)"
mkdir -p "$WORK/out"

# readonly SCRIPT: runs SCRIPT (bash) with $WORK/runs mounted read-only;
# $KV, $WORK and $TINY are set inside.
readonly_run() {
    unshare -rm env KV="$KV" WORK="$WORK" bash -c "mount --bind -o ro '$WORK/runs' '$WORK/runs' && $1"
}

readonly_run '
set -e
touch "$WORK/runs/done/probe" 2>/dev/null && { echo "the mount is writable"; exit 1; }
"$KV" status "$WORK/runs/done" >"$WORK/out/status.txt"
"$KV" status "$WORK/runs/done" --json >"$WORK/out/status.json"
"$KV" best "$WORK/runs/done" -o "$WORK/out/best.py" 2>"$WORK/out/best.err"
"$KV" report "$WORK/runs/done" -o "$WORK/out/report.html" 2>"$WORK/out/report.err"
"$KV" serve "$WORK/runs/done" --port 0 >"$WORK/out/serve.txt" 2>"$WORK/out/serve.err" &
pid=$!
url=
for _ in $(seq 100); do
    url=$(sed -n "s/^serving .* at \(http:[^ ]*\)$/\1/p" "$WORK/out/serve.txt")
    [ -n "$url" ] && break
    sleep 0.1
done
python3 -c "import sys, urllib.request; open(sys.argv[2], \"wb\").write(urllib.request.urlopen(sys.argv[1] + \"api/summary\").read())" \
    "$url" "$WORK/out/summary.json"
kill $pid
wait $pid
' >"$WORK/ro.log" 2>&1 || fail "reading the read-only run failed: $(cat "$WORK/ro.log" "$WORK"/out/*.err 2>/dev/null)"

grep -q "^programs   9:" "$WORK/out/status.txt" || fail "status: $(cat "$WORK/out/status.txt")"
best_id=$(sql "$WORK/runs/done/run.db" "select id from programs where status = 'ok' order by fitness desc, id limit 1")
python3 - "$WORK/out/status.json" "$WORK/out/summary.json" "$best_id" <<'PY' || fail "the read-only run reads wrong"
import json, sys
status, summary = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert status["programs"] == 9, status["programs"]
assert status["best"]["id"] == int(sys.argv[3]), status["best"]
assert summary["programs"] == 9, summary["programs"]
PY
python3 - "$WORK/runs/done/run.db" "$best_id" "$WORK/out/best.py" <<'PY' || fail "best wrote another program than the best"
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
src = con.execute("select source from programs where id = ?", (int(sys.argv[2]),)).fetchone()[0]
assert open(sys.argv[3]).read() == src
PY
grep -q "kv-data\|KV_DATA" "$WORK/out/report.html" || fail "the report holds no data"

# A run killed with its last writes in the -wal, its index gone: refused,
# saying why and what to do (exit 5: the folder cannot be written).
KV_TEST_EVAL_SLEEP=0.05 "$KV" run --config "$WORK/config.yaml" --output "$WORK/runs/killed" \
    --iterations 400 -q &
pid=$!
for _ in $(seq 200); do
    [ -s "$WORK/runs/killed/run.db-wal" ] && [ "$(sql "$WORK/runs/killed/run.db" "select count(*) from programs")" -ge 5 ] && break
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
rm -f "$WORK/runs/killed/run.db-shm"
[ -s "$WORK/runs/killed/run.db-wal" ] || fail "the killed run left no writes in its -wal"
set +e
readonly_run '"$KV" status "$WORK/runs/killed"' >"$WORK/killed.out" 2>"$WORK/killed.err"
rc=$?
set -e
[ "$rc" -eq 5 ] || fail "status of a killed run on a read-only folder exited $rc: $(cat "$WORK/killed.err")"
grep -q "its last writes are in .*run.db-wal.*copy the folder somewhere writable" "$WORK/killed.err" ||
    fail "the refusal does not say why and what to do: $(cat "$WORK/killed.err")"
echo "ok"
