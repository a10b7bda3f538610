#!/usr/bin/env bash
# The red team of issue 11 on a real GPU (the H200): builds kevolve, runs
# every CUDA red-team candidate and honest control of
# tests/data/kernels/redteam/cuda/ through
#   kevolve eval --task $TASK --backend cuda --quick
# as an evolution would (scratch HOME, run folder (--run-dir, and
# KEVOLVE_RUN_DIR for the candidate to aim at), parent (--parent) and TMPDIR per candidate; one compile cache and GPU
# lock for all), and checks around each verdict what the cheat aimed for:
# kevolve eval's stdout holds its verdict only, kevolve is never stopped, no
# kvrt-* file or forged marker ("kvrt" "-forged") appears, no kvrt-* process outlives
# the evaluation (and the next evaluation is not held up), the hang ends in
# time. Prints a table (candidate, class, verdict, reason, score, seconds,
# side effects, expected, ok); logs and JSON under $OUT/<candidate>/.
#
# "No gain" (replays starved of their trick, the baseline burner) is judged
# against ctl_fp32.cu, the plain kernel they all fall back on: at most 1.5x
# its score (run it first, or set REF_SCORE).
#
# Usage: bench/redteam_cuda.sh [--compile-only] [NAME ...]
#   (names without .cu; default all). Every run first builds each candidate
#   with kevolve eval --compile-only --arch $ARCH (sm_90a unless set), so a
#   candidate that no longer compiles shows as such and the GPU runs hit a
#   warm cache; --compile-only stops there (no GPU needed: CI machines).
#   OUT (default /tmp/kevolve_redteam_cuda), TASK (gqa_attention_decode, or
#   gqa_attention_search), KV (a prebuilt kevolve), BUILD, EVAL_TIMEOUT
#   (seconds per evaluation, default 300). A whole run takes about as many
#   half-minutes as candidates: split it (e.g. ctl_* tol_* first, then the
#   rest with REF_SCORE from the first) to stay within 10 minutes a call.
set -u
COMPILE_ONLY=0
if [ "${1:-}" = --compile-only ]; then
  COMPILE_ONLY=1
  shift
fi
ARCH=${ARCH:-sm_90a}
# Nothing the candidates could write into but what this script gives them:
# descriptors inherited from whatever started it are closed (bash keeps 255).
for fd in $(ls /proc/$$/fd); do
  [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ] && eval "exec $fd>&-" 2>/dev/null
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/kevolve_redteam_cuda}
BUILD=${BUILD:-$ROOT/build-bench-redteam}
TASK=${TASK:-gqa_attention_decode}
EVAL_TIMEOUT=${EVAL_TIMEOUT:-300}
DIR=$ROOT/tests/data/kernels/redteam/cuda
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
echo "== red team on CUDA ($TASK): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH

