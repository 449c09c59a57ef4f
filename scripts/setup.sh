#!/usr/bin/env bash
# Idempotent set-up of a fresh Debian machine (run as root from anywhere):
# clang-19 (apt, only if missing), a Python venv in .venv, the CPU build of
# torch, and qwengpu itself (editable) with its test extras. Packages come only from
# Debian (apt-get) and PyPI (pip, as this machine configures it).
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

# 3. torch 2.13.0, the CPU build: `torch==2.13.0+cpu` is the wheel pip finds in the package
#    sources this machine is set up with (PyPI and its local wheel folder, pip's find-links);
#    PyPI itself has no "+cpu" builds, so where that wheel is missing the fallback is PyPI's
#    `torch==2.13.0` (the same torch, with CUDA libraries: a much larger download). No other
#    index is ever asked.
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
if .venv/bin/python -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != sys.argv[1])' \
        "$TORCH_VERSION" 2>/dev/null; then
    say "torch $(.venv/bin/python -c 'import torch; print(torch.__version__)' 2>/dev/null) already installed"
elif say "installing torch==$TORCH_VERSION+cpu" && pip_install "torch==$TORCH_VERSION+cpu" 2>/dev/null; then
    say "installed torch==$TORCH_VERSION+cpu"
elif say "no torch==$TORCH_VERSION+cpu wheel in pip's package sources; installing torch==$TORCH_VERSION from PyPI (the CUDA build: large)" \
        && pip_install "torch==$TORCH_VERSION"; then
    say "installed torch==$TORCH_VERSION"
else
    echo "setup: could not install torch $TORCH_VERSION: neither torch==$TORCH_VERSION+cpu (a local wheel in" \
         "pip's find-links) nor torch==$TORCH_VERSION (PyPI) was found; install it into .venv yourself" \
         "(.venv/bin/python -m pip install torch==$TORCH_VERSION) and run this script again" >&2
    exit 1
fi

# 4. qwengpu (editable) with pytest and hypothesis.
say "installing qwengpu (editable) with test extras"
pip_install -e '.[test]'
say "done: $(.venv/bin/python -c 'import qwengpu, torch; print("qwengpu", qwengpu.__file__, "| torch", torch.__version__)')"
say "try: .venv/bin/qgpu demo    tests: .venv/bin/python -m pytest -q"
