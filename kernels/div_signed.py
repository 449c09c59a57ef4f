"""Signed / and % by runtime divisors of every sign. The last cases are the
ones C++ leaves undefined, with the results qwengpu/isa.py documents for
div/rem: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0."""
import numpy as np

KERNEL = "div_signed"
FEATURES = ["signed-div", "multi-block", "elementwise"]

INT_MIN, INT_MAX = -2**31, 2**31 - 1
EDGE = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, -3), (-1, 5), (0, -9), (INT_MIN, 1),
        (INT_MIN, 2), (INT_MAX, -1), (INT_MIN, INT_MAX), (INT_MAX, INT_MIN), (5, 7)]
UNDEFINED_IN_CPP = [(123, 0), (-5, 0), (0, 0), (INT_MIN, -1)]


def launch():
    rng = np.random.default_rng(201)
    n = 40
    a = rng.integers(INT_MIN, INT_MAX + 1, n, dtype=np.int64)
    b = rng.integers(-1000, 1000, n, dtype=np.int64)
    b[b == 0] = 3
    b[: n // 4] = rng.integers(INT_MIN, INT_MAX + 1, n // 4)  # big divisors too
    cases = EDGE + UNDEFINED_IN_CPP
    a[-len(cases):] = [x for x, _ in cases]
    b[-len(cases):] = [d for _, d in cases]
    return (3,), (16,), [a.astype(np.int32), b.astype(np.int32),
                         np.zeros(n, np.int32), np.zeros(n, np.int32), np.int32(n)]


def _divrem(x, d):
    """C semantics from Python ints, plus this machine's defined cases."""
    if d == 0:
        return -1, x
    q = abs(x) // abs(d)
    q = -q if (x < 0) != (d < 0) else q
    if q == 2**31:          # INT_MIN / -1 overflows: wraps to INT_MIN
        return INT_MIN, 0
    return q, x - q * d


def reference(a, b, quot, rem, n):
    qr = [_divrem(int(x), int(d)) for x, d in zip(a, b)]
    return [a, b, np.array([q for q, _ in qr], np.int32), np.array([r for _, r in qr], np.int32), None]
