"""32-bit wraparound: x + 1 (INT_MAX + 1 = INT_MIN), x * y overflow, unsigned
y - x - 1 underflow, and a flag for signed overflow of x + y."""
import numpy as np

KERNEL = "wraparound"
FEATURES = ["wraparound", "elementwise", "multi-warp"]

INT_MIN, INT_MAX = -2**31, 2**31 - 1


def launch():
    rng = np.random.default_rng(204)
    n = 16
    a = rng.integers(INT_MIN, INT_MAX + 1, n, dtype=np.int64)
    b = rng.integers(INT_MIN, INT_MAX + 1, n, dtype=np.int64)
    a[:6] = [INT_MAX, -1, INT_MIN, 65536, 0, INT_MAX]
    b[:6] = [1, -1, -1, 65536, 0, INT_MAX]
    return (1,), (16,), [a.astype(np.int32), b.astype(np.int32), np.zeros(4 * n, np.int32), np.int32(n)]


def _wrap(v):
    v = int(v) & 0xFFFFFFFF
    return v - 2**32 if v >= 2**31 else v


def reference(a, b, out, n):
    rows = []
    for x, y in zip(a.tolist(), b.tolist()):
        overflow = not INT_MIN <= x + y <= INT_MAX
        rows.append([_wrap(x + 1), _wrap(x * y), _wrap(y - x - 1), int(overflow)])
    return [a, b, np.array(rows, np.int32).ravel(), None]
