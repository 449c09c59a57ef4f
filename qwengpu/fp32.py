"""Exact fp32 arithmetic as CUDA and PTX define it, on 32-bit bit patterns.

Every value is a Python int 0..2**32-1 holding an IEEE-754 binary32 pattern. Each operation
decodes its operands to sign, integer significand and exponent, computes the exact result with
Python's unbounded ints and rounds once, in round_pack. No host float is involved, so the bits
never depend on the host FPU. On top of IEEE-754's correctly rounded results come CUDA's rules:

- every NaN result is the canonical NAN (0x7FFFFFFF), whatever the input payloads;
- ftz=True (PTX .ftz) reads subnormal inputs as zeros of the same sign and flushes subnormal
  results (after rounding) to such zeros;
- min/max, setp comparisons, float->int conversion (clamped, NaN -> 0) and .sat as in the PTX ISA.

It sits on the lowest floor beside isa.py and imports nothing from qwengpu.
"""
from __future__ import annotations

import enum
import math


class Rnd(enum.Enum):
    """PTX rounding modifiers. Float results use .rn/.rz/.rm/.rp; the integer roundings
    .rni/.rzi/.rmi/.rpi (cvt to an int, or to an integral float) use the same four."""
    RN = "rn"  # nearest, ties to even
    RZ = "rz"  # toward zero
    RM = "rm"  # toward -inf
    RP = "rp"  # toward +inf


SIGN = 0x8000_0000
MAGNITUDE = 0x7FFF_FFFF
NAN = 0x7FFF_FFFF            # CUDA's canonical NaN: the result of every NaN-producing op
POS_INF = 0x7F80_0000
NEG_INF = 0xFF80_0000
ONE = 0x3F80_0000
MAX_FINITE = 0x7F7F_FFFF
FRAC_BITS = 23
HIDDEN = 1 << FRAC_BITS      # the implicit leading 1 of a normal significand
MIN_QUANTUM = -149           # exponent of the last significand bit of subnormals and 2**-126
MAX_TOP = 127                # largest exponent of a finite value's leading bit
BIAS_FROM_QUANTUM = 150      # exponent field = quantum + 150 for a normal value


# ---------------------------------------------------------------------------
# Classes and decoding
# ---------------------------------------------------------------------------
def is_nan(a: int) -> bool:
    return (a & MAGNITUDE) > POS_INF


def is_inf(a: int) -> bool:
    return (a & MAGNITUDE) == POS_INF


def is_zero(a: int) -> bool:
    return (a & MAGNITUDE) == 0


def flush(a: int, ftz: bool = True) -> int:
    """PTX .ftz on an input: a subnormal (exponent field 0) reads as a zero of its sign."""
    return a & SIGN if ftz and (a & POS_INF) == 0 else a


def _inf(sign: int) -> int:
    return (sign << 31) | POS_INF


def _decode(a: int) -> tuple[int, int, int]:
    """A finite pattern as (sign, significand, exponent): value = (-1)**sign * sig * 2**exp."""
    field = (a >> FRAC_BITS) & 0xFF
    frac = a & (HIDDEN - 1)
    if field == 0:
        return a >> 31, frac, MIN_QUANTUM
    return a >> 31, frac | HIDDEN, field - BIAS_FROM_QUANTUM


# ---------------------------------------------------------------------------
# The one rounding
# ---------------------------------------------------------------------------
def _directed_away(sign: int, rnd: Rnd) -> bool:
    """Whether RM/RP move a value of this sign away from zero (RM for negatives, RP for positives)."""
    return rnd is (Rnd.RM if sign else Rnd.RP)


def _round_shift(sign: int, sig: int, shift: int, rnd: Rnd) -> int:
    """sig / 2**shift rounded to an integer magnitude by rnd; sign says which way RM/RP go."""
    if shift <= 0:
        return sig << -shift
    kept, rest = sig >> shift, sig & ((1 << shift) - 1)
    if rest == 0 or rnd is Rnd.RZ:
        return kept
    if rnd is Rnd.RN:
        half = 1 << (shift - 1)
        return kept + (rest > half or (rest == half and kept & 1))
    return kept + _directed_away(sign, rnd)


