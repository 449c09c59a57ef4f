"""Per-block sums via atomicAdd on a shared word between two barriers, then one
global write per block; shared memory must start fresh in every block."""
import numpy as np

KERNEL = "atomic_add_shared"
FEATURES = ["atomics", "atomic-add", "shared-memory", "shared-atomics", "barrier", "multi-block", "wraparound"]

N, GRID, BLOCK = 75, 5, 16


def launch():
    rng = np.random.default_rng(402)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    partial = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, np.int32(N)]


def reference(data, partial, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    return [data, padded.reshape(GRID, BLOCK).sum(axis=1).astype(np.int32), None]
