#!/usr/bin/env bash
# Idempotent set-up of a fresh Debian machine (run as root from anywhere):
# clang-19 (apt, only if missing), a Python venv in .venv, the CPU build of
# torch, and qwengpu itself (editable) with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*"; }

apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "setup: need root to apt-get install $*; run as root or install them yourself" >&2
        exit 1
    fi
    if [ -z "${APT_UPDATED:-}" ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# 1. clang-19: the default CUDA -> PTX front end.
if command -v clang-19 >/dev/null 2>&1; then
    say "clang-19 already installed ($(command -v clang-19))"
else
    say "installing clang-19 with apt-get"
    apt_install clang-19
fi

# 2. Python >= 3.11 and a venv in .venv.
PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
    say "installing python3 and python3-venv with apt-get"
    apt_install python3 python3-venv
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: qwengpu needs Python >= 3.11; $PYTHON is $("$PYTHON" --version)" >&2
    exit 1
fi
if [ -x .venv/bin/python ]; then
    say "venv .venv already exists"
else
    say "creating venv .venv with $("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
fi
# pip warns about every absent local index folder: keep those lines out of the log
pip_install() {
    .venv/bin/python -m pip install --quiet "$@" 2> >(grep -v '^WARNING: Location .* is ignored' >&2)
}

# 3. torch: the CPU build (a plain `pip install torch` could pull a multi-GB CUDA build).
if .venv/bin/python -c 'import torch, sys; sys.exit(torch.__version__ != "2.13.0+cpu")' 2>/dev/null; then
    say "torch 2.13.0+cpu already installed"
else
    say "installing torch==2.13.0+cpu"
    pip_install "torch==2.13.0+cpu" 2>/dev/null \
        || pip_install "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu
fi

# 4. qwengpu (editable) with pytest and hypothesis.
say "installing qwengpu (editable) with test extras"
pip_install -e '.[test]'
say "done: $(.venv/bin/python -c 'import qwengpu, torch; print("qwengpu", qwengpu.__file__, "| torch", torch.__version__)')"
say "try: .venv/bin/qgpu demo    tests: .venv/bin/python -m pytest -q"
