#!/bin/bash
# kevolve on the PATH: `cmake --install` puts the binary, its man page
# (written from its own help text, a section per command) and its bash
# completion under a prefix; the installed binary runs from anywhere, and
# the README's commands work as written with it on the PATH (examples/
# matmul_c, copied, run and read back by bare `kevolve`).
. "$(dirname "$0")/lib.sh"
: "${KV_BUILD_DIR:?KV_BUILD_DIR must name the build folder}"

prefix=$WORK/prefix
expect_exit 0 cmake --install "$KV_BUILD_DIR" --prefix "$prefix"
bin=$prefix/bin/kevolve
man=$prefix/share/man/man1/kevolve.1
completion=$prefix/share/bash-completion/completions/kevolve
for f in "$bin" "$man" "$completion"; do [ -s "$f" ] || fail "cmake --install did not install $f"; done
[ -x "$bin" ] && [ ! -L "$bin" ] || fail "$bin is not an executable file"
export PATH="$prefix/bin:$PATH"
[ "$(command -v kevolve)" = "$bin" ] || fail "kevolve on the PATH is $(command -v kevolve)"
[ "$(kevolve --version)" = "$("$KV" --version)" ] || fail "the installed kevolve is another version"

# The man page: one section per command of `kevolve --help`, each with that
# command's help; it renders without a warning.
commands=$(kevolve --help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$commands" | wc -w)" -ge 8 ] || fail "kevolve --help lists too few commands: $commands"
for cmd in $commands; do
    grep -qx ".SS $cmd" "$man" || fail "the man page has no section for $cmd"
done
grep -q "^\.TH KEVOLVE 1 .*kevolve $(kevolve --version | cut -d' ' -f2)" "$man" || fail "bad .TH line"
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$man" 2>"$WORK/groff.err" && [ ! -s "$WORK/groff.err" ] ||
        fail "the man page has roff errors: $(cat "$WORK/groff.err")"
fi
if command -v man >/dev/null; then
    MANPATH=$prefix/share/man MANWIDTH=100 man kevolve 2>/dev/null >"$WORK/man.txt" ||
        fail "man kevolve fails with the prefix's man folder"
    grep -q -- "--api-base URL" "$WORK/man.txt" || fail "man kevolve lacks resume's options"
    grep -q "usage: kevolve best RUN_DB_OR_OUTPUT_DIR \[-o FILE\] \[--json\]" "$WORK/man.txt" ||
        fail "man kevolve does not show the help text as it is"
fi

# The completion: commands, options and their values from the help.
complete_line() { # WORDS... : prints the completions of the last word
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));
             _kevolve; echo "${COMPREPLY[*]}"' _ "$completion" "$@"
}
[ "$(complete_line kevolve sta)" = "status" ] || fail "completion of 'sta': $(complete_line kevolve sta)"
[ "$(complete_line kevolve run --con)" = "--config" ] || fail "completion of run --con"
[ "$(complete_line kevolve resume out --api)" = "--api-base" ] || fail "completion of resume --api"
[ "$(complete_line kevolve best x --j)" = "--json" ] || fail "completion of best --j"
[ "$(complete_line kevolve eval --backend o)" = "opencl" ] || fail "completion of --backend o"
complete_line kevolve eval --task gqa | grep -qw gqa_attention_small || fail "completion of --task"
for cmd in $commands; do
    complete_line kevolve "" | grep -qw "$cmd" || fail "completion does not offer $cmd"
done

# The README's commands, as written, with kevolve on the PATH.
mkdir -p "$WORK/repo/examples"
cp -r "$KV_SOURCE_DIR/examples/matmul_c" "$WORK/repo/examples/"
rm -rf "$WORK/repo/examples/matmul_c/out"
cd "$WORK/repo"
export MATMUL_N=48 MATMUL_REPEATS=1 # the example, smaller
expect_exit 0 kevolve run --config examples/matmul_c/config.yaml -q
expect_exit 0 kevolve status examples/matmul_c/out
grep -q "^iterations 60 of 60" "$WORK/out.txt" || fail "status: $(cat "$WORK/out.txt")"
expect_exit 0 kevolve best examples/matmul_c/out -o best.c
grep -q "void matmul" best.c || fail "best did not write the program"
expect_exit 0 kevolve resume examples/matmul_c/out --iterations 2 -q
expect_exit 0 kevolve report examples/matmul_c/out -o report.html
[ -s report.html ] || fail "report wrote nothing"
kevolve serve examples/matmul_c/out --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
pid=$!
for _ in $(seq 100); do
    grep -q "^serving " "$WORK/serve.out" && break
    sleep 0.1
done
grep -q "^serving .*examples/matmul_c/out/run.db at http://127.0.0.1:" "$WORK/serve.out" ||
    fail "serve of an output folder: $(cat "$WORK/serve.out" "$WORK/serve.err")"
kill $pid
wait $pid || fail "serve exited $? on SIGTERM"
expect_exit 0 kevolve config-keys
cd - >/dev/null
echo "ok"
