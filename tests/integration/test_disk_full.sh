#!/bin/bash
# A real full disk (a small tmpfs): a start on a full disk fails with exit 5
# and leaves nothing that blocks the next start; a run whose disk fills up
# stops with "stopped: disk full ..." and exit 5, keeps every result
# committed before, and resumes to the end once there is room. Needs to
# mount a tmpfs: as root, or in a user namespace (unshare); skips (77)
# where neither is allowed.
. "$(dirname "$0")/lib.sh"

mnt="$WORK/mnt"
if [ -z "${KV_IN_NAMESPACE:-}" ]; then
    mkdir -p "$mnt"
    if ! { [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=3m tmpfs "$mnt" 2>/dev/null; }; then
        if unshare -r -m true 2>/dev/null; then
            rm -rf "$WORK" # the script starts over in the namespace, with its own
            KV_IN_NAMESPACE=1 exec unshare -r -m bash "$0"
        fi
        echo "SKIP: cannot mount a small tmpfs here (not root, no user namespaces)"
        exit 77
    fi
else
    mkdir -p "$mnt"
    mount -t tmpfs -o size=3m tmpfs "$mnt" || { echo "SKIP: no tmpfs in the namespace"; exit 77; }
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$WORK"' EXIT

fill() { dd if=/dev/zero of="$mnt/fill" bs=64k 2>/dev/null || true; }
cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 40
random_seed: 4
database:
  num_islands: 2
evaluator:
  timeout: 20
YAML

# A start on a full disk.
fill
expect_exit 5 "$KV" run --config "$WORK/config.yaml" --output "$mnt/a" -q
grep -qi "disk full\|No space left" "$WORK/err.txt" || fail "start on a full disk: $(cat "$WORK/err.txt")"
grep -q "(null)" "$WORK/err.txt" && fail "(null) in: $(cat "$WORK/err.txt")"
rm -f "$mnt/fill"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$mnt/a" -q
rm -rf "$mnt/a"

# A disk that fills up during the run.
KV_TEST_EVAL_SLEEP=0.1 "$KV" run --config "$WORK/config.yaml" --output "$mnt/b" -q 2>"$WORK/b.err" &
pid=$!
for _ in $(seq 1 300); do
    n=$( [ -f "$mnt/b/run.db" ] && sql "$mnt/b/run.db" "select count(*) from programs" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 5 ] && break
    sleep 0.05
done
[ "${n:-0}" -ge 5 ] || fail "the run did not get going"
sql "$mnt/b/run.db" "select id, iteration, source from programs order by id" >"$WORK/before.rows"
fill
set +e
wait $pid
rc=$?
set -e
rm -f "$mnt/fill"
[ $rc -eq 5 ] || fail "a run that filled its disk exited $rc: $(cat "$WORK/b.err")"
grep -q "stopped: disk full writing" "$WORK/b.err" || fail "no 'stopped: disk full': $(cat "$WORK/b.err")"
grep -q "(null)" "$WORK/b.err" && fail "(null) in: $(cat "$WORK/b.err")"
sql "$mnt/b/run.db" "select id, iteration, source from programs order by id" >"$WORK/after.rows"
head -n "$(wc -l <"$WORK/before.rows")" "$WORK/after.rows" | diff "$WORK/before.rows" - >&2 ||
    fail "programs committed before the disk filled were lost"
expect_exit 0 "$KV" status "$mnt/b"
expect_exit 0 "$KV" resume "$mnt/b" -q
[ "$(sql "$mnt/b/run.db" "select max(iteration) from programs")" -eq 40 ] || fail "resume did not finish"
echo "ok"
