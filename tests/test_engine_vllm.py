"""vLLM runs the merged checkpoint and generates exactly qwengpu's fast-path token stream.

The engine tests need .venv-vllm (`bash scripts/install_vllm.sh`) and skip, saying so, without
it. They use the stand-in merged model (qwengpu.model.merge.default_merged_model(), built on
first use) or the checkpoint in $QWENGPU_ENGINE_MODEL. Cost on 2 CPU cores: vLLM loads the
stand-in in about 50 s and generates about 2.5 tokens/s (dot: 108 tokens); about 9 GB RSS.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from qwengpu.engines import vllm as vllm_engine
from qwengpu.testing.reference import first_difference, launch_ids

REPO = Path(__file__).resolve().parent.parent
VLLM_MISSING = vllm_engine.vllm_available()
needs_vllm = pytest.mark.skipif(VLLM_MISSING is not None, reason=f"vLLM engine tests skipped: {VLLM_MISSING}")


def engine_model_dir() -> Path:
    if os.environ.get("QWENGPU_ENGINE_MODEL"):
        return Path(os.environ["QWENGPU_ENGINE_MODEL"]).resolve()
    from qwengpu.model.merge import default_merged_model
    return Path(default_merged_model()).resolve()


@pytest.fixture(scope="module")
def dot_ref():
    model = engine_model_dir()
    return model, launch_ids("dot", model)


def _same(want, got) -> None:
    i = first_difference(want, got)
    assert i is None, (f"the engine's stream differs from the fast path's at token {i} "
                       f"(lengths {len(got)} and {len(want)}): {got[i:i + 5]} != {want[i:i + 5]}")


# -- without vLLM: the errors ----------------------------------------------------------------
def test_missing_venv_names_the_install_script(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(vllm_engine.EngineUnavailable, match="scripts/install_vllm.sh"):
        vllm_engine.VllmEngine(tmp_path, python=tmp_path / "no-venv" / "bin" / "python")


def test_dead_worker_reports_its_stderr(tmp_path):
    """A python without vLLM: the worker fails to import it, and the error carries its stderr."""
    (tmp_path / "config.json").write_text("{}")
    eng = vllm_engine.VllmEngine(tmp_path, python=sys.executable, start_timeout=120)
    with pytest.raises(vllm_engine.EngineError) as err:
        eng.generate([[1, 2]], allowed=(0, 10), stop_ids=[3], max_tokens=4)
    msg = str(err.value)
    assert "vLLM could not load" in msg and "No module named 'vllm'" in msg and "stderr ends with" in msg
    assert eng.proc is None


def test_worker_dying_mid_run_is_an_error(tmp_path):
    """A worker that says it is ready and then exits: generate() raises with the exit status."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"ready\": true}'\necho 'worker going away' >&2\nexit 3\n")
    fake.chmod(0o755)
    (tmp_path / "config.json").write_text("{}")
    eng = vllm_engine.VllmEngine(tmp_path, python=fake, start_timeout=60)
    with pytest.raises(vllm_engine.EngineError, match=r"died while (generating|taking a request).*exit status 3"
                       r"(.|\n)*worker going away"):
        eng.generate([[1, 2]], allowed=(0, 10), stop_ids=[3], max_tokens=4)


# -- with vLLM ------------------------------------------------------------------------------
@needs_vllm
def test_vllm_engine_dot_stream_equals_fast_path(dot_ref):
    model, ref = dot_ref
    assert ref.stream_ids[-1] == ref.halt_id
    with vllm_engine.VllmEngine(model, max_batch=2, max_model_len=2048) as eng:
        one = eng.generate([ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                           max_tokens=len(ref.stream_ids) + 16)
        _same(ref.stream_ids, one[0])
        two = eng.generate([ref.prompt_ids, ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                           max_tokens=len(ref.stream_ids) + 16)      # batched: both at once
        for got in two:
            _same(ref.stream_ids, got)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_vllm
def test_openai_server_dot_stream_equals_fast_path(dot_ref):
    from qwengpu.engines.openai_client import OpenAIEngine
    model, ref = dot_ref
    port = _free_port()
    vllm_bin = vllm_engine.resolve_python().parent / "vllm"
    cmd = [str(vllm_bin), "serve", str(model), "--dtype", "bfloat16", "--skip-tokenizer-init", "--enforce-eager",
           "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "qwengpu-test",
           "--max-model-len", "2048", "--max-num-seqs", "2", "--kv-cache-memory-bytes", str(512 << 20)]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                start_new_session=True)
        try:
            eng = OpenAIEngine(f"http://127.0.0.1:{port}")
            try:
                eng.wait_ready(timeout=900, proc=proc)
            except Exception:
                log.seek(0)
                pytest.fail(f"vllm serve did not come up: {log.read()[-3000:].decode('utf-8', 'replace')}")
            assert eng.model == "qwengpu-test"
            got = eng.generate([ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                               max_tokens=len(ref.stream_ids) + 16)
            _same(ref.stream_ids, got[0])
            # the client end to end: the result decoded from the server's tokens (the copy-out)
            import numpy as np
            from qwengpu.api import Device
            src = (REPO / "kernels" / "dot.cu").read_text()
            dev = Device("vllm", url=f"http://127.0.0.1:{port}", model=model, check="replay",
                         max_tokens=len(ref.stream_ids) + 16)       # within the server's max_model_len
            out = np.zeros(1, np.int32)
            result = dev.compile(src, "dot.cu").get_function("dot")(
                grid=1, block=4, args=[np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), out, 3])
            assert out.tolist() == [1 * 4 + 2 * 5 + 3 * 6] and result.tokens == len(ref.stream_ids)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
