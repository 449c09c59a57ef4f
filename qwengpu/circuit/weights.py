"""CircuitWeights: what the circuit compiler hands the merge (qwengpu.model.merge.build).

It lives with the compiler so that the machine (qwengpu.machine.build), which produces one,
needs nothing from qwengpu.model, which consumes it: the dependency points one way.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field

import numpy as np


@dataclass
class CircuitWeights:
    """What the circuit compiler hands the build.

    width            C, the circuit's residual dims (after the base's n)
    layers           per circuit layer, the Qwen3_5DecoderLayer (linear_attention) parameters by
                     name relative to the layer, shaped for hidden n + C; MLP matrices may have
                     fewer neurons than the base (they are zero-padded to its intermediate size)
    token_names      the GPU tokens, appended to the vocabulary in this order
    token_embeddings [len(token_names), C]: each GPU token's circuit dims (its base dims are 0);
                     with the tied head also its output code
    final_norm       optional [C] gains (1 + w) of the final norm on circuit dims (default 1)
    """
    width: int
    layers: list[dict[str, np.ndarray]]
    token_names: list[str]
    token_embeddings: np.ndarray
    final_norm: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def digest(self) -> str:
        h = hashlib.sha256(f"C={self.width};tokens={'|'.join(self.token_names)}".encode())
        head = [self.token_embeddings] + ([self.final_norm] if self.final_norm is not None else [])
        # a generator: a machine's layers are computed one at a time (LazyLayer) and must not be
        # held together (a list of them was 11 GB for the stand-in, the build's peak)
        for a in itertools.chain(head, (layer[k] for layer in self.layers for k in sorted(layer))):
            h.update(memoryview(np.ascontiguousarray(a, dtype=np.float64)).cast("B"))
        return h.hexdigest()
