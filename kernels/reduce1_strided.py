"""Block sums with the CUDA samples' reduction #1 (strided index): shared memory,
barriers, multi-block partial sums with a partial last block, wraparound."""
import numpy as np

KERNEL = "reduce1_strided"
FEATURES = ["reduction", "shared-memory", "barrier", "loop", "multi-block", "wraparound", "c++-kernel"]

N, BLOCK, GRID = 71, 16, 5


def launch():
    rng = np.random.default_rng(202)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    partial = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, np.int32(N)]


def reference(data, partial, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    sums = padded.reshape(GRID, BLOCK).sum(axis=1)
    return [data, sums.astype(np.int32), None]
