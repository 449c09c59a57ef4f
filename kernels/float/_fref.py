"""Host references for the float suite kernels (kernels/float/NAME.py), independent of qwengpu.

NumPy float32 does + - * / and sqrt correctly rounded to nearest even, one operation at a
time (every operand here is an np.float32: no float64 intermediate). What NumPy lacks is
done exactly with fractions.Fraction and rounded once to float32 by `round_f32`: fma, add,
mul, div and sqrt in every rounding mode, float <-> int conversions in every mode, and the
few library sequences (expf, logf, log2f) that the math library builds from those
operations, written out op by op as libdevice (clang) and NVRTC's math library both compile
them (and checked against math.exp/log/log2 within CUDA's ulp bounds, and the rounding
against MPFR, in tests/test_float_suite.py).

A spec imports this file by putting its own directory on sys.path (a name starting with _
is not a kernel to discover()).

CUDA's rules that the host does not follow, modelled here:
* every NaN an operation produces is the canonical NaN 0x7FFFFFFF (`canon`);
* min/max give the non-NaN operand and order -0 < +0 (`fmin`, `fmax`);
* float -> int conversions saturate and give 0 for NaN (`to_int`);
* global float atomics flush subnormal inputs and results to zero (`flush`).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

f32 = np.float32
NAN_BITS = 0x7FFF_FFFF
MODES = ("rn", "rz", "rm", "rp")
MAX_FINITE = Fraction((1 << 24) - 1) * Fraction(2) ** 104


def bits(x) -> int:
    """The 32 bits of a float32."""
    return int(np.array(x, np.float32).view(np.uint32))


def from_bits(b: int) -> np.float32:
    return np.array(b & 0xFFFF_FFFF, np.uint32).view(np.float32)[()]


def canon(x):
    """x with every NaN replaced by CUDA's canonical NaN (a scalar or an array)."""
    a = np.array(x, np.float32)
    a.view(np.uint32)[np.isnan(a)] = NAN_BITS
    return a if a.ndim else a[()]


def is_subnormal(x) -> bool:
    return bits(x) & 0x7F80_0000 == 0 and bits(x) & 0x007F_FFFF != 0


def flush(x) -> np.float32:
    """A subnormal to the zero of its sign (global float atomics, .ftz)."""
    return from_bits(bits(x) & 0x8000_0000) if is_subnormal(x) else f32(x)


def round_f32(q: Fraction, mode: str = "rn", negative_zero: bool = False) -> np.float32:
    """The exact rational q rounded once to float32 in `mode` (rn to nearest even, rz toward
    zero, rm toward -inf, rp toward +inf), subnormals kept, overflow as IEEE 754 says. An exact
    zero is -0 when `negative_zero`."""
    if mode not in MODES:
        raise ValueError(f"rounding mode {mode!r}")
    if q == 0:
        return f32(-0.0) if negative_zero else f32(0.0)
    negative, m = q < 0, abs(q)
    e = m.numerator.bit_length() - m.denominator.bit_length()   # 2^e <= m < 2^(e+2)
    if Fraction(2) ** e > m:
        e -= 1
    if Fraction(2) ** (e + 1) <= m:
        e += 1
    quantum = Fraction(2) ** (max(e, -126) - 23)                 # subnormals: 2^-149
    scaled = m / quantum
    low = scaled.numerator // scaled.denominator
    rest = scaled - low
    toward_inf = mode == ("rm" if negative else "rp")
    if rest == 0:
        n = low
    elif mode == "rn":
        n = low + (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2 == 1))
    else:
        n = low + toward_inf
    value = n * quantum
    if value > MAX_FINITE:
        away = mode == "rn" or toward_inf
        value = math.inf if away else float(MAX_FINITE)
        return f32(-value if negative else value)
    return f32(-float(value) if negative else float(value))       # exact: <= 24 significant bits


def exact(x) -> Fraction:
    return Fraction(float(x))


def fma(a, b, c, mode: str = "rn") -> np.float32:
    """fmaf(a, b, c): a*b+c with one rounding (PTX fma.rn/.rz/.rm/.rp.f32)."""
    a, b, c = f32(a), f32(b), f32(c)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        with np.errstate(all="ignore"):      # inf or NaN: float64 has the same special result
            return canon(f32(np.float64(a) * np.float64(b) + np.float64(c)))
    q = exact(a) * exact(b) + exact(c)
    if q == 0:     # IEEE 754: -0 when both addends are -0, or when they differ in sign and mode is rm
        product_negative = math.copysign(1, a) * math.copysign(1, b) < 0
        c_negative = math.copysign(1, c) < 0
        negative = (product_negative and c_negative) or (mode == "rm" and product_negative != c_negative)
        return round_f32(q, mode, negative_zero=negative)
    return round_f32(q, mode)


def add(a, b, mode: str = "rn") -> np.float32:
    """a + b in `mode` (rn is NumPy's own float32 add)."""
    if mode == "rn":
        with np.errstate(all="ignore"):
            return canon(f32(a) + f32(b))
    return fma(f32(1.0), a, b, mode)


