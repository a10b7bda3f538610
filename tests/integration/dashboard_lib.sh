# Shared helpers for the dashboard's browser tests (sourced after lib.sh):
# headless Chromium (the test skips, exit 77, without it), a `kevolve
# serve` in the background, and the DOM reader dashboard_dom.py.
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
fi
ARTIFACTS=${KV_BUILD_DIR:-$WORK}/test-artifacts
mkdir -p "$ARTIFACTS"
DOM_PY=$(dirname "${BASH_SOURCE[0]}")/dashboard_dom.py
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"

SERVER_PIDS=
cleanup() {
    for pid in $SERVER_PIDS; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# browser ARGS... URL: headless Chromium with a fresh profile; the page's
# timers and fetches run for 5 s of virtual time (unless ARGS set another
# budget) before the DOM or the screenshot is taken.
browser() {
    timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox --hide-scrollbars \
        --user-data-dir="$WORK/profile.$$.$RANDOM" --virtual-time-budget=5000 "$@" \
        2>>"$WORK/chromium.log"
}

# serve DB NAME [ARGS...]: starts `kevolve serve DB --port 0 ARGS` in the
# background, its output in $WORK/NAME.out and .err; sets URL and SERVER_PID.
serve() {
    "$KV" serve "$1" --port 0 "${@:3}" >"$WORK/$2.out" 2>"$WORK/$2.err" &
    SERVER_PID=$!
    SERVER_PIDS="$SERVER_PIDS $SERVER_PID"
    URL=
    for _ in $(seq 100); do
        URL=$(head -1 "$WORK/$2.out" 2>/dev/null | sed -n 's/^serving .* at \(http:[^ ]*\)$/\1/p')
        [ -n "$URL" ] && break
        sleep 0.1
    done
    [ -n "$URL" ] || fail "serve printed no URL: $(cat "$WORK/$2.out" "$WORK/$2.err")"
}

# stop_server PID: SIGTERM, and serve must exit 0.
stop_server() {
    kill "$1"
    wait "$1" || fail "serve exited $? on SIGTERM"
}
