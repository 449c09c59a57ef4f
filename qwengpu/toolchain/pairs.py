"""64-bit values as register pairs (lo, hi), low word first: the arithmetic the
translator's 64-bit PTX types and the 64-bit division (division.py) are made of.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.builder import Builder

Op, Imm = isa.Op, isa.Imm


class PairArithmetic(Builder):
    """64-bit operations on [lo, hi] pairs of operands, each returning a pair (or one
    word, for a comparison or a count)."""

    def add64(self, a, b):
        lo = self.emit(Op.ADD, a[0], b[0])
        carry = self.emit(Op.SETLTU, lo, a[0])
        return [lo, self.emit(Op.ADD, self.emit(Op.ADD, a[1], b[1]), carry)]

    def sub64(self, a, b):
        borrow = self.emit(Op.SETLTU, a[0], b[0])
        lo = self.emit(Op.SUB, a[0], b[0])
        return [lo, self.emit(Op.SUB, self.emit(Op.SUB, a[1], b[1]), borrow)]

    def negate_if(self, x: list, sign) -> list:
        """x when sign == 0, -x when sign == -1 (two's complement; a pair, or one word)."""
        flipped = [self.emit(Op.XOR, w, sign) for w in x]
        return self.sub64(flipped, [sign, sign]) if len(x) == 2 else [self.emit(Op.SUB, flipped[0], sign)]

    def mul64(self, a, b):
        lo = self.emit(Op.MUL, a[0], b[0])
        hi = self.emit(Op.MULHIU, a[0], b[0])
        hi = self.emit(Op.ADD, hi, self.emit(Op.MUL, a[0], b[1]))
        return [lo, self.emit(Op.ADD, hi, self.emit(Op.MUL, a[1], b[0]))]

    def mulhi64(self, a, b, signed):
        """High 64 bits of the 128-bit product, from 32-bit partial products."""
        a0, a1 = a
        b0, b1 = b
        p00h = self.emit(Op.MULHIU, a0, b0)
        p01l, p01h = self.emit(Op.MUL, a0, b1), self.emit(Op.MULHIU, a0, b1)
        p10l, p10h = self.emit(Op.MUL, a1, b0), self.emit(Op.MULHIU, a1, b0)
        p11l, p11h = self.emit(Op.MUL, a1, b1), self.emit(Op.MULHIU, a1, b1)

        def add_carry(x, y):
            s = self.emit(Op.ADD, x, y)
            return s, self.emit(Op.SETLTU, s, y)
        s, c1 = add_carry(p00h, p01l)          # column 1 (bits 32..63): only its carries matter
        s, c = add_carry(s, p10l)
        c1 = self.emit(Op.ADD, c1, c)
        t, c2 = add_carry(p01h, p10h)          # column 2 (bits 64..95)
        t, c = add_carry(t, p11l)
        c2 = self.emit(Op.ADD, c2, c)
        lo, c = add_carry(t, c1)
        c2 = self.emit(Op.ADD, c2, c)
        out = [lo, self.emit(Op.ADD, p11h, c2)]
        if signed:      # signed high half: subtract b when a < 0 and a when b < 0
            sa, sb = self.emit(Op.SRA, a1, Imm(31)), self.emit(Op.SRA, b1, Imm(31))
            out = self.sub64(out, [self.emit(Op.AND, b0, sa), self.emit(Op.AND, b1, sa)])
            out = self.sub64(out, [self.emit(Op.AND, a0, sb), self.emit(Op.AND, a1, sb)])
        return out

    def minmax64(self, a, b, signed, is_min):
        lt = self.cmp64("lt" if signed else "lo", a, b)
        x, y = (a, b) if is_min else (b, a)
        return [self.emit(Op.SEL, lt, x[0], y[0]), self.emit(Op.SEL, lt, x[1], y[1])]

    def cmp64(self, cmp: str, a, b):
        """a cmp b, 0 or 1: eq, ne; lt, le, gt, ge signed; lo, ls, hi, hs unsigned."""
        if cmp in ("eq", "ne"):
            diff = self.emit(Op.OR, self.emit(Op.XOR, a[0], b[0]), self.emit(Op.XOR, a[1], b[1]))
            return self.emit(Op.SETEQ if cmp == "eq" else Op.SETNE, diff, Imm(0))
        swap = cmp in ("gt", "le", "hi", "ls")     # a > b  ==  b < a
        if swap:
            a, b = b, a
        signed = cmp in ("lt", "le", "gt", "ge")
        strict = cmp in ("lt", "gt", "lo", "hi")
        # a < b: high words decide unless equal, then the low words (unsigned)
        hi_lt = self.emit(Op.SETLT if signed else Op.SETLTU, a[1], b[1])
        hi_eq = self.emit(Op.SETEQ, a[1], b[1])
        lo_lt = self.emit(Op.SETLTU, a[0], b[0])
        lt = self.emit(Op.OR, hi_lt, self.emit(Op.AND, hi_eq, lo_lt))
        # a > b is b < a; a <= b is !(b < a); a >= b is !(a < b)
        if strict:
            return lt
        return self.emit(Op.XOR, lt, Imm(1))

    def clz64(self, a):
        """Leading zero bits (64 for 0)."""
        hz = self.emit(Op.SETEQ, a[1], Imm(0))
        return self.emit(Op.SEL, hz, self.emit(Op.ADD, self.emit(Op.CLZ, a[0]), Imm(32)), self.emit(Op.CLZ, a[1]))

    def shift64(self, kind, a, n):
        """a shifted by the word n: kind "shl", "shr" (zero fill) or "sra" (sign fill)."""
        lo, hi = a
        if isinstance(n, Imm):        # constant amount: pick the halves at compile time
            k = min(n.value, 64)
            if kind == "shl":
                if k >= 32:
                    return [Imm(0), self.emit(Op.SHL, lo, Imm(k - 32))]
                return [self.emit(Op.SHL, lo, Imm(k)),
                        self.emit(Op.OR, self.emit(Op.SHL, hi, Imm(k)), self.emit(Op.SHR, lo, Imm(32 - k)))]
            fill = Imm(0) if kind == "shr" else self.emit(Op.SRA, hi, Imm(31))
            hop = Op.SHR if kind == "shr" else Op.SRA
            if k >= 32:
                return [self.emit(hop, hi, Imm(min(k - 32, 32))) if k < 64 else fill, fill]
            return [self.emit(Op.OR, self.emit(Op.SHR, lo, Imm(k)), self.emit(Op.SHL, hi, Imm(32 - k))),
                    self.emit(hop, hi, Imm(k))]
        # variable amount: ISA shifts give 0 (SRA: the sign) for amounts >= 32,
        # so the "wrong" half of each formula vanishes on its own.
        up = self.emit(Op.SUB, Imm(32), n)         # 32 - n (huge when n > 32)
        down = self.emit(Op.SUB, n, Imm(32))       # n - 32 (huge when n < 32)
        if kind == "shl":
            hi2 = self.emit(Op.OR, self.emit(Op.SHL, hi, n), self.emit(Op.SHR, lo, up))
            hi2 = self.emit(Op.OR, hi2, self.emit(Op.SHL, lo, down))
            return [self.emit(Op.SHL, lo, n), hi2]
        lo2 = self.emit(Op.OR, self.emit(Op.SHR, lo, n), self.emit(Op.SHL, hi, up))
        if kind == "shr":
            return [self.emit(Op.OR, lo2, self.emit(Op.SHR, hi, down)), self.emit(Op.SHR, hi, n)]
        big = self.emit(Op.SETGEU, n, Imm(32))
        lo2 = self.emit(Op.SEL, big, self.emit(Op.SRA, hi, down), lo2)
        return [lo2, self.emit(Op.SRA, hi, n)]