def mul(a, b, mode: str = "rn") -> np.float32:
    """a * b in `mode` (a zero product keeps the sign rule of a product, not of an fma's sum)."""
    a, b = f32(a), f32(b)
    if not (np.isfinite(a) and np.isfinite(b)) or a == 0 or b == 0:
        with np.errstate(all="ignore"):
            return canon(a * b)
    return round_f32(exact(a) * exact(b), mode)


def div(a, b, mode: str = "rn") -> np.float32:
    """a / b in `mode` (PTX div.r<mode>.f32, __fdiv_r<mode>)."""
    a, b = f32(a), f32(b)
    if not (np.isfinite(a) and np.isfinite(b)) or b == 0:
        with np.errstate(all="ignore"):      # inf, NaN or a zero divisor: NumPy's special result
            return canon(a / b)
    if a == 0:
        return a / b                         # a signed zero
    return round_f32(exact(a) / exact(b), mode)


def sqrt(x, mode: str = "rn") -> np.float32:
    """The square root in `mode` (PTX sqrt.r<mode>.f32, __fsqrt_r<mode>): rounded from an integer
    square root 200 bits past float32's precision, where an inexact root lies strictly between
    two such neighbours and so rounds as the true root does."""
    x = f32(x)
    if not np.isfinite(x) or x <= 0:
        with np.errstate(all="ignore"):      # +-0, +inf, NaN, negatives: IEEE's special results
            return canon(np.sqrt(x))
    q = exact(x) * Fraction(2) ** 600                # 2^600 x, an integer: x >= 2^-149
    root = math.isqrt(q.numerator // q.denominator)
    if root * root == q:
        return round_f32(Fraction(root, 2 ** 300), mode)
    return round_f32((Fraction(root) + Fraction(1, 2)) / 2 ** 300, mode)


def fmin(a, b) -> np.float32:
    """PTX min.f32 (fminf): a NaN operand gives the other one, two NaNs the canonical NaN,
    -0 < +0."""
    a, b = f32(a), f32(b)
    if np.isnan(a) and np.isnan(b):
        return from_bits(NAN_BITS)
    if np.isnan(a) or np.isnan(b):
        return b if np.isnan(a) else a
    if a == b:
        return a if math.copysign(1, a) < 0 else b
    return a if a < b else b


def fmax(a, b) -> np.float32:
    a, b = f32(a), f32(b)
    if np.isnan(a) and np.isnan(b):
        return from_bits(NAN_BITS)
    if np.isnan(a) or np.isnan(b):
        return b if np.isnan(a) else a
    if a == b:
        return b if math.copysign(1, a) < 0 else a
    return a if a > b else b


def round_int(q: Fraction, mode: str) -> int:
    """q rounded to an integer in `mode` ("rn" ties to even)."""
    floor = q.numerator // q.denominator
    if mode == "rm" or q == floor:
        return floor
    if mode == "rp":
        return floor + 1
    if mode == "rz":
        return floor + (q < 0)
    rest = q - floor
    return floor + (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2 == 1))


def to_int(x, mode: str, signed: bool = True) -> int:
    """__float2int_<mode> / __float2uint_<mode> (PTX cvt.r<mode>i.s32/u32.f32): rounded,
    saturated to the 32-bit range, 0 for NaN."""
    lo, hi = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
    x = f32(x)
    if np.isnan(x):
        return 0
    if np.isinf(x):
        return hi if x > 0 else lo
    return min(max(round_int(exact(x), mode), lo), hi)


def from_int(v: int, mode: str) -> np.float32:
    """__int2float_<mode> / __uint2float_<mode>: the integer rounded once to float32."""
    return round_f32(Fraction(int(v)), mode)


def rint(x, mode: str) -> np.float32:
    """PTX cvt.r<mode>i.f32.f32: the integral value `mode` rounds x to (rintf: rn, truncf: rz,
    floorf: rm, ceilf: rp); the sign of zero kept, NaN canonical."""
    x = f32(x)
    if not np.isfinite(x):
        return canon(x)
    n = round_int(exact(x), mode)
    return round_f32(Fraction(n), "rn", negative_zero=math.copysign(1, x) < 0)


def ulps(got, want: float) -> float:
    """|got - want| in units of the last place of float32 at want (want: a float64 or exact
    value). A float32 inf counts as 2^128 against a finite want (the value past FLT_MAX); NaN
    matches only NaN."""
    got = float(got)
    if abs(want) >= 2.0 ** 128 - 2.0 ** 103:          # rounds to inf in float32
        want = math.copysign(math.inf, want)
    if math.isnan(want) or math.isnan(got):
        return 0.0 if math.isnan(want) and math.isnan(got) else math.inf
    if math.isinf(want):
        return 0.0 if got == want else math.inf
    if math.isinf(got):
        got = math.copysign(2.0 ** 128, got)
    e = min(max(math.frexp(want)[1] - 1, -126), 127) if want else -126
    return abs(got - want) / 2.0 ** (e - 23)


