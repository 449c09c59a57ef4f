"""Unsigned block sums with the CUDA samples' reduction #2 (sequential
addressing): shared memory, barriers, multi-block, unsigned wraparound."""
import numpy as np

KERNEL = "reduce2_sequential"
FEATURES = ["reduction", "shared-memory", "barrier", "loop", "multi-block", "unsigned", "wraparound"]

N, BLOCK, GRID = 64, 16, 4


def launch():
    rng = np.random.default_rng(203)
    data = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    data[16:32] = rng.integers(0, 50, 16)          # one block that does not wrap
    partial = np.full(GRID, 7, dtype=np.uint32)
    return (GRID,), (BLOCK,), [data, partial, np.uint32(N)]


def reference(data, partial, n):
    sums = data.astype(np.uint64).reshape(GRID, BLOCK).sum(axis=1) % 2**32
    return [data, sums.astype(np.uint32), None]
