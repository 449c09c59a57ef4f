"""Butterfly (xor) all-reduce in every lane: __shfl_xor_sync width 4, unsigned
sum with wraparound and unsigned max above 2^31."""
import numpy as np

KERNEL = "warp_allreduce_xor"
FEATURES = ["warp-shuffle", "shfl-xor", "all-reduce", "unsigned", "multi-warp", "wraparound", "c++-kernel"]

GRID, BLOCK = 2, 12       # 3 warps per block


def launch():
    rng = np.random.default_rng(302)
    data = rng.integers(0, 2**32, GRID * BLOCK, dtype=np.uint64).astype(np.uint32)
    data[4:8] = [5, 0x80000000, 0x7FFFFFFF, 1]      # max is above INT_MAX
    s = np.zeros_like(data)
    m = np.zeros_like(data)
    return (GRID,), (BLOCK,), [data, s, m]


def reference(data, s, m):
    groups = data.astype(np.uint64).reshape(-1, 4)
    sums = np.repeat(groups.sum(axis=1) % 2**32, 4).astype(np.uint32)
    maxes = np.repeat(groups.max(axis=1), 4).astype(np.uint32)
    return [data, sums, maxes]
