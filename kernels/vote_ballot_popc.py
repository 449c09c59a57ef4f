"""__ballot_sync over a data predicate (value < 0, false past n) and __popc of
the lane mask, per warp; a partial last warp, multi-block."""
import numpy as np

KERNEL = "vote_ballot_popc"
FEATURES = ["warp-vote", "vote-ballot", "popc", "multi-warp", "multi-block", "bounds-check"]

N, GRID, BLOCK = 30, 2, 16


def launch():
    rng = np.random.default_rng(601)
    data = rng.integers(-100, 100, N).astype(np.int32)
    data[:8] = [-1, -2, -3, -4, 0, 5, 2**31 - 1, 7]     # all lanes, then no lanes
    data[8:12] = [-2**31, 0, -1, 1]
    masks = np.full(8, 0xEEEE, dtype=np.uint32)
    counts = np.full(8, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, masks, counts, np.int32(N)]


def reference(data, masks, counts, n):
    neg = np.zeros(GRID * BLOCK, dtype=bool)
    neg[:n] = data[:n] < 0
    lanes = neg.reshape(-1, 4)
    m = (lanes * (1 << np.arange(4))).sum(axis=1).astype(np.uint32)
    return [data, m, lanes.sum(axis=1).astype(np.int32), None]
