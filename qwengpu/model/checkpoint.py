"""Reading a base checkpoint: validation before any work, and tensor streaming.

Two layouts are accepted:
  multimodal  config.json model_type "qwen3_5" with the text config under text_config;
              text weights under model.language_model.*, plus model.visual.* (ignored: the
              merged model is text only) and the MTP head mtp.* (carried through)
  text-only   model_type "qwen3_5_text"; weights under model.*
Weights are model.safetensors or shards listed by model.safetensors.index.json.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from safetensors import safe_open

from qwengpu.model import CheckpointError
from qwengpu.model.hosts import model_shapes, mtp_layers, mtp_shapes

TEXT_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "layer_types", "vocab_size",
             "num_attention_heads", "num_key_value_heads", "head_dim", "linear_num_key_heads",
             "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
             "linear_conv_kernel_dim", "rms_norm_eps")
IGNORED_PREFIXES = ("model.visual.", "visual.")


@dataclass
class BaseCheckpoint:
    path: Path
    text_config: dict          # the Qwen3.5 text config (tie_word_embeddings filled in)
    layout: str                # "multimodal" | "text-only"
    sources: dict[str, tuple[Path, str]]   # text-model name (model.*, mtp.*) -> (shard file, name on disk)
    dtypes: dict[str, str]     # text-model name -> safetensors dtype string

    @property
    def hidden(self) -> int:
        return self.text_config["hidden_size"]


def config_json(path: Path, missing: str = "not a Hugging Face checkpoint directory") -> dict:
    """config.json of the checkpoint folder `path` as a dict; CheckpointError when it is absent
    (`missing` says what the folder should be), unreadable, not JSON or not a JSON object."""
    file = path / "config.json"
    if not file.is_file():
        raise CheckpointError(f"{path}: no config.json ({missing})")
    try:
        cfg = json.loads(file.read_text())
    except OSError as e:
        raise CheckpointError(f"{file}: cannot read it ({e.strerror or e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{file}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{file}: not a model config (a JSON {type(cfg).__name__}, not an object)")
    return cfg


def read_config(path: Path) -> tuple[dict, str]:
    """(text config, layout); raises CheckpointError unless it is a Qwen3.5 config."""
    file = path / "config.json"
    cfg = config_json(path)
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
    if not isinstance(text["layer_types"], list) or not isinstance(text["num_hidden_layers"], int):
        raise CheckpointError(f"{file}: layer_types must be a list and num_hidden_layers an integer")
    if len(text["layer_types"]) != text["num_hidden_layers"]:
        raise CheckpointError(f"{file}: {len(text['layer_types'])} layer_types for "
                              f"num_hidden_layers={text['num_hidden_layers']}")
    return text, layout


def shard_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index (JSON with a weight_map): "
                                  f"{type(e).__name__}: {e}") from None
        files = [path / n for n in names]
        lost = [f.name for f in files if not f.is_file()]
        if lost:
            raise CheckpointError(f"{path}: weight shards listed in {index.name} are missing: {', '.join(lost)}")
        return files
    single = path / "model.safetensors"
    if single.is_file():
        return [single]
    raise CheckpointError(f"{path}: no weights (neither model.safetensors nor model.safetensors.index.json)")


def safetensors_header(file: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape) from a safetensors file's header, checking that the file holds
    every byte the header promises (a truncated download or copy fails here, not mid-load)."""
    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError(f"{size} bytes, shorter than a safetensors header")
            n = struct.unpack("<Q", head)[0]
            if n > min(size - 8, 100_000_000):
                raise ValueError(f"header length {n} does not fit the file's {size} bytes")
            header = json.loads(f.read(n))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        tensors, end = {}, 0
        for name, info in header.items():
            if name == "__metadata__":
                continue
            tensors[name] = (info["dtype"], tuple(info["shape"]))
            end = max(end, int(info["data_offsets"][1]))
    except OSError as e:
        raise CheckpointError(f"{file}: cannot read it ({e.strerror or e})") from None
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{file}: unreadable safetensors file, not in the safetensors format "
                              f"({type(e).__name__}: {e})") from None
    if size < 8 + n + end:
        raise CheckpointError(f"{file}: unreadable safetensors file: truncated ({size} bytes; its header "
                              f"needs {8 + n + end})")
    return tensors


