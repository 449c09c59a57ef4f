"""Grid-wide dot product of 200 ints: grid-stride products, shared-memory tree
reduction, one atomicAdd per block; products and sums wrap."""
import numpy as np

KERNEL = "dot_atomic"
FEATURES = ["dot-product", "grid-stride", "loop", "reduction", "shared-memory", "barrier", "atomic-add",
            "multi-block", "wraparound", "c++-kernel"]

N, GRID, BLOCK = 200, 4, 16


def launch():
    rng = np.random.default_rng(207)
    a = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    result = np.array([12345], dtype=np.int32)
    return (GRID,), (BLOCK,), [a, b, result, np.int32(N)]


def reference(a, b, result, n):
    total = int(result[0])
    for x, y in zip(a[:n].tolist(), b[:n].tolist()):
        total += x * y                                  # Python ints: exact, wrapped once at the end
    return [a, b, np.array([total % 2**32], dtype=np.uint64).astype(np.uint32).view(np.int32), None]
