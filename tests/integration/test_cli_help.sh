#!/bin/bash
# Every command of `kevolve --help` says what its exit codes mean in its
# own --help (exit 0, on stdout), and a usage error (an unknown option, an
# argument too many) exits 2 from every one of them (issue 45.6).
. "$(dirname "$0")/lib.sh"
expect_exit 0 "$KV" --help
cmds=$(sed -n '/^commands:/,/^$/p' "$WORK/out.txt" | awk 'NF > 1 {print $1}')
[ "$(echo "$cmds" | wc -w)" -ge 10 ] || fail "too few commands listed: $cmds"
for c in $cmds; do
    expect_exit 0 "$KV" "$c" --help
    grep -qi "^exit codes" "$WORK/out.txt" || fail "'kevolve $c --help' lists no exit codes"
    grep -Eqi "exit codes:.*\b2\b|^ *2 " "$WORK/out.txt" ||
        grep -A3 -i "^exit codes" "$WORK/out.txt" | grep -q "2" ||
        fail "'kevolve $c --help' does not say what 2 means"
    expect_exit 2 "$KV" "$c" --no-such-option
    expect_exit 2 "$KV" "$c" one two three four </dev/null
done
echo "ok"
