"""llama.cpp runs a GGUF of the merged checkpoint and generates exactly qwengpu's fast-path stream.

The engine tests need .venv-llamacpp (`bash scripts/install_llamacpp.sh`) and a GGUF exported from
the checkpoint (`qgpu export gguf --model build/engines/standin-merged --out
build/engines/standin-bf16.gguf`), and skip, saying so, without them. $QWENGPU_LLAMACPP_GGUF
names another GGUF; $QWENGPU_ENGINE_MODEL the checkpoint it was exported from (default
build/engines/standin-merged), which gives the fast path's reference stream. Cost on 2 CPU
cores: the dot launch (217 prompt tokens, 108 generated) took 8.4 minutes while other jobs loaded
them (0.25 tokens/s), under a minute when idle (about 4 tokens/s); the worker's RSS is 4.3 GB.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qwengpu.engines import llamacpp
from qwengpu.engines.llamacpp import LlamaCppEngine, LlamaCppError

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv-llamacpp" / "bin" / "python"
GGUF = Path(os.environ.get("QWENGPU_LLAMACPP_GGUF", REPO / "build" / "engines" / "standin-bf16.gguf"))
MODEL = Path(os.environ.get("QWENGPU_ENGINE_MODEL", REPO / "build" / "engines" / "standin-merged"))


def _missing() -> str | None:
    if not PYTHON.exists():
        return f"{PYTHON} is missing (bash scripts/install_llamacpp.sh)"
    if not GGUF.is_file():
        return f"{GGUF} is missing (qgpu export gguf --model {MODEL} --out {GGUF})"
    if not (MODEL / "config.json").is_file():
        return f"{MODEL} is missing: the checkpoint the GGUF came from (set QWENGPU_ENGINE_MODEL)"
    return None


MISSING = _missing()
needs_llamacpp = pytest.mark.skipif(MISSING is not None, reason=f"llama.cpp engine tests skipped: {MISSING}")


# -- without llama.cpp: the errors ---------------------------------------------------------------
def test_missing_venv_names_the_install_script(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(LlamaCppError, match="scripts/install_llamacpp.sh"):
        LlamaCppEngine(gguf, python=tmp_path / "no-venv" / "bin" / "python")


def test_missing_gguf_says_how_to_make_one(tmp_path):
    with pytest.raises(LlamaCppError, match="qgpu export gguf"):
        LlamaCppEngine(tmp_path / "absent.gguf", python=sys.executable)


def test_dead_worker_reports_its_stderr(tmp_path):
    """A python without llama_cpp: the worker dies at import, and the error carries its stderr."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(LlamaCppError) as err:
        LlamaCppEngine(gguf, python=sys.executable, load_timeout=60)
    msg = str(err.value)
    assert "worker exited" in msg and "No module named 'llama_cpp'" in msg and "stderr" in msg


def test_export_refuses_quantised_types(tmp_path):
    from qwengpu.engines.gguf import export_gguf
    with pytest.raises(LlamaCppError, match="q8_0 is not exact"):
        export_gguf(tmp_path, tmp_path / "x.gguf", "q8_0")


def test_export_without_venv_names_the_install_script(tmp_path):
    from qwengpu.engines.gguf import export_gguf
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(LlamaCppError, match="scripts/install_llamacpp.sh"):
        export_gguf(tmp_path, tmp_path / "x.gguf", "bf16", python=tmp_path / "none" / "bin" / "python")


def test_cli_export_is_one_error_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "qwengpu.cli", "export", "gguf", "--model", str(tmp_path),
                        "--out", str(tmp_path / "x.gguf"), "--type", "q4_0"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 1 and "error:" in r.stderr and "q4_0" in r.stderr


# -- with llama.cpp -------------------------------------------------------------------------------
@needs_llamacpp
def test_gguf_norm_gains_are_exact():
    """Every RMSNorm gain in the GGUF is f32(1 + w) of the checkpoint, element for element."""
    r = subprocess.run([str(PYTHON), str(REPO / "qwengpu/engines/gguf_norms.py"), str(MODEL), str(GGUF),
                        "--gguf-py", str(REPO / ".venv-llamacpp/llama.cpp/gguf-py")],
                       capture_output=True, text=True)
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and report["differ"] == 0 and not report["not_f32"], report
    assert report["tensors"] > 0


@needs_llamacpp
def test_dot_stream_equals_fast_path():
    from qwengpu.testing.reference import first_difference, launch_ids
    ref = launch_ids("dot", MODEL)
    with LlamaCppEngine(GGUF) as eng:
        got = eng.generate([ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                           max_tokens=len(ref.stream_ids) + 16)[0]
    i = first_difference(ref.stream_ids, got)
    assert i is None, (f"llama.cpp's stream differs from the fast path's at token {i} "
                       f"(lengths {len(got)} and {len(ref.stream_ids)}): {got[i:i + 5]} != {ref.stream_ids[i:i + 5]}")
    assert got[-1] == ref.halt_id
