"""eval_kl(): how far the merged model's text predictions drift from the base's.

KL(base || merged) per position over a fixed multilingual text set, in fp32 and bf16:
over the text vocabulary (the merged distribution renormalised over the base's ids) and
over the full vocabulary (GPU tokens included: the base gives them probability 0, so any
mass the merged model puts there counts). Also the largest |output| of any circuit layer's
token mixer or MLP on a text position, from forward hooks.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, Qwen3_5ForCausalLM, Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextRotaryEmbedding

from qwengpu.dtypes import SHORT, torch_dtype
from qwengpu.model import CheckpointError
from qwengpu.model.checkpoint import check_merged_checkpoint, open_base, read_tensor
from qwengpu.model.tokenizer import reference_encode

# Our own sentences; one sequence per language. A few hundred tokens in all.
TEXTS = [
    "The river was quiet that morning, and the old ferryman counted the boats twice before he "
    "opened the gate. Seven crossed before noon; the eighth waited for the fog to lift.",
    "Der Zug nach Norden hatte wieder Verspätung, also kaufte sie einen Kaffee und las die "
    "Zeitung von gestern noch einmal, diesmal bis zur letzten Seite.",
    "Le boulanger ouvre sa boutique à six heures. Les premiers clients arrivent avant le jour, "
    "et l'odeur du pain chaud remplit toute la rue étroite.",
    "El mercado de los sábados es pequeño pero ruidoso: frutas, quesos, flores y un hombre que "
    "vende radios viejas que todavía funcionan.",
    "Вечером в библиотеке почти никого не было, только студент у окна переписывал формулы "
    "из толстой книги в свою тетрадь.",
    "山の上の小さな駅では、一日に三本しか電車が来ない。それでも駅員は毎朝ホームを掃除している。",
    "我们在河边找到了一块平坦的石头，坐下来吃午饭，看着小船慢慢地漂向下游。",
    "كان الجو حارا في الظهيرة، فجلس الأطفال في ظل الشجرة الكبيرة يقرؤون قصة عن البحر.",
    "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n",
    "Το μικρό λιμάνι ξυπνά νωρίς· οι ψαράδες δένουν τα δίχτυα τους και μιλούν για τον καιρό.",
]
TAGS = {short: name for name, short in SHORT.items()}     # result keys' short dtype names


def load_base(path: str | Path, dtype: torch.dtype) -> Qwen3_5ForCausalLM:
    """The base's text model in either layout (multimodal checkpoints: model.language_model.*)."""
    ckpt = open_base(path)
    cfg = {k: v for k, v in ckpt.text_config.items() if not k.startswith("_")}
    cfg.pop("model_type", None)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**cfg))
    state = {name: read_tensor(ckpt, name).to(dtype) for name in ckpt.sources}
    model.load_state_dict(state, strict=False, assign=True)
    model.tie_weights()
    model = model.to(dtype).eval()
    # its buffers were on meta; made after the cast, they stay float32 as from_pretrained keeps
    # them (the merged model's are): a bf16 inv_freq moves every rotary angle, drift that
    # the merge does not cause
    model.model.rotary_emb = Qwen3_5TextRotaryEmbedding(model.config)
    return model


def load_merged(path: str | Path, dtype: torch.dtype):
    check_merged_checkpoint(path)
    return AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).eval()


def _circuit_hooks(model, layers: int, record: list[float]):
    def hook(_module, _inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        record.append(float(out.detach().abs().max()))
    handles = []
    for layer in model.model.layers[:layers]:
        handles.append(layer.linear_attn.register_forward_hook(hook))
        handles.append(layer.mlp.register_forward_hook(hook))
    return handles


@torch.no_grad()
def _logits(model, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids])).logits[0].to(torch.float64)


def _kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> np.ndarray:
    """KL(softmax p || softmax q) per row, float64."""
    lp, lq = p_logits.log_softmax(-1), q_logits.log_softmax(-1)
    return (lp.exp() * (lp - lq)).sum(-1).clamp_min(0).numpy()


