"""A deterministic synthetic silent circuit, for tests of shapes the machine's compiler refuses
(e.g. grouped GDN heads): random weights that obey the silence rule."""
from __future__ import annotations

import numpy as np

from qwengpu.circuit.weights import CircuitWeights
from qwengpu.model.hosts import layer_shapes


def synthetic_circuit(text_config: dict, width: int = 64, layers: int = 2, tokens: int = 8,
                      neurons: int = 32, seed: int = 0) -> CircuitWeights:
    """Random circuit layers that follow the silence rule: every matrix reads and writes only
    the circuit dims (the last `width` of n + width), so on a text token the layer outputs 0.
    The conv, decay, dt and norms are random too, so silence rests on the gates alone."""
    n = text_config["hidden_size"]
    N = n + width
    shapes = layer_shapes({**text_config, "hidden_size": N, "intermediate_size": neurons}, "linear_attention")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(layers):
        w = {}
        for name, shape in sorted(shapes.items()):
            value = rng.normal(0, 0.3, shape)
            if name.endswith(("layernorm.weight",)):
                value[:n] = 0.0
            elif len(shape) == 2 and name.endswith(("out_proj.weight", "down_proj.weight")):
                value[:n] = 0.0                      # writes no text dim
            elif len(shape) == 2:
                value[:, :n] = 0.0                   # reads no text dim
            if name.endswith("A_log"):
                value = np.log(rng.uniform(1, 4, shape))
            w[name] = value
        out.append(w)
    codes = rng.choice([-1.0, 1.0], (tokens, width))
    return CircuitWeights(width=width, layers=out, token_names=[f"<|gpu_syn_{k}|>" for k in range(tokens)],
                          token_embeddings=codes, info={"circuit": f"synthetic (seed {seed})"})
