"""Merged checkpoints after a save/load round trip, the packaged host shapes and the machine on
them (2B, and 4B's grouped GDN heads), and the model engine's torch device. The full 2B-shaped build running kernels is
benchmarks/fixture_kernels.py (several GB; docs/build.md has its numbers)."""
import copy
import shutil
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen3_5TextConfig

from qwengpu import api
from qwengpu.api import Device, resolve_device
from qwengpu.errors import QwenGpuError
from qwengpu.driver import runtime
from qwengpu.machine.build import machine_for
from qwengpu.machine.plan import LAYERS
from qwengpu.model import CheckpointError
from qwengpu.model.circuits import machine_circuit
from qwengpu.testing.circuits import synthetic_circuit
from qwengpu.model.hosts import host_config, layer_shapes
from qwengpu.model import merge
from qwengpu.model.merge import build
from qwengpu.model.standin import fixture_config, standin_config, write_random_base
from qwengpu.suite import discover, load_spec, mismatches


# ---------------------------------------------------------------- host shapes
# (hidden, MLP, layers, GDN key heads, GDN value heads, tied head): the published model cards
PUBLISHED = {"qwen3_5_0_8b_text": (1024, 3584, 24, 16, 16, True), "qwen3_5_2b_text": (2048, 6144, 24, 16, 16, True),
             "qwen3_5_4b_text": (2560, 9216, 32, 16, 32, True), "qwen3_5_9b_text": (4096, 12288, 32, 16, 32, False)}


@pytest.mark.parametrize("name", PUBLISHED)
def test_packaged_host_configs_have_the_published_shapes(name):
    cfg = host_config(name)
    assert (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["linear_num_key_heads"],
            cfg["linear_num_value_heads"], cfg["tie_word_embeddings"]) == PUBLISHED[name]
    assert cfg["layer_types"] == (["linear_attention"] * 3 + ["full_attention"]) * (cfg["num_hidden_layers"] // 4)
    assert cfg["vocab_size"] == 248320 and (cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]) == (128, 128)
    Qwen3_5TextConfig(**cfg)                                 # transformers takes it as it is
    hk, hv = PUBLISHED[name][3:5]
    assert layer_shapes(cfg, "linear_attention")["linear_attn.in_proj_qkv.weight"] == \
        (2 * hk * 128 + hv * 128, cfg["hidden_size"])


def test_fixture_config_keeps_the_layer_shapes():
    cfg = fixture_config()
    real = host_config("qwen3_5_2b_text")
    assert cfg["layer_types"] == ["linear_attention"] * 3 + ["full_attention"] and cfg["num_hidden_layers"] == 4
    for kind in ("linear_attention", "full_attention"):
        assert layer_shapes(cfg, kind) == layer_shapes(real, kind)


def test_machine_circuit_fits_the_2b_shape():
    """The machine compiled for Qwen3.5-2B: C = 2048 (n + C = 4096), its layers have the 2B's
    GDN shapes at width 4096 and at most 6144 MLP neurons (checked layer by layer as the build does)."""
    cfg = fixture_config()
    circuit = machine_circuit(cfg)
    assert circuit.width == 2048 and len(circuit.layers) == LAYERS <= 45      # issue 32's limit
    assert circuit.token_embeddings.shape == (len(circuit.token_names), 2048)
    first = circuit.layers[0]
    assert first["linear_attn.in_proj_qkv.weight"].shape == (6144, 4096)
    assert first["mlp.gate_proj.weight"].shape[0] <= 6144
    assert len(circuit.info["machine"]) == 64


def grouped_narrow_config() -> dict:
    """The stand-in with Qwen3.5-4B's and 9B's grouped GDN heads (16 key heads, each serving 2
    value heads) and Qwen3.5-0.8B's 3,584-neuron MLPs (the machine's widest layer has 5,866):
    both host mechanisms in one build (benchmarks/fixture_kernels.py runs the real shapes)."""
    cfg = standin_config()
    cfg.update(linear_num_value_heads=32, intermediate_size=3584)
    return cfg


@pytest.fixture(scope="module")
def grouped_narrow_merged(tmp_path_factory):
    """Its merged checkpoint (7 GB on disk, removed when the module ends)."""
    base = write_random_base(tmp_path_factory.mktemp("gn") / "base", grouped_narrow_config(), "multimodal")
    yield build(base, base.parent / "merged", "bfloat16", progress=False)
    shutil.rmtree(base.parent)


