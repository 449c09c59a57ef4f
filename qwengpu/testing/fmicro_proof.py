"""Exhaustive and bulk checks of toolchain/fmicro.py's FDIV and FSQRT cores, emulated bit for bit
with NumPy (testing/fpemu.py's fma), using fmicro's own constants and step counts.

  reciprocal()  every significand m in [1, 2) (2**23): the seed and Newton steps give y = RN(1/m)
  sqrt()        every (significand, exponent parity) (2**24) in the four modes: the core's result
                is sqrt(mx) correctly rounded; s*s - mx is exact
  division()    given significand pairs (exhaustive slices, random millions) in the four modes:
                the core's quotient is ma/mb correctly rounded

Each result is checked against exact float64 arithmetic on the candidate's neighbours (a 24-bit
by 25-bit product is exact in float64, and so is its difference with a nearby 24-bit value), not
against a second emulation. `python -m qwengpu.testing.fmicro_proof` runs them all (a few minutes).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from qwengpu.fp32 import Rnd
from qwengpu.testing import fpemu as E
from qwengpu.toolchain import fmicro as M

F32, F64, U32 = np.float32, np.float64, np.uint32
CHUNK = 1 << 20


def _f(bits_: int) -> np.float32:
    return np.array([bits_], U32).view(F32)[0]


def _neighbours(s):
    return (np.nextafter(s, F32(-np.inf)).astype(F64), s.astype(F64), np.nextafter(s, F32(np.inf)).astype(F64))


# -- reciprocal -------------------------------------------------------------------
def reciprocal_core(nmb: np.ndarray) -> np.ndarray:
    """fmicro.fdiv's y from nmb = -m."""
    y = E.fma(E.fma(nmb, _f(M.RCP_C2), _f(M.RCP_C1)), nmb, _f(M.RCP_C0))
    for _ in range(M.RCP_STEPS):
        y = E.fma(y, E.fma(nmb, y, F32(1)), y)
    return E.floats(E.bits(y) + (E.bits(nmb) == (M.NEG_ONE | M.FRAC)).astype(U32))


def reciprocal(stride: int = 1) -> int:
    """The significands m (every stride-th) whose y is not RN(1/m)."""
    bad = 0
    for start in range(0, 1 << 23, CHUNK):
        f = np.arange(start, min(start + CHUNK, 1 << 23), stride, dtype=U32)
        m = E.floats(f | M.ONE)
        y = reciprocal_core(-m)
        lo, mid, hi = _neighbours(y)
        m64 = m.astype(F64)
        # RN(1/m) = y  <=>  (y + lo)/2 < 1/m < (y + hi)/2  <=>  m (y + lo)/2 < 1 < m (y + hi)/2 (exact)
        ok = (m64 * ((mid + lo) / 2) < 1) & (m64 * ((mid + hi) / 2) > 1)
        bad += int((~ok).sum())
    return bad


# -- square root -------------------------------------------------------------------
def sqrt_core(mxb: np.ndarray, rnd: Rnd) -> tuple[np.ndarray, np.ndarray]:
    """fmicro.fsqrt's root of mx (bits) and the RN root's s*s - mx."""
    mx = E.floats(mxb)
    y0 = E.floats(U32(M.RSQ_MAGIC) - (mxb >> 1))
    g, nh = E.mul(mx, y0), E.mul(y0, _f(M.NEG_HALF))
    for _ in range(M.RSQ_STEPS):
        t = E.fma(g, nh, _f(M.HALF))
        g, nh = E.fma(g, t, g), E.fma(nh, t, nh)
    nmx = -mx
    s = E.fma(E.fma(g, g, nmx), nh, g)
    d = E.fma(s, s, nmx)
    sb = E.bits(s).astype(np.int64)
    db = E.bits(d).view(np.int32).astype(np.int64)
    if rnd is Rnd.RP:
        sb = sb - (db >> 31)
    elif rnd is not Rnd.RN:
        sb = sb - (db > 0)
    return E.floats(sb.astype(U32)), d


def rounded_sqrt_ok(s: np.ndarray, m: np.ndarray, rnd: Rnd) -> np.ndarray:
    """Whether s is sqrt(m) rounded by rnd (m > 0): squares of 25-bit values are exact in float64."""
    lo, mid, hi = _neighbours(s)
    if rnd is Rnd.RN:
        return (((mid + lo) / 2) ** 2 < m) & (m < ((mid + hi) / 2) ** 2)
    if rnd is Rnd.RP:
        return (lo ** 2 < m) & (m <= mid ** 2)
    return (mid ** 2 <= m) & (m < hi ** 2)


def sqrt(stride: int = 1) -> dict:
    """{mode: failures} over every stride-th of the 2**24 inputs; 'inexact': RN roots whose
    s*s - mx was rounded."""
    bad = {r: 0 for r in Rnd} | {"inexact": 0}
    for start in range(0, 1 << 24, CHUNK):
        u = np.arange(start, start + CHUNK, stride, dtype=U32)
        mxb = (u & 0x00FF_FFFF) | M.HALF
        m = E.floats(mxb).astype(F64)
        for rnd in Rnd:
            s, d = sqrt_core(mxb, rnd)
            bad[rnd] += int((~rounded_sqrt_ok(s, m, rnd)).sum())
            if rnd is Rnd.RN:
                bad["inexact"] += int((d.astype(F64) != s.astype(F64) ** 2 - m).sum())
    return bad


