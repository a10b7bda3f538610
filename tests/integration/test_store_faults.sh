#!/bin/bash
# Fault injection in the store, as SQLite tests itself: a small real run is
# repeated with its Nth write to the store failing (disk full from then on,
# or one I/O error), for every N in turn. Each time kevolve must stop
# cleanly (exit 5 with "stopped: disk full writing ..." or "I/O error on
# ...", never a crash or "(null)"), or finish (exit 0) when the fault did not
# matter; nothing committed may be lost (the stored programs are a prefix of
# the fault-free run's); a run that exits 0 leaves its write-ahead log
# empty (run.db alone holds it: a fault in the final checkpoint is exit 5,
# said, not a 0 beside a full -wal; issue 45.7); and `kevolve resume` (or
# a new run, when the start itself failed) must take it to the end. kevolve_faults is kevolve with the
# fault layer of tests/tools/fault_vfs.c.
. "$(dirname "$0")/lib.sh"
KVF=${KV_FAULTS_BINARY:-${KV_BUILD_DIR:-}/tests/kevolve_faults}
[ -x "$KVF" ] || fail "no kevolve_faults binary (KV_FAULTS_BINARY)"
# A version probe through a pyenv shim costs more than a run: keep the
# programs kevolve asks for their version in the system's folders.
export PATH=/usr/bin:/bin

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 1
random_seed: 21
database:
  num_islands: 2
evaluator:
  timeout: 20
  parallel_evaluations: 1
YAML
KV_FAULT_COUNT="$WORK/count" "$KVF" run --config "$WORK/config.yaml" --output "$WORK/ref" -q ||
    fail "the fault-free run failed"
points=$(cat "$WORK/count")
[ "$points" -gt 20 ] || fail "only $points write operations counted: the fault layer is not in place"

# One fault: point N of kind K in folder D. Leaves D/rc, D/err.txt,
# D/before/ (the store as the fault left it) and D/after/ (after recovery).
cat >"$WORK/one.sh" <<'SH'
#!/bin/bash
n=$1 kind=$2 d=$3
once=0
[ "$kind" = io ] && once=1
set +e
KV_FAULT_AT=$n KV_FAULT_KIND=$kind KV_FAULT_ONCE=$once "$KVF" run --config "$CFG" --output "$d/run" -q 2>"$d/err.txt"
echo $? >"$d/rc"
mkdir -p "$d/before"
cp "$d/run"/run.db* "$d/before/" 2>/dev/null
if [ -f "$d/run/run.db" ]; then
    "$KV" resume "$d/run" -q 2>"$d/resume.txt"
    rc=$?
    if [ $rc -eq 2 ]; then # nothing to resume (the start failed): a new run replaces it
        "$KV" run --config "$CFG" --output "$d/run" -q 2>>"$d/resume.txt"
        rc=$?
    fi
else
    "$KV" run --config "$CFG" --output "$d/run" -q 2>"$d/resume.txt"
    rc=$?
fi
echo $rc >"$d/resume_rc"
mkdir -p "$d/after"
cp "$d/run"/run.db* "$d/after/" 2>/dev/null
exit 0
SH
chmod +x "$WORK/one.sh"
export KVF KV CFG="$WORK/config.yaml"
for kind in full io; do
    for n in $(seq 1 "$points"); do
        mkdir -p "$WORK/f/$kind/$n"
        echo "$n $kind $WORK/f/$kind/$n"
    done
done | xargs -P 2 -n 3 "$WORK/one.sh"

python3 - "$WORK" "$points" <<'PY' || fail "see above"
import glob, hashlib, os, sqlite3, sys
work, points = sys.argv[1], int(sys.argv[2])
Q = ("select id, parent_id, iteration, island, status, coalesce(fitness, 'nan'), "
     "is_migrant, source from programs order by id")
def rows(folder):
    db = os.path.join(folder, "run.db")
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(db)
    r = [tuple(x) for x in con.execute(Q)]
    con.close()
    return r
ref = rows(os.path.join(work, "ref"))
top = max(r[2] for r in ref)
bad = []
outcomes = {}
for kind in ("full", "io"):
    for n in range(1, points + 1):
        d = os.path.join(work, "f", kind, str(n))
        rc = int(open(os.path.join(d, "rc")).read())
        err = open(os.path.join(d, "err.txt"), errors="replace").read()
        what = f"{kind} fault at write {n}"
        outcomes[(kind, rc)] = outcomes.get((kind, rc), 0) + 1
        if rc not in (0, 5):
            bad.append(f"{what}: exit {rc}: {err.strip()[-300:]}")
        wal = os.path.join(d, "before", "run.db-wal")
        if rc == 0 and os.path.exists(wal) and os.path.getsize(wal) > 0:
            bad.append(f"{what}: exit 0 with {os.path.getsize(wal)} bytes left in run.db-wal")
        if "(null)" in err:
            bad.append(f"{what}: '(null)' in the message: {err.strip()[-300:]}")
        if rc == 5:
            # A full disk met in a sync (fsync) is an I/O error to SQLite.
            said_full, said_io = "disk full writing" in err, "I/O error on" in err
            if kind == "full" and said_full:
                outcomes["said disk full"] = outcomes.get("said disk full", 0) + 1
            if not (said_io or (kind == "full" and said_full)):
                bad.append(f"{what}: the message says neither 'disk full writing' nor "
                           f"'I/O error on': {err.strip()[-300:]}")
        try:
            before = rows(os.path.join(d, "before")) or []
        except sqlite3.Error as e:
            bad.append(f"{what}: the store it left cannot be read: {e}")
            continue
        if before != ref[:len(before)]:
            bad.append(f"{what}: the stored programs are not those of the fault-free run")
        resume_rc = int(open(os.path.join(d, "resume_rc")).read())
        if resume_rc != 0:
            bad.append(f"{what}: recovery exited {resume_rc}: "
                       + open(os.path.join(d, "resume.txt"), errors="replace").read()[-300:])
            continue
        after = rows(os.path.join(d, "after")) or []
        if after[:len(before)] != before:
            bad.append(f"{what}: programs committed before the fault were lost or changed")
        if not after or max(r[2] for r in after) != top:
            bad.append(f"{what}: recovery did not finish the run")
if outcomes.get("said disk full", 0) < outcomes.get(("full", 5), 0) * 0.8:
    bad.append("most disk-full stops do not say 'disk full writing'")
for b in bad[:20]:
    print("FAIL:", b, file=sys.stderr)
print("outcomes:", outcomes)
sys.exit(1 if bad else 0)
PY
echo "ok: $points write points, each failed as a full disk and as an I/O error"