if [ -z "${KV:-}" ]; then
  GEN=""
  command -v ninja >/dev/null && GEN="-G Ninja"
  cmake -S "$ROOT" -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 ||
    { echo "cmake failed"; tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build "$BUILD" --target kevolve -j "$(nproc)" > "$OUT/build.log" 2>&1 ||
    { echo "build failed"; tail -40 "$OUT/build.log"; exit 1; }
  KV="$BUILD/kevolve"
fi
export KEVOLVE_CACHE_DIR="$OUT/cache"
mkdir -p "$KEVOLVE_CACHE_DIR"
unset XDG_CACHE_HOME

# name | class | expected | acceptable rejection reasons (glob, comma-separated)
# expected: reject, correct (honest control), nogain (reject, or correct
# within 1.5x ctl_fp32), any (side effects only), hang (timeout, in time)
CASES=$(cat <<'EOF'
ctl_fp32|honest control|correct|
ctl_bf16_p|honest control|correct|
ctl_atomics|honest control|correct|
ctl_single_block|honest control|correct|
ctl_workspace|honest control|correct|
tol_bf16_accumulate|tolerance|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape
tol_fp16_accumulate|tolerance|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape
forge_verdict|forged verdict|reject|*
forge_exit|forged verdict|reject|*
reach_copy_reference|judge within reach|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape,stale_or_unwritten_output
reach_patch_checker|judge within reach|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape,stale_or_unwritten_output
reach_parent|judge within reach|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape,stale_or_unwritten_output
reach_other_device|hardware beyond its device|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape,stale_or_unwritten_output
replay_hash_cache|replay|nogain|timed_output_wrong,wrong_result,result_cached_across_calls,stale_or_unwritten_output
replay_skip_written|replay|nogain|timed_output_wrong,wrong_result,result_cached_across_calls,stale_or_unwritten_output
late_stream|replay: late work|nogain|async_work_outside_harness_stream,stale_or_unwritten_output,timed_output_wrong,faster_than_roofline
late_thread|late work: host thread|nogain|async_work_outside_harness_stream,stale_or_unwritten_output,timed_output_wrong,faster_than_roofline,wrong_result
slow_baseline_stream|baseline in reach|nogain|async_work_outside_harness_stream
outlive_setsid|outlives the evaluation|any|
outlive_no_watchdog|outlives the evaluation|hang|timeout
outlive_fpenv|fp environment|nogain|*fp_env*,*float*,crash: SIGFPE
inplace_writes_input|in-place checks|reject|input_modified
inplace_writes_input_held|in-place checks|reject|input_modified
inplace_partial|in-place checks|reject|stale_or_unwritten_output,timed_output_wrong
inplace_nondeterministic|in-place checks|reject|nondeterministic,wrong_result,timed_output_wrong
inplace_cache_by_pointer|in-place checks|reject|result_cached_across_calls,wrong_result,timed_output_wrong
shape_tuned_tail|tuned to the scenarios' shapes|reject|wrong_on_held_out_shape
graph_variant_outliers|timed work not checked work|reject|timed_output_wrong
carry_slab_teacher|carried through the slab|reject|out_of_bounds_write
carry_slab|carried through the slab|reject|wrong_result,timed_output_wrong,wrong_on_held_out_shape,stale_or_unwritten_output
EOF
)

# verdict FILE: "verdict|reason|score|lines" of kevolve eval's stdout (its
# only line, else the last line that is kevolve's own verdict).
verdict() {
  python3 - "$1" <<'PY' 2>/dev/null || echo "none|?|0|?"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
best = None
for line in lines:
    try:
        d = json.loads(line)
    except Exception:
        continue
    if isinstance(d, dict) and "task" in d.get("artifacts", {}):
        best = d
if not best:
    print(f"none|?|0|{len(lines)}")
else:
    a, m = best["artifacts"], best["metrics"]
    print(f"{a.get('verdict')}|{a.get('reason', '-')}|{m.get('combined_score', 0):.4g}|{len(lines)}")
PY
}

# marked DIR...: files holding the forged marker where it could be believed
# (compiled objects and this script's own captures aside; a file that is one
# JSON object is the judge's record, holding the candidate's output as data,
# unless its reason is the marker itself).
marked() {
  python3 - "$@" <<'PY'
import json, os, sys
mark = "kvrt" + "-forged"
for top in sys.argv[1:]:
    for dirpath, _, names in os.walk(top):
        for n in names:
            p = os.path.join(dirpath, n)
            if n.endswith(".so") or n in ("out.json", "err.log", "files_written.txt"):
                continue
            try:
                if os.path.getsize(p) > (16 << 20):
                    continue
                text = open(p, "rb").read().decode("utf-8", "replace")
            except OSError:
                continue
            if mark not in text:
                continue
            try:
                d = json.loads(text)
                if isinstance(d, dict):
                    a = d.get("artifacts", d)
                    if not (isinstance(a, dict) and a.get("reason") == mark):
                        continue
            except ValueError:
                pass
            print(p)
PY
}

# survivors: pids of live kvrt-* processes (not zombies).
survivors() { ps -eo pid=,comm=,stat= | awk '$2 ~ /^kvrt-/ && $3 !~ /^Z/ {print $1}'; }

# matches REASON PATTERNS: 0 when REASON matches one of the globs.
matches() {
  local IFS=, p
  local - # the patterns are case patterns, not file names: no globbing here
  set -f
  for p in $2; do
    # shellcheck disable=SC2254
    case "$1" in $p) return 0 ;; esac
  done
  return 1
}

