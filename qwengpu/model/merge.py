"""build(): the merged checkpoint, a stock text-only Qwen3_5ForCausalLM.

    merged residual = n base dims, then C circuit dims
    layers          = circuit layers (linear_attention) + every base layer, in order
    vocabulary      = base vocabulary + GPU tokens (rows zero in the base dims)

Base matrices are zero-padded. The hidden-size RMS norms now average over n + C dims, so on
text (zero circuit dims) mean(x^2) shrinks by n / (n + C). Two ways to compensate
(`rescale`):

  "residual" (default, exact): scale the text residual by a = sqrt((n + C) / n): the text
      embedding rows and every matrix that writes the residual (o_proj, out_proj, down_proj)
      times a. A decoder norm then outputs a times what it did, so every matrix that reads a
      norm's output (q/k/v, in_proj_*, gate/up) is scaled by 1/a, and the final norm's gain
      (1 + w) by 1/a**2 (the tied head reads the scaled embedding). rms_norm_eps and the
      decoder norms' weights are unchanged, so every norm computes exactly what it did,
      including the head-dim norms that share rms_norm_eps; in bf16 the scaling rounds only
      matrix entries (errors that average out in a dot product), not per-dim gains, and when
      a is a power of two (n + C = 4n) it rounds nothing but the final norm.
  "eps" (the issue's recipe): gain (1 + w) times sqrt(n / (n + C)) and rms_norm_eps times
      n / (n + C). Exact for the decoder norms, but the same eps also feeds the GDN gated norm
      and the attention q/k norms, which do not grow: where their inputs are small
      (mean square near eps) the base's function changes. docs/build.md has the numbers.

The base layers' norms get gain 0 on circuit dims (their matrices read no circuit dim
anyway); the final norm's circuit gains come from the circuit (default 1).

Tensors stream one at a time from the base shards into output shards of bounded size; large
tensors are converted in row blocks, so no base tensor is held in float64 or fp32 whole.
"""
from __future__ import annotations

import fcntl
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
import struct
import sys
from typing import Callable, Iterator

import numpy as np
import torch

from qwengpu.circuit.weights import CircuitWeights
from qwengpu.dtypes import torch_dtype
from qwengpu.model import CheckpointError
from qwengpu.model.checkpoint import BaseCheckpoint, open_base, read_rows, read_tensor
from qwengpu.model.hosts import FP32_SUFFIXES, layer_shapes, mtp_layers
from qwengpu.model.tokenizer import write_tokenizer

READS_HIDDEN = ("in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight", "in_proj_a.weight",
                "q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight", "up_proj.weight")
WRITES_HIDDEN = ("out_proj.weight", "o_proj.weight", "down_proj.weight")
LAYER_NORMS = ("input_layernorm.weight", "post_attention_layernorm.weight")
MTP_INPUT_NORMS = ("mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight")
MAX_SHARD_BYTES = 1 << 30
RESCALES = ("residual", "eps")
ROW_BLOCK = 8192


# --------------------------------------------------------------------------- plan
@dataclass
class Item:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    blocks: Callable[[], Iterator[torch.Tensor]]    # row blocks in `dtype`; together the tensor

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * torch.empty(0, dtype=self.dtype).element_size()


def out_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if name.endswith(FP32_SUFFIXES) else dtype


def merged_config(base: BaseCheckpoint, circuit: CircuitWeights, dtype: str, rescale: str = "residual",
                  exact_bf16: bool = False) -> dict:
    text, n, C = base.text_config, base.hidden, circuit.width
    V, L = text["vocab_size"], len(circuit.layers)
    cfg = {k: v for k, v in text.items() if not k.startswith("_")}
    cfg.update(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text", hidden_size=n + C,
               vocab_size=V + len(circuit.token_names), num_hidden_layers=L + text["num_hidden_layers"],
               layer_types=["linear_attention"] * L + list(text["layer_types"]),
               rms_norm_eps=text["rms_norm_eps"] * (n / (n + C) if rescale == "eps" else 1.0), dtype=dtype)
    if exact_bf16:
        cfg["tie_word_embeddings"] = False        # the head: the embedding / a, beside the embedding * a
    if layers := mtp_layers(base.sources):
        cfg.setdefault("mtp_num_hidden_layers", layers)      # vLLM's MTP drafter reads it (default 1)
    cfg["qwengpu"] = {"base_hidden_size": n, "circuit_width": C, "circuit_layers": L, "base_vocab_size": V,
                      "gpu_token_ids": [V, V + len(circuit.token_names)], "base_rms_norm_eps": text["rms_norm_eps"],
                      "rescale": rescale, "exact_bf16": exact_bf16,
                      "circuit_digest": circuit.digest(), **circuit.info}
    return cfg


