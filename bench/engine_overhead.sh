#!/bin/bash
# Engine overhead: the controller's own CPU time per child (user + system of
# the kevolve process, evaluator processes excluded) with an evaluator that
# does nothing, with 1,000 and with 100,000 programs in the store, and the
# peak memory (max RSS) at 100,000. Usage: bench/engine_overhead.sh [BUILD_DIR]
# (default build/; builds the no-op evaluator itself). Takes a few minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
kv=$build/kevolve
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/noop" "$root/bench/engine/noop_evaluator.c"
cp "$root/bench/engine/program.py" "$root/bench/engine/config.yaml" "$work/"
echo "evaluator: $work/noop" >>"$work/config.yaml"

# cpu_of CMD...: runs CMD, prints "user+sys_seconds max_rss_kb" of it.
cpu_of() {
    /usr/bin/time -f "%U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" ||
        { cat "$work/stderr.txt" >&2; exit 1; }
    awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$work/time.txt"
}
# evaluated_share LO HI: share of iterations LO..HI whose child was evaluated
# (the rest were duplicates or rejections, which spawn no evaluator).
evaluated_share() {
    python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); a,b=int(sys.argv[2]),int(sys.argv[3]); n=c.execute('select count(*) from programs where iteration between ? and ? and mutator != \'migration\'',(a,b)).fetchone()[0]; e=c.execute('select count(*) from programs where iteration between ? and ? and mutator != \'migration\' and status in (\'ok\',\'failed\',\'timeout\')',(a,b)).fetchone()[0]; print(f'{100*e/max(n,1):.0f}%')" "$work/out/run.db" "$1" "$2"
}
count() {
    python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from programs').fetchone()[0])" "$work/out/run.db"
}

# Start-up (config, manifest, compiler versions, the initial program) is paid
# once per run: per-child figures are differences of two runs.
read -r t_start _ < <(cpu_of "$kv" run --config "$work/config.yaml" --output "$work/start" -q --iterations 1)
read -r t1k rss1k < <(cpu_of "$kv" run --config "$work/config.yaml" --output "$work/out" -q --iterations 1001)
n1k=$(count)
share1k=$(evaluated_share 1 1001)
# Grow the store to 100,000 iterations.
"$kv" resume "$work/out" --iterations 97999 -q 2>"$work/grow.txt" || { cat "$work/grow.txt"; exit 1; }
read -r t_one _ < <(cpu_of "$kv" resume "$work/out" --iterations 1 -q)
read -r t_more rss100k < <(cpu_of "$kv" resume "$work/out" --iterations 1001 -q)
n100k=$(count)
last=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select max(iteration) from programs').fetchone()[0])" "$work/out/run.db")
share100k=$(evaluated_share $((last - 1000)) "$last")
per1k=$(awk -v a="$t1k" -v b="$t_start" 'BEGIN { printf "%.3f", (a - b) / 1000 * 1000 }')
per100k=$(awk -v a="$t_more" -v b="$t_one" 'BEGIN { printf "%.3f", (a - b) / 1000 * 1000 }')
echo "| programs in store | controller CPU per child | children evaluated | peak RSS |"
echo "|---|---|---|---|"
echo "| $n1k (first 1,000 iterations) | $per1k ms | $share1k | $((rss1k / 1024)) MiB |"
echo "| $n100k (1,000 iterations after 99,000) | $per100k ms | $share100k | $((rss100k / 1024)) MiB |"
echo "(start-up of a new run: $t_start s CPU; resume with replay of $((n100k - 1000)) programs: $t_one s CPU)"
