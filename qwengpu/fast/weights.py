"""The tensors of a checkpoint, read one at a time from its safetensors files (memory-mapped).

`CheckpointTensors(path, dtype)` answers `get(name)` (a whole tensor), `rows(name, start, end)`
and `rows_at(name, index)` (only those rows are copied out of the file), each cast to `dtype`
first as the stock `from_pretrained(dtype=...)` load does, so what the fast path computes from
it is what it would compute from the stock model. A shard is opened for one read and closed
again: the pages of the mapping that a read touched are let go with it, so the process never
holds more of the checkpoint than the tensor in hand.

`ModuleTensors(model)` gives the same answers from a loaded stock model (names as in
`model.state_dict()`), so FastModel extracts its compact matrices the same way from either.
"""
from __future__ import annotations

from pathlib import Path

import torch

from qwengpu.dtypes import torch_dtype
from qwengpu.model import CheckpointError
from qwengpu.model.checkpoint import config_json, safetensors_header, shard_files


def shard_map(path: Path) -> dict[str, Path]:
    """tensor name -> the safetensors file that holds it (from the files' headers, which
    checkpoint.safetensors_header checks against the files' sizes)."""
    return {name: file for file in shard_files(path) for name in safetensors_header(file)}


def fingerprint(path: str | Path) -> str:
    """A key for derived data of the checkpoint at `path`: config.json's bytes and each weight
    file's name, size and modification time (a rewritten checkpoint gets another key)."""
    import hashlib
    path = Path(path)
    h = hashlib.sha256((path / "config.json").read_bytes())
    for file in sorted(set(shard_map(path).values())):
        st = file.stat()
        h.update(f"{file.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


class CheckpointTensors:
    """Named tensors of the checkpoint folder `path`, cast to `dtype` ("float32", "bfloat16")."""

    def __init__(self, path: str | Path, dtype: str = "float32"):
        self.path, self.dtype = Path(path), torch_dtype(dtype)
        self.config = config_json(self.path, "not a model checkpoint")
        self.files = shard_map(self.path)

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def _open(self, name: str):
        from safetensors import safe_open
        if name not in self.files:
            raise CheckpointError(f"{self.path} has no tensor {name!r} (not a Qwen3.5 text checkpoint "
                                        "with the stock names?)")
        try:
            return safe_open(self.files[name], "pt")
        except Exception as e:                    # safetensors raises its own error types
            raise CheckpointError(f"{self.files[name]}: {e}") from None

    def _cast(self, t: torch.Tensor) -> torch.Tensor:
        # a copy in any case: nothing may keep pointing into the mapping once the shard is closed
        return t.to(self.dtype, copy=True)

    def shape(self, name: str) -> tuple[int, ...]:
        with self._open(name) as f:
            return tuple(f.get_slice(name).get_shape())

    def get(self, name: str, optional: bool = False) -> torch.Tensor | None:
        if optional and name not in self.files:
            return None
        with self._open(name) as f:
            return self._cast(f.get_tensor(name))

    def rows(self, name: str, start: int, end: int) -> torch.Tensor:
        """Rows [start, end) of a matrix (only those are read)."""
        with self._open(name) as f:
            return self._cast(f.get_slice(name)[start:end])

    def rows_at(self, name: str, index) -> torch.Tensor:
        """The rows `index` (ascending ints) of a matrix, read as contiguous runs."""
        index = [int(i) for i in index]
        if not index:
            return self._cast(torch.empty(0, self.shape(name)[1]))
        runs, start = [], 0
        for k in range(1, len(index) + 1):
            if k == len(index) or index[k] != index[k - 1] + 1:
                runs.append((index[start], index[k - 1] + 1))
                start = k
        with self._open(name) as f:
            sl = f.get_slice(name)
            return torch.cat([self._cast(sl[a:b]) for a, b in runs])


class ModuleTensors:
    """The same questions answered from a loaded stock model (its own dtype)."""

    def __init__(self, model):
        self.model = model
        self.config = model.config

    def _find(self, name: str):
        obj = self.model
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj.detach()

    def __contains__(self, name: str) -> bool:
        return self._find(name) is not None

    def get(self, name: str, optional: bool = False) -> torch.Tensor | None:
        t = self._find(name)
        if t is None and not optional:
            raise CheckpointError(f"the model has no parameter {name!r}")
        return t

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.get(name).shape)

    def rows(self, name: str, start: int, end: int) -> torch.Tensor:
        return self.get(name)[start:end]

    def rows_at(self, name: str, index) -> torch.Tensor:
        return self.get(name)[torch.as_tensor(list(index), dtype=torch.long)]
