"""ROM encoding: each slot of a machine block is four 32-bit words.

    word 0   bits 0-5 opcode (OPCODES index), 6-9 dst, 10-13 reg a, 14-17 reg b, 18-21 reg c,
             22-23 space (MEM ops), 24-27 mod: special register (S2R), mode (SHFL, VOTE), atomic op
    word 1-3 immediates of operands a, b, c (0 for a register operand)

An operand's value is register + immediate: an immediate operand names r0 (always 0),
a register operand has immediate 0, so the circuit adds the two without a select.
A terminator (slot = number of instructions) puts its condition register in reg a and
its targets in word 3: bits 0-6 target, 7-13 fallthrough, 14-20 reconv, 21 reconv valid.
Slots past the terminator are empty (all zero).
"""
from __future__ import annotations

from qwengpu import isa

OPCODES = ("NOP",) + tuple(op.name for op in isa.Op) + tuple(t.name for t in isa.Term)
SPACES = (isa.Space.GLOBAL, isa.Space.SHARED, isa.Space.CONST)
OPCODE_BITS = 6
assert len(OPCODES) <= 1 << OPCODE_BITS

# word 0 bit fields: name -> (first bit, width)
WORD0 = {"op": (0, 6), "dst": (6, 4), "a": (10, 4), "b": (14, 4), "c": (18, 4), "space": (22, 2), "mod": (24, 4)}
# word 3 of a terminator
TERM_WORD = {"target": (0, 7), "fallthrough": (7, 7), "reconv": (14, 7), "rvalid": (21, 1)}


def _pack(layout: dict[str, tuple[int, int]], **values: int) -> int:
    word = 0
    for name, v in values.items():
        lo, width = layout[name]
        if not 0 <= v < 1 << width:
            raise ValueError(f"{name}={v} does not fit {width} bits")
        word |= v << lo
    return word


def instr_words(ins: isa.Instr) -> tuple[int, int, int, int]:
    regs, imms = [0, 0, 0], [0, 0, 0]
    for i, src in enumerate(ins.srcs):
        if isinstance(src, isa.Reg):
            regs[i] = src.n
        else:
            imms[i] = src.value
    fields = {"op": OPCODES.index(ins.op.name), "dst": ins.dst.n, "a": regs[0], "b": regs[1], "c": regs[2]}
    if ins.op is isa.Op.S2R:
        fields["mod"], imms[0] = imms[0], 0
    elif isinstance(ins.mod, (isa.ShflMode, isa.VoteMode)):
        fields["mod"] = list(type(ins.mod)).index(ins.mod)
    elif isinstance(ins.mod, tuple):
        fields["mod"] = list(isa.AtomOp).index(ins.mod[1])
    space = ins.mod[0] if isinstance(ins.mod, tuple) else ins.mod
    if isinstance(space, isa.Space):
        fields["space"] = SPACES.index(space)
    return (_pack(WORD0, **fields), *imms)


def term_words(term: isa.Terminator) -> tuple[int, int, int, int]:
    word0 = _pack(WORD0, op=OPCODES.index(term.kind.name), a=term.cond.n)
    t = {"target": max(term.target, 0), "fallthrough": max(term.fallthrough, 0),
         "reconv": max(term.reconv, 0), "rvalid": int(term.reconv >= 0)}
    return (word0, 0, 0, _pack(TERM_WORD, **t))


def block_words(block: isa.MachineBlock) -> list[tuple[int, int, int, int]]:
    """The ROM words of each slot of a block: its instructions, then its terminator."""
    return [instr_words(ins) for ins in block.instrs] + [term_words(block.term)]
