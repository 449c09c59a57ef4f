"""The stand-in base and the merged-checkpoint build: shapes, key mapping, padding, stock
loading, determinism, bad bases."""
import json

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

from qwengpu.circuit.host import anchor_split
from qwengpu.errors import QwenGpuError
from qwengpu.model import CheckpointError
from qwengpu.model.circuits import default_circuit
from qwengpu.testing.circuits import synthetic_circuit
from qwengpu.model.hosts import host_config
from qwengpu.model.kl import load_base
from qwengpu.model.merge import build
from qwengpu.model.standin import ensure_standin, standin_config, write_random_base, write_standin
from qwengpu.model.tokenizer import reference_encode

TEXT = "The ferry crossed the river twice. Der Zug kam spät. 我们在河边吃午饭。"


def tensors(folder):
    out = {}
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as f:
            out.update({k: f.get_tensor(k) for k in f.keys()})
    return out


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def small_2b_config(layers=("linear_attention", "full_attention"), vocab=512, **changes):
    """Qwen3.5-2B layer shapes (hidden 2048, GDN 16 x 128, MLP 6144, attention 8/2 x 256),
    fewer layers and a small vocabulary to keep the fixture fast."""
    cfg = host_config("qwen3_5_2b_text")
    cfg.update(num_hidden_layers=len(layers), layer_types=list(layers), vocab_size=vocab, eos_token_id=0, **changes)
    return cfg


@pytest.fixture(scope="module")
def standin():
    return ensure_standin()


@pytest.fixture(scope="module")
def merged(standin, tmp_path_factory):
    """Stand-in + synthetic circuit of width 192, so n + C = 4n and the residual scale is exactly 2."""
    circuit = synthetic_circuit(standin_config(), width=192, layers=2, tokens=8)
    out = tmp_path_factory.mktemp("m") / "merged"
    build(standin, out, "float32", circuit=circuit, progress=False)
    return out, circuit


def circuit_outputs(model, layers):
    seen = []
    hook = lambda _m, _i, out: seen.append(float(out.abs().max()))       # noqa: E731
    for layer in model.model.layers[:layers]:
        layer.linear_attn.register_forward_hook(hook)
        layer.mlp.register_forward_hook(hook)
    return seen


# ---------------------------------------------------------------- stand-in
def test_standin_has_the_2b_layer_shapes_and_real_vocabulary(standin):
    cfg = json.loads((standin / "config.json").read_text())
    assert (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]) == (16, 16)
    assert (cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["intermediate_size"]) == (128, 128, 6144)
    assert "full_attention" in cfg["layer_types"] and cfg["vocab_size"] == 248320
    t = tensors(standin)
    assert "lm_head.weight" not in t
    assert t["model.layers.0.linear_attn.in_proj_qkv.weight"].shape == (2 * 16 * 128 + 16 * 128, cfg["hidden_size"])
    assert t["model.layers.0.linear_attn.A_log"].dtype == torch.float32
    assert t["model.layers.0.linear_attn.norm.weight"].dtype == torch.float32
    assert t["model.layers.0.mlp.up_proj.weight"].dtype == torch.bfloat16


def test_standin_is_byte_identical_across_builds(standin, tmp_path):
    assert files(write_standin(tmp_path / "again")) == files(standin)


def test_standin_loads_with_stock_transformers(standin):
    model = AutoModelForCausalLM.from_pretrained(str(standin), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(standin))
    ids = tok(TEXT, return_tensors="pt").input_ids
    assert ids[0].tolist() == reference_encode(TEXT)
    with torch.no_grad():
        assert model(ids).logits.shape == (1, ids.shape[1], 248320)


# ---------------------------------------------------------------- merged stand-in
def test_merged_config(merged, standin):
    out, circuit = merged
    cfg = json.loads((out / "config.json").read_text())
    base = json.loads((standin / "config.json").read_text())
    n = base["hidden_size"]
    assert cfg["architectures"] == ["Qwen3_5ForCausalLM"] and cfg["model_type"] == "qwen3_5_text"
    assert cfg["hidden_size"] == n + 192 and cfg["vocab_size"] == 248320 + 8
    assert cfg["layer_types"] == ["linear_attention"] * 2 + base["layer_types"]
    assert cfg["num_hidden_layers"] == 2 + base["num_hidden_layers"]
    assert cfg["rms_norm_eps"] == base["rms_norm_eps"]        # residual rescale keeps eps


