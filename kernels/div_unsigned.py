"""Unsigned / and % with dividends and divisors above 2**31. Division by zero
is undefined in C++; this machine (qwengpu/isa.py DIVU/REMU) gives
x / 0 = 0xFFFFFFFF and x % 0 = x, as the last cases check."""
import numpy as np

KERNEL = "div_unsigned"
FEATURES = ["unsigned-div", "multi-block", "elementwise"]

EDGE = [(0xFFFFFFFF, 1), (0xFFFFFFFF, 0xFFFFFFFF), (0x80000000, 3), (5, 0x80000000),
        (0xFFFFFFFE, 0xFFFFFFFF), (0x80000000, 0x7FFFFFFF), (0, 17), (100, 7)]
DIV_BY_ZERO = [(12345, 0), (0xFFFFFFFF, 0), (0, 0)]


def launch():
    rng = np.random.default_rng(202)
    n = 36
    a = rng.integers(0, 2**32, n, dtype=np.uint64)
    b = rng.integers(1, 2**16, n, dtype=np.uint64)
    b[: n // 3] = rng.integers(1, 2**32, n // 3, dtype=np.uint64)
    cases = EDGE + DIV_BY_ZERO
    a[-len(cases):] = [x for x, _ in cases]
    b[-len(cases):] = [d for _, d in cases]
    return (3,), (13,), [a.astype(np.uint32), b.astype(np.uint32), np.zeros(2 * n, np.uint32), np.int32(n)]


def reference(a, b, out, n):
    x, d = a.astype(np.uint64), b.astype(np.uint64)
    safe = np.where(d == 0, 1, d)
    out = np.empty(2 * n, np.uint64)
    out[0::2] = np.where(d == 0, 0xFFFFFFFF, x // safe)
    out[1::2] = np.where(d == 0, x, x % safe)
    return [a, b, out.astype(np.uint32), None]
