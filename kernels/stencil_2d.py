"""5-point Laplacian on a 7x6 matrix with zero padding, on a (2, 2) grid of
(4, 4) blocks; each block stages its cells and a one-cell halo in a shared
tile (edge threads load the halo, divergently) before the barrier."""
import numpy as np

KERNEL = "stencil_2d"
FEATURES = ["shared", "barrier", "2d-block", "multi-block", "multi-warp", "partial-block", "divergence"]

ROWS, COLS = 7, 6      # ROWS and COLS in stencil_2d.cu


def launch():
    rng = np.random.default_rng(403)
    a = rng.integers(-500, 500, ROWS * COLS, dtype=np.int64).astype(np.int32)
    return (2, 2), (4, 4), [a, np.zeros(ROWS * COLS, np.int32)]


def reference(a, out):
    p = np.pad(a.reshape(ROWS, COLS), 1)
    lap = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return [a, lap.ravel().astype(np.int32)]