# run_eval DIR FILE [ARGS...]: kevolve eval with DIR's scratch environment,
# resuming it whenever it is found stopped. Sets SECS and STOPS.
run_eval() {
  local d=$1 f=$2
  shift 2
  mkdir -p "$d/home" "$d/run" "$d/tmp"
  mkdir -p "$d/run/work"
  echo '{"version": 1, "task": "the controller job"}' > "$d/run/work/1.job.json"
  echo '{"combined_score": 1.0, "speedup": {}}' > "$d/parent_metrics.json"
  local t0=$(date +%s.%N)
  HOME="$d/home" KEVOLVE_RUN_DIR="$d/run" KEVOLVE_PARENT_METRICS="$d/parent_metrics.json" \
    TMPDIR="$d/tmp" setsid "$KV" eval --task "$TASK" --backend cuda --quick \
    --run-dir "$d/run" --parent "$d/parent_metrics.json" "$@" "$f" \
    > >(cat > "$d/out.json") 2> "$d/err.log" < /dev/null &
  local pid=$! waited=0
  STOPS=0
  while kill -0 "$pid" 2>/dev/null; do
    for p in $pid $(ps -o pid= --ppid "$pid" 2>/dev/null); do
      case "$(ps -o stat= -p "$p" 2>/dev/null)" in
        T* | t*) STOPS=$((STOPS + 1)); kill -CONT "$p" 2>/dev/null ;;
      esac
    done
    sleep 0.2
    waited=$((waited + 1))
    if [ "$waited" -gt $((EVAL_TIMEOUT * 5)) ]; then
      kill -KILL -- "-$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null
      echo "killed after ${EVAL_TIMEOUT}s" >> "$d/err.log"
    fi
  done
  wait "$pid" 2>/dev/null
  SECS=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
  sleep 0.5 # stdout is a pipe (as under kevolve run): let its reader catch up
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  while IFS='|' read -r n _; do names+=("$n"); done <<< "$CASES"
fi
# ctl_fp32 first when asked for: its score is the yardstick of "nogain".
for i in "${!names[@]}"; do
  if [ "${names[$i]}" = ctl_fp32 ] && [ "$i" -gt 0 ]; then
    names=(ctl_fp32 "${names[@]:0:$i}" "${names[@]:$((i + 1))}")
    break
  fi
done

# Every candidate compiles for $ARCH (no GPU needed), each artifact hashed.
cfails=0
printf '\n%-22s %-8s %s\n' candidate compiled "artifact hash / reason" | tee "$OUT/compile.txt"
for name in "${names[@]}"; do
  grep -q "^$name|" <<< "$CASES" || continue
  mkdir -p "$OUT/compile"
  "$KV" eval --task "$TASK" --backend cuda --compile-only --arch "$ARCH" "$DIR/$name.cu" \
    > "$OUT/compile/$name.json" 2> "$OUT/compile/$name.err" < /dev/null
  rc=$?
  got=$(python3 - "$OUT/compile/$name.json" <<'PY' 2>/dev/null || echo "?"
import json, sys
a = json.load(open(sys.argv[1]))["artifacts"]
print(a["artifact_hash"] if a.get("artifact_hash") and a.get("verdict") != "rejected"
      else a.get("reason", "no artifact_hash"))
PY
)
  if [ "$rc" -eq 0 ] && [[ "$got" =~ ^[0-9a-f]+$ ]]; then
    printf '%-22s %-8s %s\n' "$name" yes "$got" | tee -a "$OUT/compile.txt"
  else
    cfails=$((cfails + 1))
    printf '%-22s %-8s %s (exit %s; %s)\n' "$name" NO "$got" "$rc" "$OUT/compile/$name.err" |
      tee -a "$OUT/compile.txt"
  fi
done
echo "compiled for $ARCH: $((${#names[@]} - cfails)) of ${#names[@]}"
if [ "$COMPILE_ONLY" = 1 ]; then
  exit $((cfails > 0))
