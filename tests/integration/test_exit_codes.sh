#!/bin/bash
# One exit code per kind of failure, the same from every command, with the
# same message: a damaged store (3), something that is not a store (3), no
# store at all (2), as every command's --help says; eval's usage errors (2);
# precise messages for folders given as files and files as
# folders; and a start that failed leaves nothing that blocks the next.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/config.yaml" <<YAML
initial_program: $TINY/initial.py
evaluator: $TINY/evaluator.sh
max_iterations: 12
random_seed: 3
evaluator:
  timeout: 20
YAML
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/good" -q
good=$WORK/good/run.db

# damage KIND DIR: a copy of the good run in DIR with some pages zeroed.
damage() {
    mkdir -p "$2"
    cp "$good" "$2/run.db"
    python3 - "$2/run.db" "$1" <<'PY'
import os, sqlite3, sys
path, kind = sys.argv[1], sys.argv[2]
page = sqlite3.connect(path).execute("pragma page_size").fetchone()[0]
size = os.path.getsize(path)
with open(path, "r+b") as f:
    if kind == "all":        # every page but the first (the schema's)
        f.seek(page); f.write(bytes(size - page))
    else:                    # the pages of the programs' rows
        for rootpage in (r[0] for r in sqlite3.connect(path).execute(
                "select rootpage from sqlite_master where name = 'programs'")):
            pass
        f.seek(page * (rootpage - 1)); f.write(bytes(page))
PY
}
damage all "$WORK/d_all"
damage programs "$WORK/d_prog"
echo "not a database" >"$WORK/junk.db"

# every_command CODE STORE: status, best, report, serve and resume on STORE
# all exit CODE and print the same error line; prints that line.
every_command() {
    code=$1 store=$2
    first=""
    for cmd in status best report serve resume; do
        case $cmd in
        report) args=(report "$store" -o "$WORK/r.html") ;;
        serve) args=(serve "$store" --port 0) ;;
        *) args=("$cmd" "$store") ;;
        esac
        set +e
        timeout 20 "$KV" "${args[@]}" >"$WORK/out.txt" 2>"$WORK/err.txt"
        got=$?
        set -e
        [ "$got" -eq "$code" ] || fail "kevolve ${args[*]} exited $got, expected $code: $(cat "$WORK/err.txt")"
        line=$(grep "error:" "$WORK/err.txt" | tail -n 1)
        [ -n "$first" ] || first=$line
        [ "$line" = "$first" ] || fail "kevolve $cmd says '$line' where the others say '$first'"
    done
    echo "$first"
}

msg=$(every_command 3 "$WORK/d_all/run.db")
echo "$msg" | grep -q "the store is damaged (database disk image is malformed)" ||
    fail "a damaged store is not called damaged: $msg"
msg=$(every_command 3 "$WORK/junk.db")
echo "$msg" | grep -q "not a kevolve store" || fail "junk is not called 'not a kevolve store': $msg"
msg=$(every_command 2 "$WORK/missing.db")
echo "$msg" | grep -q "no such file" || fail "a missing store: $msg"

# The help of each command says those codes, as they are.
# help_says CMD TEXT: CMD's --help lists TEXT among its exit codes.
help_says() {
    "$KV" "$1" --help | tr '\n' ' ' | sed 's/  */ /g' | grep -q "exit codes:.*$2" ||
        fail "kevolve $1 --help does not say '$2': $("$KV" "$1" --help | sed -n '/exit codes/,$p')"
}
for cmd in status best serve report; do
    help_says $cmd "2 usage error or no such store"
    help_says $cmd "3 the store is damaged or not a kevolve store"
    help_says $cmd "5 I/O error"
done
help_says resume "as for .kevolve run."
help_says run "3 the store is damaged"

# eval: a task or a candidate that does not exist is a usage error (2), as
# its help says; a harness that cannot work is 1.
help_says eval "2 usage error (an unknown task or backend, no such CANDIDATE file, a CANDIDATE holding a NUL byte)"
expect_exit 2 "$KV" eval --task no_such_task "$TINY/initial.py"
grep -q "unknown task 'no_such_task' (known: .*softmax" "$WORK/err.txt" || fail "eval: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" eval --task softmax "$WORK/no_such_kernel.c"
grep -q "no_such_kernel.c: no such file" "$WORK/err.txt" || fail "eval: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" eval --task softmax "$WORK"
expect_exit 2 "$KV" eval --task softmax --backend nope "$TINY/initial.py"
expect_exit 2 "$KV" eval --task softmax --stage x "$TINY/initial.py"

