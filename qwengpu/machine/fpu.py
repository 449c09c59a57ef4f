"""The 4-lane floating-point unit: FADD, FSUB, FMUL (isa.FLOAT_SEMANTICS) in all four rounding modes.

Interface: `build_fpu(c, at, op, rnd, a, b, r)` reads one-dim op flags (at most one is 1), the
rounding mode's one-hot flags (isa.Rnd names) and per-lane 32-bit operands, and adds each lane's
result into r (the ALU's result fields, 0 on a float pass) at layer at + FPU_LAYERS - 1. With
every op flag 0 it adds nothing. (Stub: the datapath lands next.)
"""
from __future__ import annotations

from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import FPU_LAYERS

FPU_OPS = ("FADD", "FSUB", "FMUL")
ROUNDINGS = ("RN", "RZ", "RM", "RP")


def build_fpu(c: Circuit, at: int, op: dict[str, Field], rnd: dict[str, Field], a: list[Field], b: list[Field],
              r: list[Field]) -> int:
    """Adds FLOAT_SEMANTICS[op](rnd, a, b) into r per lane; returns the first layer that reads it."""
    return at + FPU_LAYERS