def check_circuit_fits(base: BaseCheckpoint, circuit: CircuitWeights, merged: dict) -> None:
    """Every circuit layer must have exactly the merged model's linear-attention shapes
    (fewer MLP neurons are allowed: zero-padded)."""
    n, C, inter = base.hidden, circuit.width, base.text_config["intermediate_size"]
    want = layer_shapes(merged, "linear_attention")
    if circuit.token_embeddings.shape != (len(circuit.token_names), C):
        raise CheckpointError(f"circuit token embeddings have shape {list(circuit.token_embeddings.shape)}; "
                              f"expected [{len(circuit.token_names)}, {C}]")
    for i, layer in enumerate(circuit.layers):
        if set(layer) != set(want):
            raise CheckpointError(f"circuit layer {i}: parameters {sorted(set(layer) ^ set(want))[:3]} "
                                  "do not match a Qwen3.5 linear-attention layer")
        for name, shape in want.items():
            got = tuple(layer[name].shape)
            if name.startswith("mlp."):
                neurons = got[1] if name.endswith("down_proj.weight") else got[0]
                if neurons > inter:
                    raise CheckpointError(f"circuit layer {i} needs {neurons} MLP neurons; the base has {inter}")
                got = (n + C, inter) if name.endswith("down_proj.weight") else (inter, n + C)
            if got != shape:
                raise CheckpointError(f"the circuit cannot fit this base: layer {i} {name} has shape "
                                      f"{list(layer[name].shape)}, the base's layer shape is {list(shape)}")


