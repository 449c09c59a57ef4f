"""Inclusive Hillis-Steele scan per 16-thread block with double-buffered shared
memory and barriers in a loop; ragged last block, per-block totals, wraparound."""
import numpy as np

KERNEL = "scan_hillis_steele"
FEATURES = ["scan", "inclusive-scan", "shared-memory", "double-buffer", "barrier", "loop", "multi-block", "wraparound"]

N, GRID, BLOCK = 43, 3, 16


def launch():
    rng = np.random.default_rng(501)
    data = rng.integers(-100, 100, N).astype(np.int32)
    data[3] = 2**31 - 1                                  # the first segment wraps
    out = np.full(N, -7, dtype=np.int32)
    totals = np.full(GRID, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out, totals, np.int32(N)]


def reference(data, out, totals, n):
    padded = np.zeros(GRID * BLOCK, dtype=np.int64)
    padded[:n] = data
    scans = np.cumsum(padded.reshape(GRID, BLOCK), axis=1).astype(np.int32)
    return [data, scans.reshape(-1)[:n], scans[:, -1].copy(), None]