def _overflow(sign: int, rnd: Rnd) -> int:
    """IEEE overflow: infinity when rounding goes away from zero, else the largest finite."""
    toward_inf = rnd is Rnd.RN or _directed_away(sign, rnd)
    return (sign << 31) | (POS_INF if toward_inf else MAX_FINITE)


def round_pack(sign: int, sig: int, exp: int, rnd: Rnd = Rnd.RN, ftz: bool = False,
               sticky: bool = False) -> int:
    """The fp32 pattern that rnd picks for (-1)**sign * sig * 2**exp (sig >= 0, exact).

    sticky: the exact value lies strictly between sig and sig + 1 units of 2**exp (a nonzero
    division or square-root remainder); sig must then hold at least 25 significant bits, so
    that the result's last bit lies above its own. An exact zero keeps the given sign."""
    if sticky:  # a 1 below every known bit stands for the remainder: never a tie, never exact
        sig, exp = (sig << 2) | 1, exp - 2
    if sig == 0:
        return sign << 31
    top = exp + sig.bit_length() - 1                  # the value is in [2**top, 2**(top+1))
    quantum = top - FRAC_BITS if top - FRAC_BITS > MIN_QUANTUM else MIN_QUANTUM
    m = _round_shift(sign, sig, quantum - exp, rnd)
    if m >> (FRAC_BITS + 1):                          # rounded up to the next power of two
        m, quantum = m >> 1, quantum + 1
    if quantum + FRAC_BITS > MAX_TOP:
        return _overflow(sign, rnd)
    if m < HIDDEN:                                    # subnormal (only at MIN_QUANTUM) or zero
        return sign << 31 if ftz else (sign << 31) | m
    return (sign << 31) | ((quantum + BIAS_FROM_QUANTUM) << FRAC_BITS) | (m - HIDDEN)


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------
def _sum(sa: int, siga: int, ea: int, sb: int, sigb: int, eb: int, rnd: Rnd, ftz: bool) -> int:
    """Round the exact sum of two signed finite terms; an exact zero takes IEEE's sign."""
    e = ea if ea < eb else eb
    total = ((-siga if sa else siga) << (ea - e)) + ((-sigb if sb else sigb) << (eb - e))
    if total == 0:  # -0 only from two -0 terms, or in RM
        return round_pack(sa if sa == sb else int(rnd is Rnd.RM), 0, 0)
    return round_pack(int(total < 0), abs(total), e, rnd, ftz)


