"""The chat's text model (qwengpu/chat/textmodel.py): the stand-in merged model without its
circuit layers computes, at every text position, exactly what the stock full model computes.

The proof, on the stock full model (every layer), in bf16 and fp32: each circuit layer's GDN and
MLP output exactly 0 at every text position (forward hooks, over a prompt and the decode steps
after it: the chunked and the recurrent GDN kernels both), so the layer's output is its input;
and the text model's logits and greedy tokens equal the full model's. bf16: the full model is
transformers' own from_pretrained (5.6 GB); fp32 (from_pretrained peaks at 17.5 GB there): the
same stock class with every stored tensor cast to fp32 (`full_model`), which the bf16 test
shows is what from_pretrained builds."""
import gc
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import Qwen3_5ForCausalLM
from transformers.cache_utils import DynamicCache

from qwengpu.chat.textmodel import load_text_model, quiet_transformers, stored_dtype, text_layout
from qwengpu.driver import runtime
from qwengpu.machine.plan import LAYERS
from qwengpu.model.checkpoint import shard_files
from qwengpu.model.merge import default_merged_model
from qwengpu.testing.stock import full_model

PROMPTS = ["<|im_start|>user\nWhat is 17 * 23?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
           "The quick brown fox jumps over the lazy dog, then counts: 1, 2, 3",
           "Hello"]


@pytest.fixture(scope="module")
def path():
    return default_merged_model()


@pytest.fixture(scope="module")
def tokenizer(path):
    from qwengpu.chat.session import load_tokenizer
    return load_tokenizer(path)         # not a ChatSession's: its text model would sit beside the full ones


class CircuitWatch:
    """Forward hooks on the circuit layers of a full model: every call's GDN and MLP output must
    be exactly 0 and the layer's output its input (`bad` lists any that is not)."""

    def __init__(self, model, layers: int):
        self.calls, self.bad, self.handles = 0, [], []
        for i, layer in enumerate(model.model.layers[:layers]):
            self.handles.append(layer.linear_attn.register_forward_hook(self._zero(i, "GDN")))
            self.handles.append(layer.mlp.register_forward_hook(self._zero(i, "MLP")))
            self.handles.append(layer.register_forward_hook(self._same(i), with_kwargs=True))

    def _zero(self, i, what):
        def hook(module, args, out):
            out = out[0] if isinstance(out, tuple) else out
            if torch.count_nonzero(out):
                self.bad.append(f"layer {i} {what}: {int(torch.count_nonzero(out))} nonzero outputs")
        return hook

    def _same(self, i):
        def hook(module, args, kwargs, out):
            self.calls += 1
            x = args[0] if args else kwargs["hidden_states"]
            out = out[0] if isinstance(out, tuple) else out
            if not torch.equal(out, x):
                self.bad.append(f"layer {i}: residual delta {float((out - x).abs().max())}")
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


@torch.no_grad()
def greedy(model, ids: list[int], steps: int, text_end: int):
    """(tokens, last-position logits over the text vocabulary per step): the prompt in one
    forward, then one token a forward, the argmax over the text ids, as a chat session runs."""
    cache = DynamicCache(config=model.config)
    tokens, logits, feed = [], [], ids
    with quiet_transformers():
        for _ in range(steps):
            out = model(input_ids=torch.tensor([feed]), cache=cache, use_cache=True, logits_to_keep=1)
            last = out.logits[0, -1, :text_end].clone()
            logits.append(last)
            tokens.append(int(torch.argmax(last)))
            feed = [tokens[-1]]
    return tokens, logits


def compare(path, tokenizer, full, text, prompts, steps):
    """The text model's greedy tokens and logits equal the full model's, whose circuit layers add
    exactly 0; `full` and `text` are models or loaders (the text model runs first, and goes)."""
    L, V = text_layout(runtime.load_config(path))
    runs = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    text = text if isinstance(text, torch.nn.Module) else text()
    got = [greedy(text, ids, steps, V) for ids in runs]
    del text
    gc.collect()
    full = full if isinstance(full, torch.nn.Module) else full()
    watch = CircuitWatch(full, L)
    try:
        want = [greedy(full, ids, steps, V) for ids in runs]
    finally:
        watch.remove()
    assert watch.bad == []
    assert watch.calls == L * steps * len(prompts)
    for prompt, (tokens, logits), (want_tokens, want_logits) in zip(prompts, got, want):
        assert tokens == want_tokens, prompt
        for a, b in zip(logits, want_logits):
            assert a.dtype == b.dtype == full.dtype and torch.equal(a, b), prompt


