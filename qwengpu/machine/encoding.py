"""ROM encoding: each slot of a machine block is four 32-bit words.

    word 0   ROM0 (qwengpu/machine/words.py): opcode (OPCODES index), dst, reg a, reg b, reg c,
             space (MEM ops: SPACES index), mod: special register (S2R), mode (SHFL, VOTE),
             atomic op; as laid out now bits 0-5, 6-9, 10-13, 14-17, 18-21, 22-23, 24-27
    word 1-3 immediates of operands a, b, c (0 for a register operand)

An operand's value is register + immediate: an immediate operand names r0 (always 0),
a register operand has immediate 0, so the circuit adds the two without a select.
A terminator (slot = number of instructions) puts its condition register in reg a and
its targets in word 3, ROM3: target, fallthrough, reconv (PC_BITS each: bits 0-6, 7-13,
14-20) and reconv valid (bit 21).
Slots past the terminator are empty (all zero).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.machine.words import OPCODES, ROM0, ROM3, SPACES


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
    return (ROM0.pack(**fields), *imms)


def term_words(term: isa.Terminator) -> tuple[int, int, int, int]:
    word0 = ROM0.pack(op=OPCODES.index(term.kind.name), a=term.cond.n)
    t = {"target": max(term.target, 0), "fallthrough": max(term.fallthrough, 0),
         "reconv": max(term.reconv, 0), "rvalid": int(term.reconv >= 0)}
    return (word0, 0, 0, ROM3.pack(**t))


def block_words(block: isa.MachineBlock) -> list[tuple[int, int, int, int]]:
    """The ROM words of each slot of a block: its instructions, then its terminator."""
    return [instr_words(ins) for ins in block.instrs] + [term_words(block.term)]
