"""User mistakes with checkpoints raise a QwenGpuError (CheckpointError) naming the problem, never
a raw OSError / FileNotFoundError / IndexError from transformers or safetensors; the CLI prints
it as one line and exits 1. The checkpoints are small fakes built in tmp dirs."""
import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from typer.testing import CliRunner

from qwengpu.api import Device, Function, Module
from qwengpu.cli import app
from qwengpu.errors import QwenGpuError
from qwengpu.isa import MachineBlock, Program, Term, Terminator
from qwengpu.model import CheckpointError
from qwengpu.model.checkpoint import check_merged_checkpoint, open_base
from qwengpu.model.hosts import model_shapes
from qwengpu.model.kl import eval_kl

runner = CliRunner()

TINY = {"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
        "layer_types": ["linear_attention", "full_attention"], "vocab_size": 32,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "linear_num_key_heads": 2,
        "linear_num_value_heads": 2, "linear_key_head_dim": 4, "linear_value_head_dim": 4,
        "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
QWENGPU = {"gpu_token_ids": [24, 32], "base_hidden_size": 8, "base_rms_norm_eps": 1e-6,
           "base_vocab_size": 24, "circuit_layers": 1}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
         "num_hidden_layers": 1, "vocab_size": 32}


def write(d: Path, config: dict | None = None, tensors: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (d / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        save_file(tensors, str(d / "model.safetensors"))
    return d


def merged_config(**extra) -> dict:
    return {"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", **TINY,
            "qwengpu": QWENGPU, **extra}


def tiny_tensors(drop: str | None = None) -> dict:
    return {n: torch.zeros(s) for n, s in model_shapes(TINY).items() if n != drop}


# --- check_merged_checkpoint, case by case ------------------------------------
def test_a_complete_tiny_merged_checkpoint_passes(tmp_path):
    d = write(tmp_path / "m", merged_config(), tiny_tensors())
    assert check_merged_checkpoint(d)["qwengpu"] == QWENGPU


def test_the_standin_merged_checkpoint_passes():
    from qwengpu.model.merge import STANDIN_MERGED
    if not (STANDIN_MERGED / "config.json").is_file():
        pytest.skip("the stand-in merged model is not built")
    assert check_merged_checkpoint(STANDIN_MERGED)["qwengpu"]["gpu_token_ids"]


def _case(tmp_path, name):
    d = tmp_path / name
    if name == "missing":
        return d
    if name == "a file":
        d.write_text("x")
        return d
    if name == "empty":
        return write(d)
    if name == "llama config only":
        return write(d, LLAMA)
    if name == "qwen3 (not 3.5)":
        return write(d, {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **TINY})
    if name == "bad json":
        d.mkdir()
        (d / "config.json").write_text("{model_type: qwen")
        return d
    if name == "json list":
        return write(d, [1, 2])
    if name == "a base, not merged":
        return write(d, {"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", **TINY},
                     tiny_tensors())
    if name == "no weights":
        return write(d, merged_config())
    if name == "empty safetensors":
        d = write(d, merged_config())
        (d / "model.safetensors").write_bytes(b"")
        return d
    if name == "garbage safetensors":
        d = write(d, merged_config())
        (d / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!" + b"\0" * 64)
        return d
    if name == "truncated safetensors":
        d = write(d, merged_config(), tiny_tensors())
        f = d / "model.safetensors"
        f.write_bytes(f.read_bytes()[:-100])
        return d
    if name == "missing tensor":
        return write(d, merged_config(), tiny_tensors(drop="model.norm.weight"))
    if name == "wrong shape":
        t = tiny_tensors()
        t["model.norm.weight"] = torch.zeros(9)
        return write(d, merged_config(), t)
    if name == "index lists a lost shard":
        d = write(d, merged_config())
        (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "model-1.safetensors"}}))
        return d
    if name == "broken index":
        d = write(d, merged_config())
        (d / "model.safetensors.index.json").write_text("[]")
        return d
    raise AssertionError(name)


# (case, a pattern the message must match: it names the problem)
MERGED_CASES = [
    ("missing", r"missing: no such model directory"),
    ("a file", r"a file: not a directory"),
    ("empty", r"empty: no config\.json \(not a model checkpoint"),
    ("llama config only", r"not a merged qwengpu checkpoint: model_type 'llama', architectures \['LlamaForCausalLM'\]"),
    ("qwen3 (not 3.5)", r"not a merged qwengpu checkpoint: model_type 'qwen3'"),
    ("bad json", r"config\.json: not valid JSON"),
    ("json list", r"config\.json: not a model config \(a JSON list"),
    ("a base, not merged", r"a Qwen3\.5 checkpoint but not a merged qwengpu one .*qgpu build --base"),
    ("no weights", r"no weights \(neither model\.safetensors nor model\.safetensors\.index\.json\)"),
    ("empty safetensors", r"model\.safetensors: unreadable safetensors file, not in the safetensors format \(ValueError: 0 bytes"),
    ("garbage safetensors", r"model\.safetensors: unreadable safetensors file, not in the safetensors format"),
    ("truncated safetensors", r"model\.safetensors: unreadable safetensors file: truncated \(\d+ bytes; its header needs \d+\)"),
    ("missing tensor", r"1 text-model tensors missing, e\.g\. \['model\.norm\.weight'\]"),
    ("wrong shape", r"tensor model\.norm\.weight has shape \[9\]; the config implies \[8\]"),
    ("index lists a lost shard", r"weight shards listed in model\.safetensors\.index\.json are missing: model-1"),
    ("broken index", r"model\.safetensors\.index\.json: not a safetensors index"),
]


