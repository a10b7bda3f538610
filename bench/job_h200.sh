#!/usr/bin/env bash
# The README's main job on the GPU machine in one device call, with what a
# later call needs sent back through $OUT (the device tool returns at most
# eight files): bench/pipeline_h200.sh's "job" part in a work folder, then
# its statistics, its best program, the end of its log and a gzipped copy
# of its store (sqlite's online backup, so a store still open is copied
# whole). A later call takes the store in .dev, which travels with the
# binaries (`cp FILES_AT/run.db.gz .dev/`, carry [".dev"]):
# `TABLE_FROM=.dev/run.db.gz bench/job_h200.sh` prints the table of
# bench/gqa_h200.sh for the run's fastest programs at PICK's scenarios.
# Usage: bench/job_h200.sh            (OUT, MINUTES (7), PARALLEL (12),
#                                      REPEAT (3), as pipeline_h200.sh)
#        TABLE_FROM=STORE.gz bench/job_h200.sh   the decode table of a
#        stored run (PICK, DEADLINE (330)) instead of a job.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/kevolve_job_out}
W=/tmp/kevolve_job
mkdir -p "$OUT"
if [ -n "${TABLE_FROM:-}" ]; then
    rm -rf "$W" && mkdir -p "$W/run"
    gunzip -c "$TABLE_FROM" >"$W/run/run.db" || exit 1
    . bench/device_env.sh
    PICK=${PICK:-decode_16x8_b1_l1024 decode_40x8_b1_l1024} DEADLINE=${DEADLINE:-330} \
        OUT=$OUT exec bash bench/gqa_h200.sh "$W/run"
fi
rm -rf "$W"
PARTS=job OUT=$W MINUTES=${MINUTES:-7} PARALLEL=${PARALLEL:-12} REPEAT=${REPEAT:-3} \
    bash bench/pipeline_h200.sh 2>&1 | tee "$OUT/job.log"
cp "$W/job_stats.txt" "$W/run_best.cu" "$OUT/" 2>/dev/null
tail -n 60 "$W/run.log" >"$OUT/run_tail.log" 2>/dev/null
python3 - "$W/run/run.db" "$OUT/run.db" <<'PY' && gzip -f "$OUT/run.db"
import sqlite3, sys
src = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close()
PY
ls -l "$OUT"
