"""Block sums from warp shuffles plus shared memory across 4 warps: shfl-down,
barrier, a divergent second level in warp 0, a ragged last block."""
import numpy as np

KERNEL = "block_reduce_shfl"
FEATURES = ["warp-shuffle", "shfl-down", "reduction", "shared-memory", "barrier", "multi-warp", "multi-block", "wraparound"]

N, GRID, BLOCK = 57, 4, 16


def launch():
    rng = np.random.default_rng(306)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    partial = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, np.int32(N)]


def reference(data, partial, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    return [data, padded.reshape(GRID, BLOCK).sum(axis=1).astype(np.int32), None]
