"""A stock Qwen3_5ForCausalLM around compiled layers (tests and check only), and
field encode/decode. No layer math here: the model is plain transformers.

The compiled layers come first, followed by one all-zero full-attention layer: a
model of only linear-attention layers breaks DynamicCache.get_seq_length. Results
are read from the residual stream (hidden_states) or from the recurrent states.
"""
from __future__ import annotations

import copy
import functools
from typing import Callable

import numpy as np
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
from transformers.cache_utils import DynamicCache

from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.dtypes import torch_dtype


def model_config(circuit: Circuit, intermediate: int) -> Qwen3_5TextConfig:
    host, L = circuit.host, len(circuit.layers)
    return Qwen3_5TextConfig(
        vocab_size=16, hidden_size=circuit.layout.total, intermediate_size=intermediate,
        num_hidden_layers=L + 1, layer_types=["linear_attention"] * L + ["full_attention"],
        num_attention_heads=1, num_key_value_heads=1, head_dim=16,
        linear_num_key_heads=host.gdn_heads, linear_num_value_heads=host.value_heads,
        linear_key_head_dim=host.key_dim, linear_value_head_dim=host.value_dim,
        linear_conv_kernel_dim=host.conv_kernel, rms_norm_eps=host.eps, tie_word_embeddings=True,
        max_position_embeddings=1 << 20, use_cache=True)


def build_model(circuit: Circuit, dtype: str = "float32") -> Qwen3_5ForCausalLM:
    layers = circuit.weights()
    intermediate = layers[0]["mlp.gate_proj.weight"].shape[0]
    config = model_config(circuit, intermediate)
    torch.manual_seed(0)
    model = Qwen3_5ForCausalLM(config).eval()
    state = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    for i, w in enumerate(layers):
        for name, value in w.items():
            state[f"model.layers.{i}.{name}"] = torch.tensor(value, dtype=torch.float32)
    model.load_state_dict(state, strict=True)
    return model.to(torch_dtype(dtype))


def models_by_dtype(circuit: Callable[[], Circuit]) -> Callable[[str], Qwen3_5ForCausalLM]:
    """A cached dtype -> build_model(circuit(), dtype); bf16 is the float32 model cast (the
    circuit's weights are exact in bf16), which is faster than building it again."""
    @functools.lru_cache(maxsize=None)
    def model(dtype: str) -> Qwen3_5ForCausalLM:
        if dtype == "bfloat16":
            return copy.deepcopy(model("float32")).to(torch.bfloat16)
        return build_model(circuit(), dtype)
    return model


def encode(circuit: Circuit, values: dict[Field, np.ndarray], cases: int) -> np.ndarray:
    """GPU-token embeddings [cases, N]: anchor set, each bits/int field from its integers."""
    lay = circuit.layout
    x = np.zeros((cases, lay.total))
    x[:, list(lay.anchor.dims)] = lay.anchor_value
    for field, vals in values.items():
        vals = np.asarray(vals, dtype=np.uint64)
        if field.kind == "bits":
            for i, d in enumerate(field.dims):
                x[:, d] = (vals >> np.uint64(i)) & np.uint64(1)
        elif field.kind == "onehot":
            x[np.arange(cases), np.array(field.dims)[vals.astype(np.int64)]] = 1.0
        else:
            x[:, field.dims[0]] = vals * field.scale
    return x


def decode(hidden: np.ndarray, field: Field) -> tuple[np.ndarray, float]:
    """(integers, max distance of any dim from its nearest integer) of a bits/int field."""
    raw = hidden[:, list(field.dims)].astype(np.float64) / field.scale
    near = np.rint(raw)
    err = float(np.abs(raw - near).max()) if raw.size else 0.0
    if field.kind == "bits":
        bad = ((near != 0) & (near != 1)).any(axis=1)
        vals = ((near == 1).astype(np.uint64) << np.arange(field.width, dtype=np.uint64)).sum(axis=1)
        vals[bad] = np.uint64(1 << 63)     # never equals a valid value
        return vals, err
    return near[:, 0].astype(np.int64).astype(np.uint64), err


@torch.no_grad()
def run_prefill(model, embeds: np.ndarray, cache: bool = False):
    """One forward pass over [batch, seq, N]: (hidden after each compiled layer [L+1, batch, seq, N], cache)."""
    dtype = model.dtype
    x = torch.tensor(embeds, dtype=torch.float32).to(dtype)
    kv = DynamicCache(config=model.config) if cache else None
    out = model.model(inputs_embeds=x, output_hidden_states=True, use_cache=cache, cache=kv)
    L = model.config.num_hidden_layers - 1
    hs = torch.stack([h.float() for h in out.hidden_states[: L + 1]]).numpy()
    return hs, kv


@torch.no_grad()
def run_decode(model, embeds: np.ndarray):
    """Token by token with a cache (the recurrent path after the first token)."""
    dtype, L = model.dtype, model.config.num_hidden_layers - 1
    kv = DynamicCache(config=model.config)
    steps = []
    for t in range(embeds.shape[1]):
        x = torch.tensor(embeds[:, t:t + 1], dtype=torch.float32).to(dtype)
        out = model.model(inputs_embeds=x, output_hidden_states=True, use_cache=True, cache=kv)
        steps.append(torch.stack([h.float() for h in out.hidden_states[: L + 1]]).numpy())
    return np.concatenate(steps, axis=2), kv


def recurrent_state(kv, layer: int) -> np.ndarray:
    return kv.get_recurrent_state(layer).float().numpy()
