#!/usr/bin/env bash
# Issue 20 on the GPU: what kevolve finds reaches Qwen3. Phases, in the
# order given (each can be its own device call; what a later one needs
# comes back under $OUT and travels in .dev/carry):
#
#   evolve   the README's main job on CUDA (examples/gqa_attention/run.sh:
#            the six seeds, built-in mutators, gqa_attention_search),
#            stopped gracefully (SIGINT: no new child, those in flight
#            finish) after MINUTES (default 5), killed DRAIN s later (90);
#            then `kevolve status`; its folder packed in $OUT/run.tgz.
#   export   kevolve export RUN -o EXPORT --task gqa_attention
#            --against-standard: the fastest correct program per scenario
#            of the full task (20 scenarios), judged as one candidate
#            (every scenario and the held-out shapes, full mode), its
#            PyTorch operator built, and each scenario timed against SDPA's
#            cuDNN and flash side by side (manifest: which to call).
#            RUN: $RUN, else .dev/carry/run, else the evolve phase's.
#   model    bench/qwen3_model.py on the export: Qwen3 (random bf16
#            weights, the published configurations) with attention from
#            the export against SDPA: greedy tokens identical, prefill and
#            CUDA-graph decode times, the share of calls served by the
#            evolved kernels. EXPORT: $EXPORT, else .dev/carry/export,
#            else the export phase's. MODELS: 0.6B,14B (14B with 8 layers);
#            QWEN_ARGS: more options (--decode eager, --parts decode);
#            QWEN_RESULT: the result's name under $OUT (qwen3.json).
#   verify   bench/export_choice.py (the operator with the manifest's
#            choice per shape against cuDNN and flash, side by side), then
#            `kevolve eval` of the exported source on the full task in full
#            mode (EVAL_TIMEOUT s, 420): choice.json, eval_full.json.
#
# Needs the packed binary (bench/device_pack.sh here, carry .dev).
# Usage (repository root, on the GPU machine):
#   MINUTES=5 bench/export_h200.sh evolve export model
# Works in $WORK (/tmp/kevolve_export_h200); writes under $OUT (few files,
# as the device tool brings back): export_h200.log, run.tgz (the run's
# folder), run_status.json, export.tgz (the export, without its build),
# qwen3.json.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_export_h200_out}
WORK=${WORK:-/tmp/kevolve_export_h200}
MINUTES=${MINUTES:-5}
DRAIN=${DRAIN:-90}
MODELS=${MODELS:-0.6B,14B}
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/export_h200.log") 2>&1
cd "$ROOT"
[ -x .dev/bin/kevolve ] || { echo "no .dev/bin/kevolve: run bench/device_pack.sh and carry .dev" >&2; exit 2; }
. bench/device_env.sh
export KEVOLVE_CACHE_DIR=${KEVOLVE_CACHE_DIR:-/tmp/kevolve_export_cache}
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
"$KV" --version | head -1
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "transformers", transformers.__version__)'

first() { for d in "$@"; do [ -e "$d" ] && { echo "$d"; return; }; done; echo "$1"; }

phase_evolve() {
    local run=$WORK/run
    rm -rf "$run"
    echo "== evolve: examples/gqa_attention/run.sh for $MINUTES min (then SIGINT, $DRAIN s to drain)"
    local t0=$SECONDS
    timeout --foreground -s INT -k "$DRAIN" "$((MINUTES * 60))" examples/gqa_attention/run.sh --output "$run" --force
    echo "   exit $? after $((SECONDS - t0)) s"
    "$KV" status "$run" | head -60
    "$KV" status "$run" --json >"$OUT/run_status.json" || true
    tar czf "$OUT/run.tgz" -C "$WORK" run
}

phase_export() {
    local run exp=$WORK/export
    run=$(first "${RUN:-}" .dev/carry/run "$WORK/run")
    echo "== export: $run -> $exp"
    local t0=$SECONDS
    "$KV" export "$run" -o "$exp" --task gqa_attention --against-standard --force
    echo "   exit $? after $((SECONDS - t0)) s"
    [ -f "$exp/manifest.json" ] || return 1
    tar czf "$OUT/export.tgz" --exclude=torch/build -C "$WORK" export
    python3 - "$exp/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"check: {m['check'].get('verdict')}; variants {len(m['variants'])}")
print(f"{'scenario':28s} {'program':>8s} {'evolved_us':>11s} {'cudnn_us':>9s} {'flash_us':>9s} {'x std':>6s} use")
for s in m["scenarios"]:
    ev, std = s.get("evolved_us"), s.get("standard_us")
    ratio = f"{std / ev:6.2f}" if ev and std else "     -"
    f = lambda x: f"{x:9.1f}" if isinstance(x, (int, float)) else "        -"
    print(f"{s['name']:28s} {str(s.get('program_id')):>8s} {f(ev):>11s} {f(s.get('cudnn_us'))} "
          f"{f(s.get('flash_us'))} {ratio} {s.get('use')}")
PY
}

phase_model() {
    local exp
    exp=$(first "${EXPORT:-}" .dev/carry/export "$WORK/export")
    echo "== model: Qwen3 $MODELS on $exp"
    # A carried export was built elsewhere: its operator is built again here.
    # shellcheck disable=SC2086
    python3 bench/qwen3_model.py "$exp" "$OUT/${QWEN_RESULT:-qwen3.json}" --models "$MODELS" ${QWEN_ARGS:-}
}

phase_verify() {
    local exp
    exp=$(first "${EXPORT:-}" .dev/carry/export "$WORK/export")
    echo "== verify: the per-shape choice against cuDNN and flash, then kevolve eval in full ($exp)"
    python3 bench/export_choice.py "$exp" "$OUT/choice.json"
    echo "   export_choice exit $?"
    local t0=$SECONDS
    "$KV" eval --task gqa_attention --backend cuda --timeout "${EVAL_TIMEOUT:-420}" \
        "$exp/kevolve_gqa_attention.cu" >"$OUT/eval_full.json"
    echo "   kevolve eval exit $? after $((SECONDS - t0)) s"
}

[ $# -gt 0 ] || { sed -n '2,36p' "$0" >&2; exit 2; }
rc=0
for p in "$@"; do
    case $p in
    evolve | export | model | verify) "phase_$p" || { echo "== phase $p failed"; rc=1; } ;;
    *) echo "unknown phase $p" >&2; exit 2 ;;
    esac
done
exit $rc
