"""ROM encoding: a machine block runs as EXEC passes; ROM slot s holds the instruction that pass s
runs (five 32-bit words), PRE slot s the instruction its pre-ALU runs first (two words), and
each block has one TERM word (its terminator).

    word 0   ROM0 (qwengpu/machine/words.py): opcode (OPCODES index), dst, reg a, reg b, reg c,
             space (MEM ops: SPACES index), mod: mode (SHFL, VOTE), atomic op, rounding mode
             (a rounded float op's isa.Rnd index), FSET's comparison (its isa.FCmp index); fwd: which of a, b, c take the pre-ALU's result
    word 1-3 immediates of operands a, b, c (0 for a register operand)
    word 4   SRC: where operands a, b, c and the terminator's condition come from when not from
             the register file (a special register, or the CONST word SRC.word)
    PRE      words.PRE: opcode, reg a, reg b, reg c, which operand takes the immediate; then
             that immediate (at most one of a pre-ALU instruction's immediates is nonzero)

An operand's value is register + immediate + fixed value: an immediate operand names r0
(always 0), a register operand has immediate 0, so the circuit adds them without a select; a
forwarded operand names r0 too, and the circuit adds the pre-ALU's result; a *fixed* operand
(`Fixed`) names r0 and SRC says which special register or CONST word the circuit adds.

Fixed operands (`machine_blocks`): a register whose every definition reaching a read is an S2R
of one special register, or a load of one CONST word at a constant address (a parameter: CONST
is read-only), holds the same value for a lane all launch long; such a read takes the value
from the special-register table or the parameter bank instead (docs/machine.md, step 18), and
a definition none of whose reads needs the register file runs in no pass at all.

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

from dataclasses import dataclass, replace

from qwengpu import isa, liveness
from qwengpu.errors import MachineLimitError
from qwengpu.machine.words import OPCODES, PRE, ROM0, SPACES, SRC, SRC_WORD, TERM

ENTRY = (-1, -1)        # the definition of a register's value before the launch's first write
# the non-ALU ops whose operands are the ALU's (operands.py, at L_REG), so may be Fixed: a load's
# and a store's address and data, and the FPU's a and b (fpu.FPU_OPCODES, named here: this module
# is the host's contract with the circuit and imports none of its units, tests/test_imports.py)
FPU_OPERAND_OPS = tuple(isa.Op[n] for n in ("FADD", "FSUB", "FMUL", "FFMA", "I2F", "U2F", "F2I", "F2U", "FRND",
                                            "FMIN", "FMAX", "FSET"))
_ALU_OPERANDS = frozenset({isa.Op.LD, isa.Op.ST, *FPU_OPERAND_OPS})


@dataclass(frozen=True)
class Fixed:
    """An operand fixed for a lane through the launch: special register `sreg` (isa.SReg), or
    CONST word `word` (a parameter or .const datum)."""
    sreg: int | None = None
    word: int | None = None

    def __str__(self):
        return isa.SReg(self.sreg).name.lower() if self.sreg is not None else f"const[{self.word}]"


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
    words: tuple[tuple[int, int, int, int, int], ...]
    pre_words: dict[int, tuple[int, int]]
    term: int
    fixed: dict[tuple[int, int], Fixed]    # (instruction index in the program's block, operand) -> its Fixed value
    instructions: int                      # the program's block's

    @property
    def term_slot(self) -> int:
        return self.passes[-1].slot

    @property
    def unrun(self) -> list[int]:
        """The block's instructions that run in no pass: only fixed operands read their results."""
        ran = {i for p in self.passes for i in (p.main, p.pre)}
        return [i for i in range(self.instructions) if i not in ran]

    def pass_at(self, slot: int) -> Pass | None:
        """The pass EXEC(w, pc, slot) runs (slots number the passes from 0), None past the last."""
        return self.passes[slot] if 0 <= slot < len(self.passes) else None


def own_terminator_pass(block: isa.MachineBlock) -> bool:
    """Whether the block's terminator needs a pass of its own: the block has no instruction, or
    its last instruction writes the condition register of its BRC."""
    return not block.instrs or (block.term.kind is isa.Term.BRC
                                and block.instrs[-1].dst.n == _reg(block.term.cond) != 0)


