"""Broadcast add of a column vector (7) and a row vector (10) into a 7x10
matrix, on a (3, 2) grid of (4, 4) blocks that overhangs the matrix."""
import numpy as np

KERNEL = "broadcast_add"
FEATURES = ["elementwise", "2d-block", "multi-block", "multi-warp", "partial-block"]

ROWS, COLS = 7, 10


def launch():
    rng = np.random.default_rng(105)
    col = rng.integers(-10**6, 10**6, ROWS, dtype=np.int64).astype(np.int32)
    row = rng.integers(-10**6, 10**6, COLS, dtype=np.int64).astype(np.int32)
    out = np.zeros(ROWS * COLS, dtype=np.int32)
    return (3, 2), (4, 4), [col, row, out, np.int32(ROWS), np.int32(COLS)]


def reference(col, row, out, rows, cols):
    return [col, row, (col[:, None] + row[None, :]).ravel(), None, None]
