"""Privatised histogram: shared-memory bins cleared by a strided loop (block of
8 threads covers 16 bins), shared atomics, barriers, global merge; multi-block."""
import numpy as np

KERNEL = "histogram_shared"
FEATURES = ["histogram", "atomics", "atomic-add", "shared-atomics", "shared-memory", "barrier",
            "grid-stride", "loop", "multi-block", "c++-kernel"]

N, GRID, BLOCK = 230, 4, 8


def launch():
    rng = np.random.default_rng(412)
    data = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    data[10:40] = 0x35                                           # a crowded bin
    bins = np.full(16, 1000, dtype=np.uint32)
    return (GRID,), (BLOCK,), [data, bins, np.int32(N)]


def reference(data, bins, n):
    counts = np.bincount((data[:n] & 0xFF) >> 4, minlength=16)
    return [data, (bins + counts).astype(np.uint32), None]
