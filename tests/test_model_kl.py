"""Text drift of the merged stand-in, and the two norm-rescale recipes."""
import json

import numpy as np
import pytest
import torch
from safetensors import safe_open

from qwengpu.model import CheckpointError
from qwengpu.testing.circuits import synthetic_circuit
from qwengpu.model.kl import TEXTS, _kl, demo_merged_dir, eval_kl
from qwengpu.model.merge import build
from qwengpu.model.standin import ensure_standin, standin_config
from qwengpu.model.tokenizer import reference_encode


def test_kl_helper_matches_a_hand_computation():
    p, q = np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.5, 0.25])
    want = 0.5 * np.log(2) + 0.25 * np.log(0.5)
    got = _kl(torch.from_numpy(np.log(p)[None] + 3.0), torch.from_numpy(np.log(q)[None] - 1.0))   # logits up to a shift
    assert abs(got[0] - want) < 1e-15


def test_merged_standin_with_the_compiled_circuit_has_no_text_drift():
    """The default (compiled) circuit in front of the stand-in: KL < 1e-9 in fp32 and the circuit's
    layers output exactly 0 on every text position."""
    r = eval_kl("standin", texts=TEXTS[:3], dtypes=("fp32",))
    assert r["positions"] == sum(len(reference_encode(t)) for t in TEXTS[:3])
    assert r["circuit_layers"] >= 1 and r["circuit_max_abs_on_text"] == 0.0
    assert r["kl_fp32"] < 1e-9 and r["kl_fp32_max"] < 1e-9
    assert 0 <= r["kl_full_vocab_fp32"] < 1e-3      # GPU tokens get logit 0 on text, a little mass


def test_eps_recipe_rescales_gains_and_eps(tmp_path):
    base = ensure_standin()
    n, C = 64, 64
    out = build(base, tmp_path / "eps", "float32", circuit=synthetic_circuit(standin_config(), C, 1, 2),
                progress=False, rescale="eps")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["rms_norm_eps"] == pytest.approx(1e-6 * n / (n + C), rel=1e-12)
    with safe_open(str(base / "model.safetensors"), "pt") as f:
        w = f.get_tensor("model.layers.0.post_attention_layernorm.weight").double().numpy()
        emb = f.get_tensor("model.embed_tokens.weight")[:100].float().numpy()
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        got = f.get_tensor("model.layers.1.post_attention_layernorm.weight").double().numpy()
        memb = f.get_tensor("model.embed_tokens.weight")[:100].numpy()
    np.testing.assert_allclose(1 + got[:n], (1 + w) * np.sqrt(n / (n + C)), rtol=1e-7)
    assert np.array_equal(memb[:, :n], emb)                  # no residual scale in this recipe


def test_a_perturbed_merge_shows_drift(tmp_path):
    """The measurement can fail: a merged model whose final norm gain is 1.5x too large is caught."""
    from safetensors.torch import load_file, save_file
    base = ensure_standin()
    out = build(base, tmp_path / "m", "float32", circuit=synthetic_circuit(standin_config(), 64, 1, 2),
                progress=False)
    t = load_file(str(out / "model.safetensors"))
    t["model.norm.weight"] = (1 + t["model.norm.weight"]) * 1.5 - 1
    save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})
    r = eval_kl(base, out, texts=TEXTS[:1], dtypes=("fp32",))
    assert r["kl_fp32"] > 1e-4


def test_exact_bf16_build_leaves_only_the_matmuls_own_rounding():
    """--exact-bf16 on the stand-in with the demo circuit (n + C = 4n, a = 2): the head untied (the
    embedding / 2), no gain rescaled, so every weight the merged model computes text with is the
    base's exactly, in bf16 too. What bf16 may still change is the matmuls' own rounding, which
    some CPUs' kernels choose by the matrix's shape (docs/build.md, "bf16 like for like"):
    KL exactly 0 on one machine, 0.016 of the base's own bf16 drift on another. The default
    build's tied head rescales the final norm's gain, which bf16 rounds: 0.24 of it
    (benchmarks/bf16_drift.py)."""
    r = eval_kl("standin", texts=TEXTS[:3], exact_bf16=True)     # qgpu eval kl --base standin --exact-bf16
    cfg = json.loads((demo_merged_dir(ensure_standin(), exact_bf16=True) / "config.json").read_text())
    assert cfg["tie_word_embeddings"] is False and cfg["qwengpu"]["exact_bf16"] is True
    assert r["kl_fp32"] == 0.0 and r["kl_bf16_base_vs_fp32"] > 1e-4
    assert r["kl_bf16"] <= r["kl_bf16_base_vs_fp32"] / 20, r
    assert r["kl_bf16_over_base_drift"] == r["kl_bf16"] / r["kl_bf16_base_vs_fp32"]
    assert r["circuit_max_abs_on_text"] == 0.0


def test_exact_bf16_refuses_a_width_that_is_not_4k_n(tmp_path):
    with pytest.raises(CheckpointError, match=r"exact_bf16: n \+ C = 128 is not 4\*\*k times n = 64"):
        build("standin", tmp_path / "m", circuit=synthetic_circuit(standin_config(), 64, 1, 2), exact_bf16=True,
              progress=False)
