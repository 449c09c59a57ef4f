"""abs, negation and unsigned magnitude, including INT_MIN (abs/neg wrap to
INT_MIN, the magnitude is 2**31)."""
import numpy as np

KERNEL = "abs_neg"
FEATURES = ["elementwise", "wraparound", "multi-block"]


def launch():
    rng = np.random.default_rng(107)
    n = 24
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    x[:6] = [-2**31, -2**31 + 1, 2**31 - 1, 0, -1, 1]
    return (2,), (12,), [x, np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.uint32), np.int32(n)]


def reference(x, absval, neg, mag, n):
    exact = np.abs(x.astype(np.int64))            # |INT_MIN| = 2**31, exact in int64
    wrapped = lambda v: (v & 0xFFFFFFFF).astype(np.uint32)
    return [x, wrapped(exact).view(np.int32), wrapped(-x.astype(np.int64)).view(np.int32),
            wrapped(exact), None]
