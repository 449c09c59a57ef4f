"""atomicMax on int and on unsigned words over the same data (negatives are the
largest unsigned values), four buckets, multi-block."""
import numpy as np

KERNEL = "atomic_max"
FEATURES = ["atomics", "atomic-max", "signed-compare", "unsigned", "global-memory", "multi-block", "c++-kernel"]

N, GRID, BLOCK = 44, 3, 16


def launch():
    rng = np.random.default_rng(406)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    data[2::4] = -rng.integers(1, 1000, len(data[2::4]))    # bucket 2: all negative
    smax = np.array([-2**31, -2**31, -2**31, 2**31 - 1], dtype=np.int32)   # bucket 3 already at INT_MAX
    umax = np.array([0, 0, 0, 2**32 - 1], dtype=np.uint32)
    return (GRID,), (BLOCK,), [data, smax, umax, np.int32(N)]


def reference(data, smax, umax, n):
    buckets = [data[k:n:4] for k in range(4)]
    s = np.array([max(int(smax[k]), int(buckets[k].max())) for k in range(4)], dtype=np.int64)
    u = np.array([max(int(umax[k]), int(buckets[k].view(np.uint32).max())) for k in range(4)], dtype=np.int64)
    return [data, s.astype(np.int32), u.astype(np.uint32), None]