def test_merged_tensors_are_the_base_padded_and_scaled(merged, standin):
    out, circuit = merged
    m, b = tensors(out), tensors(standin)
    n, V = 64, 248320
    assert "lm_head.weight" not in m
    emb = m["model.embed_tokens.weight"].numpy()
    assert np.array_equal(emb[:V, :n], 2 * b["model.embed_tokens.weight"].float().numpy())   # a = sqrt(256/64)
    assert not emb[:V, n:].any() and not emb[V:, :n].any()
    assert np.array_equal(emb[V:, n:], circuit.token_embeddings.astype(np.float32))
    # layer 0 of the base is layer 2 of the merged model
    up = m["model.layers.2.mlp.up_proj.weight"].numpy()
    assert np.array_equal(up[:, :n], b["model.layers.0.mlp.up_proj.weight"].float().numpy() / 2)
    assert not up[:, n:].any()
    down = m["model.layers.2.mlp.down_proj.weight"].numpy()
    assert np.array_equal(down[:n], 2 * b["model.layers.0.mlp.down_proj.weight"].float().numpy())
    assert not down[n:].any()
    w = b["model.layers.3.input_layernorm.weight"].double().numpy()
    got = m["model.layers.5.input_layernorm.weight"].double().numpy()
    assert np.array_equal(got[:n], w)                          # decoder norms keep their weights
    assert np.all(got[n:] == -1.0)                              # gain 0 on circuit dims
    final = m["model.norm.weight"].double().numpy()
    np.testing.assert_allclose(1 + final[:n], (1 + b["model.norm.weight"].double().numpy()) / 4, rtol=1e-7)
    assert m["model.layers.3.linear_attn.A_log"].dtype == torch.float32


def test_merged_loads_stock_and_matches_the_base_on_text(merged, standin):
    out, circuit = merged
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    base = AutoModelForCausalLM.from_pretrained(str(standin), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(out))
    ids = tok(TEXT, return_tensors="pt").input_ids
    assert ids[0].tolist() == reference_encode(TEXT)
    assert tok.convert_tokens_to_ids(circuit.token_names[3]) == 248320 + 3
    seen = circuit_outputs(model, 2)
    with torch.no_grad():
        got, want = model(ids).logits[0].double(), base(ids).logits[0].double()
    assert seen and max(seen) == 0.0
    lp, lq = want.log_softmax(-1), got[:, :248320].log_softmax(-1)
    assert float((lp.exp() * (lp - lq)).sum(-1).max()) < 1e-9
    assert torch.all(got[:, 248320:] == 0)          # GPU-token logits on text: circuit dims are 0


def test_build_is_byte_identical(merged, standin, tmp_path):
    out, circuit = merged
    again = build(standin, tmp_path / "again", "float32", circuit=circuit, progress=False)
    assert files(again) == files(out)


