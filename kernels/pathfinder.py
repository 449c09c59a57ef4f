"""Min-cost path DP over 9 rows of a 14-column wall (Rodinia pathfinder) in one
16-thread block: shared row costs, two barriers per row, idle columns."""
import numpy as np

KERNEL = "pathfinder"
FEATURES = ["shared", "barrier", "data-dependent-loop", "divergence", "multi-warp"]

ROWS, COLS = 9, 14


def launch():
    rng = np.random.default_rng(404)
    wall = rng.integers(0, 10, ROWS * COLS, dtype=np.int64).astype(np.int32)
    wall[5 * COLS + 3] = -50        # a negative cell pulls paths towards it
    return (1,), (16,), [wall, np.zeros(COLS, np.int32), np.int32(ROWS), np.int32(COLS)]


def reference(wall, result, rows, cols):
    w = wall.reshape(rows, cols).astype(np.int64)
    cost = w[0]
    for r in range(1, rows):
        left = np.concatenate([[np.iinfo(np.int64).max], cost[:-1]])
        right = np.concatenate([cost[1:], [np.iinfo(np.int64).max]])
        cost = np.minimum(np.minimum(left, cost), right) + w[r]
    return [wall, cost.astype(np.int32), None, None]
