#!/usr/bin/env bash
# Qwen3's fused decode blocks on the GPU machine (issue 43), from the seeds
# to the model, in one device call:
#  1. eval: `kevolve eval` judges each fast seed (qkv_cluster.cu,
#     attn_split.cu, attn_mma.cu, attn_pipe.cu, attn_cluster.cu, o_fused.cu, mlp_fused.cu,
#     post_grid.cu; its naive start
#     timed beside it as the baseline): a line a seed with its verdict, then
#     each scenario's time, roofline share and tolerance used;
#  2. evolve: examples/qwen3_decode's five evolutions (built-in mutators,
#     from the naive start and the fast seeds; SWEEP=1: from
#     bench/qwen3_decode_sweep.py's variants of the fast seed instead),
#     LIMIT seconds each (attn: ATTN_LIMIT, its first child judged after a
#     minute of baseline), one after the other (one judge holds the GPU),
#     stopped with SIGINT; each run's judged programs as a table (axes, us
#     a scenario);
#  3. export: each run's bests exported with --torch (judged, --quick);
#  4. ncu: bench/qwen3_decode_ncu.py under Nsight Compute: each export's
#     kernels at Qwen3-0.6B's batch 1 and cuDNN's attention beside
#     them (duration, DRAM throughput, occupancy, stalls; ncu.txt whole;
#     NCU_MODEL=14B: Qwen3-14B's shapes; NCU_RANGES: those ranges only);
#  5. attn_sdpa: bench/qwen3_decode_attn_sdpa.py: the attn export beside
#     SDPA's cuDNN and flash on each of its scenarios (item 3);
#  6. model: bench/qwen3_decode_model.py: Qwen3 (MODEL) with the four
#     exports (three where attn's failed) put in by kevolve_qwen3.patch_qwen3, beside stock PyTorch and
#     (where post's export is there) qkv, post and attn, o and the MLP as one block,
#     torch.compile (COMPILE's modes), decode at CONTEXTS x BATCHES and
#     prefill at PREFILL, the greedy-token check and the calls served;
#     at PROFILE's shapes (CTXxB,...) the kernels of each captured step.
# Everything comes back as one archive, $OUT/qwen3_decode.tgz (the runs'
# stores and the exports in it: EXPORTS=DIR takes the exports from an
# earlier call's archive unpacked at DIR, carried, for PARTS=model).
# Usage: bench/qwen3_decode_h200.sh   (OUT; PARTS (eval,evolve,export,attn_sdpa,model; ncu),
#        BLOCKS (qkv attn o mlp; post: o and mlp as one block; those evolve and export take),
#        SWEEP, LIMIT (75 s a task), ATTN_LIMIT (LIMIT), MLP_LIMIT and POST_LIMIT (LIMIT), MODEL (0.6B; 0.6B,14B: both, in one process), LAYERS_14B (40), CONTEXTS
#        (1024,8192,32768), BATCHES (1,8), SHAPES (CTXxB,...: instead of CONTEXTS x BATCHES), COMPILE (default,max-autotune-no-cudagraphs;
#        empty: none), PREFILL (512,2048,8192), DEADLINE (360 s for the model
#        part), PROFILE (none), QUICK (eval --quick), SEEDS (eval: BLOCK:FILE ...), NCU_MODEL, NCU_RANGES, NCU_SECTIONS (ncu's section options; "--set full": all, with the stall sampling), EXPORTS;
#        .dev carried)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/device_env.sh
OUT=${OUT:-/tmp/kevolve_decode_out}
W=/tmp/kevolve_decode
rm -rf "$W" && mkdir -p "$W" "$OUT"
export KEVOLVE_CACHE_DIR=$W/cache
PARTS=${PARTS:-eval,evolve,export,attn_sdpa,model}
part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
# The archive, written again after every part: a call stopped at the
# device's limit keeps what its earlier parts made (the kernel cache and
# the exports' PyTorch builds stay behind; a later call builds them again,
# about 30 s each).
archive() {
    tar -C "$W" --exclude=./cache --exclude="./lib_*/torch/build" -czf "$OUT/qwen3_decode.tgz" .
}
BLOCKS=${BLOCKS:-qkv attn o mlp} # post too: o and mlp as one block (slower on an H100, 2026-12-08)
SEEDS=${SEEDS:-"qkv:qkv_cluster attn:attn_split attn:attn_mma attn:attn_pipe attn:attn_cluster o:o_fused mlp:mlp_fused post:post_grid"}
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%FT%TZ)"
if part eval; then
    for s in $SEEDS; do
        t=${s%%:*} f=${s#*:}
        timeout 150 "$KV" eval --task "qwen3_decode_$t" ${QUICK:+--quick} \
            "tasks/qwen3_decode/cuda/$f.cu" >"$W/eval_$f.json" 2>"$W/eval_$f.log"
        python3 - "$W/eval_$f.json" "$f" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    m, a = d.get("metrics", d), d.get("artifacts", {})
    print(f"{sys.argv[2]:11s} verdict {a.get('verdict')} {a.get('reason', '')} {str(a.get('reason_detail', ''))[:300]}")
    for s in sorted({k[:-len("_median_us")] for k in m if k.endswith("_median_us")}):
        print(f"     {s:10s} {m[s + '_median_us']:9.2f} us  roofline {m.get(s + '_roofline_fraction', 0):5.1%}  "
              f"x naive {m.get(s + '_speedup', 0):6.2f}  tol {m.get(s + '_tol_ratio', 0):.2f}")
PY
    done
    archive
fi
if part evolve; then
    for t in $BLOCKS; do
        t0=$(date +%s) limit=${LIMIT:-75}
        [ "$t" = attn ] && limit=${ATTN_LIMIT:-$limit}
        [ "$t" = mlp ] && limit=${MLP_LIMIT:-$limit}
        [ "$t" = post ] && limit=${POST_LIMIT:-$limit}
        cfg=examples/qwen3_decode/${t}_cuda.yaml
        [ -n "${SWEEP:-}" ] && cfg=$(python3 bench/qwen3_decode_sweep.py config "$t" "$W/sweep_$t")
        timeout --foreground --signal=INT --kill-after=25 "$limit" "$KV" run \
            --config "$cfg" --output "$W/run_$t" >"$W/evolve_$t.log" 2>&1
        echo "evolve $t: $(($(date +%s) - t0)) s; $("$KV" status "$W/run_$t" 2>&1 | grep -E "^programs|^best" | tr '\n' ' ')"
        "$KV" best "$W/run_$t" -o "$W/best_$t.cu" >/dev/null 2>&1 &&
            echo "   best axes: $(grep -E "^#define [A-Z_]+ +[0-9]+ +// kevolve: tune" "$W/best_$t.cu" | tr -s ' ' |
                cut -d' ' -f2,3 | tr '\n' ' ')"
        python3 bench/qwen3_decode_sweep.py table "$W/run_$t" 2>&1 | cut -c1-240
        archive
    done
