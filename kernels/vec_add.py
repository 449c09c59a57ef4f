"""Grid-stride vector add over several blocks; n is not a multiple of the block
and exceeds the grid's thread count, so threads loop; the tail of c is untouched."""
import numpy as np

KERNEL = "vec_add"
FEATURES = ["elementwise", "grid-stride", "multi-block", "multi-warp", "wraparound"]

N = 61
SENTINEL = -7


def launch():
    rng = np.random.default_rng(101)
    a = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    c = np.full(64, SENTINEL, dtype=np.int32)
    return (3,), (8,), [a, b, c, np.int32(N)]


def reference(a, b, c, n):
    c = c.copy()
    c[:n] = a[:n] + b[:n]          # int32 array arithmetic wraps like the GPU
    return [a, b, c, None]