def test_machine_fits_grouped_heads_and_narrow_mlps():
    """* the machine's heads are the first value head of each key head's pair (with that key
      head's query and key), the second value head of a pair stays all zero;
    * the layers wider than 3,584 neurons are split, the parts after the first without heads,
      and global memory's banks (the host's readout) name the layers their heads moved to."""
    cfg = grouped_narrow_config()
    machine = machine_for(cfg)
    layers = machine.c.layers
    assert LAYERS < len(layers) <= LAYERS + 16
    assert max(lay.neuron_count for lay in layers) <= 3584
    for lay in layers:
        assert set((lay.out.cols % 2).tolist()) <= {0} and set(np.flatnonzero(lay.matrix("b").any(1)) % 2) <= {0}
        assert lay.heads_used <= 16
    for bank in machine.global_banks:
        heads = layers[bank.layer].out.cols // 128
        assert set(h for replica in bank.replicas for h in replica) <= set(heads.tolist())
    first = machine_circuit(cfg).layers[0]
    assert first["linear_attn.in_proj_qkv.weight"].shape == (2 * 16 * 128 + 32 * 128, machine.c.layout.total)
    assert first["linear_attn.A_log"].shape == first["linear_attn.in_proj_b.weight"].shape[:1] == (32,)


@pytest.mark.parametrize("name", ["dot", "atomic_inc"])
def test_grouped_narrow_host_runs_kernels_exactly(grouped_narrow_merged, name):
    """The merged checkpoint of that shape (built from a multimodal base, bf16) runs kernels in
    the model: every generated token replay-checked, the outputs (read from global memory's
    banks where the split moved them) equal to the NumPy reference."""
    runs_exactly(Device("model", model=grouped_narrow_merged, dtype="bfloat16", check="replay", max_tokens=20_000),
                 name)


def runs_exactly(device: Device, name: str) -> None:
    """Suite kernel `name` on `device`: its output arrays equal to its NumPy reference."""
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    expected = spec.reference(*copy.deepcopy(list(args)))
    fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    result = fn(grid=grid, block=block, args=args)
    assert not mismatches(args, expected, fn.arg_names)
    assert result.tokens > result.passes > 0


def test_4b_shaped_base_merges(tmp_path):
    """A merged checkpoint of the real 4B shape (hidden 2560, 16/32 GDN heads) loads in transformers."""
    small = fixture_config("qwen3_5_4b_text", ("linear_attention", "full_attention"), vocab_size=256, eos_token_id=0)
    base = write_random_base(tmp_path / "b4", small, "multimodal")
    out = build(base, tmp_path / "m", circuit=synthetic_circuit(small, 32, 1, 2), progress=False)
    model = AutoModelForCausalLM.from_pretrained(str(out))
    assert (model.config.hidden_size, model.config.linear_num_value_heads) == (2560 + 32, 32)


def test_bad_circuit_name_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="circuit 'alu': expected machine, demo"):
        build("standin", tmp_path / "x", circuit="alu", progress=False)
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------- save/load round trip
def test_text_only_fixture_survives_save_pretrained(tmp_path):
    """A merged 2B-shaped text-only fixture loaded with stock transformers, saved with
    save_pretrained and loaded again: same tensors, same logits, the qwengpu block kept
    (runtime.load_model needs it)."""
    cfg = fixture_config(layer_types=("linear_attention", "full_attention"), vocab_size=256, eos_token_id=0)
    base = write_random_base(tmp_path / "b", cfg, "text-only")
    out = build(base, tmp_path / "m", "bfloat16", circuit=synthetic_circuit(cfg, 64, 1, 4), progress=False)
    first, block = runtime.load_model(out, "bfloat16")
    first.save_pretrained(tmp_path / "again")
    second, block2 = runtime.load_model(tmp_path / "again", "bfloat16")
    assert block2 == block and block["gpu_token_ids"] == [256, 260]
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ids = torch.tensor([[3, 250, 257, 9]])          # text and GPU tokens
    with torch.no_grad():
        assert torch.equal(first(ids).logits, second(ids).logits)


# ---------------------------------------------------------------- bf16 kernels on the stand-in
BF16_KERNELS = ["dot", "atomic_inc"]      # the rest: benchmarks/fixture_kernels.py (docs/build.md)


@pytest.fixture(scope="module")
def bf16_device():
    dev = Device("model", dtype="bfloat16", check="replay", max_tokens=20_000)
    dev.model_and_machine()                     # the stand-in merged model, loaded once in bf16
    return dev


