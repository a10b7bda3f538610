#!/usr/bin/env bash
# Issue 23.5 on the one-GPU machine, in one call: (1) the README's main job
# with `devices: auto` (this kevolve) against KV_OLD (a kevolve of the single
# GPU lock, before per-device slots), side by side for LIMIT seconds each:
# children per minute must not drop; (2) an injected fault in a run: a
# softmax evolution on cuda whose children include a kernel that writes
# through a wild pointer (illegal_address) and one that hangs; the run must
# go on with the device checked after each (`kevolve devices --check`), the
# two recorded failed with their reasons, and the device still in rotation;
# what NVML reported during each evaluation (an illegal address is an Xid
# the device survives) is printed beside its verdict.
# Needs bench/device_pack.sh's .dev (carry it) and .dev/bin/kevolve-old, a
# Release build of cf558e5 (the single GPU lock, before issue 19).
# Usage: bench/devices_h200.sh   (OUT, LIMIT (120) optional)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_devices_h200}
LIMIT=${LIMIT:-120}
mkdir -p "$OUT"
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
echo "== (1) main job, old single lock against devices: auto, $LIMIT s each"
OUT=$OUT/ab bench/main_job_ab.sh "${KV_OLD:-.dev/bin/kevolve-old}" "$KV" --backend cuda --repeat 1 \
    --time-limit "$LIMIT" --iterations 400 --parallel 6,6 | tail -n 4
echo "== (2) faults in a run: illegal_address and a hang among the initial programs"
cat >"$OUT/faults.yaml" <<YAML
initial_programs:
  - $ROOT/tasks/softmax/cuda/baseline.cu
  - $ROOT/tests/data/kernels/cuda/illegal_address.cu
  - $ROOT/tests/data/kernels/cuda/hang.cu
  - $ROOT/tasks/softmax/cuda/fast.cu
max_iterations: 8
evaluator:
  task: softmax
  backend: cuda
  quick: true
  timeout: 120
  kernel_timeout: 5
  parallel_evaluations: 4
YAML
"$KV" run --config "$OUT/faults.yaml" --output "$OUT/faults" >"$OUT/faults.log" 2>&1
echo "run exit $?"
grep -E "taken out of rotation|device" "$OUT/faults.log" | head -5
"$KV" status "$OUT/faults" | grep -E "^programs|^device|failures|  [0-9]+ " | head -12
# What the driver said during each evaluation (NVML: Xid events, ECC).
python3 - "$OUT/faults/run.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for pid, status, code, errs in con.execute(
        "select p.id, p.status, p.reason_code, a.value from programs p left join artifacts a"
        " on a.program_id = p.id and a.name = 'device_errors' order by p.id"):
    print(f"program {pid}: {status} {code or ''} device_errors={errs or '-'}")
PY
"$KV" devices --check 0 --backend cuda
tar -C "$OUT" -czf "$OUT/../devices_h200.tgz" . && mv "$OUT/../devices_h200.tgz" "$OUT/"
