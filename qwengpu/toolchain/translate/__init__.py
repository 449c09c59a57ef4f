"""The translation stage of lowering (lower.py): PTX instructions -> the virtual IR (cfg.py).

Takes the (inlined) kernel, its layout and its registers' address spaces; gives basic
blocks of instructions over unbounded virtual registers, ending in machine terminators
(JMP/BRC/BAR/EXIT), and the next free virtual register (`Translator.run`, `.nvreg`). A
64-bit value is a register pair; an 8/16-bit value lives zero-extended in one register.

The Translator is assembled from its concerns, bottom up:
  ../builder.py    emitting instructions (constants folded), registers, blocks, branches
  ../pairs.py      64-bit arithmetic on register pairs
  ../division.py   division as other instructions (the micro-code's too)
  core.py          the body: operands, results, predication, labels and branches
  alu.py           data movement, arithmetic, shifts, bit operations, comparisons
  memory.py        loads, stores, atomics, warp operations, barriers
  floats.py        fp32 arithmetic, comparisons, conversions, float atomics
"""
from qwengpu.toolchain.translate.alu import AluOps
from qwengpu.toolchain.translate.core import constant_registers
from qwengpu.toolchain.translate.floats import FloatOps
from qwengpu.toolchain.translate.memory import MemoryOps

__all__ = ["Translator", "constant_registers"]


class Translator(AluOps, MemoryOps, FloatOps):
    """`Translator(module, fn, layout, spaces).run()`: the kernel's IR blocks. Afterwards,
    `space_of` tells where an access goes (writes.py asks it) and `ptx_constants` which
    PTX registers hold one immediate (lint.py)."""
