"""Per-thread row scan with continue (skip negatives) and break (stop at zero):
rows with no zero, an early zero, a zero first, all negative."""
import numpy as np

KERNEL = "loop_break_continue"
FEATURES = ["data-dependent-loop", "divergence", "multi-warp"]

ROWS, COLS = 12, 10


def launch():
    rng = np.random.default_rng(307)
    m = rng.integers(-5, 20, (ROWS, COLS), dtype=np.int64)
    m[m == 0] = 1
    for r in range(3, ROWS):
        m[r, rng.integers(0, COLS)] = 0     # most rows stop somewhere
    m[0, 0] = 0
    m[1] = -np.arange(1, COLS + 1)
    return (1,), (ROWS,), [m.astype(np.int32).ravel(), np.zeros(ROWS, np.int32), np.zeros(ROWS, np.int32), np.int32(COLS)]


def reference(m, sum_, count, cols):
    m = m.reshape(-1, cols)
    sums, counts = [], []
    for row in m:
        kept = row[: np.argmax(row == 0)] if (row == 0).any() else row
        kept = kept[kept > 0]
        sums.append(kept.sum())
        counts.append(kept.size)
    return [m.ravel(), np.array(sums, np.int32), np.array(counts, np.int32), None]
