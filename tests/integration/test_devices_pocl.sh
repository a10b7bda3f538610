#!/bin/bash
# Every device of a backend: PoCL shows two OpenCL CPU devices
# (POCL_DEVICES), `kevolve devices` lists both, and a run with
# `evaluator.devices: auto` evaluates on both: evaluations are placed on
# either device (artifacts.device_index; the free device that waited
# longest first), each timed against the baseline of its own device (a
# baseline file per device), and the manifest names both. Skips (77)
# without an OpenCL platform that shows two devices.
. "$(dirname "$0")/lib.sh"

two_pocl_devices_or_skip
cat >"$WORK/config.yaml" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/softmax/opencl/baseline.cl
max_iterations: 8
random_seed: 3
evaluator:
  task: softmax
  backend: opencl
  quick: true
  timeout: 300
  devices: auto
  parallel_evaluations: 4
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
used=$(sql "$db" "select distinct a.value from artifacts a where a.name = 'device_index' order by 1" | tr '\n' ' ')
[ "$used" = "0 1 " ] || fail "children were not spread over both devices: '$used'"
baselines=$(ls "$WORK"/run/baseline-softmax-opencl*.json 2>/dev/null | wc -l)
[ "$baselines" -ge 2 ] || fail "expected a baseline per device, found: $(ls "$WORK/run")"
python3 - "$db" <<'PY' || fail "the manifest does not name both devices"
import json, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
v = con.execute("select value from meta where key = 'devices'").fetchone()
d = json.loads(v[0])
devs = d.get("devices", d) if isinstance(d, dict) else d
assert len(devs) == 2, d
PY
echo "ok"
