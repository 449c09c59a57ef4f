"""ROM encoding: each instruction slot of a machine block is four 32-bit words, and each block
has one TERM word (its terminator).

    word 0   ROM0 (qwengpu/machine/words.py): opcode (OPCODES index), dst, reg a, reg b, reg c,
             space (MEM ops: SPACES index), mod: special register (S2R), mode (SHFL, VOTE),
             atomic op; as laid out now bits 0-5, 6-9, 10-13, 14-17, 18-21, 22-23, 24-27
    word 1-3 immediates of operands a, b, c (0 for a register operand)

An operand's value is register + immediate: an immediate operand names r0 (always 0),
a register operand has immediate 0, so the circuit adds the two without a select.
Slots past the last instruction are empty (all zero).

TERM (one word per pc): target, fallthrough, reconv (PC_BITS each), reconv valid, the
terminator's kind (isa.Term index), its condition register, and `term_slot`: the slot whose
pass runs it. That is the last instruction's pass (the terminator is folded into it) unless
the block has no instruction or its last instruction writes the condition register of a BRC
(the instruction and the terminator read the register file as it was before the pass); then
the terminator runs in a pass of its own, slot n = the instruction count, which has no ROM words.
`term_slot` is the one place that decides this: the ROM (TERM.slot), the reference stream
(protocol.expected_stream) and the pass counts (protocol.runs_terminator) all use it.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.machine.words import OPCODES, ROM0, SPACES, TERM


def term_slot(block: isa.MachineBlock) -> int:
    """The slot whose pass runs the block's terminator: n - 1 (folded into the last instruction's
    pass) when the block has n >= 1 instructions and the last one does not write the condition
    register of a BRC, else n (a terminator pass of its own)."""
    n = len(block.instrs)
    if n and not (block.term.kind is isa.Term.BRC and block.instrs[-1].dst.n == block.term.cond.n):
        return n - 1
    return n


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


def term_word(block: isa.MachineBlock) -> int:
    """The block's TERM word."""
    term = block.term
    return TERM.pack(target=max(term.target, 0), fallthrough=max(term.fallthrough, 0),
                     reconv=max(term.reconv, 0), rvalid=int(term.reconv >= 0),
                     op=list(isa.Term).index(term.kind), cond=term.cond.n, slot=term_slot(block))


def block_words(block: isa.MachineBlock) -> list[tuple[int, int, int, int]]:
    """The ROM words of each instruction slot of a block (the terminator is its TERM word)."""
    return [instr_words(ins) for ins in block.instrs]
