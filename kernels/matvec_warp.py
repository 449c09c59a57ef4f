"""Matrix-vector product (7x10 ints) with one 4-lane warp per row: strided lane
loop with uneven trip counts, shuffle reduction, a whole warp returning early."""
import numpy as np

KERNEL = "matvec_warp"
FEATURES = ["2d", "matvec", "warp-per-row", "warp-shuffle", "shfl-down", "loop", "early-return", "multi-block", "wraparound"]

ROWS, COLS = 7, 10


def launch():
    rng = np.random.default_rng(704)
    A = rng.integers(-2**31, 2**31, ROWS * COLS, dtype=np.int64).astype(np.int32)
    x = rng.integers(-9, 10, COLS).astype(np.int32)
    y = np.full(8, -7, dtype=np.int32)
    return (2,), (16,), [A, x, y, np.int32(ROWS), np.int32(COLS)]


def reference(A, x, y, rows, cols):
    y = y.copy()
    y[:rows] = (A.astype(np.int64).reshape(rows, cols) @ x.astype(np.int64)).astype(np.int32)
    return [A, x, y, None, None]
