"""Per-warp sums by __shfl_down_sync tree reduction (width 4): warp shuffles,
lane-0 writes, multi-warp multi-block, wraparound."""
import numpy as np

KERNEL = "warp_reduce_shfl"
FEATURES = ["warp-shuffle", "shfl-down", "reduction", "multi-warp", "multi-block", "wraparound"]

GRID, BLOCK = 3, 16


def launch():
    rng = np.random.default_rng(301)
    data = rng.integers(-2**31, 2**31, GRID * BLOCK, dtype=np.int64).astype(np.int32)
    data[:4] = [1, 2, 3, 4]
    sums = np.full(GRID * BLOCK // 4, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, sums]


def reference(data, sums):
    return [data, data.astype(np.int64).reshape(-1, 4).sum(axis=1).astype(np.int32)]
