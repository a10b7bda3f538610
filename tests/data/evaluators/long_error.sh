#!/bin/sh
# Fails with one long line on stderr: its head names what went wrong, a
# long list follows, and its last words close it.
printf 'noise before\n' >&2
printf 'unknown task %s (known: ' "'qwen3_decode_oo'" >&2
i=0
while [ $i -lt 40 ]; do printf 'task_number_%d, ' $i >&2; i=$((i + 1)); done
printf 'the last one)\n' >&2
exit 2
