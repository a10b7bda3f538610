#!/bin/bash
# Sources that are not plain UTF-8 text (issue 45.4). A candidate with a
# Latin-1 byte that the compiler quotes is refused as compile_error with
# the compiler's message, the byte shown as \xE9 (it was lost: "(null)"),
# and the cache's log keeps the byte itself. A candidate or an initial
# program holding a NUL byte is refused as a usage error that says so (it
# was cut at the NUL and judged missing_entry).
. "$(dirname "$0")/lib.sh"
printf '#error caf\xe9\n' >"$WORK/latin1.c"
expect_exit 0 "$KV" eval --task softmax --quick --cache-dir "$WORK/cache" "$WORK/latin1.c"
python3 - "$WORK/out.txt" <<'PY' || fail "the compiler's message: $(cat "$WORK/out.txt" "$WORK/err.txt")"
import json, sys
a = json.load(open(sys.argv[1]))["artifacts"]
assert a["reason"] == "compile_error", a
assert "#error caf\\xE9" in a["reason_detail"], a["reason_detail"]
assert "#error caf\\xE9" in a["compile_log"], a
PY
grep -qF 'compile_error): candidate:1:2: error: #error caf\xE9' "$WORK/err.txt" || fail "$(cat "$WORK/err.txt")"
grep -q "$(printf 'caf\xe9')" "$WORK"/cache/*.log || fail "the cache's log lost the byte"

printf '#include <kevolve/task.h>\nint kv_launch(const kv_launch_args *a) { (void)a; return 0; }\n\0junk\n' \
    >"$WORK/nul.c"
expect_exit 2 "$KV" eval --task softmax --quick "$WORK/nul.c"
grep -q "nul.c holds a NUL byte (byte 88, line 3)" "$WORK/err.txt" || fail "$(cat "$WORK/err.txt")"
cat >"$WORK/nul.yaml" <<YAML
initial_program: $WORK/nul.c
max_iterations: 1
evaluator: {task: softmax, quick: true}
YAML
expect_exit 2 "$KV" run --config "$WORK/nul.yaml" --output "$WORK/out"
grep -q "nul.c holds a NUL byte" "$WORK/err.txt" || fail "$(cat "$WORK/err.txt")"
[ ! -e "$WORK/out/run.db" ] || fail "a refused run left a store"
echo "ok"
