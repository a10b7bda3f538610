#!/bin/bash
# Energy per call (evaluator.energy, kevolve eval --energy). Without an
# energy counter (the cpu backend has none) the figure is absent, never a
# zero. With one (kevolve_faults injects a counter that moves in steps as
# NVML's does: KV_FAULT_ENERGY=300:0.05, 300 W in steps of 50 ms), each
# timed scenario reports its energy per call and the mean power: the power
# the counter says, the energy that power over the calls' time, the counter
# seen moving often enough, the error of counting calls by block small,
# in-place tasks (rope) too. A run with evaluator.energy stores the figures
# with the program's metrics; evaluator.energy without a built-in task is
# refused by the config check.
. "$(dirname "$0")/lib.sh"

FAULTY=${KV_FAULTS_BINARY:?KV_FAULTS_BINARY must name kevolve_faults}
SW=$KV_SOURCE_DIR/tasks/swiglu/cpu/naive.c

expect_exit 0 "$KV" eval --task swiglu --backend cpu --quick --energy --scenarios decode_i3072_t64 "$SW"
python3 - "$WORK/out.txt" <<'PY' || fail "energy reported without a counter"
import json, sys
r = json.load(open(sys.argv[1]))
assert not [k for k in r["metrics"] if "energy" in k or "power" in k], r["metrics"]
assert "energy" not in r["artifacts"]["scenarios"][0]
PY

export KV_FAULT_ENERGY=300:0.05
expect_exit 0 "$FAULTY" eval --task swiglu --backend cpu --quick --energy \
    --scenarios decode_i3072_t64,decode_i17408_t8 "$SW"
python3 - "$WORK/out.txt" <<'PY' || fail "energy figures wrong: $(cat "$WORK/err.txt")"
import json, sys
r = json.load(open(sys.argv[1]))
m, scen = r["metrics"], r["artifacts"]["scenarios"]
assert len(scen) == 2
for s in scen:
    e = s["energy"]
    assert abs(s["power_w"] - 300) < 15, s
    # energy per call = power x the calls' time, in microjoules
    assert abs(s["energy_uj"] - 300 * e["per_call_us"]) < 0.06 * s["energy_uj"], s
    assert e["counter_moves"] >= 5 and e["seconds"] >= 1.0, e
    assert 0 < e["rel_err"] < 0.05, e
    # a move the reader missed (a loaded machine) only lengthens the step
    assert 0.045 < e["move_every_s"] < 0.11, e
    assert m[s["name"] + "_energy_uj"] == s["energy_uj"]
PY
grep -q "energy .* uJ .* at 30[0-9] W\|energy .* uJ .* at 29[0-9] W" "$WORK/err.txt" ||
    fail "the verdict line does not say the energy: $(cat "$WORK/err.txt")"

# In place (rope's q and k are in-out tensors): the energy blocks work on
# the timed sets again and again, which the checks after them allow.
expect_exit 0 "$FAULTY" eval --task rope --backend cpu --quick --energy \
    --scenarios decode_16x8_t1 "$KV_SOURCE_DIR/tasks/rope/cpu/naive.c"
python3 - "$WORK/out.txt" <<'PY' || fail "rope's energy: $(cat "$WORK/err.txt")"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["artifacts"]["scenarios"][0]
assert r["artifacts"]["verdict"] == "correct", r["artifacts"]
assert abs(s["power_w"] - 300) < 15 and s["energy_uj"] > 0, s
PY

# In a run: the figures go with the program's metrics.
cat >"$WORK/config.yaml" <<YAML
initial_program: $SW
max_iterations: 1
evaluator:
  task: swiglu
  backend: cpu
  quick: true
  energy: true
  scenarios: [decode_i3072_t64]
  timeout: 120
YAML
expect_exit 0 "$FAULTY" run --config "$WORK/config.yaml" --output "$WORK/run"
n=$(sql "$WORK/run/run.db" "select count(*) from programs where json_extract(metrics, '$.decode_i3072_t64_energy_uj') > 0")
[ "$n" -ge 1 ] || fail "no stored program has its energy per call"
n=$(sql "$WORK/run/run.db" "select count(*) from scenario_results where scenario = 'decode_i3072_t64' and energy_j > 0")
[ "$n" -ge 1 ] || fail "no scenario row has its energy per call"

# evaluator.energy is the built-in harness's.
cat >"$WORK/bad.yaml" <<YAML
initial_program: $SW
evaluator: $KV_SOURCE_DIR/examples/matmul_c/evaluator.sh
evaluator:
  energy: true
YAML
expect_exit 2 "$KV" run --config "$WORK/bad.yaml" --output "$WORK/bad"
grep -q "evaluator.energy" "$WORK/err.txt" || fail "no word on evaluator.energy: $(cat "$WORK/err.txt")"
echo "ok"
