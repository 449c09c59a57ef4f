"""Block sums with the CUDA samples' reduction #3 (first add during the global
load, two elements per thread): shared memory, barriers, running register sum,
multi-block with a ragged last block, wraparound."""
import numpy as np

KERNEL = "reduce3_first_add"
FEATURES = ["reduction", "shared-memory", "barrier", "loop", "multi-block", "wraparound", "c++-kernel"]

N, BLOCK, GRID = 150, 16, 5       # 5 blocks x 32 elements = 160 >= 150


def launch():
    rng = np.random.default_rng(204)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    data[-20:] = rng.integers(-9, 9, 20)
    partial = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, np.uint32(N)]


def reference(data, partial, n):
    padded = np.zeros(GRID * 2 * BLOCK, dtype=np.int64)
    padded[:n] = data
    sums = padded.reshape(GRID, 2 * BLOCK).sum(axis=1)
    return [data, sums.astype(np.int32), None]
