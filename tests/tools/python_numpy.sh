#!/bin/sh
# Prints a folder holding a `python3` that can import numpy (what OpenEvolve's
# examples need), for the tests to put first on PATH: python3's own when it has
# numpy, else a virtual environment with numpy from PyPI, made once in
# ${KV_PY_NUMPY_HOME:-${XDG_CACHE_HOME:-~/.cache}/kevolve/py-numpy}.
# Exit status 1 with the reason on stderr when neither can be had.
set -eu
if python3 -c 'import numpy' 2>/dev/null; then
    dirname "$(python3 -c 'import sys; print(sys.executable)')"
    exit 0
fi
home=${KV_PY_NUMPY_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kevolve/py-numpy}
if [ -x "$home/venv/bin/python3" ] && "$home/venv/bin/python3" -c 'import numpy' 2>/dev/null; then
    echo "$home/venv/bin"
    exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "no python3 on PATH" >&2; exit 1; }
python3 -c 'import venv, ensurepip' 2>/dev/null || { echo "python3 has no venv module" >&2; exit 1; }
mkdir -p "$home"
rm -rf "$home/venv"
python3 -m venv "$home/venv" >&2 || { echo "python3 -m venv failed" >&2; exit 1; }
"$home/venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: numpy >&2 ||
    { echo "pip install numpy failed (no PyPI?)" >&2; exit 1; }
echo "$home/venv/bin"
