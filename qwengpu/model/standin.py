"""The stand-in base: a deterministic random-weight Qwen3.5 text model.

Same layer shapes as Qwen3.5-2B except the residual width (GDN heads 16 x 128 x 128,
conv kernel 4, MLP 6144 neurons, full attention 8/2 heads of 256 with the output gate,
the real 248,320-entry vocabulary), so a circuit built for it is the circuit a real
Qwen3.5-2B receives; only n (and thus the circuit's width C) differs. Three GDN layers
and one full-attention layer, bf16 with A_log and the GDN norm in fp32 like the real
checkpoint. Weights come from numpy's PCG64 with a fixed seed, so every build is
byte-identical.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from qwengpu.model.hosts import FP32_SUFFIXES, host_config, model_shapes, mtp_shapes
from qwengpu.model.tokenizer import write_tokenizer

HIDDEN = 64
LAYER_TYPES = ["linear_attention"] * 3 + ["full_attention"]
SEED = 20260
REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO / "build" / "standin"
LEAN_ENTRIES = 1 << 25  # larger tensors are drawn in float32 (the stand-in has none: its bytes are unchanged)
VERSION = 2            # bump when the generator changes: ensure_standin() then rebuilds the cache


def standin_config(hidden: int = HIDDEN) -> dict:
    cfg = host_config("qwen3_5_2b_text")
    cfg.update(hidden_size=hidden, num_hidden_layers=len(LAYER_TYPES), layer_types=list(LAYER_TYPES))
    return cfg


def fixture_config(host: str = "qwen3_5_2b_text", layer_types=tuple(LAYER_TYPES), **changes) -> dict:
    """A published host's text config (hosts.CONFIGS) with fewer layers (default 3 GDN + 1 full
    attention): every layer has the real shapes, the model is small enough to build here."""
    cfg = host_config(host)
    cfg.update(num_hidden_layers=len(layer_types), layer_types=list(layer_types), **changes)
    return cfg


def _init(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random values of sensible scale for each kind of parameter."""
    if name.endswith("A_log"):
        return np.log(rng.uniform(1.0, 16.0, shape))
    if name.endswith("dt_bias"):
        return rng.uniform(0.5, 1.5, shape)
    if name.endswith("linear_attn.norm.weight"):        # the gated norm multiplies by w itself
        return 1.0 + rng.normal(0, 0.1, shape)
    if len(shape) == 1:                                 # decoder / q / k norms: (1 + w)
        return rng.normal(0, 0.2, shape)
    if name.endswith("embed_tokens.weight"):            # tied head: large enough for peaked logits
        if np.prod(shape) > LEAN_ENTRIES:               # a real-vocabulary 2B embedding: 4 GB in float64
            return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.5)
        return rng.normal(0, 0.5, shape)
    if name.endswith("conv1d.weight"):
        return rng.normal(0, 0.5, shape)
    return rng.normal(0, 1.0 / np.sqrt(shape[-1]), shape)


def standin_tensors(cfg: dict, seed: int = SEED) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in model_shapes(cfg).items():
        value = torch.from_numpy(_init(name, shape, rng).astype(np.float32, copy=False))
        out[name] = value if name.endswith(FP32_SUFFIXES) else value.to(torch.bfloat16)
    return out


def write_standin(out: Path = DEFAULT_DIR, hidden: int = HIDDEN, seed: int = SEED) -> Path:
    """Write the stand-in checkpoint (config.json, model.safetensors, tokenizer files) to `out`."""
    cfg = standin_config(hidden)
    note = f"qwengpu stand-in base: random weights (seed {seed}), Qwen3.5-2B layer shapes, hidden {hidden}"
    out = write_random_base(out, cfg, "text-only", seed, tokenizer=True, note=note)
    (out / "standin.json").write_text(json.dumps(_stamp(hidden, seed)) + "\n")
    return out


def _stamp(hidden: int, seed: int) -> dict:
    return {"version": VERSION, "hidden": hidden, "seed": seed}


def write_random_base(out: Path, cfg: dict, layout: str = "text-only", seed: int = SEED,
                      tokenizer: bool = False, note: str = "") -> Path:
    """A random-weight Qwen3.5 checkpoint for `cfg` (a text config). "multimodal" writes the
    published layout: a qwen3_5 config with text_config, weights under model.language_model.*,
    plus a (tiny) model.visual.* tensor that a text build must ignore and a random MTP head (mtp.*)."""
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = standin_tensors(cfg, seed)
    text = dict(cfg, _comment=note) if note else dict(cfg)
    if layout == "multimodal":
        tensors = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
                   for k, v in tensors.items()}
        tensors["model.visual.patch_embed.proj.weight"] = torch.zeros(8, 3, 2, 2, 2, dtype=torch.bfloat16)
        rng = np.random.default_rng(seed + 1)                # the text tensors stay those of `seed`
        tensors |= {name: torch.from_numpy(_init(name, shape, rng)).to(torch.bfloat16)
                    for name, shape in mtp_shapes(cfg).items()}
        text = {k: v for k, v in text.items() if k not in ("tie_word_embeddings", "architectures")}
        config = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                  "tie_word_embeddings": cfg.get("tie_word_embeddings", True), "text_config": text,
                  "vision_config": {"model_type": "qwen3_5", "depth": 1}}
    else:
        config = text
    save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    if tokenizer:
        write_tokenizer(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def ensure_standin(out: Path = DEFAULT_DIR) -> Path:
    """The cached stand-in, built on first use."""
    out = Path(out)
    stamp = out / "standin.json"
    if not stamp.is_file() or json.loads(stamp.read_text()) != _stamp(HIDDEN, SEED):
        write_standin(out)
    return out