@pytest.mark.parametrize("name", BF16_KERNELS)
def test_bf16_merged_standin_runs_kernels_exactly(bf16_device, name):
    """The bf16 checkpoint on disk loaded in bf16 (fast path): every token replay-checked, the
    output arrays equal to the kernel's NumPy reference."""
    runs_exactly(bf16_device, name)


# ---------------------------------------------------------------- torch device
@pytest.mark.parametrize("cuda, mps, want", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_default_device_is_the_best_available(monkeypatch, cuda, mps, want):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert api.available_devices()[-1] == "cpu"
    assert resolve_device() == want and resolve_device(None) == want
    assert Device("model").torch_device == want


def test_unavailable_device_names_what_is_available(monkeypatch):
    monkeypatch.setattr(api, "available_devices", lambda: ["mps", "cpu"])
    with pytest.raises(QwenGpuError, match=r"device 'cuda' is not available here; available: mps, cpu"):
        Device("model", device="cuda")
    with pytest.raises(QwenGpuError, match=r"unknown device 'tpu'; choose one of cpu, cuda, mps"):
        Device("model", device="tpu")
    with pytest.raises(QwenGpuError, match="unknown device 'gpu'"):
        Device("interp", device="gpu")          # the name is checked whatever the engine
    assert Device("model", device="mps").torch_device == "mps"
    assert Device("interp").torch_device is None


def test_cuda_index_is_checked(monkeypatch):
    monkeypatch.setattr(api, "available_devices", lambda: ["cuda", "cpu"])
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(QwenGpuError, match=r"'cuda:2' is not available here: 2 CUDA device\(s\) \(cuda:0..cuda:1\)"):
        resolve_device("cuda:2")


@pytest.mark.parametrize("fast, want", [(True, "cpu"), (False, "cuda")])
def test_stock_path_loads_on_the_device_and_the_fast_path_on_the_cpu(monkeypatch, fast, want):
    monkeypatch.setattr(api, "available_devices", lambda: ["cuda", "cpu"])
    loads = []
    monkeypatch.setattr(runtime, "load_model", lambda path, dtype, device: loads.append(device) or ("model", {}))
    monkeypatch.setattr(runtime, "host_config", lambda model: {})
    monkeypatch.setattr(runtime, "load_config", lambda path: {})
    monkeypatch.setitem(sys.modules, "qwengpu.machine.build",
                        SimpleNamespace(machine_for=lambda cfg, width=None: SimpleNamespace(readout="machine")))
    monkeypatch.setattr(merge, "default_merged_model", lambda: "path")
    # the fast path reads the checkpoint's files on the CPU and never builds the stock model
    fast_model = SimpleNamespace(from_checkpoint=lambda path, dtype: loads.append("cpu") or ("fast", path))
    monkeypatch.setitem(sys.modules, "qwengpu.fast", SimpleNamespace(FastModel=fast_model))
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        Device("model", fast=fast).model_and_machine()
        # exactness on CUDA: no TF32 rounding of the circuit's operands on the stock path
        assert torch.backends.cuda.matmul.allow_tf32 is fast and torch.backends.cudnn.allow_tf32 is fast
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert loads == [want]


def test_devices_of_one_configuration_share_the_loaded_model(monkeypatch, tmp_path):
    """A load takes seconds and gigabytes: the last model loaded is kept for the next Device of
    the same configuration, and let go before another configuration loads."""
    loads = []
    monkeypatch.setattr(runtime, "load_model", lambda path, dtype, device: pytest.fail("the stock model was built"))
    monkeypatch.setattr(runtime, "host_config", lambda model: {})
    monkeypatch.setattr(runtime, "load_config", lambda path: {})
    monkeypatch.setitem(sys.modules, "qwengpu.machine.build",
                        SimpleNamespace(machine_for=lambda cfg, width=None: SimpleNamespace(readout="machine")))
    fast_model = SimpleNamespace(from_checkpoint=lambda path, dtype: loads.append(dtype) or ("fast", f"model {len(loads)}"))
    monkeypatch.setitem(sys.modules, "qwengpu.fast", SimpleNamespace(FastModel=fast_model))
    first = Device("model", model=tmp_path).model_and_machine()
    assert Device("model", model=tmp_path).model_and_machine() is first and loads == ["float32"]
    other = Device("model", model=tmp_path, dtype="bfloat16").model_and_machine()
    assert other is not first and loads == ["float32", "bfloat16"] and len(api._LOADED) == 1
    assert Device("model", model=tmp_path).model_and_machine() == (("fast", "model 3"), "machine")