def add(a: int, b: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """add{.rnd}{.ftz}.f32."""
    a, b = flush(a, ftz), flush(b, ftz)
    if is_nan(a) or is_nan(b):
        return NAN
    if is_inf(a) or is_inf(b):
        if is_inf(a) and is_inf(b) and a != b:        # inf - inf
            return NAN
        return a if is_inf(a) else b
    return _sum(*_decode(a), *_decode(b), rnd, ftz)


def sub(a: int, b: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """sub{.rnd}{.ftz}.f32: a + (-b), exactly."""
    return add(a, b ^ SIGN, rnd, ftz)


def mul(a: int, b: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """mul{.rnd}{.ftz}.f32."""
    a, b = flush(a, ftz), flush(b, ftz)
    if is_nan(a) or is_nan(b):
        return NAN
    sign = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        return NAN if is_zero(a) or is_zero(b) else _inf(sign)
    _, siga, ea = _decode(a)
    _, sigb, eb = _decode(b)
    return round_pack(sign, siga * sigb, ea + eb, rnd, ftz)


def fma(a: int, b: int, c: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """fma.rnd{.ftz}.f32: a*b + c with the product and the sum exact, rounded once."""
    a, b, c = flush(a, ftz), flush(b, ftz), flush(c, ftz)
    if is_nan(a) or is_nan(b) or is_nan(c):
        return NAN
    product_sign = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        if is_zero(a) or is_zero(b) or (is_inf(c) and c >> 31 != product_sign):
            return NAN                                # 0*inf, or inf - inf
        return _inf(product_sign)
    if is_inf(c):
        return c
    _, siga, ea = _decode(a)
    _, sigb, eb = _decode(b)
    return _sum(product_sign, siga * sigb, ea + eb, *_decode(c), rnd, ftz)


QUOTIENT_BITS = 26  # round_pack needs 25 bits with a sticky remainder; one more for margin


def div(a: int, b: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """div.rnd{.ftz}.f32 (the IEEE-compliant division; not .approx or .full)."""
    a, b = flush(a, ftz), flush(b, ftz)
    if is_nan(a) or is_nan(b):
        return NAN
    sign = (a ^ b) >> 31
    if is_inf(a):
        return NAN if is_inf(b) else _inf(sign)
    if is_inf(b):
        return sign << 31
    if is_zero(b):
        return NAN if is_zero(a) else _inf(sign)
    if is_zero(a):
        return sign << 31
    _, siga, ea = _decode(a)
    _, sigb, eb = _decode(b)
    # (siga << shift) >= 2**(25 + len(sigb)) > 2**25 * sigb, so the quotient has >= 26 bits
    shift = QUOTIENT_BITS + sigb.bit_length() - siga.bit_length()
    quotient, remainder = divmod(siga << shift, sigb)
    return round_pack(sign, quotient, ea - eb - shift, rnd, ftz, sticky=remainder != 0)


def rcp(a: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """rcp.rnd{.ftz}.f32: 1/a, correctly rounded."""
    return div(ONE, a, rnd, ftz)


def sqrt(a: int, rnd: Rnd = Rnd.RN, ftz: bool = False) -> int:
    """sqrt.rnd{.ftz}.f32: sqrt(-0) = -0, sqrt of a negative non-zero is NAN."""
    a = flush(a, ftz)
    if is_nan(a):
        return NAN
    if is_zero(a):
        return a
    if a & SIGN:
        return NAN
    if is_inf(a):
        return a
    _, sig, exp = _decode(a)
    # a radicand of >= 2*QUOTIENT_BITS bits gives a root of >= QUOTIENT_BITS bits; its
    # exponent must be even for the root's exponent to be exact
    shift = 2 * QUOTIENT_BITS - sig.bit_length()
    shift += (exp - shift) & 1
    radicand = sig << shift
    root = math.isqrt(radicand)
    return round_pack(0, root, (exp - shift) // 2, rnd, ftz, sticky=root * root != radicand)


# ---------------------------------------------------------------------------
# Comparison, min/max, saturation
# ---------------------------------------------------------------------------
def _value_key(a: int) -> int:
    """An int ordered as the non-NaN pattern's value (+0 and -0 equal)."""
    return -(a & MAGNITUDE) if a & SIGN else a


def _min_max_key(a: int) -> int:
    """_value_key with -0 below +0, as PTX min/max order them."""
    return -(a & MAGNITUDE) - 1 if a & SIGN else a


def min(a: int, b: int, ftz: bool = False) -> int:  # noqa: A001 - PTX's name
    """min{.ftz}.f32: one NaN gives the other operand, two give NAN; -0 < +0."""
    a, b = flush(a, ftz), flush(b, ftz)
    if is_nan(a):
        return NAN if is_nan(b) else b
    if is_nan(b):
        return a
    return a if _min_max_key(a) <= _min_max_key(b) else b


def max(a: int, b: int, ftz: bool = False) -> int:  # noqa: A001 - PTX's name
    """max{.ftz}.f32: one NaN gives the other operand, two give NAN; -0 < +0."""
    a, b = flush(a, ftz), flush(b, ftz)
    if is_nan(a):
        return NAN if is_nan(b) else b
    if is_nan(b):
        return a
    return a if _min_max_key(a) >= _min_max_key(b) else b


# the ordered setp tests on sign(a - b); each has an unordered twin, spelled with a trailing u
_ORDERED = {
    "eq": lambda d: d == 0, "ne": lambda d: d != 0,
    "lt": lambda d: d < 0, "le": lambda d: d <= 0,
    "gt": lambda d: d > 0, "ge": lambda d: d >= 0,
}
COMPARISONS = (*_ORDERED, *(f"{c}u" for c in _ORDERED), "num", "nan")


def compare(a: int, b: int, cmp: str, ftz: bool = False) -> int:
    """setp.cmp{.ftz}.f32 as 0/1: eq..ge are false when either input is NaN (ne too),
    equ..geu true; num: neither is NaN, nan: either is. +0 == -0."""
    a, b = flush(a, ftz), flush(b, ftz)
    unordered = is_nan(a) or is_nan(b)
    if cmp == "num":
        return int(not unordered)
    if cmp == "nan":
        return int(unordered)
    test = _ORDERED.get(cmp[:-1] if cmp.endswith("u") else cmp)
    if test is None:
        raise ValueError(f"unknown f32 comparison {cmp!r}; expected one of {', '.join(COMPARISONS)}")
    if unordered:
        return int(cmp.endswith("u"))
    ka, kb = _value_key(a), _value_key(b)
    return int(test((ka > kb) - (ka < kb)))


def saturate(a: int) -> int:
    """PTX .sat: clamp to [+0.0, 1.0]. NaN gives +0, and so does every negative, -0 included
    (CUDA's __saturatef documents the interval as [+0.0, 1.0])."""
    if is_nan(a) or a & SIGN:
        return 0
    return ONE if a > ONE else a  # positive patterns order as their values


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------
INT_BITS = (8, 16, 32, 64)


def _check_bits(bits: int) -> None:
    if bits not in INT_BITS:
        raise ValueError(f"integer width {bits} is not one of {INT_BITS}")


def to_int(a: int, rnd: Rnd, signed: bool, bits: int = 32, ftz: bool = False) -> int:
    """cvt.{rni,rzi,rmi,rpi}{.ftz}.{s,u}{8,16,32,64}.f32 as a `bits`-bit unsigned pattern.

    The rounded value is clamped to the destination's range (infinities included). NaN gives 0,
    except 1 << 63 for a 64-bit destination (PTX: 1 << (BitWidth(dst) - 1) there)."""
    _check_bits(bits)
    a = flush(a, ftz)
    if is_nan(a):
        return 1 << 63 if bits == 64 else 0
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if is_inf(a):
        n = lo if a & SIGN else hi
    else:
        sign, sig, exp = _decode(a)
        magnitude = _round_shift(sign, sig, -exp, rnd)
        n = -magnitude if sign else magnitude
    n = lo if n < lo else hi if n > hi else n
    return n & ((1 << bits) - 1)


def from_int(x: int, rnd: Rnd, signed: bool, bits: int = 32) -> int:
    """cvt.{rn,rz,rm,rp}.f32.{s,u}{8,16,32,64}: x is the `bits`-bit unsigned pattern."""
    _check_bits(bits)
    x &= (1 << bits) - 1
    if signed and x >> (bits - 1):
        x -= 1 << bits
    return round_pack(int(x < 0), abs(x), 0, rnd)  # 0 gives +0


def round_integral(a: int, rnd: Rnd, ftz: bool = False) -> int:
    """cvt.{rni,rzi,rmi,rpi}{.ftz}.f32.f32 (rintf, truncf, floorf, ceilf): the integral value
    rnd picks, keeping the sign of a zero result (truncf(-0.5) = -0)."""
    a = flush(a, ftz)
    if is_nan(a):
        return NAN
    if is_inf(a) or (a >> FRAC_BITS) & 0xFF >= BIAS_FROM_QUANTUM:  # |a| >= 2**23: integral
        return a
    sign, sig, exp = _decode(a)
    # |a| < 2**23, so the integer fits a significand and round_pack is exact
    return round_pack(sign, _round_shift(sign, sig, -exp, rnd), 0)
