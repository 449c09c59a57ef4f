"""__all_sync and __any_sync deciding a three-way warp-uniform branch; -INT_MIN
wraps to itself."""
import numpy as np

KERNEL = "vote_any_all"
FEATURES = ["warp-vote", "vote-all", "vote-any", "branch", "multi-warp", "multi-block", "c++-kernel", "wraparound"]

GRID, BLOCK = 2, 12


def launch():
    data = np.array([
        3, 0, 5, 2**31 - 1,      # all >= 0            -> keep
        -1, 4, 0, 9,             # negative and a zero -> clear
        -1, 4, 7, -2**31,        # negative, no zero   -> negate
        0, 0, 0, 0,              # all >= 0 (zeros)    -> keep
        -5, -6, -7, -8,          # all negative        -> negate
        1, 2, 0, -3,             # negative and a zero -> clear
    ], dtype=np.int32)
    out = np.full_like(data, -7)
    cases = np.full(GRID * BLOCK // 4, -7, dtype=np.int32)
    return (GRID,), (BLOCK,), [data, out, cases]


def reference(data, out, cases):
    out, cases = out.copy(), cases.copy()
    for w, lanes in enumerate(data.reshape(-1, 4)):
        sl = slice(4 * w, 4 * w + 4)
        if (lanes >= 0).all():
            out[sl], cases[w] = lanes, 0
        elif (lanes == 0).any():
            out[sl], cases[w] = 0, 1
        else:
            out[sl], cases[w] = (-lanes.astype(np.int64)).astype(np.int32), 2
    return [data, out, cases]
