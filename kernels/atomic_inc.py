"""atomicInc with a wrap bound used as a ring cursor; the histogram of returned
slots and the final cursor are schedule independent; multi-block."""
import numpy as np

KERNEL = "atomic_inc"
FEATURES = ["atomics", "atomic-inc", "ring-buffer", "unsigned", "global-memory", "multi-block"]

N, GRID, BLOCK, WRAP = 43, 3, 16, 4


def launch():
    cursor = np.array([2], dtype=np.uint32)
    hits = np.zeros(WRAP + 1, dtype=np.uint32)
    return (GRID,), (BLOCK,), [cursor, hits, np.uint32(WRAP), np.int32(N)]


def reference(cursor, hits, wrap, n):
    # CUDA: atomicInc stores ((old >= val) ? 0 : (old + 1)) and returns old.
    value, hits = int(cursor[0]), hits.copy()
    for _ in range(n):
        hits[value] += 1
        value = 0 if value >= wrap else value + 1
    return [np.array([value], dtype=np.uint32), hits, None, None]