# Damage deeper in the file: whoever reads it says the same (status reads
# every program, best the best one).
for cmd in status best; do
    expect_exit 3 "$KV" $cmd "$WORK/d_prog"
    grep -q "the store is damaged" "$WORK/err.txt" || fail "$cmd on a damaged table: $(cat "$WORK/err.txt")"
done

# A new run over a damaged store: refused (3) with the way out; --force replaces it.
expect_exit 3 "$KV" run --config "$WORK/config.yaml" --output "$WORK/d_all" -q
grep -q -- "--force" "$WORK/err.txt" || fail "the refusal does not say --force: $(cat "$WORK/err.txt")"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/d_all" --force -q

# Folders and files in each other's place.
touch "$WORK/a_file"
expect_exit 2 "$KV" run --config "$WORK/config.yaml" --output "$WORK/a_file" -q
grep -q "is a file, not a folder" "$WORK/err.txt" || fail "output is a file: $(cat "$WORK/err.txt")"
mkdir -p "$WORK/a_dir"
expect_exit 2 "$KV" run "$WORK/a_dir" --config "$WORK/config.yaml" --output "$WORK/o1" -q
grep -q "Is a directory" "$WORK/err.txt" || fail "initial program is a folder: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" run "$TINY/initial.py" "$WORK/a_dir" --config "$WORK/config.yaml" --output "$WORK/o2" -q
grep -q "evaluator $WORK/a_dir is a folder, not a program" "$WORK/err.txt" ||
    fail "evaluator is a folder: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" run "$TINY/initial.py" "$WORK/a_dir" --config "$WORK/config.yaml" --dry-run
grep -q "is a folder, not a program" "$WORK/err.txt" || fail "--dry-run, evaluator a folder: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" run --config "$WORK/a_dir" --dry-run
grep -q "Is a directory" "$WORK/err.txt" || fail "config is a folder: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" resume "$WORK/a_dir"
grep -q "holds no run" "$WORK/err.txt" || fail "resume of an empty folder: $(cat "$WORK/err.txt")"

# A start whose initial program fails: exit 1; the store keeps the evidence
# but blocks nothing: resume says to start anew, and a new run replaces it.
cat >"$WORK/broken.sh" <<'SH'
#!/bin/sh
echo "evaluator broke" >&2
exit 3
SH
chmod +x "$WORK/broken.sh"
expect_exit 1 "$KV" run "$TINY/initial.py" "$WORK/broken.sh" --config "$WORK/config.yaml" --output "$WORK/f" -q
expect_exit 2 "$KV" resume "$WORK/f"
grep -q "start a new run" "$WORK/err.txt" || fail "resume of a failed start: $(cat "$WORK/err.txt")"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/f" -q
# An empty run.db (a start that died at once): replaced without --force too.
mkdir -p "$WORK/e"
: >"$WORK/e/run.db"
expect_exit 2 "$KV" resume "$WORK/e"
expect_exit 0 "$KV" run --config "$WORK/config.yaml" --output "$WORK/e" -q
# A task name no built-in task has: a usage error naming the known ones,
# from --dry-run and from a run, before the run's folder is made.
sed 's#^evaluator:$#evaluator:\n  task: qwen3_decode_oo#' "$WORK/config.yaml" | grep -v "^evaluator: " >"$WORK/typo.yaml"
expect_exit 2 "$KV" run "$TINY/initial.py" --config "$WORK/typo.yaml" --dry-run
grep -q "no built-in task 'qwen3_decode_oo' (known: .*qwen3_decode_o," "$WORK/err.txt" ||
    fail "--dry-run, a task name no task has: $(cat "$WORK/err.txt")"
expect_exit 2 "$KV" run "$TINY/initial.py" --config "$WORK/typo.yaml" --output "$WORK/typo" -q
grep -q "no built-in task 'qwen3_decode_oo'" "$WORK/err.txt" || fail "a run, a task name no task has: $(cat "$WORK/err.txt")"
[ ! -e "$WORK/typo" ] || fail "a run refused for its task name made its folder"
# Every config shipped in examples/ passes --dry-run (its programs exist, its task is known).
for c in "$KV_SOURCE_DIR"/examples/*/*.yaml; do
    KV_QWEN3_BACKEND=cpu expect_exit 0 "$KV" run --config "$c" --dry-run
done
echo "ok"
