"""llama.cpp as an engine: a GGUF of the merged checkpoint (`qgpu export gguf`) run by
llama-cpp-python in its own venv (.venv-llamacpp, scripts/install_llamacpp.sh), in a worker
subprocess (qwengpu/engines/llamacpp_worker.py) that keeps the model loaded across calls.

    from qwengpu.engines.llamacpp import LlamaCppEngine
    from qwengpu.testing.reference import launch_ids
    ref = launch_ids("dot", "build/engines/standin-merged")
    with LlamaCppEngine("build/engines/standin-bf16.gguf") as eng:
        got = eng.generate([ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                           max_tokens=len(ref.stream_ids) + 16)[0]
    assert got == ref.stream_ids

Each prompt starts from a clean model state (the worker clears llama.cpp's memory, recurrent
states included, before every prompt) and is decoded greedily, the argmax over the GPU ids
[allowed[0], allowed[1]), until a stop id (kept in the result) or max_tokens (then the result
simply has max_tokens ids). docs/engines-llamacpp.md has the measurements.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from qwengpu.engines import WorkerEngine
from qwengpu.errors import QwenGpuError

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_PYTHON = ".venv-llamacpp/bin/python"
INSTALL = "scripts/install_llamacpp.sh"
WORKER = Path(__file__).resolve().parent / "llamacpp_worker.py"


class LlamaCppError(QwenGpuError):
    """The llama.cpp engine could not run (missing venv or GGUF, a dead worker, a bad request)."""


def engine_python(python: str | os.PathLike = DEFAULT_PYTHON) -> Path:
    """The engine venv's python: a relative path is taken from the current directory if it exists
    there, else from the repository root. LlamaCppError naming the install script if missing."""
    p = Path(python)
    if not p.is_absolute() and not p.exists():
        p = REPO / p
    if not p.exists():
        raise LlamaCppError(f"the llama.cpp venv's python {python} does not exist; "
                            f"create the venv with: bash {INSTALL}")
    return p


class LlamaCppEngine(WorkerEngine):
    """llama.cpp (llama-cpp-python, CPU) running `gguf_path` in a worker subprocess.

    threads: llama.cpp's CPU threads (default: all cores); n_ctx: the first context's size (a
    longer request gets a larger context); verbose: llama.cpp's log goes to the worker's stderr,
    whose last lines are in every error message either way."""

    def __init__(self, gguf_path: str | os.PathLike, *, python: str | os.PathLike = DEFAULT_PYTHON,
                 threads: int | None = None, n_ctx: int = 65536, n_batch: int = 512, verbose: bool = False,
                 load_timeout: float = 600.0):
        self.gguf_path = Path(gguf_path)
        if not self.gguf_path.is_file():
            raise LlamaCppError(f"GGUF file {self.gguf_path} does not exist; make one with "
                                f"`qgpu export gguf --model DIR --out {self.gguf_path}`")
        self.python = engine_python(python)
        cmd = [str(self.python), str(WORKER), str(self.gguf_path), "--n-ctx", str(n_ctx), "--n-batch", str(n_batch)]
        if threads:
            cmd += ["--threads", str(threads)]
        if verbose:
            cmd.append("--verbose")
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._lines: collections.deque[str] = collections.deque()
        self._cond = threading.Condition()
        self._next_id = 0
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        threading.Thread(target=self._pump, args=(self.proc.stderr, self._stderr), daemon=True).start()
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        start = time.perf_counter()
        ready = self._read(timeout=load_timeout)
        if not ready.get("ready"):
            self.close()
            raise LlamaCppError(f"the llama.cpp worker could not load {self.gguf_path}: "
                                f"{ready.get('error', ready)}{self._tail()}")
        self.info = ready
        self.load_seconds = time.perf_counter() - start
        self.last_stats: list[dict] = []

    # -- the worker's pipes ------------------------------------------------------------------
    def _pump(self, stream, sink) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def _pump_stdout(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._lines.append(None)          # end of file: the worker is gone
            self._cond.notify_all()

    def _tail(self) -> str:
        time.sleep(0.1)                     # let the stderr thread catch the last lines
        tail = "\n".join(list(self._stderr)[-20:])
        return f"\nworker stderr (last lines):\n{tail}" if tail else ""

    def _read(self, timeout: float | None = None) -> dict:
        """The worker's next JSON object (a stray non-JSON line goes to the stderr tail)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                while not self._lines:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise LlamaCppError(f"the llama.cpp worker gave no answer in {timeout:.0f} s{self._tail()}")
                    self._cond.wait(left)
                line = self._lines.popleft()
            if line is None:
                self.proc.wait(timeout=10)
                raise LlamaCppError(f"the llama.cpp worker exited (status {self.proc.returncode}){self._tail()}")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                self._stderr.append("stdout: " + line.rstrip("\n"))
                continue
            if isinstance(obj, dict):
                return obj

    def _send(self, obj: dict) -> None:
        if self.proc.poll() is not None:
            raise LlamaCppError(f"the llama.cpp worker exited (status {self.proc.returncode}){self._tail()}")
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise LlamaCppError(f"the llama.cpp worker is gone ({e}){self._tail()}") from None

    # -- the engine call -----------------------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[int]], *, allowed: tuple[int, int], stop_ids: Sequence[int],
                 max_tokens: int, on_token: Callable[[int, int], None] | None = None) -> list[list[int]]:
        """Each prompt's generated ids (a stop id included), greedy over [allowed[0], allowed[1]).
        Prompts run one after the other, each from a clean state. on_token(prompt_index, id) is
        called as each id arrives. Per-prompt timings are in self.last_stats afterwards."""
        if max_tokens < 1:
            raise LlamaCppError(f"max_tokens must be at least 1, not {max_tokens}")
        results, self.last_stats = [], []
        for index, prompt in enumerate(prompts):
            self._next_id += 1
            rid = self._next_id
            self._send({"id": rid, "prompt": [int(t) for t in prompt], "allowed": [int(allowed[0]), int(allowed[1])],
                        "stop_ids": [int(t) for t in stop_ids], "max_tokens": int(max_tokens),
                        "stream": on_token is not None})
            while True:
                msg = self._read()
                if msg.get("id") != rid:
                    continue
                if "token" in msg:
                    on_token(index, msg["token"])
                    continue
                if "error" in msg:
                    raise LlamaCppError(f"llama.cpp worker: {msg['error']}")
                results.append(msg["ids"])
                self.last_stats.append({k: msg.get(k) for k in ("prefill_seconds", "decode_seconds", "stopped",
                                                                 "n_ctx")})
                break
        return results

    def close(self, kill: bool = False) -> None:
        """Stop the worker: ask it to quit (killed when it does not within 10 s), or with `kill`
        end it at once."""
        proc = getattr(self, "proc", None)
        if proc is None or proc.poll() is not None:
            return
        if not kill:
            try:
                proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                proc.stdin.close()
                proc.wait(timeout=10)
                return
            except Exception:
                pass
        proc.kill()
        proc.wait()