def text_name(name: str, layout: str) -> str | None:
    """The Qwen3_5ForCausalLM name of a tensor on disk (mtp.* as it is), or None for vision tensors."""
    if name.startswith(IGNORED_PREFIXES):
        return None
    if layout == "multimodal" and name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def open_base(path: str | Path) -> BaseCheckpoint:
    """Validate a base checkpoint (config, files, every text tensor's name and shape) without
    loading any tensor data."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: base checkpoint is not a directory (no such path)")
    if not path.is_dir():
        raise CheckpointError(f"{path}: base checkpoint is not a directory")
    text, layout = read_config(path)
    sources, dtypes, shapes = {}, {}, {}
    for file in shard_files(path):
        safetensors_header(file)
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
    """The text model's tensors, and the MTP head's when any mtp.* tensor is there."""
    want = model_shapes(text) | (mtp_shapes(text, layers) if (layers := mtp_layers(shapes)) else {})
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


MERGED_ARCHITECTURE = "Qwen3_5ForCausalLM"


def check_merged_checkpoint(path: str | Path) -> dict:
    """Validate a merged qwengpu checkpoint before anything loads it and return its config.json
    (the whole dict; its "qwengpu" block included). Raises CheckpointError naming the problem:
    a missing path or not a directory, no or unreadable config.json, a model that is not a
    Qwen3.5 text model (model_type qwen3_5_text, architectures [Qwen3_5ForCausalLM]), a plain
    Qwen3.5 checkpoint without the qwengpu block (a base, not built), missing weight files, a
    truncated or foreign safetensors file, tensors missing or of the wrong shape. Reads only
    the files' headers (milliseconds)."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such model directory")
    if not path.is_dir():
        raise CheckpointError(f"{path}: not a directory (a merged checkpoint is a directory with "
                              "config.json and model*.safetensors)")
    file = path / "config.json"
    cfg = config_json(path, "not a model checkpoint: a merged checkpoint is a directory made by qgpu build")
    kind, archs = cfg.get("model_type"), cfg.get("architectures")
    if kind in ("qwen3_5", "qwen3_5_text") and not cfg.get("qwengpu"):
        raise CheckpointError(f"{path}: a Qwen3.5 checkpoint but not a merged qwengpu one (config.json "
                              f"has no qwengpu block); build one from it with: qgpu build --base {path} --out DIR")
    if kind != "qwen3_5_text" or archs != [MERGED_ARCHITECTURE]:
        what = f"model_type {kind!r}" + (f", architectures {archs}" if archs else "")
        raise CheckpointError(f"{path}: not a merged qwengpu checkpoint: {what} (a merged checkpoint is a "
                              f"Qwen3.5 text model: model_type 'qwen3_5_text', architectures "
                              f"['{MERGED_ARCHITECTURE}'], with a qwengpu block)")
    block = cfg.get("qwengpu")
    if not isinstance(block, dict):
        raise CheckpointError(f"{path}: not a merged qwengpu checkpoint (config.json has no qwengpu block)")
    lacks = [k for k in ("gpu_token_ids", "base_hidden_size", "base_rms_norm_eps", "base_vocab_size",
                         "circuit_layers") if k not in block]
    if lacks:
        raise CheckpointError(f"{file}: the qwengpu block lacks {', '.join(lacks)} (a checkpoint from an "
                              "older qwengpu? rebuild it with qgpu build)")
    text, _ = read_config(path)
    shapes = {}
    for shard in shard_files(path):
        for name, (_, shape) in safetensors_header(shard).items():
            shapes[name] = shape
    if "lm_head.weight" in shapes and text["tie_word_embeddings"]:
        del shapes["lm_head.weight"]
    _check_shapes(path, text, shapes)
    return cfg
