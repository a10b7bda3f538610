#!/usr/bin/env bash
# Two exported PyTorch packages in one process (issue 45.1), where PyTorch
# is installed (the GPU machine; CI has none): rmsnorm's and swiglu's
# generic exports (--compile-only --torch, from the stores test_export.sh
# writes: STORES/rmsrun.db and STORES/swrun.db) each alone, then both in
# one process in either order, through tests/tools/export_ops_check.py
# (float32 agreement at several shapes, torch.compile, a small Qwen3).
# A crash prints Python's traceback (faulthandler). Log: OUT/ops.log.
# Usage: STORES=.dev/stores bench/export_packages_h200.sh   (OUT, with .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/kevolve_export_out}
STORES=${STORES:-.dev/stores}
W=/tmp/kevolve_two_packages
rm -rf "$W" && mkdir -p "$W" "$OUT"
. bench/device_env.sh
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
for t in rms sw; do
    "$KV" export "$STORES/${t}run.db" -o "$W/${t}lib" --compile-only --torch >"$W/export_$t.log" 2>&1 ||
        { echo "export $t failed"; tail -5 "$W/export_$t.log"; exit 1; }
done
status=0
# SETS: which (each a "+"-joined list of packages), all four by default.
for set in ${SETS:-"rmslib" "swlib" "rmslib swlib" "swlib rmslib"}; do
    set=${set//+/ }
    args=""
    for l in $set; do args="$args $W/$l"; done
    # shellcheck disable=SC2086
    PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1 timeout 120 python3 tests/tools/export_ops_check.py $args >"$W/ops.log" 2>&1
    rc=$?
    { echo "== $set: exit $rc"; cat "$W/ops.log"; } >>"$OUT/ops.log"
    [ $rc -eq 0 ] || status=1
    printf '%-14s exit %3d  %s\n' "$set" "$rc" "$(grep -v '^ *$' "$W/ops.log" | tail -n 1 | cut -c1-150)"
done
exit $status
