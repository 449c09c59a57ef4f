"""Triangular nested loops with data-dependent outer bounds and a data-dependent
break from the inner loop; also counts the inner iterations each thread ran."""
import numpy as np

KERNEL = "nested_loops"
FEATURES = ["data-dependent-loop", "nested-divergence", "divergence", "multi-block", "multi-warp"]


def launch():
    rng = np.random.default_rng(319)
    length = rng.integers(0, 10, 16, dtype=np.int64)
    length[:3] = [0, 1, 12]
    key = rng.integers(-50, 50, 16, dtype=np.int64)
    return (2,), (8,), [length.astype(np.int32), key.astype(np.int32), np.zeros(16, np.int32), np.zeros(16, np.int32)]


def _c_rem(x, d):
    """C's % (sign of the dividend), unlike Python's."""
    return int(np.fmod(x, d))


def reference(length, key, acc, inner_trips):
    sums, trips = [], []
    for n, k in zip(length.tolist(), key.tolist()):
        s = count = 0
        for i in range(n):
            for j in range(i + 1):
                if _c_rem(i * j + k, 7) == 3:
                    break
                s += (i ^ j) * (k | 1)
                count += 1
        sums.append(s)
        trips.append(count)
    return [length, key, np.array(sums, np.int32), np.array(trips, np.int32)]
