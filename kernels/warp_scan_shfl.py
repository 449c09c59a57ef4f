"""Inclusive scan inside each 4-lane warp with __shfl_up_sync: conditional add on
lane index, a partial last warp (n not a multiple of 4), wraparound."""
import numpy as np

KERNEL = "warp_scan_shfl"
FEATURES = ["warp-shuffle", "shfl-up", "scan", "multi-warp", "multi-block", "bounds-check", "wraparound"]

N, GRID, BLOCK = 30, 2, 16


def launch():
    rng = np.random.default_rng(303)
    data = rng.integers(-50, 50, N).astype(np.int32)
    data[8:12] = [2**31 - 1, 1, -5, 2**31 - 1]
    out = np.full(32, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out, np.int32(N)]


def reference(data, out, n):
    out = out.copy()
    for start in range(0, n, 4):
        seg = data[start:min(start + 4, n)].astype(np.int64)
        out[start:start + seg.size] = np.cumsum(seg).astype(np.int32)
    return [data, out, None]
