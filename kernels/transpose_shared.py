"""Tiled transpose of a 6x10 int matrix with 4x4 blocks on a 3x2 grid: 2D thread
and block indices, padded shared tile, barrier, edge tiles."""
import numpy as np

KERNEL = "transpose_shared"
FEATURES = ["2d", "transpose", "shared-memory", "barrier", "2d-grid", "bounds-check", "c++-kernel"]

ROWS, COLS = 6, 10


def launch():
    rng = np.random.default_rng(701)
    a = rng.integers(-2**31, 2**31, ROWS * COLS, dtype=np.int64).astype(np.int32)
    out = np.full(ROWS * COLS, -7, dtype=np.int32)
    return (3, 2), (4, 4), [a, out, np.int32(ROWS), np.int32(COLS)]


def reference(a, out, rows, cols):
    return [a, a.reshape(rows, cols).T.reshape(-1).copy(), None, None]
