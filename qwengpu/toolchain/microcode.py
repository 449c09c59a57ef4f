"""Micro-code: the ALU ops an engine lacks, rewritten into ops it has (`lower(...,
expand=MODEL_EXPANSIONS)`, for the model engine, whose machine has no divider and no high
multiply).

Takes the cleaned-up virtual IR and the names of the ops to expand (from EXPANDABLE); gives
the same IR with MULHI/MULHIU as 16-bit-half partial products and DIV/DIVU/REM/REMU as a
shift-and-subtract loop (its own blocks), and the next free virtual register.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, simplify

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
M32 = isa.MASK32

EXPANDABLE = frozenset({"MULHI", "MULHIU", "DIV", "DIVU", "REM", "REMU"})
# the ALU ops the model engine lacks (not in qwengpu/machine/build.py MODEL_OPS):
# its programs come from lower(module, name, expand=MODEL_EXPANSIONS)
MODEL_EXPANSIONS = frozenset({"MULHI", "MULHIU", "DIV", "DIVU", "REM", "REMU"})
_DIV_PAIRS = {Op.DIVU: (Op.DIVU, Op.REMU), Op.REMU: (Op.DIVU, Op.REMU),
              Op.DIV: (Op.DIV, Op.REM), Op.REM: (Op.DIV, Op.REM)}


class _MicroCode:
    """Rewrites MULHI/MULHIU/DIV/DIVU/REM/REMU in the virtual IR into exact
    sequences of the other ALU ops (division: a shift-and-subtract loop).
    Scratch values get fresh virtual registers; a division splits its block
    (head -> loop -> the rest of the block), so the register allocator and the
    reconvergence rules see an ordinary loop."""

    def __init__(self, blocks: list[VBlock], ops: frozenset[Op], next_vreg: int):
        self.blocks, self.ops, self.nvreg = blocks, ops, next_vreg
        self.cur, self.line = 0, 0

    def fresh(self) -> int:
        self.nvreg += 1
        return self.nvreg

    def emit(self, op: Op, *srcs, dst: int | None = None):
        """Append `dst = op(srcs)` (folded when the operands allow); returns the value."""
        srcs = list(srcs)
        folded = simplify(op, srcs) if op is not Op.MOV else None
        if folded is not None:
            op, srcs = Op.MOV, [folded]
        if dst is None:
            if op is Op.MOV:
                return srcs[0]
            dst = self.fresh()
        self.blocks[self.cur].instrs.append(VInstr(op, dst, srcs, None, self.line))
        return dst

    def new_block(self) -> int:
        self.blocks.append(VBlock())
        return len(self.blocks) - 1

    # -- the pass ----------------------------------------------------------------
    def run(self) -> int:
        for i in range(len(self.blocks)):       # blocks added on the way are expanded already
            if any(ins.op in self.ops for ins in self.blocks[i].instrs):
                self.expand_block(i)
        return self.nvreg

    def expand_block(self, i: int) -> None:
        instrs, term = self.blocks[i].instrs, self.blocks[i].term
        self.blocks[i].instrs, self.cur = [], i
        shared: dict[int, object] = {}           # id(instr) -> value computed by an earlier expansion
        for k, ins in enumerate(instrs):
            self.line = ins.line
            if id(ins) in shared:
                self.emit(Op.MOV, shared[id(ins)], dst=ins.dst)
            elif ins.op not in self.ops:
                self.blocks[self.cur].instrs.append(ins)
            elif ins.op in (Op.MULHIU, Op.MULHI):
                self.emit(Op.MOV, self.mulhi(*ins.srcs, signed=ins.op is Op.MULHI), dst=ins.dst)
            else:
                results = self.divmod(ins)
                for later in self.partners(instrs, k):
                    shared[id(later)] = results[later.op]
                self.emit(Op.MOV, results[ins.op], dst=ins.dst)
        self.blocks[self.cur].term = term

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

    # -- multiplication ------------------------------------------------------------
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

    # -- division ----------------------------------------------------------------------
    def divmod(self, ins: VInstr) -> dict:
        """{quotient op: q, remainder op: r} for ins's operands."""
        folded = simplify(ins.op, ins.srcs)
        if folded is not None:          # constant operands
            a, b = (s.value for s in ins.srcs)
            qop, rop = _DIV_PAIRS[ins.op]
            return {qop: Imm(isa.ALU_SEMANTICS[qop.name](a, b)), rop: Imm(isa.ALU_SEMANTICS[rop.name](a, b))}
        if ins.op in (Op.DIVU, Op.REMU):
            q, r = self.divmod_unsigned(*ins.srcs)
            return {Op.DIVU: q, Op.REMU: r}
        q, r = self.divmod_signed(*ins.srcs)
        return {Op.DIV: q, Op.REM: r}

    def divmod_signed(self, a, b):
        """On magnitudes, then C's signs: the quotient negative when the signs
        differ, the remainder with the dividend's sign. |INT_MIN| = 2^31 as an
        unsigned word, so INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 = 0;
        x % 0 = x falls out, x / 0 = -1 needs the final SEL."""
        e = self.emit
        sa, sb = e(Op.SRA, a, Imm(31)), e(Op.SRA, b, Imm(31))
        q, r = self.divmod_unsigned(e(Op.SUB, e(Op.XOR, a, sa), sa), e(Op.SUB, e(Op.XOR, b, sb), sb))
        sq = e(Op.XOR, sa, sb)
        q = e(Op.SEL, b, e(Op.SUB, e(Op.XOR, q, sq), sq), Imm(M32))
        return q, e(Op.SUB, e(Op.XOR, r, sa), sa)

    def divmod_unsigned(self, n, d):
        """Radix-4 restoring division with the divisor aligned under the dividend's top bit:
        ds = d << 2j, the largest even shift with ds's top bit at or below n's, then j + 1 steps,
        each taking quotient digit k = how many of ds, 2 ds, 3 ds fit in r (the machine's DIVQ4
        and DIVR4: one machine block per two quotient bits), while ds > d. The loop test is
        computed before the last shift, so the terminator shares that instruction's pass.
        n < d (and d = 0) skip the loop: q = 0 (d = 0: -1), r = n."""
        e = self.emit
        if isinstance(d, Imm) and d.value & (d.value - 1) == 0 and d.value:     # a power of two
            return e(Op.SHR, n, Imm(d.value.bit_length() - 1)), e(Op.AND, n, Imm(d.value - 1))
        q = e(Op.SEL, d, Imm(0), Imm(M32), dst=self.fresh())
        r = e(Op.MOV, n, dst=self.fresh())
        run = e(Op.SETLTU, e(Op.SUB, d, Imm(1)), n)      # d != 0 and d <= n
        if isinstance(run, Imm):        # a branch tests a register (a constant one folds away later)
            run = e(Op.MOV, run, dst=self.fresh())
        setup, loop, after = self.new_block(), self.new_block(), self.new_block()
        self.blocks[self.cur].term = VTerm(Term.BRC, setup, run, after)
        self.cur = setup
        shift = e(Op.AND, e(Op.SUB, e(Op.CLZ, d), e(Op.CLZ, n)), Imm(~1 & M32))
        ds = e(Op.SHL, d, shift, dst=self.fresh())
        self.blocks[self.cur].term = VTerm(Term.JMP, loop)
        self.cur = loop
        e(Op.DIVQ4, r, ds, q, dst=q)                # q = 4q + k
        e(Op.DIVR4, r, ds, dst=r)                   # r -= k ds
        more = e(Op.SETNE, ds, d)
        e(Op.SHR, ds, Imm(2), dst=ds)
        self.blocks[self.cur].term = VTerm(Term.BRC, loop, more, after)
        self.cur = after
        return q, r


def expand_ops(blocks: list[VBlock], names, next_vreg: int) -> int:
    """Micro-code the ALU ops `names` (a subset of EXPANDABLE); returns the next free virtual register."""
    return _MicroCode(blocks, frozenset(Op[n] for n in names), next_vreg).run()