def demo_merged_dir(base_dir: Path, rescale: str = "residual", exact_bf16: bool = False) -> Path:
    """Where eval_kl keeps the base's merged model with the demo circuit."""
    name = f"merged-{base_dir.name}-{rescale}" + ("-exact-bf16" if exact_bf16 else "")
    return Path(__file__).resolve().parents[2] / "build" / name


def eval_kl(base: str | Path, merged: str | Path | None = None, rescale: str = "residual",
            texts: list[str] | None = None, dtypes: tuple[str, ...] = ("fp32", "bf16"),
            exact_bf16: bool = False) -> dict:
    """KL(base || merged) on the built-in text set (or `texts`), mean over positions (the
    `_max` keys: the worst position). `base` may be "standin"; without `merged` the base's
    merged model with the demo circuit is built in fp32 (cached under build/), with
    `exact_bf16` as `qgpu build --exact-bf16` builds it.
    `kl_bf16_base_vs_fp32` is KL(base fp32 || base bf16): the drift bf16 alone causes, and
    `kl_bf16_over_base_drift` the merged model's bf16 drift (like for like) over it."""
    from qwengpu.model.merge import build, resolve_base
    base_dir = resolve_base(base)
    base_text = open_base(base_dir).text_config     # a bad base: a CheckpointError before any model loads
    if merged is not None and exact_bf16:
        raise CheckpointError("exact_bf16 says how to build the merged model; a given one is measured as it is "
                              "(build it with qgpu build --exact-bf16)")
    if merged is None:
        merged = demo_merged_dir(base_dir, rescale, exact_bf16)
        stale = not (merged / "config.json").is_file() or \
            (merged / "config.json").stat().st_mtime < (base_dir / "config.json").stat().st_mtime
        if stale:
            # the demo circuit: the machine's 21 layers make the stand-in's fp32 merged model
            # 7.6 GB; both obey the same silence rule (docs/build.md)
            build(base_dir, merged, "float32", force=True, progress=False, rescale=rescale, circuit="demo",
                  exact_bf16=exact_bf16)
    meta = check_merged_checkpoint(merged)["qwengpu"]
    if meta["base_vocab_size"] != base_text["vocab_size"]:
        raise CheckpointError(f"{merged} was built from a base with {meta['base_vocab_size']} text tokens; "
                              f"{base_dir} has {base_text['vocab_size']} (not its base)")
    n_circuit, V = meta.get("circuit_layers", 0), meta.get("base_vocab_size")
    sequences = [reference_encode(t) for t in (texts or TEXTS)]
    result = {"positions": sum(len(s) for s in sequences)}
    circuit_out: list[float] = []
    reference = []                          # the base's fp32 log-probs, per sequence
    for tag in dtypes:
        dtype = torch_dtype(TAGS[tag])
        b_model, m_model = load_base(base_dir, dtype), load_merged(merged, dtype)
        V = V or b_model.config.vocab_size
        handles = _circuit_hooks(m_model, n_circuit, circuit_out)
        text_kl, full_kl, noise = [], [], []
        for k, ids in enumerate(sequences):
            pb, pm = _logits(b_model, ids), _logits(m_model, ids)
            text_kl.append(_kl(pb, pm[:, :V]))
            full = torch.cat([pb, torch.full((len(ids), pm.shape[1] - V), -1e300, dtype=pb.dtype)], -1)
            full_kl.append(_kl(full, pm))
            if tag == "fp32":
                reference.append(pb.log_softmax(-1).float())
            elif reference:
                noise.append(_kl(reference[k].double(), pb))
        for h in handles:
            h.remove()
        result[f"kl_{tag}"] = float(np.concatenate(text_kl).mean())
        result[f"kl_{tag}_max"] = float(np.concatenate(text_kl).max())
        result[f"kl_full_vocab_{tag}"] = float(np.concatenate(full_kl).mean())
        if noise:
            result[f"kl_{tag}_base_vs_fp32"] = drift = float(np.concatenate(noise).mean())
            result[f"kl_{tag}_over_base_drift"] = result[f"kl_{tag}"] / drift
        del b_model, m_model
    result["circuit_max_abs_on_text"] = max(circuit_out, default=0.0)
    result["circuit_layers"] = n_circuit
    result["rescale"] = meta.get("rescale")
    return result
