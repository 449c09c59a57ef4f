"""PTX's fp32 instructions through the lowering and the interpreter, one instruction at a time.
Expected values come from numpy float32 (correctly rounded + - * / sqrt), glibc's fmaf and
gmpy2 (MPFR, every rounding mode), and the CUDA rules written out by hand (NaN 0x7FFFFFFF,
min/max, saturating conversions), never from qwengpu.fp32."""
from __future__ import annotations

import ctypes
import struct

import gmpy2
import numpy as np
import pytest
from test_lower import op_program, run_op

from qwengpu import isa
from qwengpu.errors import UnsupportedError
from qwengpu.toolchain.lower import lower
from qwengpu.toolchain.ptx import parse_ptx

NAN = 0x7FFFFFFF
EDGES = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
         0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3FC00000, 0x40490FDB, 0x33800000,
         0x4B000001, 0xCB7FFFFF, 0x4F000000, 0xCF000000, 0x4F800000, 0x3EFFFFFF]
RNG = np.random.default_rng(32)
RANDOM = [int(x) for x in RNG.integers(0, 2**32, 40, dtype=np.uint64)]
VALUES = EDGES + RANDOM


def f(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


def bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def is_nan(b: int) -> bool:
    return (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF) != 0


def expected(value: np.float32) -> int:
    """numpy's result with CUDA's NaN."""
    return NAN if np.isnan(value) else bits(value)


def run_f32(instr: str, *inputs: int) -> int:
    return run_op(instr, 32, (32,) * len(inputs), *inputs)


PAIRS = [(a, b) for a in EDGES for b in EDGES[::3]] + list(zip(RANDOM, RANDOM[::-1]))


@pytest.mark.parametrize("ptx_op, np_op", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                            ("div", np.divide)])
def test_arithmetic_round_to_nearest(ptx_op, np_op):
    with np.errstate(all="ignore"):
        for a, b in PAIRS:
            want = expected(np_op(f(a), f(b)))
            assert run_f32(f"{ptx_op}.rn.f32 {{d}}, {{a}}, {{b}}", a, b) == want, (ptx_op, hex(a), hex(b))


def test_plain_add_rounds_to_nearest():
    """add.f32 without a suffix: PTX's default rounding."""
    a, b = 0x3F800000, 0x33800000            # 1 + 2^-24: a tie, to even
    assert run_f32("add.f32 {d}, {a}, {b}", a, b) == 0x3F800000
    assert run_f32("add.f32 {d}, {a}, {b}", a, 0x33800001) == 0x3F800001


MPFR_MODES = {"rn": gmpy2.RoundToNearest, "rz": gmpy2.RoundToZero, "rm": gmpy2.RoundDown, "rp": gmpy2.RoundUp}


def mpfr_f32(op: str, mode, *xs) -> int:
    """The context method `op` on fp32 inputs (or mpz integers), rounded to fp32 by MPFR
    (subnormals included)."""
    ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=MPFR_MODES[mode])
    value = float(getattr(ctx, op)(*(gmpy2.mpfr(float(f(x))) if isinstance(x, int) else x for x in xs)))
    return NAN if value != value else struct.unpack("<I", struct.pack("<f", value))[0]


@pytest.mark.parametrize("mode", list(MPFR_MODES))
@pytest.mark.parametrize("ptx_op, op", [("add", "add"), ("mul", "mul"), ("div", "div")])
def test_arithmetic_directed_rounding(mode, ptx_op, op):
    for a, b in PAIRS[::4]:
        if is_nan(a) or is_nan(b):
            continue
        want = mpfr_f32(op, mode, a, b)
        assert run_f32(f"{ptx_op}.{mode}.f32 {{d}}, {{a}}, {{b}}", a, b) == want, (ptx_op, mode, hex(a), hex(b))


def test_fma_single_rounding():
    libm = ctypes.CDLL("libm.so.6")
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    cases = [(0x33800020, 0x3F7FFFC0, 0x3F800001)] + list(zip(RANDOM, RANDOM[1:], RANDOM[2:]))
    for a, b, c in cases:
        value = libm.fmaf(float(f(a)), float(f(b)), float(f(c)))
        want = NAN if value != value else bits(value)
        assert run_f32("fma.rn.f32 {d}, {a}, {b}, {c}", a, b, c) == want, (hex(a), hex(b), hex(c))
    assert run_f32("fma.rn.f32 {d}, {a}, {b}, {c}", 0x33800020, 0x3F7FFFC0, 0x3F800001) == 0x3F800001


def test_sqrt_and_rcp():
    with np.errstate(all="ignore"):
        for a in VALUES:
            assert run_f32("sqrt.rn.f32 {d}, {a}", a) == expected(np.sqrt(f(a))), hex(a)
            assert run_f32("rcp.rn.f32 {d}, {a}", a) == expected(np.float32(1) / f(a)), hex(a)