def _padded(src: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """`src` in the top-left corner of a zero tensor (a circuit MLP with fewer neurons)."""
    out = torch.zeros(shape, dtype=dtype)
    out[: src.shape[0], : src.shape[1]] = src.to(dtype)
    return out


def _norm(src: torch.Tensor, factor: float, circuit_gain: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """(1 + w') = (1 + w) * factor on base dims, the given gains on circuit dims."""
    w = src.to(torch.float64)
    gain = torch.cat([(1.0 + w) * factor, torch.from_numpy(np.asarray(circuit_gain, np.float64))])
    return (gain - 1.0).to(dtype)


def scales(n: int, C: int, rescale: str, tied: bool, exact_bf16: bool = False) -> dict[str, float]:
    """Factors for the text embedding, residual writers, norm readers, decoder norms, the final
    norm and the output head. `exact_bf16` (n + C = 4**k n, a = 2**k, an untied head): the head
    takes the 1/a the final norm's gain would otherwise take, so no gain is rescaled."""
    if rescale == "eps":
        s = np.sqrt(n / (n + C))
        return {"embed": 1.0, "write": 1.0, "read": 1.0, "norm": s, "final": s, "head": 1.0}
    a = np.sqrt((n + C) / n)
    if exact_bf16:
        return {"embed": a, "write": a, "read": 1 / a, "norm": 1.0, "final": 1.0, "head": 1 / a}
    return {"embed": a, "write": a, "read": 1 / a, "norm": 1.0, "final": 1 / a ** 2 if tied else 1 / a, "head": 1.0}


def _circuit_tensor(value: np.ndarray, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    src = torch.from_numpy(np.ascontiguousarray(value))
    if name.startswith("mlp."):
        return _padded(src, shape, dtype)
    return src.to(dtype)


def plan(base: BaseCheckpoint, circuit: CircuitWeights, merged: dict, dtype: torch.dtype,
         rescale: str = "residual", exact_bf16: bool = False) -> list[Item]:
    n, C, Lc = base.hidden, circuit.width, len(circuit.layers)
    N, V, Vg = n + C, base.text_config["vocab_size"], len(circuit.token_names)
    items = []
    shapes = layer_shapes(merged, "linear_attention")
    for i, layer in enumerate(circuit.layers):
        for name in sorted(layer):
            dt = out_dtype(name, dtype)
            items.append(Item(f"model.layers.{i}.{name}", shapes[name], dt, _one(
                lambda lay=layer, nm=name, s=shapes[name], d=dt: _circuit_tensor(lay[nm], nm, s, d))))
    gpu_rows = circuit.token_embeddings
    final_gain = circuit.final_norm if circuit.final_norm is not None else np.ones(C)
    tied = "lm_head.weight" not in base.sources
    k = scales(n, C, rescale, tied, exact_bf16)
    if exact_bf16 and tied:               # the head, untied: the base's embedding rows
        items.append(Item("lm_head.weight", (V + Vg, N), dtype,
                          _rows(base, "model.embed_tokens.weight", N, dtype, k["head"], gpu_rows, n)))

    for name in sorted(base.sources, key=_natural):
        m = re.match(r"model\.layers\.(\d+)\.(.*)", name)
        new, dt = name, out_dtype(name, dtype)
        shape = tuple(base_shape(base, name))
        if m:
            new = f"model.layers.{int(m.group(1)) + Lc}.{m.group(2)}"
        if name in ("model.embed_tokens.weight", "lm_head.weight"):
            factor = k["embed"] if name == "model.embed_tokens.weight" else k["head"]
            items.append(Item(new, (V + Vg, N), dt, _rows(base, name, N, dt, factor, gpu_rows, n)))
        elif name in ("model.norm.weight", "mtp.norm.weight"):       # the MTP head's output norm is a final norm
            gain = final_gain if name == "model.norm.weight" else np.zeros(C)
            items.append(Item(new, (N,), dt, _one(
                lambda nm=name, g=gain, d=dt: _norm(read_tensor(base, nm), k["final"], g, d))))
        elif name == "mtp.fc.weight":
            items.append(Item(new, (N, 2 * N), dt, _one(
                lambda nm=name, d=dt: _mtp_fc(read_tensor(base, nm), N, d))))
        elif name.endswith(LAYER_NORMS + MTP_INPUT_NORMS):
            items.append(Item(new, (N,), dt, _one(
                lambda nm=name, d=dt: _norm(read_tensor(base, nm), k["norm"], np.zeros(C), d))))
        elif name.endswith(READS_HIDDEN):
            items.append(Item(new, (shape[0], N), dt, _rows(base, name, N, dt, k["read"])))
        elif name.endswith(WRITES_HIDDEN):
            zeros = np.zeros((C, shape[1]), np.float32)
            items.append(Item(new, (N, shape[1]), dt, _rows(base, name, shape[1], dt, k["write"], zeros, 0)))
        else:
            items.append(Item(new, shape, dt, _one(lambda nm=name, d=dt: read_tensor(base, nm).to(d))))
    return items


def _mtp_fc(src: torch.Tensor, N: int, dtype: torch.dtype) -> torch.Tensor:
    """The MTP head's projection of [normed embedding, normed hidden state] (each N wide now) to
    the residual: the base's two halves on the base dims of each, unscaled. It reads norm outputs
    and writes a residual, and every recipe's reader and writer factors multiply to 1."""
    n = src.shape[0]
    out = torch.zeros((N, 2 * N), dtype=dtype)
    out[:n, :n], out[:n, N:N + n] = src[:, :n].to(dtype), src[:, n:].to(dtype)
    return out


def _one(make: Callable[[], torch.Tensor]) -> Callable[[], Iterator[torch.Tensor]]:
    return lambda: iter([make()])


def _rows(base: BaseCheckpoint, name: str, width: int, dtype: torch.dtype, factor: float = 1.0,
          tail: np.ndarray | None = None, tail_col: int = 0) -> Callable[[], Iterator[torch.Tensor]]:
    """Row blocks of the base matrix times `factor`, zero-padded to `width` columns, then the
    rows of `tail` placed from column `tail_col` (GPU-token rows, or zero rows), in blocks too
    (a 4B host's GPU-token rows are gigabytes)."""
    def blocks():
        rows = base_shape(base, name)[0]
        for r in range(0, rows, ROW_BLOCK):
            src = read_rows(base, name, r, min(r + ROW_BLOCK, rows))
            if factor != 1.0:
                src = src.to(torch.float64) * factor
            out = torch.zeros((src.shape[0], width), dtype=dtype)
            out[:, : src.shape[1]] = src.to(dtype)
            yield out
        for r in range(0, 0 if tail is None else len(tail), ROW_BLOCK):
            block = torch.from_numpy(np.ascontiguousarray(tail[r:r + ROW_BLOCK]))
            out = torch.zeros((block.shape[0], width), dtype=dtype)
            out[:, tail_col: tail_col + block.shape[1]] = block.to(dtype)
            yield out
    return blocks


def base_shape(base: BaseCheckpoint, name: str) -> tuple[int, ...]:
    from safetensors import safe_open
    file, disk = base.sources[name]
    with safe_open(str(file), framework="pt") as f:
        return tuple(f.get_slice(disk).get_shape())


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def shards(items: list[Item], limit: int) -> list[list[Item]]:
    groups, size = [[]], 0
    for item in items:
        if groups[-1] and size + item.nbytes > limit:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += item.nbytes
    return groups


# --------------------------------------------------------------------------- build
def power_of_four_width(n: int, width: int) -> int:
    """The smallest C >= width with n + C = 4**k n."""
    total = 4 * n
    while total < n + width:
        total *= 4
    return total - n


def resolve_base(base: str | Path) -> Path:
    if str(base) == "standin":
        from qwengpu.model.standin import ensure_standin
        return ensure_standin()
    return Path(base)


def build(base: str | Path, out: str | Path, dtype: str = "bfloat16", force: bool = False,
          circuit: CircuitWeights | str = "machine", progress: bool = True,
          max_shard_bytes: int = MAX_SHARD_BYTES, rescale: str = "residual", exact_bf16: bool = False) -> Path:
    """Write the merged checkpoint for `base` (a directory or "standin") to `out`. `circuit` is
    a CircuitWeights or the name of one compiled for the base: "machine" (the SIMT machine:
    the merged model runs kernels) or "demo" (qwengpu.model.circuits).

    `exact_bf16`: text is computed with exactly the base's weights in bf16 too. A named
    circuit gets the width that makes n + C = 4**k n (a = 2**k: every rescaled weight exact),
    and the head is untied (the embedding / a) so the final norm's gain is not rescaled either.
    It costs width: docs/build.md, "bf16 like for like".

    Everything is validated before any tensor is read: the output directory, the base's
    config and tensor shapes, and that the circuit fits the base's layer shapes."""
    if rescale not in RESCALES:
        raise CheckpointError(f"rescale {rescale!r}: expected one of {', '.join(RESCALES)}")
    if exact_bf16 and rescale != "residual":
        raise CheckpointError(f"exact_bf16 needs the residual rescale, not {rescale!r}")
    weight_dtype = torch_dtype(dtype, CheckpointError)      # before the circuit compiles (a minute)
    if isinstance(circuit, str) and circuit not in ("machine", "demo"):
        raise CheckpointError(f"circuit {circuit!r}: expected machine, demo or a CircuitWeights")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise CheckpointError(f"{out} exists and is not empty; pass --force to overwrite it")
    base_dir = resolve_base(base)
    if out.resolve() == base_dir.resolve():
        raise CheckpointError(f"{out}: the output directory is the base checkpoint itself")
    ckpt = open_base(base_dir)
    if isinstance(circuit, str):
        from qwengpu.model.circuits import named_circuit
        name, circuit = circuit, named_circuit(circuit, ckpt.text_config)
        if exact_bf16 and (width := power_of_four_width(ckpt.hidden, circuit.width)) != circuit.width:
            circuit = named_circuit(name, ckpt.text_config, width)
    if exact_bf16 and power_of_four_width(ckpt.hidden, circuit.width) != circuit.width:
        raise CheckpointError(f"exact_bf16: n + C = {ckpt.hidden + circuit.width} is not 4**k times "
                              f"n = {ckpt.hidden}, so the residual scale sqrt((n + C) / n) is not a power of two")
    merged = merged_config(ckpt, circuit, dtype, rescale, exact_bf16)
    check_circuit_fits(ckpt, circuit, merged)
    items = plan(ckpt, circuit, merged, weight_dtype, rescale, exact_bf16)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
    except OSError as e:
        raise CheckpointError(f"{out}: cannot create the output directory ({e.strerror or e})") from None
    _write_weights(tmp, shards(items, max_shard_bytes), progress)
    (tmp / "config.json").write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    V = ckpt.text_config["vocab_size"]
    write_tokenizer(tmp, [(V + i, name) for i, name in enumerate(circuit.token_names)], base=base_dir)
    if out.exists():
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    tmp.rename(out)
    return out


ST_DTYPES = {torch.bfloat16: "BF16", torch.float32: "F32"}


STANDIN_MERGED = Path(__file__).resolve().parents[2] / "build" / "standin-merged"


def default_merged_model(out: Path = STANDIN_MERGED) -> Path:
    """The stand-in merged model (stand-in base + the machine), rebuilt when the machine changed.
    When only the sources changed (the machine's fingerprint is the same), the checkpoint stays and
    the new sources' digest is noted beside it in OUT.source: rewriting its config.json would void
    the fast path's cache, which is keyed by the checkpoint's bytes."""
    from qwengpu.circuit import CircuitError
    from qwengpu.machine.build import circuit_weights, machine_for, machine_source_digest
    from qwengpu.model.standin import standin_config
    config, source = out / "config.json", machine_source_digest()
    checked = out.parent / f"{out.name}.source"        # "MACHINE SOURCE": sources found to build that machine
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.lock", "w") as lock:      # one builder at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        block = json.loads(config.read_text()).get("qwengpu", {}) if config.exists() else {}
        if "readout" in block:                                    # built by a qwengpu that records it
            seen = f"{block.get('machine')} {source}"
            if source == block.get("machine_source") or checked.exists() and checked.read_text() == seen:
                return out
            _say(f"qwengpu's sources changed since {out} was built: building the machine to see whether it "
                 "changed too (15-40 s)")
            try:
                same = machine_for(standin_config(), block.get("circuit_width")).fingerprint() == block.get("machine")
            except CircuitError:                                  # it no longer fits the recorded width
                same = False
            if same:
                tmp = checked.with_suffix(".tmp")
                tmp.write_text(seen)
                tmp.replace(checked)
                _say("the machine is the same: the checkpoint stays")
                return out
        _say(f"building the stand-in merged model in {out} (2-5 minutes and 10 GB)")
        m = machine_for(standin_config())
        circuit = circuit_weights(m)
        circuit.info |= {"machine": m.fingerprint(), "machine_source": source}
        return build("standin", out, dtype="bfloat16", force=True, circuit=circuit)


def _say(message: str) -> None:
    print(f"qwengpu: {message}", file=sys.stderr, flush=True)


def _write_weights(folder: Path, groups: list[list[Item]], show: bool) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
    total = sum(item.nbytes for g in groups for item in g)
    names = ["model.safetensors"] if len(groups) == 1 else \
        [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))]
    weight_map = {}
    columns = (TextColumn("[bold]build"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
               TextColumn("{task.description}"))
    # on stderr: stdout may be JSON (`qgpu suite --json` building the stand-in on first use)
    with Progress(*columns, console=Console(stderr=True), disable=not show, transient=False) as bar:
        task = bar.add_task("", total=total)
        for file, group in zip(names, groups):
            write_safetensors(folder / file, group, lambda item, done: bar.update(
                task, description=item.name, advance=done))
            weight_map.update({item.name: file for item in group})
    if len(groups) > 1:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def write_safetensors(path: Path, items: list[Item], progress=lambda item, done: None) -> None:
    """A safetensors file written tensor by tensor, block by block (the library's writer needs
    every tensor in memory at once). Wider dtypes first, then by name, as the library orders
    them, so every tensor starts aligned to its element size."""
    items = sorted(items, key=lambda it: (-torch.empty(0, dtype=it.dtype).element_size(), it.name))
    header, offset = {}, 0
    for it in items:
        header[it.name] = {"dtype": ST_DTYPES[it.dtype], "shape": list(it.shape),
                           "data_offsets": [offset, offset + it.nbytes]}
        offset += it.nbytes
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for it in items:
            written = 0
            for block in it.blocks():
                assert block.dtype == it.dtype, (it.name, block.dtype)
                data = block.contiguous().view(torch.uint8).numpy()
                f.write(data.data)
                written += data.size
                progress(it, data.size)
            if written != it.nbytes:
                raise RuntimeError(f"internal: {it.name} wrote {written} bytes, expected {it.nbytes}")
