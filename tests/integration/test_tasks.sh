#!/bin/bash
# `kevolve tasks` lists every built-in task with its scenarios, tolerances and
# backends, as text and, the same facts, as JSON for scripts; NAME lists one
# task; an unknown task or option is a usage error (2), as its help says; and
# docs/tasks.md names every task it lists.
. "$(dirname "$0")/lib.sh"

expect_exit 0 "$KV" tasks --help
grep -q "usage: kevolve tasks" "$WORK/out.txt" || fail "tasks --help prints no usage"
tr '\n' ' ' <"$WORK/out.txt" | sed 's/  */ /g' | grep -q "exit codes: 0 listed, 2 usage error or no such task" ||
    fail "tasks --help does not list its exit codes"
"$KV" --help | grep -q "^  tasks " || fail "kevolve --help does not list tasks"

expect_exit 0 "$KV" tasks --json
cp "$WORK/out.txt" "$WORK/tasks.json"
expect_exit 0 "$KV" tasks
cp "$WORK/out.txt" "$WORK/tasks.txt"

# The JSON: one object per task, each with what a script needs, and the text
# says the same (every task, scenario and held-out shape by name, every
# backend, every tolerance).
python3 - "$WORK/tasks.json" "$WORK/tasks.txt" "$KV_SOURCE_DIR" <<'PY'
import json, re, sys
tasks = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
src = sys.argv[3]
names = [t["name"] for t in tasks]
def fail(msg):
    print("FAIL: " + msg, file=sys.stderr); sys.exit(1)
for want in ["gqa_attention", "gqa_attention_small", "gqa_attention_search", "gqa_attention_decode",
             "attention_mqa", "attention_mha", "attention_window", "rmsnorm", "rmsnorm_add",
             "swiglu", "rope", "softmax"]:
    if want not in names: fail(f"tasks --json lacks {want}: {names}")
if names != sorted(names): fail(f"tasks are not in name order: {names}")
# Every task a task source defines is listed (the build finds them all).
defined = set()
import glob
for f in glob.glob(f"{src}/tasks/*/*.c"):
    defined |= set(re.findall(r"^const kv_task kv_task_(\w+)\s*=", open(f).read(), re.M))
if defined != set(names): fail(f"listed {sorted(names)}, the sources define {sorted(defined)}")
for t in tasks:
    n = t["name"]
    for key in ["description", "symbols", "tensors", "backends", "tolerances", "scenarios",
                "held_out", "screen_keep"]:
        if key not in t: fail(f"{n}: no {key}")
    if not t["scenarios"] or not t["held_out"]: fail(f"{n}: no scenarios or held-out shapes")
    # Qwen3's fused decode blocks have CPU and CUDA starts, no OpenCL one.
    want = ["cpu", "cuda"] if n.startswith("qwen3_decode_") else ["cpu", "opencl", "cuda"]
    if [b["name"] for b in t["backends"]] != want:
        fail(f"{n}: backends {t['backends']}")
    outs = {x["dtype"] for x in t["tensors"] if x["role"] != "in"}
    if set(t["tolerances"]) != outs: fail(f"{n}: tolerances {t['tolerances']} for outputs {outs}")
    for s in t["scenarios"]:
        if set(s["shape"]) != set(t["symbols"]): fail(f"{n}/{s['name']}: shape {s['shape']}")
        if not s["weight"] > 0: fail(f"{n}/{s['name']}: weight {s['weight']}")
    m = re.search(rf"^{re.escape(n)}: .*?(?=^\S|\Z)", text, re.M | re.S)
    if not m: fail(f"the text does not list {n}")
    block = m.group(0)
    for s in t["scenarios"] + t["held_out"]:
        if not re.search(rf"^    {re.escape(s['name'])} ", block, re.M):
            fail(f"the text of {n} lacks {s['name']}")
    if f"scenarios ({len(t['scenarios'])})" not in block: fail(f"{n}: scenario count in text")
    for b in t["backends"]:
        if b["name"] not in block.split("backends:")[1].split("\n")[0]: fail(f"{n}: backend text")
    for dt, tol in t["tolerances"].items():
        if not re.search(rf" {dt} atol {tol['atol']:g} rtol {tol['rtol']:g}", block):
            fail(f"{n}: the text's {dt} tolerance differs from the JSON's {tol}")
# The flagship's facts, as its source has them.
g = {t["name"]: t for t in tasks}["gqa_attention"]
if len(g["scenarios"]) != 20: fail(f"gqa_attention has {len(g['scenarios'])} scenarios")
d = g["scenarios"][0]
if d["name"] != "decode_16x8_b1_l128" or d["tags"] != ["decode"] or d["weight"] != 0.5:
    fail(f"gqa_attention's first scenario: {d}")
if d["shape"] != {"B": 1, "HQ": 16, "HKV": 8, "SQ": 1, "L": 128, "D": 128}:
    fail(f"decode_16x8_b1_l128's shape: {d['shape']}")
if list(g["tolerances"]) != ["bf16"] or not g["gpu_reference"]: fail(f"gqa_attention: {g}")
small = {t["name"]: t for t in tasks}["gqa_attention_small"]
if small["screen_keep"] != 0.85: fail(f"gqa_attention_small screens at {small['screen_keep']}")
PY

# NAME: that task alone, in both forms.
expect_exit 0 "$KV" tasks rmsnorm --json
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); sys.exit(not (len(t)==1 and t[0]["name"]=="rmsnorm"))' \
    "$WORK/out.txt" || fail "tasks rmsnorm --json: $(head -c 300 "$WORK/out.txt")"
expect_exit 0 "$KV" tasks rmsnorm
[ "$(grep -c '^[a-z]' "$WORK/out.txt")" -eq 1 ] && grep -q "^rmsnorm: " "$WORK/out.txt" ||
    fail "tasks rmsnorm: $(head -3 "$WORK/out.txt")"

# Usage errors: 2, with the reason.
expect_exit 2 "$KV" tasks no_such_task
grep -q "no task 'no_such_task'" "$WORK/err.txt" || fail "unknown task not named: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" tasks --frobnicate
expect_exit 2 "$KV" tasks rmsnorm softmax

# Every listed task is one docs/tasks.md describes, and the README shows the command.
for t in $(python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))))' "$WORK/tasks.json"); do
    grep -q "\`$t\`" "$KV_SOURCE_DIR/docs/tasks.md" || fail "docs/tasks.md does not name $t"
done
grep -q "kevolve tasks" "$KV_SOURCE_DIR/README.md" || fail "the README does not show kevolve tasks"
echo "ok"
