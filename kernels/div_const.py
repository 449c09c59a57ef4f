"""Signed / and % by the constants 7, -3, 10 and 16 (mul.hi magic numbers and
shift sequences) and unsigned / 10 and % 7, on dividends of both signs."""
import numpy as np

KERNEL = "div_const"
FEATURES = ["div-by-constant", "signed-div", "unsigned-div", "early-return"]

DIVISORS = [7, -3, 10, 16]


def launch():
    rng = np.random.default_rng(203)
    n = 20
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    x[:10] = [-2**31, 2**31 - 1, 0, -1, -7, -16, -17, 15, 9, -10]
    return (2,), (12,), [x.astype(np.int32), np.zeros(8 * n, np.int32), np.zeros(2 * n, np.uint32), np.int32(n)]


def reference(x, out, uout, n):
    v = x.astype(np.int64)
    cols = []
    for d in DIVISORS:
        q = np.abs(v) // abs(d) * np.sign(v) * np.sign(d)   # C truncates toward zero
        cols += [q, v - q * d]
    u = v & 0xFFFFFFFF
    return [x, np.stack(cols, 1).ravel().astype(np.int32), np.stack([u // 10, u % 7], 1).ravel().astype(np.uint32), None]
