"""Circuits to merge: the machine (qwengpu.machine.build, the default: the merged model runs
kernels), a small demo compiled by qwengpu.circuit (an adder and a memory bank: cheap, for the
text-drift eval), and a deterministic synthetic silent circuit for tests of shapes the compiler
refuses (e.g. grouped GDN heads).
"""
from __future__ import annotations

import numpy as np

from qwengpu.circuit.weights import CircuitWeights
from qwengpu.model import CheckpointError
from qwengpu.model.hosts import layer_shapes

DEMO_TOKENS = 256
CIRCUITS = ("machine", "demo")


def named_circuit(name: str, text_config: dict) -> CircuitWeights:
    """The circuit `name` ("machine" or "demo") compiled for this host."""
    if name == "machine":
        return machine_circuit(text_config)
    if name == "demo":
        return default_circuit(text_config)
    raise CheckpointError(f"circuit {name!r}: expected one of {', '.join(CIRCUITS)}")


def machine_circuit(text_config: dict) -> CircuitWeights:
    """The SIMT machine compiled for this host (its layers are computed one at a time as the
    build writes them). Raises CheckpointError when the compiler cannot fit the host's shape."""
    from qwengpu.circuit import CircuitError
    from qwengpu.machine.build import circuit_weights, machine_for, machine_source_digest
    try:
        machine = machine_for(text_config)
    except (CircuitError, ValueError) as e:
        raise CheckpointError(f"the circuit cannot fit this base: {e}") from None
    circuit = circuit_weights(machine)
    circuit.info |= {"machine": machine.fingerprint(), "machine_source": machine_source_digest()}   # as default_merged_model()
    return circuit


def default_circuit(text_config: dict) -> CircuitWeights:
    """A real compiled circuit for this host: a 32-bit adder (a + b, 2 layers) and a GDN
    memory bank written with the sum; 256 GPU tokens carry a = i % 16, b = i // 16.
    Raises CheckpointError when the compiler cannot fit the host's shape."""
    from qwengpu.circuit import CircuitError
    from qwengpu.circuit import gadgets as G
    from qwengpu.circuit import memory as Mem
    from qwengpu.circuit.host import HostSpec, circuit_width
    from qwengpu.circuit.layer import Circuit
    from qwengpu.circuit.model import encode
    try:
        host = HostSpec.from_config(text_config)
        c = Circuit(host, circuit_width(host, 192))         # what the adder and the bank need
        a, b, addr = c.input("a", 32), c.input("b", 32), c.input("addr", 4)
        total, _ = G.add(c, 0, a, b)
        bank = Mem.declare_bank(c, 2, "mem", 16, 32)
        Mem.write(c, bank, addr, total)
        layers = c.weights()
    except (CircuitError, ValueError) as e:
        raise CheckpointError(f"the circuit cannot fit this base: {e}") from None
    i = np.arange(DEMO_TOKENS)
    codes = encode(c, {a: i % 16, b: i // 16, addr: i % 16}, DEMO_TOKENS)[:, c.layout.n:]
    return CircuitWeights(width=c.layout.width, layers=layers,
                          token_names=[f"<|gpu_demo_{k}|>" for k in i], token_embeddings=codes,
                          info={"circuit": "demo: add32 + memory bank"})


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
