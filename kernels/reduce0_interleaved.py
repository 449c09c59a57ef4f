"""Block sums with the CUDA samples' reduction #0 (interleaved, divergent modulo
test): shared memory, barriers in a loop, multi-block partial sums, wraparound."""
import numpy as np

KERNEL = "reduce0_interleaved"
FEATURES = ["reduction", "shared-memory", "barrier", "divergence", "loop", "multi-block", "wraparound"]

N, BLOCK, GRID = 90, 16, 6


def launch():
    rng = np.random.default_rng(201)
    data = rng.integers(-1000, 1000, N).astype(np.int32)
    data[[3, 4, 40]] = [2**31 - 1, 2**31 - 1, -2**31]   # block 0 wraps past INT_MAX
    partial = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, np.uint32(N)]


def reference(data, partial, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    sums = padded.reshape(GRID, BLOCK).sum(axis=1)
    return [data, sums.astype(np.int32), None]
