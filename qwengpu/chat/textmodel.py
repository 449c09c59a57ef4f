"""The text side of a merged checkpoint: the stock transformers Qwen3_5ForCausalLM without its
circuit layers, at the checkpoint's stored dtype (docs/chat.md, "The text model").

A merged model runs its circuit layers first (qwengpu/model/merge.py: layers 0 .. L-1, L the
qwengpu block's `circuit_layers`), then the base layers. On text they compute nothing:

* a text token's embedding row is zero on every circuit dim (the base row, zero-padded; checked
  here as the rows are read), and the base layers after the circuit layers never run before them;
* a circuit layer's matrices read only circuit dims (the columns of the base dims are zero), so
  every pre-activation of its GDN and MLP is 0: the conv and the delta rule keep a zero state,
  the key and query are 0, the gated norm of 0 is 0, SwiGLU of 0 is 0; what the layer adds to
  the residual is exactly 0, and x + 0 is x in any dtype.

So at every text position the residual the base layers get is the embedding itself, whatever
the circuit layers are: dropping them (and the GPU tokens' vocabulary rows, which a text
position neither reads nor, with the argmax over the text vocabulary, needs) computes the same
floats. `tests/test_chat_textmodel.py` holds it against the stock full model: each circuit
layer's residual delta is exactly 0 at every text position (forward hooks, fp32 and bf16) and
the logits and greedy tokens are equal.

`load_text_model(path)` reads only what the text needs (the text rows of the embedding, the base
layers, the final norm) straight from the safetensors files, never the circuit layers: for the
stand-in merged model 1.5 GB in bf16 instead of 5.6 GB (11.3 GB in fp32), loaded in seconds.
The model is the stock class (no qwengpu code in its forward) with a config of the base layers
alone (num_hidden_layers, layer_types) and the text vocabulary, so caches line up.
"""
from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path

import torch

from qwengpu.dtypes import DTYPES, check_dtype, torch_dtype
from qwengpu.errors import QwenGpuError
from qwengpu.model import CheckpointError

_SAFETENSORS = {"F32": "float32", "BF16": "bfloat16"}
_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")
ROW_BLOCK = 16384                 # embedding rows copied (and checked) at a time


@contextlib.contextmanager
def quiet_transformers():
    """transformers' loggers at ERROR for the duration (then as they were): no "falling back to its
    reference PyTorch implementation ... much slower" notes between a chat's lines (the torch
    kernels are what a CPU has; the text model is four layers)."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def stored_dtype(path: str | Path, config: dict | None = None) -> str:
    """The dtype a merged checkpoint is stored in ("bfloat16" or "float32"): config.json's
    `dtype` (`torch_dtype` in older files), else the embedding's safetensors dtype."""
    from qwengpu.model.checkpoint import config_json, safetensors_header, shard_files
    config = config if config is not None else config_json(Path(path))
    name = config.get("dtype") or config.get("torch_dtype")
    if name in DTYPES:
        return name
    for file in shard_files(Path(path)):
        info = safetensors_header(file).get("model.embed_tokens.weight")
        if info and info[0] in _SAFETENSORS:
            return _SAFETENSORS[info[0]]
    raise CheckpointError(f"{path}: cannot tell the stored dtype (config.json has dtype {name!r}); "
                          f"choose one: {', '.join(DTYPES)}")


def text_layout(config: dict) -> tuple[int, int]:
    """(circuit layers L, text vocabulary end V) of a merged config: layers 0 .. L-1 are the
    circuit's (all linear attention), the text tokens are ids 0 .. V-1."""
    block = config["qwengpu"]
    L, V = int(block["circuit_layers"]), int(block["gpu_token_ids"][0])
    types = config["layer_types"]
    if not 0 <= L < len(types) or any(t != "linear_attention" for t in types[:L]):
        raise CheckpointError(f"the merged config's first {L} layers are not all linear attention: not the "
                              f"layout qgpu build writes (circuit layers first)")
    return L, V