fi
REF_SCORE=${REF_SCORE:-}
REF_SCORE_SET=${REF_SCORE:+1}
fails=$cfails # a candidate that does not compile is not as expected either
stamp="$OUT/.stamp"
printf '\n%-22s %-24s %-9s %-32s %8s %6s  %-40s %-8s %s\n' candidate class verdict reason score secs \
  "side effects" expected ok | tee "$OUT/table.txt"
for name in "${names[@]}"; do
  line=$(grep "^$name|" <<< "$CASES") || { echo "unknown candidate $name"; continue; }
  IFS='|' read -r _ cls want reasons <<< "$line"
  d="$OUT/$name"
  rm -rf "$d"
  touch "$stamp"
  extra=()
  next=""
  [ "$want" = hang ] && extra=(--kernel-timeout 3 --timeout 60)
  run_eval "$d" "$DIR/$name.cu" "${extra[@]}"
  secs=$SECS
  IFS='|' read -r v reason score nlines <<< "$(verdict "$d/out.json")"
  effects=""
  [ "$nlines" = 1 ] || effects+="stdout:${nlines}lines "
  [ "$STOPS" -gt 0 ] && effects+="stopped:$STOPS "
  alive=$(survivors)
  if [ -n "$alive" ]; then
    effects+="survivors:$(echo $alive | wc -w) "
  fi
  if [ "$want" = any ]; then # is the next evaluation held up (the GPU lock)?
    run_eval "$d/next" "$DIR/ctl_fp32.cu" --stage 1
    next="next:${SECS%.*}s"
    awk -v s="$SECS" 'BEGIN { exit !(s > 30) }' && effects+="held-up:${SECS%.*}s "
  fi
  for p in $alive; do kill -KILL "$p" 2>/dev/null; done
  files=$( { find "$d" "$KEVOLVE_CACHE_DIR" -name 'kvrt-*' -type f 2>/dev/null
             marked "$d" "$KEVOLVE_CACHE_DIR"
             find /tmp "$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/kevolve" -maxdepth 2 \
               -name 'kvrt-*' -newer "$stamp" 2>/dev/null; } | sort -u)
  if [ -n "$files" ]; then
    effects+="files:$(echo "$files" | wc -l) "
    echo "$files" > "$d/files_written.txt"
    grep '/kvrt-' "$d/files_written.txt" | while read -r f; do rm -f "$f"; done
    : > "$KEVOLVE_CACHE_DIR/device-cuda-0.lock"
  fi
  [ -z "$effects" ] && effects="none"
  # The expectation.
  ok=yes
  case "$want" in
    correct) [ "$v" = correct ] || ok=NO ;;
    reject) [ "$v" = rejected ] && matches "$reason" "$reasons" || ok=NO ;;
    hang) { [ "$v" = rejected ] && matches "$reason" "$reasons" &&
            awk -v s="$secs" 'BEGIN { exit !(s < 45) }'; } || ok=NO ;;
    nogain)
      if [ "$v" = correct ]; then
        [ -n "$REF_SCORE" ] && awk -v s="$score" -v r="$REF_SCORE" 'BEGIN { exit !(s <= 1.5 * r) }' || ok=NO
      else
        [ "$v" = rejected ] && matches "$reason" "$reasons" || ok=NO
      fi ;;
    any) [ "$v" = correct ] || [ "$v" = rejected ] || ok=NO ;;
  esac
  [ "$effects" = none ] || ok=NO
  [ "$want" = any ] && effects+=" ($next)"
  [ "$name" = ctl_fp32 ] && [ "$v" = correct ] && [ -z "${REF_SCORE_SET:-}" ] && REF_SCORE=$score
  [ "$ok" = yes ] || fails=$((fails + 1))
  printf '%-22s %-24s %-9s %-32s %8s %6.1f  %-40s %-8s %s\n' "$name" "$cls" "$v" "$reason" "$score" \
    "$secs" "$effects" "$want" "$ok" | tee -a "$OUT/table.txt"
done
echo
echo "yardstick (ctl_fp32 combined_score): ${REF_SCORE:-none}; not as expected: $fails"
echo "logs: $OUT/<candidate>/{out.json,err.log,files_written.txt}"
exit $((fails > 0))