fi
if part export; then
    for t in $BLOCKS; do
        timeout 240 "$KV" export "$W/run_$t" -o "$W/lib_$t" --torch --quick >"$W/export_$t.log" 2>&1 &
    done
    wait
    for t in $BLOCKS; do
        [ -s "$W/lib_$t/manifest.json" ] && echo "export $t: ok" ||
            echo "export $t: FAILED ($(tail -1 "$W/export_$t.log" | cut -c1-300))"
    done
    archive
fi
E=${EXPORTS:-$W}
# Each export's PyTorch operator built at once, side by side (one after
# the other on first use costs about 30 s each).
prebuild() {
    for d in "$E"/lib_*; do
        [ -s "$d/manifest.json" ] || continue
        python3 - "$d" <<'PY' >"$W/prebuild_$(basename "$d").log" 2>&1 &
import json, os, sys
d = sys.argv[1]
sys.path.insert(0, os.path.join(d, "torch"))
__import__("kevolve_" + json.load(open(os.path.join(d, "manifest.json")))["task"])._load()
PY
    done
    wait
}
case ",$PARTS," in *,ncu,* | *,attn_sdpa,* | *,model,*) prebuild ;; esac
if part ncu; then
    S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats"
    S=${NCU_SECTIONS:-"$S --section WarpStateStats --section SchedulerStats"}
    R=""
    for r in ${NCU_RANGES:-qkv o mlp attn_l1024 attn_l8192 attn_l32768 cudnn_l1024 cudnn_l8192 cudnn_l32768}; do
        R="$R --nvtx-include ${r}_1/"
    done
    # shellcheck disable=SC2086 # the sections and ranges are words
    timeout 200 ncu --nvtx $R $S python3 bench/qwen3_decode_ncu.py "$E" ${NCU_MODEL:-} >"$W/ncu.txt" 2>"$W/ncu.err"
    echo "ncu: rc $?; $(grep -c "Duration" "$W/ncu.txt") kernels profiled"
    grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|One or More Eligible|Issued Warp" "$W/ncu.txt" |
        sed -E 's/ +/ /g' | cut -c1-150
    archive
fi
if part attn_sdpa; then
    if [ -s "$E/lib_attn/manifest.json" ]; then
        timeout 240 python3 bench/qwen3_decode_attn_sdpa.py "$E/lib_attn" "$W/attn_sdpa.json" \
            2>"$W/attn_sdpa.err" | tee "$W/attn_sdpa.log"
        tail -3 "$W/attn_sdpa.err"
    else
        echo "attn_sdpa: no attn export at $E/lib_attn"
    fi
    archive
fi
if part model; then
    timeout 560 python3 bench/qwen3_decode_model.py "$W/model.json" \
        --decode "$E/lib_qkv" "$E/lib_o" "$E/lib_mlp" $([ -s "$E/lib_attn/manifest.json" ] && echo "$E/lib_attn") --model "${MODEL:-0.6B}" \
        $([ -s "$E/lib_post/manifest.json" ] && echo "--post $E/lib_post") \
        --layers-14b "${LAYERS_14B:-40}" --contexts "${CONTEXTS:-1024,8192,32768}" \
        --batches "${BATCHES:-1,8}" --shapes "${SHAPES:-}" --compile "${COMPILE-default,max-autotune-no-cudagraphs}" \
        --prefill "${PREFILL-512,2048,8192}" --deadline "${DEADLINE:-360}" --profile "${PROFILE:-}" \
        2>"$W/model.err" | tee "$W/model.log"
    tail -5 "$W/model.err"
fi
archive
echo "archive: $(du -h "$OUT/qwen3_decode.tgz" | cut -f1)"
