"""Naive 4x8 = (4x6)(6x8) int matrix multiply, one thread per output on a 4x4
block x 2 grid: 2D indexing, an inner product loop, wraparound products."""
import numpy as np

KERNEL = "matmul_naive"
FEATURES = ["2d", "matmul", "loop", "2d-block", "multi-block", "wraparound"]

M, N, K = 4, 8, 6


def launch():
    rng = np.random.default_rng(702)
    A = rng.integers(-50, 50, M * K).astype(np.int32)
    B = rng.integers(-50, 50, K * N).astype(np.int32)
    A[:K] = rng.integers(-2**31, 2**31, K, dtype=np.int64)     # row 0 overflows
    C = np.full(M * N, -7, dtype=np.int32)
    return (2, 1), (4, 4), [A, B, C, np.int32(M), np.int32(N), np.int32(K)]


def reference(A, B, C, m, n, k):
    prod = A.astype(np.int64).reshape(m, k) @ B.astype(np.int64).reshape(k, n)   # exact: |terms| < 2^38
    return [A, B, prod.astype(np.int32).reshape(-1), None, None, None]