def test_neg_abs_canonical_nan_and_signed_zero():
    assert run_f32("neg.f32 {d}, {a}", 0x3F800000) == 0xBF800000
    assert run_f32("neg.f32 {d}, {a}", 0x00000000) == 0x80000000
    assert run_f32("neg.f32 {d}, {a}", 0x80000000) == 0x00000000
    assert run_f32("abs.f32 {d}, {a}", 0x80000000) == 0x00000000
    assert run_f32("abs.f32 {d}, {a}", 0x807FFFFF) == 0x007FFFFF          # subnormals kept
    assert run_f32("abs.f32 {d}, {a}", 0xFFC00001) == NAN
    assert run_f32("neg.f32 {d}, {a}", 0x7FC00000) == NAN


def test_min_max():
    assert run_f32("min.f32 {d}, {a}, {b}", 0x00000000, 0x80000000) == 0x80000000
    assert run_f32("min.f32 {d}, {a}, {b}", 0x80000000, 0x00000000) == 0x80000000
    assert run_f32("max.f32 {d}, {a}, {b}", 0x80000000, 0x00000000) == 0x00000000
    assert run_f32("max.f32 {d}, {a}, {b}", 0x7FC00000, 0xBF800000) == 0xBF800000   # NaN: the other
    assert run_f32("min.f32 {d}, {a}, {b}", 0x3F800000, 0xFFC00000) == 0x3F800000
    assert run_f32("min.f32 {d}, {a}, {b}", 0x7FC00000, 0xFFC00001) == NAN
    for a, b in PAIRS:
        if not (is_nan(a) or is_nan(b)) and (a | b) & 0x7FFFFFFF:
            assert run_f32("min.f32 {d}, {a}, {b}", a, b) == bits(min(f(a), f(b))), (hex(a), hex(b))


def test_setp():
    compare = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y and not (x != x or y != y),
               "lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
               "ge": lambda x, y: x >= y, "equ": lambda x, y: x == y or x != x or y != y,
               "neu": lambda x, y: x != y, "ltu": lambda x, y: not (x >= y), "geu": lambda x, y: not (x < y),
               "num": lambda x, y: x == x and y == y, "nan": lambda x, y: x != x or y != y}
    for cmp, fn in compare.items():
        for a, b in PAIRS[::2]:
            want = int(bool(fn(float(f(a)), float(f(b)))))
            assert run_op(f"setp.{cmp}.f32 {{d}}, {{a}}, {{b}}", 1, (32, 32), a, b) == want, (cmp, hex(a), hex(b))


@pytest.mark.parametrize("rounding, fn", [("rni", np.rint), ("rzi", np.trunc), ("rmi", np.floor), ("rpi", np.ceil)])
def test_cvt_float_to_int_saturates(rounding, fn):
    for a in VALUES:
        x = f(a)
        want_s = 0 if np.isnan(x) else int(np.clip(fn(np.float64(x)), -2**31, 2**31 - 1))
        want_u = 0 if np.isnan(x) else int(np.clip(fn(np.float64(x)), 0, 2**32 - 1))
        assert run_op(f"cvt.{rounding}.s32.f32 {{d}}, {{a}}", 32, (32,), a) == want_s & 0xFFFFFFFF, hex(a)
        assert run_op(f"cvt.{rounding}.u32.f32 {{d}}, {{a}}", 32, (32,), a) == want_u, hex(a)
        assert run_f32(f"cvt.{rounding}.f32.f32 {{d}}, {{a}}", a) == expected(np.float32(fn(x))), hex(a)


def test_cvt_narrow_destination_clamps():
    assert run_op("cvt.rzi.s16.f32 {d}, {a}", 16, (32,), bits(40000.0)) == 0x7FFF
    assert run_op("cvt.rzi.s16.f32 {d}, {a}", 16, (32,), bits(-40000.0)) == 0x8000
    assert run_op("cvt.rzi.u16.f32 {d}, {a}", 16, (32,), bits(-3.0)) == 0


@pytest.mark.parametrize("mode", list(MPFR_MODES))
def test_cvt_int_to_float(mode):
    for x in [0, 1, -1, 2**24 + 1, 2**31 - 1, -2**31, 0x7FFFFFC1, 123456789] + RANDOM[:10]:
        x &= 0xFFFFFFFF
        sx = x - 2**32 if x >= 2**31 else x
        want_s = mpfr_f32("add", mode, gmpy2.mpfr(sx, 64), gmpy2.mpfr(0))
        want_u = mpfr_f32("add", mode, gmpy2.mpfr(x, 64), gmpy2.mpfr(0))
        assert run_op(f"cvt.{mode}.f32.s32 {{d}}, {{a}}", 32, (32,), x) == want_s, (mode, sx)
        assert run_op(f"cvt.{mode}.f32.u32 {{d}}, {{a}}", 32, (32,), x) == want_u, (mode, x)


