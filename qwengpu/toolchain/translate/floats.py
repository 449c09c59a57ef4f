"""The translator's fp32 instructions: arithmetic, comparisons, conversions and the float
atomics, as isa's FLOAT ops (semantics: fp32.py). `f32_<name>` handles `<name>...f32`;
instructions whose .f32 only moves bits (mov, ld, st, selp, shfl) take the integer handlers.

PTX's rounding suffixes become the instruction's Rnd; an add, sub or mul without one rounds to
nearest (PTX's default; the project's front ends always write it). `.ftz` flushes subnormal
inputs and results to zero around the op, `.sat` clamps the result to [0, 1].
"""
from __future__ import annotations

from qwengpu import fp32, isa
from qwengpu.fp32 import Rnd
from qwengpu.toolchain.ptx import TYPE_BITS
from qwengpu.toolchain.translate.core import FLOAT_TYPES, TranslatorBase

Op, Imm = isa.Op, isa.Imm
ROUNDING = {"rn": Rnd.RN, "rz": Rnd.RZ, "rm": Rnd.RM, "rp": Rnd.RP}
INTEGRAL = {"rni": Rnd.RN, "rzi": Rnd.RZ, "rmi": Rnd.RM, "rpi": Rnd.RP}   # to an integral value
BIT_MOVES = {"mov", "ld", "st", "selp", "shfl", "ldu"}
EXPONENT = fp32.POS_INF          # the exponent field's bits
NEG_ZERO = Imm(fp32.SIGN)
ONE = Imm(fp32.ONE)
# ex2.approx's polynomial: 2^f = sum (ln 2)^i f^i / i!, i = 0..7, in fp32, on |f| <= 1/2 (within
# 0.8 ulp there with fma Horner steps; tests/test_float_lower.py checks the bound against MPFR)
EX2_TAYLOR = (0x3F800000, 0x3F317218, 0x3E75FDF0, 0x3D635847, 0x3C1D955B, 0x3AAEC3FF, 0x39218489, 0x377FE5FE)
EX2_LIMIT = 0x43480000          # 200.0: past it 2^x is inf or 0 in every mode


