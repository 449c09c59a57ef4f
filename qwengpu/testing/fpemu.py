"""Vectorized, bit-exact NumPy emulation of the fp32 steps that toolchain/fmicro.py's FDIV and
FSQRT sequences are made of, for proving them over all 2**23 or 2**24 significands at once.

Every value is a float32 array. fma(a, b, c, rnd) is a*b + c rounded once in rnd: the product of
two float32 values is exact in float64 (48 bits), the sum is held exactly as a float64 pair
(hi + lo, Knuth's TwoSum), and the pair is rounded to float32 by comparing it with the float32
neighbours of hi's nearest float32 (each difference exact in float64, Sterbenz). Valid when no
value overflows and every nonzero result is a normal float32 (the sequences' arguments are
scaled into [0.5, 4)); zero results take IEEE's sign. Checked against fp32.fma in
tests/test_float_microcode.py.
"""
from __future__ import annotations

import numpy as np

from qwengpu.fp32 import Rnd

F32, F64 = np.float32, np.float64


def _sign(x: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """sign(x) where x != 0, else sign(tie): the sign of x + tie when |tie| is below x's spacing."""
    return np.where(x != 0, np.sign(x), np.sign(tie))


def round_pair(hi: np.ndarray, lo: np.ndarray, rnd: Rnd) -> np.ndarray:
    """hi + lo (exact; |lo| at most half an ulp of hi in float64) rounded to float32 in rnd."""
    with np.errstate(over="ignore"):
        r = hi.astype(F32)                                        # RN(hi)
    up = np.nextafter(r, F32(np.inf))
    down = np.nextafter(r, F32(-np.inf))
    d = hi - r.astype(F64)                                        # exact
    s = _sign(d, lo)                                              # sign(x - r)
    # RN(x) differs from RN(hi) only when hi is a midpoint and lo pushes x off it, away from r
    nb = np.where(d > 0, up, down)
    half = (nb.astype(F64) - r.astype(F64)) / 2
    off_mid = (d != 0) & (d == half) & (lo != 0) & (np.sign(lo) == np.sign(d))
    r = np.where(off_mid, nb, r)
    if rnd is Rnd.RN:
        out = r
    else:
        s = _sign(hi - r.astype(F64), lo)                         # sign(x - RN(x))
        up = np.nextafter(r, F32(np.inf))
        down = np.nextafter(r, F32(-np.inf))
        if rnd is Rnd.RP:
            out = np.where(s > 0, up, r)
        elif rnd is Rnd.RM:
            out = np.where(s < 0, down, r)
        else:                                                     # RZ: toward zero
            out = np.where((s > 0) & (r < 0), up, np.where((s < 0) & (r > 0), down, r))
    zero = (hi == 0) & (lo == 0)
    return np.where(zero, F32(0), out).astype(F32)


def fma(a, b, c, rnd: Rnd = Rnd.RN) -> np.ndarray:
    """fma.rnd.f32 on arrays (see the module docstring for the range it is exact in)."""
    a, b, c = (np.asarray(x, F32) for x in (a, b, c))
    p = a.astype(F64) * b.astype(F64)                             # exact
    cc = c.astype(F64)
    hi = p + cc
    bb = hi - p
    lo = (p - (hi - bb)) + (cc - bb)                              # TwoSum: hi + lo == p + c
    out = round_pair(hi, lo, rnd)
    # an exact zero sum: -0 when both terms are negative (or zero), or in RM; else +0
    zero = (hi == 0) & (lo == 0)
    neg = (np.signbit(p) & np.signbit(cc)) if rnd is not Rnd.RM else (np.signbit(p) | np.signbit(cc))
    return np.where(zero, np.where(neg, F32(-0.0), F32(0.0)), out).astype(F32)


def mul(a, b, rnd: Rnd = Rnd.RN) -> np.ndarray:
    return fma(a, b, np.zeros_like(np.asarray(a, F32)), rnd)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, F32).view(np.uint32)


def floats(u: np.ndarray) -> np.ndarray:
    return np.asarray(u, np.uint32).view(F32)
