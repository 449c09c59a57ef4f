"""check_circuit: every gadget and memory bank through the stock Qwen3.5 layers, fp32 and bf16.

Each gadget is compiled alone into a small circuit, wrapped in a stock
Qwen3_5ForCausalLM (model.py) and run on random cases packed as the tokens of a few
sequences, with random text tokens interleaved. Outputs are read from the residual
stream and compared with isa.ALU_SEMANTICS (or a plain Python reference); an output
dim that is not within 0.25 of 0 or 1 counts as a mismatch. silent_on_text requires
every text token's residual to come out of every circuit layer bit-identical to its
input embedding, and bank states to be unchanged by text tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.host import QWEN35_2B, HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, decode, encode, run_decode, run_prefill

# MLP gadgets use a narrow host (no GDN work to speak of); banks use 2B-shaped heads.
MLP_HOST = HostSpec(hidden=64, intermediate=6144, gdn_heads=1, key_dim=16, value_dim=16, conv_kernel=4, eps=1e-6)
BANK_HOST = HostSpec(hidden=64, intermediate=6144, gdn_heads=16, key_dim=128, value_dim=128,
                     conv_kernel=4, eps=1e-6)
TOLERANCE = 0.25
ALU = isa.ALU_SEMANTICS
U32 = 0xFFFF_FFFF


@dataclass
class Spec:
    name: str
    widths: tuple[int, ...]                       # input field widths
    build: Callable                               # (circuit, *input fields) -> list of output fields
    ref: Callable                                 # (*ints) -> tuple of ints
    draw: str = "word"                            # how to draw inputs: word | shift | sel | small
    exhaustive: bool = False                      # small domain: every input combination


def _alu(op, arity=2):
    return lambda *x: (ALU[op](*x[:arity]),)


def specs() -> list[Spec]:
    s = []
    for op in ("and", "or", "xor", "nand", "nor", "xnor"):
        s.append(Spec(f"gate.{op}", (1, 1), lambda c, a, b, op=op: [G.gate(c, 0, op, a, b)],
                      lambda a, b, op=op: (_bool(op, a, b),), exhaustive=True))
    s.append(Spec("gate.not", (1,), lambda c, a: [G.gate(c, 0, "not", a)], lambda a: (1 - a,), exhaustive=True))
    for op in ("AND", "OR", "XOR"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.gate(c, 0, op.lower(), a, b)], _alu(op)))
    s.append(Spec("NOT", (32,), lambda c, a: [G.gate(c, 0, "not", a)], lambda a: (a ^ U32,)))
    s.append(Spec("ADD", (32, 32), lambda c, a, b: [G.add(c, 0, a, b)[0]], _alu("ADD")))
    s.append(Spec("SUB", (32, 32), lambda c, a, b: [G.add(c, 0, a, b, sub=True)[0]], _alu("SUB")))
    s.append(Spec("ADDC", (32, 32, 1), lambda c, a, b, ci: list(G.add(c, 0, a, b, cin=ci, carry_out=True)),
                  lambda a, b, ci: ((a + b + ci) & U32, (a + b + ci) >> 32)))
    s.append(Spec("SUBC", (32, 32), lambda c, a, b: list(G.add(c, 0, a, b, sub=True, carry_out=True)),
                  lambda a, b: ((a - b) & U32, int(a >= b))))
    for op in G.SET_TESTS:
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.compare(c, 0, op, a, b)], _alu(op)))
    for op in ("MIN", "MAX", "MINU", "MAXU"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.minmax(c, 0, op, a, b)], _alu(op)))
    for op in ("SHL", "SHR", "SRA"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.shift(c, 0, op, a, b)], _alu(op), draw="shift"))
    s.append(Spec("SEL", (32, 32, 32), lambda c, k, a, b: [G.select(c, 0, k, a, b)], _alu("SEL", 3), draw="sel"))
    s.append(Spec("MOV", (32,), lambda c, a: [G.copy(c, 0, a)], _alu("MOV", 1)))
    s.append(Spec("CLEAR", (32,), _clear_build, lambda a: (0,)))
    s.append(Spec("onehot.encode", (5,), lambda c, a: [G.onehot_encode(c, 0, a)], lambda a: (1 << a,),
                  exhaustive=True))
    s.append(Spec("onehot.decode", (32,), _decode_build, lambda a: (a,), draw="onehot", exhaustive=True))
    s.append(Spec("mux4", (2, 32, 32, 32, 32), _mux_build, lambda k, *x: (x[k],), draw="mux"))
    if hasattr(G, "mul"):
        s.append(Spec("MUL", (32, 32), lambda c, a, b: [G.mul(c, 0, a, b)], _alu("MUL")))
    return s


def _bool(op, a, b):
    return {"and": a & b, "or": a | b, "xor": a ^ b, "nand": 1 - (a & b), "nor": 1 - (a | b),
            "xnor": 1 - (a ^ b)}[op]


def _clear_build(c, a):
    out = G.copy(c, 0, a)
    G.clear(c, 1, out)
    return [out]                        # read after layer 1: must be exactly cleared


def _decode_build(c, a):
    a.kind = "onehot"
    return [G.onehot_decode(c, 0, a)]


def _mux_build(c, k, *xs):
    sel = G.onehot_encode(c, 0, k)
    return [G.mux(c, 1, sel, list(xs))]
