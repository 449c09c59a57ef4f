"""Histogram of 16 bins (high nibble of each byte) with global atomicAdd from a
grid-stride loop; bins start non-zero and some stay empty."""
import numpy as np

KERNEL = "histogram_global"
FEATURES = ["histogram", "atomics", "atomic-add", "grid-stride", "loop", "global-memory", "multi-block"]

N, GRID, BLOCK = 200, 3, 16


def launch():
    rng = np.random.default_rng(411)
    data = rng.integers(0, 0xC0, N).astype(np.uint32)          # bins 12..14 keep their initial counts
    data[:3] = [0xFFFFFF05, 0xFF, 0x100]                        # only the low byte counts (0xFF: bin 15)
    bins = np.arange(16, dtype=np.uint32)
    return (GRID,), (BLOCK,), [data, bins, np.int32(N)]


def reference(data, bins, n):
    counts = np.bincount((data[:n] & 0xFF) >> 4, minlength=16)
    return [data, (bins + counts).astype(np.uint32), None]