def text_config(config: dict):
    """The stock Qwen3_5TextConfig of the text model: the merged config with the base layers alone
    and the text vocabulary (no qwengpu block: this model runs no launch)."""
    from transformers import Qwen3_5TextConfig
    L, V = text_layout(config)
    cfg = {k: v for k, v in config.items() if k not in ("qwengpu", "architectures", "model_type")}
    cfg.update(num_hidden_layers=len(config["layer_types"]) - L, layer_types=list(config["layer_types"][L:]),
               vocab_size=V)
    if cfg.get("pad_token_id") is not None and cfg["pad_token_id"] >= V:
        cfg["pad_token_id"] = None
    out = Qwen3_5TextConfig(**cfg)
    out.architectures = ["Qwen3_5ForCausalLM"]
    out.qwengpu_text = {"circuit_layers_skipped": L, "text_vocab": V, "merged_layers": len(config["layer_types"])}
    return out


def text_names(config: dict) -> dict[str, tuple[str, int | None]]:
    """text-model tensor name -> (merged tensor name, rows to read: V for the vocabulary
    matrices, None for the whole tensor)."""
    from qwengpu.model.hosts import model_shapes
    L, V = text_layout(config)
    names = {}
    for name in model_shapes(config):
        m = _LAYER.fullmatch(name)
        if m is None:
            names[name] = (name, V if name in ("model.embed_tokens.weight", "lm_head.weight") else None)
        elif int(m.group(1)) >= L:
            names[f"model.layers.{int(m.group(1)) - L}.{m.group(2)}"] = (name, None)
    return names


def read_text_weights(path: Path, config: dict, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The text model's tensors, cast to `dtype` as a stock from_pretrained(dtype=...) does, read
    from the shards without touching a circuit layer; raises CheckpointError where a text
    embedding row is nonzero on a circuit dim (the circuit layers would then not be silent)."""
    from safetensors import safe_open
    from qwengpu.model.checkpoint import safetensors_header, shard_files
    where = {name: file for file in shard_files(path) for name in safetensors_header(file)}
    names = text_names(config)
    n = int(config["qwengpu"]["base_hidden_size"])
    by_file: dict[Path, list[str]] = {}
    for text_name, (name, _) in names.items():
        by_file.setdefault(where[name], []).append(text_name)
    out = {}
    for file, group in by_file.items():
        with safe_open(str(file), framework="pt") as f:
            for text_name in group:
                name, rows = names[text_name]
                piece = f.get_slice(name)
                shape = list(piece.get_shape())
                if rows is None:
                    out[text_name] = torch.empty(shape, dtype=dtype).copy_(piece[:])
                    continue
                t = torch.empty([rows] + shape[1:], dtype=dtype)
                for a in range(0, rows, ROW_BLOCK):          # a block at a time: no second copy
                    block = piece[a:min(a + ROW_BLOCK, rows)]
                    if name == "model.embed_tokens.weight" and torch.count_nonzero(block[:, n:]):
                        raise CheckpointError(f"{path}: a text token's embedding is nonzero on a circuit dim "
                                              f"(row {a + int(torch.nonzero(block[:, n:])[0, 0])}): the circuit "
                                              f"layers would not be silent on text")
                    t[a:a + block.shape[0]].copy_(block)
                out[text_name] = t
    return out


def load_text_model(path: str | Path, dtype: str | None = None, device: str = "cpu"):
    """The text model of the merged checkpoint `path` (a stock Qwen3_5ForCausalLM in eval mode):
    the base layers and the text vocabulary, in `dtype` (None: the stored dtype), on `device`."""
    from transformers import Qwen3_5ForCausalLM
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextRotaryEmbedding
    from qwengpu.driver import runtime
    path = Path(path)
    config = runtime.load_config(path)           # CheckpointError: not a merged checkpoint
    dtype = dtype or stored_dtype(path, config)
    check_dtype(dtype)
    cfg = text_config(config)
    with quiet_transformers():
        with torch.device("meta"):               # no memory, no random init: every tensor comes from the file
            model = Qwen3_5ForCausalLM._from_config(cfg, dtype=torch_dtype(dtype))
        state = read_text_weights(path, config, torch_dtype(dtype))
        if cfg.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        model.load_state_dict(state, strict=True, assign=True)
        if cfg.tie_word_embeddings:
            model.lm_head.weight = model.model.embed_tokens.weight
        model.model.rotary_emb = Qwen3_5TextRotaryEmbedding(config=model.config)   # its buffers, as stock
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.device.type == "meta"]
    if left:
        raise QwenGpuError(f"the text model has tensors that were never loaded: {left[:3]}")
    return model.to(device).eval()
