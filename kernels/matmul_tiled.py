"""Shared-memory tiled matmul of 6x6 ints with 4x4 tiles on a 2x2 grid: two
shared tiles, zero-filled edges, barriers in a loop, wraparound."""
import numpy as np

KERNEL = "matmul_tiled"
FEATURES = ["2d", "matmul", "tiling", "shared-memory", "barrier", "loop", "2d-grid", "bounds-check", "wraparound", "c++-kernel"]

SIZE = 6


def launch():
    rng = np.random.default_rng(703)
    A = rng.integers(-2**31, 2**31, SIZE * SIZE, dtype=np.int64).astype(np.int32)
    B = rng.integers(-1000, 1000, SIZE * SIZE).astype(np.int32)
    C = np.full(SIZE * SIZE, -7, dtype=np.int32)
    return (2, 2), (4, 4), [A, B, C, np.int32(SIZE)]


def reference(A, B, C, n):
    a = A.astype(np.int64).reshape(n, n)
    b = B.astype(np.int64).reshape(n, n)
    c = (a @ b) % 2**32                      # |a @ b| < 2^31 * 1000 * 6 < 2^63: exact in int64
    return [A, B, c.astype(np.uint32).view(np.int32).reshape(-1), None]
