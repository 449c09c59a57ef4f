"""Collatz step counts for starting values 0..59: per-lane loop trip counts
from 0 to over 100 inside the same warp."""
import numpy as np

KERNEL = "collatz_steps"
FEATURES = ["data-dependent-loop", "divergence", "multi-warp"]


def launch():
    rng = np.random.default_rng(303)
    x = rng.integers(1, 60, 16, dtype=np.int64)
    x[:4] = [0, 1, 27, 2]       # 27 takes 111 steps; 0 and 1 take none
    return (1,), (16,), [x.astype(np.uint32), np.zeros(16, np.int32)]


def _steps(v):
    count = 0
    while v > 1:
        v = 3 * v + 1 if v % 2 else v // 2
        count += 1
    return count


def reference(x, steps):
    return [x, np.array([_steps(int(v)) for v in x], np.int32)]
