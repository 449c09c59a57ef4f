"""atomicAdd on global memory from a 4-block grid: one shared sum word (order
independent, wraps) and a count of positive elements under a branch."""
import numpy as np

KERNEL = "atomic_add_global"
FEATURES = ["atomics", "atomic-add", "global-memory", "multi-block", "divergence", "wraparound"]

N, GRID, BLOCK = 60, 4, 16


def launch():
    rng = np.random.default_rng(401)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    data[:5] = 0
    totals = np.array([100, 1000], dtype=np.int32)     # atomics add onto existing values
    return (GRID,), (BLOCK,), [data, totals, np.int32(N)]


def reference(data, totals, n):
    total = int(totals[0]) + int(data.astype(np.int64).sum())
    positives = int(totals[1]) + int((data > 0).sum())
    return [data, np.array([total, positives], dtype=np.int64).astype(np.int32), None]
