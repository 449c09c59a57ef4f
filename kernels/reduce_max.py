"""Per-block signed maximum in shared memory (sequential addressing): barriers,
max intrinsic, INT_MIN identity, all-negative blocks, multi-block."""
import numpy as np

KERNEL = "reduce_max"
FEATURES = ["reduction", "shared-memory", "barrier", "loop", "multi-block", "signed-compare"]

N, BLOCK, GRID = 58, 16, 4


def launch():
    rng = np.random.default_rng(205)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    data[16:32] = -rng.integers(1, 100, 16)     # an all-negative block
    data[48:] = -2**31                          # the last block holds only INT_MIN
    out = np.full(GRID, 7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out, np.int32(N)]


def reference(data, out, n):
    padded = np.full(GRID * BLOCK, -2**31, dtype=np.int64)
    padded[:n] = data
    return [data, padded.reshape(GRID, BLOCK).max(axis=1).astype(np.int32), None]