# -- the math library's sequences, op by op ---------------------------------------------------
# libdevice's __nv_expf / __nv_logf / __nv_log2f (clang) and NVRTC's built-in expf / logf /
# log2f compile to the same PTX; these follow it instruction by instruction.

def _ftz(x):
    return flush(x)


# ex2.approx.f32 as docs/isa.md (section 4a) defines it: x clamped to +-200, n = rint(x),
# f = x - n, 2^f by a degree-7 Taylor polynomial in fma steps, then 2^n in two exact scalings.
EX2_TAYLOR = (0x3F800000, 0x3F317218, 0x3E75FDF0, 0x3D635847, 0x3C1D955B, 0x3AAEC3FF, 0x39218489, 0x377FE5FE)


def ex2_approx(a, ftz: bool = True) -> np.float32:
    a = _ftz(a) if ftz else f32(a)
    x = fmin(fmax(a, f32(-200.0)), f32(200.0))
    n = rint(x, "rn")
    f = x - n
    p = from_bits(EX2_TAYLOR[-1])
    for c in reversed(EX2_TAYLOR[:-1]):
        p = fma(p, f, from_bits(c))
    k = to_int(n, "rn")
    half = k >> 1
    for part in (half, k - half):
        p = p * from_bits((part + 127) << 23)
    if np.isnan(a):
        return from_bits(NAN_BITS)
    return _ftz(p) if ftz else p


def expf(x) -> np.float32:
    """expf(x): the library's range reduction (j = round(x log2 e), r = x log2 e - j in two
    fma steps), ex2.approx.ftz of r, times 2^j."""
    x = f32(x)
    with np.errstate(all="ignore"):
        t = fma(x, from_bits(0x3BBB989D), f32(0.5))
        t = fmin(fmax(t, f32(0.0)), f32(1.0))                     # cvt.sat: NaN gives +0
        j = fma(t, from_bits(0x437C0000), from_bits(0x4B400001), "rm")
        k = j + from_bits(0xCB40007F)
        r = fma(x, from_bits(0x3FB8AA3B), -k)
        r = fma(x, from_bits(0x32A57060), r)
        scale = from_bits((bits(j) << 23) & 0xFFFF_FFFF)
        return canon(ex2_approx(r) * scale)


def _log_reduce(x, magic: int):
    """logf/log2f's reduction: x = 2^e m with m near 1 (subnormals scaled by 2^23 first)."""
    tiny = x < from_bits(0x0080_0000)
    xs = x * from_bits(0x4B00_0000) if tiny else x
    bias = from_bits(0xC1B8_0000) if tiny else f32(0.0)            # -23
    ix = bits(xs)
    e = ((ix + magic) & 0xFFFF_FFFF) & 0xFF80_0000
    m = from_bits((ix - e) & 0xFFFF_FFFF)
    ef = from_int(e - (1 << 32) if e >= 1 << 31 else e, "rn")
    return xs, ix, fma(ef, from_bits(0x3400_0000), bias), m + from_bits(0xBF80_0000)


def _log_specials(xs, ix, value):
    if ix > 0x7F7F_FFFF:                                           # negative, inf or NaN
        value = fma(xs, from_bits(0x7F80_0000), from_bits(0x7F80_0000))
    return from_bits(0xFF80_0000) if xs == 0 else canon(value)


LOGF_POLY = (0xBE055027, 0x3E1039F6, 0xBDF8CDCC, 0x3E0F2955, 0xBE2AD8B9, 0x3E4CED0B, 0xBE7FFF22,
             0x3EAAAA78, 0xBF000000)
LOG2F_POLY = (0x3DC6B27F, 0xBE2C7F30, 0x3E2FCF2A, 0xBE374E43, 0x3E520BF4, 0xBE763C8B, 0x3E93BF99,
              0xBEB8AA49, 0x3EF6384A, 0xBF38AA3B)


def _horner(coefficients, m):
    """The polynomial in m, highest coefficient first, in fma steps (libdevice's order)."""
    p = from_bits(coefficients[0])
    for c in coefficients[1:]:
        p = fma(p, m, from_bits(c))
    return p


def logf(x) -> np.float32:
    x = f32(x)
    with np.errstate(all="ignore"):
        xs, ix, e, m = _log_reduce(x, -1059760811)
        p = m * _horner(LOGF_POLY, m)
        p = fma(p, m, m)
        return _log_specials(xs, ix, fma(e, from_bits(0x3F317218), p))


def log2f(x) -> np.float32:
    x = f32(x)
    with np.errstate(all="ignore"):
        xs, ix, e, m = _log_reduce(x, -1060439283)
        p = m * _horner(LOG2F_POLY, m)
        p = m * p
        p = fma(m, from_bits(0x3FB8AA3B), p)
        return _log_specials(xs, ix, e + p)
