"""Published host configs (packaged, never read from outside the repo) and the tensor shapes
a Qwen3.5 text config implies."""
from __future__ import annotations

import json
import re
from pathlib import Path

CONFIGS = Path(__file__).parent / "configs"


def host_config(name: str = "qwen3_5_2b_text") -> dict:
    """A packaged text config, without its comment."""
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    cfg.pop("_comment", None)
    return cfg


def layer_shapes(cfg: dict, kind: str) -> dict[str, tuple[int, ...]]:
    """Parameter shapes of one decoder layer of `kind`, names relative to the layer."""
    n, inter = cfg["hidden_size"], cfg["intermediate_size"]
    shapes = {"input_layernorm.weight": (n,), "post_attention_layernorm.weight": (n,),
              "mlp.gate_proj.weight": (inter, n), "mlp.up_proj.weight": (inter, n),
              "mlp.down_proj.weight": (n, inter)}
    if kind == "linear_attention":
        hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
        dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
        conv = 2 * hk * dk + hv * dv
        shapes.update({
            "linear_attn.in_proj_qkv.weight": (conv, n), "linear_attn.in_proj_z.weight": (hv * dv, n),
            "linear_attn.in_proj_b.weight": (hv, n), "linear_attn.in_proj_a.weight": (hv, n),
            "linear_attn.conv1d.weight": (conv, 1, cfg["linear_conv_kernel_dim"]),
            "linear_attn.dt_bias": (hv,), "linear_attn.A_log": (hv,), "linear_attn.norm.weight": (dv,),
            "linear_attn.out_proj.weight": (n, hv * dv)})
    elif kind == "full_attention":
        hq, hkv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        shapes.update({
            "self_attn.q_proj.weight": (2 * hq * d, n),     # queries and the output gate
            "self_attn.k_proj.weight": (hkv * d, n), "self_attn.v_proj.weight": (hkv * d, n),
            "self_attn.o_proj.weight": (n, hq * d),
            "self_attn.q_norm.weight": (d,), "self_attn.k_norm.weight": (d,)})
    else:
        raise ValueError(f"unknown layer type {kind!r}")
    return shapes


def model_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor of a Qwen3_5ForCausalLM with this config (tied head: no lm_head.weight)."""
    shapes = {"model.embed_tokens.weight": (cfg["vocab_size"], cfg["hidden_size"]),
              "model.norm.weight": (cfg["hidden_size"],)}
    for i, kind in enumerate(cfg["layer_types"]):
        for name, shape in layer_shapes(cfg, kind).items():
            shapes[f"model.layers.{i}.{name}"] = shape
    if not cfg.get("tie_word_embeddings", True):
        shapes["lm_head.weight"] = (cfg["vocab_size"], cfg["hidden_size"])
    return shapes


def mtp_shapes(cfg: dict, layers: int = 1) -> dict[str, tuple[int, ...]]:
    """The multi-token-prediction head of a published checkpoint (mtp.*, beside the text model):
    the next token's embedding and the model's last hidden state, each normed, concatenated and
    projected (fc), `layers` full-attention decoder layers, a final norm; the embedding and the
    output head are the model's."""
    n = cfg["hidden_size"]
    shapes = {"mtp.fc.weight": (n, 2 * n), "mtp.pre_fc_norm_embedding.weight": (n,),
              "mtp.pre_fc_norm_hidden.weight": (n,), "mtp.norm.weight": (n,)}
    for i in range(layers):
        shapes |= {f"mtp.layers.{i}.{k}": v for k, v in layer_shapes(cfg, "full_attention").items()}
    return shapes


def mtp_layers(names) -> int:
    """How many MTP decoder layers tensors with these names hold (0: no MTP head)."""
    found = {int(m.group(1)) for name in names if (m := re.match(r"mtp\.layers\.(\d+)\.", name))}
    return max(found) + 1 if found else int(any(name.startswith("mtp.") for name in names))


# Tensors the real checkpoint keeps in fp32 whatever the model dtype.
FP32_SUFFIXES = ("linear_attn.A_log", "linear_attn.norm.weight")
