"""Indexed __shfl_sync broadcast from lane 2 of each warp (width 4), added to
each lane's own value."""
import numpy as np

KERNEL = "warp_broadcast"
FEATURES = ["warp-shuffle", "shfl-idx", "broadcast", "multi-warp", "wraparound"]

GRID, BLOCK = 1, 16


def launch():
    rng = np.random.default_rng(304)
    data = rng.integers(-2**31, 2**31, BLOCK, dtype=np.int64).astype(np.int32)
    out = np.zeros(BLOCK, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out]


def reference(data, out):
    lane2 = np.repeat(data.reshape(-1, 4)[:, 2], 4).astype(np.int64)
    return [data, (data + lane2).astype(np.int32)]
