#!/bin/bash
# A short evolution of the gqa_attention task on OpenCL (PoCL in CI) at the
# small shapes of gqa_attention_small, from the seed (the naive kernel with
# its tune axes), with the built-in tune and crossover mutators: the harness
# judges the start
# correct, tune children are built, checked on every scenario and held-out
# shape and timed, and their per-scenario metrics land in the store.
# Skips (77) when no OpenCL platform is found.
. "$(dirname "$0")/lib.sh"

ex=$KV_SOURCE_DIR/examples/gqa_attention
seed=$KV_SOURCE_DIR/tasks/gqa_attention/opencl/seed.cl
set +e
"$KV" eval --task gqa_attention_small --backend opencl --stage 1 --quick --json "$seed" \
    >"$WORK/probe.json" 2>"$WORK/probe.err"
rc=$?
set -e
if [ $rc -ne 0 ]; then
    if grep -qiE "no OpenCL|not built|opencl" "$WORK/probe.err"; then
        echo "SKIP: no OpenCL platform: $(head -c 300 "$WORK/probe.err")"
        exit 77
    fi
    cat "$WORK/probe.err" >&2
    fail "kevolve eval of the OpenCL seed failed (exit $rc)"
fi
grep -q '"correct":1' "$WORK/probe.json" || fail "the OpenCL seed was rejected: $(head -c 600 "$WORK/probe.json")"

expect_exit 0 "$KV" run --config "$ex/config_ci.yaml" --output "$WORK/run"
db="$WORK/run/run.db"
[ "$(sql "$db" "select json_extract(metrics, '\$.correct') from programs where mutator = 'initial'")" = 1 ] ||
    fail "the start was not judged correct"
n=$(sql "$db" "select count(*) from programs where mutator like '%tune%' and json_extract(metrics, '\$.correct') = 1")
[ "$n" -ge 2 ] || fail "too few correct tune children: $n"
sql "$db" "select metrics from programs where mutator like '%tune%' and json_extract(metrics, '\$.correct') = 1 limit 1" |
    grep -q '"decode_40x8_b2_l200_speedup"' || fail "no per-scenario speedup stored for a tune child"
echo "ok: $(sql "$db" "select count(*) from programs") programs, best $(sql "$db" "select max(fitness) from programs where status = 'ok'")"
