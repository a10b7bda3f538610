#!/bin/bash
# A device that fails mid-run. kevolve_faults makes device 1 of the opencl
# backend fail (KV_FAULT_DEVICE=opencl:1) beside a working device 0 (PoCL
# shows two, POCL_DEVICES): `kevolve devices --check` tells them apart; in
# a run, the evaluation handed device 1 fails as the harness's, device 1
# fails its check and is taken out of rotation (a warning, a device_out
# event in the store), the evaluation is started again on device 0 and the
# run goes on: no program is stored failed for the device's fault, and
# every stored evaluation ran on device 0; `kevolve status` shows both
# devices' states. A device that reports an Xid during an evaluation and
# then needs a reset (KV_FAULT_DEVICE=opencl:1:xid) goes out the same way,
# its evaluation moved; a candidate after which every device reports one is
# moved once, then stored as device_fault. With its only device failing, a
# run stops and says so. Skips (77) without two PoCL devices.
. "$(dirname "$0")/lib.sh"

FAULTY=${KV_FAULTS_BINARY:?KV_FAULTS_BINARY must name kevolve_faults}
two_pocl_devices_or_skip

export KV_FAULT_DEVICE=opencl:1
expect_exit 1 "$FAULTY" devices --check 1 --backend opencl
grep -q "device 1: not working: .*injected fault" "$WORK/out.txt" ||
    fail "the failing device was not named: $(cat "$WORK/out.txt")"
expect_exit 0 "$FAULTY" devices --check 0 --backend opencl
grep -q "device 0: ok" "$WORK/out.txt" || fail "device 0 not ok: $(cat "$WORK/out.txt")"

cat >"$WORK/config.yaml" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/softmax/opencl/baseline.cl
max_iterations: 6
random_seed: 3
evaluator:
  task: softmax
  backend: opencl
  quick: true
  timeout: 300
  max_retries: 0
  devices: auto
  parallel_evaluations: 2
YAML
expect_exit 0 "$FAULTY" run --config "$WORK/config.yaml" --output "$WORK/run"
grep -q "opencl device 1 taken out of rotation" "$WORK/err.txt" ||
    fail "no warning that device 1 went out: $(cat "$WORK/err.txt")"
db="$WORK/run/run.db"
out=$(sql "$db" "select json_extract(data, '$.device') || '|' || json_extract(data, '$.left') from events where kind = 'device_out'")
[ "$out" = "1|1" ] || fail "expected one device_out event for device 1, one left: '$out'"
bad=$(sql "$db" "select count(*) from programs where reason_code in ('no_device', 'evaluator_crash')")
[ "$bad" -eq 0 ] || fail "$bad programs stored failed for the device's fault"
used=$(sql "$db" "select distinct a.value from artifacts a where a.name = 'device_index'" | tr '\n' ' ')
[ "$used" = "0 " ] || fail "evaluations stored from a device out of rotation: '$used'"

# kevolve status shows each device's state.
expect_exit 0 "$KV" status "$WORK/run"
grep -q "^device     opencl 1 .*out of rotation: an injected fault" "$WORK/out.txt" ||
    fail "status does not show device 1 out: $(cat "$WORK/out.txt")"
grep -q "^device     opencl 0 .*in rotation" "$WORK/out.txt" ||
    fail "status does not show device 0 in rotation: $(cat "$WORK/out.txt")"

# A device that works but reports an Xid during an evaluation and then needs
# a reset: checked, taken out, its evaluation moved to device 0 uncounted.
export KV_FAULT_DEVICE=opencl:1:xid
expect_exit 0 "$FAULTY" run --config "$WORK/config.yaml" --output "$WORK/run-xid"
grep -q "opencl device 1 reported Xid 79" "$WORK/err.txt" ||
    fail "no warning of the Xid: $(cat "$WORK/err.txt")"
db="$WORK/run-xid/run.db"
out=$(sql "$db" "select json_extract(data, '$.device') || '|' || json_extract(data, '$.reason') from events where kind = 'device_out'")
case "$out" in "1|Xid 79"*) ;; *) fail "expected device 1 out for the Xid: '$out'" ;; esac
bad=$(sql "$db" "select count(*) from programs where reason_code in ('no_device', 'evaluator_crash', 'device_fault')")
[ "$bad" -eq 0 ] || fail "$bad programs stored failed for the device's Xid"
moved=$(sql "$db" "select count(*) from artifacts where name = 'moved_from_device'")
[ "$moved" -ge 1 ] || fail "no evaluation says it moved off device 1"

# A kernel after which every device reports an Xid cannot take them all
# out one by one unnoticed: moved once, then it is its failure (device_fault)
# and, with no device left, the run stops.
export KV_FAULT_DEVICE=opencl:0:xid,opencl:1:xid
expect_exit 1 "$FAULTY" run --config "$WORK/config.yaml" --output "$WORK/run-xid2"
code=$(sql "$WORK/run-xid2/run.db" "select reason_code from programs where reason_code = 'device_fault'")
[ "$code" = "device_fault" ] || fail "expected the evaluation stored as device_fault: '$code' ($(cat "$WORK/err.txt"))"

# Its only device failing, the run stops and says why.
export POCL_DEVICES="pthread" KV_FAULT_DEVICE=opencl:0
expect_exit 1 "$FAULTY" run --config "$WORK/config.yaml" --output "$WORK/run1"
grep -q "opencl device 0 taken out of rotation" "$WORK/err.txt" ||
    fail "the last device's failure was not said: $(cat "$WORK/err.txt")"
echo "ok"
