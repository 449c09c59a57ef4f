"""Host shape: the per-layer resources of the Qwen3.5 model the circuit is compiled into.

The circuit owns C extra residual dims after the host's n text dims. C is chosen
so that the merged width N = n + C is t * 4**m with 2 <= t <= 16: then t anchor
dims of equal power-of-two value make every decoder RMS norm an exact identity
on GPU tokens (see docs/circuit.md, "Anchor").
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from qwengpu.errors import MachineLimitError


@dataclass(frozen=True)
class HostSpec:
    hidden: int            # n: the base model's residual width
    intermediate: int      # MLP neurons per layer
    gdn_heads: int         # Gated DeltaNet key heads per layer: the heads the circuit can use
    key_dim: int           # rows of a head's state
    value_dim: int         # columns of a head's state
    conv_kernel: int
    eps: float
    group: int = 1         # value heads per key head (2 on Qwen3.5-4B and 9B: "grouped" heads)

    @property
    def value_heads(self) -> int:
        return self.gdn_heads * self.group

    @classmethod
    def from_config(cls, config: dict | str | Path) -> "HostSpec":
        """Read a Qwen3.5 text config (dict, or path to config.json; a nested text_config is accepted)."""
        if not isinstance(config, dict):
            config = json.loads(Path(config).read_text())
        config = config.get("text_config", config)
        hk, hv = config["linear_num_key_heads"], config["linear_num_value_heads"]
        if hk <= 0 or hv % hk:
            raise ValueError(f"host has {hv} GDN value heads for {hk} key heads; they must be a multiple of it")
        return cls(hidden=config["hidden_size"], intermediate=config["intermediate_size"],
                   gdn_heads=hk, key_dim=config["linear_key_head_dim"],
                   value_dim=config["linear_value_head_dim"], conv_kernel=config["linear_conv_kernel_dim"],
                   eps=config["rms_norm_eps"], group=hv // hk)


# The reference host (numbers from /work/shared/hosts/qwen3_5_2b_text_config.json).
QWEN35_2B = HostSpec(hidden=2048, intermediate=6144, gdn_heads=16, key_dim=128, value_dim=128,
                     conv_kernel=4, eps=1e-6)
# A small host of the same kind for fast tests.
TINY = HostSpec(hidden=64, intermediate=6144, gdn_heads=4, key_dim=32, value_dim=32, conv_kernel=4, eps=1e-6)


MAX_ANCHORS = 16


def anchor_split(width: int) -> tuple[int, int]:
    """(t, m) with width == t * 4**m and 2 <= t <= MAX_ANCHORS, or raise. t anchor dims of value
    2**(m + 16) give mean(x**2) = t * 4**(m + 16) / (t * 4**m) = 4**16 exactly for any t."""
    m = 0
    while width % 4 == 0:
        width //= 4
        m += 1
    if width == 1 and m > 0:       # t >= 2 anchor dims: neuron biases are split over two of them
        width, m = 4, m - 1
    if not 2 <= width <= MAX_ANCHORS:
        raise ValueError(f"merged width is not t*4**m with t in 2..{MAX_ANCHORS} (t = {width})")
    return width, m


def circuit_width(host: HostSpec, wanted: int, limit: int = 1024) -> int:
    """Smallest C >= wanted such that n + C = t * 4**m (t in 2..MAX_ANCHORS)."""
    c = max(wanted, 1)
    while True:
        try:
            anchor_split(host.hidden + c)
            break
        except ValueError:
            c += 1
    if c > limit:
        raise MachineLimitError(f"circuit needs {c} residual dims; the limit is {limit}")
    return c
