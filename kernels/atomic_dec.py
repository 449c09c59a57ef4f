"""atomicDec with a bound: a down-counter wrapping from 0 to bound, a counter
starting above the bound, and a histogram of returned values; multi-block."""
import numpy as np

KERNEL = "atomic_dec"
FEATURES = ["atomics", "atomic-dec", "unsigned", "global-memory", "multi-block", "c++-kernel"]

N, GRID, BLOCK, BOUND = 38, 3, 16, 6


def launch():
    counters = np.array([3, 100], dtype=np.uint32)
    hits = np.zeros(BOUND + 1, dtype=np.uint32)
    return (GRID,), (BLOCK,), [counters, hits, np.uint32(BOUND), np.int32(N)]


def reference(counters, hits, bound, n):
    # CUDA: atomicDec stores (((old == 0) || (old > val)) ? val : (old - 1)).
    def dec(old):
        return int(bound) if old == 0 or old > bound else old - 1

    a, b, hits = int(counters[0]), int(counters[1]), hits.copy()
    for _ in range(n):
        hits[a] += 1
        a, b = dec(a), dec(b)
    return [np.array([a, b], dtype=np.uint32), hits, None, None]
