"""One-launch grid sum (CUDA sample threadFenceReduction style): block partials,
__threadfence, an atomicInc ticket on a __device__ counter, a shared bool, and
the last block reducing all partials."""
import numpy as np

KERNEL = "threadfence_reduction"
FEATURES = ["reduction", "shared-memory", "barrier", "threadfence", "atomic-inc", "device-variable",
            "last-block", "multi-block", "narrow-types", "wraparound"]

N, GRID, BLOCK = 150, 10, 16


def launch():
    rng = np.random.default_rng(206)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    partial = np.full(GRID, -7, dtype=np.int32)
    total = np.array([-7], dtype=np.int32)
    return (GRID,), (BLOCK,), [data, partial, total, np.int32(N)]


def reference(data, partial, total, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    sums = padded.reshape(GRID, BLOCK).sum(axis=1)
    return [data, sums.astype(np.int32), np.array([sums.sum()]).astype(np.int32), None]
