"""vLLM as an engine for launch prompts: the merged checkpoint, run by vLLM in its own venv.

    from qwengpu.engines.vllm import VllmEngine
    with VllmEngine("build/standin-merged", max_batch=4) as eng:
        outs = eng.generate([prompt_a, prompt_b], allowed=(first, end), stop_ids=[halt, fault],
                            max_tokens=20_000)

vLLM does not live in qwengpu's .venv (it pins its own torch, transformers, ...): it lives in
.venv-vllm, which `bash scripts/install_vllm.sh` creates. VllmEngine starts
qwengpu/engines/vllm_worker.py with that venv's python as a subprocess, which loads the model
once (LLM(..., skip_tokenizer_init=True, enforce_eager=True)) and answers JSON-line requests
until close(). All the prompts of one generate() call are handed to vLLM together, so it
batches them (continuous batching, up to max_batch sequences at a time).

The sampling: greedy (temperature 0), the argmax restricted to the GPU ids [first, end)
(allowed_token_ids), EOS ignored, stopping at any of stop_ids, which is kept in the output.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from qwengpu.engines import WorkerEngine
from qwengpu.errors import QwenGpuError

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().with_name("vllm_worker.py")
DEFAULT_PYTHON = ".venv-vllm/bin/python"
INSTALL_HINT = "bash scripts/install_vllm.sh"


class EngineError(QwenGpuError):
    """An external inference engine failed (its message says how, with its stderr's tail)."""


class EngineUnavailable(EngineError):
    """The engine is not installed here (the message names the script that installs it)."""


def resolve_python(python: str | Path = DEFAULT_PYTHON) -> Path:
    """The engine venv's python: `python` as given when it exists, else relative to the repo."""
    p = Path(python)
    for candidate in ([p] if p.is_absolute() else [p, REPO / p]):
        if candidate.exists():
            return candidate
    raise EngineUnavailable(f"vLLM's venv is missing: no {python} (looked in {Path.cwd()} and {REPO}); "
                            f"create it with `{INSTALL_HINT}` (CPU build, ~4 min, ~3.5 GB)")


def vllm_available(python: str | Path = DEFAULT_PYTHON) -> str | None:
    """None when the engine venv exists, else why not (for a test's skip reason)."""
    try:
        resolve_python(python)
        return None
    except EngineUnavailable as e:
        return str(e)


class VllmEngine(WorkerEngine):
    """vLLM in a subprocess of the engine venv, the model loaded once, kept across generate()
    calls. model_dir: a merged checkpoint folder (the same one the reference came from).
    max_batch: vLLM's max_num_seqs. max_model_len: the longest prompt + generation (None: from
    the config). kv_cache_bytes: vLLM's kv_cache_memory_bytes, the KV cache and recurrent states
    of all sequences (the stand-in has one full-attention layer: 2 KB a token; None: vLLM's
    default, several GiB; $VLLM_CPU_KVCACHE_SPACE, in GiB, overrides it on the CPU build).
    start_timeout: seconds for vLLM to load the model. env: extra environment for the worker
    (VLLM_CPU_OMP_THREADS_BIND, OMP_NUM_THREADS... pass through)."""

    def __init__(self, model_dir, *, python: str | Path = DEFAULT_PYTHON, max_batch: int = 8,
                 max_model_len: int | None = None, dtype: str = "bfloat16", tensor_parallel_size: int = 1,
                 kv_cache_bytes: int | None = 512 << 20,
                 start_timeout: float = 1800.0, env: dict | None = None, nice: int = 0):
        self.model_dir = Path(model_dir).resolve()
        if not (self.model_dir / "config.json").exists():
            raise EngineError(f"{model_dir} is not a checkpoint folder (no config.json)")
        self.python = resolve_python(python)
        self.max_batch, self.max_model_len, self.dtype = max_batch, max_model_len, dtype
        self.tensor_parallel_size, self.start_timeout, self.nice = tensor_parallel_size, start_timeout, nice
        self.kv_cache_bytes = kv_cache_bytes
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}
        self._lines: queue.Queue = queue.Queue()
        self._stderr = None
        self._next_id = 0

    # -- process ---------------------------------------------------------------------------
    def start(self) -> "VllmEngine":
        """Start the worker and wait until vLLM has loaded the model (generate() calls it)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        cmd = [str(self.python), str(WORKER), "--model", str(self.model_dir), "--dtype", self.dtype,
               "--max-batch", str(self.max_batch), "--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.max_model_len:
            cmd += ["--max-model-len", str(self.max_model_len)]
        if self.kv_cache_bytes:
            cmd += ["--kv-cache-memory-bytes", str(int(self.kv_cache_bytes))]
        if self.nice:
            cmd = ["nice", "-n", str(self.nice)] + cmd
        env = {**os.environ, **self.extra_env}
        env.pop("PYTHONPATH", None)                          # nothing of qwengpu's .venv leaks in
        env.pop("VIRTUAL_ENV", None)
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=env, cwd=str(REPO), text=True, bufsize=1)
        self._lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self._lines), daemon=True).start()
        msg = self._receive(self.start_timeout, "loading the model")
        if not msg.get("ready"):
            self._fail(f"vLLM could not load {self.model_dir}: {msg.get('error')}")
        self.info = msg
        return self

    @staticmethod
    def _read(proc, lines: queue.Queue) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)                                     # end of output: the worker is gone

    def _receive(self, timeout: float, doing: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"the vLLM worker took over {timeout:.0f} s {doing}")
            try:
                line = self._lines.get(timeout=min(left, 5.0))
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(timeout=30)
                self._fail(f"the vLLM worker died while {doing} (exit status {self.proc.returncode})")
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue                                    # not a protocol line (cannot happen: stdout is private)

    def stderr_tail(self, chars: int = 4000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - chars))
        return self._stderr.read().decode("utf-8", "replace")

    def _fail(self, what: str):
        tail = self.stderr_tail()
        self.close(kill=True)
        raise EngineError(f"{what}; {self.python} {WORKER.name}'s stderr ends with:\n{tail}")

    def close(self, kill: bool = False) -> None:
        """Stop the worker (the model is unloaded)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None and not kill:
            try:
                proc.stdin.write(json.dumps({"id": -1, "quit": True}) + "\n")
                proc.stdin.flush()
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except OSError:
                pass

    # -- the engine interface ---------------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[int]], *, allowed: tuple[int, int], stop_ids: Sequence[int],
                 max_tokens: int, timeout: float | None = None) -> list[list[int]]:
        """Each prompt greedily decoded over the ids [allowed[0], allowed[1]) until a stop id
        (included) or max_tokens (then the output ends without a stop id); all prompts go to vLLM
        in one batch. `timeout` (seconds, None: none) for the whole call."""
        if not prompts:
            return []
        self.start()
        self._next_id += 1
        req = {"id": self._next_id, "prompts": [[int(t) for t in p] for p in prompts],
               "allowed": [int(allowed[0]), int(allowed[1])], "stop_ids": [int(t) for t in stop_ids],
               "max_tokens": int(max_tokens)}
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except OSError:
            self._receive(30, "taking a request")            # the worker is gone: _fail says why
        msg = self._receive(timeout if timeout is not None else float("inf"), "generating")
        if "error" in msg:
            raise EngineError(f"vLLM failed on the request: {msg['error']}")
        self.last_seconds = msg.get("seconds")
        return msg["outputs"]