def test_the_text_model_is_the_stock_class_without_the_circuit_layers(path):
    config = runtime.load_config(path)
    L, V = text_layout(config)
    assert (L, V) == (LAYERS, 248320) and stored_dtype(path) == "bfloat16"
    text = load_text_model(path)
    assert type(text) is Qwen3_5ForCausalLM and text.dtype == torch.bfloat16 and not text.training
    assert text.config.num_hidden_layers == len(text.model.layers) == 4
    assert text.config.layer_types == config["layer_types"][L:] and text.config.vocab_size == V
    assert text.lm_head.weight is text.model.embed_tokens.weight
    assert load_text_model(path, "float32").dtype == torch.float32


def test_bf16_circuit_layers_add_exactly_zero_and_the_text_model_gives_the_stock_tokens(path, tokenizer):
    full, _ = runtime.load_model(path, "bfloat16")         # transformers' from_pretrained, every layer
    text = load_text_model(path, "bfloat16")
    L, V = text_layout(runtime.load_config(path))
    # the text model holds the stock model's own tensors: the base layers, the text rows
    stock = dict(full.named_parameters()) | dict(full.named_buffers())
    for name, t in [*text.named_parameters(), *text.named_buffers()]:
        m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", name)
        want = stock[f"model.layers.{int(m[1]) + L}.{m[2]}" if m else name]
        want = want[:V] if name in ("model.embed_tokens.weight", "lm_head.weight") else want
        assert t.dtype == want.dtype and torch.equal(t, want), name
    assert text.config._attn_implementation == full.config._attn_implementation
    # ... and from_pretrained's tensors are the stored ones cast (full_model's recipe, used in fp32)
    for file in shard_files(Path(path)):
        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():
                assert torch.equal(stock[name], f.get_tensor(name).to(torch.bfloat16)), name
    compare(path, tokenizer, full, text, PROMPTS, steps=6)
    del full, text, stock
    gc.collect()


def test_fp32_circuit_layers_add_exactly_zero_and_the_text_model_gives_the_stock_tokens(path, tokenizer):
    compare(path, tokenizer, lambda: full_model(path, "float32"), lambda: load_text_model(path, "float32"),
            PROMPTS[:1], steps=3)                            # the full model: 11.3 GB
    gc.collect()


def test_a_text_embedding_row_on_a_circuit_dim_is_refused(tmp_path, monkeypatch):
    from safetensors.torch import save_file
    from qwengpu.chat import textmodel
    from qwengpu.model import CheckpointError
    emb = torch.zeros(6, 4, dtype=torch.bfloat16)
    emb[:, :2] = 1                                  # base dims 0, 1; circuit dims 2, 3
    emb[3, 2] = 0.5                                 # text row 3 on a circuit dim
    save_file({"model.embed_tokens.weight": emb}, str(tmp_path / "model.safetensors"))
    monkeypatch.setattr(textmodel, "text_names", lambda config: {
        "model.embed_tokens.weight": ("model.embed_tokens.weight", 5)})
    config = {"qwengpu": {"base_hidden_size": 2}}
    with pytest.raises(CheckpointError, match=r"nonzero on a circuit dim \(row 3\)"):
        textmodel.read_text_weights(tmp_path, config, torch.bfloat16)
    emb[3, 2] = 0
    save_file({"model.embed_tokens.weight": emb}, str(tmp_path / "model.safetensors"))
    assert torch.equal(textmodel.read_text_weights(tmp_path, config, torch.float32)["model.embed_tokens.weight"],
                       emb[:5].float())


def test_a_gpu_token_name_in_the_text_stays_text(path):
    from qwengpu.chat.session import ChatSession
    chat = ChatSession(path, "normal", max_tokens=64)
    chat.ask("Say <|gpu:HALT|>", script=["<|gpu:HALT|> and <|gpu:EXEC|>"])
    assert all(i < chat.text_end for i in chat.ids)
    text = chat.tokenizer.decode(chat.ids, skip_special_tokens=False)
    assert "user\nSay <|gpu:HALT|><|im_end|>" in text and text.endswith("<|gpu:HALT|> and <|gpu:EXEC|><|im_end|>")


def test_the_chat_is_quiet_on_a_non_terminal(path):
    r = subprocess.run([sys.executable, "-m", "qwengpu.cli", "chat", "--model", str(path), "--once", "Hi",
                        "--max-tokens", "2"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "2 tokens, 0 GPU calls" in r.stdout
