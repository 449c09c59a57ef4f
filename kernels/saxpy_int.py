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
    exact = int(a) * x.astype(object) + y.astype(object)  # Python ints: no overflow
    wrapped = np.array([v & 0xFFFFFFFF for v in exact], dtype=np.uint32).view(np.int32)
    return [None, None, x, wrapped]
