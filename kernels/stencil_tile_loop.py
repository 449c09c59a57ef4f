"""5-point Laplacian on a 6x7 matrix with zero padding and runtime sizes, on a
(2, 2) grid of (4, 4) blocks; each block fills a haloed 6x6 shared tile with a
strided loop (uneven trip counts), then a barrier."""
import numpy as np

KERNEL = "stencil_tile_loop"
FEATURES = ["shared", "barrier", "2d-block", "multi-block", "multi-warp", "partial-block", "data-dependent-loop"]

ROWS, COLS = 6, 7


def launch():
    rng = np.random.default_rng(405)
    a = rng.integers(-2**20, 2**20, ROWS * COLS, dtype=np.int64).astype(np.int32)
    return (2, 2), (4, 4), [a, np.zeros(ROWS * COLS, np.int32), np.int32(ROWS), np.int32(COLS)]


def reference(a, out, rows, cols):
    p = np.pad(a.reshape(rows, cols), 1)
    lap = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return [a, lap.ravel().astype(np.int32), None, None]
