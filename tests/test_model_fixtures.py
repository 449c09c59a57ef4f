"""Merged checkpoints after a save/load round trip, the host shapes the machine fits (2B) and
refuses (4B), and the model engine's torch device. The full 2B-shaped build running kernels is
benchmarks/fixture_kernels.py (several GB; docs/build.md has its numbers)."""
import copy
import sys
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM

from qwengpu import api
from qwengpu.api import Device, resolve_device
from qwengpu.errors import QwenGpuError
from qwengpu.driver import runtime
from qwengpu.machine.plan import LAYERS
from qwengpu.model import CheckpointError
from qwengpu.model.circuits import machine_circuit
from qwengpu.testing.circuits import synthetic_circuit
from qwengpu.model.hosts import host_config, layer_shapes
from qwengpu.model import merge
from qwengpu.model.merge import build
from qwengpu.model.standin import fixture_config, write_random_base
from qwengpu.suite import discover, load_spec, mismatches


# ---------------------------------------------------------------- host shapes
def test_packaged_4b_config_has_grouped_gdn_heads():
    cfg = host_config("qwen3_5_4b_text")
    assert (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]) == (2560, 9216, 32)
    assert (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]) == (16, 32)
    assert cfg["layer_types"].count("full_attention") == 8 and cfg["vocab_size"] == 248320
    # in_proj_qkv: 16 query + 16 key heads of 128, 32 value heads of 128
    assert layer_shapes(cfg, "linear_attention")["linear_attn.in_proj_qkv.weight"] == (2 * 16 * 128 + 32 * 128, 2560)


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


def test_4b_shape_is_refused_early_with_the_reason(tmp_path):
    """Qwen3.5-4B's GDN has 16 key heads for 32 value heads; the circuit compiler needs them equal:
    the build says so before writing anything (a synthetic circuit of that shape merges)."""
    cfg = fixture_config("qwen3_5_4b_text", ("linear_attention", "full_attention"), vocab_size=256, eos_token_id=0)
    base = write_random_base(tmp_path / "b4", cfg, "multimodal")
    with pytest.raises(CheckpointError, match=r"the circuit cannot fit this base: host has grouped GDN heads "
                                              r"\(key heads != value heads\)"):
        build(base, tmp_path / "m", progress=False)
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.partial").exists()
    out = build(base, tmp_path / "m", circuit=synthetic_circuit(cfg, 32, 1, 2), progress=False)
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
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    expected = spec.reference(*copy.deepcopy(list(args)))
    fn = bf16_device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    result = fn(grid=grid, block=block, args=args)
    assert not mismatches(args, expected, fn.arg_names)
    assert result.tokens > result.passes > 0


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
