"""ROM encoding: a machine block runs as EXEC passes; ROM slot s holds the instruction that pass s
runs (four 32-bit words), PRE slot s the instruction its pre-ALU runs first (two words), and
each block has one TERM word (its terminator).

    word 0   ROM0 (qwengpu/machine/words.py): opcode (OPCODES index), dst, reg a, reg b, reg c,
             space (MEM ops: SPACES index), mod: special register (S2R), mode (SHFL, VOTE),
             atomic op; fwd: which of a, b, c take the pre-ALU's result
    word 1-3 immediates of operands a, b, c (0 for a register operand)
    PRE      words.PRE: opcode, reg a, reg b, reg c, which operand takes the immediate; then
             that immediate (at most one of a pre-ALU instruction's immediates is nonzero)

An operand's value is register + immediate: an immediate operand names r0 (always 0),
a register operand has immediate 0, so the circuit adds the two without a select; a forwarded
operand names r0 too, and the circuit adds the pre-ALU's result.

Passes (`block_passes`): one instruction a pass, except that an ALU instruction whose result
nothing after the next instruction reads (not a later instruction, not the terminator, not a
later block: `live_out`) runs in the pre-ALU of the next instruction's pass, its result
forwarded to that instruction and never written back (a *pair*, docs/machine.md; when it is a
memory access's address, a fault's message evaluates it from the tokens: faults.py). The
terminator runs in the pass of the last instruction unless the block has none or its last
instruction writes the condition register of a BRC (the instructions and the terminator read
the register file as it was before the pass); then it runs in a pass of its own, which has no
ROM words. `encode` is the one place that decides passes: the ROM, the TERM word's slot, the
reference stream (protocol.expected_stream) and the pass counts all use it.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.machine.words import OPCODES, PRE, ROM0, SPACES, TERM


@dataclass(frozen=True)
class Pass:
    """One EXEC pass: its slot (its index in the block), the instruction it runs (an index into
    the block's instructions; None in a terminator pass of its own) and the one its pre-ALU runs
    first (or None)."""
    slot: int
    main: int | None
    pre: int | None = None


@dataclass(frozen=True)
class BlockCode:
    """A block as the machine runs it: its passes (the last one runs the terminator), the words
    of its ROM slots and PRE slots (slot -> words) and its TERM word."""
    passes: tuple[Pass, ...]
    words: tuple[tuple[int, int, int, int], ...]
    pre_words: dict[int, tuple[int, int]]
    term: int

    @property
    def term_slot(self) -> int:
        return self.passes[-1].slot

    def pass_at(self, slot: int) -> Pass | None:
        """The pass EXEC(w, pc, slot) runs (slots number the passes from 0), None past the last."""
        return self.passes[slot] if 0 <= slot < len(self.passes) else None


def own_terminator_pass(block: isa.MachineBlock) -> bool:
    """Whether the block's terminator needs a pass of its own: the block has no instruction, or
    its last instruction writes the condition register of its BRC."""
    return not block.instrs or (block.term.kind is isa.Term.BRC
                                and block.instrs[-1].dst.n == block.term.cond.n)


def live_out(program: isa.Program) -> list[set[int]]:
    """Registers live at each block's end (a terminator's condition counts as read in its block)."""
    blocks = program.blocks

    def succs(t):
        return [] if t.kind is isa.Term.EXIT else [s for s in (t.target, t.fallthrough, t.reconv) if s >= 0]

    live_in, out = [set() for _ in blocks], [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(blocks))):
            o = set().union(*(live_in[s] for s in succs(blocks[i].term)))
            live = o | ({blocks[i].term.cond.n} - {0})
            for ins in reversed(blocks[i].instrs):
                live.discard(ins.dst.n)
                live |= {s.n for s in ins.srcs if isinstance(s, isa.Reg) and s.n}
            if (o, live) != (out[i], live_in[i]):
                out[i], live_in[i], changed = o, live, True
    return out


def _reads(operands: tuple[isa.Operand, ...], reg: int) -> bool:
    return any(isinstance(s, isa.Reg) and s.n == reg for s in operands)


def _fits_pre_alu(ins: isa.Instr) -> bool:
    """An ALU op with at most one nonzero immediate (a PRE slot holds one)."""
    return (isa.OP_SPEC[ins.op][0] is isa.Kind.ALU
            and sum(isinstance(s, isa.Imm) and s.value != 0 for s in ins.srcs) <= 1)


def _pairs_with_next(block: isa.MachineBlock, i: int, live: set[int]) -> bool:
    """Whether instruction i can run in the pre-ALU of instruction i + 1's pass: it is an ALU op
    with at most one nonzero immediate and nothing after instruction i + 1 reads its result (the
    terminator counts as after it)."""
    instrs = block.instrs
    if i + 1 >= len(instrs) or not _fits_pre_alu(instrs[i]):
        return False
    d = instrs[i].dst.n
    if any(_reads(ins.srcs, d) for ins in instrs[i + 2:]):
        return False
    if block.term.kind is isa.Term.BRC and block.term.cond.n == d and i + 2 < len(instrs):
        return False        # the terminator reads the pre-ALU's result only in the last instruction's pass
    return d not in live or any(ins.dst.n == d for ins in instrs[i + 1:])


def _pairs_with_terminator(block: isa.MachineBlock, live: set[int]) -> bool:
    """Whether the last instruction, which writes the BRC's condition, can run in the pre-ALU of
    the terminator's pass (the condition forwarded to the branch unit)."""
    last = block.instrs[-1]
    return _fits_pre_alu(last) and last.dst.n not in live


