"""atomicExch: element-wise swap of two arrays, and a set-once flag whose
winner count is exactly 1 however threads are scheduled; multi-block."""
import numpy as np

KERNEL = "atomic_exch"
FEATURES = ["atomics", "atomic-exch", "global-memory", "multi-block", "claim-flag"]

N, GRID, BLOCK = 26, 2, 16


def launch():
    rng = np.random.default_rng(404)
    a = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    state = np.array([0, 0], dtype=np.int32)      # flag, winner count
    return (GRID,), (BLOCK,), [a, b, state, np.int32(N)]


def reference(a, b, state, n):
    return [b.copy(), a.copy(), np.array([1, 1], dtype=np.int32), None]
