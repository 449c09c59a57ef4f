"""Odd-even transposition sort of two 16-int segments (one per block) in shared
memory: phase loop with barriers, data-dependent swaps, signed compares,
duplicates and INT_MIN/INT_MAX, in-place update."""
import numpy as np

KERNEL = "sort_odd_even"
FEATURES = ["sorting", "shared-memory", "barrier", "loop", "divergence", "signed-compare", "multi-block", "in-place"]

SEG, GRID, BLOCK = 16, 2, 8


def launch():
    rng = np.random.default_rng(801)
    data = rng.integers(-2**31, 2**31, GRID * SEG, dtype=np.int64).astype(np.int32)
    data[:6] = [2**31 - 1, -2**31, 0, -1, 5, 5]
    data[16:32] = np.arange(16)[::-1]                   # reversed: the worst case
    return (GRID,), (BLOCK,), [data]


def reference(data):
    return [np.sort(data.reshape(GRID, SEG), axis=1).reshape(-1)]
