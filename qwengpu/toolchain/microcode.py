"""Micro-code: the ops an engine lacks, rewritten into ops it has (`lower(...,
expand=MODEL_EXPANSIONS)`, for the model engine, whose machine has no divider, no high
multiply, no float divider or square root and no float atomic).

Takes the cleaned-up virtual IR and the names of the ops to expand (from EXPANDABLE); gives
the same IR with MULHI/MULHIU as 16-bit-half partial products, DIV/DIVU/REM/REMU as a
shift-and-subtract loop (its own blocks), FDIV/FSQRT as FFMA sequences and ATOM.FADD as a
compare-and-swap loop (fmicro.py), and the next free virtual register. `share` (lower.py picks
the first of SHARE_LEVELS whose program fits the ROM): "inline", every FDIV and FSQRT in place;
"rare", the fast path in place and, where an operand or the result is not the common case, a call
of one shared subroutine per op (the whole sequence); "all", every use a call of it
(`MicroCode.call`, docs/float-circuit.md 2.15).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, clean_up, simplify
from qwengpu.toolchain.division import Division
from qwengpu.toolchain.fmicro import MODE_BITS, FloatMicroCode

Op, Imm, Term = isa.Op, isa.Imm, isa.Term

EXPANDABLE = frozenset({"MULHI", "MULHIU", "DIV", "DIVU", "REM", "REMU", "FDIV", "FSQRT", "ATOM.FADD"})
# the ops the model engine lacks (not in qwengpu/machine/build.py MODEL_OPS; ATOM.FADD: the
# atomic with that AtomOp):
# its programs come from lower(module, name, expand=MODEL_EXPANSIONS)
MODEL_EXPANSIONS = frozenset({"MULHI", "MULHIU", "DIV", "DIVU", "REM", "REMU", "FDIV", "FSQRT", "ATOM.FADD"})
SHARE_LEVELS = ("inline", "rare", "all")      # fewer ROM blocks a use, more instructions, in order
_DIV_PAIRS = {Op.DIVU: (Op.DIVU, Op.REMU), Op.REMU: (Op.DIVU, Op.REMU),
              Op.DIV: (Op.DIV, Op.REM), Op.REM: (Op.DIV, Op.REM)}


class MicroCode(FloatMicroCode, Division):
    """Rewrites MULHI/MULHIU/DIV/DIVU/REM/REMU in the virtual IR into exact
    sequences of the other ALU ops (division: division.py's divmod32).
    Scratch values get fresh virtual registers; a division splits its block
    (head -> loop -> the rest of the block), so the register allocator and the
    reconvergence rules see an ordinary loop."""

    def __init__(self, blocks: list[VBlock], ops: frozenset[Op], next_vreg: int, atom_fadd: bool = False,
                 share: str = "inline"):
        super().__init__(blocks, next_vreg)
        assert share in SHARE_LEVELS, share
        self.ops, self.atom_fadd_too, self.share = ops, atom_fadd, share
        self.subs: dict[Op, Subroutine] = {}        # FDIV and FSQRT as one subroutine each ("rare", "all")

    def expands(self, ins: VInstr) -> bool:
        if ins.op is Op.ATOM:
            return self.atom_fadd_too and ins.mod[1] is isa.AtomOp.FADD
        return ins.op in self.ops

    # -- the pass --------------------------------------------------------------
    def run(self) -> int:
        for i in range(len(self.blocks)):       # blocks added on the way are expanded already
            if any(self.expands(ins) for ins in self.blocks[i].instrs):
                if any(ins.op in (Op.FDIV, Op.FSQRT) and ins.op in self.ops for ins in self.blocks[i].instrs):
                    self.blocks[i].instrs = stores_first(self.blocks[i].instrs)
                self.expand_block(i)
        for op, sub in self.subs.items():
            self.subroutine_body(op, sub)
        return self.nvreg

    def expand_block(self, i: int) -> None:
        instrs, term = self.blocks[i].instrs, self.blocks[i].term
        self.blocks[i].instrs, self.blocks[i].term, self.cur = [], None, i     # a division ends it early
        shared: dict[int, object] = {}           # id(instr) -> value computed by an earlier expansion
        for k, ins in enumerate(instrs):
            self.line = ins.line
            if id(ins) in shared:
                self.emit(Op.MOV, shared[id(ins)], dst=ins.dst)
            elif not self.expands(ins):
                self.block.instrs.append(ins)
            elif ins.op is Op.ATOM:
                old = self.atom_fadd(ins)
                if ins.dst is not None:
                    self.emit(Op.MOV, old, dst=ins.dst)
            elif ins.op in (Op.FDIV, Op.FSQRT):
                if all(isinstance(s, Imm) for s in ins.srcs):         # constant operands
                    value = isa.FLOAT_SEMANTICS[ins.op.name](ins.mod, *(s.value for s in ins.srcs))
                    self.emit(Op.MOV, Imm(value), dst=ins.dst)
                elif self.share == "all":
                    self.emit(Op.MOV, self.call(ins.op, ins.srcs, ins.mod), dst=ins.dst)
                else:
                    f = self.fdiv if ins.op is Op.FDIV else self.fsqrt
                    rare = (lambda: self.call(ins.op, ins.srcs, ins.mod)) if self.share == "rare" else None
                    self.emit(Op.MOV, f(*ins.srcs, ins.mod, rare=rare), dst=ins.dst)
            elif ins.op in (Op.MULHIU, Op.MULHI):
                self.emit(Op.MOV, self.mulhi(*ins.srcs, signed=ins.op is Op.MULHI), dst=ins.dst)
            else:
                results = self.divmod(ins)
                for later in self.partners(instrs, k):
                    shared[id(later)] = results[later.op]
                self.emit(Op.MOV, results[ins.op], dst=ins.dst)
        self.block.term = term

    def partners(self, instrs: list[VInstr], k: int) -> list[VInstr]:
        """Later divisions/remainders of the same operands in this block that
        can reuse instrs[k]'s loop (no instruction in between changes an operand)."""
        first, found = instrs[k], []
        regs = {s for s in first.srcs if isinstance(s, int)}
        for ins in instrs[k:]:
            if ins is not first and ins.op in _DIV_PAIRS[first.op] and ins.op in self.ops and ins.srcs == first.srcs:
                found.append(ins)
            if ins.dst in regs:
                break
        return found

    # -- shared FDIV and FSQRT -------------------------------------------------
    def call(self, op: Op, srcs: list, mod):
        """A call of op's subroutine (made at the first call): its operands into the
        subroutine's registers, the call's number and rounding mode into one more (`site`:
        number << 4 | MODE_BITS[mode]), a jump to it, and its result, read in a new block where
        the subroutine's return chain comes back. The jump is a call: a JMP whose `fallthrough`
        names that block (cfg.VTerm)."""
        sub = self.subs.get(op)
        if sub is None:
            sub = self.subs[op] = Subroutine(self.new_block(), [self.new_vreg() for _ in srcs],
                                             self.new_vreg(), self.new_vreg())
        for reg, x in zip(sub.args, srcs):
            self.emit(Op.MOV, x, dst=reg)
        site = len(sub.returns) << 4 | MODE_BITS[mod]
        self.emit(Op.MOV, Imm(site), dst=sub.site)
        back = self.new_block()
        self.terminate(VTerm(Term.JMP, sub.entry, None, back))
        sub.returns.append((site, back))
        sub.modes.add(mod)
        self.cur = back
        return sub.result

    def subroutine_body(self, op: Op, sub: "Subroutine") -> None:
        """The subroutine: the inline sequence on its argument registers (the mode a constant
        when every call has the same one, else `site`, whose low 4 bits are MODE_BITS), then the
        return chain, a binary search on `site` (SETLTU and BRC blocks, one fewer than the
        calls, ceil(log2(calls)) of them on the way) ending in a jump to the call's block."""
        self.cur = sub.entry
        rnd = next(iter(sub.modes)) if len(sub.modes) == 1 else sub.site
        f = self.fdiv if op is Op.FDIV else self.fsqrt
        self.emit(Op.MOV, f(*sub.args, rnd), dst=sub.result)

        def chain(returns):
            if len(returns) == 1:
                self.terminate(VTerm(Term.JMP, returns[0][1]))
                return
            mid = len(returns) // 2
            low, high = self.new_block(), self.new_block()
            self.terminate(VTerm(Term.BRC, low, self.emit(Op.SETLTU, sub.site, Imm(returns[mid][0])), high))
            for block, part in ((low, returns[:mid]), (high, returns[mid:])):
                self.cur = block
                chain(part)
        chain(sub.returns)

    # -- multiplication --------------------------------------------------------
    def mulhi(self, a, b, signed: bool):
        """High word of a*b from 16-bit halves (Hacker's Delight 8-2): no partial
        sum overflows 32 bits. Signed: subtract b when a < 0 and a when b < 0."""
        e = self.emit
        a0, a1 = e(Op.AND, a, Imm(0xFFFF)), e(Op.SHR, a, Imm(16))
        b0, b1 = e(Op.AND, b, Imm(0xFFFF)), e(Op.SHR, b, Imm(16))
        t = e(Op.ADD, e(Op.MUL, a1, b0), e(Op.SHR, e(Op.MUL, a0, b0), Imm(16)))
        u = e(Op.ADD, e(Op.MUL, a0, b1), e(Op.AND, t, Imm(0xFFFF)))
        hi = e(Op.ADD, e(Op.ADD, e(Op.MUL, a1, b1), e(Op.SHR, t, Imm(16))), e(Op.SHR, u, Imm(16)))
        if signed:
            hi = e(Op.SUB, hi, e(Op.AND, b, e(Op.SRA, a, Imm(31))))
            hi = e(Op.SUB, hi, e(Op.AND, a, e(Op.SRA, b, Imm(31))))
        return hi

    # -- division --------------------------------------------------------------
    def divmod(self, ins: VInstr) -> dict:
        """{quotient op: q, remainder op: r} for ins's operands."""
        qop, rop = _DIV_PAIRS[ins.op]
        if simplify(ins.op, ins.srcs) is not None:          # constant operands
            a, b = (s.value for s in ins.srcs)
            return {qop: Imm(isa.ALU_SEMANTICS[qop.name](a, b)), rop: Imm(isa.ALU_SEMANTICS[rop.name](a, b))}
        q, r = self.divmod32(*ins.srcs, signed=qop is Op.DIV)
        return {qop: q, rop: r}


class Subroutine:
    """A shared FDIV or FSQRT: its entry block, argument, result and call registers, its calls
    (the `site` value each sets, the block it returns to, in order) and the modes they use."""

    def __init__(self, entry: int, args: list[int], result: int, site: int):
        self.entry, self.args, self.result, self.site = entry, args, result, site
        self.returns: list[tuple[int, int]] = []
        self.modes: set = set()


def stores_first(instrs: list[VInstr]) -> list[VInstr]:
    """Each ST moved up to just after the definition of its sources, past pure ALU and float
    ops only (never past another memory or warp op, so memory sees the same order): a value
    computed and stored, then dead, need not stay live across the long sequences that follow
    (fround_modes computes 28 results before it stores the first). Done to blocks with an FDIV
    or FSQRT to expand (others keep their order, and their programs)."""
    out: list[VInstr] = []
    for ins in instrs:
        k = len(out)
        if ins.op is Op.ST:
            regs = {s for s in ins.srcs if isinstance(s, int)}
            while k and out[k - 1].op.kind in (isa.Kind.ALU, isa.Kind.FLOAT) and out[k - 1].dst not in regs:
                k -= 1
        out.insert(k, ins)
    return out


def expand_ops(blocks: list[VBlock], names, next_vreg: int, share: str = "inline") -> int:
    """Micro-code the ALU ops `names` (a subset of EXPANDABLE) and clean up after (cfg.clean_up);
    returns the next free virtual register. Blocks without them stay as they are (so a kernel
    without them lowers to the same program with and without `expand`)."""
    ops = frozenset(Op[n] for n in names if n in Op.__members__)
    code = MicroCode(blocks, ops, next_vreg, atom_fadd="ATOM.FADD" in names, share=share)
    if not any(code.expands(ins) for b in blocks for ins in b.instrs):
        return next_vreg
    next_vreg = code.run()
    clean_up(blocks)
    return next_vreg