@pytest.mark.parametrize("case, pattern", MERGED_CASES, ids=[c for c, _ in MERGED_CASES])
def test_bad_merged_checkpoint(tmp_path, case, pattern):
    d = _case(tmp_path, case)
    with pytest.raises(CheckpointError, match=pattern):
        check_merged_checkpoint(d)


# --- the same errors where users meet them ------------------------------------
def exit_function(device: Device) -> Function:
    program = Program("k", [MachineBlock([], Terminator(Term.EXIT))], [])
    return Function(Module(device, "", "", "<hand-built>"), "k", program)


@pytest.mark.parametrize("case", ["missing", "empty", "llama config only", "a base, not merged",
                                  "truncated safetensors", "missing tensor"])
def test_model_device_at_a_bad_checkpoint(tmp_path, case):
    d = _case(tmp_path, case)
    pattern = dict(MERGED_CASES)[case]
    for fast in (True, False):
        with pytest.raises(CheckpointError, match=pattern):
            exit_function(Device("model", model=d, fast=fast))()


NO_CONFIG = ("missing", "a file", "empty")     # the CLI may say so itself before calling the API


def _one_red_line(result, pattern):
    assert result.exit_code == 1, result.output
    out = result.output.strip()
    assert out.startswith("error:") and "Traceback" not in out, out
    assert re.search(pattern, " ".join(out.split())), out


@pytest.mark.parametrize("case", ["empty", "llama config only", "truncated safetensors"])
def test_qgpu_run_at_a_bad_model(tmp_path, kernels_dir, case):
    d = _case(tmp_path, case)
    result = runner.invoke(app, ["run", str(kernels_dir / "dot.cu"), "--engine", "model", "--model", str(d),
                                 "--arg", "i32:[1,2,3]", "--arg", "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3"])
    _one_red_line(result, dict(MERGED_CASES)[case])


@pytest.mark.parametrize("case", ["empty", "missing", "llama config only", "a base, not merged"])
def test_qgpu_eval_kl_at_a_bad_merged(tmp_path, case):
    d = _case(tmp_path, case)
    pattern = dict(MERGED_CASES)[case]
    with pytest.raises(CheckpointError, match=pattern):
        eval_kl("standin", d)                         # before any model loads
    result = runner.invoke(app, ["eval", "kl", "--base", "standin", "--merged", str(d)])
    _one_red_line(result, pattern + (r"|no config\.json" if case in NO_CONFIG else ""))


BASE_CASES = [
    ("missing", r"missing: base checkpoint is not a directory \(no such path\)"),
    ("a file", r"a file: base checkpoint is not a directory"),
    ("empty", r"empty: no config\.json"),
    ("llama config only", r"model_type 'llama' is not a Qwen3\.5 model"),
    ("json list", r"not a model config"),
    ("empty safetensors", None),
    ("truncated safetensors", r"unreadable safetensors file: truncated"),
    ("missing tensor", r"1 text-model tensors missing"),
    ("broken index", r"not a safetensors index"),
]


def _as_base(d: Path) -> Path:
    """A merged-config fake turned into a base: no qwengpu block."""
    cfg_file = d / "config.json"
    if cfg_file.is_file():
        cfg = json.loads(cfg_file.read_text())
        if isinstance(cfg, dict):
            cfg.pop("qwengpu", None)
            cfg_file.write_text(json.dumps(cfg))
    return d


@pytest.mark.parametrize("case, pattern", BASE_CASES, ids=[c for c, _ in BASE_CASES])
def test_bad_base_checkpoint(tmp_path, case, pattern):
    d = _as_base(_case(tmp_path, case))
    pattern = pattern or dict(MERGED_CASES)[case]
    with pytest.raises(CheckpointError, match=pattern):
        open_base(d)
    result = runner.invoke(app, ["build", "--base", str(d), "--out", str(tmp_path / "out")])
    _one_red_line(result, pattern + (r"|no config\.json" if case in NO_CONFIG else ""))
    assert not (tmp_path / "out").exists()


def test_every_checkpoint_error_is_a_qwengpu_error():
    assert issubclass(CheckpointError, QwenGpuError)


def test_build_into_an_unwritable_place(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CheckpointError, match=r"cannot create the output directory"):
        from qwengpu.model.merge import build
        build("standin", blocker / "out", circuit="demo", progress=False)


def test_eval_kl_at_a_merged_checkpoint_of_another_base(tmp_path):
    d = write(tmp_path / "m", merged_config(), tiny_tensors())       # built from a 24-token base
    with pytest.raises(CheckpointError, match=r"built from a base with 24 text tokens; .* has \d+ \(not its base\)"):
        eval_kl("standin", d)


@pytest.mark.parametrize("case", ["empty", "llama config only"])
def test_eval_kl_at_a_bad_base(tmp_path, case):
    with pytest.raises(CheckpointError, match=dict(BASE_CASES)[case]):
        eval_kl(_case(tmp_path, case), tmp_path / "unused")
