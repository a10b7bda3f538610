# Shared helpers for the end-to-end tests (sourced, not run).
set -eu
: "${KV_BINARY:?KV_BINARY must name the kevolve binary}"
: "${KV_SOURCE_DIR:?KV_SOURCE_DIR must name the source tree}"
KV=$KV_BINARY
TINY=$KV_SOURCE_DIR/tests/data/tiny
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kevolve-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# sql DB QUERY: prints the rows, fields separated by '|'.
sql() {
    python3 - "$1" "$2" <<'PY'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for row in con.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PY
}

# expect_exit CODE COMMAND...: runs COMMAND, fails unless it exits with CODE.
expect_exit() {
    want=$1
    shift
    set +e
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || {
        cat "$WORK/out.txt" "$WORK/err.txt" >&2
        fail "'$*' exited $got, expected $want"
    }
}

# two_pocl_devices_or_skip: PoCL shows two OpenCL CPU devices from here on
# (POCL_DEVICES), or the test skips (77) saying what it saw.
two_pocl_devices_or_skip() {
    export POCL_DEVICES="pthread pthread"
    if ! "$KV" devices --json >"$WORK/devices.json" 2>/dev/null ||
        ! python3 -c 'import json,sys; d=[b for b in json.load(open(sys.argv[1])) if b["backend"]=="opencl"][0]; sys.exit(len(d.get("devices", [])) != 2)' "$WORK/devices.json"; then
        echo "SKIP: PoCL does not show two devices here: $(cat "$WORK/devices.json")"
        exit 77
    fi
}

# objectives_config FILE: a short CPU run of swiglu from its naive start
# weighing speedup and error (test_objectives, test_dashboard_pareto),
# every child timed whole (no screen: a screened child is on no front, and
# the tests want a front of several).
objectives_config() {
    cat >"$1" <<YAML
initial_program: $KV_SOURCE_DIR/tasks/swiglu/cpu/naive.c
max_iterations: 10
random_seed: 5
objectives: [speedup, error]
database:
  num_islands: 1
evaluator:
  task: swiglu
  backend: cpu
  quick: true
  scenarios: [decode_i3072_t64, decode_i17408_t8]
  screening: false
  timeout: 120
YAML
}