def _reg(operand) -> int:
    """The register an operand reads (0: none, for an immediate or a Fixed operand)."""
    return operand.n if isinstance(operand, isa.Reg) else 0


def _successors(term: isa.Terminator) -> list[int]:
    return [] if term.kind is isa.Term.EXIT else [s for s in (term.target, term.fallthrough, term.reconv) if s >= 0]


def live_out(program: isa.Program) -> list[set[int]]:
    """Registers live at each block's end (a terminator's condition counts as read in its block)."""
    def reads(operands) -> list[int]:
        return [r for r in map(_reg, operands) if r]        # r0 holds nothing to keep
    steps = [[(reads(ins.srcs), ins.dst.n) for ins in b.instrs] + [(reads([b.term.cond]), None)]
             for b in program.blocks]
    return liveness.live_out([_successors(b.term) for b in program.blocks], steps)


def fixed_value(ins: isa.Instr) -> Fixed | None:
    """The value an instruction writes when it is fixed all launch long: S2R's special register,
    or a load of one of CONST's lane words (a constant, aligned address in range: it cannot fault;
    the parameter bank holds the lane words)."""
    if not ins.dst.n:
        return None
    if ins.op is isa.Op.S2R:
        return Fixed(sreg=ins.srcs[0].value)
    if ins.op is isa.Op.LD and ins.mod is isa.Space.CONST and not any(map(_reg, ins.srcs)):
        address = isa.u32(sum(s.value for s in ins.srcs if isinstance(s, isa.Imm)))
        if address % 4 == 0 and address < 4 * isa.LANE_CONST_WORDS:
            return Fixed(word=address // 4)
    return None


def _reaching(program: isa.Program) -> dict[tuple[int, int, int], frozenset]:
    """The definitions (block, instruction; ENTRY: the launch's initial value) that reach each
    register read (block, instruction, operand; the terminator's condition is instruction
    len(instrs)). Registers are a lane's own, so this follows a lane's paths through the blocks."""
    blocks = program.blocks
    preds = [[] for _ in blocks]
    for b, block in enumerate(blocks):
        for s in _successors(block.term):
            preds[s].append(b)
    entry = (frozenset({ENTRY}),) * isa.NUM_REGS
    outs: list[tuple[frozenset, ...] | None] = [None] * len(blocks)

    def run(b: int, reads: dict | None = None) -> tuple[frozenset, ...]:
        known = [outs[p] for p in preds[b] if outs[p] is not None] + ([entry] if b == 0 else [])
        state = [frozenset().union(*(o[r] for o in known)) for r in range(isa.NUM_REGS)]
        block = blocks[b]
        for i, ins in enumerate(block.instrs):
            if reads is not None:
                reads.update({(b, i, q): state[s.n] for q, s in enumerate(ins.srcs) if _reg(s)})
            if ins.dst.n:
                state[ins.dst.n] = frozenset({(b, i)})
        if reads is not None and block.term.kind is isa.Term.BRC and _reg(block.term.cond):
            reads[(b, len(block.instrs), 0)] = state[block.term.cond.n]
        return tuple(state)

    changed = True
    while changed:
        changed = False
        for b in range(len(blocks)):
            new = run(b)
            changed |= new != outs[b]
            outs[b] = new
    reads: dict[tuple[int, int, int], frozenset] = {}
    for b in range(len(blocks)):
        run(b, reads)
    return reads


def _fixed_reads(program: isa.Program) -> tuple[dict[tuple[int, int, int], Fixed], set[tuple[int, int]]]:
    """The register reads that take a Fixed value (read -> value) and the definitions that then run
    in no pass. A read qualifies when every definition reaching it writes the same fixed value
    and it is an operand of an ALU op, an FPU op (FADD, FSUB, FMUL: it reads the ALU's operands),
    a load or a store that runs in no pre-ALU (which reads only the register file; nor do a warp
    op or an atomic take one), or a BRC's condition on a special register; an instruction takes
    at most one CONST word (the parameter bank has one read a pass). A definition runs in no
    pass when every read it reaches qualifies."""
    blocks = program.blocks
    reads = _reaching(program)
    fixed = {(b, i): v for b, block in enumerate(blocks) for i, ins in enumerate(block.instrs)
             if (v := fixed_value(ins)) is not None}
    paired = {(b, p.pre) for b, (block, live) in enumerate(zip(blocks, live_out(program)))
              for p in block_passes(block, live) if p.pre is not None}

    def value(defs) -> Fixed | None:          # the one fixed value every definition writes
        values = {fixed.get(d) for d in defs}
        return values.pop() if len(values) == 1 else None

    words: dict[tuple[int, int], set[int]] = {}       # the CONST words an instruction could read
    for (b, i, _), defs in reads.items():
        if (v := value(defs)) is not None and v.word is not None:
            words.setdefault((b, i), set()).add(v.word)

    def qualifies(b: int, i: int, v: Fixed) -> bool:
        if i == len(blocks[b].instrs):
            return v.sreg is not None
        op = blocks[b].instrs[i].op
        return ((op.kind is isa.Kind.ALU or op in _ALU_OPERANDS) and (b, i) not in paired
                and (v.word is None or len(words[(b, i)]) == 1))

    reached: dict[tuple[int, int], list] = {}         # definition -> the reads it reaches
    for key, defs in reads.items():
        for d in defs:
            reached.setdefault(d, []).append(key)
    dropped = set(fixed)
    while True:
        taken = {key: v for key, defs in reads.items()
                 if defs <= dropped and (v := value(defs)) is not None and qualifies(*key[:2], v)}
        still = {d for d in dropped if all(key in taken for key in reached.get(d, ()))}
        if still == dropped:
            return taken, dropped
        dropped = still


def machine_blocks(program: isa.Program) -> list[tuple[isa.MachineBlock, tuple[int, ...]]]:
    """Each block as the machine runs it, with the index in the program's block of each of its
    instructions: Fixed operands in place of the registers they read (`_fixed_reads`), the
    definitions only they read left out, and S2R a MOV of its Fixed special register."""
    taken, dropped = _fixed_reads(program)
    out = []
    for b, block in enumerate(program.blocks):
        kept = tuple(i for i in range(len(block.instrs)) if (b, i) not in dropped)
        instrs = []
        for i in kept:
            ins = block.instrs[i]
            if ins.op is isa.Op.S2R:
                ins = isa.Instr(isa.Op.MOV, ins.dst, (Fixed(sreg=ins.srcs[0].value),))
            instrs.append(replace(ins, srcs=tuple(taken.get((b, i, q), s) for q, s in enumerate(ins.srcs))))
        cond = taken.get((b, len(block.instrs), 0))
        out.append((isa.MachineBlock(instrs, block.term if cond is None else replace(block.term, cond=cond)), kept))
    return out


def _reads(operands: tuple[isa.Operand, ...], reg: int) -> bool:
    return any(isinstance(s, isa.Reg) and s.n == reg for s in operands)


def fits_pre_alu(ins: isa.Instr) -> bool:
    """An ALU op with at most one nonzero immediate (a PRE slot holds one) and no Fixed operand
    (the pre-ALU reads only the register file). A float op never pairs there (the pre-ALU has no
    FPU); it may be a pair's second instruction, its operands forwarded like an ALU op's."""
    return (isa.OP_SPEC[ins.op][0] is isa.Kind.ALU and not any(isinstance(s, Fixed) for s in ins.srcs)
            and sum(isinstance(s, isa.Imm) and s.value != 0 for s in ins.srcs) <= 1)


def _pairs_with_next(block: isa.MachineBlock, i: int, live: set[int]) -> bool:
    """Whether instruction i can run in the pre-ALU of instruction i + 1's pass: it is an ALU op
    with at most one nonzero immediate and nothing after instruction i + 1 reads its result (the
    terminator counts as after it)."""
    instrs = block.instrs
    if i + 1 >= len(instrs) or not fits_pre_alu(instrs[i]):
        return False
    d = instrs[i].dst.n
    if any(_reads(ins.srcs, d) for ins in instrs[i + 2:]):
        return False
    if block.term.kind is isa.Term.BRC and _reg(block.term.cond) == d and i + 2 < len(instrs):
        return False        # the terminator reads the pre-ALU's result only in the last instruction's pass
    return d not in live or any(ins.dst.n == d for ins in instrs[i + 1:])


def _pairs_with_terminator(block: isa.MachineBlock, live: set[int]) -> bool:
    """Whether the last instruction, which writes the BRC's condition, can run in the pre-ALU of
    the terminator's pass (the condition forwarded to the branch unit)."""
    last = block.instrs[-1]
    return fits_pre_alu(last) and last.dst.n not in live


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


def _src_code(operand) -> int:
    """SRC's code for where an operand comes from (words.SRC)."""
    if not isinstance(operand, Fixed):
        return 0
    return SRC_WORD if operand.word is not None else 1 + operand.sreg


def instr_words(ins: isa.Instr | None, pre: isa.Instr | None = None,
                cond: isa.Operand | Fixed = isa.ZERO) -> tuple[int, int, int, int, int]:
    """An instruction's ROM words (None: a terminator's pass without one); with `pre`, the
    instruction its pass runs first in the pre-ALU: operands that read pre's result are forwarded
    (register field r0, PRE.fwd: pre_words), and so is the terminator's condition `cond`
    (PRE.tfwd; a Fixed condition is in SRC)."""
    srcs = ins.srcs if ins is not None else ()
    words = [f.word for f in (*srcs, cond) if isinstance(f, Fixed) and f.word is not None]
    src = SRC.pack(**{q: _src_code(o) for q, o in zip("abc", srcs)}, cond=_src_code(cond),
                   word=words[0] if words else 0)
    if ins is None:
        return 0, 0, 0, 0, src
    regs, imms = [0, 0, 0], [0, 0, 0]
    for i, s in enumerate(srcs):
        if isinstance(s, isa.Reg) and not _forwarded(s, pre):
            regs[i] = s.n
        elif isinstance(s, isa.Imm):
            imms[i] = s.value
    fields = {"op": OPCODES.index(ins.op.name), "dst": ins.dst.n, "a": regs[0], "b": regs[1], "c": regs[2]}
    if isinstance(ins.mod, (isa.ShflMode, isa.VoteMode, isa.Rnd, isa.FCmp)):
        fields["mod"] = list(type(ins.mod)).index(ins.mod)
    elif isinstance(ins.mod, tuple):
        fields["mod"] = list(isa.AtomOp).index(ins.mod[1])
    space = ins.mod[0] if isinstance(ins.mod, tuple) else ins.mod
    if isinstance(space, isa.Space):
        fields["space"] = SPACES.index(space)
    return (ROM0.pack(**fields), *imms, src)


def _forwarded(operand, pre: isa.Instr | None) -> bool:
    """Whether `operand` reads the result of the pass's pre-ALU instruction `pre`."""
    return pre is not None and isinstance(operand, isa.Reg) and operand.n != 0 and operand.n == pre.dst.n


def pre_words(pre: isa.Instr, ins: isa.Instr | None = None, cond: isa.Operand | Fixed = isa.ZERO) -> tuple[int, int]:
    """A pre-ALU instruction's PRE word and its immediate (the one nonzero immediate, or 0); the
    word also says which operands of the pass's main instruction `ins` and whether its
    terminator's condition `cond` take pre's result."""
    regs, imm, which = [0, 0, 0], 0, 0
    for i, src in enumerate(pre.srcs):
        if isinstance(src, isa.Reg):
            regs[i] = src.n
        elif src.value:
            imm, which = src.value, 1 << i
    fwd = sum(1 << i for i, s in enumerate(ins.srcs if ins is not None else ()) if _forwarded(s, pre))
    return PRE.pack(op=OPCODES.index(pre.op.name), a=regs[0], b=regs[1], c=regs[2], imm=which, fwd=fwd,
                    tfwd=int(_forwarded(cond, pre))), imm


def encode_block(block: isa.MachineBlock, live: set[int], kept: tuple[int, ...] | None = None,
                 instructions: int | None = None, pc: int = 0) -> BlockCode:
    """The block's passes, ROM and PRE slots and TERM word (`block` as the machine runs it,
    `machine_blocks`; `live`: registers live after it; `kept`: each instruction's index in the
    program's block, which the passes name; `instructions`: that block's length; `pc`: its own
    pc, TERM's reconv when it has no reconvergence point)."""
    passes = block_passes(block, live)
    ins, term, last = block.instrs, block.term, passes[-1]
    cond = term.cond if term.kind is isa.Term.BRC else isa.ZERO

    def main(p):
        return None if p.main is None else ins[p.main]

    def pass_cond(p):
        return cond if p is last else isa.ZERO
    words = tuple(instr_words(main(p), None if p.pre is None else ins[p.pre], pass_cond(p))
                  for p in passes if p.slot < isa.BLOCK_SLOTS)
    pre = {p.slot: pre_words(ins[p.pre], main(p), pass_cond(p)) for p in passes if p.pre is not None}
    forwarded = last.pre is not None and ins[last.pre].dst.n == _reg(cond)     # the branch unit reads r0 and the pre-ALU
    none = pc if term.kind is isa.Term.BRC else 0       # a BRC's "no reconvergence point" (words.TERM)
    word = TERM.pack(target=max(term.target, 0), fallthrough=max(term.fallthrough, 0),
                     reconv=none if term.reconv < 0 else term.reconv,
                     op=list(isa.Term).index(term.kind), cond=0 if forwarded else _reg(cond), slot=last.slot,
                     exits=int(term.kind is isa.Term.BRC and term.target < 0))
    kept = kept if kept is not None else tuple(range(len(ins)))
    fixed = {(kept[i], q): s for i, x in enumerate(ins) for q, s in enumerate(x.srcs) if isinstance(s, Fixed)}
    index = {None: None, **dict(enumerate(kept))}
    passes = tuple(Pass(p.slot, index[p.main], index[p.pre]) for p in passes)
    return BlockCode(passes, words, pre, word, fixed, len(ins) if instructions is None else instructions)


def fits_rom(block: isa.MachineBlock, passes: tuple[Pass, ...]) -> bool:
    """Whether the ROM holds a block run in these passes: every pass that runs an instruction,
    and a terminator's pass whose condition is Fixed (its SRC word), in one of the BLOCK_SLOTS
    ROM slots; a bare terminator pass may take the slot after them (TERM.slot)."""
    *runs, last = passes
    bare = last.main is None and last.pre is None and not isinstance(block.term.cond, Fixed)
    return all(p.slot < isa.BLOCK_SLOTS for p in runs) and last.slot < isa.BLOCK_SLOTS + bare


def _as_run(program: isa.Program) -> list[tuple[isa.MachineBlock, tuple[int, ...], set[int]]]:
    """Each block as the machine runs it (`machine_blocks`), with its instructions' indices in
    the program's block and the registers live after it."""
    blocks = machine_blocks(program)
    lives = live_out(replace(program, blocks=[b for b, _ in blocks]))
    return [(b, kept, live) for (b, kept), live in zip(blocks, lives)]


def overflowing(program: isa.Program) -> list[int]:
    """The blocks whose passes the ROM cannot hold (`fits_rom`)."""
    return _overflowing(_as_run(program))


def _overflowing(run) -> list[int]:
    return [i for i, (b, _, live) in enumerate(run) if not fits_rom(b, block_passes(b, live))]


def encode(program: isa.Program) -> list[BlockCode]:
    """Every block of the program, as the machine runs it; MachineLimitError for a block whose
    passes the ROM cannot hold (the lowering packs blocks so that none is: blocks.form_blocks)."""
    run = _as_run(program)
    if over := _overflowing(run):
        raise MachineLimitError(f"block B{over[0]} of kernel {program.name} takes more than {isa.BLOCK_SLOTS} "
                                f"passes (isa.BLOCK_SLOTS, the ROM's slots a block)")
    for pc, b in enumerate(program.blocks):
        if b.term.kind is isa.Term.BRC and b.term.reconv == pc:
            raise MachineLimitError(f"block B{pc} of kernel {program.name} reconverges at itself; the TERM "
                                    f"word spells 'no reconvergence point' that way (a branch's immediate "
                                    f"post-dominator is never its own block)")
    return [encode_block(b, live, kept, len(original.instrs), pc)
            for pc, ((b, kept, live), original) in enumerate(zip(run, program.blocks))]