def test_sat_and_ftz():
    assert run_f32("add.rn.sat.f32 {d}, {a}, {b}", bits(0.75), bits(0.5)) == bits(1.0)
    assert run_f32("add.rn.sat.f32 {d}, {a}, {b}", bits(-0.75), bits(0.5)) == 0
    assert run_f32("cvt.sat.f32.f32 {d}, {a}", 0x7FC00000) == 0
    tiny = 0x00000010                                  # a subnormal
    assert run_f32("add.rn.f32 {d}, {a}, {b}", tiny, tiny) == 0x20
    assert run_f32("add.rn.ftz.f32 {d}, {a}, {b}", tiny, tiny) == 0
    assert run_f32("mul.rn.ftz.f32 {d}, {a}, {b}", 0x80800000, bits(0.5)) == 0x80000000   # result flushed


def test_copysign_moves_bits():
    assert run_f32("copysign.f32 {d}, {a}, {b}", 0x80000000, 0x3F800000) == 0xBF800000
    assert run_f32("copysign.f32 {d}, {a}, {b}", 0x00000000, 0xFFC00001) == 0x7FC00001


def test_predicated_float_op():
    prog = op_program("setp.gt.f32 %p1, {a}, {b}; @%p1 add.rn.f32 {d}, {a}, {b}; @!%p1 mov.b32 {d}, 0", 32,
                      (32, 32))
    assert any(i.op is isa.Op.FADD for blk in prog.blocks for i in blk.instrs)
    assert run_f32("setp.gt.f32 %p1, {a}, {b}; @%p1 add.rn.f32 {d}, {a}, {b}; @!%p1 mov.b32 {d}, 0",
                   bits(2.0), bits(1.0)) == bits(3.0)
    assert run_f32("setp.gt.f32 %p1, {a}, {b}; @%p1 add.rn.f32 {d}, {a}, {b}; @!%p1 mov.b32 {d}, 0",
                   bits(1.0), bits(2.0)) == 0


@pytest.mark.parametrize("instr, named", [("add.rn.f64 %rd9, %rd1, %rd2", "f64"),
                                          ("lg2.approx.f32 %r9, %r1", "lg2.approx.f32"),
                                          ("cvt.rn.f32.s64 %r9, %rd1", "64-bit integer to float"),
                                          ("cvt.rzi.s64.f32 %rd9, %r1", "float to 64-bit integer")])
def test_unsupported_float_instructions_are_named(instr, named):
    text = f""".version 6.3
.target sm_75
.address_size 32
.visible .entry k(.param .u32 k_param_0)
{{
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    {instr};
    ret;
}}"""
    with pytest.raises(UnsupportedError, match=named):
        lower(parse_ptx(text), "k")


def ulps_from(got: int, exact) -> float:
    """|got - exact| in units of the last place of fp32 at exact's binade (subnormal ulp below)."""
    e = max(int(gmpy2.floor(gmpy2.log2(abs(exact)))), -126) if exact else -126
    return abs(gmpy2.mpfr(float(f(got))) - exact) / gmpy2.mpfr(2) ** (e - 23)


def test_ex2_approx_within_ptx_bound():
    """PTX: ex2.approx.f32 has at most 2 ulp error across the full range."""
    xs = [bits(x) for x in np.concatenate([RNG.uniform(-1, 1, 600), RNG.uniform(-150, 128, 900)]).astype(np.float32)]
    gmpy2.get_context().precision = 100
    worst = max(ulps_from(run_f32("ex2.approx.f32 {d}, {a}", x), gmpy2.exp2(gmpy2.mpfr(float(f(x))))) for x in xs)
    assert worst <= 2, worst


def test_ex2_approx_special_values():
    ex2 = lambda a, ftz="": run_f32(f"ex2.approx{ftz}.f32 {{d}}, {{a}}", a)  # noqa: E731
    assert ex2(0x00000000) == ex2(0x80000000) == 0x3F800000
    assert ex2(bits(3.0)) == bits(8.0) and ex2(bits(-2.0)) == bits(0.25)
    assert ex2(0x7F800000) == 0x7F800000 and ex2(bits(128.0)) == 0x7F800000
    assert ex2(0xFF800000) == 0 and ex2(0xFFC00001) == NAN
    assert ex2(bits(-149.0)) == 0x00000001                 # the smallest subnormal, exactly
    assert ex2(bits(-130.0)) == 0x00080000 and ex2(bits(-130.0), ".ftz") == 0