def test_refuses_to_overwrite_without_force(merged, standin, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    circuit = synthetic_circuit(standin_config(), width=16, layers=1, tokens=2)
    with pytest.raises(CheckpointError, match="exists and is not empty; pass --force"):
        build(standin, out, circuit=circuit, progress=False)
    assert (out / "keep.txt").read_text() == "mine"
    build(standin, out, "bfloat16", force=True, circuit=circuit, progress=False, max_shard_bytes=20 << 20)
    assert not (out / "keep.txt").exists()
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1                    # sharded output
    assert tensors(out)["model.layers.1.mlp.up_proj.weight"].dtype == torch.bfloat16


# ---------------------------------------------------------------- real-layout fixtures
@pytest.fixture(scope="module")
def multimodal_2b(tmp_path_factory):
    return write_random_base(tmp_path_factory.mktemp("b") / "q2b", small_2b_config(), "multimodal")


def test_2b_shaped_multimodal_base_round_trip(multimodal_2b, tmp_path):
    circuit = synthetic_circuit(small_2b_config(), width=64, layers=1, tokens=4)
    out = build(multimodal_2b, tmp_path / "m", "float32", circuit=circuit, progress=False)
    names = set(tensors(out))
    assert not any("language_model" in k or "visual" in k for k in names) and "mtp.fc.weight" in names
    assert "model.layers.2.self_attn.q_proj.weight" in names and "lm_head.weight" not in names
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()   # tied head
    assert model.config.hidden_size == 2048 + 64
    base = load_base(multimodal_2b, torch.float32)
    ids = torch.tensor([[5, 77, 300, 12, 5, 499]])
    with torch.no_grad():
        got, want = model(ids).logits[0, :, :512].double(), base(ids).logits[0].double()
    lp, lq = want.log_softmax(-1), got.log_softmax(-1)
    assert float((lp.exp() * (lp - lq)).sum(-1).max()) < 1e-9


def test_default_circuit_fits_the_2b_shape():
    cfg = small_2b_config()
    c = default_circuit(cfg)
    anchor_split(cfg["hidden_size"] + c.width)               # n + C = t * 4**m (raises otherwise)
    assert c.layers[0]["linear_attn.in_proj_qkv.weight"].shape == (6144, 2048 + c.width)


def test_4b_shaped_base_grouped_heads(tmp_path):
    """32 value heads over 16 key heads on the stand-in's width (the real 4B shape:
    test_model_fixtures): a circuit of another head layout is refused by name; one of that
    shape merges."""
    cfg = standin_config()
    cfg.update(linear_num_value_heads=32, vocab_size=512, eos_token_id=0)
    base = write_random_base(tmp_path / "b4", cfg, "multimodal")
    with pytest.raises(CheckpointError, match="cannot fit this base: layer 0 linear_attn"):
        build(base, tmp_path / "m", circuit=synthetic_circuit(standin_config(), 32, 1, 2), progress=False)
    out = build(base, tmp_path / "m", circuit=synthetic_circuit(cfg, 32, 1, 2), progress=False)
    assert AutoModelForCausalLM.from_pretrained(str(out)).config.linear_num_value_heads == 32


# ---------------------------------------------------------------- bad bases
def test_bad_bases_get_clear_errors(tmp_path, multimodal_2b):
    out = tmp_path / "out"
    circuit = synthetic_circuit(small_2b_config(), 16, 1, 2)

    def fails(base, pattern):
        with pytest.raises(CheckpointError, match=pattern) as e:
            build(base, out, circuit=circuit, progress=False)
        assert isinstance(e.value, QwenGpuError) and not out.exists()

    fails(tmp_path / "nowhere", "not a directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(empty, "no config.json")
    llama = tmp_path / "llama"
    llama.mkdir()
    (llama / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 2048}))
    fails(llama, "model_type 'llama' is not a Qwen3.5 model")
    noweights = tmp_path / "noweights"
    noweights.mkdir()
    (noweights / "config.json").write_bytes((multimodal_2b / "config.json").read_bytes())
    fails(noweights, "no weights")
    (noweights / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}}))
    fails(noweights, "missing: model-00001-of-00002.safetensors")
    # wrong shapes: a config that says 3072 neurons for weights that have 6144
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    cfg = json.loads((multimodal_2b / "config.json").read_text())
    cfg["text_config"]["intermediate_size"] = 3072
    (wrong / "config.json").write_text(json.dumps(cfg))
    (wrong / "model.safetensors").symlink_to(multimodal_2b / "model.safetensors")
    fails(wrong, r"mlp.gate_proj.weight has shape \[6144, 2048\]; the config implies \[3072, 2048\]")
    (wrong / "model.safetensors").unlink()
    (wrong / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    fails(wrong, "unreadable safetensors file")


def test_incomplete_bases_get_clear_errors(tmp_path):
    """Configs without what a Qwen3.5 text model needs, and weights with a tensor missing or extra."""
    out = tmp_path / "out"
    cfg = dict(standin_config(), vocab_size=512, eos_token_id=0)
    circuit = synthetic_circuit(cfg, 16, 1, 2)

    def fails(base, pattern):
        with pytest.raises(CheckpointError, match=pattern):
            build(base, out, circuit=circuit, progress=False)
        assert not out.exists()

    good = write_random_base(tmp_path / "good", cfg, "text-only")
    weights = tensors(good)

    def variant(name, config, drop=(), add=None):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        kept = {k: v for k, v in weights.items() if k not in drop}
        save_file({**kept, **(add or {})}, str(folder / "model.safetensors"))
        return folder

    fails(variant("no_text_config", {"model_type": "qwen3_5", "vision_config": {}}),
          "model_type qwen3_5 without a text_config")
    fails(variant("no_heads", {k: v for k, v in cfg.items() if k != "linear_num_value_heads"}),
          "Qwen3.5 text config lacks linear_num_value_heads")
    fails(variant("types", dict(cfg, num_hidden_layers=5)), "4 layer_types for num_hidden_layers=5")
    fails(variant("missing", cfg, drop=["model.layers.1.linear_attn.A_log"]),
          r"1 text-model tensors missing, e.g. \['model.layers.1.linear_attn.A_log'\]")
    fails(variant("extra", cfg, add={"model.layers.9.mlp.up_proj.weight": torch.zeros(2, 2)}),
          r"unexpected tensors for a Qwen3.5 text model, e.g. \['model.layers.9.mlp.up_proj.weight'\]")


def test_bad_dtype_is_refused(standin, tmp_path):
    with pytest.raises(CheckpointError, match="dtype 'float16'"):
        build(standin, tmp_path / "x", "float16", progress=False)


def test_build_progress_goes_to_stderr(tmp_path, capsys):
    """stdout stays clean for `--json` output when a command builds a model on first use."""
    import torch
    from safetensors.torch import load_file

    from qwengpu.model.merge import Item, _write_weights
    item = Item("w", (2, 3), torch.float32, lambda: iter([torch.arange(6.0).view(2, 3)]))
    _write_weights(tmp_path, [[item]], True)
    out = capsys.readouterr()
    assert out.out == "" and "build" in out.err
    assert load_file(tmp_path / "model.safetensors")["w"].tolist() == [[0, 1, 2], [3, 4, 5]]


# ---------------------------------------------------------------- the MTP head
def mtp_logits(model, folder, ids):
    """Logits of the multi-token-prediction head as vLLM's Qwen3.5 drafter computes them (for
    position t: the embedding of token t+1 and the model's normed last hidden state at t, each
    normed, concatenated, projected by fc, one full-attention decoder layer, mtp.norm, the
    model's head), from the mtp.* tensors in `folder`, with the model's own embedding and head."""
    mtp = {k: v.float() for k, v in tensors(folder).items() if k.startswith("mtp.")}
    cfg = model.config

    def norm(x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_norm_eps) * (1 + mtp[name])
    with torch.no_grad():
        hidden = model.model(ids).last_hidden_state[:, :-1]
        embeds = model.model.embed_tokens(ids[:, 1:])
        x = torch.cat([norm(embeds, "mtp.pre_fc_norm_embedding.weight"),
                       norm(hidden, "mtp.pre_fc_norm_hidden.weight")], -1) @ mtp["mtp.fc.weight"].T
        layer_cfg = type(cfg)(**{**cfg.to_dict(), "num_hidden_layers": 1, "layer_types": ["full_attention"]})
        layer_cfg._attn_implementation = "eager"
        layer = Qwen3_5DecoderLayer(layer_cfg, 0)
        layer.load_state_dict({k[len("mtp.layers.0."):]: v for k, v in mtp.items() if k.startswith("mtp.layers.0.")})
        T = x.shape[1]
        pos = torch.arange(T)[None]
        mask = torch.full((T, T), float("-inf")).triu(1)[None, None]
        x = layer(x, position_embeddings=model.model.rotary_emb(x, pos), attention_mask=mask, position_ids=pos)
        return norm(x, "mtp.norm.weight") @ model.lm_head.weight.T


@pytest.mark.parametrize("width", [192, 64], ids=["a=2", "a=sqrt2"])
def test_mtp_head_is_carried_through(tmp_path, width):
    """A published checkpoint's MTP head (mtp.*) is written into the merged checkpoint, widened
    like the base layers (the residual recipe's factors; the circuit dims get gain 0), so the
    merged model drafts text exactly as the base does, up to the norms' eps (the head's input
    norm sees the merged model's final-norm output, 1/a of the base's); stock transformers
    loads the checkpoint and ignores the head, as it does the published one's."""
    cfg = standin_config()
    cfg.update(vocab_size=512, eos_token_id=0)
    base = write_random_base(tmp_path / "b", cfg, "multimodal")
    out = build(base, tmp_path / "m", "float32", circuit=synthetic_circuit(cfg, width, 1, 2), progress=False)
    names = tensors(out)
    N = 64 + width
    assert names["mtp.fc.weight"].shape == (N, 2 * N) and names["mtp.layers.0.self_attn.o_proj.weight"].shape[0] == N
    assert json.loads((out / "config.json").read_text())["mtp_num_hidden_layers"] == 1
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    ids = torch.tensor([[5, 77, 300, 12, 5, 499, 3, 42]])
    got = mtp_logits(model, out, ids)[0, :, :512].double()
    want = mtp_logits(load_base(base, torch.float32), base, ids)[0].double()
    lp, lq = want.log_softmax(-1), got.log_softmax(-1)
    assert float((lp.exp() * (lp - lq)).sum(-1).max()) < 1e-9
    assert (got.argmax(-1) == want.argmax(-1)).all()


def test_a_partial_mtp_head_is_refused(tmp_path):
    cfg = standin_config()
    cfg.update(vocab_size=512, eos_token_id=0)
    base = write_random_base(tmp_path / "b", cfg, "multimodal")
    with safe_open(str(base / "model.safetensors"), framework="pt") as f:
        kept = {k: f.get_tensor(k) for k in f.keys() if k != "mtp.norm.weight"}
    save_file(kept, str(base / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match=r"1 text-model tensors missing, e.g. \['mtp.norm.weight'\]"):
        build(base, tmp_path / "m", circuit=synthetic_circuit(cfg, 16, 1, 2), progress=False)
