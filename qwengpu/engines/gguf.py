"""`qgpu export gguf`: a merged checkpoint as a GGUF file for llama.cpp.

    qgpu export gguf --model build/standin-merged --out build/engines/standin-bf16.gguf --type bf16

Runs llama.cpp's own converter (convert_hf_to_gguf.py, vendored in llama-cpp-python's sdist and
kept by scripts/install_llamacpp.sh in .venv-llamacpp/llama.cpp) with the venv's python as a
subprocess, then checks every RMSNorm gain of the file against the checkpoint and writes the exact
value where one differs (qwengpu/engines/gguf_norms.py, in the same venv).

Types: f32 and bf16 are exact: the merged checkpoint is bf16, so bf16 keeps every weight bit for
bit and f32 holds every bf16 value. The converter stores 1-D tensors (norm gains, biases, the
gated-delta-net's A and dt) in f32 and the norm gain as f32(1 + f32(w)), the value transformers
computes. f16 is offered but is not exact in general: a bf16 weight outside f16's range
(|w| > 65504, or below 2**-24) or with bits below f16's 11-bit significand at small magnitudes
changes (docs/engines-llamacpp.md has the counts for the stand-in). Quantised types (q8_0, q4_*)
are refused: they round each block of 32 weights to a shared scale, which breaks the circuit's
exact integer and power-of-two weights (docs/engines-llamacpp.md).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from qwengpu.engines.llamacpp import DEFAULT_PYTHON, INSTALL, LlamaCppError, engine_python

TYPES = ("f32", "bf16", "f16")
REFUSED = {"q8_0": "q8_0 rounds each block of 32 weights to a multiple of one f16 scale",
           "tq1_0": "ternary quantisation keeps only -1, 0, 1 times a scale",
           "tq2_0": "ternary quantisation keeps only -1, 0, 1 times a scale",
           "auto": "pick the type explicitly"}
NORMS = Path(__file__).resolve().parent / "gguf_norms.py"


def converter_dir(python: Path) -> Path:
    """The vendored llama.cpp folder beside the venv's bin/ (scripts/install_llamacpp.sh)."""
    return python.parent.parent / "llama.cpp"


def export_gguf(model: str | os.PathLike, out: str | os.PathLike, outtype: str = "bf16", *,
                python: str | os.PathLike = DEFAULT_PYTHON,
                on_message: Callable[[str], None] | None = None) -> dict:
    """Convert checkpoint folder `model` to GGUF file `out`; returns {"out", "type", "bytes",
    "seconds", "norms": gguf_norms' report}. LlamaCppError on a missing venv, a bad argument or a
    failed conversion (with the converter's last lines)."""
    say = on_message or (lambda m: None)
    if outtype not in TYPES:
        why = REFUSED.get(outtype)
        raise LlamaCppError(f"GGUF type {outtype!r}: choose one of {', '.join(TYPES)}"
                            + (f" ({outtype} is not exact for the circuit: {why})" if why else ""))
    model, out = Path(model), Path(out)
    if not (model / "config.json").is_file():
        raise LlamaCppError(f"{model} is not a checkpoint folder (no config.json)")
    if not (model / "model.safetensors.index.json").is_file() and not (model / "model.safetensors").is_file():
        raise LlamaCppError(f"{model} has no safetensors weights")
    if not out.parent.is_dir():
        raise LlamaCppError(f"the folder of {out} does not exist")
    py = engine_python(python)
    llama = converter_dir(py)
    script = llama / "convert_hf_to_gguf.py"
    if not script.is_file():
        raise LlamaCppError(f"llama.cpp's converter {script} is missing; run: bash {INSTALL}")
    # the GGUF leaves the MTP head out: llama.cpp drafts with other means, and its norm check
    # (gguf_norms.py) maps the text model's tensors only
    cmd = [str(py), str(script), str(model), "--outfile", str(out), "--outtype", outtype, "--no-mtp"]
    start = time.perf_counter()
    say(f"converting {model} to {out} ({outtype}) with llama.cpp's convert_hf_to_gguf.py ...")
    tail = _run(cmd, say)
    if tail is not None:
        raise LlamaCppError(f"llama.cpp's converter failed:\n{tail}")
    say(f"converted in {time.perf_counter() - start:.0f} s; checking the norm gains")
    proc = subprocess.run([str(py), str(NORMS), str(model), str(out), "--fix", "--gguf-py", str(llama / "gguf-py")],
                          capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    try:
        norms = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise LlamaCppError(f"the norm check failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}") from None
    if proc.returncode != 0:
        raise LlamaCppError(f"norm gains not exact in {out}: {norms}")
    say(f"norm gains: {norms['tensors']} tensors, {norms['elements']} elements, "
        f"{norms['differ']} differed from f32(1 + w) and were rewritten exactly" if norms["differ"] else
        f"norm gains: {norms['tensors']} tensors, {norms['elements']} elements, all exact")
    return {"out": str(out), "type": outtype, "bytes": out.stat().st_size,
            "seconds": time.perf_counter() - start, "norms": norms}


def _run(cmd: list[str], say: Callable[[str], None]) -> str | None:
    """Run the converter; a progress line every 15 s; None on success, else its last lines."""
    tail: collections.deque[str] = collections.deque(maxlen=30)
    tensors, last = 0, time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    buf = ""
    while True:
        chunk = proc.stdout.read(4096)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.replace("\r", "\n").split("\n")
        for line in lines:
            if not line.strip():
                continue
            tail.append(line)
            if line.startswith("INFO:hf-to-gguf:") and " --> " in line:
                tensors += 1
            if time.monotonic() - last > 15:
                last = time.monotonic()
                shown = line if line.startswith("Writing") else f"{tensors} tensors read"
                say(f"  ... {shown.strip()[:100]}")
    rc = proc.wait()
    return None if rc == 0 else "\n".join(tail)


def main(argv: list[str] | None = None) -> int:
    """python -m qwengpu.engines.gguf --model DIR --out FILE [--type bf16] (the same as qgpu export gguf)."""
    import argparse
    ap = argparse.ArgumentParser(description="export a merged checkpoint as GGUF for llama.cpp")
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--type", default="bf16")
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    a = ap.parse_args(argv)
    try:
        r = export_gguf(a.model, a.out, a.type, python=a.python, on_message=lambda m: print(m, file=sys.stderr))
    except LlamaCppError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