class FloatOps(TranslatorBase):
    """f32_<name> for PTX's .f32 instructions."""

    def float_handler(self, ins, parts):
        """The handler of an instruction with a float type, or an UnsupportedError naming it."""
        types = {p for p in parts[1:] if p in FLOAT_TYPES and p != "f32"}
        if types:
            self.unsupported(f"{ins.opcode}: {'/'.join(sorted(types))} is not supported (qwengpu runs fp32)")
        handler = getattr(self, f"f32_{parts[0]}", None)
        if handler is None and parts[0] in BIT_MOVES:
            return getattr(self, f"op_{parts[0]}")
        if handler is None:
            self.unsupported(f"fp32 instruction {ins.opcode} is not supported")
        return handler

    # -- operands ----------------------------------------------------------------
    @staticmethod
    def rounding(parts, table=ROUNDING) -> Rnd:
        """The instruction's rounding suffix (none: to nearest, PTX's default)."""
        found = [table[p] for p in parts[1:] if p in table]
        return found[0] if found else Rnd.RN

    def sources(self, ins, parts, count: int | None = None) -> list:
        """The instruction's first `count` float sources (.ftz: subnormals read as zero)."""
        values = [self.read1(o, 32) for o in ins.operands[1:][:count]]
        return [self.flush(v) for v in values] if "ftz" in parts else values

    def flush(self, v):
        """v, or its sign's zero when v is subnormal (.ftz)."""
        is_tiny = self.emit(Op.SETEQ, self.emit(Op.AND, v, Imm(EXPONENT)), Imm(0))
        return self.emit(Op.SEL, is_tiny, self.emit(Op.AND, v, NEG_ZERO), v)

    def result(self, ins, parts, v) -> None:
        """Write a float result: .ftz flushes it, .sat clamps it to [0, 1] (NaN to +0)."""
        if "ftz" in parts:
            v = self.flush(v)
        if "sat" in parts:
            v = self.emit(Op.FMIN, self.emit(Op.FMAX, v, Imm(0)), ONE)
        self.put(ins.operands[0], [v], 32)

    def arithmetic(self, ins, parts, op) -> None:
        self.result(ins, parts, self.emit(op, *self.sources(ins, parts), mod=self.rounding(parts)))

    # -- arithmetic ----------------------------------------------------------------
    def f32_add(self, ins, parts):
        self.arithmetic(ins, parts, Op.FADD)

    def f32_sub(self, ins, parts):
        self.arithmetic(ins, parts, Op.FSUB)

    def f32_mul(self, ins, parts):
        self.arithmetic(ins, parts, Op.FMUL)

    def f32_fma(self, ins, parts):
        self.arithmetic(ins, parts, Op.FFMA)

    f32_mad = f32_fma

    def f32_div(self, ins, parts):
        # div.approx and div.full are defined as the correctly rounded quotient (docs/isa.md)
        self.arithmetic(ins, parts, Op.FDIV)

    def f32_sqrt(self, ins, parts):
        self.arithmetic(ins, parts, Op.FSQRT)      # sqrt.approx: the correctly rounded root

    def f32_rcp(self, ins, parts):
        [a] = self.sources(ins, parts)
        self.result(ins, parts, self.emit(Op.FDIV, ONE, a, mod=self.rounding(parts)))

    def f32_rsqrt(self, ins, parts):
        """rsqrt.approx: 1 / sqrt(a), each correctly rounded (within PTX's 2^-22.9 bound)."""
        [a] = self.sources(ins, parts)
        self.result(ins, parts, self.emit(Op.FDIV, ONE, self.emit(Op.FSQRT, a, mod=Rnd.RN), mod=Rnd.RN))

    def f32_ex2(self, ins, parts):
        """ex2.approx: 2^a, defined here as fp32 ops (docs/isa.md, section 4a). With a clamped
        to +-200, n = round(a) and f = a - n (exact), 2^f is a Taylor polynomial (Horner, fma)
        and 2^n scales it in two exact powers of two, so that the last multiply rounds once
        (subnormal results, overflow)."""
        [a] = self.sources(ins, parts)
        x = self.emit(Op.FMIN, self.emit(Op.FMAX, a, Imm(EX2_LIMIT | fp32.SIGN)), Imm(EX2_LIMIT))
        n = self.emit(Op.FRND, x, mod=Rnd.RN)
        f = self.emit(Op.FSUB, x, n, mod=Rnd.RN)
        p = Imm(EX2_TAYLOR[-1])
        for c in reversed(EX2_TAYLOR[:-1]):
            p = self.emit(Op.FFMA, p, f, Imm(c), mod=Rnd.RN)
        k = self.emit(Op.F2I, n, mod=Rnd.RN)
        half = self.emit(Op.SRA, k, Imm(1))
        for part in (half, self.emit(Op.SUB, k, half)):
            power = self.emit(Op.SHL, self.emit(Op.ADD, part, Imm(127)), Imm(23))
            p = self.emit(Op.FMUL, p, power, mod=Rnd.RN)
        is_nan = self.emit(Op.FSET, a, a, mod=isa.FCmp.NAN)
        self.result(ins, parts, self.emit(Op.SEL, is_nan, Imm(fp32.NAN), p))

    def f32_neg(self, ins, parts):
        """-a as the GPU computes it (-0 - a): a NaN comes out as the canonical NaN."""
        [a] = self.sources(ins, parts)
        self.result(ins, parts, self.emit(Op.FSUB, NEG_ZERO, a, mod=Rnd.RN))

    def f32_abs(self, ins, parts):
        """|a| as the GPU computes it (|a| + -0): a NaN comes out as the canonical NaN."""
        [a] = self.sources(ins, parts)
        self.result(ins, parts, self.emit(Op.FADD, self.emit(Op.AND, a, Imm(fp32.MAGNITUDE)), NEG_ZERO,
                                          mod=Rnd.RN))

    def f32_min(self, ins, parts):
        self.min_max(ins, parts, Op.FMIN)

    def f32_max(self, ins, parts):
        self.min_max(ins, parts, Op.FMAX)

    def min_max(self, ins, parts, op):
        if "NaN" in parts or "xorsign" in parts:
            self.unsupported(f"{ins.opcode} is not supported")
        self.result(ins, parts, self.emit(op, *self.sources(ins, parts)))

    def f32_copysign(self, ins, parts):
        """copysign.f32 d, a, b: b's magnitude with a's sign (bits: a NaN keeps its payload)."""
        a, b = (self.read1(o, 32) for o in ins.operands[1:])
        magnitude = self.emit(Op.AND, b, Imm(fp32.MAGNITUDE))
        self.put(ins.operands[0], [self.emit(Op.OR, magnitude, self.emit(Op.AND, a, NEG_ZERO))], 32)

    # -- comparisons -----------------------------------------------------------------
    def f32_setp(self, ins, parts):
        flag = self.emit(Op.FSET, *self.sources(ins, parts, 2), mod=isa.FCmp(parts[1]))
        self.set_predicate(ins, parts, flag)

    # -- conversions -----------------------------------------------------------------
    def f32_cvt(self, ins, parts):
        types = [p for p in parts[1:] if p in TYPE_BITS]
        if len(types) != 2:
            self.unsupported(f"{ins.opcode}: expected cvt.dtype.stype")
        dst, src = types
        if dst == "f32" and src == "f32":
            [v] = self.sources(ins, parts)
            if any(p in INTEGRAL for p in parts):
                v = self.emit(Op.FRND, v, mod=self.rounding(parts, INTEGRAL))
            self.result(ins, parts, v)
        elif dst == "f32":
            self.int_to_float(ins, parts, src)
        else:
            self.float_to_int(ins, parts, dst)

    def int_to_float(self, ins, parts, src):
        bits, signed = TYPE_BITS[src], src.startswith("s")
        if bits == 64:
            self.unsupported(f"{ins.opcode}: 64-bit integer to float is not supported yet")
        v = self.read1(ins.operands[1], bits)
        v = self.sext(v, bits) if signed else v
        self.result(ins, parts, self.emit(Op.I2F if signed else Op.U2F, v, mod=self.rounding(parts)))

    def float_to_int(self, ins, parts, dst):
        """F2I/F2U saturate to 32 bits; a narrower destination clamps again to its range."""
        bits, signed = TYPE_BITS[dst], dst.startswith("s")
        if bits == 64:
            self.unsupported(f"{ins.opcode}: float to 64-bit integer is not supported yet")
        [v] = self.sources(ins, parts)
        v = self.emit(Op.F2I if signed else Op.F2U, v, mod=self.rounding(parts, INTEGRAL))
        if bits < 32 and signed:
            v = self.emit(Op.MAX, self.emit(Op.MIN, v, Imm((1 << (bits - 1)) - 1)), Imm(isa.u32(-(1 << (bits - 1)))))
        elif bits < 32:
            v = self.emit(Op.MINU, v, Imm((1 << bits) - 1))
        v = self.trunc(v, bits)
        self.put(ins.operands[0], [v], bits, signed)

    # -- atomics ---------------------------------------------------------------------
    def f32_atom(self, ins, parts, has_dst=True):
        if "add" not in parts:
            self.unsupported(f"{ins.opcode}: of the fp32 atomics only add is supported")
        self.atomic(ins, parts, isa.AtomOp.FADD, has_dst)

    def f32_red(self, ins, parts):
        self.f32_atom(ins, parts, has_dst=False)

