"""atomicMin on int and on unsigned words over the same data (negatives make
the two differ), four buckets, multi-block."""
import numpy as np

KERNEL = "atomic_min"
FEATURES = ["atomics", "atomic-min", "signed-compare", "unsigned", "global-memory", "multi-block"]

N, GRID, BLOCK = 44, 3, 16


def launch():
    rng = np.random.default_rng(405)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    data[1::4] = np.abs(rng.integers(0, 1000, len(data[1::4]))).astype(np.int32)  # bucket 1: all >= 0
    smin = np.array([2**31 - 1, 2**31 - 1, 2**31 - 1, -2**31], dtype=np.int32)  # bucket 3 already at INT_MIN
    umin = np.array([2**32 - 1, 2**32 - 1, 2**32 - 1, 0], dtype=np.uint32)
    return (GRID,), (BLOCK,), [data, smin, umin, np.int32(N)]


def reference(data, smin, umin, n):
    buckets = [data[k:n:4] for k in range(4)]
    s = np.array([min(int(smin[k]), int(buckets[k].min())) for k in range(4)], dtype=np.int64)
    u = np.array([min(int(umin[k]), int(buckets[k].view(np.uint32).min())) for k in range(4)], dtype=np.int64)
    return [data, s.astype(np.int32), u.astype(np.uint32), None]
