"""Integer saxpy y = a*x + y on 4 blocks of 12 threads, products overflow 32 bits."""
import numpy as np

KERNEL = "saxpy_int"
FEATURES = ["elementwise", "multi-block", "multi-warp", "wraparound"]


def launch():
    rng = np.random.default_rng(102)
    n = 45
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    y = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    x[:3] = [0, -1, 2**31 - 1]
    return (4,), (12,), [np.int32(n), np.int32(-123457), x, y]


def reference(n, a, x, y):
    exact = int(a) * x.astype(np.int64) + y        # |a*x + y| < 2**63: exact in int64
    return [None, None, x, exact.astype(np.int32)]  # the cast keeps the low 32 bits
