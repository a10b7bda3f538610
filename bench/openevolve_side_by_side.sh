#!/bin/bash
# OpenEvolve and kevolve side by side, on the same task (bench/openevolve_task:
# an OpenEvolve module evaluator, cheap on purpose), the same config file and
# the same local OpenAI-compatible server (tests/tools/fake_llm_server.py,
# answering valid SEARCH/REPLACE edits of the program in the prompt).
# Installs OpenEvolve from PyPI into a virtual environment (once, in
# ${KV_BENCH_HOME:-~/.cache/kevolve/bench-openevolve}). Prints, per system:
#   - controller CPU per child: the controller process's own CPU (all its
#     threads, not its children) divided by the children evaluated;
#   - tree CPU per child: the same with every process it started;
#   - peak memory (VmHWM) of the controller process;
#   - children lost on kill -9: a second run killed (its whole process group)
#     once KILL_AT evaluations were logged; lost = evaluations done minus the
#     evaluated programs the system kept on disk (OpenEvolve: its last
#     checkpoint; kevolve: run.db).
# usage: bench/openevolve_side_by_side.sh [BUILD_DIR]
# env: ITER (children per run, default 1000), KILL_AT (default 150),
#      OPENEVOLVE_VERSION (default 0.3.2), OUT (folder for logs; default a temp dir)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
KV=$build/kevolve
[ -x "$KV" ] || { echo "no kevolve binary at $KV (build it: scripts/build.sh build)" >&2; exit 1; }
ITER=${ITER:-1000}
KILL_AT=${KILL_AT:-150}
version=${OPENEVOLVE_VERSION:-0.3.2}
home=${KV_BENCH_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kevolve/bench-openevolve}
venv=$home/venv
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kv-oe-bench.XXXXXX")}
mkdir -p "$out"
task=$root/bench/openevolve_task

if ! "$venv/bin/python" -c "import openevolve, sys; sys.exit(openevolve.__version__ != '$version')" 2>/dev/null; then
    echo "installing openevolve==$version from PyPI into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$home"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "openevolve==$version"
fi

cat >"$out/script.json" <<'JSON'
{"mode": "cycle", "steps": [{"action": "edit_number", "factors": [2.0, 0.5, 1.5, 0.75, 1.25]}]}
JSON

server_pid=
start_server() { # -> PORT
    python3 "$root/tests/tools/fake_llm_server.py" --script "$out/script.json" --idle 900 \
        >"$out/port.txt" &
    server_pid=$!
    PORT=
    for _ in $(seq 1 100); do
        PORT=$(head -n 1 "$out/port.txt" 2>/dev/null || true)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    echo "the fake server did not start" >&2
    exit 1
}
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true' EXIT

# run SYSTEM NAME [KILL_AT]: prints the measurement's JSON line.
run() {
    local system=$1 name=$2 kill=${3:-}
    local dir=$out/$name
    rm -rf "$dir" "$out/$name.evals"
    start_server
    # OpenEvolve 0.3.2's --api-base does not reach the entries of llm.models
    # (they copied llm.api_base when the file was read), so the port goes
    # into the one config file both systems read.
    sed "s#http://127.0.0.1:9/v1#http://127.0.0.1:$PORT/v1#" "$task/config.yaml" >"$out/config.yaml"
    local cmd
    if [ "$system" = openevolve ]; then
        cmd=("$venv/bin/openevolve-run" "$task/initial_program.py" "$task/evaluator.py"
            --config "$out/config.yaml" --iterations "$ITER" --output "$dir")
    else
        cmd=("$KV" run "$task/initial_program.py" "$task/evaluator.py" --config "$out/config.yaml"
            --iterations "$ITER" --output "$dir")
    fi
    local killopt=()
    [ -n "$kill" ] && killopt=(--kill-at "$kill")
    # The same interpreter for both evaluators: the venv's (it has numpy and openevolve).
    PATH="$venv/bin:$PATH" OPENAI_API_KEY=sk-bench-fake BENCH_EVAL_LOG="$out/$name.evals" \
        BENCH_STDERR="$out/$name.stderr" \
        python3 "$root/bench/openevolve_measure.py" --eval-log "$out/$name.evals" "${killopt[@]}" \
        -- "${cmd[@]}" | tee "$out/$name.json"
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# Evaluated programs each system kept on disk after the kill.
kept() {
    local system=$1 dir=$out/$2
    if [ "$system" = openevolve ]; then
        local last
        last=$(ls -d "$dir"/checkpoints/checkpoint_* 2>/dev/null | sort -t_ -k2 -n | tail -n 1)
        [ -n "$last" ] && ls "$last"/programs/*.json 2>/dev/null | wc -l || echo 0
    else
        python3 - "$dir/run.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("select count(*) from programs where is_migrant = 0 and "
                "status in ('ok', 'failed', 'timeout')").fetchone()[0])
PY
    fi
}

echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -srm); openevolve $version; ITER=$ITER KILL_AT=$KILL_AT; logs in $out" >&2
for system in openevolve kevolve; do
    run "$system" "$system-full" >/dev/null
    run "$system" "$system-kill" "$KILL_AT" >/dev/null
    echo "$system $(kept "$system" "$system-kill")" >>"$out/kept.txt"
done

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
kept = dict(l.split() for l in open(os.path.join(out, "kept.txt")))
print("%-10s %9s %14s %14s %10s %8s %12s" % ("system", "children", "ctl CPU/child", "tree CPU/child",
                                              "peak RSS", "wall", "lost kill-9"))
for system in ("openevolve", "kevolve"):
    full = json.load(open(os.path.join(out, system + "-full.json")))
    kill = json.load(open(os.path.join(out, system + "-kill.json")))
    children = max(1, full["evaluations"] - 1)
    lost = max(0, kill["evaluations"] - int(kept[system]))
    print("%-10s %9d %11.2f ms %11.2f ms %7.1f MB %6.0f s %5d of %d" % (
        system, children, 1000 * full["controller_cpu_s"] / children,
        1000 * full["tree_cpu_s"] / children, full["peak_rss_mb"], full["wall_s"],
        lost, kill["evaluations"]))
PY
