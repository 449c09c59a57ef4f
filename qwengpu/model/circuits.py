"""Circuits to merge: the machine (qwengpu.machine.build, the default: the merged model runs
kernels), and a small demo compiled by qwengpu.circuit (an adder and a memory bank: cheap, for the
text-drift eval). The tests' synthetic circuit is qwengpu.testing.circuits.
"""
from __future__ import annotations

import numpy as np

from qwengpu.circuit.weights import CircuitWeights
from qwengpu.model import CheckpointError

DEMO_TOKENS = 256
CIRCUITS = ("machine", "demo")


def named_circuit(name: str, text_config: dict, width: int | None = None) -> CircuitWeights:
    """The circuit `name` ("machine" or "demo") compiled for this host, in `width` circuit dims
    (None: the fewest it fits in)."""
    if name == "machine":
        return machine_circuit(text_config, width)
    if name == "demo":
        return default_circuit(text_config, width)
    raise CheckpointError(f"circuit {name!r}: expected one of {', '.join(CIRCUITS)}")


def machine_circuit(text_config: dict, width: int | None = None) -> CircuitWeights:
    """The SIMT machine compiled for this host (its layers are computed one at a time as the
    build writes them). Raises CheckpointError when the compiler cannot fit the host's shape."""
    from qwengpu.circuit import CircuitError
    from qwengpu.errors import MachineLimitError
    from qwengpu.machine.build import circuit_weights, machine_for, machine_source_digest
    try:
        machine = machine_for(text_config, width)
    except (CircuitError, ValueError, MachineLimitError) as e:
        raise CheckpointError(f"the circuit cannot fit this base: {e}") from None
    circuit = circuit_weights(machine)
    circuit.info |= {"machine": machine.fingerprint(), "machine_source": machine_source_digest()}   # as default_merged_model()
    return circuit


def default_circuit(text_config: dict, width: int | None = None) -> CircuitWeights:
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
        c = Circuit(host, width or circuit_width(host, 192))         # 192: what the adder and the bank need
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