def block_passes(block: isa.MachineBlock, live: set[int]) -> tuple[Pass, ...]:
    """The block's passes, pairs taken greedily in block order (`live`: registers live after it)."""
    out, i = [], 0
    n = len(block.instrs)
    own = own_terminator_pass(block)
    while i < n:
        if i == n - 1 and own and _pairs_with_terminator(block, live):
            out.append(Pass(len(out), None, i))
            return tuple(out)
        pair = _pairs_with_next(block, i, live)
        out.append(Pass(len(out), i + pair, i if pair else None))
        i += 1 + pair
    if own:
        out.append(Pass(len(out), None))
    return tuple(out)


def instr_words(ins: isa.Instr | None, pre: isa.Instr | None = None, cond: int = 0) -> tuple[int, int, int, int]:
    """An instruction's ROM words (None: a terminator's pass without one); with `pre`, the
    instruction its pass runs first in the pre-ALU: operands that read pre's result are forwarded
    (register field r0, fwd bit set), and so is the terminator's condition register `cond` (tfwd)."""
    tfwd = int(pre is not None and cond != 0 and pre.dst.n == cond)
    if ins is None:
        return ROM0.pack(tfwd=tfwd), 0, 0, 0
    regs, imms, fwd = [0, 0, 0], [0, 0, 0], 0
    for i, src in enumerate(ins.srcs):
        if isinstance(src, isa.Reg):
            if pre is not None and src.n and src.n == pre.dst.n:
                fwd |= 1 << i
            else:
                regs[i] = src.n
        else:
            imms[i] = src.value
    fields = {"op": OPCODES.index(ins.op.name), "dst": ins.dst.n, "a": regs[0], "b": regs[1], "c": regs[2],
              "fwd": fwd, "tfwd": tfwd}
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


def pre_words(ins: isa.Instr) -> tuple[int, int]:
    """A pre-ALU instruction's PRE word and its immediate (the one nonzero immediate, or 0)."""
    regs, imm, which = [0, 0, 0], 0, 0
    for i, src in enumerate(ins.srcs):
        if isinstance(src, isa.Reg):
            regs[i] = src.n
        elif src.value:
            imm, which = src.value, 1 << i
    return PRE.pack(op=OPCODES.index(ins.op.name), a=regs[0], b=regs[1], c=regs[2], imm=which), imm


def encode_block(block: isa.MachineBlock, live: set[int]) -> BlockCode:
    """The block's passes, ROM and PRE slots and TERM word (`live`: registers live after it)."""
    passes = block_passes(block, live)
    ins, term, last = block.instrs, block.term, passes[-1]
    cond = term.cond.n if term.kind is isa.Term.BRC else 0
    words = tuple(instr_words(None if p.main is None else ins[p.main], None if p.pre is None else ins[p.pre],
                              cond if p is last else 0)
                  for p in passes if p.main is not None or p.pre is not None)
    pre = {p.slot: pre_words(ins[p.pre]) for p in passes if p.pre is not None}
    forwarded = last.pre is not None and ins[last.pre].dst.n == cond     # the branch unit reads r0 and the pre-ALU
    word = TERM.pack(target=max(term.target, 0), fallthrough=max(term.fallthrough, 0),
                     reconv=max(term.reconv, 0), rvalid=int(term.reconv >= 0),
                     op=list(isa.Term).index(term.kind), cond=0 if forwarded else cond, slot=last.slot)
    return BlockCode(passes, words, pre, word)


def encode(program: isa.Program) -> list[BlockCode]:
    """Every block of the program, as the machine runs it."""
    return [encode_block(b, live) for b, live in zip(program.blocks, live_out(program))]
