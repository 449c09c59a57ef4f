"""2D map with a 2D (5, 3) block over a 2x4 matrix: the block overhangs in
both x (columns) and y (rows), so the guard checks both."""
import numpy as np

KERNEL = "map_2d"
FEATURES = ["elementwise", "2d-block", "divergence", "multi-warp"]

ROWS, COLS = 2, 4


def launch():
    rng = np.random.default_rng(104)
    a = rng.integers(-500, 500, ROWS * COLS, dtype=np.int64).astype(np.int32)
    out = np.full(16, -1, dtype=np.int32)
    return (1,), (5, 3), [a, out, np.int32(ROWS), np.int32(COLS)]


def reference(a, out, rows, cols):
    out = out.copy()
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    out[: rows * cols] = (3 * a.reshape(rows, cols) - r + 2 * c).ravel()
    return [a, out, None, None]
