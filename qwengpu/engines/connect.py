"""Open the engine a Device names, and find the merged model's GPU token ids on it.

    engine, vocab = open_engine("vllm", "build/standin-merged")       # a vLLM of .venv-vllm
    engine, vocab = open_engine("vllm", None, "http://127.0.0.1:8000")  # a running vLLM server
    engine, vocab = open_engine("llama.cpp", "build/engines/standin-bf16.gguf")

The vocabulary is qwengpu's GPU vocabulary (qwengpu.machine.tokens.Vocab) at the ids the
checkpoint gave it: its config.json's qwengpu.gpu_token_ids. A GGUF export keeps the whole
vocabulary in order, and the GPU tokens are its last ids, so there they end at its vocabulary
size. Engines are kept open (a vLLM takes minutes to load): one per (name, model, url).
"""
from __future__ import annotations

import atexit
from pathlib import Path

from qwengpu.errors import QwenGpuError

_OPEN: dict = {}
MAX_LAUNCH_TOKENS = 1 << 17     # vLLM's max_model_len: prompt + generated (the suite's longest: ~43,000)


def open_engine(name: str, model: str | Path | None, url: str | None = None):
    """(the engine, the GPU vocabulary at its ids) for Device(name, model=..., url=...)."""
    key = (name, str(model), url)
    if key not in _OPEN:
        for other in list(_OPEN):            # one at a time: each holds a model's weights
            _close(_OPEN.pop(other)[0])
        _OPEN[key] = _open(name, model, url)
    return _OPEN[key]


def _open(name: str, model, url):
    from qwengpu.machine.tokens import Vocab
    if name == "vllm" and url is not None:
        from qwengpu.engines.openai_client import OpenAIEngine
        engine = OpenAIEngine(url)
        return engine, _vocab_of(model if model is not None else _served_checkpoint(engine, url))
    if name == "vllm":
        from qwengpu.engines.vllm import VllmEngine
        from qwengpu.model.merge import default_merged_model
        path = Path(model) if model is not None else default_merged_model()
        vocab = _vocab_of(path)                      # a clear error before vLLM starts loading
        return VllmEngine(path, max_model_len=MAX_LAUNCH_TOKENS).start(), vocab
    if name == "llama.cpp":
        from qwengpu.engines.llamacpp import LlamaCppEngine
        engine = LlamaCppEngine(model)
        vocab = Vocab()
        vocab.first_id = int(engine.info["n_vocab"]) - len(vocab)
        if vocab.first_id < 0:
            raise QwenGpuError(f"{model} has {engine.info['n_vocab']} tokens, fewer than the GPU vocabulary's "
                               f"{len(vocab)}: not a merged qwengpu model")
        return engine, vocab
    raise QwenGpuError(f"no token engine {name!r}: choose vllm or llama.cpp")


def _vocab_of(checkpoint: str | Path):
    """The GPU vocabulary at the ids of merged checkpoint `checkpoint` (a CheckpointError names
    what is wrong with it; a QwenGpuError says when it was built with another circuit)."""
    from qwengpu.driver.runtime import load_config
    from qwengpu.machine.tokens import Vocab
    first, end = load_config(checkpoint)["qwengpu"]["gpu_token_ids"]
    vocab = Vocab(first)
    if end - first != len(vocab):
        raise QwenGpuError(f"{checkpoint} has {end - first} GPU tokens; this qwengpu's vocabulary has {len(vocab)} "
                           f"(a checkpoint built with another circuit: rebuild it)")
    return vocab


def _served_checkpoint(engine, url: str) -> Path:
    """The checkpoint directory a vLLM server on this machine serves (its model name is the path
    `vllm serve` was given); elsewhere pass model=DIR, a copy of the checkpoint it serves."""
    path = Path(engine.model)
    if not (path / "config.json").is_file():
        raise QwenGpuError(f"the server at {url} serves {engine.model!r}, which is not a checkpoint directory "
                           f"here; pass model=DIR (qgpu: --model DIR), the merged checkpoint it serves, so "
                           f"qwengpu knows its GPU token ids")
    return path


def _close(engine) -> None:
    close = getattr(engine, "close", None)
    if close:
        close()


atexit.register(lambda: [_close(e) for e, _ in _OPEN.values()])
