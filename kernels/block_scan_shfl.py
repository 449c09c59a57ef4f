"""Per-block inclusive scan built from shfl-up warp scans and a second-level scan
of warp totals in shared memory (blocks of 12 threads = 3 warps, so warp 0
pads the missing fourth total); ragged end, wraparound."""
import numpy as np

KERNEL = "block_scan_shfl"
FEATURES = ["scan", "inclusive-scan", "warp-shuffle", "shfl-up", "shared-memory", "barrier", "multi-warp",
            "multi-block", "bounds-check", "wraparound"]

N, GRID, BLOCK = 33, 3, 12


def launch():
    rng = np.random.default_rng(504)
    data = rng.integers(-500, 500, N).astype(np.int32)
    data[13] = 2**31 - 1                                     # the second segment wraps
    out = np.full(GRID * BLOCK, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out, np.int32(N)]


def reference(data, out, n):
    out = out.copy()
    for start in range(0, n, BLOCK):
        seg = data[start:min(start + BLOCK, n)].astype(np.int64)
        out[start:start + seg.size] = np.cumsum(seg).astype(np.int32)
    return [data, out, None]
