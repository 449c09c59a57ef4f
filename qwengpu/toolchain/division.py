"""Division as other instructions: the one place that knows how this toolchain divides.
The translator uses it for PTX's 64-bit div/rem, which no machine op does, and the
micro-code (microcode.py) for DIV/DIVU/REM/REMU on an engine without a divider (the
model's).

Every division here is restoring shift-and-subtract in radix-2 or radix-4 steps: the next
quotient digit is how many times the divisor (shifted) fits into the partial remainder,
which then loses that many divisors. On words the machine takes a step's digit and
subtraction in two ALU ops (`digit_step`): DIVQ and DIVR for one bit, DIVQ4 and DIVR4 for
two; a partial remainder of 64 bits, a register pair, finds its bit with compares and SELs.
Signed division divides the magnitudes and gives the results C's signs (`signed_divmod`).

  divmod32   a word by a word, exactly as isa.py's DIV/DIVU/REM/REMU: radix 4, the
             divisor aligned under the dividend's top bit, one step per two quotient bits
  divmod64   a pair by a pair: divisors 1 .. 2^31 word by word (32-bit divisions, then a
             radix-4 or radix-2 loop with the divisor in place), the others by a radix-2
             loop on pairs with the divisor aligned the same way
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.cfg import VTerm
from qwengpu.toolchain.pairs import PairArithmetic

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
M32 = isa.MASK32
STEP_OPS = {1: (Op.DIVQ, Op.DIVR), 2: (Op.DIVQ4, Op.DIVR4)}    # bits a step -> (digit op, remainder op)


class Division(PairArithmetic):
    """Quotient and remainder of a division, as instructions emitted in place (a loop
    splits the current block: its head, the loop's blocks, the block after)."""

    # -- what both widths share ------------------------------------------------
    def signed_divmod(self, n: list, d: list, unsigned):
        """C's signed n / d and n % d (one word or a pair each) from `unsigned` on their
        magnitudes: the quotient negative when the signs differ, the remainder with the
        dividend's sign. The most negative number's magnitude is itself read unsigned, so
        INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 = 0, and x % 0 = x falls out. A word's
        x / 0 is -1, as DIV has it (isa.py); C leaves a 64-bit x / 0 undefined."""
        e = self.emit
        sn, sd = e(Op.SRA, n[-1], Imm(31)), e(Op.SRA, d[-1], Imm(31))
        q, r = unsigned(self.negate_if(n, sn), self.negate_if(d, sd))
        q = self.negate_if(q, e(Op.XOR, sn, sd))
        if len(d) == 1:
            q = [e(Op.SEL, d[0], q[0], Imm(M32))]
        return q, self.negate_if(r, sn)

    def digit_step(self, q, r, d, bits: int) -> None:
        """One radix-2^bits step on words, r < 2^bits d before it: the next quotient digit
        k = r / d (below 2^bits) goes into q = 2^bits q + k, and r -= k d."""
        qop, rop = STEP_OPS[bits]
        self.emit(qop, r, d, q, dst=q)
        self.emit(rop, r, d, dst=r)

    def loop_if(self, run) -> tuple[int, int]:
        """A loop that runs only where `run` holds: the current block branches to a new
        set-up block, which becomes current, or past the loop. Returns the blocks of the
        loop and of what follows it."""
        if isinstance(run, Imm):        # a branch tests a register (a constant one folds away later)
            run = self.emit(Op.MOV, run, dst=self.new_vreg())
        setup, loop, after = self.new_block(), self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, setup, run, after))
        self.cur = setup
        return loop, after

    # -- 32 bits: the micro-code -----------------------------------------------
    def divmod32(self, n, d, signed: bool):
        """n / d and n % d on words: DIV and REM (signed), else DIVU and REMU."""
        if not signed:
            return self.udivmod32(n, d)
        (q,), (r,) = self.signed_divmod([n], [d], lambda n, d: [[v] for v in self.udivmod32(n[0], d[0])])
        return q, r

    def udivmod32(self, n, d):
        """Radix-4 restoring division with the divisor aligned under the dividend's top bit:
        ds = d << 2j, the largest even shift with ds's top bit at or below n's, then j + 1 steps,
        each taking quotient digit k = how many of ds, 2 ds, 3 ds fit in r (the machine's DIVQ4
        and DIVR4: one machine block per two quotient bits), while ds > d. The loop test is
        computed before the last shift, so the terminator shares that instruction's pass.
        n < d (and d = 0) skip the loop: q = 0 (d = 0: -1), r = n."""
        e = self.emit
        if isinstance(d, Imm) and d.value & (d.value - 1) == 0 and d.value:     # a power of two
            return e(Op.SHR, n, Imm(d.value.bit_length() - 1)), e(Op.AND, n, Imm(d.value - 1))
        q = e(Op.SEL, d, Imm(0), Imm(M32), dst=self.new_vreg())
        r = e(Op.MOV, n, dst=self.new_vreg())
        loop, after = self.loop_if(e(Op.SETLTU, e(Op.SUB, d, Imm(1)), n))      # d != 0, n >= d
        shift = e(Op.AND, e(Op.SUB, e(Op.CLZ, d), e(Op.CLZ, n)), Imm(~1 & M32))
        ds = e(Op.SHL, d, shift, dst=self.new_vreg())
        self.switch_to(loop)
        self.digit_step(q, r, ds, 2)
        more = e(Op.SETNE, ds, d)
        e(Op.SHR, ds, Imm(2), dst=ds)
        self.terminate(VTerm(Term.BRC, loop, more, after))
        self.cur = after
        return q, r

    # -- 64 bits: PTX's div/rem .u64/.s64 --------------------------------------
    def divmod64(self, n, d, signed: bool):
        """n / d and n % d on pairs, C's signed or unsigned division."""
        return self.signed_divmod(n, d, self.udivmod64) if signed else self.udivmod64(n, d)

    def udivmod64(self, n, d):
        """Unsigned 64-bit n / d and n % d. Divisors from 1 to 2^31 (the common
        case: a 64-bit type holding a small value) go by 32-bit pieces, which
        cost a few instructions per quotient bit instead of the 64-bit loop's
        dozen-odd; the rest (d = 0, d > 2^31) take the 64-bit loop."""
        e = self.emit
        q, r = [self.new_vreg(), self.new_vreg()], [self.new_vreg(), self.new_vreg()]

        def into_qr(path, *args):       # a path whose quotient and remainder go into q and r
            def run():
                qv, rv = path(*args)
                for dst, v in zip(q + r, qv + rv):
                    e(Op.MOV, v, dst=dst)
            return run
        narrow = e(Op.AND, e(Op.SETEQ, d[1], Imm(0)), e(Op.SETLTU, e(Op.SUB, d[0], Imm(1)), Imm(1 << 31)))
        self.branch(narrow, into_qr(self.udivmod64_by_word, n, d[0]), into_qr(self.udivmod64_loop, n, d))
        return q, r

    def udivmod64_by_word(self, n, d):
        """n / d for 1 <= d <= 2^31, schoolbook on words: the high word by a
        32-bit division (DIVU/REMU, micro-coded where the engine lacks them),
        then the low word with that remainder h < d in front: h:lo / d. When
        h = 0 that is a 32-bit division too; else a loop of radix-4 steps
        (two quotient bits each) for d <= 2^30, radix-2 steps for larger d,
        where the remainder has no room for two more bits (word_steps)."""
        e = self.emit
        qh, h = e(Op.DIVU, n[1], d), e(Op.REMU, n[1], d)
        ql, rl = self.new_vreg(), self.new_vreg()

        def word():
            e(Op.MOV, e(Op.DIVU, n[0], d), dst=ql)
            e(Op.MOV, e(Op.REMU, n[0], d), dst=rl)

        def steps():
            e(Op.MOV, h, dst=rl)
            e(Op.MOV, n[0], dst=ql)
            left = e(Op.MOV, Imm(32), dst=self.new_vreg())     # bits to go: set here, either loop counts it down
            self.branch(e(Op.SETLEU, d, Imm(1 << 30)),
                        lambda: self.word_steps(ql, rl, d, left, 2), lambda: self.word_steps(ql, rl, d, left, 1))
        self.branch(h, steps, word)
        return [ql, qh], [rl, Imm(0)]

    def word_steps(self, q, r, d, left, bits):
        """r:q / d for r < d, a loop of radix-2^bits steps that leaves the
        quotient in q and the remainder in r (`left` = 32 counts the bits to
        go). A step shifts r:q left by bits (DIVQ/DIVQ4 of q by 2^(32 - bits)
        is q's top bits), then q's new low digit is r / d, which r < 2^bits d
        keeps below 2^bits, and r loses that many d (DIVQ, DIVR or DIVQ4,
        DIVR4). r < d before a step must keep 2^bits r + 2^bits - 1 within 32
        bits: d <= 2^31 for radix 2, d <= 2^30 for radix 4. So d stays put (no
        aligned divisor shifts), and the step count is a constant every lane
        shares."""
        e = self.emit
        loop, done = self.new_block(), self.new_block()
        self.switch_to(loop)
        e(STEP_OPS[bits][0], q, Imm(1 << 32 - bits), r, dst=r)    # r = 2^bits r + q's top bits
        self.digit_step(q, r, d, bits)
        e(Op.SUB, left, Imm(bits), dst=left)
        self.terminate(VTerm(Term.BRC, loop, left, done))
        self.cur = done

    def udivmod64_loop(self, n, d):
        """Restoring division with the divisor aligned under the dividend's top
        bit: clz(d) - clz(n) + 1 steps instead of 64, each `if r >= ds: r -= ds`
        with the quotient bit shifted into q, then ds >>= 1. q starts as a
        sentinel bit that reaches bit 63 at the last step, so no counter
        register is live in the loop. n < d (and d = 0) skip the loop: q = 0
        (d = 0: all ones, as 64 steps would give), r = n."""
        e = self.emit
        d_zero = e(Op.SETEQ, e(Op.OR, d[0], d[1]), Imm(0))
        q = [e(Op.SUB, Imm(0), d_zero, dst=self.new_vreg()), e(Op.SUB, Imm(0), d_zero, dst=self.new_vreg())]
        r = [e(Op.MOV, n[0], dst=self.new_vreg()), e(Op.MOV, n[1], dst=self.new_vreg())]
        run = e(Op.AND, e(Op.XOR, d_zero, Imm(1)), e(Op.XOR, self.cmp64("lo", n, d), Imm(1)))   # d != 0, n >= d
        loop, after = self.loop_if(run)
        s = e(Op.SUB, self.clz64(d), self.clz64(n))
        ds = [e(Op.MOV, x, dst=self.new_vreg()) for x in self.shift64("shl", d, s)]
        for x, v in zip(q, self.shift64("shl", [Imm(1), Imm(0)], e(Op.SUB, Imm(63), s))):
            e(Op.MOV, v, dst=x)
        self.switch_to(loop)
        last = e(Op.SHR, q[1], Imm(31))             # the sentinel is at bit 63
        borrow = e(Op.SETLTU, r[0], ds[0])
        lt = e(Op.OR, e(Op.SETLTU, r[1], ds[1]), e(Op.AND, e(Op.SETEQ, r[1], ds[1]), borrow))   # r < ds
        e(Op.SEL, lt, r[0], e(Op.SUB, r[0], ds[0]), dst=r[0])
        e(Op.SEL, lt, r[1], e(Op.SUB, e(Op.SUB, r[1], ds[1]), borrow), dst=r[1])
        e(Op.DIVQ, q[0], Imm(1 << 31), q[1], dst=q[1])    # q <<= 1 shifting in ~lt: 2 q1 + [q0 >= 2^31]
        e(Op.DIVQ, Imm(0), lt, q[0], dst=q[0])            # 2 q0 + [0 >= lt]
        e(Op.OR, e(Op.SHR, ds[0], Imm(1)), e(Op.SHL, ds[1], Imm(31)), dst=ds[0])
        e(Op.SHR, ds[1], Imm(1), dst=ds[1])
        self.terminate(VTerm(Term.BRC, after, last, loop))
        self.cur = after
        return q, r
