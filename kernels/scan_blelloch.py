"""Exclusive Blelloch scan (up-sweep / down-sweep) of 16-element segments, 8
threads per block and two elements per thread; barriers inside loops,
tree-shaped shared-memory indexing, wraparound."""
import numpy as np

KERNEL = "scan_blelloch"
FEATURES = ["scan", "exclusive-scan", "shared-memory", "barrier", "loop", "multi-block", "wraparound", "c++-kernel"]

SEG, GRID, BLOCK = 16, 3, 8


def launch():
    rng = np.random.default_rng(502)
    data = rng.integers(-1000, 1000, GRID * SEG).astype(np.int32)
    data[16:32] = rng.integers(-2**31, 2**31, SEG, dtype=np.int64)   # a segment that wraps
    out = np.full_like(data, -7)
    return (GRID,), (BLOCK,), [data, out]


def reference(data, out):
    segs = data.astype(np.int64).reshape(GRID, SEG)
    exclusive = np.cumsum(segs, axis=1) - segs
    return [data, exclusive.astype(np.int32).reshape(-1)]
