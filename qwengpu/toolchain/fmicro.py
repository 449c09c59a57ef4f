"""Float micro-code: FDIV, FSQRT (every rounding mode, exact as fp32.div and fp32.sqrt) and the
float atomic add ATOM.FADD, as ops the model engine has (integer ALU ops, FADD, FMUL, FFMA),
for microcode.py (docs/float-circuit.md 2.15 has the sequences and their proofs).

FDIV(a, b): a fast path for normal operands with a normal quotient, and two rare blocks:
  B0    ok = both exponent fields in 1..254; ma = +-1.f_a (the quotient's sign), nmb = -1.f_b;
        D = field(a) - field(b) (<< 23)
  NORM  (not ok) subnormals scaled by 2**24 (ma, nmb again; D corrected, clamped); a zero, inf
        or NaN operand: D = SIGN (out of range) and ma = the result
  CORE  y = RN(1/mb) by a quadratic seed and
        RCP_STEPS Newton steps; q0 = ma y, then two Markstein corrections (r = ma - mb q exact,
        q += r y), the last one RN; directed modes move q one ulp by the sign of the exact
        remainder; res = q + D
  FIX   (exponent out of 1..254, or a special operand) overflow per mode, a subnormal result
        rounded in integers from q and the remainder's sign, zero/inf/NaN as a * (1/b's class)
FSQRT(a): B0 ok = a positive normal; NORM scales a subnormal by 2**24; CORE: mx in [0.5, 2) with
  the exponent's parity, the 0x5f3759df seed, RSQ_STEPS Goldschmidt steps, the final FFMA RN,
  a directed mode's one-ulp move by the sign of s*s - mx; FIX: 2**-12 back, or the special value.
ATOM.FADD: a compare-and-swap loop with the FADD in between (global memory flushes subnormals).
The rounding mode is a Rnd (the inline sequences), or a register holding MODE_BITS (the shared
subroutines of microcode.py, called with several modes).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.fp32 import Rnd
from qwengpu.toolchain.cfg import VTerm

Op, Imm, Term = isa.Op, isa.Imm, isa.Term

SIGN, MAG, INF, FRAC, HIDDEN = 0x8000_0000, 0x7FFF_FFFF, 0x7F80_0000, 0x007F_FFFF, 0x0080_0000
ONE, NEG_ONE, HALF, NEG_HALF = 0x3F80_0000, 0xBF80_0000, 0x3F00_0000, 0xBF00_0000
MAX_FINITE, NAN = 0x7F7F_FFFF, 0x7FFF_FFFF
TWO_24, TWO_M12 = 0x4B80_0000, 0x3980_0000          # 2**24, 2**-12
NORMAL_SPAN = 0x7F00_0000                           # field - 1 < 254, in field << 23 units
# 1/m ~ 70/33 - 16/11 m + 32/99 m**2 on [1, 2] (relative error <= 1/99, equioscillating)
RCP_C0, RCP_C1, RCP_C2 = 0x4007_C1F0, 0x3FBA_2E8C, 0x3EA5_7EB5   # fp32(70/33), fp32(16/11), fp32(32/99)
RCP_STEPS = 3                                       # Newton steps: y = RN(1/m) but for m = 2 - 2**-23 (a tie there)
RSQ_MAGIC = 0x5F37_59DF                             # 1/sqrt(m) seed: MAGIC - (bits(m) >> 1)
RSQ_STEPS = 3                                       # Goldschmidt steps
UNDER = 0xBE00_0000     # (F - 1) << 23 at or above this: F <= 0 (F is at most 383, at least -128)
CLAMP = 200 << 23                                   # |field(a) - field(b)| above this: out of range anyway
# A rounding mode in a register's low 4 bits (the shared subroutines, microcode.py; the bits above
# are read by none of the mode's uses): bit 2s + t says whether a result q of sign s moves one ulp
# when the exact value lies toward zero (t = 1) or away (t = 0)
MODE_BITS = {Rnd.RN: 0b0000, Rnd.RZ: 0b1010, Rnd.RP: 0b1001, Rnd.RM: 0b0110}


class FloatMicroCode:
    """Mixed into microcode.MicroCode (a Builder): emits the sequences into the current block,
    splitting it where a sequence branches."""

    # -- helpers ---------------------------------------------------------------
    def unless(self, ok, body) -> None:
        """body() where ok is 0, in a block of its own; everything goes on in a new block."""
        if isinstance(ok, Imm):
            if not ok.value:
                body()
            return
        rare, after = self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, after, ok, rare))
        self.cur = rare
        body()
        self.terminate(VTerm(Term.JMP, after))
        self.cur = after

    def fop(self, op: Op, *srcs, rnd: Rnd = Rnd.RN, dst=None):
        return self.emit(op, *srcs, mod=rnd, dst=dst)

    # -- FDIV --------------------------------------------------------------------
    def significands(self, x, y, ma, nmb) -> None:
        """ma = +-1.f_x with the quotient's sign, nmb = -1.f_y."""
        e = self.emit
        e(Op.OR, e(Op.AND, e(Op.XOR, x, e(Op.AND, y, Imm(SIGN))), Imm(SIGN | FRAC)), Imm(ONE), dst=ma)
        e(Op.OR, e(Op.AND, y, Imm(FRAC)), Imm(NEG_ONE), dst=nmb)

    def fdiv(self, a, b, rnd, rare=None):
        """a / b rounded by rnd. rare(): where given, the fast path alone runs here, and where an
        operand or the result is not normal rare() (a call of the whole sequence: microcode.py)
        gives the quotient instead of the NORM and FIX blocks."""
        e = self.emit
        ma, nmb, vd, vres = (self.new_vreg() for _ in range(4))
        fa, fb = e(Op.AND, a, Imm(INF)), e(Op.AND, b, Imm(INF))
        ok = e(Op.SETLTU, e(Op.MAXU, e(Op.SUB, fa, Imm(HIDDEN)), e(Op.SUB, fb, Imm(HIDDEN))), Imm(NORMAL_SPAN))
        self.significands(a, b, ma, nmb)
        e(Op.SUB, fa, fb, dst=vd)

        def norm():         # subnormal operands scaled by 2**24; zero, inf, NaN: D = SIGN, ma = the result
            sa, sb = e(Op.SEL, fa, Imm(ONE), Imm(TWO_24)), e(Op.SEL, fb, Imm(ONE), Imm(TWO_24))
            x, y = self.fop(Op.FMUL, a, sa), self.fop(Op.FMUL, b, sb)
            fx, fy = e(Op.AND, x, Imm(INF)), e(Op.AND, y, Imm(INF))
            d = e(Op.MAX, e(Op.MIN, e(Op.SUB, fx, fy), Imm(CLAMP)), Imm(-CLAMP))
            d = e(Op.ADD, d, e(Op.SUB, sb, sa))             # bits(2**24) - bits(1) = 24 << 23
            special = e(Op.SETGEU, e(Op.MAXU, e(Op.SUB, fx, Imm(HIDDEN)), e(Op.SUB, fy, Imm(HIDDEN))), Imm(NORMAL_SPAN))
            e(Op.SEL, special, Imm(SIGN), d, dst=vd)        # F = field(q) + 256: out of range
            self.significands(x, y, ma, nmb)
            # a / b for zero, inf, NaN operands: a * (b with its exponent bits flipped: 0 <-> inf); NaN b stays
            w = e(Op.SEL, e(Op.SETLTU, Imm(INF), e(Op.AND, y, Imm(MAG))), y, e(Op.XOR, y, Imm(INF)))
            e(Op.SEL, special, self.fop(Op.FMUL, x, w), ma, dst=ma)
        if rare is None:
            self.unless(ok, norm)

        # CORE: the quotient of the significands, its sign included
        y = self.fop(Op.FFMA, self.fop(Op.FFMA, nmb, Imm(RCP_C2), Imm(RCP_C1)), nmb, Imm(RCP_C0))
        for _ in range(RCP_STEPS):
            y = self.fop(Op.FFMA, y, self.fop(Op.FFMA, nmb, y, Imm(ONE)), y)
        y = e(Op.ADD, y, e(Op.SETEQ, nmb, Imm(NEG_ONE | FRAC)))      # RN(1/(2 - 2**-23)) is 0.5 + 2**-24
        q = self.fop(Op.FMUL, ma, y)
        q = self.fop(Op.FFMA, self.fop(Op.FFMA, nmb, q, ma), y, q)
        q = self.fop(Op.FFMA, self.fop(Op.FFMA, nmb, q, ma), y, q)        # RN(ma / mb)
        if rnd is not Rnd.RN:       # a Rnd, or a register with MODE_BITS
            q = self.directed(q, self.fop(Op.FFMA, nmb, q, ma), rnd)
        e(Op.ADD, q, vd, dst=vres)
        fs = e(Op.ADD, e(Op.AND, q, Imm(INF)), vd)                      # the result's field << 23
        in_range = e(Op.SETLTU, e(Op.SUB, fs, Imm(HIDDEN)), Imm(NORMAL_SPAN))

        def fix():
            sq = e(Op.AND, q, Imm(SIGN))
            over = self.overflow(sq, rnd)
            under = self.subnormal(q, self.fop(Op.FFMA, nmb, q, ma), sq, fs, rnd)
            is_under = e(Op.SETGEU, e(Op.SUB, fs, Imm(HIDDEN)), Imm(UNDER))          # F <= 0
            e(Op.SEL, e(Op.SETEQ, vd, Imm(SIGN)), ma, e(Op.SEL, is_under, under, over), dst=vres)
        if rare is None:
            self.unless(in_range, fix)
        else:
            self.unless(e(Op.AND, ok, in_range), lambda: e(Op.MOV, rare(), dst=vres))
        return vres

    def directed(self, q, r, rnd):
        """q = RN(Q) moved one ulp to rnd's side of Q; r = ma - mb q (exact) has Q - q's sign.
        rnd: a Rnd, or a register whose low 4 bits are MODE_BITS[rnd] (RN: q stays)."""
        e = self.emit
        if not isinstance(rnd, Rnd):        # the mode in a register (MODE_BITS)
            t = e(Op.SHR, e(Op.XOR, r, q), Imm(31))                             # |Q| < |q| (if r != 0)
            bit = e(Op.AND, e(Op.SHR, rnd, e(Op.OR, e(Op.AND, e(Op.SHR, q, Imm(30)), Imm(2)), t)), Imm(1))
            move = e(Op.SEL, r, bit, Imm(0))
            return e(Op.SEL, t, e(Op.SUB, q, move), e(Op.ADD, q, move))
        opposite = e(Op.SEL, r, e(Op.SHR, e(Op.XOR, r, q), Imm(31)), Imm(0))   # |Q| < |q|
        toward_zero = e(Op.SUB, q, opposite)
        if rnd is Rnd.RZ:
            return toward_zero
        same = e(Op.SEL, r, e(Op.XOR, opposite, Imm(1)), Imm(0))               # |Q| > |q|
        away = e(Op.ADD, q, same)
        neg = e(Op.SHR, q, Imm(31))
        return e(Op.SEL, neg, toward_zero, away) if rnd is Rnd.RP else e(Op.SEL, neg, away, toward_zero)

    def overflow(self, sq, rnd: Rnd):
        """IEEE overflow of a result with sign bit sq: inf, or the largest finite toward zero."""
        e = self.emit
        if not isinstance(rnd, Rnd):        # MAX_FINITE where the mode moves toward zero (bit 2s + 1)
            bit = e(Op.AND, e(Op.SHR, rnd, e(Op.OR, e(Op.SHR, sq, Imm(30)), Imm(1))), Imm(1))
            return e(Op.OR, sq, e(Op.SUB, Imm(INF), bit))
        if rnd is Rnd.RN:
            return e(Op.OR, sq, Imm(INF))
        if rnd is Rnd.RZ:
            return e(Op.OR, sq, Imm(MAX_FINITE))
        neg = e(Op.SHR, sq, Imm(31))
        mag = e(Op.SUB, Imm(INF), neg) if rnd is Rnd.RP else e(Op.ADD, Imm(MAX_FINITE), neg)
        return e(Op.OR, sq, mag)

    def subnormal(self, q, r, sq, fs, rnd: Rnd):
        """The subnormal (or zero, or smallest normal) result: Q = q + r/mb (q within an ulp)
        as M = 4 sig(q) + sign(|Q| - |q|) in quarter ulps (never on a rounding boundary unless
        exact), rounded by rnd at the quantum 2**t quarter ulps, t = 3 - F (F <= 0), at most 28."""
        e = self.emit
        dirn = e(Op.SEL, r, e(Op.OR, e(Op.SRA, e(Op.XOR, r, q), Imm(31)), Imm(1)), Imm(0))
        m = e(Op.ADD, e(Op.SHL, e(Op.OR, e(Op.AND, q, Imm(FRAC)), Imm(HIDDEN)), Imm(2)), dirn)
        t = e(Op.MINU, e(Op.SUB, Imm(3), e(Op.SRA, fs, Imm(23))), Imm(28))
        if not isinstance(rnd, Rnd):        # RN (mode 0), else away where the mode moves away (bit 2s)
            half = e(Op.SHL, Imm(1), e(Op.SUB, t, Imm(1)))
            rn = e(Op.ADD, e(Op.SUB, half, Imm(1)), e(Op.AND, e(Op.SHR, m, t), Imm(1)))
            bit = e(Op.AND, e(Op.SHR, rnd, e(Op.SHR, sq, Imm(30))), Imm(1))
            away = e(Op.AND, e(Op.SUB, e(Op.SHL, Imm(1), t), Imm(1)), e(Op.SUB, Imm(0), bit))
            add = e(Op.SEL, e(Op.AND, rnd, Imm(0xF)), away, rn)
        elif rnd is Rnd.RZ:
            add = Imm(0)
        elif rnd is Rnd.RN:
            half = e(Op.SHL, Imm(1), e(Op.SUB, t, Imm(1)))
            add = e(Op.ADD, e(Op.SUB, half, Imm(1)), e(Op.AND, e(Op.SHR, m, t), Imm(1)))
        else:
            away = e(Op.SUB, e(Op.SHL, Imm(1), t), Imm(1))
            add = e(Op.SEL, sq, Imm(0), away) if rnd is Rnd.RP else e(Op.SEL, sq, away, Imm(0))
        return e(Op.OR, sq, e(Op.SHR, e(Op.ADD, m, add), t))

    # -- FSQRT -------------------------------------------------------------------
    def fsqrt(self, a, rnd, rare=None):
        """sqrt(a) rounded by rnd; rare() as in fdiv, for an operand that is not a positive normal."""
        e = self.emit
        mx, k, vres = self.new_vreg(), self.new_vreg(), self.new_vreg()

        def parts(x):       # mx in [0.5, 2) with x's exponent made even; k: the root's exponent << 23
            e(Op.OR, e(Op.AND, x, Imm(0x00FF_FFFF)), Imm(HALF), dst=mx)
            e(Op.SUB, e(Op.AND, e(Op.SHR, x, Imm(1)), Imm(0x3F80_0000)), Imm(63 << 23), dst=k)
        ok = e(Op.SETLTU, e(Op.SUB, a, Imm(HIDDEN)), Imm(NORMAL_SPAN))     # positive normal
        parts(a)
        if rare is None:
            self.unless(ok, lambda: parts(self.fop(Op.FMUL, a, Imm(TWO_24))))
        y0 = e(Op.SUB, Imm(RSQ_MAGIC), e(Op.SHR, mx, Imm(1)))
        g, nh = self.fop(Op.FMUL, mx, y0), self.fop(Op.FMUL, y0, Imm(NEG_HALF))   # sqrt, -1/(2 sqrt)
        for _ in range(RSQ_STEPS):
            t = self.fop(Op.FFMA, g, nh, Imm(HALF))
            g, nh = self.fop(Op.FFMA, g, t, g), self.fop(Op.FFMA, nh, t, nh)
        nmx = e(Op.XOR, mx, Imm(SIGN))
        s = self.fop(Op.FFMA, self.fop(Op.FFMA, g, g, nmx), nh, g)          # RN(sqrt(mx))
        if not isinstance(rnd, Rnd):                                        # mx - s*s, exact: mx - root's sign
            s = self.directed(s, self.fop(Op.FFMA, e(Op.XOR, s, Imm(SIGN)), s, mx), rnd)
        elif rnd is not Rnd.RN:
            d = self.fop(Op.FFMA, s, s, nmx)                                # s*s - mx, exact
            s = e(Op.SUB, s, e(Op.SRA, d, Imm(31)) if rnd is Rnd.RP else e(Op.SETGT, d, Imm(0)))
        e(Op.ADD, s, k, dst=vres)

        def fix():          # a positive subnormal: scale back; else the special result
            sub = e(Op.SETLTU, e(Op.SUB, a, Imm(1)), Imm(FRAC))
            keep = e(Op.OR, e(Op.SETEQ, e(Op.AND, a, Imm(MAG)), Imm(0)), e(Op.SETEQ, a, Imm(INF)))
            e(Op.SEL, sub, self.fop(Op.FMUL, vres, Imm(TWO_M12)), e(Op.SEL, keep, a, Imm(NAN)), dst=vres)
        if rare is None:
            self.unless(e(Op.SETLTU, e(Op.SUB, a, Imm(HIDDEN)), Imm(NORMAL_SPAN)), fix)
        else:
            self.unless(ok, lambda: e(Op.MOV, rare(), dst=vres))
        return vres

    # -- ATOM.FADD -----------------------------------------------------------------
    def flush(self, v):
        """A subnormal reads as a zero of its sign (global memory's float atomics)."""
        e = self.emit
        return e(Op.SEL, e(Op.AND, v, Imm(INF)), v, e(Op.AND, v, Imm(SIGN)))

    def atom_fadd(self, ins):
        """old = [addr]; loop { new = old + b; got = CAS([addr], old, new); retry while got != old }:
        the old value it returns and the word it leaves are ATOM.FADD's (isa.atom_semantics)."""
        e = self.emit
        space = ins.mod[0]
        addr, b = ins.srcs[0], ins.srcs[1]
        ftz = space is isa.Space.GLOBAL
        if ftz:
            b = self.flush(b)
        old = e(Op.LD, addr, Imm(0), mod=space, dst=self.new_vreg())
        loop, after = self.new_block(), self.new_block()
        self.switch_to(loop)
        new = self.fop(Op.FADD, self.flush(old) if ftz else old, b)
        if ftz:
            new = self.flush(new)
        got = e(Op.ATOM, addr, old, new, mod=(space, isa.AtomOp.CAS))
        retry = e(Op.SETNE, got, old)
        e(Op.MOV, got, dst=old)
        self.terminate(VTerm(Term.BRC, loop, retry, after))
        self.cur = after
        return old
