"""Reading a base checkpoint: validation before any work, and tensor streaming.

Two layouts are accepted:
  multimodal  config.json model_type "qwen3_5" with the text config under text_config;
              text weights under model.language_model.*, plus model.visual.* and mtp.*
              (ignored: the merged model is text only)
  text-only   model_type "qwen3_5_text"; weights under model.*
Weights are model.safetensors or shards listed by model.safetensors.index.json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from safetensors import safe_open

from qwengpu.model import CheckpointError
from qwengpu.model.hosts import model_shapes

TEXT_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "layer_types", "vocab_size",
             "num_attention_heads", "num_key_value_heads", "head_dim", "linear_num_key_heads",
             "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
             "linear_conv_kernel_dim", "rms_norm_eps")
IGNORED_PREFIXES = ("model.visual.", "mtp.", "visual.")


@dataclass
class BaseCheckpoint:
    path: Path
    text_config: dict          # the Qwen3.5 text config (tie_word_embeddings filled in)
    layout: str                # "multimodal" | "text-only"
    sources: dict[str, tuple[Path, str]]   # text-model name (model.*) -> (shard file, name on disk)
    dtypes: dict[str, str]     # text-model name -> safetensors dtype string

    @property
    def hidden(self) -> int:
        return self.text_config["hidden_size"]


def read_config(path: Path) -> tuple[dict, str]:
    """(text config, layout); raises CheckpointError unless it is a Qwen3.5 config."""
    file = path / "config.json"
    if not file.is_file():
        raise CheckpointError(f"{path}: no config.json (not a Hugging Face checkpoint directory)")
    try:
        cfg = json.loads(file.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{file}: not valid JSON ({e})") from None
    kind = cfg.get("model_type")
    if kind == "qwen3_5":
        if "text_config" not in cfg:
            raise CheckpointError(f"{file}: model_type qwen3_5 without a text_config")
        text, layout = dict(cfg["text_config"]), "multimodal"
        text.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", True))
    elif kind == "qwen3_5_text":
        text, layout = dict(cfg), "text-only"
    else:
        raise CheckpointError(f"{file}: model_type {kind!r} is not a Qwen3.5 model "
                              "(expected 'qwen3_5' or 'qwen3_5_text')")
    text.setdefault("tie_word_embeddings", True)
    missing = [k for k in TEXT_KEYS if k not in text]
    if missing:
        raise CheckpointError(f"{file}: Qwen3.5 text config lacks {', '.join(missing)}")
    if len(text["layer_types"]) != text["num_hidden_layers"]:
        raise CheckpointError(f"{file}: {len(text['layer_types'])} layer_types for "
                              f"num_hidden_layers={text['num_hidden_layers']}")
    return text, layout


def shard_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [path / n for n in names]
        lost = [f.name for f in files if not f.is_file()]
        if lost:
            raise CheckpointError(f"{path}: weight shards listed in {index.name} are missing: {', '.join(lost)}")
        return files
    single = path / "model.safetensors"
    if single.is_file():
        return [single]
    raise CheckpointError(f"{path}: no weights (neither model.safetensors nor model.safetensors.index.json)")


def text_name(name: str, layout: str) -> str | None:
    """The Qwen3_5ForCausalLM name of a tensor on disk, or None for vision / MTP tensors."""
    if name.startswith(IGNORED_PREFIXES):
        return None
    if layout == "multimodal" and name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def open_base(path: str | Path) -> BaseCheckpoint:
    """Validate a base checkpoint (config, files, every text tensor's name and shape) without
    loading any tensor data."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"{path}: base checkpoint is not a directory")
    text, layout = read_config(path)
    sources, dtypes, shapes = {}, {}, {}
    for file in shard_files(path):
        try:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():
                    tn = text_name(name, layout)
                    if tn is None:
                        continue
                    piece = f.get_slice(name)
                    sources[tn], dtypes[tn], shapes[tn] = (file, name), piece.get_dtype(), tuple(piece.get_shape())
        except CheckpointError:
            raise
        except Exception as e:       # a truncated or foreign file
            raise CheckpointError(f"{file}: unreadable safetensors file ({e})") from None
    if "lm_head.weight" in shapes and text["tie_word_embeddings"]:
        del sources["lm_head.weight"], dtypes["lm_head.weight"], shapes["lm_head.weight"]
    _check_shapes(path, text, shapes)
    return BaseCheckpoint(path, text, layout, sources, dtypes)


def _check_shapes(path: Path, text: dict, shapes: dict[str, tuple]) -> None:
    want = model_shapes(text)
    missing = sorted(set(want) - set(shapes))
    if missing:
        raise CheckpointError(f"{path}: {len(missing)} text-model tensors missing, e.g. {missing[:3]}")
    extra = sorted(set(shapes) - set(want))
    if extra:
        raise CheckpointError(f"{path}: unexpected tensors for a Qwen3.5 text model, e.g. {extra[:3]}")
    for name, shape in want.items():
        if shapes[name] != shape:
            raise CheckpointError(f"{path}: tensor {name} has shape {list(shapes[name])}; "
                                  f"the config implies {list(shape)}")


def read_tensor(base: BaseCheckpoint, name: str):
    """One tensor (torch, its stored dtype), read from its shard on demand."""
    file, disk_name = base.sources[name]
    with safe_open(str(file), framework="pt") as f:
        return f.get_tensor(disk_name)


def read_rows(base: BaseCheckpoint, name: str, start: int, stop: int):
    """Rows [start, stop) of a tensor, read without loading the rest."""
    file, disk_name = base.sources[name]
    with safe_open(str(file), framework="pt") as f:
        return f.get_slice(disk_name)[start:stop]