# -- division ------------------------------------------------------------------------
def division_core(mab: np.ndarray, mbb: np.ndarray, rnd: Rnd) -> np.ndarray:
    """fmicro.fdiv's CORE quotient for ma = +-1.f (bits, signed) and mb = 1.g (bits)."""
    ma, nmb = E.floats(mab), -E.floats(mbb)
    y = reciprocal_core(nmb)
    q = E.mul(ma, y)
    q = E.fma(E.fma(nmb, q, ma), y, q)
    q = E.fma(E.fma(nmb, q, ma), y, q)
    if rnd is Rnd.RN:
        return q
    r = E.bits(E.fma(nmb, q, ma)).astype(np.int64)
    qb = E.bits(q).astype(np.int64)
    nz = r != 0
    opposite = np.where(nz, ((r ^ qb) >> 31) & 1, 0)
    toward_zero = qb - opposite
    if rnd is Rnd.RZ:
        return E.floats(toward_zero.astype(U32))
    away = qb + np.where(nz, opposite ^ 1, 0)
    neg = qb >> 31
    out = np.where(neg, toward_zero, away) if rnd is Rnd.RP else np.where(neg, away, toward_zero)
    return E.floats(out.astype(U32))


def rounded_quotient_ok(q: np.ndarray, a: np.ndarray, b: np.ndarray, rnd: Rnd) -> np.ndarray:
    """Whether q is a/b rounded by rnd (b > 0; a, b in [1, 2) in magnitude): the sign of
    a - b t for t a neighbour or midpoint of q is exact in float64 (b t has at most 49 bits)."""
    lo, mid, hi = _neighbours(q)

    def above(t):           # a/b > t, = t, < t as 1, 0, -1
        return np.sign(a - b * t)
    if rnd is Rnd.RN:
        return (above((mid + lo) / 2) > 0) & (above((mid + hi) / 2) < 0)
    down = (above(mid) >= 0) & (above(hi) < 0)                  # q = floor(a/b)
    up = (above(lo) > 0) & (above(mid) <= 0)                     # q = ceil(a/b)
    if rnd is Rnd.RM:
        return down
    if rnd is Rnd.RP:
        return up
    return np.where(q > 0, down, up)


def division(mab: np.ndarray, mbb: np.ndarray) -> dict:
    """{mode: failures} for the pairs (ma bits with sign, mb bits)."""
    bad = {}
    a = E.floats(mab).astype(F64)
    b = E.floats(mbb).astype(F64)
    for rnd in Rnd:
        q = division_core(mab, mbb, rnd)
        bad[rnd] = int((~rounded_quotient_ok(q, a, b, rnd)).sum())
    return bad


def significands(f: np.ndarray, sign: np.ndarray | int = 0) -> np.ndarray:
    return (np.asarray(f, U32) & M.FRAC) | M.ONE | (np.asarray(sign, U32) << 31)


def division_slices(mbs, mas, seed: int = 0, random_pairs: int = 0) -> dict:
    """Every ma (both signs) against each mb in mbs, every mb against each ma in mas, and
    random_pairs random pairs: {mode: failures} summed."""
    total = {r: 0 for r in Rnd}

    def add(bad):
        for r in Rnd:
            total[r] += bad[r]
    every = np.arange(1 << 23, dtype=U32)
    for start in range(0, 1 << 23, CHUNK):
        part = every[start:start + CHUNK]
        for sign in (0, 1):
            for mb in mbs:
                add(division(significands(part, sign), significands(np.full_like(part, mb))))
            for ma in mas:
                add(division(significands(np.full_like(part, ma), sign), significands(part)))
    rng = np.random.default_rng(seed)
    for start in range(0, random_pairs, CHUNK):
        n = min(CHUNK, random_pairs - start)
        fa, fb, sg = (rng.integers(0, 1 << 23, n, dtype=U32) for _ in range(3))
        add(division(significands(fa, sg & 1), significands(fb)))
    return total


# divisors and dividends whose every partner is tried: 1, 1.5, 2 - ulp (where y is fixed up)
EDGE_DIVISORS = (0, 0x400000, 0x7FFFFF)
EDGE_DIVIDENDS = (0, 0x7FFFFF)


def main() -> None:
    t = time.time()
    print("reciprocal: y != RN(1/m) for", reciprocal(), "of 2**23 significands", f"({time.time() - t:.0f} s)")
    t = time.time()
    print("sqrt: failures", {str(k): v for k, v in sqrt().items()}, "of 2**24 inputs a mode",
          f"({time.time() - t:.0f} s)")
    t = time.time()
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 24
    bad = division_slices(EDGE_DIVISORS, EDGE_DIVIDENDS, random_pairs=pairs)
    n = 2 * (len(EDGE_DIVISORS) + len(EDGE_DIVIDENDS)) * (1 << 23) + pairs
    print(f"division: failures {dict((str(k), v) for k, v in bad.items())} of {n} pairs a mode "
          f"({time.time() - t:.0f} s)")


if __name__ == "__main__":
    main()
