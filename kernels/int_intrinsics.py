"""__mulhi, __umulhi, __ffs, __mul24, __umul24, __sad and signed vs unsigned
min/max on random words (both signs, above 2**24) and edge values."""
import numpy as np

KERNEL = "int_intrinsics"
FEATURES = ["bitops", "wraparound", "elementwise", "multi-block"]

INT_MIN, INT_MAX = -2**31, 2**31 - 1


def launch():
    rng = np.random.default_rng(318)
    n = 24
    a = rng.integers(INT_MIN, INT_MAX + 1, n, dtype=np.int64)
    b = rng.integers(INT_MIN, INT_MAX + 1, n, dtype=np.int64)
    a[:7] = [0, INT_MIN, INT_MIN, -1, 0x00800000, 0x7FFFFF, 96]
    b[:7] = [5, INT_MIN, INT_MAX, -1, 0x00800000, -0x800000, -3]
    return (2,), (16,), [a.astype(np.int32), b.astype(np.int32), np.zeros(8 * n, np.uint32), np.int32(n)]


def _s24(v):
    v &= 0xFFFFFF
    return v - 2**24 if v >> 23 else v


def _row(x, y):
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    ffs = (ux & -ux).bit_length()                   # 1 + index of the lowest set bit, 0 for 0
    return [(x * y) >> 32, (ux * uy) >> 32, ffs, _s24(x) * _s24(y), (ux & 0xFFFFFF) * (uy & 0xFFFFFF),
            abs(x - y) + 1000, min(ux, uy), max(x, y)]


def reference(a, b, out, n):
    rows = [[v & 0xFFFFFFFF for v in _row(x, y)] for x, y in zip(a.tolist(), b.tolist())]
    return [a, b, np.array(rows, np.uint64).astype(np.uint32).ravel(), None]
