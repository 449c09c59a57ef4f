"""The stock model of a merged checkpoint for tests, without from_pretrained's peak.

transformers' from_pretrained(dtype=float32) of the stand-in's bf16 checkpoint holds the
checkpoint's mapped pages (6 GB) beside the fp32 parameters (12 GB): an 18 GB peak. `full_model`
builds the same stock Qwen3_5ForCausalLM with every stored tensor cast to `dtype`, a shard at a
time (tests/test_chat_textmodel.py checks, in bf16, that from_pretrained's tensors are exactly
these)."""
from __future__ import annotations

from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def full_model(path: str | Path, dtype: str):
    """The stock Qwen3_5ForCausalLM of the whole merged checkpoint at `path`, in eval mode."""
    from safetensors import safe_open
    from transformers import AutoConfig, Qwen3_5ForCausalLM
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextRotaryEmbedding

    from qwengpu.model.checkpoint import shard_files
    config = AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM._from_config(config, dtype=DTYPES[dtype])
    state = {}
    for file in shard_files(Path(path)):
        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():
                state[name] = f.get_tensor(name).to(DTYPES[dtype], copy=True)
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True, assign=True)
    model.lm_head.weight = model.model.embed_tokens.weight
    model.model.rotary_emb = Qwen3_5TextRotaryEmbedding(config=model.config)
    return model.eval()
