"""Division expanded into other instructions.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.cfg import VTerm
from qwengpu.toolchain.pairs import PairArithmetic

Op, Imm, Term = isa.Op, isa.Imm, isa.Term


class Division(PairArithmetic):
    def divmod64(self, n, d, signed):
        """64-bit division on magnitudes, then the C signs (quotient negative
        when the signs differ, remainder with the dividend's sign)."""
        if not signed:
            return self.udivmod64(n, d)
        sn, sd = self.emit(Op.SRA, n[1], Imm(31)), self.emit(Op.SRA, d[1], Imm(31))
        q, r = self.udivmod64(self.negate_if(n, sn), self.negate_if(d, sd))
        return self.negate_if(q, self.emit(Op.XOR, sn, sd)), self.negate_if(r, sn)

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
        qop, rop = (Op.DIVQ, Op.DIVR) if bits == 1 else (Op.DIVQ4, Op.DIVR4)
        loop, done = self.new_block(), self.new_block()
        self.switch_to(loop)
        e(qop, q, Imm(1 << 32 - bits), r, dst=r)    # r = 2^bits r + q's top bits
        e(qop, r, d, q, dst=q)                      # q = 2^bits q + r / d
        e(rop, r, d, dst=r)                         # r -= (r / d) d
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
        run = e(Op.AND, e(Op.XOR, d_zero, Imm(1)), e(Op.XOR, self.cmp64("lo", n, d), Imm(1)))
        if isinstance(run, Imm):        # a branch tests a register (a constant one folds away later)
            run = e(Op.MOV, run, dst=self.new_vreg())
        setup, loop, after = self.new_block(), self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, setup, run, after))
        self.cur = setup
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
