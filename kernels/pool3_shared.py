"""Sliding sum of the last 3 elements (GPU-Puzzles 9) over 20 elements in
blocks of 8, with a left halo in shared memory and a barrier."""
import numpy as np

KERNEL = "pool3_shared"
FEATURES = ["shared", "barrier", "multi-block", "partial-block"]

N = 20


def launch():
    rng = np.random.default_rng(402)
    a = rng.integers(-1000, 1000, N, dtype=np.int64).astype(np.int32)
    return (3,), (8,), [a, np.zeros(N, np.int32), np.int32(N)]


def reference(a, out, n):
    return [a, np.convolve(a, np.ones(3, np.int32))[:n].astype(np.int32), None]
